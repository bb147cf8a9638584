"""Chroma's own cost per added chunk as its collection grows (issue 25: is ingest linear?).

    python -m eval.chroma_growth --chunks 1000000 --dir /tmp/chroma-growth
    python -m eval.chroma_growth --chunks 600000 --shard 200000 --dir /tmp/chroma-shards

Adds batches of random unit vectors (384 dimensions, as all-MiniLM-L6-v2's), a 120-word
document and the two metadata keys an ingest writes (`paper_id` and the packed fields)
to one persistent collection made with the index's HNSW settings
(rag/store/index.py `HNSW`), and prints, for every `--step` chunks, the CPU time of the
whole process (Chroma's own threads included) and the wall time per chunk. Nothing of
the project's pipeline runs: what grows here is Chroma's alone (its HNSW insert, SQLite
rows and the full-text index). Random vectors are the HNSW's hardest case, so the
absolute figures are above an ingest's; the growth is what to read. With `--shard N` a
new collection takes the chunks every N, as an index does past RAG_SHARD_CHUNKS
(rag/store/index.py).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from rag.store.index import HNSW


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--step", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--dir", type=Path, required=True, help="a new folder for the collection")
    parser.add_argument(
        "--shard",
        type=int,
        default=0,
        help="start a new collection every this many chunks (0: one collection)",
    )
    args = parser.parse_args(argv)

    import chromadb

    client = chromadb.PersistentClient(path=str(args.dir))
    collection = client.get_or_create_collection("chunks", metadata=dict(HNSW))
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(30_000)])
    added, since, cpu, wall = 0, 0, 0.0, 0.0
    print("chunks\tcpu_ms_per_chunk\twall_ms_per_chunk", flush=True)
    while added < args.chunks:
        vectors = rng.standard_normal((args.batch, args.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [f"p{added + i}:0" for i in range(args.batch)]
        docs = [" ".join(rng.choice(words, 120)) for _ in range(args.batch)]
        fields = json.dumps({"title": "x" * 80, "year": 2026})
        metadatas: list[Any] = [{"paper_id": i.split(":")[0], "f": fields} for i in ids]
        c0, w0 = cpu_seconds(), time.perf_counter()
        if args.shard and added and added % args.shard < args.batch:
            collection = client.get_or_create_collection(f"chunks-{added}", metadata=dict(HNSW))
        collection.add(ids=ids, embeddings=vectors, documents=docs, metadatas=metadatas)
        cpu += cpu_seconds() - c0
        wall += time.perf_counter() - w0
        added += args.batch
        since += args.batch
        if since >= args.step or added >= args.chunks:
            print(f"{added}\t{1000 * cpu / since:.3f}\t{1000 * wall / since:.3f}", flush=True)
            since, cpu, wall = 0, 0.0, 0.0


if __name__ == "__main__":
    main()

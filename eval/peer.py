"""The peers of `rag bench`: plain llama-index over Chroma, the way a user would set it up.

Two of them, on exactly the papers ours stored:

- `defaults` (the figure that counts): llama-index's own embedding path,
  `HuggingFaceEmbedding` (sentence-transformers) on the same bundled MiniLM folder with its
  default batch size (10) and length (the model's 256 word pieces); `VectorStoreIndex.
  from_documents` over a Chroma collection, default node parser and insert batch size;
  run in a process of its own (`python -m eval.peer JOB.json`), as a user would run it.
- `same_embedder`: the same pipeline around *our* embedder (wrapped as a llama-index
  `BaseEmbedding`, our batch size), so the ratio isolates the code around the model.

One `Document` per paper (title + ". " + abstract). Ingest is timed from Documents in
memory to vectors stored (the model is loaded before the clock starts, as ours is); our
ingest also reads and parses the files. Queries: `retriever.retrieve(question)` at
similarity_top_k=10 (the default, 2, cannot score hit@5; 2 and 10 take the same time
within 0.1 ms). No LLM is ever resolved, so nothing reaches OpenAI.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from eval.metrics import percentile as eval_percentile
from rag.embedding.embed import OMP_POLICY_OURS, Embedder, clear_query_cache, model_path
from rag.types import Paper

PEER = "llama-index VectorStoreIndex + Chroma, default settings, HuggingFaceEmbedding (defaults)"
PEER_SAME = "llama-index VectorStoreIndex + Chroma, default settings, our embedder"
PEER_TOP_K = 10
HIT_K = 5

GoldQuestion = tuple[str, frozenset[str]]  # (question, gold paper ids)


class SameEmbedding(BaseEmbedding):
    """Our embedder as a llama-index embedding model: same model, same batch size."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Embedder, batch_size: int) -> None:
        super().__init__(model_name=embedder.name, embed_batch_size=min(batch_size, 2048))
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "SameEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]


def default_embedding(model: str) -> BaseEmbedding:
    """What a llama-index user writes: HuggingFaceEmbedding on the model folder, defaults."""
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(model_path(model)), device="cpu")


@contextmanager
def _llm_disabled() -> Iterator[None]:
    """Settings.llm = None, without the line llama-index prints for it (it would break
    --json), restored afterwards. Indexing and retrieval never call an LLM; this makes
    sure a default one (OpenAI) is never resolved either."""
    from llama_index.core import Settings as LlamaSettings
    from llama_index.core.llms import MockLLM

    previous = LlamaSettings._llm
    LlamaSettings.llm = MockLLM()  # what `Settings.llm = None` resolves to
    try:
        yield
    finally:
        LlamaSettings._llm = previous


def peer_document_text(paper: Paper) -> str:
    """What the peer embeds for a paper: the same content ours sees (title + abstract)."""
    return f"{paper.title}. {paper.abstract}" if paper.title else paper.abstract


def distinct(ids: list[str]) -> list[str]:
    """Paper ids in order, each once: ['a', 'b', 'a', 'c'] -> ['a', 'b', 'c']."""
    return list(dict.fromkeys(ids))


def hit_rate(ranked: list[list[str]], scored: list[GoldQuestion]) -> float | None:
    """Share of questions with a gold paper among the first HIT_K ranked paper ids."""
    if not scored:
        return None
    hits = sum(bool(gold & set(ids[:HIT_K])) for ids, (_, gold) in zip(ranked, scored, strict=True))
    return round(hits / len(scored), 3)


def percentile(values: list[float], q: float) -> float:
    """The p-th percentile as `rag eval` reports it (eval.metrics.percentile), to 0.01."""
    value = eval_percentile(values, q)
    return round(value, 2) if value is not None else 0.0


Document_ = tuple[str, str]  # (paper id, text embedded)


def documents_of(papers: list[Paper]) -> list[Document_]:
    """What the peers index: one document per paper."""
    return [(p.paper_id, peer_document_text(p)) for p in papers]


def run_peer(
    documents: list[Document_],
    embed_model: BaseEmbedding,
    folder: Path,
    questions: list[str],
    scored: list[GoldQuestion],
    prefix: str = "peer",
) -> dict[str, Any]:
    """Ingest and query the documents with plain llama-index; keys start with `prefix`."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    with _llm_disabled():
        nodes = [
            Document(
                text=text,
                metadata={"paper_id": paper_id},
                excluded_embed_metadata_keys=["paper_id"],
                excluded_llm_metadata_keys=["paper_id"],
            )
            for paper_id, text in documents
        ]
        folder.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(
            path=str(folder), settings=ChromaSettings(anonymized_telemetry=False)
        )
        collection = client.create_collection("peer", embedding_function=None)
        storage = StorageContext.from_defaults(
            vector_store=ChromaVectorStore(chroma_collection=collection)
        )
        start = time.perf_counter()
        index = VectorStoreIndex.from_documents(
            nodes, storage_context=storage, embed_model=embed_model
        )
        ingest_s = time.perf_counter() - start
        chunks = collection.count()
        retriever = index.as_retriever(similarity_top_k=PEER_TOP_K)
        retriever.retrieve("warm-up query")
        clear_query_cache()
        latencies = []
        for question in questions:
            start = time.perf_counter()
            retriever.retrieve(question)
            latencies.append((time.perf_counter() - start) * 1000)
        ranked = [
            distinct([str(n.node.metadata["paper_id"]) for n in retriever.retrieve(q)])
            for q, _ in scored
        ]
    return {
        f"{prefix}_ingest_s": round(ingest_s, 2),
        f"{prefix}_chunks": chunks,
        f"{prefix}_ingest_chunks_per_s": round(chunks / ingest_s, 1),
        f"{prefix}_query_p50_ms": percentile(latencies, 50),
        f"{prefix}_query_p95_ms": percentile(latencies, 95),
        f"{prefix}_hit_at_5": hit_rate(ranked, scored),
    }


def run_in_new_process(
    documents: list[Document_],
    model: str,
    folder: Path,
    questions: list[str],
    scored: list[GoldQuestion],
) -> dict[str, Any]:
    """The defaults peer in a process of its own, as a user would run it: nothing of ours
    (ONNX sessions, BLAS threads, the index) shares its process."""
    import json
    import os
    import subprocess
    import sys

    folder.mkdir(parents=True, exist_ok=True)
    job = folder / "job.json"
    job.write_text(
        json.dumps(
            {
                "documents": documents,
                "model": model,
                "folder": str(folder / "chroma"),
                "questions": questions,
                "scored": [[q, sorted(gold)] for q, gold in scored],
            }
        ),
        encoding="utf-8",
    )
    env = dict(os.environ)
    if OMP_POLICY_OURS:  # the peer runs with OpenMP's defaults, as a user's process would
        env.pop("OMP_WAIT_POLICY", None)
    command = [sys.executable, "-m", "eval.peer", str(job)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the llama-index peer failed: {done.stderr[-800:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _main(job_file: str) -> None:
    import json

    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    scored = [(q, frozenset(gold)) for q, gold in job["scored"]]
    documents = [(str(pid), str(text)) for pid, text in job["documents"]]
    model = default_embedding(job["model"])  # loaded before the clock starts, as ours is
    result = run_peer(documents, model, Path(job["folder"]), job["questions"], scored)
    print(json.dumps(result))


if __name__ == "__main__":
    import sys

    _main(sys.argv[1])

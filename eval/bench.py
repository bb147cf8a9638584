"""`rag bench`: ingest and query speed on a corpus, ours and plain llama-index's, in one run.

Prints what a user feels: seconds to ingest, texts per second end to end against the
embedding model alone on the same texts (`ingest_vs_raw`), the cost of re-ingesting an
unchanged corpus, retrieval / whole-answer latency over a fixed list of questions, hit@5
on the eval question set, the first answer of a new `rag ask` process, and the machine
(`cpu`) with the backend chosen on it (`embed_backend`). Everything runs in temporary
indexes so the user's own index is untouched.

How each figure is taken:

- `--limit N` keeps the first N papers of the corpus (after dedupe, in file order). Dedupe
  merges a paper with later copies of it, so every file is still read (papers come out
  once all input is seen); the N papers are then written to `limited.jsonl` in the
  temporary folder (id, title, abstract, venue, year, ...: the field names the loader
  reads). The bundled seeds are always added (ingested with the slice, deduplicated), so
  the eval set's gold papers are there and hit@5 is scored at any limit.
- The embedder is loaded and warmed (both its backends) before the clock starts, as the
  peers' models are.
- `raw_embed_chunks_per_s` (the model alone, on the bulk backend) embeds up to
  `--raw-sample` of the texts ingest embeds (title + chunk; with RAG_EMBED_UNIT=paper
  each paper's first chunk only), evenly spaced across them so the mix of lengths is
  representative: half just before the ingest, half just after, so load from other
  work on the machine that comes and goes weighs on both. `ingest_vs_raw` compares texts
  embedded per second of the whole ingest with that rate (`embedded_texts` counts them).
- The peers (eval/peer.py): plain llama-index with its own default embedding path, and
  the same pipeline around our embedder (`*_same_embedder`). `*_speedup_vs_peer` divide
  the peer's ingest seconds / query p95 by ours.
- Query latency on all sides is one retrieval per question of `QUESTIONS` with the query
  cache cleared first: ours is the hybrid retrieval of `rag ask` (embed, dense and BM25,
  fusion), the peers' `retriever.retrieve(question)` at similarity_top_k=10.
- hit@5 is scored on the lookup and factual questions of the question set whose gold
  snippets resolve to papers of this corpus (as `rag eval` resolves them): the share where
  a gold paper is among the first 5 distinct papers. Ours is `Assistant.search(q, top_k=5)`;
  the peers' their top 10 nodes reduced to distinct papers in order, first 5.
- `cold_start_s`: wall time of a new `rag ask --json` process against the temporary
  index, from exec to exit (imports, model, index, answer), median of 3.
- `peak_rss_mb` is read before the peers run, so it is ours alone (model included).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.peer import (
    PEER,
    PEER_SAME,
    GoldQuestion,
    SameEmbedding,
    documents_of,
    hit_rate,
    percentile,
    run_in_new_process,
    run_peer,
)
from eval.questions import load_questions, resolve_gold
from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.corpus.chunk import Chunker
from rag.corpus.load import expand_paths
from rag.corpus.papers import FieldMap
from rag.embedding.backends import BACKENDS
from rag.embedding.embed import Embedder, clear_query_cache, make_embedder
from rag.embedding.tuning import cpu_info
from rag.ingest import read_papers
from rag.store.index import embedded_text
from rag.types import IngestSummary, Paper

QUESTIONS = [
    "Which papers improve speculative decoding or speculative sampling?",
    "How can communication be reduced in data-parallel training?",
    "Reinforcement learning for language model reasoning without a critic",
    "Bayesian optimisation over graph structures",
    "conformal prediction interval width",
    "preference optimisation with noisy or misspecified rewards",
    "hardware-aware neural architecture search",
    "knowledge distillation trade-off between task loss and teacher imitation",
    "convergence of gradient descent for over-parameterised networks",
    "differential privacy and adaptive optimisers",
    "What is the best recipe for sourdough bread?",
    "model editing of many facts in large language models",
]

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions" / "iclr2026.jsonl"
DEFAULT_RAW_SAMPLE = 2048
HIT_KINDS = ("lookup", "factual")
HIT_K = 5
LIMITED_FILE = "limited.jsonl"
COLD_QUESTION = "what is GTO?"
COLD_RUNS = 3

# Readable table: our figure and the peer's on one row.
PAIRS = {
    "chunks": "peer_chunks",
    "ingest_s": "peer_ingest_s",
    "ingest_chunks_per_s": "peer_ingest_chunks_per_s",
    "query_p50_ms": "peer_query_p50_ms",
    "query_p95_ms": "peer_query_p95_ms",
    "hit_at_5": "peer_hit_at_5",
}

# Targets for ~22,000 abstracts on a 2-core laptop CPU (issue 5), and against the peer
# that uses llama-index's own defaults (issue 12): key -> (op, bound).
TARGETS: dict[str, tuple[str, float]] = {
    "ingest_s": ("<=", 600.0),
    "ingest_vs_raw": (">=", 0.9),
    "reingest_unchanged_s": ("<=", 5.0),
    "query_p95_ms": ("<=", 50.0),
    "peak_rss_mb": ("<=", 2560.0),
    "cold_start_s": ("<=", 2.0),
    "query_speedup_vs_peer": (">=", 1.5),
    "ingest_speedup_vs_peer": (">=", 2.5),
}


def against_targets(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target with the measured value, whether it is met, and value / bound."""
    report = {}
    for key, (op, bound) in TARGETS.items():
        if key not in result:  # --no-peer, --no-cold-start
            continue
        value = result[key]
        met = value <= bound if op == "<=" else value >= bound
        report[key] = {
            "target": f"{op} {bound:g}",
            "value": value,
            "met": met,
            "ratio": round(value / bound, 3),
        }
    return report


def even_sample(items: Sequence[str], k: int) -> list[str]:
    """Up to k items evenly spaced across the sequence: even_sample('abcdef', 3) -> a, c, e."""
    n = len(items)
    if n <= k:
        return list(items)
    return [items[i * n // k] for i in range(k)]


def _embedded_texts(ids: Sequence[str], texts: Sequence[str], per_paper: bool) -> list[str]:
    """The texts ingest put through the model: every chunk's, or each paper's first."""
    return [t for cid, t in zip(ids, texts, strict=True) if not per_paper or cid.endswith("#0")]


def embed_seconds(embedder: Embedder, texts: list[str]) -> float:
    """Seconds the embedding model alone takes for these texts."""
    start = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - start


def texts_to_embed(paths: list[Path], settings: Settings) -> list[str]:
    """What an ingest of these files puts through the model (as `_embedded_texts` reads
    back from the index): every chunk's text, or each paper's first."""
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
    texts = []
    for item in read_papers(paths, FieldMap(), IngestSummary()):
        if isinstance(item, Paper):
            chunks = chunker.split(item)
            texts += [
                embedded_text(item, c)
                for c in chunks[: 1 if settings.embed_unit == "paper" else None]
            ]
    return texts


def first_papers(paths: list[Path], limit: int) -> list[Paper]:
    """The corpus' first `limit` papers after dedupe, in file order."""
    papers: list[Paper] = []
    for item in read_papers(paths, FieldMap(), IngestSummary()):
        if isinstance(item, Paper):
            papers.append(item)
            if len(papers) >= limit:
                break
    return papers


def write_papers(papers: list[Paper], path: Path) -> Path:
    """Write papers as JSONL records the loader reads back into the same papers."""
    with path.open("w", encoding="utf-8") as out:
        for p in papers:
            record: dict[str, Any] = {
                "id": None if p.paper_id.startswith("a-") else p.paper_id,  # a-: content hash
                "title": p.title,
                "abstract": p.abstract,
                "venue": p.venue,
                "year": p.year,
                "status": p.status,
                "area": p.area,
                "keywords": list(p.keywords),
                "authors": list(p.authors),
                "site": p.site,
                "tldr": p.tldr,
            }
            out.write(json.dumps({k: v for k, v in record.items() if v not in (None, [])}))
            out.write("\n")
    return path


def gold_questions(questions_file: Path | None, abstracts: dict[str, str]) -> list[GoldQuestion]:
    """Lookup/factual questions whose gold resolves to papers of this corpus."""
    if questions_file is None:
        return []
    questions = [q for q in load_questions(questions_file) if q.kind in HIT_KINDS and q.gold]
    resolved = resolve_gold(questions, abstracts).ids
    return [(q.question, ids) for q in questions if (ids := resolved.get(q.id))]


def run_bench(
    corpus: list[str | Path],
    settings: Settings,
    questions: list[str] = QUESTIONS,
    *,
    limit: int | None = None,
    raw_sample: int = DEFAULT_RAW_SAMPLE,
    peer: bool = True,
    questions_file: Path | None = DEFAULT_QUESTIONS,
    cold_start: bool = True,
) -> dict[str, Any]:
    """Measure ingest and query speed (and the peers') on fresh temporary indexes."""
    paths = expand_paths(corpus)
    if questions_file is not None and not Path(questions_file).is_file():
        questions_file = None  # the bundled set is missing (eval not installed): no hit@5
    embedder = make_embedder(settings)
    warm_up(embedder)
    with tempfile.TemporaryDirectory() as folder:
        if limit is not None:
            paths = [write_papers(first_papers(paths, limit), Path(folder) / LIMITED_FILE)]
        paths = with_seeds(paths)
        bench_settings = settings.model_copy(
            update={"index_dir": Path(folder) / "index", "chroma_url": None}
        )
        result, stored, scored = measure_ours(
            Assistant(bench_settings, embedder), paths, questions, questions_file, raw_sample
        )
        result["limit"] = limit
        result["cpu"] = cpu_info()
        result.update(backend_figures(embedder))
        if cold_start:
            result["cold_start_s"] = cold_start_s(bench_settings)
        if peer:
            result.update(
                measure_peers(
                    list(stored.values()), embedder, settings, folder, questions, scored, result
                )
            )
    result["targets"] = against_targets(result)  # set for ~22k abstracts; see TARGETS
    return result


def warm_up(embedder: Embedder) -> None:
    """Load the model (every backend it uses) before anything is timed."""
    warm = getattr(embedder, "warm_up", None)
    if callable(warm):
        warm()
    else:
        embedder.embed(["warm-up"])


def with_seeds(paths: list[Path]) -> list[Path]:
    """The corpus plus the bundled seeds (once), so the eval set's gold is always there."""
    seeds = expand_paths([BUNDLED_CORPUS])
    return paths + [p for p in seeds if p not in paths]


def measure_ours(
    assistant: Assistant,
    paths: list[Path],
    questions: list[str],
    questions_file: Path | None,
    raw_sample: int,
) -> tuple[dict[str, Any], dict[str, Paper], list[GoldQuestion]]:
    """Ingest, re-ingest, the model alone, queries, answers and hit@5 on our side."""
    settings, embedder = assistant.settings, assistant.embedder
    # The model alone on a sample of the texts ingest embeds: half just before the ingest,
    # half just after, so load from other work that comes and goes during the run weighs
    # on the model's rate as on the ingest's.
    sample = even_sample(texts_to_embed(paths, settings), raw_sample)
    model_s = embed_seconds(embedder, sample[0::2])
    start = time.perf_counter()
    summary = assistant.ingest(paths)
    ingest_s = time.perf_counter() - start
    if not summary.total_chunks:
        raise ValueError("the corpus holds no abstracts to bench")
    start = time.perf_counter()
    assistant.ingest(paths)
    reingest_s = time.perf_counter() - start
    model_s += embed_seconds(embedder, sample[1::2])
    raw = len(sample) / model_s
    ids, texts = assistant.embedded_texts()
    embedded = _embedded_texts(ids, texts, settings.embed_unit == "paper")
    stored = assistant.papers()
    retrieval, answers = [], []
    assistant.search("warm-up query")  # loads BM25 and term statistics once
    clear_query_cache()  # every timed question pays for its own query embedding
    for question in questions:
        answer = assistant.ask(question, mode="extractive")
        retrieval.append(answer.timings_ms["retrieve"])
        answers.append(answer.timings_ms["total"])
    scored = gold_questions(questions_file, {pid: paper.abstract for pid, paper in stored.items()})
    ours_ranked = [[h.paper.paper_id for h in assistant.search(q, top_k=HIT_K)] for q, _ in scored]
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result: dict[str, Any] = {
        "abstracts": summary.total_papers,
        "chunks": summary.total_chunks,
        "ingest_s": round(ingest_s, 2),
        "raw_embed_chunks_per_s": round(raw, 1),
        "raw_sample": len(sample),
        "ingest_chunks_per_s": round(summary.total_chunks / ingest_s, 1),
        # texts through the model per second of ingest, against the model alone
        "ingest_vs_raw": round(len(embedded) / ingest_s / raw, 3),
        "embed_unit": settings.embed_unit,
        "embedded_texts": len(embedded),
        "reingest_unchanged_s": round(reingest_s, 2),
        "query_p50_ms": percentile(retrieval, 50),
        "query_p95_ms": percentile(retrieval, 95),
        "answer_extractive_p50_ms": percentile(answers, 50),
        "answer_extractive_p95_ms": percentile(answers, 95),
        "peak_rss_mb": round(peak_rss, 1),
        "questions": len(questions),
        "hit_questions": len(scored),
        "hit_at_5": hit_rate(ours_ranked, scored),
    }
    return result, stored, scored


def backend_figures(embedder: Embedder) -> dict[str, Any]:
    """Which backends run the model here, and what the choice measured."""
    choice = getattr(embedder, "choice", None)
    if choice is None:  # another model folder or an endpoint: no choice to report
        return {"embed_backend": embedder.name, "embed_query_backend": embedder.name}
    return {
        "embed_backend": choice.bulk,
        "embed_query_backend": choice.query,
        "embed_family": choice.family,
        "embed_tuning": {"texts_per_s": choice.texts_per_s, "query_ms": choice.query_ms},
    }


def cold_start_s(settings: Settings, question: str = COLD_QUESTION, runs: int = COLD_RUNS) -> float:
    """Median wall time of a new `rag ask --json` process against the index (exec to exit)."""
    return round(statistics.median(ask_seconds(settings, question) for _ in range(runs)), 2)


def ask_seconds(settings: Settings, question: str = COLD_QUESTION) -> float:
    """Wall time of one new `rag ask --json` process against the index (exec to exit)."""
    command = [sys.executable, "-m", "rag.cli", "ask", question, "--json", "--mode", "extractive"]
    return timed_run(command, settings, "rag ask failed against the bench's index")


def timed_run(command: list[str], settings: Settings, failure: str) -> float:
    """Run a command against the bench's index; its wall time (exec to exit), or
    RuntimeError with `failure` and the end of its stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        command, env=index_env(settings), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{failure}: {done.stderr[-800:]}")
    return wall


def index_env(settings: Settings) -> dict[str, str]:
    """The environment of a process that opens the bench's temporary index: its folder,
    never the user's Chroma server (RAG_CHROMA_URL left out unless the bench started one
    of its own and set it in `settings`)."""
    env = {**os.environ, "RAG_INDEX_DIR": str(settings.index_dir)}
    env.pop("RAG_CHROMA_URL", None)
    if settings.chroma_url:
        env["RAG_CHROMA_URL"] = settings.chroma_url
    if settings.cache_dir:
        env["RAG_CACHE_DIR"] = str(settings.cache_dir)
    return env


def measure_peers(
    papers: list[Paper],
    embedder: Embedder,
    settings: Settings,
    folder: str,
    questions: list[str],
    scored: list[GoldQuestion],
    ours: dict[str, Any],
) -> dict[str, Any]:
    """Both peers on exactly the papers ours stored, and our speed-ups over them."""
    figures: dict[str, Any] = {"peer": PEER, "peer_same_embedder": PEER_SAME}
    documents = documents_of(papers)
    peers = {
        "peer": run_in_new_process(
            documents, settings.embed_model, Path(folder) / "peer", questions, scored
        ),
        "peer_same_embedder": run_peer(
            documents,
            SameEmbedding(embedder, settings.embed_batch_size),
            Path(folder) / "peer_same_embedder",
            questions,
            scored,
            "peer_same_embedder",
        ),
    }
    for prefix, peer in peers.items():
        suffix = prefix.removeprefix("peer")
        figures.update(peer)
        figures[f"ingest_speedup_vs_peer{suffix}"] = round(
            peer[f"{prefix}_ingest_s"] / ours["ingest_s"], 2
        )
        figures[f"query_speedup_vs_peer{suffix}"] = round(
            peer[f"{prefix}_query_p95_ms"] / max(ours["query_p95_ms"], 1e-3), 2
        )
    return figures


def format_table(result: dict[str, Any]) -> str:
    """The readable report: one figure per row, ours and the peer's side by side."""
    has_peer = "peer" in result
    paired = set(PAIRS.values())
    skip = paired | {"peer", "peer_same_embedder", "targets"}
    rows = [(key, value) for key, value in result.items() if key not in skip]
    width = max(len(key) for key, _ in rows)
    lines = [f"{'':<{width}}  {'ours':>12}  {'peer':>12}" if has_peer else ""]
    for key, value in rows:
        shown = "-" if value is None else _shown(value)
        if has_peer and key in PAIRS:
            other = result.get(PAIRS[key])
            lines.append(f"{key:<{width}}  {shown:>12}  {'-' if other is None else other!s:>12}")
        else:
            lines.append(f"{key:<{width}}  {shown:>12}")
    if has_peer:
        lines.append(f"peer: {result['peer']}")
        lines.append(f"peer_same_embedder: {result['peer_same_embedder']}")
    lines.append("targets (ingest_s for ~22,000 abstracts on 2 cores):")
    for key, check in result.get("targets", {}).items():
        verdict = "met" if check["met"] else f"missed ({check['ratio']}x the bound)"
        lines.append(
            f"  {key:<{width - 2}}  {check['value']!s:>12}  {check['target']:>10}  {verdict}"
        )
    return "\n".join(line for line in lines if line)


def _shown(value: Any) -> str:
    """A figure as the table prints it; the CPU as 'Intel Xeon ..., 2 cores, avx2 ...'."""
    if isinstance(value, dict) and "flags" in value:
        return f"{value['model']}, {value['cores']} cores, {' '.join(value['flags'])}"
    return json.dumps(value) if isinstance(value, dict) else str(value)


def default_corpus() -> list[str | Path]:
    """The bundled ICLR 2026 abstracts."""
    return [BUNDLED_CORPUS]


def backend_quality(
    corpus: list[str | Path],
    settings: Settings,
    *,
    limit: int | None = None,
    questions_file: Path = DEFAULT_QUESTIONS,
) -> dict[str, Any]:
    """hit@5 (hybrid, as `rag ask` ranks, and dense alone) of every backend on the eval set,
    each on its own temporary index of the same papers: the record rag/embedding/tuning.py reads
    to admit a reduced-precision backend (within 0.01 of fp32's)."""
    hybrid: dict[str, float | None] = {}
    dense: dict[str, float | None] = {}
    scored: list[GoldQuestion] = []
    with tempfile.TemporaryDirectory() as folder:
        paths = expand_paths(corpus)
        if limit is not None:
            paths = [write_papers(first_papers(paths, limit), Path(folder) / LIMITED_FILE)]
        paths = with_seeds(paths)
        for name in BACKENDS:
            forced = settings.model_copy(
                update={
                    "embed_backend": name,
                    "index_dir": Path(folder) / name,
                    "chroma_url": None,
                }
            )
            assistant = Assistant(forced)
            assistant.ingest(paths)
            abstracts = {pid: p.abstract for pid, p in assistant.papers().items()}
            scored = gold_questions(questions_file, abstracts)
            for ranks, retriever in ((hybrid, "hybrid"), (dense, "dense")):
                ranked = [
                    [h.paper.paper_id for h in assistant.search(q, HIT_K, retriever=retriever)]
                    for q, _ in scored
                ]
                ranks[name] = hit_rate(ranked, scored)
    return {
        "about": f"rag bench --backend-quality, {len(scored)} lookup/factual questions of "
        f"{Path(questions_file).name}, {len(abstracts)} abstracts",
        "questions": len(scored),
        "fp32_hit_at_5": hybrid["torch"],
        "hit_at_5": hybrid,
        "fp32_dense_hit_at_5": dense["torch"],
        "dense_hit_at_5": dense,
    }

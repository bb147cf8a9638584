"""`rag bench`: ingest and query speed on a corpus, measured in one run.

Prints what a user feels: seconds to ingest, chunks per second end to end against the
embedding model alone on the same texts (`ingest_vs_raw`), the cost of re-ingesting an
unchanged corpus, and retrieval / whole-answer latency over a fixed list of questions.
Everything runs in a temporary index so the user's own index is untouched.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from rag.assistant import Assistant
from rag.chunk import Chunker
from rag.config import BUNDLED_CORPUS, Settings
from rag.embed import Embedder, clear_query_cache, make_embedder
from rag.index import embedded_text
from rag.ingest import read_papers
from rag.load import expand_paths
from rag.papers import FieldMap
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


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: percentile([1, 2, 3, 4], 50) -> 2."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return round(ordered[min(rank, len(ordered)) - 1], 2)


def raw_embed_rate(embedder: Embedder, settings: Settings, paths: list[Path]) -> float:
    """Chunks per second of the embedding model alone, on the texts ingest would embed."""
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
    texts = [
        embedded_text(p, c)
        for p in read_papers(paths, FieldMap(), IngestSummary())
        if isinstance(p, Paper)
        for c in chunker.split(p)
    ]
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


def run_bench(
    corpus: list[str | Path], settings: Settings, questions: list[str] = QUESTIONS
) -> dict[str, Any]:
    """Measure ingest and query speed on a fresh temporary index."""
    paths = expand_paths(corpus)
    embedder = make_embedder(settings)
    embedder.embed(["warm-up"])
    with tempfile.TemporaryDirectory() as folder:
        bench_settings = settings.model_copy(update={"index_dir": Path(folder), "chroma_url": None})
        assistant = Assistant(bench_settings, embedder)
        start = time.perf_counter()
        summary = assistant.ingest(paths)
        ingest_s = time.perf_counter() - start
        start = time.perf_counter()
        assistant.ingest(paths)
        reingest_s = time.perf_counter() - start
        raw = raw_embed_rate(embedder, settings, paths)
        retrieval, answers = [], []
        assistant.search("warm-up query")  # loads BM25 and term statistics once
        clear_query_cache()  # every timed question pays for its own query embedding
        for question in questions:
            answer = assistant.ask(question, mode="extractive")
            retrieval.append(answer.timings_ms["retrieve"])
            answers.append(answer.timings_ms["total"])
    ingest_rate = summary.total_chunks / ingest_s
    return {
        "abstracts": summary.total_papers,
        "chunks": summary.total_chunks,
        "ingest_s": round(ingest_s, 2),
        "raw_embed_chunks_per_s": round(raw, 1),
        "ingest_chunks_per_s": round(ingest_rate, 1),
        "ingest_vs_raw": round(ingest_rate / raw, 3),
        "reingest_unchanged_s": round(reingest_s, 2),
        "query_p50_ms": percentile(retrieval, 50),
        "query_p95_ms": percentile(retrieval, 95),
        "answer_extractive_p50_ms": percentile(answers, 50),
        "answer_extractive_p95_ms": percentile(answers, 95),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "questions": len(questions),
    }


def default_corpus() -> list[str | Path]:
    """The bundled ICLR 2026 abstracts."""
    return [BUNDLED_CORPUS]

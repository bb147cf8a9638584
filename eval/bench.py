"""`rag bench`: ingest and query speed on a corpus, measured in one run.

Prints what a user feels: seconds to ingest, chunks per second end to end against the
embedding model alone on the same texts (`ingest_vs_raw`), the cost of re-ingesting an
unchanged corpus, retrieval / whole-answer latency over a fixed list of questions, and
hit@5 on the eval question set. Everything runs in a temporary index so the user's own
index is untouched.

How each figure is taken:

- `--limit N` keeps the first N papers of the corpus (after dedupe, in file order). Dedupe
  merges a paper with later copies of it, so every file is still read (papers come out
  once all input is seen); the N papers are then written to `limited.jsonl` in the
  temporary folder (id, title, abstract, venue, year, ...: the field names the loader
  reads), and that one file is what both pipelines ingest. Ids that are neither an
  OpenReview id nor a content hash come back namespaced by that file ("limited/..."),
  the same on both sides.
- `raw_embed_chunks_per_s` embeds up to `--raw-sample` of the texts ingest embedded
  (title + chunk, read back from the index; with RAG_EMBED_UNIT=paper each paper's first
  chunk only), evenly spaced across them so the mix of lengths is representative, with
  the same embedder and batch size. `ingest_vs_raw` compares texts embedded per second
  of the whole ingest with that rate (`embedded_texts` counts them).
- The peer is the plain llama-index pipeline: `VectorStoreIndex.from_documents` over a
  Chroma collection (its own PersistentClient), default node parser and insert batch
  size, one `Document` per paper (title + ". " + abstract), and the same embedding model
  and batch size (our embedder wrapped as a llama-index `BaseEmbedding`; no LLM is ever
  resolved, so nothing reaches OpenAI). `peer_ingest_s` runs from Documents in memory to
  vectors stored; our `ingest_s` also reads and parses the files, so the comparison
  favours the peer slightly.
- Query latency on both sides is one retrieval per question of `QUESTIONS` with the query
  cache cleared first: ours is the hybrid retrieval of `rag ask` (embed, dense, BM25,
  fusion), the peer's `retriever.retrieve(question)` at similarity_top_k=10.
- hit@5 is scored on the lookup and factual questions of the question set whose gold
  snippets resolve to papers of this corpus (as `rag eval` resolves them): the share where
  a gold paper is among the first 5 distinct papers. Ours is `Assistant.search(q, top_k=5)`;
  the peer's is its top 10 nodes reduced to distinct papers in order, first 5.
- `peak_rss_mb` is read before the peer runs, so it is ours alone (model included).
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from eval import metrics
from eval.questions import load_questions, resolve_gold
from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.embed import Embedder, clear_query_cache, make_embedder
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

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions" / "iclr2026.jsonl"
DEFAULT_RAW_SAMPLE = 2048
PEER = "llama-index VectorStoreIndex + Chroma, default settings, same embedding model"
HIT_KINDS = ("lookup", "factual")
HIT_K = 5
PEER_TOP_K = 10
LIMITED_FILE = "limited.jsonl"

# Readable table: our figure and the peer's on one row.
PAIRS = {
    "chunks": "peer_chunks",
    "ingest_s": "peer_ingest_s",
    "ingest_chunks_per_s": "peer_ingest_chunks_per_s",
    "query_p50_ms": "peer_query_p50_ms",
    "query_p95_ms": "peer_query_p95_ms",
    "hit_at_5": "peer_hit_at_5",
}

GoldQuestion = tuple[str, frozenset[str]]  # (question, gold paper ids)

# Targets for ~22,000 abstracts on a 2-core laptop CPU (issue 5): key -> (op, bound).
TARGETS: dict[str, tuple[str, float]] = {
    "ingest_s": ("<=", 600.0),
    "ingest_vs_raw": (">=", 0.9),
    "reingest_unchanged_s": ("<=", 5.0),
    "query_p95_ms": ("<=", 50.0),
    "peak_rss_mb": ("<=", 2560.0),
}


def against_targets(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target with the measured value, whether it is met, and value / bound."""
    report = {}
    for key, (op, bound) in TARGETS.items():
        value = result[key]
        met = value <= bound if op == "<=" else value >= bound
        report[key] = {
            "target": f"{op} {bound:g}",
            "value": value,
            "met": met,
            "ratio": round(value / bound, 3),
        }
    return report


def percentile(values: list[float], q: float) -> float:
    """The p-th percentile as `rag eval` reports it (eval.metrics.percentile), to 0.01."""
    value = metrics.percentile(values, q)
    return round(value, 2) if value is not None else 0.0


def even_sample(items: Sequence[str], k: int) -> list[str]:
    """Up to k items evenly spaced across the sequence: even_sample('abcdef', 3) -> a, c, e."""
    n = len(items)
    if n <= k:
        return list(items)
    return [items[i * n // k] for i in range(k)]


def _embedded_texts(ids: list[str], texts: list[str], per_paper: bool) -> list[str]:
    """The texts ingest put through the model: every chunk's, or each paper's first."""
    return [t for cid, t in zip(ids, texts, strict=True) if not per_paper or cid.endswith("#0")]


def raw_embed_rate(embedder: Embedder, texts: list[str]) -> float:
    """Chunks per second of the embedding model alone on these texts."""
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


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


def hit_rate(ranked: Sequence[Sequence[str]], scored: list[GoldQuestion]) -> float | None:
    """Share of questions with a gold paper among the first HIT_K ranked paper ids."""
    if not scored:
        return None
    hits = sum(bool(gold & set(ids[:HIT_K])) for ids, (_, gold) in zip(ranked, scored, strict=True))
    return round(hits / len(scored), 3)


def distinct(ids: list[str]) -> list[str]:
    """Paper ids in order, each once: ['a', 'b', 'a', 'c'] -> ['a', 'b', 'c']."""
    return list(dict.fromkeys(ids))


def run_bench(
    corpus: list[str | Path],
    settings: Settings,
    questions: list[str] = QUESTIONS,
    *,
    limit: int | None = None,
    raw_sample: int = DEFAULT_RAW_SAMPLE,
    peer: bool = True,
    questions_file: Path | None = DEFAULT_QUESTIONS,
) -> dict[str, Any]:
    """Measure ingest and query speed (and the peer's) on fresh temporary indexes."""
    paths = expand_paths(corpus)
    if questions_file is not None and not Path(questions_file).is_file():
        questions_file = None  # the bundled set is missing (eval not installed): no hit@5
    embedder = make_embedder(settings)
    embedder.embed(["warm-up"])
    with tempfile.TemporaryDirectory() as folder:
        if limit is not None:
            paths = [write_papers(first_papers(paths, limit), Path(folder) / LIMITED_FILE)]
        bench_settings = settings.model_copy(
            update={"index_dir": Path(folder) / "index", "chroma_url": None}
        )
        assistant = Assistant(bench_settings, embedder)
        start = time.perf_counter()
        summary = assistant.ingest(paths)
        ingest_s = time.perf_counter() - start
        if not summary.total_chunks:
            raise ValueError("the corpus holds no abstracts to bench")
        start = time.perf_counter()
        assistant.ingest(paths)
        reingest_s = time.perf_counter() - start
        ids, texts = assistant.embedded_texts()
        embedded = _embedded_texts(ids, texts, settings.embed_unit == "paper")
        stored = assistant.papers()
        sample = even_sample(embedded, raw_sample)
        raw = raw_embed_rate(embedder, sample)
        retrieval, answers = [], []
        assistant.search("warm-up query")  # loads BM25 and term statistics once
        clear_query_cache()  # every timed question pays for its own query embedding
        for question in questions:
            answer = assistant.ask(question, mode="extractive")
            retrieval.append(answer.timings_ms["retrieve"])
            answers.append(answer.timings_ms["total"])
        scored = gold_questions(
            questions_file, {pid: paper.abstract for pid, paper in stored.items()}
        )
        ours_ranked = [
            [h.paper.paper_id for h in assistant.search(q, top_k=HIT_K)] for q, _ in scored
        ]
        peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ingest_rate = summary.total_chunks / ingest_s
        embed_rate = len(embedded) / ingest_s  # texts through the model per second of ingest
        result: dict[str, Any] = {
            "abstracts": summary.total_papers,
            "chunks": summary.total_chunks,
            "limit": limit,
            "ingest_s": round(ingest_s, 2),
            "raw_embed_chunks_per_s": round(raw, 1),
            "raw_sample": len(sample),
            "ingest_chunks_per_s": round(ingest_rate, 1),
            "ingest_vs_raw": round(embed_rate / raw, 3),
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
        if peer:
            papers = list(stored.values())  # exactly what ours stored
            peer_result = run_peer(
                papers, embedder, settings, Path(folder) / "peer", questions, scored
            )
            result.update(peer_result)
            result["ingest_speedup_vs_peer"] = round(peer_result["peer_ingest_s"] / ingest_s, 2)
            result["query_speedup_vs_peer"] = round(
                peer_result["peer_query_p95_ms"] / max(result["query_p95_ms"], 1e-3), 2
            )
    result["targets"] = against_targets(result)  # set for ~22k abstracts; see TARGETS
    return result


# -- the peer: plain llama-index over Chroma -------------------------------------------


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


def run_peer(
    papers: list[Paper],
    embedder: Embedder,
    settings: Settings,
    folder: Path,
    questions: list[str],
    scored: list[GoldQuestion],
) -> dict[str, Any]:
    """Ingest and query the same papers with the plain llama-index pipeline."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    with _llm_disabled():
        documents = [
            Document(
                text=peer_document_text(p),
                metadata={"paper_id": p.paper_id},
                excluded_embed_metadata_keys=["paper_id"],
                excluded_llm_metadata_keys=["paper_id"],
            )
            for p in papers
        ]
        folder.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(
            path=str(folder), settings=ChromaSettings(anonymized_telemetry=False)
        )
        collection = client.create_collection("peer", embedding_function=None)
        embed_model = SameEmbedding(embedder, settings.embed_batch_size)
        storage = StorageContext.from_defaults(
            vector_store=ChromaVectorStore(chroma_collection=collection)
        )
        start = time.perf_counter()
        index = VectorStoreIndex.from_documents(
            documents, storage_context=storage, embed_model=embed_model
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
        "peer": PEER,
        "peer_ingest_s": round(ingest_s, 2),
        "peer_chunks": chunks,
        "peer_ingest_chunks_per_s": round(chunks / ingest_s, 1),
        "peer_query_p50_ms": percentile(latencies, 50),
        "peer_query_p95_ms": percentile(latencies, 95),
        "peer_hit_at_5": hit_rate(ranked, scored),
    }


def format_table(result: dict[str, Any]) -> str:
    """The readable report: one figure per row, ours and the peer's side by side."""
    has_peer = "peer" in result
    paired = set(PAIRS.values())
    skip = paired | {"peer", "targets"}
    rows = [(key, value) for key, value in result.items() if key not in skip]
    width = max(len(key) for key, _ in rows)
    lines = [f"{'':<{width}}  {'ours':>12}  {'peer':>12}" if has_peer else ""]
    for key, value in rows:
        shown = "-" if value is None else str(value)
        if has_peer and key in PAIRS:
            other = result.get(PAIRS[key])
            lines.append(f"{key:<{width}}  {shown:>12}  {'-' if other is None else other!s:>12}")
        else:
            lines.append(f"{key:<{width}}  {shown:>12}")
    if has_peer:
        lines.append(f"peer: {result['peer']}")
    lines.append("targets (for ~22,000 abstracts on 2 cores):")
    for key, check in result.get("targets", {}).items():
        verdict = "met" if check["met"] else f"missed ({check['ratio']}x the bound)"
        lines.append(
            f"  {key:<{width - 2}}  {check['value']!s:>12}  {check['target']:>10}  {verdict}"
        )
    return "\n".join(line for line in lines if line)


def default_corpus() -> list[str | Path]:
    """The bundled ICLR 2026 abstracts."""
    return [BUNDLED_CORPUS]

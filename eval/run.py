"""Questions -> answers through the `rag ask` code path -> results.jsonl and metrics.json.

Each question is answered through a `Conversation` (as the chat app asks) and serialised
by `rag.cli.answer_json`, exactly as `rag ask --json` does, so what is measured is what
users get. A question with `follow_up_of` is asked in the conversation of the question it
follows, right after it; every other question starts a fresh conversation, so a short
question is never read as a follow-up of the one before it in the file. Ranking metrics
read the answer's own sources first (what the user saw), then, to depth max(10, top-k),
the papers a plain search adds for the query the answer searched (a follow-up's
standalone query) with the filters it applied.

The index evaluated always holds the bundled seeds (the question sets are about them),
plus any `--with-corpus` distractors; ingest is incremental, so a second run over an
unchanged corpus embeds nothing.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.judge import Judge
from eval.metrics import summarise
from eval.questions import Question, ResolvedGold, resolve_gold
from eval.report import write_report
from eval.result import Result
from rag.assistant import Assistant, Turn
from rag.cli import answer_json
from rag.config import BUNDLED_CORPUS, Settings
from rag.embedding.embed import Embedder
from rag.ingest import Progress
from rag.retrieval.retrieve import Filters
from rag.types import Answer, Hit, IngestSummary, Paper

RANKING_DEPTH = 10
Step = Callable[[int], None]  # called with 1 after each question


@dataclass(frozen=True, slots=True)
class Variant:
    """One configuration to evaluate; None means the setting's default."""

    mode: str | None = None
    retriever: str | None = None
    top_k: int | None = None

    def name(self, settings: Settings) -> str:
        """A short label: 'extractive-hybrid' (with '-k10' when top-k is set)."""
        used = self.resolved(settings)
        k = f"-k{self.top_k}" if self.top_k else ""
        return f"{used['mode']}-{used['retriever']}{k}"

    def resolved(self, settings: Settings) -> dict[str, Any]:
        """The values actually used: {"mode": "extractive", "retriever": "hybrid", "top_k": 6}."""
        return {
            "mode": self.mode or settings.answer_mode,
            "retriever": self.retriever or settings.retriever,
            "top_k": self.top_k or settings.top_k,
        }


def evaluate(
    assistant: Assistant,
    questions: Sequence[Question],
    gold: ResolvedGold,
    variant: Variant,
    out: Path,
    about: dict[str, Any],
    judge: Judge | None = None,
    step: Step | None = None,
) -> dict[str, Any]:
    """Answer, score and write results.jsonl, metrics.json and report.md into `out`.

    `about` adds to the run block of metrics.json (questions file, corpora, ingest).
    """
    started = time.perf_counter()
    forget_cached_queries()
    results = answer_all(assistant, questions, gold, variant, step)
    if judge is not None:
        for r in results:
            r.judge = judge.score(r.question.question, r.answer)
    seconds = round(time.perf_counter() - started, 1)
    run = {**about, **run_info(assistant, variant, judge), "seconds": seconds}
    metrics = metrics_of(results, gold, run)
    write_results(out, results, metrics)
    write_report(out, results, metrics)
    return metrics


def forget_cached_queries() -> None:
    """Make every run pay for its own query embeddings (rag.embedding.embed caches 1,024 of
    them), so variants compared on the same questions have comparable latencies."""
    from rag.embedding.embed import clear_query_cache

    clear_query_cache()


def open_index(
    settings: Settings,
    corpora: Sequence[str | Path] = (),
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> tuple[Assistant, IngestSummary]:
    """Open the index in `settings` and bring it in step with the seeds and the corpora."""
    assistant = Assistant(settings, embedder)
    summary = assistant.ingest([BUNDLED_CORPUS, *corpora], progress=progress)
    return assistant, summary


def gold_of(assistant: Assistant, questions: Sequence[Question]) -> ResolvedGold:
    """Resolve the questions' gold snippets against the papers in the assistant's index."""
    papers = assistant.papers()
    return resolve_gold(questions, {pid: paper.abstract for pid, paper in papers.items()})


def answer_all(
    assistant: Assistant,
    questions: Sequence[Question],
    gold: ResolvedGold,
    variant: Variant = Variant(),
    step: Step | None = None,
) -> list[Result]:
    """Answer every question as the chat app would, and rank it at depth >= 10: the
    ranking starts with the answer's own sources, in their order (what the user saw,
    retrieved exactly as `rag ask` retrieves), then the papers a plain search at that
    depth adds after them.

    A question with `follow_up_of` continues the conversation as it stood right after the
    question it follows (that one is its previous turn, whatever was asked in between);
    every other question starts a fresh conversation.
    """
    depth = max(RANKING_DEPTH, variant.top_k or assistant.settings.top_k)
    assistant.warm_up()  # load lazily initialised weights before timing
    results: list[Result] = []
    history: dict[str, list[Turn]] = {}  # question id -> the turns up to and including it
    for q in questions:
        if q.kind == "related":
            results.append(related_result(assistant, q, gold, depth))
            if step:
                step(1)
            continue
        conversation = assistant.conversation()
        if q.follow_up_of is not None:
            if q.follow_up_of not in history:
                raise ValueError(f"{q.id}: `follow_up_of` {q.follow_up_of!r} was not asked before")
            conversation.turns.extend(history[q.follow_up_of])
        # Ask first: the query embedding is cached, so its cost lands in the ask's timings.
        answer = conversation.ask(
            q.question, top_k=variant.top_k, mode=variant.mode, retriever=variant.retriever
        )
        history[q.id] = list(conversation.turns)
        filters = filters_of(answer.applied_filters)
        hits = assistant.search(
            answer.query or q.question, top_k=depth, filters=filters, retriever=variant.retriever
        )
        results.append(
            Result(
                q,
                answer_json(answer),
                ranking_of(answer, hits, depth),
                gold.ids[q.id],
                statuses=_statuses(assistant, answer),
                ranking_filters=_filter_dict(filters),
            )
        )
        if step:
            step(1)
    return results


def related_result(assistant: Assistant, q: Question, gold: ResolvedGold, depth: int) -> Result:
    """A `related` question: the `depth` papers `Assistant.related` finds nearest to the
    question's paper, as the ranking (and as uncited sources of an answer-shaped object).
    A `scope` restricts the neighbours to it (so seeds-only gold holds among distractors);
    a paper that did not resolve leaves the question unscored, with nothing ranked."""
    paper_id = gold.papers.get(q.id)
    scope = q.scope
    filters = Filters(scope.venue, scope.year, scope.status) if scope else None
    started = time.perf_counter()
    found = assistant.related(paper_id, top_k=depth, filters=filters).related if paper_id else []
    ms = round((time.perf_counter() - started) * 1000, 1)
    ranking = [
        {
            "paper_id": r.paper_id,
            "title": r.title,
            "score": r.score,
            "dense_similarity": r.score,
            "bm25_score": None,
        }
        for r in found
    ]
    answer = {
        "question": q.question,
        "answer": "",
        "mode": "related",
        "abstained": False,
        "paper_id": paper_id,
        "sources": [
            {"n": n, "paper_id": r.paper_id, "title": r.title, "score": r.score, "cited": False}
            for n, r in enumerate(found, start=1)
        ],
        "timings_ms": {"total": ms},
    }
    return Result(
        q,
        answer,
        ranking,
        gold.ids[q.id] if paper_id else None,
        ranking_filters=_filter_dict(filters),
    )


FILTER_FIELDS = tuple(f.name for f in dataclasses.fields(Filters))


def filters_of(applied: Mapping[str, Any] | None) -> Filters | None:
    """The answer's `applied_filters` as `Filters`, keeping only the fields Filters has and
    the values set: {"venue": "ICLR", "year": 2026, "year_min": 2020} -> Filters(venue=
    "ICLR", year=2026); {} -> None (no filter)."""
    kept = {k: v for k, v in (applied or {}).items() if k in FILTER_FIELDS and v is not None}
    return Filters(**kept) if kept else None


def _filter_dict(filters: Filters | None) -> dict[str, Any]:
    if filters is None:
        return {}
    return {k: v for k, v in dataclasses.asdict(filters).items() if v is not None}


def _statuses(assistant: Assistant, answer: Answer) -> dict[str, str | None]:
    """Each cited paper's status as the index knows it (sources carry venue and year only)."""
    papers = assistant.papers()
    found: dict[str, str | None] = {}
    for source in answer.sources:
        if source.cited:
            stored = papers.get(source.paper_id)
            found[source.paper_id] = stored.status if stored is not None else None
    return found


def ranking_of(answer: Answer, deeper: Sequence[Hit], depth: int) -> list[dict[str, Any]]:
    """The answer's sources first, then the deeper search's other papers, `depth` in all."""
    shown = {s.paper_id for s in answer.sources}
    head = [_hit(h) for h in _as_hits(answer, deeper)]
    return (head + [_hit(h) for h in deeper if h.paper.paper_id not in shown])[:depth]


def _as_hits(answer: Answer, deeper: Sequence[Hit]) -> list[Hit]:
    """The answer's sources as hits (the deeper search's record of each when it has one,
    for its dense and BM25 scores)."""
    found = {h.paper.paper_id: h for h in deeper}
    hits = []
    for s in answer.sources:
        hit = found.get(s.paper_id)
        if hit is None:
            paper = Paper(s.paper_id, s.text, label=s.title, venue=s.venue, year=s.year)
            hit = Hit(paper, s.score)
        hits.append(Hit(hit.paper, s.score, hit.dense_similarity, hit.bm25_score))
    return hits


def _hit(hit: Hit) -> dict[str, Any]:
    return {
        "paper_id": hit.paper.paper_id,
        "title": hit.paper.label,
        "score": round(hit.score, 6),
        "dense_similarity": _round(hit.dense_similarity),
        "bm25_score": _round(hit.bm25_score),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def metrics_of(
    results: Sequence[Result], gold: ResolvedGold, run: dict[str, Any]
) -> dict[str, Any]:
    """The metrics.json object: run settings, the metrics, and what could not be scored."""
    return {
        "run": run,
        **summarise([r.outcome() for r in results]),
        "gold_problems": [
            {"id": p.question_id, "entry": p.entry, "reason": p.reason} for p in gold.problems
        ],
        "unscored": [r.question.id for r in results if not r.outcome().scored],
        # an LLM run whose endpoint failed answers extractively: say how often
        "answer_modes": dict(Counter(r.answer["mode"] for r in results)),
    }


def write_results(out: Path, results: Sequence[Result], metrics: dict[str, Any]) -> None:
    """Write results.jsonl (one line per question) and metrics.json into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.jsonl", "w", encoding="utf-8") as handle:
        for r in results:
            handle.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")


def run_info(assistant: Assistant, variant: Variant, judge: Judge | None) -> dict[str, Any]:
    """The settings a reader needs to reproduce or compare a run."""
    s = assistant.settings
    used = variant.resolved(s)
    stats = assistant.stats()
    return {
        **used,
        "ranking_depth": max(RANKING_DEPTH, used["top_k"]),
        "index": stats["location"],
        "papers": stats["papers"],
        "chunks": stats["chunks"],
        "embedding_model": stats["embedding_model"],
        "llm_model": s.llm_model if used["mode"] == "llm" else None,
        "judge_model": judge.model if judge else None,
        "abstention": assistant.answerability(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }

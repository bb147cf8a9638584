"""One evaluated question: the question, its `rag ask --json` answer, the deeper ranking
and the resolved gold; what results.jsonl holds and what metrics and the report read."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from eval.metrics import CitedSource, Outcome, question_scores
from eval.questions import Question
from rag.aggregate.tables import supported


@dataclass(slots=True)
class Result:
    """One question, its answer (the `rag ask --json` object) and the deeper ranking."""

    question: Question
    answer: dict[str, Any]
    ranking: list[dict[str, Any]]
    gold: frozenset[str] | None
    judge: dict[str, Any] = field(default_factory=dict)
    statuses: dict[str, str | None] = field(default_factory=dict)  # cited paper id -> status
    ranking_filters: dict[str, Any] = field(default_factory=dict)  # what the ranking applied

    def outcome(self) -> Outcome:
        """What the metrics read."""
        q = self.question
        return Outcome(
            kind=q.kind,
            answerable=q.answerable,
            gold=self.gold,
            ranked=tuple(h["paper_id"] for h in self.ranking),
            cited=frozenset(s["paper_id"] for s in self.answer["sources"] if s["cited"]),
            abstained=self.answer["abstained"],
            answer=self.answer["answer"],
            answer_contains=q.answer_contains,
            timings_ms=self.answer["timings_ms"],
            judge={k: self.judge.get(k) for k in ("faithfulness", "answer_relevance")},
            group=q.group_name,
            language=q.language,
            split=q.split,
            scope=q.scope,
            cited_sources=self.cited_sources(),
            confidence=self.answer.get("confidence"),
            top_similarity=self.top_similarity,
            count=self.answer.get("count"),
            answered_set=self.answered_set(),
            count_tolerance=q.count_tolerance,
            table_support=self.table_support(),
        )

    def answered_set(self) -> frozenset[str] | None:
        """The papers a count counted (its first `count` sources: a count of none lists
        the closest papers below the cut, uncounted) or a comparison compared (its rows)."""
        answer = self.answer
        if answer.get("count") is not None:
            return frozenset(s["paper_id"] for s in answer["sources"][: answer["count"]])
        if answer.get("table") is not None:
            by_n = {s["n"]: s["paper_id"] for s in answer["sources"]}
            return frozenset(by_n[r["n"]] for r in answer["table"] if r["n"] in by_n)
        if self.question.kind in ("count", "comparison"):
            return frozenset() if answer["abstained"] else None
        return None

    def table_support(self) -> float | None:
        """Share of the table's non-empty cells that are spans of their row's abstract."""
        table = self.answer.get("table")
        if not table:
            return None
        texts = {s["n"]: s["text"] for s in self.answer["sources"]}
        cells = [(r["n"], c) for r in table for c in r["cells"].values() if c]
        if not cells:
            return None
        return sum(supported(c, texts.get(n, "")) for n, c in cells) / len(cells)

    def cited_sources(self) -> tuple[CitedSource, ...]:
        """The cited sources' venue and year (from the answer) and status (from the index)."""
        return tuple(
            CitedSource(
                s["paper_id"],
                s.get("venue"),
                s.get("year"),
                s.get("status") or self.statuses.get(s["paper_id"]),
            )
            for s in self.answer["sources"]
            if s["cited"]
        )

    @property
    def top_similarity(self) -> float | None:
        """The best hit's cosine similarity."""
        return self.ranking[0]["dense_similarity"] if self.ranking else None

    @property
    def abstention_score(self) -> float | None:
        """What abstention is decided on: the answer's confidence (rag/answering/answerable.py)."""
        return self.answer.get("confidence")

    def to_json(self) -> dict[str, Any]:
        """One results.jsonl line: `id`, the whole ask object, then an `eval` block."""
        q = self.question
        return {
            "id": q.id,
            **self.answer,
            "eval": {
                "kind": q.kind,
                "group": q.group_name,
                "language": q.language,
                "split": q.split,
                "follow_up_of": q.follow_up_of,
                "scope": q.scope.to_dict() if q.scope else None,
                "cited_sources": [dataclasses.asdict(c) for c in self.cited_sources()],
                "ranking_filters": self.ranking_filters,
                "answerable": q.answerable,
                "gold": sorted(self.gold) if self.gold is not None else None,
                "answer_contains": list(q.answer_contains),
                "ranking": self.ranking,
                "scores": question_scores(self.outcome()),
                "judge": self.judge or None,
            },
        }

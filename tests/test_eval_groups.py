"""How `answer_all` asks: one conversation per question unless `follow_up_of` continues
one, and the deeper ranking searched with the query and filters the answer used. A
stand-in assistant and conversation record every call (no index, no model), and the
report shows the per-group, per-language and risk-coverage sections."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from eval.metrics import Scope
from eval.questions import Question, ResolvedGold
from eval.report import plot_risk_coverage, write_report
from eval.result import Result
from eval.run import Variant, answer_all, filters_of, metrics_of
from rag.assistant import Turn
from rag.retrieval.retrieve import Filters
from rag.types import Answer, Hit, Paper, Source

PAPERS = {
    "p1": Paper("p1", "We study graphs.", label="Graphs", venue="ICLR", year=2026, status="Oral"),
    "p2": Paper("p2", "We study nets.", label="Nets", venue="NIPS", year=2017, status="Poster"),
}


@dataclass
class FakeConversation:
    """Conversation's contract as answer_all uses it: `turns`, and `ask` passing the
    options on; any question after a turn is searched with the previous query (the
    offline rule for a follow-up), so the query shows which conversation it was in."""

    assistant: FakeAssistant
    turns: list[Turn] = field(default_factory=list)

    def ask(self, question: str, **options: Any) -> Answer:
        query = f"{self.turns[-1].answer.query} {question}" if self.turns else None
        answer = self.assistant.ask(question, query=query, **options)
        self.turns.append(Turn(question, answer))
        return answer


class FakeAssistant:
    """Just what `answer_all` touches; every ask and search is recorded."""

    def __init__(self, applied: dict[str, Any] | None = None) -> None:
        self.settings = SimpleNamespace(top_k=6)
        self.applied = applied or {}
        self.asked: list[dict[str, Any]] = []
        self.searched: list[dict[str, Any]] = []
        self.conversations: list[FakeConversation] = []

    def warm_up(self) -> None:
        pass

    def papers(self) -> dict[str, Paper]:
        return dict(PAPERS)

    def conversation(self) -> FakeConversation:
        conversation = FakeConversation(self)
        self.conversations.append(conversation)
        return conversation

    def ask(self, question: str, *, query: str | None = None, **options: Any) -> Answer:
        self.asked.append({"question": question, "query": query, **options})
        sources = [
            Source(i, p.paper_id, p.label, False, "x.txt:1", 1.0, p.abstract, p.venue, p.year)
            for i, p in enumerate(PAPERS.values(), start=1)
        ]
        for s in sources:
            s.cited = True
        return Answer(
            question,
            "An answer [1][2].",
            False,
            [1, 2],
            sources,
            "extractive",
            query=query or question,
            applied_filters=dict(self.applied),
            confidence=0.75,
        )

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        retriever: str | None = None,
    ) -> list[Hit]:
        self.searched.append({"query": query, "top_k": top_k, "filters": filters})
        return [Hit(p, 1.0 - i / 10, dense_similarity=0.5) for i, p in enumerate(PAPERS.values())]


def questions(*specs: dict[str, Any]) -> list[Question]:
    return [Question(line=i, **spec) for i, spec in enumerate(specs, start=1)]


def no_gold(qs: list[Question]) -> ResolvedGold:
    return ResolvedGold({q.id: None for q in qs}, [])


def test_each_question_gets_a_fresh_conversation_unless_it_follows_one() -> None:
    qs = questions(
        {"id": "a", "question": "Which paper proposes Group Tree Optimization?"},
        {"id": "b", "question": "Speedup?"},  # short, but not a follow-up: asked on its own
        {"id": "c", "question": "What speedup does it report?", "follow_up_of": "a"},
        {"id": "d", "question": "On which models?", "follow_up_of": "c"},
    )
    fake = FakeAssistant()
    results = answer_all(fake, qs, no_gold(qs), Variant(top_k=3))  # type: ignore[arg-type]

    queries = [r.answer["query"] for r in results]
    assert queries == [
        "Which paper proposes Group Tree Optimization?",
        "Speedup?",  # not glued to the question before it
        "Which paper proposes Group Tree Optimization? What speedup does it report?",
        "Which paper proposes Group Tree Optimization? What speedup does it report? "
        "On which models?",
    ]
    assert all(a["top_k"] == 3 and "mode" in a and "retriever" in a for a in fake.asked)
    # the follow-up's previous turn is the question it follows, not "b" asked in between
    turns = [[t.question for t in c.turns] for c in fake.conversations]
    assert turns[2] == [qs[0].question, qs[2].question]
    assert turns[3] == [qs[0].question, qs[2].question, qs[3].question]
    # the ranking searches what the answer searched, at depth >= 10
    assert [s["query"] for s in fake.searched] == queries
    assert {s["top_k"] for s in fake.searched} == {10}
    assert results[2].answer["query"] != results[2].answer["question"]
    line = results[2].to_json()
    assert line["eval"]["follow_up_of"] == "a" and line["eval"]["group"] == "lookup"


def test_the_ranking_applies_the_filters_the_answer_applied() -> None:
    qs = questions({"id": "a", "question": "Which ICLR 2026 papers study graphs?"})
    fake = FakeAssistant({"venue": "ICLR", "year": 2026, "not_a_filter": 1, "area": None})
    (result,) = answer_all(fake, qs, no_gold(qs))  # type: ignore[arg-type]
    assert fake.searched[0]["filters"] == Filters(venue="ICLR", year=2026)
    assert result.ranking_filters == {"venue": "ICLR", "year": 2026}
    assert result.answer["applied_filters"]["not_a_filter"] == 1  # the ask object is untouched

    fake = FakeAssistant()
    answer_all(fake, qs, no_gold(qs))  # type: ignore[arg-type]
    assert fake.searched[0]["filters"] is None


def test_filters_of_keeps_only_fields_filters_has() -> None:
    assert filters_of({"keyword": "graphs", "not_a_filter": 2025}) == Filters(keyword="graphs")
    assert filters_of({}) is None and filters_of(None) is None


def test_cited_sources_carry_status_from_the_index_and_feed_the_scope_metric() -> None:
    qs = questions(
        {
            "id": "a",
            "question": "Which NeurIPS 2017 poster papers study nets?",
            "kind": "multi",
            "group": "scoped",
            "scope": Scope(venue="NeurIPS", year=2017, status="poster"),
        }
    )
    (result,) = answer_all(FakeAssistant(), qs, no_gold(qs))  # type: ignore[arg-type]
    cited = result.to_json()["eval"]["cited_sources"]
    assert cited == [
        {"paper_id": "p1", "venue": "ICLR", "year": 2026, "status": "Oral"},
        {"paper_id": "p2", "venue": "NIPS", "year": 2017, "status": "Poster"},
    ]
    assert result.to_json()["eval"]["scores"]["in_scope_citations"] == 0.5
    assert result.to_json()["eval"]["scope"] == {
        "venue": "NeurIPS",
        "year": 2017,
        "status": "poster",
    }


def run_info() -> dict[str, Any]:
    return {
        "questions_file": "natural.jsonl",
        "mode": "extractive",
        "retriever": "hybrid",
        "top_k": 6,
        "ranking_depth": 10,
        "papers": 2,
        "chunks": 2,
        "index": "mem",
        "seconds": 0.1,
        "date": "today",
        "abstention": {"abstain_min_similarity": 0.3},
    }


def test_report_has_group_language_and_risk_sections(tmp_path: Path) -> None:
    qs = questions(
        {"id": "a", "question": "Graphs?", "group": "short"},
        {"id": "b", "question": "Welche Arbeiten zu Netzen?", "language": "de", "group": "natural"},
        {"id": "c", "question": "Which ICLR papers?", "scope": Scope(venue="ICLR")},
    )
    results = answer_all(FakeAssistant(), qs, no_gold(qs))  # type: ignore[arg-type]
    metrics = metrics_of(results, no_gold(qs), run_info())
    assert set(metrics["per_group"]) == {"short", "natural", "lookup"}
    assert set(metrics["per_language"]) == {"en", "de"}
    assert metrics["per_group"]["lookup"]["in_scope_citations"] == 0.5
    assert metrics["risk_coverage"]["confidence_source"] == "confidence"
    assert metrics["risk_coverage"]["actual"]["coverage"] == 1.0
    json.dumps(metrics)  # metrics.json stays serialisable

    report = write_report(tmp_path, results, metrics).read_text()
    assert "## Per group" in report and "| natural | 1 (0) |" in report
    assert "## Per language" in report and "| de | 1 (0) |" in report
    assert "in_scope_citations" in report
    assert "## Risk and coverage" in report and "![risk-coverage](risk_coverage.png)" in report
    assert (tmp_path / "risk_coverage.png").read_bytes().startswith(b"\x89PNG")


def test_one_language_and_no_groups_add_no_tables(tmp_path: Path) -> None:
    qs = questions({"id": "a", "question": "Graphs?"}, {"id": "b", "question": "Nets?"})
    results: list[Result] = answer_all(FakeAssistant(), qs, no_gold(qs))  # type: ignore[arg-type]
    report = write_report(tmp_path, results, metrics_of(results, no_gold(qs), run_info()))
    text = report.read_text()
    assert "## Per group" not in text and "## Per language" not in text
    assert "## Risk and coverage" in text


def test_plot_risk_coverage_draws_empty_and_full_curves(tmp_path: Path) -> None:
    curve = [{"coverage": 0.5, "accuracy": 1.0}, {"coverage": 1.0, "accuracy": 0.5}]
    plot_risk_coverage(curve, {"coverage": 0.5, "accuracy": 1.0}, tmp_path / "a.png", title="t")
    plot_risk_coverage([], None, tmp_path / "b.png")
    for name in ("a.png", "b.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")

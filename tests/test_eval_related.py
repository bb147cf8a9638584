"""Related-paper questions: schema, gold resolution, metrics, and the bundled set."""

from __future__ import annotations

import json

import pytest

from eval.metrics import Outcome, precision_at, question_scores, summarise
from eval.questions import abstracts_in_files, load_questions, parse_question, resolve_gold
from rag.config import BUNDLED_CORPUS

LINE = json.dumps(
    {"id": "r1", "question": "like this", "kind": "related", "paper": "alpha", "gold": ["beta"]}
)


def test_related_needs_paper_and_only_related_has_one() -> None:
    assert parse_question(LINE).paper == "alpha"
    with pytest.raises(ValueError, match="`paper`"):
        parse_question('{"id": "r1", "question": "q", "kind": "related", "gold": ["b"]}')
    with pytest.raises(ValueError, match="`paper`"):
        parse_question('{"id": "q1", "question": "q", "paper": "alpha"}')


def test_paper_resolves_like_gold() -> None:
    q = parse_question(LINE)
    resolved = resolve_gold([q], {"p1": "Alpha one", "p2": "beta two"})
    assert resolved.papers == {"r1": "p1"} and resolved.ids["r1"] == {"p2"}
    clash = resolve_gold([q], {"p1": "alpha", "p3": "alpha too", "p2": "beta"})
    assert "r1" not in clash.papers and "its `paper`" in clash.problems[0].reason


def test_related_metrics_and_no_citation_or_abstention_scores() -> None:
    assert precision_at(["a", "x", "b"], {"a", "b"}, 2) == 0.5
    o = Outcome("related", True, frozenset({"a", "b"}), ranked=("a", "x", "b", "y", "z"))
    scores = question_scores(o)
    assert scores["related_precision@5"] == pytest.approx(0.4)
    assert scores["related_recall@5"] == 1.0
    assert scores["related_r_precision"] == 0.5
    assert scores["citation_precision"] is None
    group = summarise([o])["per_kind"]["related"]
    assert group["n"]["answerable"] == 0 and group["false_abstention_rate"] is None


def test_bundled_related_set_resolves_on_the_seeds() -> None:
    questions = load_questions("eval/questions/related.jsonl")
    resolved = resolve_gold(questions, abstracts_in_files([BUNDLED_CORPUS]))
    assert len(questions) >= 10 and not resolved.problems
    assert all(q.kind == "related" and q.id in resolved.papers for q in questions)
    assert all(resolved.papers[q.id] not in (resolved.ids[q.id] or ()) for q in questions)

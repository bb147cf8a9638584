"""Scores: pure functions from answered questions (`Outcome`s) to numbers.

Ranking metrics read the retrieved papers in order (a paper listed twice counts at its
first place; ties in score are already broken by the order). Relevance is binary: a
paper is gold or it is not. A metric that does not apply to a question (no gold, no
citation to judge, nothing expected in the answer) is None for it and left out of the
mean, and every mean is reported with the number of questions behind it.

Which questions each metric reads:
- hit@1/5/10, MRR, nDCG@10: `lookup` and `factual` questions with gold;
- recall@10 and all_found@10 (the whole gold set in the top 10): `multi` questions;
- citation precision/recall: answerable questions with gold;
- answer_contains: questions with `answer_contains` strings;
- abstention: every scored question (positive class: unanswerable);
- in_scope_citations: every question with a `scope` that cites something (gold or not);
- count_error (|count - gold size|), count_right (1 when that error is within the
  question's `count_tolerance`, 0 by default: exact), set_precision and set_recall (the
  papers counted or compared against the gold set): `count` and `comparison` questions
  with a gold set (a count's may be empty: 'none');
- table_support (share of a comparison table's cells that are spans of the abstract
  their row cites): `comparison` questions that made a table;
- related_precision@5, related_recall@5 and related_r_precision (precision at k = the
  gold set's size) of the papers `Assistant.related` ranks nearest to the question's
  paper: `related` questions with gold (they cite nothing and never abstain, so the
  citation and abstention metrics leave them out);
- latency: every question.

Every metric is reported overall, per kind, per group (the question's style tag) and per
language. `risk_coverage` sweeps a threshold over each answer's confidence: what share
of the questions would be answered, and how many of those correctly (see its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from rag.types import normalise_text

RANKING_KINDS = ("lookup", "factual")
SET_KINDS = ("multi",)
AGGREGATE_KINDS = ("count", "comparison")  # answered with a set of papers (and a number)
RELATED_KINDS = ("related",)  # answered with the papers nearest to a given one
RELATED_K = 5
CURVE_KS = tuple(range(1, 11))
SCORE_METRICS = (
    "hit@1",
    "hit@5",
    "hit@10",
    "mrr",
    "ndcg@10",
    "recall@10",
    "all_found@10",
    "citation_precision",
    "citation_recall",
    "answer_contains",
    "in_scope_citations",
    "count_error",
    "count_right",
    "set_precision",
    "set_recall",
    "table_support",
    "related_precision@5",
    "related_recall@5",
    "related_r_precision",
)
JUDGE_METRICS = ("faithfulness", "answer_relevance")
QUESTION_METRICS = (*SCORE_METRICS, *JUDGE_METRICS)
GROUP_METRICS = ("abstention_precision", "abstention_recall", "false_abstention_rate")
UNSCORED_METRICS = ("in_scope_citations",)  # read from every question, scored on gold or not
VENUE_ALIASES = {"nips": "neurips"}


@dataclass(frozen=True, slots=True)
class Scope:
    """The venue / year / status a question names; None means any."""

    venue: str | None = None
    year: int | None = None
    status: str | None = None

    def matches(self, source: CitedSource) -> bool:
        """A source is in scope when every named part matches (text case-blind, NIPS = NeurIPS).

        Scope(venue="NeurIPS", year=2023) matches CitedSource("p", "NIPS", 2023) but not
        CitedSource("p", "NeurIPS", 2022), nor one without a venue.
        """
        return (
            (self.venue is None or venue_key(source.venue) == venue_key(self.venue))
            and (self.year is None or source.year == self.year)
            and (self.status is None or _text_key(source.status) == _text_key(self.status))
        )

    def to_dict(self) -> dict[str, Any]:
        """The parts named: {"venue": "ICLR", "year": 2026}."""
        return {
            k: v
            for k, v in (("venue", self.venue), ("year", self.year), ("status", self.status))
            if v is not None
        }


@dataclass(frozen=True, slots=True)
class CitedSource:
    """The metadata of one cited source, as far as the scope metric needs it."""

    paper_id: str
    venue: str | None = None
    year: int | None = None
    status: str | None = None


def venue_key(venue: str | None) -> str | None:
    """Venue names compared case- and spacing-blind, aliases folded: "NIPS" -> "neurips"."""
    key = _text_key(venue)
    return VENUE_ALIASES.get(key, key) if key else None


def _text_key(text: str | None) -> str | None:
    return normalise_text(text) if text else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One answered question, reduced to what the metrics read."""

    kind: str
    answerable: bool
    gold: frozenset[str] | None  # None: not scored on gold (none given, or it did not resolve)
    ranked: tuple[str, ...] = ()  # retrieved paper ids, best first
    cited: frozenset[str] = frozenset()  # paper ids of the cited sources
    abstained: bool = False
    answer: str = ""
    answer_contains: tuple[str, ...] = ()
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    judge: Mapping[str, float | None] = field(default_factory=dict)
    group: str = ""  # the question's style tag; "" reports it under its kind
    language: str = "en"
    split: str = "dev"  # the question's split (dev / test), reported apart
    scope: Scope | None = None
    cited_sources: tuple[CitedSource, ...] = ()  # metadata of the cited sources
    confidence: float | None = None  # the answer's own answerability score, if it gave one
    top_similarity: float | None = None  # the best hit's dense similarity, if dense ran
    count: int | None = None  # a count answer's number
    answered_set: frozenset[str] | None = None  # the papers a count or comparison gave
    count_tolerance: int = 0  # a count this close to the gold size is right
    table_support: float | None = None  # share of its table's cells its abstracts hold

    @property
    def scored(self) -> bool:
        """Unanswerable questions are scored on abstention; answerable ones need gold (a
        count's gold set may be empty: 'how many papers on X' -> 0)."""
        if self.kind == "count":
            return self.gold is not None
        return not self.answerable or bool(self.gold)

    @property
    def group_name(self) -> str:
        """The group the outcome is reported in: its `group`, else its kind."""
        return self.group or self.kind

    @property
    def correct(self) -> bool:
        """Right as answered: answerable, not abstained, and a gold paper cited (any answer
        counts when there is no gold to check it against). Answering an unanswerable
        question, or abstaining, is never correct here."""
        if not self.answerable or self.abstained:
            return False
        return bool(self.cited & self.gold) if self.gold else True

    @property
    def risk_score(self) -> float:
        """What the risk-coverage sweep ranks on: `confidence`, else the top hit's dense
        similarity, else 0."""
        for value in (self.confidence, self.top_similarity):
            if value is not None:
                return value
        return 0.0


# -- one question -----------------------------------------------------------------------


def _first_places(ranked: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranked))


def _need_gold(gold: AbstractSet[str]) -> None:
    if not gold:
        raise ValueError("ranking metrics are undefined without gold papers")


def hit_at(ranked: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """1.0 when a gold paper is in the top k: (["a", "b"], {"b"}, 1) -> 0.0, k=2 -> 1.0."""
    _need_gold(gold)
    return 1.0 if any(p in gold for p in _first_places(ranked)[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: AbstractSet[str]) -> float:
    """1 / rank of the first gold paper, 0 if none: (["a", "b", "c"], {"c", "b"}) -> 0.5."""
    _need_gold(gold)
    for rank, paper in enumerate(_first_places(ranked), start=1):
        if paper in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Binary nDCG@k: sum of 1/log2(rank+1) over gold in the top k, over the ideal sum.

    (["a", "b"], {"b"}, 10) -> (1/log2 3) / 1 = 0.631; (["b", "a"], {"a", "b"}, 10) -> 1.0.
    """
    _need_gold(gold)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, paper in enumerate(_first_places(ranked)[:k], start=1)
        if paper in gold
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def recall_at(ranked: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Share of the gold set in the top k: (["a", "b", "c"], {"a", "c", "d"}, 2) -> 1/3."""
    _need_gold(gold)
    return len(gold & set(_first_places(ranked)[:k])) / len(gold)


def all_found_at(ranked: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """1.0 when the whole gold set is in the top k: (["a", "b"], {"a", "b"}, 2) -> 1.0."""
    return 1.0 if recall_at(ranked, gold, k) == 1.0 else 0.0


def citation_precision(cited: AbstractSet[str], gold: AbstractSet[str]) -> float | None:
    """Share of cited papers that are gold, None if none is cited: ({"a", "x"}, {"a"}) -> 0.5."""
    return len(cited & gold) / len(cited) if cited else None


def citation_recall(cited: AbstractSet[str], gold: AbstractSet[str]) -> float | None:
    """Share of gold papers cited; None without gold: ({"a"}, {"a", "b"}) -> 0.5."""
    return len(cited & gold) / len(gold) if gold else None


def in_scope_citations(scope: Scope, cited: Sequence[CitedSource]) -> float | None:
    """Share of the cited sources that match the scope, None if nothing is cited.

    (Scope(venue="ICLR", year=2026), [("ICLR", 2026), ("NeurIPS", 2026)]) -> 0.5.
    """
    if not cited:
        return None
    return sum(scope.matches(c) for c in cited) / len(cited)


def set_precision(answered: AbstractSet[str], gold: AbstractSet[str]) -> float | None:
    """Share of the papers given that are gold; None when none is given:
    ({"a", "x"}, {"a"}) -> 0.5; (set(), {"a"}) -> None."""
    return len(answered & gold) / len(answered) if answered else None


def set_recall(answered: AbstractSet[str], gold: AbstractSet[str]) -> float | None:
    """Share of the gold set given; None when the gold set is empty: ({"a"}, {"a", "b"}) -> 0.5."""
    return len(answered & gold) / len(gold) if gold else None


def precision_at(ranked: Sequence[str], gold: AbstractSet[str], k: int) -> float:
    """Share of the top k that is gold (a short list still counts k places):
    (["a", "b", "c"], {"a", "c"}, 2) -> 0.5."""
    _need_gold(gold)
    return len(gold & set(_first_places(ranked)[:k])) / k


def count_error(count: int, gold: AbstractSet[str]) -> float:
    """|count - the gold set's size|: (3, {"a", "b"}) -> 1.0."""
    return float(abs(count - len(gold)))


def contains_all(answer: str, expected: Iterable[str]) -> bool:
    """Every expected string is in the answer (case- and spacing-blind).

    ("Gains of 9.8\\% on  ImageNet-1K", ["9.8", "imagenet-1k"]) -> True; (..., ["9.9"]) -> False.
    """
    text = normalise_text(answer)
    return all(normalise_text(e) in text for e in expected)


def question_scores(o: Outcome) -> dict[str, float | None]:
    """Every per-question metric for one outcome; None where it does not apply."""
    scores: dict[str, float | None] = dict.fromkeys(QUESTION_METRICS)
    gold = o.gold or frozenset()
    if gold and o.kind in RANKING_KINDS:
        scores["hit@1"] = hit_at(o.ranked, gold, 1)
        scores["hit@5"] = hit_at(o.ranked, gold, 5)
        scores["hit@10"] = hit_at(o.ranked, gold, 10)
        scores["mrr"] = reciprocal_rank(o.ranked[:10], gold)  # MRR@10, whatever the depth
        scores["ndcg@10"] = ndcg_at(o.ranked, gold, 10)
    if gold and o.kind in SET_KINDS:
        scores["recall@10"] = recall_at(o.ranked, gold, 10)
        scores["all_found@10"] = all_found_at(o.ranked, gold, 10)
    if gold and o.kind in RELATED_KINDS:
        scores["related_precision@5"] = precision_at(o.ranked, gold, RELATED_K)
        scores["related_recall@5"] = recall_at(o.ranked, gold, RELATED_K)
        scores["related_r_precision"] = precision_at(o.ranked, gold, len(gold))
    if gold and o.answerable and o.kind not in RELATED_KINDS:
        scores["citation_precision"] = citation_precision(o.cited, gold)
        scores["citation_recall"] = citation_recall(o.cited, gold)
    if o.answer_contains and o.scored:
        scores["answer_contains"] = float(contains_all(o.answer, o.answer_contains))
    if o.kind in AGGREGATE_KINDS and o.gold is not None and o.answered_set is not None:
        scores["set_precision"] = set_precision(o.answered_set, o.gold)
        scores["set_recall"] = set_recall(o.answered_set, o.gold)
        if o.kind == "count":
            error = count_error(o.count or 0, o.gold)
            scores["count_error"] = error
            scores["count_right"] = float(error <= o.count_tolerance)
    scores["table_support"] = o.table_support
    if o.scope is not None:
        scores["in_scope_citations"] = in_scope_citations(o.scope, o.cited_sources)
    scores["faithfulness"] = o.judge.get("faithfulness")
    scores["answer_relevance"] = o.judge.get("answer_relevance")
    return scores


# -- a group of questions -----------------------------------------------------------------


def mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    """Mean of the values that are not None, and how many there were: [1, None, 0] -> (0.5, 2)."""
    present = [v for v in values if v is not None]
    return (sum(present) / len(present) if present else None), len(present)


def abstention(pairs: Iterable[tuple[bool, bool]]) -> dict[str, float | None]:
    """Abstention quality from (abstained, answerable) pairs; unanswerable is the positive class.

    precision = abstained and unanswerable / abstained; recall = that / unanswerable;
    false_abstention_rate = abstained and answerable / answerable. E.g.
    [(True, False), (True, True), (False, False), (False, True)] -> 0.5, 0.5, 0.5.
    """
    pairs = list(pairs)
    abstained = sum(a for a, _ in pairs)
    unanswerable = sum(not ok for _, ok in pairs)
    answerable = len(pairs) - unanswerable
    caught = sum(a and not ok for a, ok in pairs)
    wrongly = sum(a and ok for a, ok in pairs)
    return {
        "abstention_precision": caught / abstained if abstained else None,
        "abstention_recall": caught / unanswerable if unanswerable else None,
        "false_abstention_rate": wrongly / answerable if answerable else None,
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default): ([10, 20, 30, 40], 50) -> 25.0."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float | None]]:
    """p50 and p95 in ms for every stage timed: {"total": {"p50": 210.0, "p95": 480.5}, ...}."""
    stages = dict.fromkeys(stage for o in outcomes for stage in o.timings_ms)
    result: dict[str, dict[str, float | None]] = {}
    for stage in stages:
        values = [o.timings_ms[stage] for o in outcomes if stage in o.timings_ms]
        result[stage] = {
            "p50": _round(percentile(values, 50)),
            "p95": _round(percentile(values, 95)),
        }
    return result


def recall_curve(outcomes: Sequence[Outcome], ks: Sequence[int] = CURVE_KS) -> list[float | None]:
    """Mean recall@k, for each k, over the questions with gold (for lookup, recall = hit)."""
    with_gold = [o for o in outcomes if o.gold]
    return [
        _round(mean(recall_at(o.ranked, o.gold, k) for o in with_gold if o.gold)[0]) for k in ks
    ]


def summarise_group(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Every metric over one group: values, `n` (questions behind each), latency."""
    scored = [o for o in outcomes if o.scored]
    per_question = [(o.scored, question_scores(o)) for o in outcomes]
    summary: dict[str, Any] = {"questions": len(outcomes), "scored": len(scored)}
    counts: dict[str, int] = {}
    for name in QUESTION_METRICS:
        every = name in UNSCORED_METRICS
        summary[name], counts[name] = mean(s[name] for ok, s in per_question if ok or every)
        summary[name] = _round(summary[name])
    pairs = [(o.abstained, o.answerable) for o in scored if o.kind not in RELATED_KINDS]
    summary.update({k: _round(v) for k, v in abstention(pairs).items()})
    counts["abstained"] = sum(a for a, _ in pairs)
    counts["unanswerable"] = sum(not ok for _, ok in pairs)
    counts["answerable"] = len(pairs) - counts["unanswerable"]
    summary["n"] = counts
    summary["latency_ms"] = latency(outcomes)
    return summary


def split(outcomes: Sequence[Outcome], key: Callable[[Outcome], str]) -> dict[str, list[Outcome]]:
    """The outcomes by key, keys in order of first appearance."""
    parts: dict[str, list[Outcome]] = {}
    for o in outcomes:
        parts.setdefault(key(o), []).append(o)
    return parts


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Metrics overall, per kind / group / language / split, recall@k curves and the risk-coverage
    curve: the body of metrics.json."""
    kinds = split(outcomes, lambda o: o.kind)
    return {
        "overall": summarise_group(outcomes),
        "per_kind": {kind: summarise_group(group) for kind, group in kinds.items()},
        "per_group": {
            name: summarise_group(group)
            for name, group in split(outcomes, lambda o: o.group_name).items()
        },
        "per_language": {
            lang: summarise_group(group)
            for lang, group in split(outcomes, lambda o: o.language).items()
        },
        "per_split": {
            name: summarise_group(group)
            for name, group in split(outcomes, lambda o: o.split).items()
        },
        "recall_at_k": {
            "k": list(CURVE_KS),
            "overall": recall_curve(outcomes),
            **{kind: recall_curve(group) for kind, group in kinds.items()},
        },
        "risk_coverage": risk_coverage_of(outcomes),
    }


# -- risk and coverage ------------------------------------------------------------------


def risk_coverage(points: Sequence[tuple[float, bool, bool]]) -> list[dict[str, Any]]:
    """The accuracy / coverage trade-off of answering only above a confidence threshold.

    `points` holds one (confidence, correct, answerable) triple per question: the score the
    threshold is set on (higher: more answerable), whether the answer counts as correct
    when given (see `Outcome.correct`: never for an unanswerable question), and whether the
    question should be answered. For each distinct confidence t, highest first, the
    questions with confidence >= t are the ones answered, and the point reports:

    - `threshold`: t;
    - `answered` / `correct`: how many are answered, and how many of those are correct;
    - `coverage`: answered / all questions;
    - `accuracy`: correct / answered (risk = 1 - accuracy);
    - `abstention_recall`: unanswerable questions below t / unanswerable (None if none);
    - `false_abstention_rate`: answerable questions below t / answerable (None if none).

    Tied confidences enter together. E.g. [(0.9, True, True), (0.8, False, False),
    (0.8, True, True), (0.3, False, True)] -> thresholds 0.9, 0.8, 0.3 with coverage
    0.25, 0.75, 1.0 and accuracy 1.0, 2/3, 0.5. No points -> [].
    """
    ordered = sorted(points, key=lambda p: -p[0])
    total = len(ordered)
    unanswerable = sum(not ok for _, _, ok in ordered)
    answerable = total - unanswerable
    curve: list[dict[str, Any]] = []
    answered = correct = unanswerable_answered = 0
    for i, (confidence, right, ok) in enumerate(ordered):
        answered += 1
        correct += right
        unanswerable_answered += not ok
        if i + 1 < total and ordered[i + 1][0] == confidence:
            continue  # a tie: the next question is answered at this threshold too
        curve.append(
            {
                "threshold": confidence,
                "answered": answered,
                "correct": correct,
                "coverage": answered / total,
                "accuracy": correct / answered,
                "abstention_recall": (
                    (unanswerable - unanswerable_answered) / unanswerable if unanswerable else None
                ),
                "false_abstention_rate": (
                    (total - answered - (unanswerable - unanswerable_answered)) / answerable
                    if answerable
                    else None
                ),
            }
        )
    return curve


def operating_point(decisions: Sequence[tuple[bool, bool, bool]]) -> dict[str, Any]:
    """The system's actual decisions as one risk-coverage point.

    `decisions` holds one (abstained, correct, answerable) triple per question; coverage is
    the share not abstained and accuracy the share correct among those (None if all
    abstained), with the same counts and abstention rates as a `risk_coverage` point.
    [(False, True, True), (False, False, False), (True, False, True)] -> coverage 2/3,
    accuracy 0.5, abstention_recall 0.0, false_abstention_rate 0.5.
    """
    total = len(decisions)
    answered = sum(not a for a, _, _ in decisions)
    correct = sum(c for a, c, _ in decisions if not a)
    return {
        "answered": answered,
        "correct": correct,
        "questions": total,
        "coverage": answered / total if total else None,
        "accuracy": correct / answered if answered else None,
        **{
            k: v
            for k, v in abstention((a, ok) for a, _, ok in decisions).items()
            if k != "abstention_precision"
        },
    }


def risk_coverage_of(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """metrics.json `risk_coverage`: the curve over every question, the actual operating
    point, and what the confidence was (`confidence`, `dense_similarity`, `mixed`, `none`).
    `related` questions are left out: they are not answered, so never abstain."""
    outcomes = [o for o in outcomes if o.kind not in RELATED_KINDS]
    curve = risk_coverage([(o.risk_score, o.correct, o.answerable) for o in outcomes])
    actual = operating_point([(o.abstained, o.correct, o.answerable) for o in outcomes])
    return {
        "confidence_source": _confidence_source(outcomes),
        "curve": [_round_point(p) for p in curve],
        "actual": _round_point(actual),
    }


def _confidence_source(outcomes: Sequence[Outcome]) -> str:
    used = {
        "confidence"
        if o.confidence is not None
        else "dense_similarity"
        if o.top_similarity is not None
        else "none"
        for o in outcomes
    }
    return used.pop() if len(used) == 1 else "mixed" if used else "none"


def _round_point(point: dict[str, Any]) -> dict[str, Any]:
    return {k: _round(v) if isinstance(v, float) else v for k, v in point.items()}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)

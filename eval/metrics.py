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
- latency: every question.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from rag.types import normalise_text

RANKING_KINDS = ("lookup", "factual")
SET_KINDS = ("multi",)
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
)
JUDGE_METRICS = ("faithfulness", "answer_relevance")
QUESTION_METRICS = (*SCORE_METRICS, *JUDGE_METRICS)
GROUP_METRICS = ("abstention_precision", "abstention_recall", "false_abstention_rate")


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

    @property
    def scored(self) -> bool:
        """Unanswerable questions are scored on abstention; answerable ones need gold."""
        return not self.answerable or bool(self.gold)


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
    if gold and o.answerable:
        scores["citation_precision"] = citation_precision(o.cited, gold)
        scores["citation_recall"] = citation_recall(o.cited, gold)
    if o.answer_contains and o.scored:
        scores["answer_contains"] = float(contains_all(o.answer, o.answer_contains))
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
    per_question = [question_scores(o) for o in scored]
    summary: dict[str, Any] = {"questions": len(outcomes), "scored": len(scored)}
    counts: dict[str, int] = {}
    for name in QUESTION_METRICS:
        summary[name], counts[name] = mean(s[name] for s in per_question)
        summary[name] = _round(summary[name])
    pairs = [(o.abstained, o.answerable) for o in scored]
    summary.update({k: _round(v) for k, v in abstention(pairs).items()})
    counts["abstained"] = sum(a for a, _ in pairs)
    counts["unanswerable"] = sum(not ok for _, ok in pairs)
    counts["answerable"] = len(pairs) - counts["unanswerable"]
    summary["n"] = counts
    summary["latency_ms"] = latency(outcomes)
    return summary


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Metrics overall, per kind, and recall@k curves: the body of metrics.json."""
    kinds = list(dict.fromkeys(o.kind for o in outcomes))
    groups = {kind: [o for o in outcomes if o.kind == kind] for kind in kinds}
    return {
        "overall": summarise_group(outcomes),
        "per_kind": {kind: summarise_group(group) for kind, group in groups.items()},
        "recall_at_k": {
            "k": list(CURVE_KS),
            "overall": recall_curve(outcomes),
            **{kind: recall_curve(group) for kind, group in groups.items()},
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)

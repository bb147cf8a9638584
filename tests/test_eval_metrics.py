"""The eval metrics on hand-made cases, each one chosen so that a plausible wrong
implementation fails (no dedupe, IDCG over all gold, credit for a tie, a mean that
counts inapplicable questions as zero, ...)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import numpy as np
import pytest

from eval.metrics import (
    CitedSource,
    Outcome,
    Scope,
    abstention,
    all_found_at,
    citation_precision,
    citation_recall,
    contains_all,
    hit_at,
    in_scope_citations,
    latency,
    mean,
    ndcg_at,
    operating_point,
    percentile,
    question_scores,
    recall_at,
    recall_curve,
    reciprocal_rank,
    risk_coverage,
    risk_coverage_of,
    summarise,
    summarise_group,
    venue_key,
)

# -- ranking --------------------------------------------------------------------------


def test_hit_at_counts_only_the_top_k() -> None:
    assert hit_at(["a", "g", "c"], {"g"}, 1) == 0.0
    assert hit_at(["a", "g", "c"], {"g"}, 2) == 1.0
    assert hit_at(["a", "b", "c"], {"g"}, 10) == 0.0


def test_a_paper_listed_twice_counts_at_its_first_place() -> None:
    ranked = ["a", "a", "g"]  # without dedupe, g would sit at rank 3
    assert hit_at(ranked, {"g"}, 2) == 1.0
    assert reciprocal_rank(ranked, {"g"}) == 0.5
    assert ndcg_at(ranked, {"g"}, 2) == pytest.approx(1 / math.log2(3))


def test_a_tie_with_gold_earns_nothing_the_order_decides() -> None:
    # "a" and "g" had the same score; the retriever listed "a" first, so g is rank 2.
    assert hit_at(["a", "g"], {"g"}, 1) == 0.0
    assert reciprocal_rank(["a", "g"], {"g"}) == 0.5


def test_reciprocal_rank_uses_the_first_gold_paper() -> None:
    assert reciprocal_rank(["a", "b", "g1", "g2"], {"g2", "g1"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["a", "b"], {"g"}) == 0.0


def test_ndcg_worked_values() -> None:
    assert ndcg_at(["g"], {"g"}, 10) == 1.0
    assert ndcg_at(["a", "g"], {"g"}, 10) == pytest.approx(0.6309, abs=1e-4)
    # two gold papers at ranks 1 and 3: (1 + 1/2) / (1 + 1/log2 3)
    assert ndcg_at(["g1", "a", "g2"], {"g1", "g2"}, 10) == pytest.approx(1.5 / 1.6309, abs=1e-4)
    assert ndcg_at(["a", "b", "g"], {"g"}, 2) == 0.0


def test_ndcg_ideal_is_capped_at_k() -> None:
    gold = {f"g{i}" for i in range(12)}
    ranked = [f"g{i}" for i in range(10)]  # the top 10 are all gold: as good as it gets
    assert ndcg_at(ranked, gold, 10) == pytest.approx(1.0)


def test_recall_and_all_found_measure_the_whole_gold_set() -> None:
    gold = {"a", "c", "d"}
    assert recall_at(["a", "b", "c"], gold, 2) == pytest.approx(1 / 3)
    assert recall_at(["a", "b", "c"], gold, 3) == pytest.approx(2 / 3)
    assert all_found_at(["a", "b", "c"], gold, 3) == 0.0
    assert all_found_at(["d", "c", "a"], gold, 3) == 1.0


def test_no_sources_scores_zero_not_an_error() -> None:
    assert hit_at([], {"g"}, 10) == 0.0
    assert reciprocal_rank([], {"g"}) == 0.0
    assert ndcg_at([], {"g"}, 10) == 0.0
    assert recall_at([], {"g"}, 10) == 0.0


@pytest.mark.parametrize("metric", [hit_at, ndcg_at, recall_at, all_found_at])
def test_ranking_without_gold_is_undefined(metric: Callable[..., float]) -> None:
    with pytest.raises(ValueError, match="without gold"):
        metric(["a"], set(), 10)
    with pytest.raises(ValueError):
        reciprocal_rank(["a"], set())


def test_recall_curve_never_decreases() -> None:
    rng = random.Random(7)
    papers = [f"p{i}" for i in range(20)]
    outcomes = [
        Outcome("multi", True, frozenset(rng.sample(papers, 3)), tuple(rng.sample(papers, 10)))
        for _ in range(30)
    ]
    curve = recall_curve(outcomes)
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(curve))


# -- answers ----------------------------------------------------------------------------


def test_citation_precision_and_recall() -> None:
    assert citation_precision({"g", "x"}, {"g"}) == 0.5
    assert citation_recall({"g", "x"}, {"g", "h"}) == 0.5
    assert citation_precision({"x"}, {"g"}) == 0.0


def test_no_citation_has_no_precision_but_zero_recall() -> None:
    assert citation_precision(set(), {"g"}) is None
    assert citation_recall(set(), {"g"}) == 0.0


def test_citation_recall_without_gold_is_none() -> None:
    assert citation_recall({"x"}, set()) is None


def test_contains_all_ignores_case_and_spacing_but_not_content() -> None:
    answer = "GTO yields an additional 7.7\\% speedup over  EAGLE-3 [1]."
    assert contains_all(answer, ["7.7", "eagle-3"])
    assert contains_all(answer, ["additional 7.7"])
    assert not contains_all(answer, ["7.7", "EAGLE-2"])
    assert not contains_all(answer, ["77"])


# -- abstention ----------------------------------------------------------------------------


def test_abstention_worked_example() -> None:
    pairs = [(True, False), (True, True), (False, False), (False, True), (False, True)]
    result = abstention(pairs)
    assert result["abstention_precision"] == 0.5  # 1 of 2 abstentions was right
    assert result["abstention_recall"] == 0.5  # 1 of 2 unanswerable caught
    assert result["false_abstention_rate"] == pytest.approx(1 / 3)  # 1 of 3 answerable


def test_abstention_undefined_parts_are_none() -> None:
    never = abstention([(False, True), (False, False)])
    assert never["abstention_precision"] is None
    assert never["abstention_recall"] == 0.0
    only_answerable = abstention([(True, True)])
    assert only_answerable["abstention_recall"] is None
    assert only_answerable["abstention_precision"] == 0.0
    assert only_answerable["false_abstention_rate"] == 1.0


# -- latency ---------------------------------------------------------------------------------


def test_percentile_worked_values_and_ties() -> None:
    assert percentile([40, 10, 30, 20], 50) == 25.0
    assert percentile([10, 20, 30, 40], 95) == pytest.approx(38.5)
    assert percentile([5, 5, 5], 95) == 5
    assert percentile([7], 50) == 7
    assert percentile([], 50) is None


def test_percentile_matches_numpy() -> None:
    rng = random.Random(3)
    for _ in range(50):
        values = [rng.uniform(0, 1000) for _ in range(rng.randint(1, 40))]
        for q in (50, 95):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_latency_per_stage_only_over_questions_that_timed_it() -> None:
    outcomes = [
        Outcome("lookup", True, None, timings_ms={"total": 100.0, "llm": 80.0}),
        Outcome("lookup", True, None, timings_ms={"total": 300.0}),
    ]
    result = latency(outcomes)
    assert result["total"] == {"p50": 200.0, "p95": 290.0}
    assert result["llm"] == {"p50": 80.0, "p95": 80.0}


# -- which questions each metric reads -----------------------------------------------------


def test_question_scores_apply_by_kind() -> None:
    lookup = question_scores(Outcome("lookup", True, frozenset({"g"}), ("g",), frozenset({"g"})))
    assert lookup["hit@1"] == 1.0 and lookup["recall@10"] is None
    multi = question_scores(Outcome("multi", True, frozenset({"g", "h"}), ("g", "x")))
    assert multi["hit@1"] is None and multi["recall@10"] == 0.5
    assert multi["citation_precision"] is None and multi["citation_recall"] == 0.0
    unanswerable = question_scores(Outcome("unanswerable", False, None, ("x",), abstained=True))
    assert all(v is None for v in unanswerable.values())
    # the paper exists but the detail asked for does not: citing it is not a right answer
    detail = Outcome("factual", False, frozenset({"g"}), ("g",), frozenset({"g"}))
    assert question_scores(detail)["citation_precision"] is None
    assert question_scores(detail)["hit@1"] == 1.0  # retrieval can still be judged


def test_mean_leaves_out_what_does_not_apply() -> None:
    assert mean([1.0, None, 0.0]) == (0.5, 2)
    assert mean([None]) == (None, 0)


def test_summary_means_skip_inapplicable_and_unscored_questions() -> None:
    outcomes = [
        Outcome("lookup", True, frozenset({"g"}), ("g",), frozenset({"g"})),
        Outcome("lookup", True, frozenset({"g"}), ("x", "g"), frozenset({"x"})),
        Outcome("lookup", True, None, ("x",), abstained=True),  # no gold: not scored
        Outcome("unanswerable", False, None, ("x",), abstained=True),
        Outcome(
            "factual",
            True,
            frozenset({"f"}),
            ("f",),
            frozenset({"f"}),
            answer="It is 9.8",
            answer_contains=("9.8",),
        ),
    ]
    summary = summarise_group(outcomes)
    assert summary["questions"] == 5 and summary["scored"] == 4
    assert summary["hit@1"] == pytest.approx(2 / 3, abs=1e-4) and summary["n"]["hit@1"] == 3
    assert summary["mrr"] == pytest.approx(2.5 / 3, abs=1e-4)
    assert summary["citation_precision"] == pytest.approx(2 / 3, abs=1e-4)
    assert summary["answer_contains"] == 1.0 and summary["n"]["answer_contains"] == 1
    # the unscored abstention is not a false abstention; the unanswerable one is caught
    assert summary["false_abstention_rate"] == 0.0
    assert summary["abstention_precision"] == 1.0 and summary["abstention_recall"] == 1.0
    assert summary["recall@10"] is None and summary["n"]["recall@10"] == 0


def test_summarise_splits_by_kind() -> None:
    outcomes = [
        Outcome("lookup", True, frozenset({"g"}), ("g",)),
        Outcome("multi", True, frozenset({"a", "b"}), ("a", "x")),
    ]
    result = summarise(outcomes)
    assert set(result["per_kind"]) == {"lookup", "multi"}
    assert result["per_kind"]["multi"]["recall@10"] == 0.5
    assert result["overall"]["hit@1"] == 1.0  # only the lookup question is ranked on hit@k
    assert result["recall_at_k"]["multi"][0] == 0.5
    assert result["recall_at_k"]["lookup"][0] == 1.0


def test_mrr_is_cut_at_ten_whatever_the_ranking_depth() -> None:
    ranked = (*[f"x{i}" for i in range(10)], "g")  # gold at rank 11 of a deeper list
    scores = question_scores(Outcome("lookup", True, frozenset({"g"}), ranked))
    assert scores["mrr"] == 0.0 and scores["hit@10"] == 0.0


# -- scope -------------------------------------------------------------------------------


def test_in_scope_citations_share_of_the_cited_sources() -> None:
    scope = Scope(venue="ICLR", year=2026)
    cited = [CitedSource("a", "ICLR", 2026), CitedSource("b", "iclr", 2026)]
    assert in_scope_citations(scope, cited) == 1.0
    cited += [CitedSource("c", "ICLR", 2025), CitedSource("d", None, 2026)]
    assert in_scope_citations(scope, cited) == 0.5  # wrong year; unknown venue is not in scope
    assert in_scope_citations(scope, []) is None


def test_in_scope_treats_nips_and_neurips_alike() -> None:
    assert Scope(venue="NeurIPS").matches(CitedSource("a", "NIPS", 2017))
    assert Scope(venue="nips").matches(CitedSource("a", "NEURIPS", 2023))
    assert not Scope(venue="NeurIPS").matches(CitedSource("a", "ICML", 2023))
    assert venue_key(" NeurIPS ") == venue_key("nips") == "neurips"


def test_in_scope_status_is_case_blind() -> None:
    scope = Scope(status="Oral")
    assert scope.matches(CitedSource("a", status="oral"))
    assert not scope.matches(CitedSource("a", status="Poster"))
    assert not scope.matches(CitedSource("a"))


def test_in_scope_citations_applies_to_scoped_questions_scored_or_not() -> None:
    scope = Scope(venue="ICLR")
    cited = (CitedSource("a", "ICLR", 2026), CitedSource("b", "NeurIPS", 2025))
    unscored = Outcome(
        "multi", True, None, cited=frozenset({"a", "b"}), scope=scope, cited_sources=cited
    )
    plain = Outcome("multi", True, frozenset({"a"}), cited=frozenset({"a"}))
    assert question_scores(unscored)["in_scope_citations"] == 0.5
    assert question_scores(plain)["in_scope_citations"] is None
    summary = summarise_group([unscored, plain])
    assert summary["in_scope_citations"] == 0.5 and summary["n"]["in_scope_citations"] == 1
    assert summary["scored"] == 1


def test_all_found_applies_to_scoped_multi_questions() -> None:
    o = Outcome("multi", True, frozenset({"a", "b"}), ("a", "b"), scope=Scope(year=2026))
    assert question_scores(o)["all_found@10"] == 1.0


# -- per group and per language ------------------------------------------------------------


def test_summarise_splits_by_group_and_language() -> None:
    outcomes = [
        Outcome("lookup", True, frozenset({"g"}), ("g",), frozenset({"g"}), group="short"),
        Outcome("lookup", True, frozenset({"g"}), ("x", "g"), frozenset({"x"}), group="short"),
        Outcome("lookup", True, frozenset({"g"}), ("g",), abstained=True, language="de"),
        Outcome("unanswerable", False, None, ("x",), abstained=True, group="short"),
        Outcome("unanswerable", False, None, ("x",), group="typo", language="de"),
    ]
    result = summarise(outcomes)
    assert list(result["per_group"]) == ["short", "lookup", "typo"]  # no group: its kind
    short = result["per_group"]["short"]
    assert short["questions"] == 3 and short["hit@1"] == 0.5 and short["n"]["hit@1"] == 2
    assert short["citation_precision"] == 0.5 and short["n"]["citation_precision"] == 2
    assert short["abstention_precision"] == 1.0 and short["abstention_recall"] == 1.0
    assert short["false_abstention_rate"] == 0.0
    assert result["per_group"]["lookup"]["false_abstention_rate"] == 1.0
    typo = result["per_group"]["typo"]
    assert typo["abstention_recall"] == 0.0 and typo["abstention_precision"] is None
    assert typo["hit@1"] is None and typo["n"]["unanswerable"] == 1
    assert set(short) == set(result["overall"])  # every metric, n and latency, per group

    assert list(result["per_language"]) == ["en", "de"]
    de = result["per_language"]["de"]
    assert de["questions"] == 2 and de["hit@1"] == 1.0
    assert de["abstention_precision"] == 0.0 and de["false_abstention_rate"] == 1.0
    assert result["per_language"]["en"]["questions"] == 3
    assert list(result["per_split"]) == ["dev"]  # no split given: dev


def test_summarise_reports_dev_and_test_apart() -> None:
    outcomes = [
        Outcome("lookup", True, frozenset({"g"}), ("g",), frozenset({"g"})),
        Outcome("lookup", True, frozenset({"g"}), ("x",), frozenset({"x"}), split="test"),
        Outcome("lookup", True, frozenset({"g"}), ("g",), abstained=True, split="test"),
    ]
    per_split = summarise(outcomes)["per_split"]
    assert list(per_split) == ["dev", "test"]
    assert per_split["dev"]["hit@1"] == 1.0 and per_split["dev"]["false_abstention_rate"] == 0.0
    assert per_split["test"]["questions"] == 2 and per_split["test"]["hit@1"] == 0.5
    assert per_split["test"]["false_abstention_rate"] == 0.5


# -- risk and coverage ---------------------------------------------------------------------


def test_risk_coverage_worked_example() -> None:
    points = [
        (0.9, True, True),
        (0.8, False, False),  # an unanswerable question, answered at 0.8: wrong
        (0.8, True, True),  # tied with it: both enter at 0.8
        (0.5, False, True),
        (0.1, False, False),
    ]
    curve = risk_coverage(points)
    assert [p["threshold"] for p in curve] == [0.9, 0.8, 0.5, 0.1]
    assert [p["answered"] for p in curve] == [1, 3, 4, 5]
    assert [p["correct"] for p in curve] == [1, 2, 2, 2]
    assert [p["coverage"] for p in curve] == [0.2, 0.6, 0.8, 1.0]
    assert [p["accuracy"] for p in curve] == pytest.approx([1.0, 2 / 3, 0.5, 0.4])
    assert [p["abstention_recall"] for p in curve] == [1.0, 0.5, 0.5, 0.0]
    assert [p["false_abstention_rate"] for p in curve] == pytest.approx([2 / 3, 1 / 3, 0.0, 0.0])


def test_risk_coverage_edge_cases() -> None:
    assert risk_coverage([]) == []
    (only,) = risk_coverage([(0.0, False, True), (0.0, True, True)])
    assert only["coverage"] == 1.0 and only["accuracy"] == 0.5
    assert only["abstention_recall"] is None and only["false_abstention_rate"] == 0.0


def test_operating_point_is_the_actual_decisions() -> None:
    point = operating_point([(False, True, True), (False, False, False), (True, False, True)])
    assert point["answered"] == 2 and point["correct"] == 1 and point["questions"] == 3
    assert point["coverage"] == pytest.approx(2 / 3) and point["accuracy"] == 0.5
    assert point["abstention_recall"] == 0.0 and point["false_abstention_rate"] == 0.5
    assert operating_point([(True, False, False)])["accuracy"] is None


def test_correct_and_risk_score_of_an_outcome() -> None:
    cited = Outcome("lookup", True, frozenset({"g"}), cited=frozenset({"g", "x"}))
    wrong = Outcome("lookup", True, frozenset({"g"}), cited=frozenset({"x"}))
    no_gold = Outcome("lookup", True, None)
    abstained = Outcome("lookup", True, None, abstained=True)
    unanswerable = Outcome("unanswerable", False, None, cited=frozenset({"x"}))
    assert [o.correct for o in (cited, wrong, no_gold, abstained, unanswerable)] == [
        True,
        False,
        True,
        False,
        False,
    ]
    assert Outcome("lookup", True, None, confidence=0.7, top_similarity=0.2).risk_score == 0.7
    assert Outcome("lookup", True, None, top_similarity=0.2).risk_score == 0.2
    assert Outcome("lookup", True, None).risk_score == 0.0


def test_risk_coverage_of_outcomes() -> None:
    outcomes = [
        Outcome("lookup", True, frozenset({"g"}), cited=frozenset({"g"}), confidence=0.9),
        Outcome("unanswerable", False, None, abstained=True, confidence=0.2),
        Outcome("lookup", True, frozenset({"g"}), cited=frozenset({"x"}), confidence=0.6),
    ]
    risk = risk_coverage_of(outcomes)
    assert risk["confidence_source"] == "confidence"
    assert [(p["threshold"], p["coverage"], p["accuracy"]) for p in risk["curve"]] == [
        (0.9, 0.3333, 1.0),
        (0.6, 0.6667, 0.5),
        (0.2, 1.0, 0.3333),
    ]
    assert risk["actual"]["coverage"] == 0.6667 and risk["actual"]["accuracy"] == 0.5
    mixed = [*outcomes, Outcome("lookup", True, None, top_similarity=0.4)]
    assert risk_coverage_of(mixed)["confidence_source"] == "mixed"
    assert summarise(outcomes)["risk_coverage"] == risk

"""Counts and comparison tables: reading them, the fitted cut, quoted cells, rendering.

Retrieval quality is the point of the count tests, so they run over the real seeded
Chroma index with the real embedding model; the table invariant (every cell is a span of
its cited abstract) is checked on every comparison question of eval/questions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eval.matchfit import (
    _with_best_threshold,
    candidate_rows,
    fit,
    mean_f1,
    mean_f1_at,
    question_sets,
    report,
)
from eval.metrics import Outcome, count_error, question_scores, set_precision, set_recall
from eval.questions import abstracts_in_files, load_questions, parse_question, resolve_gold
from eval.result import Result
from rag import logistic
from rag.aggregate import matching, tables
from rag.aggregate.conference import group_counts
from rag.answering.answerable import Model
from rag.assistant import Assistant
from rag.cli import answer_json, format_table, main
from rag.config import BUNDLED_CORPUS, Settings
from rag.question.reading import DEFAULT_COLUMNS, Vocabulary, author_candidates, read
from rag.retrieval.retrieve import written_by
from rag.types import Answer, Paper, Source, TableRow
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder
from ui.render import answer_with_references, table_html, table_markdown

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "eval" / "questions"
VOCABULARY = Vocabulary(
    venues=frozenset({"ICLR", "NIPS"}),
    years=frozenset({2018, 2026}),
    statuses=frozenset({"Oral", "Poster"}),
)


# -- reading -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "topic", "group_by", "scope"),
    [
        (
            "how many ICLR 2026 papers study speculative decoding?",
            "speculative decoding",
            None,
            {"venue": "ICLR", "year": 2026},
        ),
        ("how many papers are about RL for LLM reasoning?", "RL LLM reasoning", None, {}),
        ("how many papers on diffusion for video per year", "diffusion video", "year", {}),
        ("number of papers on GANs by venue", "GANs", "venue", {}),
        (
            "how many NeurIPS papers on bandits, orals vs posters",
            "bandits",
            "status",
            {"venue": "NIPS"},
        ),
    ],
)
def test_a_count_is_read_with_its_topic_grouping_and_scope(
    question: str, topic: str, group_by: str | None, scope: dict[str, object]
) -> None:
    read_q = read(question, VOCABULARY)
    assert read_q.intent == "count"
    assert (read_q.topic, read_q.group_by, read_q.read_scope.to_dict()) == (topic, group_by, scope)


@pytest.mark.parametrize(
    ("question", "compared", "topic", "columns"),
    [
        (
            "compare GTO and the n-draft speculative sampling paper",
            ("GTO", "the n-draft speculative sampling paper"),
            "",
            DEFAULT_COLUMNS,
        ),
        ("compare the papers on bilevel optimization", (), "bilevel optimization", DEFAULT_COLUMNS),
        (
            "compare the speculative-decoding papers: method and results",
            (),
            "speculative-decoding",
            ("method", "key result"),
        ),
        (
            "compare the datasets and benchmarks of DTO-KD and CSAM",
            ("DTO-KD", "CSAM"),
            "",
            ("data",),
        ),
        (
            "BoGrape vs local entropy search",
            ("BoGrape", "local entropy search"),
            "",
            DEFAULT_COLUMNS,
        ),
    ],
)
def test_a_comparison_is_read_with_what_it_compares_and_its_columns(
    question: str, compared: tuple[str, ...], topic: str, columns: tuple[str, ...]
) -> None:
    read_q = read(question, VOCABULARY)
    assert read_q.intent == "comparison"
    assert (read_q.compared, read_q.topic, read_q.columns) == (compared, topic, columns)


def test_groups_are_counted_in_the_fields_order() -> None:
    papers = [Paper("a", "x", year=2018), Paper("b", "y", year=2017), Paper("c", "z", year=2018)]
    assert group_counts(papers, "year") == {"2017": 1, "2018": 2}
    assert group_counts(papers, "status") == {"unknown": 3}


# -- tables --------------------------------------------------------------------------


def test_every_cell_of_every_seed_abstract_is_a_span_of_it() -> None:
    for abstract in abstracts_in_files([BUNDLED_CORPUS]).values():
        row = tables.cells(abstract, ["problem", "method", "key result", "data"])
        assert all(tables.supported(cell, abstract) for cell in row.values()), row
        assert row["method"], abstract[:80]  # every seed says what it does


def test_a_long_sentence_is_elided_into_verbatim_spans() -> None:
    long = (
        "Across dialogue, code, and math, and multiple large language models of many "
        "sizes and families that we list here at length to make the sentence long, "
        "and more words still to pass the limit, GTO increases acceptance length by "
        "7.4% and yields an additional 7.7% speedup."
    )
    cell = tables.cells(f"We propose GTO. {long}", ["key result"])["key result"]
    assert tables.ELISION in cell and "7.4%" in cell
    assert tables.supported(cell, f"We propose GTO. {long}")
    assert not tables.supported("GTO is 9x faster", long)


def test_the_seeded_comparisons_quote_their_cited_abstracts(seeded: Assistant) -> None:
    """The issue's invariant, on every comparison question of the eval set."""
    questions = [
        q for q in load_questions(QUESTIONS / "conference.jsonl") if q.kind == "comparison"
    ]
    assert len(questions) >= 10
    for q in questions:
        answer = seeded.ask(q.question)
        assert answer.table, q.question
        texts = {s.n: s.text for s in answer.sources}
        for row in answer.table:
            assert row.n in answer.citations
            for cell in row.cells.values():
                assert tables.supported(cell, texts[row.n]), (q.question, cell)


def test_compare_x_and_y_gives_one_row_each(seeded: Assistant) -> None:
    answer = seeded.ask("compare GTO and the n-draft speculative sampling paper")
    assert answer.intent == "comparison" and answer.table is not None
    titles = [s.title for s in answer.sources]
    assert len(answer.table) == 2 and "GTO" in titles[0] and "n-draft" in titles[1]
    assert list(answer.table[0].cells) == list(DEFAULT_COLUMNS)
    assert "7.4" in answer.table[0].cells["key result"]
    data = answer_json(answer)
    assert data["table"][0] == {"n": 1, "cells": answer.table[0].cells}
    assert "table_quoted" in data["notice_codes"]


# -- counts over the real index ---------------------------------------------------------


def test_a_count_gives_the_number_the_papers_and_how_they_were_chosen(seeded: Assistant) -> None:
    answer = seeded.ask("how many ICLR 2026 papers study speculative decoding?")
    assert answer.intent == "count" and answer.count == 2
    assert len(answer.sources) == 2 and answer.citations == [1, 2]
    assert {"GTO" in s.title or "n-draft" in s.title for s in answer.sources} == {True}
    assert "**2 papers**" in answer.answer and "[1]" in answer.answer
    # each member's line quotes the sentence of its abstract that makes it count
    for source, line in zip(answer.sources, answer.answer.splitlines()[1:], strict=True):
        assert line.startswith(f"- **{source.title}** [{source.n}]: “")
        quote = line.split("“", 1)[1].rstrip("”").removesuffix(" …")
        assert quote in source.text and "speculative" in quote.casefold()
    assert [n.code for n in answer.notices][:2] == ["scope", "count_cut"]
    assert "52 papers in scope" in answer.notices[1]


def test_a_count_of_topics_joined_by_or_counts_a_paper_about_either(seeded: Assistant) -> None:
    question = (
        "how many papers tackle operations research problems like queues, routing or scheduling"
    )
    answer = seeded.ask(question)
    assert answer.count == 3
    for source in answer.sources:
        assert any(w in source.text.casefold() for w in ("queue", "routing", "scheduling"))
    read_q, applied = seeded.plan(question)
    names = seeded.topic_names(read_q)
    whole = seeded.matcher.match(read_q.topic, seeded.match_model, applied, names)
    assert len(whole.members) < 3  # the topic as one: a paper must hold all its words


def test_a_topic_no_seed_covers_counts_zero(seeded: Assistant) -> None:
    answer = seeded.ask("how many ICLR 2026 papers on protein folding?")
    assert answer.count == 0 and answer.sources == [] and not answer.abstained
    assert "Closest" not in answer.answer  # no paper comes near: none is listed


def test_a_topic_named_only_as_an_example_covers_none_of_its_words(seeded: Assistant) -> None:
    # CSAM's abstract opens with "safety-critical applications such as medical diagnosis
    # and autonomous driving": BM25 sees the words, the coverage features do not
    found, _ = seeded.matcher.candidates("autonomous driving")
    csam = next(c for c in found if "such as medical diagnosis and autonomous" in c.paper.abstract)
    assert csam.features["bm25"] > 0
    assert csam.features["coverage"] == csam.features["sentence_coverage"] == 0.0
    assert seeded.ask("how many iclr 2026 papers are about autonomous driving").count == 0
    # a name of the topic's counts wherever it stands: DeMo "applies a fast orthonormal
    # transform (e.g., DCT)", the transform it uses
    sentence = "DeMo applies a fast orthonormal transform (e.g., DCT) followed by top-k"
    assert "DCT" in matching._stated(sentence, ("DCT",))
    assert "orthonormal" in matching._stated(sentence, ()) and "DCT" not in matching._stated(
        sentence, ()
    )


def test_a_dataset_or_model_the_abstracts_name_is_counted_where_it_is_an_example(
    seeded: Assistant,
) -> None:
    """'imagenet' is a name the seeds write as 'ImageNet-1K' only, both times in a list of
    what the experiments used ("datasets, including ImageNet-1K"): read as the name, its
    mention there counts, so both papers that evaluate on it are counted; 'qwen' is the
    name of 'Qwen3-8B' and 'Qwen3-30B'."""
    retriever = seeded.retriever
    assert retriever.written_names("papers that run qwen or llama models") == ("Qwen", "LLaMA")
    answer = seeded.ask("how many papers evaluate on imagenet")
    counted = [s for s in answer.sources if s.cited]
    assert answer.count == 2 and all("ImageNet-1K" in s.text for s in counted)


def test_papers_asked_for_by_a_name_they_write_with_a_version_are_found(
    seeded: Assistant,
) -> None:
    """'which papers use qwen': the seeds write only 'Qwen3-8B' and 'Qwen3-30B', which BM25
    and the content words also read as 'Qwen', so both papers are found, not refused."""
    answer = seeded.ask("which papers use qwen", mode="extractive")
    cited = " ".join(s.text for s in answer.sources if s.cited)
    assert not answer.abstained and "Qwen3-8B" in cited and "Qwen3-30B" in cited


def test_a_count_of_the_papers_using_a_name_counts_those_that_name_it(
    seeded: Assistant,
) -> None:
    """'papers that report gsm8k results': the words saying how a paper uses the name are
    not its topic (lexicon USAGE_FRAME), so the paper that names GSM8K counts though it
    never says 'report' nor 'results'; without a name those words stay."""
    read_q, _ = seeded.plan("how many papers report gsm8k results")
    assert seeded.count_topic(read_q)[0] == "gsm8k"
    answer = seeded.ask("how many papers report gsm8k results")
    counted = [s for s in answer.sources if s.cited]
    assert counted and all("GSM8K" in s.text for s in counted)
    plain_q, _ = seeded.plan("how many papers report evaluation results")
    assert seeded.count_topic(plain_q)[0] == plain_q.topic


def test_a_topic_named_with_a_generic_head_counts_papers_naming_what_qualifies_it(
    seeded: Assistant,
) -> None:
    """The seeds' recommendation papers never write 'recommender systems' ('recommendation
    algorithms', 'use recommendation as a natural evaluation setting'): the count weighs
    the topic without its generic head too (lexicon GENERIC_HEADS), not 'language models'
    without 'models'."""
    read_q, _ = seeded.plan("how many papers on recommender systems")
    topic, _, others = seeded.count_topic(read_q)
    assert topic == "recommender systems" and "recommender" in others
    answer = seeded.ask("how many papers on recommender systems")
    counted = [s.text for s in answer.sources[: answer.count or 0]]
    assert answer.count == 2 and all("recommendation" in text for text in counted)
    lm_q, _ = seeded.plan("how many papers on language models")
    assert "language" not in seeded.count_topic(lm_q)[2]


def test_the_eval_scores_a_count_by_its_counted_papers_only() -> None:
    question = parse_question(json.dumps({"id": "k", "question": "how many", "kind": "count"}))
    nearest = [{"paper_id": "a", "n": 1, "cited": False}]
    none = Result(question, {"count": 0, "sources": nearest, "abstained": False}, [], None)
    assert none.answered_set() == frozenset()  # the closest papers below the cut
    two = [{"paper_id": p, "n": i, "cited": i == 1} for i, p in enumerate("ab", 1)]
    counted = Result(question, {"count": 2, "sources": two, "abstained": False}, [], None)
    assert counted.answered_set() == {"a", "b"}  # every member, cited or listed


def test_a_count_of_none_lists_the_closest_papers_uncited(seeded: Assistant) -> None:
    # described in other words than the abstracts use, the topic passes no paper's cut,
    # and the papers that come closest are there to open, neither counted nor cited
    answer = seeded.ask(
        "how many iclr 2026 papers prove that models with far more parameters than needed "
        "still train to the optimum"
    )
    assert answer.count == 0 and not answer.citations
    assert 1 <= len(answer.sources) <= matching.NEAREST
    assert not any(s.cited for s in answer.sources)
    assert any(n.code == "count_nearest" for n in answer.notices)
    assert any("over-parameterized" in s.title for s in answer.sources)
    closest = answer.answer.splitlines()[1]
    assert closest.startswith("Closest, below the cut of ")
    assert all(s.title in closest for s in answer.sources)


def test_a_grouped_count_says_how_many_per_group(seeded: Assistant) -> None:
    answer = seeded.ask("how many papers on bilevel optimization per year")
    assert answer.count_by == {"year": {"2026": answer.count}}
    assert f"By year: 2026: {answer.count}." in answer.answer


def test_rag_ask_json_carries_count_and_table(seeded_index: Path) -> None:
    runner = CliRunner()
    base = ["--index-dir", str(seeded_index), "ask", "--json"]
    counted = json.loads(runner.invoke(main, [*base, "how many papers use the DCT?"]).stdout)
    assert counted["count"] == 2 and counted["table"] is None
    assert len(counted["sources"]) == 2
    compared = json.loads(runner.invoke(main, [*base, "compare SPO and GVPO"]).stdout)
    assert compared["count"] is None
    assert [set(r) for r in compared["table"]] == [{"n", "cells"}, {"n", "cells"}]


def test_the_shipped_cut_holds_on_the_held_out_seeds_questions(seeded: Assistant) -> None:
    """Held out: fitted on count-calibration.jsonl, scored on conference.jsonl."""
    questions = [q for q in load_questions(QUESTIONS / "conference.jsonl") if q.kind == "count"]
    gold = resolve_gold(questions, {p: x.abstract for p, x in seeded.papers().items()})
    rows = candidate_rows(seeded, questions, gold, "seeds")
    figures = report(rows, seeded.match_model)["seeds"]
    assert figures["questions"] >= 20
    assert figures["set_precision"] >= 0.8 and figures["set_recall"] >= 0.8


def test_a_refit_on_the_calibration_questions_separates_members(seeded: Assistant) -> None:
    questions = load_questions(QUESTIONS / "count-calibration.jsonl")
    gold = resolve_gold(questions, {p: x.abstract for p, x in seeded.papers().items()})
    rows = candidate_rows(seeded, questions, gold, "seeds")
    model = fit(rows)
    assert 0 < model.threshold < 1 and model.about["questions"] == len(questions)
    assert report(rows, model)["seeds"]["mean_f1"] >= 0.9
    assert Model.from_json(model.to_json(), matching.FEATURES, "match") == model


# -- metrics and rendering -------------------------------------------------------------


def test_set_metrics() -> None:
    assert set_precision({"a", "x"}, {"a"}) == 0.5 and set_precision(set(), {"a"}) is None
    assert set_recall({"a"}, {"a", "b"}) == 0.5 and set_recall({"a"}, set()) is None
    assert count_error(3, {"a", "b"}) == 1.0


def test_a_count_is_right_within_the_tolerance_its_question_allows() -> None:
    line = {"id": "c1", "question": "how many papers on X", "kind": "count", "gold": ["a"]}
    assert parse_question(json.dumps(line)).count_tolerance == 0
    tolerant = parse_question(json.dumps({**line, "count_tolerance": 1}))
    assert tolerant.count_tolerance == 1
    for bad in ({**line, "count_tolerance": -1}, {**line, "count_tolerance": "1"}):
        with pytest.raises(ValueError, match="count_tolerance"):
            parse_question(json.dumps(bad))
    with pytest.raises(ValueError, match="for `count` questions only"):
        parse_question(json.dumps({**line, "kind": "lookup", "count_tolerance": 1}))

    def right(count: int, tolerance: int) -> float | None:
        outcome = Outcome(
            "count", True, frozenset({"a", "b"}), count=count, answered_set=frozenset({"a"}),
            count_tolerance=tolerance,
        )  # fmt: skip
        return question_scores(outcome)["count_right"]

    assert (right(2, 0), right(3, 0), right(3, 1), right(4, 1)) == (1.0, 0.0, 1.0, 0.0)


def _table_answer() -> Answer:
    sources = [
        Source(1, "p1", "GTO | trees", False, "f.txt:1", 1.0, "We propose GTO. It is 7% faster."),
        Source(2, "p2", "<b>n-draft</b>", True, "f.txt:2", 0.9, "We study OT."),
    ]
    answer = Answer("compare", "Comparing 2 papers [1] [2].", False, [1, 2], sources, "extractive")
    answer.table = [
        TableRow(1, {"method": "We propose GTO.", "key result": "It is 7% faster."}),
        TableRow(2, {"method": "We study OT.", "key result": ""}),
    ]
    return answer


def test_the_table_renders_for_the_app_the_export_and_the_terminal() -> None:
    answer = _table_answer()
    html = table_html(answer, 0)
    assert html.count("<tr>") == 3 and 'href="#src-0-1"' in html
    assert "&lt;b&gt;n-draft" in html and "<td>—</td>" in html
    markdown = table_markdown(answer)
    assert markdown.splitlines()[0] == "| paper | method | key result |"
    assert "GTO \\| trees" in markdown
    assert markdown in answer_with_references(answer)
    grid = format_table(answer, width=80)
    assert grid.splitlines()[1].startswith("| paper") and "7% faster." in grid
    assert len({len(line) for line in grid.splitlines()}) == 1  # a rectangle


def test_a_word_the_abstracts_write_as_a_name_is_counted_as_that_name(
    fake_seeded: Assistant,
) -> None:
    """'clip' over the seeds: every abstract that uses the word alone writes CLIP, while
    'clipping' (the RLHF ratio clipping, DP-SGD's per-example clipping) shares its stem.
    Read as the name, only the two CLIP papers hold it; 'llms' is read as the LLMs the
    abstracts write (its stem is theirs, 'llm', so nothing else matches it either), and
    'map' is no name the abstracts write."""
    retriever = fake_seeded.retriever
    assert retriever.written_names("papers about clip") == ("CLIP",)
    assert retriever.written_names("llms for optimization") == ("LLMs",)
    assert retriever.written_names("a map of methods") == ()
    terms = retriever.terms
    rlhf = next(
        sp.paper
        for sp in retriever.catalog.papers.values()
        if "ratio clipping" in sp.paper.abstract
    )
    assert terms.coverage("clip", rlhf.abstract) == 1.0  # as a word, 'clipping' holds it
    assert terms.coverage("clip", rlhf.abstract, ("CLIP",)) == 0.0
    neuclip = next(
        sp.paper for sp in retriever.catalog.papers.values() if "NeuCLIP" in sp.paper.abstract
    )
    assert terms.coverage("clip", neuclip.abstract, ("CLIP",)) == 1.0

    answer = fake_seeded.ask("how many papers are about clip")
    counted = {s.paper_id for s in answer.sources if s.cited}
    assert rlhf.paper_id not in counted


def test_a_method_against_its_baseline_is_a_question_about_that_paper(
    fake_seeded: Assistant,
) -> None:
    """'dr-sac reward vs sac': one abstract is the best match for both sides (SAC is the
    DR-SAC paper's baseline), so it is answered from that paper, not as a table of two;
    two sides that find two papers still get the table."""
    answer = fake_seeded.ask("dr-sac reward vs sac")
    assert answer.intent == "lookup" and answer.table is None
    cited = [s for s in answer.sources if s.cited]
    assert cited and "DR-SAC" in cited[0].title

    table = fake_seeded.ask("compare GTO and the n-draft speculative sampling paper")
    assert table.intent == "comparison" and table.table is not None
    assert len({s.paper_id for s in table.sources if s.cited}) == 2


def test_which_papers_cites_the_papers_a_count_would_count(seeded: Assistant) -> None:
    # 'which papers use X' and 'how many papers use X' are one set: of the retrieved
    # papers, the list cites those the count's cut takes, not every near neighbour
    listed = seeded.ask("which iclr 2026 papers use bayesian optimization?")
    counted = seeded.ask("how many iclr 2026 papers use bayesian optimization?")
    cited = {s.paper_id for s in listed.sources if s.cited}
    members = {s.paper_id for s in counted.sources[: counted.count]}
    assert listed.intent == "papers" and cited and cited <= members
    retrieved = {s.paper_id for s in listed.sources}
    assert retrieved - members  # other papers were retrieved, and left uncited
    assert not any(n.code == "papers_none" for n in listed.notices)
    # where the count's cut takes none, the list says its papers are only the closest
    none = seeded.ask("which iclr 2026 papers are about autonomous driving")
    assert none.intent == "papers" and not none.abstained
    assert seeded.ask("how many iclr 2026 papers are about autonomous driving").count == 0
    # a refusal lists no papers: no 'papers_none' beside it; the seeds' lists hold no authors
    deepmind = seeded.ask("papers by deepmind", mode="extractive")
    codes = [n.code for n in deepmind.notices]
    assert deepmind.abstained and "author_unlisted" in codes and "papers_none" not in codes
    cited = [s.text for s in none.sources if s.cited]  # not four others as close by cosine
    assert len(cited) == 1 and "autonomous driving" in cited[0]
    assert [n for n in none.notices if n.code == "papers_none"] == [
        "none of these papers is mainly about 'autonomous driving' (a count of it finds "
        "none): they are the closest found, and may only mention it (the count's cut: "
        f"P(about it) >= {seeded.match_model.threshold:.2f})"
    ]


def test_the_mean_f1_of_every_cut_at_once_is_each_cut_s_own() -> None:
    rows = (
        [
            {"index": "seeds", "id": "q1", "paper_id": p, "member": m, "features": {}}
            for p, m in [("a", True), ("b", True), ("c", False), ("d", False)]
        ]
        + [
            {"index": "seeds", "id": "q2", "paper_id": p, "member": False, "features": {}}
            for p in ("a", "e")
        ]
        + [{"index": "seeds", "id": "q3", "paper_id": "f", "member": True, "features": None}]
    )
    probability = [0.9, 0.4, 0.6, 0.1, 0.3, 0.7, -1.0]
    cuts = [0.95, 0.9, 0.7, 0.6, 0.4, 0.3, 0.1, 0.0]

    def one_at_a_time(cut: float) -> float:
        scores = []
        for predicted, gold in question_sets(rows, probability, cut).values():
            hit = len(predicted & gold)
            scores.append(2 * hit / (len(predicted) + len(gold)) if gold else 1.0 - bool(predicted))
        return sum(scores) / len(scores)

    at_once = mean_f1_at(rows, probability, np.array(cuts))
    assert at_once.tolist() == pytest.approx([one_at_a_time(c) for c in cuts])
    assert at_once[0] == pytest.approx((0 + 1 + 0) / 3)  # nothing passes: only q2 scores
    levels = [p for p in probability if p >= 0]
    by_each = logistic.best_threshold(levels, lambda cut: mean_f1(rows, probability, cut))
    together = logistic.best_threshold(
        levels, scores=lambda cuts: mean_f1_at(rows, probability, cuts)
    )
    assert together == by_each


def test_the_cut_is_the_median_best_cut_of_bootstrap_draws_of_the_questions() -> None:
    """Nine questions want a cut between 0.3 and 0.7, one wants it between 0.1 and 0.25:
    the cut sits where the nine agree (halfway between 0.7 and the next level down), it is
    the same on every fit (the draws are seeded), and it scores the best mean F1."""
    rows, probability = [], []
    for q in range(9):
        rows += [
            {"index": "seeds", "id": f"a{q}", "paper_id": "m", "member": True, "features": {}},
            {"index": "seeds", "id": f"a{q}", "paper_id": "n", "member": False, "features": {}},
        ]
        probability += [0.7, 0.3]
    rows += [
        {"index": "seeds", "id": "b", "paper_id": "m", "member": True, "features": {}},
        {"index": "seeds", "id": "b", "paper_id": "n", "member": False, "features": {}},
    ]
    probability += [0.25, 0.1]

    class Fixed(Model):
        def confidence(self, features: dict[str, float]) -> float:
            return next(ps)

    def cut() -> float:
        nonlocal ps
        ps = iter(probability)
        return _with_best_threshold(Fixed({}, 0.0, {}, {}, 0.5), rows).threshold

    ps = iter(probability)
    assert cut() == pytest.approx(0.5) and cut() == cut()
    best = max(mean_f1_at(rows, probability, np.array([0.7, 0.3, 0.25, 0.1])))
    assert mean_f1(rows, probability, cut()) == pytest.approx(best)


@pytest.mark.parametrize(
    ("question", "lists"),
    [
        ("how many iclr 2026 papers are there", True),
        ("list the aistats 2021 papers", True),
        ("how many papers per year", True),
        ("iclr 2026 papers", True),
        ("how many iclr 2026 papers on dpo", False),  # a topic: weighed by the count's cut
        ("which papers use clip", False),
        ("how many of them", False),  # the previous answer's papers, in a conversation
    ],
)
def test_a_question_naming_no_topic_lists_its_scope(question: str, lists: bool) -> None:
    vocabulary = Vocabulary(venues=frozenset({"ICLR", "AISTATS"}), years=frozenset({2026, 2021}))
    assert read(question, vocabulary).lists_scope is lists


def test_how_many_papers_are_there_counts_the_scope_not_a_topic(seeded: Assistant) -> None:
    """Before, 'how many iclr 2026 papers are there' counted 0 papers matching 'papers are
    there' and 'list iclr 2026 papers' was refused."""
    total = len(seeded.papers())
    answer = seeded.ask("how many iclr 2026 papers are there", mode="extractive")
    assert answer.count == total and answer.answer.startswith(f"**{total} papers**")
    assert "scope_listed" in [n.code for n in answer.notices]
    cited = [s for s in answer.sources if s.cited]
    assert len(cited) == min(total, seeded.settings.count_cited)
    assert all(s.highlights and s.highlights[0] in s.text for s in cited)
    listed = seeded.ask("list iclr 2026 papers", mode="extractive")
    assert not listed.abstained and listed.count == total
    by_year = seeded.ask("how many papers per year", mode="extractive")
    assert by_year.count_by == {"year": {"2026": total}}
    topic = seeded.ask("how many iclr 2026 papers on dpo", mode="extractive")
    assert "count_cut" in [n.code for n in topic.notices] and topic.count < total


def test_papers_by_an_author_the_records_list_are_scoped_to_them(
    settings_factory: Callable[..., Settings], fake_embedder: HashEmbedder
) -> None:
    """Before, 'papers by yoshua bengio' among ../shared's 22k abstracts quoted papers whose
    abstracts cite Bengio; the records' authors decide now, as a scope."""
    assistant = Assistant(settings_factory(), fake_embedder)
    assistant.ingest([FIXTURES / "copilot.json", FIXTURES / "records.csv"])
    mine = assistant.ask("papers by ada lovelace", mode="extractive")
    assert mine.applied_filters == {"author": "ada lovelace"}
    assert mine.count == 1 and [s.title for s in mine.sources] == ["Robust Widgets for Everyone"]
    assert mine.answer.startswith("**1 paper** among the papers by ada lovelace")
    by_last = assistant.ask("how many papers by jones", mode="extractive")  # 'C. Jones'
    assert by_last.count == 1 and by_last.sources[0].title == "Quantile Regression Forests at Scale"
    # a name no record lists is no author: searched as it stands
    nobody = assistant.ask("papers by marie curie", mode="extractive")
    assert "author" not in nobody.applied_filters
    assert [str(n) for n in nobody.notices if n.code == "author_unlisted"] == [
        "no record lists an author named 'marie curie' (records list authors, not "
        "affiliations): 'by marie curie' was searched in the abstracts"
    ]
    grouped = assistant.ask("how many papers by year", mode="extractive")
    assert "author_unlisted" not in [n.code for n in grouped.notices]
    assert "author_unlisted" not in [n.code for n in mine.notices]
    assert written_by(("Yoshua Bengio", "Samy Bengio"), "bengio")
    assert not written_by(("Yoshua Bengio",), "yoshua")  # a first name alone is no one
    assert author_candidates("work by Ada Lovelace on widgets")[2] == (
        "Ada Lovelace",
        "by Ada Lovelace",
    )
    assert author_candidates("speedups by pruning") == []  # no paper noun before 'by'

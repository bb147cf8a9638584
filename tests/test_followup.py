"""Whether a question leans on the turn before: the fitted follow-up model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval import followupfit
from rag.assistant import Assistant
from rag.logistic import Model
from rag.question import followup
from rag.question.reading import overview_rest, read
from rag.text import content_words


def test_one_counts_when_it_stands_for_a_paper_not_a_number() -> None:
    def one(q: str) -> float:
        return followup.features(read(q), "", "", lambda q, t: 0.0, lambda q, t: 0.0)["one"]

    assert one("which one is critic free") == 1.0
    assert one("what per-token overhead does the multi-draft one have?") == 1.0
    assert one("which ones use DPO") == 1.0
    assert one("one general prompt that works for every task") == 0.0


def test_features_weigh_the_question_against_the_paper_in_focus() -> None:
    focus = "CSAM. We evaluate calibration on ImageNet-1K with sharpness-aware minimization."
    seen = followup.features(
        read("which dataset did they use"),
        focus,
        "explain CSAM",
        lambda q, t: 1.0 if "ImageNet" in t else 0.0,
        lambda q, t: 0.5,
    )
    assert seen["refers"] == 1.0 and seen["focus_coverage"] == 1.0
    assert seen["focus_coverage_all"] == 0.5
    named = followup.features(read("GTO speedup"), focus, "", lambda q, t: 0, lambda q, t: 0)
    assert named["new_terms"] == 1.0  # GTO is not a word of the paper in focus
    assert named["short"] == pytest.approx(0.8)


def test_the_shipped_model_is_fitted_and_beats_the_phrase_rule() -> None:
    data = json.loads(followup.DEFAULT_MODEL.read_text(encoding="utf-8"))
    model = Model.from_json(data, followup.FEATURES, "follow-up")
    assert set(model.weights) == set(followup.FEATURES)
    about = data["about"]
    assert about["cross_validated"]["f1"] > about["rule_alone"]["f1"]
    with_rule, rule = about["cross_validated_with_rule"], about["rule_alone"]
    assert with_rule["recall"] > rule["recall"]  # the model adds follow-ups the rule misses
    assert about["follow_ups"] >= 20 and "dev2.jsonl" in " ".join(about["files"])


def test_a_follow_up_without_a_pronoun_picks_from_the_papers_shown(seeded: Assistant) -> None:
    chat = seeded.conversation()
    first = chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    shown = {s.paper_id for s in first.sources if s.cited}
    assert len(shown) > 1
    follow = chat.ask("which one picks the preference pairs to label?", mode="extractive")
    assert follow.follow_up and follow.sources[0].paper_id in shown


def test_the_one_that_after_a_list_is_the_listed_paper_whose_sentences_answer_it(
    seeded: Assistant,
) -> None:
    chat = seeded.conversation()
    first = chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    assert len([s for s in first.sources if s.cited]) == 3  # AuxDPO, TI-DPO, ActiveDPO
    # Paper by paper, its own words match AuxDPO best; sentence by sentence, ActiveDPO
    # ('Collecting these datasets requires human preference annotation ...').
    follow = chat.ask("the one that picks which preference pairs to label?", mode="extractive")
    assert follow.follow_up
    assert [s.title for s in follow.sources if s.cited] == ["ActiveDPO"]


def test_which_one_is_answered_with_the_papers_name(seeded: Assistant) -> None:
    """The quoted sentences of TI-DPO never say 'TI-DPO': an answer to 'which one' leads
    with the paper's label, derived or not; other answers about a seed (no title) do not."""
    chat = seeded.conversation()
    chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    follow = chat.ask("which one of them weighs individual tokens differently", mode="extractive")
    (cited,) = [s for s in follow.sources if s.cited]
    assert cited.title_is_derived and cited.title.startswith("TI-DPO")
    assert follow.answer.startswith(f"**{cited.title}**: ")
    detail = chat.ask("how are the token weights computed", mode="extractive")
    assert not detail.answer.startswith("**")


def test_picks_one_reads_a_question_for_one_of_several() -> None:
    assert followup.picks_one("the one that picks which preference pairs to label?")
    assert followup.picks_one("which of them uses a triplet loss?")
    assert not followup.picks_one("which papers use a triplet loss?")
    assert not followup.picks_one("one prompt for every task")


def test_a_new_topic_without_a_pointing_word_is_not_read_as_a_follow_up(
    seeded: Assistant,
) -> None:
    chat = seeded.conversation()
    chat.ask("what is GTO?", mode="extractive")
    topic = chat.ask("video frame interpolation", mode="extractive")
    assert not topic.follow_up and "GTO" not in (topic.query or "")
    again = chat.ask("video frame interpolation", mode="extractive")
    assert not again.follow_up  # asked again, it leans on nothing


def test_the_experiments_or_the_datasets_point_at_the_paper_in_focus() -> None:
    assert read("how many environments in the experiments").refers_back
    assert read("which optimizers do the experiments compare").refers_back
    assert read("how big were the datasets").refers_back
    assert not read("papers with experiments on imagenet").refers_back


def test_a_question_setting_its_own_scope_asks_of_the_collection() -> None:
    def scope(q: str) -> float:
        return followup.features(read(q), "", "", lambda q, t: 0.0, lambda q, t: 0.0)["own_scope"]

    assert scope("how many ICLR 2026 papers study speculative decoding?") == 1.0
    assert scope("which papers use DPO?") == 1.0
    assert scope("which of these papers use DPO?") == 0.0  # points back
    assert scope("how many environments in the experiments") == 0.0  # a detail of one paper
    assert followup.load_model().weights["own_scope"] < 0


def test_a_count_over_the_venue_after_a_comparison_stands_alone(seeded: Assistant) -> None:
    chat = seeded.conversation()
    chat.ask("compare GTO and the n-draft speculative sampling paper", mode="extractive")
    count = chat.ask("how many ICLR 2026 papers study speculative decoding?", mode="extractive")
    assert not count.follow_up and "GTO" not in (count.query or "")
    assert count.answer.startswith("**2 papers**")


def test_a_list_over_the_collection_after_one_of_its_papers_stands_alone(
    seeded: Assistant,
) -> None:
    """GTO holds every word of the second question, which still asks for every paper on
    speculative decoding, not for GTO's details."""
    chat = seeded.conversation()
    chat.ask("what is gto", mode="extractive")
    listed = chat.ask("which iclr 2026 papers do speculative decoding", mode="extractive")
    assert not listed.follow_up and "gto" not in (listed.query or "").casefold()
    assert len([s for s in listed.sources if s.cited]) == 2  # GTO and n-draft sampling
    detail = chat.ask("which of them uses a draft tree?", mode="extractive")
    assert detail.follow_up  # pointing back, it still leans on the list


def test_which_one_is_fastest_after_a_list_quotes_its_result(seeded: Assistant) -> None:
    """A word ranking the listed papers by their results asks for those results: GTO's
    speedup figure, not the sentence on the misalignment that limits speedups."""
    assert read("which one is fastest").wants == "finding"
    assert read("best way to encode 3d rotations").wants is None  # words of its own
    chat = seeded.conversation()
    chat.ask("which iclr 2026 papers do speculative decoding", mode="extractive")
    fastest = chat.ask("which one is fastest", mode="extractive")
    assert fastest.follow_up and not fastest.abstained
    first = fastest.answer.split(". ")[0]
    assert "7.7" in first and "misalignment" not in first


def test_a_detail_found_nowhere_alone_is_asked_of_the_paper_before(seeded: Assistant) -> None:
    chat = seeded.conversation()
    chat.ask("which paper speeds up dynamic programming with gpu kernels", mode="extractive")
    faster = chat.ask("how much faster than the cpu version", mode="extractive")
    assert faster.follow_up and not faster.abstained
    assert "orders of magnitude" in faster.answer  # '... speedups over multithreaded CPU'
    assert faster.notices[0].code == "read_as_follow_up"
    # a figure none of whose words the paper holds, and a new topic, stay refused
    qubits = chat.ask("how many qubits does it need", mode="extractive")
    assert qubits.abstained
    topic = chat.ask("medical imaging segmentation", mode="extractive")
    assert topic.abstained and not topic.follow_up


def test_a_choice_with_no_question_word_is_asked_of_the_paper_before(seeded: Assistant) -> None:
    """'real recordings or just simulations?' asks neither a figure nor a name; alone it
    finds nothing (refused), the neural-coding paper before holds its words."""
    chat = seeded.conversation()
    chat.ask("likelihood vs posterior neural code experiment design", mode="extractive")
    choice = chat.ask("real recordings or just simulations?", mode="extractive")
    assert choice.follow_up and not choice.abstained
    assert "simulations" in choice.answer and choice.notices[0].code == "read_as_follow_up"


def test_a_detail_asked_with_no_topic_of_its_own_leans_on_the_answer_before(
    seeded: Assistant,
) -> None:
    """GTO's abstract lists MT-Bench, HumanEval and GSM8K without the word 'benchmarks',
    so the model alone read 'which benchmarks' as a new question (P 0.01)."""

    def topicless(q: str) -> float:
        features = followup.features(read(q), "", "", lambda q, t: 0.0, lambda q, t: 0.0)
        return features["topicless"]

    assert topicless("which benchmarks") == topicless("datasets?") == 1.0
    assert topicless("how many parameters") == topicless("what baselines") == 1.0
    assert topicless("how many extra parameters") == topicless("limitations?") == 1.0
    assert topicless("dataset distillation") == topicless("which methods") == 0.0
    assert topicless("what's the main finding") == topicless("their key idea?") == 1.0
    # a word as the plain glossary spells it out: 'envs' is 'environment', 'params' 'parameters'
    assert topicless("how many envs") == topicless("how many params") == 1.0
    assert topicless("how many envs of the ocean") == 0.0  # 'ocean' names a topic
    chat = seeded.conversation()
    chat.ask("training the draft model to match tree based verification", mode="extractive")
    benchmarks = chat.ask("which benchmarks", mode="extractive")
    assert benchmarks.follow_up and "MT-Bench" in benchmarks.answer
    listed = chat.ask("which methods", mode="extractive")  # asks of the collection
    assert not listed.follow_up


def _row(qid: str, follow_up: bool, refers: float, same: bool = False) -> dict[str, object]:
    features = dict.fromkeys(followup.FEATURES, 0.0) | {"refers": refers}
    return {"id": qid, "follow_up": follow_up, "features": features, "same_paper": same}


def test_the_fit_learns_from_informative_rows_and_reports_cross_validation() -> None:
    rng = np.random.default_rng(0)
    rows = [_row(f"p{i}", True, 1.0) for i in range(12)]
    rows += [_row(f"n{i}", False, float(rng.random() < 0.1)) for i in range(60)]
    rows += [_row(f"s{i}", False, 1.0, same=True) for i in range(30)]  # neutral: left out
    model = followupfit.fit(rows)
    assert model.about["rows"] == 102 and model.about["fitted_rows"] == 72
    assert model.about["cross_validated"]["recall"] == 1.0
    assert followup.follows_up(_row("x", False, 1.0)["features"], model)  # type: ignore[arg-type]
    assert not followup.follows_up(_row("y", False, 0.0)["features"], model)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="follow-ups"):
        followupfit.fit([_row("a", False, 0.0)])


def test_which_paper_asks_for_one_and_which_papers_for_several() -> None:
    assert read("which paper speeds up dynamic programming on GPUs?").asks_for_one
    assert not read("which papers speed up dynamic programming on GPUs?").asks_for_one
    assert not read("what is GTO").asks_for_one  # not a question for papers at all


def test_a_pointing_word_decides_alone_only_in_a_short_question_naming_nothing_new() -> None:
    three = dict.fromkeys(followup.FEATURES, 0.0) | {"refers": 1.0, "short": 0.7}
    assert followup.points_back(three)  # 'how many tasks did they test on?'
    assert not followup.points_back(three | {"short": 0.6})  # four content words
    assert not followup.points_back(three | {"new_terms": 1.0})  # 'authors of NeuCLIP'
    assert not followup.points_back(three | {"refers": 0.0})


def test_a_longer_question_with_its_own_them_starts_a_new_topic(fake_seeded: Assistant) -> None:
    chat = fake_seeded.conversation()
    chat.ask("how many iclr 2026 papers are about dpo")
    read_q = fake_seeded.read("cheap way to tune hparams on a small model and reuse them")
    assert read_q.refers_back  # 'them' is a pointing word ...
    assert not chat.leans_back(read_q)  # ... of its own subject here
    assert chat.leans_back(fake_seeded.read("how does it work?"))


def test_how_many_is_no_content_word_so_a_short_pointing_question_leans_back(
    seeded: Assistant,
) -> None:
    """'how many extra params does it add' after 'bora': 'many' counted as a fourth content
    word, so the pointing word did not decide and the question was searched alone."""
    assert "mani" not in content_words("how many extra params does it add")
    chat = seeded.conversation()
    chat.ask("bora", mode="extractive")
    params = chat.ask("how many extra params does it add", mode="extractive")
    assert params.follow_up and "b^2r" in params.answer


def test_a_follow_ups_answer_adds_to_the_sentences_shown_before(seeded: Assistant) -> None:
    """The answer before quoted the paper's lead sentence; the follow-up's second sentence
    is one it has not shown (the contribution again said nothing new)."""
    chat = seeded.conversation()
    first = chat.ask("high dimensional theory for imbalanced classification", mode="extractive")
    shown = {h for s in first.sources if s.cited for h in s.highlights}
    assert shown
    minority = chat.ask("what helps the minority class", mode="extractive")
    assert minority.follow_up and not minority.abstained
    quoted = [h for s in minority.sources if s.cited for h in s.highlights]
    assert len(quoted) == 2 and not shown & set(quoted)


def test_how_it_works_and_what_it_found_quote_the_sentences_that_say_so(
    seeded: Assistant,
) -> None:
    """'how does it work' quotes the sentence saying how (NeuCLIP's reformulation through a
    log-normalizer), not the problem it sets out nor its experiments; 'what's the
    explanation', with no pronoun and no topic of its own, asks the paper in focus what it
    found (entropic barriers), not the collection."""
    chat = seeded.conversation()
    chat.ask("clip training with small batches, estimating the normalizer", mode="extractive")
    how = chat.ask("how does it work", mode="extractive")
    assert how.follow_up and "log-normalizer" in how.answer
    assert "Extensive experiments" not in how.answer
    chat = seeded.conversation()
    chat.ask("why sgd stays in one basin even though basins are connected", mode="extractive")
    why = chat.ask("what's the explanation", mode="extractive")
    assert why.follow_up and "entropic barriers" in why.answer
    # 'what's the catch' asks what it costs, which an abstract states with what it found
    chat = seeded.conversation()
    chat.ask("recommendation diversity filter bubbles", mode="extractive")
    catch = chat.ask("what's the catch", mode="extractive")
    assert catch.follow_up and "negligible accuracy loss" in catch.answer


def test_a_bare_kind_asks_the_paper_in_focus_for_a_thing_of_that_kind(
    seeded: Assistant,
) -> None:
    """'which instruments?' after SCRAPL: nothing but 'which' and a kind, so it asks the
    paper in focus, and the answer names one (the Roland TR-808), not a refusal; 'why does
    it work' after the SAM calibration paper quotes what explains it (the entropy)."""
    chat = seeded.conversation()
    chat.ask("scrapl audio loss", mode="extractive")
    which = chat.ask("which instruments?", mode="extractive")
    assert which.follow_up and not which.abstained and "TR-808" in which.answer
    chat = seeded.conversation()
    chat.ask("does sam help calibration", mode="extractive")
    why = chat.ask("why does it work", mode="extractive")
    assert why.follow_up and "entropy" in why.answer
    # a name alone is answered by what the paper proposes, and "what's the trick", with
    # no word of its own, asks that paper how it works
    chat = seeded.conversation()
    named = chat.ask("neuclip", mode="extractive")
    assert "we propose NeuCLIP" in named.answer
    trick = chat.ask("what's the trick", mode="extractive")
    assert trick.follow_up and "log-normalizer" in trick.answer


@pytest.mark.parametrize(
    ("question", "rest"),
    [
        ("summarize them", "them"),
        ("tl;dr please", ""),
        ("tell me more about the second one", "second one"),
        ("can you give me a short overview of the rlhf papers?", "rlhf papers"),
        ("rlhf papers summary", "rlhf papers"),
        ("llms that summarize documents", None),  # papers on summarizing
        ("which papers summarize legal documents", None),
        ("papers on text summarization", None),
    ],
)
def test_a_request_for_the_gist_is_read_apart_from_what_it_is_about(
    question: str, rest: str | None
) -> None:
    assert overview_rest(question) == rest
    assert (read(question).wants == "overview") == (rest is not None)


def test_summarize_them_quotes_what_each_paper_shown_does_and_finds(seeded: Assistant) -> None:
    """'summarize them', 'tl;dr', 'tell me more about the second one': the gist of the
    papers the answer before cited (their contribution, then a finding), searched for
    nothing new, where searching 'summarize them' with the previous query was refused."""
    chat = seeded.conversation()
    listed = chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    cited = [s.paper_id for s in listed.sources if s.cited]
    assert len(cited) > 1
    summary = chat.ask("summarize them", mode="extractive")
    assert summary.follow_up and not summary.abstained
    assert [s.paper_id for s in summary.sources if s.cited] == cited
    assert summary.answer.count("- ") >= len(cited)  # one line per paper
    assert "we propose" in summary.answer.casefold()  # a contribution, not background
    second = chat.ask("tell me more about the second one", mode="extractive")
    assert [s.paper_id for s in second.sources if s.cited] == [cited[1]]
    chat.ask("gn-ivo", mode="extractive")
    short = chat.ask("tl;dr", mode="extractive")
    assert short.follow_up and not short.abstained
    assert "GN-IVO" in short.answer and "outperforms" in short.answer  # what it found
    assert [len(s.highlights) for s in short.sources if s.cited] == [2]


def test_an_overview_of_a_topic_searches_the_topic_not_the_request(seeded: Assistant) -> None:
    answer = seeded.ask("give me an overview of the rlhf papers", mode="extractive")
    assert not answer.abstained and answer.intent == "papers"
    assert "overview" not in answer.query
    fresh = seeded.conversation().ask("tl;dr", mode="extractive")  # nothing shown yet
    assert fresh.abstained and not fresh.follow_up


def test_compare_them_tables_the_papers_shown(seeded: Assistant) -> None:
    """'compare them' after a list is a table of the listed papers, 'compare the two' of
    its first two; before, 'compare them' listed five papers of the search, three of them
    unrelated, and 'compare the two' compared three papers about 'two'."""
    chat = seeded.conversation()
    listed = chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    cited = [s.paper_id for s in listed.sources if s.cited]
    table = chat.ask("compare them", mode="extractive")
    assert table.follow_up and table.table is not None
    assert [s.paper_id for s in table.sources] == cited
    two = chat.ask("compare the first two", mode="extractive")
    assert [s.paper_id for s in two.sources] == cited[:2] and two.table is not None
    own = chat.ask("compare spo and gvpo", mode="extractive")  # sides of its own
    assert {s.title.split(":")[0] for s in own.sources} == {"SPO", "GVPO"}


def test_a_bare_request_for_code_asks_the_paper_in_focus(seeded: Assistant) -> None:
    chat = seeded.conversation()
    chat.ask("gn-ivo", mode="extractive")
    code = chat.ask("is the code released", mode="extractive")
    assert code.follow_up and code.abstained  # GN-IVO's abstract links none
    assert [s.title.split(":")[0] for s in code.sources] == ["GN-IVO"]
    chat.ask("bora", mode="extractive")
    link = chat.ask("github?", mode="extractive")
    assert link.follow_up and not link.abstained and "4open.science/r/BoRA" in link.answer


def test_which_conference_or_is_it_an_oral_is_read_from_the_record(seeded: Assistant) -> None:
    """The abstract says nothing of where a paper appeared; its record does. Before, 'which
    conference is it from' quoted GN-IVO's contribution again and 'is it an oral?' was
    searched as a new question."""
    chat = seeded.conversation()
    chat.ask("gn-ivo", mode="extractive")
    venue = chat.ask("which conference is it from", mode="extractive")
    assert venue.follow_up and venue.answer.endswith("ICLR 2026")
    assert [n.code for n in venue.notices] == ["about_shown", "from_record"]
    oral = chat.ask("is it an oral?", mode="extractive")
    assert "status not recorded" in oral.answer  # the seeds' lists give no status
    listed = chat.ask("which iclr 2026 papers build on dpo", mode="extractive")
    years = chat.ask("what year were they published", mode="extractive")
    cited = [s.paper_id for s in listed.sources if s.cited]
    assert [s.paper_id for s in years.sources] == cited
    assert years.answer.count("ICLR 2026") == len(cited)
    # a question with words of its own is searched, as before
    own = chat.ask("which iclr 2026 papers are orals", mode="extractive")
    assert not own.follow_up and "about_shown" not in [n.code for n in own.notices]

"""The answerer and conversations against the test doubles (no model, no HTTP): what the
LLM path does with a reply, and how follow-ups reach the model."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from rag import prompts
from rag.assistant import Assistant
from rag.config import Settings
from rag.llm import LLMError

from .conftest import make_settings
from .fakes import HashEmbedder, ScriptedChat

# `hashed_index`: the hash-embedded seeds of tests/conftest.py


@pytest.fixture
def scripted(hashed_index: Path) -> Callable[..., tuple[Assistant, ScriptedChat]]:
    def build(*replies: object, **overrides: object) -> tuple[Assistant, ScriptedChat]:
        chat = ScriptedChat(list(replies))  # type: ignore[arg-type]
        settings: Settings = make_settings(hashed_index, **overrides)
        return Assistant(settings, HashEmbedder(), chat=chat), chat

    return build


def test_a_hash_embedded_index_answers_by_its_words(scripted: Callable[..., tuple]) -> None:
    assistant, _ = scripted()
    answer = assistant.ask("what is AltGDA?", mode="extractive")
    assert not answer.abstained and "AltGDA" in answer.answer


def test_the_model_sees_numbered_sources_and_bad_citations_are_removed(
    scripted: Callable[..., tuple],
) -> None:
    def improved(messages: list[dict[str, str]]) -> str:
        """A model that keeps the quoted draft it was offered, and cites [9] as well."""
        draft = re.search(r"<draft>\n(.*?)\n</draft>", messages[-1]["content"], re.S)
        assert draft, "the offline answer is offered as a draft"
        return f"AltGDA alternates the players' updates [1][9]. {draft.group(1)}"

    assistant, chat = scripted(improved, llm_min_new_words=0.0)  # it adds one short sentence
    tokens: list[str] = []
    answer = assistant.ask("what is AltGDA?", mode="llm", on_token=tokens.append)
    assert answer.mode == "llm" and answer.citations == [1]
    assert "[9]" not in answer.answer and "".join(tokens).startswith("AltGDA alternates")
    assert [n.code for n in answer.notices] == ["citations_removed"]
    user = chat.calls[0][1]["content"]
    assert '<source n="1"' in user and "Question: what is AltGDA?" in user


def test_a_reply_that_only_cuts_the_quoted_answer_down_gives_way_to_it(
    scripted: Callable[..., tuple],
) -> None:
    """What SmolLM2 does most: it returns the draft it was offered with clauses dropped."""

    def trimmed(messages: list[dict[str, str]]) -> str:
        draft = re.search(r"<draft>\n(.*?)\n</draft>", messages[-1]["content"], re.S)
        assert draft
        first = re.split(r"(?<=\[\d\])\s+", draft.group(1))[0]
        words = first.split()
        return " ".join(words[: len(words) // 2] + words[-1:])  # half of it, still cited

    assistant, _ = scripted(trimmed)
    answer = assistant.ask("what is AltGDA?", mode="llm")
    offline = assistant.ask("what is AltGDA?", mode="extractive")
    assert answer.mode == "extractive" and answer.answer == offline.answer
    assert answer.generation is not None and not answer.generation["kept"]
    assert answer.generation["new_words"] < 0.2
    assert any("only repeats parts of the quoted answer" in r for r in answer.generation["reasons"])
    assert answer.draft and answer.draft != answer.answer


def test_a_model_that_says_not_found_does_not_overrule_the_offline_answer(
    scripted: Callable[..., tuple],
) -> None:
    """The abstention decision is the question stage's: the offline answer is shown."""
    assistant, _ = scripted("The answer is not found in the indexed abstracts.")
    answer = assistant.ask("what is AltGDA?", mode="llm")
    offline = assistant.ask("what is AltGDA?", mode="extractive")
    assert not answer.abstained and answer.mode == "extractive"
    assert answer.answer == offline.answer and answer.citations == offline.citations
    assert "llm_rejected" in [n.code for n in answer.notices]
    assert answer.draft == "The answer is not found in the indexed abstracts."


def test_a_failing_model_falls_back_to_the_extractive_answer(
    scripted: Callable[..., tuple],
) -> None:
    assistant, _ = scripted(LLMError("endpoint answered 503"))
    answer = assistant.ask("what is AltGDA?", mode="llm")
    assert answer.mode == "extractive" and not answer.abstained
    assert [n.code for n in answer.notices] == ["llm_failed"]


def test_a_follow_up_is_condensed_by_the_model_then_answered(
    scripted: Callable[..., tuple],
) -> None:
    assistant, chat = scripted(
        "AltGDA is alternating gradient descent-ascent [1].",
        "AltGDA convergence rate",  # the condensed follow-up
        "It converges at an O(1/T) rate [1].",
    )
    conversation = assistant.conversation()
    conversation.ask("what is AltGDA?", mode="llm")
    second = conversation.ask("how fast does it converge?", mode="llm")
    assert second.follow_up and second.query == "AltGDA convergence rate"
    condense = chat.calls[1]
    assert "User: what is AltGDA?" in condense[1]["content"]
    assert "Follow-up: how fast does it converge?" in condense[1]["content"]


def test_a_new_question_is_not_sent_to_be_condensed(scripted: Callable[..., tuple]) -> None:
    assistant, chat = scripted("GTO aligns training with decoding [1].", "DCT [1].")
    conversation = assistant.conversation()
    conversation.ask("what is GTO?", mode="llm")
    second = conversation.ask("dct llm compression", mode="llm")
    assert not second.follow_up
    systems = [call[0]["content"] for call in chat.calls]
    assert prompts.CONDENSE_SYSTEM not in systems  # answers only, no condensing


def test_a_question_sent_during_an_answer_waits_for_it_and_sees_its_turn(
    scripted: Callable[..., tuple],
) -> None:
    import threading

    started, release = threading.Event(), threading.Event()

    def slow(messages: list[dict[str, str]]) -> str:
        started.set()
        release.wait(5)
        return "AltGDA alternates the players' updates [1]."

    assistant, _ = scripted(slow, "AltGDA convergence rate", "O(1/T) [1].")
    conversation = assistant.conversation()
    first = threading.Thread(
        target=conversation.ask, args=("what is AltGDA?",), kwargs={"mode": "llm"}
    )
    first.start()
    started.wait(5)
    answers: list[object] = []
    second = threading.Thread(
        target=lambda: answers.append(conversation.ask("how fast does it converge?", mode="llm"))
    )
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert len(conversation.turns) == 2 and answers[0].follow_up  # type: ignore[attr-defined]


def test_a_condensed_follow_up_that_finds_nothing_gives_way_to_the_offline_rewrite(
    scripted: Callable[..., tuple],
) -> None:
    """A small model's rewrite of 'how does it work?' can lose the subject; when it finds
    no answer, the previous query with the follow-up's words is searched instead."""
    assistant, _ = scripted(
        "AltGDA is alternating gradient descent-ascent [1].",
        "converge sourdough bread baking recipes",  # keeps its word, loses its subject
        "The model's answer to the follow-up [1].",
    )
    conversation = assistant.conversation()
    conversation.ask("what is AltGDA?", mode="llm")
    second = conversation.ask("how does it converge?", mode="llm")

    assert second.follow_up and not second.abstained
    assert second.query == "what is AltGDA? how does it converge?"
    (rejected,) = [n for n in second.notices if n.code == "condense_rejected"]
    assert "sourdough" in rejected
    assert any("AltGDA" in s.title or "AltGDA" in s.text for s in second.sources if s.cited)


@pytest.mark.parametrize(
    "rewrite",
    [
        "banana plantation harvest schedules",  # none of the follow-up's words
        "We study the AltGDA algorithm in two-player zero-sum games.",  # an abstract's
        "<draft>",  # markup from the prompt
    ],
)
def test_a_rewrite_that_drops_the_follow_ups_words_is_not_searched(
    scripted: Callable[..., tuple], rewrite: str
) -> None:
    assistant, chat = scripted(
        "AltGDA is alternating gradient descent-ascent [1].", rewrite, "It converges [1]."
    )
    conversation = assistant.conversation()
    conversation.ask("what is AltGDA?", mode="llm")
    second = conversation.ask("how fast does it converge?", mode="llm")

    assert chat.calls[1][0]["content"] == prompts.CONDENSE_SYSTEM  # the rewrite asked for
    assert second.query == "what is AltGDA? how fast does it converge?"
    (failed,) = [n for n in second.notices if n.code == "condense_failed"]
    assert "drops the follow-up's words" in failed and rewrite[:20] in failed


def test_a_rewrite_that_copies_a_cited_sentence_of_the_answer_is_not_searched(
    scripted: Callable[..., tuple],
) -> None:
    """A small model asked to rewrite 'how fast does it converge?' can return a sentence
    of its previous answer, markers and all: it keeps the follow-up's words, yet searching
    it finds that sentence again rather than the detail asked."""
    assistant, _chat = scripted(
        "AltGDA is alternating gradient descent-ascent [1].",
        "AltGDA converges fast in two-player zero-sum games [1].",
        "It converges [1].",
    )
    conversation = assistant.conversation()
    conversation.ask("what is AltGDA?", mode="llm")
    second = conversation.ask("how fast does it converge?", mode="llm")

    assert second.query == "what is AltGDA? how fast does it converge?"
    (failed,) = [n for n in second.notices if n.code == "condense_failed"]
    assert "copies the previous answer" in failed


def test_the_quoted_answer_returned_unchanged_is_kept_and_a_cut_of_it_is_not() -> None:
    from rag.answering.citations import check, judge

    source = (
        "We present GN-IVO, a novel, critic-free algorithm for aligning LLMs. "
        "It outperforms strong RL baselines on reasoning tasks."
    )
    draft = source.replace(". ", ". [1] ") + " [1]"  # as the extractive answer cites
    bounds = {"max_unsupported": 0.34, "draft": draft, "min_new_words": 0.2}
    same = judge(check(f"  {draft}\n", {1: source}), {1: source}, **bounds)  # type: ignore[arg-type]
    assert same.kept and same.new_words == 0.0
    cut = judge(
        check("We present GN-IVO for aligning LLMs. [1]", {1: source}), {1: source}, **bounds
    )  # type: ignore[arg-type]
    assert not cut.kept and any("only repeats parts" in r for r in cut.reasons)


def test_a_power_of_ten_is_a_figure_and_a_dimension_is_not() -> None:
    """'how many scenarios can it handle in one pass?' of the GPU dynamic-programming
    paper: the sentence with '$10^6$ uncertainty realizations' answers it, not the one
    with '2D' and '3D' parallelism, which only look like figures."""
    from rag.answering.extractive import evidence
    from rag.question.reading import read

    query = read("how many scenarios can it handle in one pass?")
    assert query.wants == "number"
    power = "In a single GPU pass, these kernels can process over $10^6$ uncertainty realizations."
    dimension = (
        "exploiting **2D** parallelism (scenarios $\\times$ transitions) and **3D** parallelism"
    )
    assert evidence(query, power) == 1
    assert evidence(query, dimension) == 0
    assert evidence(query, "the kernels run on $n^2$ states") == 0  # a symbol's power


def test_informal_filler_is_no_content_word() -> None:
    """'stuff' is in no abstract: as a content word it read as an uncovered topic, and the
    question was refused although its paper ranks first."""
    from rag.text import content_words

    assert content_words("making llms forget copyrighted stuff") == {"llm", "forget", "copyright"}
    assert content_words("a way to get lots of things done") == frozenset()


def test_a_sentence_that_asks_sets_the_question_and_the_answer_goes_on(seeded: Assistant) -> None:
    """'Can we derandomize O2NC to achieve the same guarantees ...?' names what the paper
    asks; the answer goes on to the sentence saying what it shows ('weakly convex')."""
    from rag.answering.extractive import states_contribution

    asks = "Can we derandomize O2NC to achieve the same optimal guarantees while resembling SGDM?"
    assert not states_contribution(asks)
    assert states_contribution(asks.replace("Can we", "We").rstrip("?") + ".")
    answer = seeded.ask("derandomized o2nc that looks like sgd with momentum", mode="extractive")
    assert "weakly convex" in answer.answer

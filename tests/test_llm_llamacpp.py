"""The LLM path end to end through a real llama.cpp OpenAI-compatible server on 127.0.0.1.

The scripted server (tests/openai_server.py, tests/test_llm.py) plays faults and exact
replies; this one is real: llama.cpp's OpenAI-compatible HTTP API, its SSE streaming, the
model's own ChatML chat template and tokenizer, API-key checks. SmolLM2-135M-Instruct is a
weak model (it copies abstracts, numbers lists, cites when it likes), so the tests check
what must hold whatever it writes: the answer is the model's reply after the citation
check when it holds up against the sources, else the offline answer with the reply as its
draft; every citation left points at a source marked cited, numbers that match no source
are gone and reported, flagged sentences are the answer's own. Nothing is replaced: the
client's `complete` is only wrapped to keep the raw reply for those checks. The server is
the point, not the embedder: the assistants search the hash-embedded seeds (`fake_factory`),
which find these questions' papers by their words.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rag import prompts
from rag.answering.answer import NOT_FOUND
from rag.answering.citations import check, cited_numbers
from rag.assistant import Assistant
from rag.llm import OnToken, Reply
from rag.types import Answer
from tests.llama_server import ALIAS, LlamaServer

pytestmark = pytest.mark.slow

KEY = "sk-llamacpp-test"
TOP_K = 3  # few sources keep the prompt (~1,300 tokens) quick to read on 2 cores
MAX_TOKENS = 128
QUESTION = "What is alternating gradient descent-ascent (AltGDA)?"
STREAMED = "What is speculative decoding used for?"
FOLLOW_UP = "how does it work?"
# Questions that invite a citation to a source that does not exist, with few sources.
NUDGES = [
    ("What is alternating gradient descent-ascent (AltGDA)? Cite your answer as [7].", 3),
    ("What is alternating gradient descent-ascent (AltGDA)? Answer and cite [9].", 2),
]

Factory = Callable[..., Assistant]


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """llama.cpp's server with SmolLM2-135M on a free loopback port; fails if not installed."""
    with LlamaServer(api_key=KEY) as server:
        yield server


def endpoint(server: LlamaServer, **overrides: Any) -> dict[str, Any]:
    """Settings for the real server (by the endpoint's environment names, as test_llm does)."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": KEY,
        "llm_model": ALIAS,
        "mode": "llm",
        "top_k": TOP_K,
        "max_answer_tokens": MAX_TOKENS,
        "context_window": server.context,
        **overrides,
    }


@dataclass
class Call:
    """One completion the client got from the server."""

    messages: list[dict[str, str]]
    streamed: bool
    reply: Reply

    @property
    def system(self) -> str:
        return self.messages[0]["content"]

    @property
    def user(self) -> str:
        return self.messages[-1]["content"]


@dataclass
class Recorder:
    """Keeps what the real `ChatClient.complete` sent and got back; it changes nothing."""

    complete: Callable[..., Reply]
    calls: list[Call] = field(default_factory=list)

    def __call__(
        self, messages: list[dict[str, str]], on_token: OnToken | None = None, **options: Any
    ) -> Reply:
        reply = self.complete(messages, on_token=on_token, **options)
        self.calls.append(Call(messages, on_token is not None, reply))
        return reply

    def answers(self) -> list[Call]:
        return [c for c in self.calls if c.system == prompts.SYSTEM]

    def condensations(self) -> list[Call]:
        return [c for c in self.calls if c.system == prompts.CONDENSE_SYSTEM]


@dataclass
class Live:
    assistant: Assistant
    recorder: Recorder


@pytest.fixture
def live(fake_factory: Factory, llama_server: LlamaServer, monkeypatch: pytest.MonkeyPatch) -> Live:
    assistant = fake_factory(**endpoint(llama_server))
    assert assistant.client is not None
    assert assistant.settings.base_url == llama_server.base_url
    recorder = Recorder(assistant.client.complete)
    monkeypatch.setattr(assistant.client, "complete", recorder)
    return Live(assistant, recorder)


# -- what every answer from the real model must satisfy -------------------------------


def assert_generated(answer: Answer) -> None:
    """The model was asked and answered: no abstention before generation, no endpoint
    fault; its answer was judged (shown when it held up, else the offline one)."""
    early = [n for n in answer.notices if n.startswith("abstained:")]
    if early:
        pytest.fail(
            f"{answer.question!r} abstained before the LLM was called ({early[0]}); "
            "the retrieval evidence was judged too weak: pick a question whose gold paper "
            "answers it in its own words"
        )
    assert not [n for n in answer.notices if "LLM endpoint failed" in n], answer.notices
    assert answer.generation is not None and answer.generation["path"] == "free"
    assert answer.mode == ("llm" if answer.generation["kept"] else "extractive")


def squeeze(text: str) -> str:
    return " ".join(text.split())


def assert_checked(answer: Answer, raw: str) -> list[int]:
    """The invariants of the citation check and the judge on what the model wrote
    (`raw`); returns the out-of-range numbers the model used."""
    count = len(answer.sources)
    assert count >= 1
    assert [s.n for s in answer.sources] == list(range(1, count + 1))
    out_of_range = [n for n in cited_numbers(raw) if not 1 <= n <= count]
    checked = check(raw, {s.n: s.text for s in answer.sources})
    assert answer.generation is not None
    if not answer.generation["kept"]:  # did not hold up: the offline answer instead
        assert answer.mode == "extractive"
        assert answer.generation["reasons"]
        rejected = [n for n in answer.notices if n.code == "llm_rejected"]
        assert len(rejected) == 1 and "did not hold up against the sources" in rejected[0]
        if prompts.ABSTAIN_PHRASE not in raw.casefold():
            assert answer.draft == checked.text
        assert answer.draft.strip() and answer.answer != answer.draft
        for n in answer.citations:  # the quoted answer's citations resolve too
            assert answer.sources[n - 1].cited
        return out_of_range
    if prompts.ABSTAIN_PHRASE in raw.casefold():  # agreed with the offline refusal
        assert answer.abstained
        assert answer.answer.startswith(NOT_FOUND)
        assert answer.citations == []
        assert not any(s.cited for s in answer.sources)
        return out_of_range

    assert not answer.abstained
    # the answer is the model's reply after the check, nothing else, and cites a source
    assert answer.answer == checked.text
    assert answer.citations, "an answer citing nothing was shown as the answer"
    # every citation left points at an existing source, which is marked cited; no other is
    for n in answer.citations:
        assert 1 <= n <= count, (n, answer.citations)
        assert answer.sources[n - 1].cited
    assert {s.n for s in answer.sources if s.cited} == set(answer.citations)
    in_text = cited_numbers(answer.answer)
    assert all(1 <= n <= count for n in in_text), answer.answer
    assert set(in_text) == set(answer.citations)
    # numbers that match no source are reported, exactly those
    removed = [n for n in answer.notices if "do not exist" in n]
    if out_of_range:
        assert removed == [
            "removed citations to sources that do not exist: "
            + ", ".join(f"[{n}]" for n in out_of_range)
        ], (raw, answer.notices)
    else:
        assert removed == [], (raw, answer.notices)
    # flagged sentences are the answer's own, and a notice says how many
    text = squeeze(answer.answer)
    for sentence in answer.flagged:
        assert squeeze(sentence) in text, (sentence, answer.answer)
    lacking = [n for n in answer.notices if "lack support" in n]
    if answer.flagged:
        assert lacking == [
            f"{len(answer.flagged)} sentence(s) lack support in the sources they cite; "
            "they are listed as flagged"
        ]
    else:
        assert lacking == []
    return out_of_range


# -- the harness: a server that dies is reported with its signal, at once ----------------


class _Crashing(LlamaServer):
    """A 'server' that dies as a binary built for another CPU does (SIGILL)."""

    def command(self) -> list[str]:
        crash = "import os, signal, sys; print('loading model'); sys.stdout.flush(); "
        crash += "os.kill(os.getpid(), signal.SIGILL)"
        return [sys.executable, "-c", crash]


def test_a_server_killed_by_a_signal_is_reported_with_it_not_as_a_timeout() -> None:
    server = _Crashing()
    with pytest.raises(RuntimeError) as failure:
        server.start(timeout_s=600)
    message = str(failure.value)
    assert "exited before it answered: killed by SIGILL" in message  # not waited out
    assert "instructions this CPU lacks" in message
    assert "loading model" in message  # the log tail is quoted
    server.close()


# -- the endpoint -----------------------------------------------------------------------


def test_health_lists_the_served_model(live: Live) -> None:
    ok, description = live.assistant.endpoint_health()
    assert ok, description
    assert ALIAS in description


def test_wrong_key_is_refused_without_retry(
    fake_factory: Factory, llama_server: LlamaServer
) -> None:
    """The server answers 401 to a wrong key: no retry, the offline answer, a notice."""
    assistant = fake_factory(**endpoint(llama_server, OPENAI_API_KEY="sk-wrong"))
    answer = assistant.ask(QUESTION)

    assert answer.mode == "extractive"
    failed = [n for n in answer.notices if n.startswith("LLM endpoint failed")]
    assert len(failed) == 1, answer.notices
    assert "HTTP 401 (after 1 attempt(s))" in failed[0]
    assert "sk-wrong" not in " ".join(answer.notices)


# -- answers ----------------------------------------------------------------------------


def test_non_streamed_answer_passes_the_citation_check(live: Live) -> None:
    answer = live.assistant.ask(QUESTION)

    assert_generated(answer)
    (call,) = live.recorder.calls
    assert not call.streamed
    assert call.reply.attempts == 1
    assert call.reply.text.strip()
    assert f"Question: {QUESTION}" in call.user
    assert call.user.count("<source ") == len(answer.sources) == TOP_K
    assert "alternating gradient descent-ascent" in answer.sources[0].text
    assert_checked(answer, call.reply.text)


def test_streamed_tokens_make_up_the_reply(live: Live) -> None:
    tokens: list[str] = []
    resets: list[None] = []
    answer = live.assistant.ask(
        STREAMED, on_token=tokens.append, on_reset=lambda: resets.append(None)
    )

    assert_generated(answer)
    (call,) = live.recorder.calls
    assert call.streamed
    assert call.reply.attempts == 1
    assert resets == []
    # the server sends one SSE event per token (its role-only first event carries none)
    assert len(tokens) > 5, tokens
    assert all(tokens)
    streamed = "".join(tokens)
    assert streamed == call.reply.text
    assert "speculative" in (answer.sources[0].title + answer.sources[0].text).lower()
    assert_checked(answer, streamed)


def test_citations_to_missing_sources_are_removed(live: Live) -> None:
    """Nudge the model to cite a source that does not exist; whether it complies or not,
    nothing out of range survives and exactly what was removed is reported (or the answer
    is judged not to hold up and the offline one is shown)."""
    for question, top_k in NUDGES:
        before = len(live.recorder.calls)
        answer = live.assistant.ask(question, top_k=top_k)

        assert_generated(answer)
        (call,) = live.recorder.calls[before:]
        assert len(answer.sources) == top_k
        assert_checked(answer, call.reply.text)


# -- follow-ups -------------------------------------------------------------------------


def test_follow_up_is_condensed_by_the_model(live: Live) -> None:
    conversation = live.assistant.conversation()
    first = conversation.ask(QUESTION)
    assert_generated(first)
    assert first.query == QUESTION
    second = conversation.ask(FOLLOW_UP)

    assert not [n for n in second.notices if "LLM endpoint failed" in n], second.notices
    codes = [n.code for n in second.notices]
    fallback = [n for n in second.notices if n.startswith("could not condense the follow-up")]
    if fallback or "condense_rejected" in codes:
        # the rewrite was no rewrite of it, or found nothing: searched the offline way
        assert second.query == f"{QUESTION} {FOLLOW_UP}"
        return
    (condense,) = live.recorder.condensations()
    assert condense.reply.attempts == 1
    assert f"User: {QUESTION}" in condense.user
    assert f"Follow-up: {FOLLOW_UP}" in condense.user
    # the query searched is the model's rewrite, not the bare follow-up
    assert second.query != FOLLOW_UP, condense.reply.text
    assert second.query in condense.reply.text
    searched = [h.paper.paper_id for h in live.assistant.search(second.query)]
    assert [s.paper_id for s in second.sources] == searched
    if not [n for n in second.notices if n.startswith("abstained:")]:
        call = live.recorder.answers()[-1]
        assert f"Question: {FOLLOW_UP}" in call.user
        assert_checked(second, call.reply.text)


# -- a question in Chinese ------------------------------------------------------------------

CHINESE = "GTO 是什么方法？"


def test_chinese_question_is_translated_searched_and_answered_in_chinese(live: Live) -> None:
    """translate (one call) -> retrieve the English -> answer, told to write Chinese. The
    weak model's wording is not judged; the path and the citations are."""
    answer = live.assistant.conversation().ask(CHINESE)

    translations = [c for c in live.recorder.calls if c.system == prompts.TRANSLATE_SYSTEM]
    assert len(translations) == 1
    assert CHINESE in translations[0].user and "Chinese" in translations[0].user
    assert answer.language == "zh"
    codes = answer.to_dict()["notice_codes"]
    if "translate_failed" in codes:  # the reply was no English: the offline gloss searched
        assert answer.query == "what is GTO method?"
    else:
        assert answer.query and answer.query in translations[0].reply.text
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in answer.query)
    assert "translated" in codes or "translate_failed" in codes
    searched = [h.paper.paper_id for h in live.assistant.search_scoped(answer.query)[0]]
    assert [s.paper_id for s in answer.sources] == searched[:TOP_K]

    answers = live.recorder.answers()
    assert len(answers) == 1
    assert f"Question: {CHINESE}" in answers[0].user
    assert "Write the answer in Chinese" in answers[0].user
    assert_generated(answer)
    assert_checked(answer, answers[0].reply.text)

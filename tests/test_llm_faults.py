"""Endpoint faults, served for real on 127.0.0.1: every one ends in a cited answer.

Retryable faults (5xx, 429, broken streams) are retried a bounded number of times; 401 is
not; a hang or stall never holds a question past the deadline; and whatever fails, the
user gets the offline extractive answer, cited, with a notice that names the failure.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rag.assistant import Assistant
from rag.llm import ChatClient
from rag.types import Answer
from tests.openai_server import (
    Behaviour,
    OpenAIServer,
    cite_sources,
    close,
    empty,
    hang,
    malformed,
    reply,
    stall,
    status,
)

QUESTION = "Does alternating gradient descent-ascent converge faster than simultaneous GDA?"
FOLLOW_UP = "What rate does it get for games without an interior equilibrium?"
DEADLINE_S = 1.0  # short, so these tests wait little; a stall or hang lasts 8 s
RETRIES = 2
FAST = {"llm_retries": RETRIES, "llm_backoff_s": 0.05, "llm_deadline_s": 5.0}

Factory = Callable[..., Assistant]


def endpoint(url: str, **overrides: Any) -> dict[str, Any]:
    """Settings for an endpoint (by environment name: see test_llm.endpoint)."""
    return {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test-faults", **FAST, **overrides}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def ask(assistant: Assistant, streamed: bool) -> Answer:
    received: list[str] = []
    return assistant.ask(QUESTION, on_token=received.append if streamed else None)


def assert_fallback(answer: Answer, failure: str) -> None:
    """The extractive answer, cited, with a notice naming the failure."""
    assert answer.mode == "extractive"
    assert not answer.abstained
    assert answer.answer.strip()
    assert answer.citations
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    assert cited == set(answer.citations)
    assert all(answer.sources[n - 1].cited for n in cited)
    failed = [n for n in answer.notices if n.startswith("LLM endpoint failed:")]
    assert len(failed) == 1, answer.notices
    assert failure in failed[0]
    assert failed[0].endswith("showing the offline extractive answer instead")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])


# -- retried ------------------------------------------------------------------------------


@STREAMED
def test_500_then_success_is_retried(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.script(status(500))
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed)

    assert len(server.chat_requests) == 2
    assert answer.mode == "llm"
    assert answer.citations
    assert not any("failed" in n for n in answer.notices)


@STREAMED
def test_500_always_is_bounded_then_falls_back(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.default = status(500)
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed)

    assert len(server.chat_requests) == RETRIES + 1
    assert_fallback(answer, f"endpoint answered HTTP 500 (after {RETRIES + 1} attempt(s))")


@STREAMED
def test_429_waits_for_retry_after(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.script(status(429, retry_after=0.6))
    assistant = fake_factory(**endpoint(server.base_url))
    assert isinstance(assistant.client, ChatClient)
    waits: list[float] = []
    assistant.client.sleep = waits.append  # the client's wait is recorded, not slept
    answer = ask(assistant, streamed)

    assert len(server.chat_requests) == 2
    assert waits == [0.6]  # the server's Retry-After, not the 0.05 s backoff
    assert answer.mode == "llm"
    assert answer.citations


# -- not retried -------------------------------------------------------------------------


@STREAMED
def test_401_is_not_retried_and_falls_back(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.default = status(401, message="Incorrect API key provided")
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed)

    assert len(server.chat_requests) == 1
    assert_fallback(answer, "endpoint answered HTTP 401 (after 1 attempt(s))")


@STREAMED
def test_connection_refused_falls_back(fake_factory: Factory, streamed: bool) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    answer = ask(fake_factory(**endpoint(url)), streamed)

    assert time.monotonic() - started < 5.0
    assert_fallback(answer, f"cannot reach endpoint: ConnectError (after {RETRIES + 1} attempt")


# -- held past the deadline ---------------------------------------------------------------


def gave_up_at(assistant: Assistant) -> list[float]:
    """Record when the answerer turns to the extractive fallback (i.e. gave up on the LLM)."""
    times: list[float] = []
    extractive = assistant.answerer.extractive

    def timed(*args: Any, **kwargs: Any) -> Answer:
        times.append(time.monotonic())
        return extractive(*args, **kwargs)

    assistant.answerer.extractive = timed  # type: ignore[method-assign]
    return times


def assert_held_within_deadline(server: OpenAIServer, gave_up: list[float]) -> None:
    """From the request's arrival to giving up took at most the deadline + 1 s."""
    held = gave_up[0] - server.chat_requests[0].at
    assert held <= DEADLINE_S + 1.0, f"held {held:.2f} s"


@STREAMED
def test_hang_before_headers_ends_at_the_deadline(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.default = hang(8.0)
    assistant = fake_factory(**endpoint(server.base_url, llm_deadline_s=DEADLINE_S))
    gave_up = gave_up_at(assistant)
    answer = ask(assistant, streamed)

    assert_held_within_deadline(server, gave_up)
    assert_fallback(answer, "endpoint timed out")


@pytest.mark.parametrize(
    "stalling",
    [stall(8.0), stall(8.0, keepalive=0.3)],  # comments well inside the deadline
    ids=["silent", "keepalive-comments"],
)
def test_stall_mid_stream_ends_at_the_deadline(
    fake_factory: Factory, server: OpenAIServer, stalling: Behaviour
) -> None:
    server.default = stalling
    assistant = fake_factory(**endpoint(server.base_url, llm_deadline_s=DEADLINE_S))
    gave_up = gave_up_at(assistant)
    received: list[str] = []
    answer = assistant.ask(QUESTION, on_token=received.append)

    assert_held_within_deadline(server, gave_up)
    assert received == ["One ", "two "]  # the stall came after two tokens
    assert_fallback(answer, "endpoint stalled past the deadline")


# -- broken replies -----------------------------------------------------------------------


def test_connection_closed_mid_stream_falls_back(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    server.default = close(after=2)
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed=True)

    assert len(server.chat_requests) == RETRIES + 1
    assert_fallback(answer, "stream interrupted: RemoteProtocolError")


@STREAMED
def test_malformed_reply_falls_back(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.default = malformed()
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed)

    assert len(server.chat_requests) == RETRIES + 1
    assert_fallback(answer, "malformed reply from endpoint")


@STREAMED
def test_empty_answer_falls_back(
    fake_factory: Factory, server: OpenAIServer, streamed: bool
) -> None:
    server.default = empty()
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed)

    assert_fallback(answer, "endpoint returned an empty answer")


def test_whitespace_answer_falls_back(fake_factory: Factory, server: OpenAIServer) -> None:
    server.default = reply(" \n ")
    answer = ask(fake_factory(**endpoint(server.base_url)), streamed=False)

    assert_fallback(answer, "endpoint returned an empty answer")


# -- follow-ups ---------------------------------------------------------------------------


def test_failed_condense_searches_with_the_previous_question(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    conversation = fake_factory(**endpoint(server.base_url)).conversation()
    conversation.ask(QUESTION)
    server.script(status(401))  # the condense request; the answer request then succeeds
    answer = conversation.ask(FOLLOW_UP)

    assert len(server.chat_requests) == 3
    assert answer.query == f"{QUESTION} {FOLLOW_UP}"
    assert answer.generation is not None  # the model was asked to answer, and judged
    assert answer.notices[0].startswith("could not condense the follow-up (endpoint answered")


def test_interrupted_stream_is_reset_before_the_retry(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    server.script(close(after=2, text="Partial words here [1]."))
    server.default = reply(cite_sources)  # the retry gets a well-cited answer
    shown: list[str] = []
    resets: list[int] = []

    def reset() -> None:
        resets.append(1)
        shown.clear()  # what a display does: drop the void partial text

    answer = fake_factory(**endpoint(server.base_url)).ask(
        QUESTION, on_token=shown.append, on_reset=reset
    )
    assert resets == [1] and len(server.chat_requests) == 2
    assert answer.mode == "llm" and "".join(shown) == answer.answer

"""The LLM answer path against a real OpenAI-compatible HTTP server on 127.0.0.1.

Nothing is mocked below the `openai` client: requests cross a socket, and the server
records what it received so the prompt itself can be checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rag import prompts
from rag.answer import NOT_FOUND
from rag.assistant import Assistant
from rag.chunk import count_tokens
from rag.cli import answer_json
from rag.types import Answer
from tests.openai_server import OpenAIServer, Request, cite_sources, reply, sources_in, tokens

QUESTION = "Does alternating gradient descent-ascent converge faster than simultaneous GDA?"
FOLLOW_UP = "What rate does it get for games without an interior equilibrium?"
CONDENSED = "AltGDA local convergence rate games without interior Nash equilibrium"
KEY = "sk-test-key-42"

Factory = Callable[..., Assistant]


def endpoint(server: OpenAIServer, **overrides: Any) -> dict[str, Any]:
    """Settings for the test server.

    The endpoint goes in by its environment names: `Settings(base_url=...)` is ignored
    today (see test_endpoint_given_by_field_name), and these names stay valid after a fix.
    """
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY, **overrides}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip())[0].rstrip(".!? ")


def assert_citations_point_at_sources(answer: Answer) -> None:
    """`[n]` in the text is `sources[n-1]`, which is marked cited; no other is."""
    assert answer.citations
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    assert numbers == set(answer.citations)
    for i, source in enumerate(answer.sources, start=1):
        assert source.n == i
        assert source.cited == (i in answer.citations)


def prompt_tokens(request: Request) -> int:
    return sum(count_tokens(m["content"]) for m in request.messages)


# -- the endpoint is used ---------------------------------------------------------------


def test_endpoint_given_by_field_name(assistant_factory: Factory, server: OpenAIServer) -> None:
    """`assistant_factory(base_url=..., api_key=...)` must talk to that endpoint."""
    assistant = assistant_factory(base_url=server.base_url, api_key=KEY)
    assert assistant.settings.base_url == server.base_url
    answer = assistant.ask(QUESTION)
    assert answer.mode == "llm"
    assert [r.headers["authorization"] for r in server.chat_requests] == [f"Bearer {KEY}"]


def test_endpoint_health_lists_the_models(assistant_factory: Factory, server: OpenAIServer) -> None:
    ok, description = assistant_factory(**endpoint(server)).endpoint_health()
    assert ok, description
    assert "test-model" in description
    assert [r.path for r in server.requests] == ["/v1/models"]


# -- answers ----------------------------------------------------------------------------


def test_non_streamed_answer_is_cited(assistant_factory: Factory, server: OpenAIServer) -> None:
    answer = assistant_factory(**endpoint(server, llm_model="m-1")).ask(QUESTION)

    (request,) = server.chat_requests
    assert not request.stream
    assert request.body["model"] == "m-1"
    assert request.body["max_tokens"] == 512
    assert request.headers["authorization"] == f"Bearer {KEY}"
    sent = cite_sources(request)
    assert answer.mode == "llm"
    assert not answer.abstained
    assert answer.answer == sent
    assert answer.citations == [1, 2]
    assert answer.notices == []
    assert answer.flagged == []
    assert_citations_point_at_sources(answer)
    for n in answer.citations:  # the sentence cited [n] comes from sources[n-1]
        assert f"{first_sentence(answer.sources[n - 1].text)} [{n}]." in answer.answer
    data = answer_json(answer)
    assert data["mode"] == "llm"
    assert data["citations"] == [1, 2]
    assert data["sources"][0]["cited"] is True


def test_streamed_tokens_arrive_in_order(assistant_factory: Factory, server: OpenAIServer) -> None:
    received: list[str] = []
    answer = assistant_factory(**endpoint(server)).ask(QUESTION, on_token=received.append)

    (request,) = server.chat_requests
    assert request.stream
    sent = cite_sources(request)
    assert len(tokens(sent)) > 5
    assert received == tokens(sent)
    assert "".join(received) == sent == answer.answer
    assert answer.mode == "llm"
    assert answer.citations == [1, 2]
    assert_citations_point_at_sources(answer)


def test_prompt_holds_system_sources_and_question(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    assistant = assistant_factory(**endpoint(server))
    answer = assistant.ask(QUESTION)

    (request,) = server.chat_requests
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.content("system") == prompts.SYSTEM
    user = request.content("user")
    assert f"Question: {QUESTION}" in user
    assert len(answer.sources) == assistant.settings.top_k == 6
    # every source sits whole inside its own delimiters, numbered as in the answer
    assert sources_in(request) == {s.n: s.text for s in answer.sources}
    assert user.count("<source ") == user.count("</source>") == 6
    for source in answer.sources:
        assert f'<source n="{source.n}" label="{source.title}">\n{source.text}\n</source>' in user
    window = assistant.settings.context_window
    assert prompt_tokens(request) + request.body["max_tokens"] <= window


def test_small_context_window_leaves_sources_out(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    answer = assistant_factory(**endpoint(server, context_window=1024)).ask(QUESTION)

    (request,) = server.chat_requests
    shown = sources_in(request)
    assert 1 <= len(shown) < 6
    assert prompt_tokens(request) + request.body["max_tokens"] <= 1024
    assert [s.n for s in answer.sources] == sorted(shown)
    left_out = 6 - len(shown)
    assert f"{left_out} source(s) left out to fit the 1024-token context window" in answer.notices
    assert answer.mode == "llm"


# -- citation checking --------------------------------------------------------------------


def test_citation_to_missing_source_is_removed(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    def with_bad_citation(request: Request) -> str:
        return f"{first_sentence(sources_in(request)[1])} [1][9]."

    server.default = reply(with_bad_citation)
    answer = assistant_factory(**endpoint(server)).ask(QUESTION)

    assert "[9]" not in answer.answer
    assert answer.answer.endswith("[1].")
    assert answer.citations == [1]
    assert any("[9]" in notice and "do not exist" in notice for notice in answer.notices)
    assert answer.flagged == []
    assert_citations_point_at_sources(answer)


def test_unsupported_sentences_are_flagged(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    uncited = "Bananas ripen quickly in warm tropical plantations."
    unrelated = "Quantum chromodynamics explains gluon confinement inside heavy hadrons [2]."

    def mixed(request: Request) -> str:
        return f"{first_sentence(sources_in(request)[1])} [1]. {uncited} {unrelated}"

    server.default = reply(mixed)
    answer = assistant_factory(**endpoint(server)).ask(QUESTION)

    assert answer.mode == "llm"
    assert answer.flagged == [uncited, unrelated]
    assert "2 sentence(s) lack support in the sources they cite; they are listed as flagged" in (
        answer.notices
    )
    assert answer.citations == [1, 2]


def test_model_abstaining_gives_abstained_answer(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    server.default = reply("The answer is not found in the indexed abstracts.")
    answer = assistant_factory(**endpoint(server)).ask(QUESTION)

    assert answer.abstained
    assert answer.mode == "llm"
    assert answer.citations == []
    assert answer.answer.startswith(NOT_FOUND)
    assert len(server.chat_requests) == 1


# -- follow-ups -------------------------------------------------------------------------


def test_follow_up_is_condensed_then_searched(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    def condense_or_answer(request: Request) -> str:
        if request.content("system") == prompts.CONDENSE_SYSTEM:
            return f'"{CONDENSED}"'
        return cite_sources(request)

    server.default = reply(condense_or_answer)
    assistant = assistant_factory(**endpoint(server))
    conversation = assistant.conversation()
    first = conversation.ask(QUESTION)
    second = conversation.ask(FOLLOW_UP)

    answer_1, condense, answer_2 = server.chat_requests
    assert answer_1.content("system") == answer_2.content("system") == prompts.SYSTEM
    assert condense.content("system") == prompts.CONDENSE_SYSTEM
    history = condense.content("user")
    assert f"User: {QUESTION}" in history
    assert f"Follow-up: {FOLLOW_UP}" in history
    assert condense.body["max_tokens"] == 96
    assert f"Question: {FOLLOW_UP}" in answer_2.content("user")

    assert first.query == QUESTION
    assert second.query == CONDENSED
    assert second.mode == "llm"
    searched = [h.paper.paper_id for h in assistant.search_scoped(CONDENSED)[0]]
    assert [s.paper_id for s in second.sources] == searched
    assert sources_in(answer_2) == {s.n: s.text for s in second.sources}


def test_condensed_query_is_its_first_line_unquoted(
    assistant_factory: Factory, server: OpenAIServer
) -> None:
    """A model that quotes the query and adds a remark still yields the bare query."""
    assistant = assistant_factory(**endpoint(server))
    conversation = assistant.conversation()
    conversation.ask(QUESTION)
    server.script(reply(f'"{CONDENSED}"\n(I resolved "it" to AltGDA.)'))
    assert conversation.ask(FOLLOW_UP).query == CONDENSED

"""The LLM answer path against a real OpenAI-compatible HTTP server on 127.0.0.1.

Nothing is mocked below the `openai` client: requests cross a socket, and the server
records what it received so the prompt itself can be checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rag import prompts
from rag.answering.answer import NOT_FOUND
from rag.assistant import Assistant
from rag.cli import answer_json
from rag.config import Settings
from rag.corpus.chunk import count_tokens
from rag.types import Answer
from tests.openai_server import (
    OpenAIServer,
    Request,
    cite_sources,
    reply,
    sources_in,
    status,
    tokens,
)

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


def test_endpoint_given_by_field_name(fake_factory: Factory, server: OpenAIServer) -> None:
    """`fake_factory(base_url=..., api_key=...)` must talk to that endpoint."""
    assistant = fake_factory(base_url=server.base_url, api_key=KEY)
    assert assistant.settings.base_url == server.base_url
    answer = assistant.ask(QUESTION)
    assert answer.mode == "llm"
    assert [r.headers["authorization"] for r in server.chat_requests] == [f"Bearer {KEY}"]


def test_endpoint_health_lists_the_models(fake_factory: Factory, server: OpenAIServer) -> None:
    ok, description = fake_factory(**endpoint(server)).endpoint_health()
    assert ok, description
    assert "test-model" in description
    assert [r.path for r in server.requests] == ["/v1/models"]


# -- answers ----------------------------------------------------------------------------


def test_non_streamed_answer_is_cited(fake_factory: Factory, server: OpenAIServer) -> None:
    answer = fake_factory(**endpoint(server, llm_model="m-1")).ask(QUESTION)

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


def test_streamed_tokens_arrive_in_order(fake_factory: Factory, server: OpenAIServer) -> None:
    received: list[str] = []
    answer = fake_factory(**endpoint(server)).ask(QUESTION, on_token=received.append)

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
    fake_factory: Factory, server: OpenAIServer
) -> None:
    assistant = fake_factory(**endpoint(server))
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


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        (
            "how much faster does alternating gradient descent-ascent converge than simultaneous "
            "GDA?",
            "figure",
        ),
        ("what is AltGDA?", "definition"),
        ("which papers study alternating gradient descent-ascent?", "papers"),
    ],
)
def test_the_prompt_says_what_the_question_asks_for(
    fake_factory: Factory, server: OpenAIServer, question: str, intent: str
) -> None:
    assistant = fake_factory(**endpoint(server))
    assistant.ask(question)

    (request,) = server.chat_requests
    user = request.content("user")
    assert f"Question: {question}\n{prompts.INTENT[intent]}\n" in user
    others = [line for key, line in prompts.INTENT.items() if line != prompts.INTENT[intent]]
    assert not any(line in user for line in others)


def test_small_context_window_leaves_sources_out(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    # the scripted reply quotes a source: judged as a copy, it would give way to the
    # quoted answer (test_a_reply_that_only_cuts_the_quoted_answer_down...)
    answer = fake_factory(**endpoint(server, context_window=1024, llm_min_new_words=0.0)).ask(
        QUESTION
    )

    (request,) = server.chat_requests
    shown = sources_in(request)
    assert 1 <= len(shown) < 6
    assert prompt_tokens(request) + request.body["max_tokens"] <= 1024
    assert [s.n for s in answer.sources] == sorted(shown)
    left_out = 6 - len(shown)
    assert f"{left_out} source(s) left out to fit the 1024-token context window" in answer.notices
    assert answer.mode == "llm"


# -- citation checking --------------------------------------------------------------------


def test_citation_to_missing_source_is_removed(fake_factory: Factory, server: OpenAIServer) -> None:
    def with_bad_citation(request: Request) -> str:
        return f"{first_sentence(sources_in(request)[1])} [1][9]."

    server.default = reply(with_bad_citation)
    answer = fake_factory(**endpoint(server, llm_min_new_words=0.0)).ask(QUESTION)  # a quote

    assert "[9]" not in answer.answer
    assert answer.answer.endswith("[1].")
    assert answer.citations == [1]
    assert any("[9]" in notice and "do not exist" in notice for notice in answer.notices)
    assert answer.flagged == []
    assert_citations_point_at_sources(answer)


def test_unsupported_sentences_are_flagged(fake_factory: Factory, server: OpenAIServer) -> None:
    """One doubtful sentence of four: the answer holds, the sentence is flagged."""
    unrelated = "Quantum chromodynamics explains gluon confinement inside heavy hadrons [2]."

    def mostly_cited(request: Request) -> str:
        return f"{cite_sources(request, 3)} {unrelated}"

    server.default = reply(mostly_cited)
    answer = fake_factory(**endpoint(server)).ask(QUESTION)

    assert answer.mode == "llm"
    assert answer.flagged == [unrelated]
    assert "1 sentence(s) lack support in the sources they cite; they are listed as flagged" in (
        answer.notices
    )
    assert answer.generation == {
        "path": "free",
        "kept": True,
        "reasons": [],
        "unsupported_share": 0.25,
        "draft_coverage": answer.generation["draft_coverage"],
        "new_words": answer.generation["new_words"],
    }
    assert answer.draft == ""


# -- answers that do not hold up: the offline answer instead, the draft beside it ----------


def offline_answer(assistant: Assistant) -> Answer:
    return assistant.ask(QUESTION, mode="extractive")


def assert_replaced(answer: Answer, offline: Answer, reason: str) -> None:
    """The offline answer is the answer; the model's checked text is only the draft."""
    assert answer.mode == "extractive"
    assert answer.answer == offline.answer
    assert answer.citations == offline.citations
    assert answer.generation is not None and answer.generation["kept"] is False
    assert any(reason in r for r in answer.generation["reasons"]), answer.generation
    (rejected,) = [n for n in answer.notices if n.code == "llm_rejected"]
    assert "did not hold up against the sources" in rejected and reason in rejected
    assert answer.draft and answer.draft not in answer.answer
    data = answer_json(answer)
    assert data["draft"] == answer.draft and data["generation"]["kept"] is False
    assert "llm_rejected" in data["notice_codes"]


def test_a_mostly_unsupported_answer_is_replaced_by_the_offline_one(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    uncited = "Bananas ripen quickly in warm tropical plantations."
    unrelated = "Quantum chromodynamics explains gluon confinement inside heavy hadrons [2]."

    def mixed(request: Request) -> str:
        return f"{first_sentence(sources_in(request)[1])} [1]. {uncited} {unrelated}"

    server.default = reply(mixed)
    assistant = fake_factory(**endpoint(server))
    answer = assistant.ask(QUESTION)

    assert_replaced(answer, offline_answer(assistant), "2 of 3 claims lack support")
    assert uncited in answer.draft
    assert answer.flagged == []  # the shown answer is quoted: nothing in it is doubted


def test_an_answer_citing_nothing_is_replaced(fake_factory: Factory, server: OpenAIServer) -> None:
    server.default = reply(
        "A team at the University of California, Berkeley showed that AltGDA converges "
        "faster than simultaneous GDA in 2019."
    )
    assistant = fake_factory(**endpoint(server))
    answer = assistant.ask(QUESTION)

    assert_replaced(answer, offline_answer(assistant), "it cites no source")
    assert "Berkeley" in answer.draft and "Berkeley" not in answer.answer


def test_invented_figures_and_names_are_unsupported(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    """Words shared with the cited abstract do not cover a figure or a name it never
    states: two such sentences of three sink the answer."""

    def invented(request: Request) -> str:
        first = first_sentence(sources_in(request)[1])
        return (
            f"{first} [1]. Researchers at Berkeley proposed this alternating method [1]. "
            f"It converges 73.5% faster than simultaneous gradient descent-ascent [1]."
        )

    server.default = reply(invented)
    assistant = fake_factory(**endpoint(server))
    answer = assistant.ask(QUESTION)

    assert_replaced(answer, offline_answer(assistant), "2 of 3 claims lack support")


def test_the_model_saying_not_found_does_not_overrule_the_offline_decision(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    server.default = reply("The answer is not found in the indexed abstracts.")
    assistant = fake_factory(**endpoint(server))
    answer = assistant.ask(QUESTION)

    assert not answer.abstained
    assert_replaced(answer, offline_answer(assistant), "it says the abstracts do not answer")
    assert len(server.chat_requests) == 1


def test_what_the_offline_stage_refuses_is_never_sent_to_the_model(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    # (a detail no record holds: refused whatever the embedder, here a hashing fake whose
    # cosines mean nothing to the fitted confidence)
    answer = fake_factory(**endpoint(server)).ask("who are the authors of the GTO paper?")

    assert answer.abstained
    assert answer.answer.startswith(NOT_FOUND)
    assert answer.citations == []
    assert server.chat_requests == []  # the model cannot widen what was refused


def test_a_strong_models_well_cited_answer_is_shown_unchanged(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    received: list[str] = []
    answer = fake_factory(**endpoint(server)).ask(QUESTION, on_token=received.append)

    (request,) = server.chat_requests
    sent = cite_sources(request)
    assert answer.answer == sent == "".join(received)
    assert answer.mode == "llm"
    assert answer.generation == {
        "path": "free",
        "kept": True,
        "reasons": [],
        "unsupported_share": 0.0,
        "draft_coverage": answer.generation["draft_coverage"],
        "new_words": answer.generation["new_words"],
    }
    assert answer.generation["draft_coverage"] >= Settings().llm_min_draft_coverage
    assert answer.draft == "" and answer.flagged == [] and answer.notices == []
    # the offline answer went along as a draft to improve, inside the prompt
    assert "A draft answer quoted from the sources" in request.content("user")


def test_a_streamed_answer_that_is_replaced_says_so_in_the_terminal(
    fake_factory: Factory, server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.cli import print_answer

    server.default = reply("Gradient methods are popular in machine learning these days.")
    answer = fake_factory(**endpoint(server)).ask(QUESTION, on_token=lambda t: None)
    print_answer(answer, streamed=True)

    out, err = capsys.readouterr()
    assert "did not hold up against the sources" in err
    assert out.index("Answer:") < out.index(answer.answer)
    assert answer.draft not in out


# -- follow-ups -------------------------------------------------------------------------


def test_follow_up_is_condensed_then_searched(fake_factory: Factory, server: OpenAIServer) -> None:
    def condense_or_answer(request: Request) -> str:
        if request.content("system") == prompts.CONDENSE_SYSTEM:
            return f'"{CONDENSED}"'
        return cite_sources(request)

    server.default = reply(condense_or_answer)
    assistant = fake_factory(**endpoint(server))
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
    # the model answered the condensed search (its first sentences give no rate, so the
    # judge shows the offline answer instead: what is judged is tested above)
    assert second.generation is not None
    searched = [h.paper.paper_id for h in assistant.search_scoped(CONDENSED)[0]]
    assert [s.paper_id for s in second.sources] == searched
    assert sources_in(answer_2) == {s.n: s.text for s in second.sources}


def test_condensed_query_is_its_first_line_unquoted(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    """A model that quotes the query and adds a remark still yields the bare query."""
    assistant = fake_factory(**endpoint(server))
    conversation = assistant.conversation()
    conversation.ask(QUESTION)
    server.script(reply(f'"{CONDENSED}"\n(I resolved "it" to AltGDA.)'))
    assert conversation.ask(FOLLOW_UP).query == CONDENSED


# -- structured answers (RAG_LLM_STRUCTURED) -----------------------------------------------


def _schema_ids(request: Request) -> list[str]:
    """The sentence ids the request's JSON schema lets be cited."""
    fmt = request.body["response_format"]
    schema = fmt["schema"] if fmt["type"] == "json_object" else fmt["json_schema"]["schema"]
    return schema["properties"]["claims"]["items"]["properties"]["evidence"]["items"]["enum"]


def _numbered(request: Request) -> dict[str, str]:
    """'1.2' -> the sentence the prompt shows as [1.2]."""
    found = re.findall(r"^\[(\d+\.\d+)\] (.*)$", request.content("user"), flags=re.M)
    return dict(found)


@pytest.mark.parametrize("kind", ["json_schema", "json_object"])
def test_structured_claims_become_a_cited_answer(
    fake_factory: Factory, server: OpenAIServer, kind: str
) -> None:
    """The schema's evidence enum is exactly the sentences shown; the answer is written
    from the claims, each cited to the sources of its evidence."""

    def claims(request: Request) -> str:
        shown = _numbered(request)
        first = next(i for i in shown if i.startswith("1."))
        return json.dumps(
            {"found": True, "claims": [{"text": shown[first], "evidence": [first, "9.9"]}]}
        )

    server.default = reply(claims)
    received: list[str] = []
    answer = fake_factory(**endpoint(server, llm_structured=kind)).ask(
        QUESTION, on_token=received.append
    )

    (request,) = server.chat_requests
    assert request.content("system") == prompts.STRUCTURED_SYSTEM
    assert not request.stream  # JSON is not streamed; the written answer is sent whole
    assert sorted(_schema_ids(request)) == sorted(_numbered(request))
    assert request.body["response_format"]["type"] == kind
    first = next(s for i, s in _numbered(request).items() if i.startswith("1."))
    assert answer.answer == f"{first.rstrip(' .')}. [1]"  # the unknown id 9.9 is dropped
    assert received == [answer.answer]
    assert answer.mode == "llm" and answer.citations == [1]
    assert answer.generation == {
        "path": "structured",
        "kept": True,
        "reasons": [],
        "unsupported_share": 0.0,
        "draft_coverage": answer.generation["draft_coverage"],
        "new_words": answer.generation["new_words"],
    }


def test_a_claim_its_evidence_does_not_state_sinks_a_structured_answer(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    def invented(request: Request) -> str:
        ids = [i for i in _numbered(request) if i.startswith("1.")]
        made_up = "A Berkeley team proved it converges 73.5% faster in 2019"
        return json.dumps({"found": True, "claims": [{"text": made_up, "evidence": ids[:1]}]})

    server.default = reply(invented)
    assistant = fake_factory(**endpoint(server, llm_structured="json_schema"))
    answer = assistant.ask(QUESTION)

    assert answer.generation is not None and answer.generation["path"] == "structured"
    assert_replaced(answer, offline_answer(assistant), "1 of 1 claims lack support")


def test_an_endpoint_refusing_the_format_gets_free_text_from_then_on(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    server.script(status(400, message="response_format json_schema is not supported"))
    assistant = fake_factory(**endpoint(server, llm_structured="json_schema"))
    answer = assistant.ask(QUESTION)

    refused, free = server.chat_requests
    assert "response_format" in refused.body and "response_format" not in free.body
    assert answer.mode == "llm" and answer.generation["path"] == "free"  # type: ignore[index]
    assert "structured_unavailable" in [n.code for n in answer.notices]
    assistant.ask(QUESTION)  # not asked in that format again
    assert "response_format" not in server.chat_requests[-1].body


def test_a_reply_that_is_not_the_json_asked_for_gets_free_text(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    server.script(reply("Sure! Here is the answer you wanted [1]."))  # schema not enforced
    answer = fake_factory(**endpoint(server, llm_structured="json_object")).ask(QUESTION)

    assert len(server.chat_requests) == 2
    assert answer.generation is not None and answer.generation["path"] == "free"
    assert answer.mode == "llm"  # the free answer (first sentences, cited) holds up


def test_summarize_them_asks_the_model_about_the_papers_shown(
    fake_factory: Factory, server: OpenAIServer
) -> None:
    """'summarize them' is neither condensed nor searched: the model gets the papers the
    answer before cited, as its numbered sources, and the question as asked."""
    server.default = reply(cite_sources)
    conversation = fake_factory(**endpoint(server)).conversation()
    first = conversation.ask(QUESTION)
    shown = [s.paper_id for s in first.sources if s.cited]
    assert shown
    summary = conversation.ask("summarize them")
    asked = server.chat_requests[-1]
    assert len(server.chat_requests) == 2  # no condense request
    assert asked.content("system") == prompts.SYSTEM
    assert "Question: summarize them" in asked.content("user")
    assert summary.follow_up and [s.paper_id for s in summary.sources] == shown[:5]
    assert set(sources_in(asked).values()) == {s.text for s in summary.sources}

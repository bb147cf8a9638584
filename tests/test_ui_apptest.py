"""The Streamlit page driven in-process with AppTest, over a private copy of the seeds.

Each test points the app at its own copy of the hash-embedded seeds (`RAG_INDEX_DIR`), with
the app's test hook (`RAG_UI_EMBEDDER`, ui/resources.py) giving it the `HashEmbedder` they
were indexed with: the page is the point here, not the model, and none is loaded. Each runs
from a temporary folder, so neither the shared index nor a developer's .env is touched. The
LLM endpoint is a real HTTP server on loopback speaking the OpenAI protocol (streaming
included).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answering.citations import CITATION
from rag.assistant import Assistant
from ui.stream import Done, ask_events

from .fakes import HASH_EMBEDDER_HOOK
from .openai_server import OpenAIServer, Request, reply

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
TIMEOUT = 120  # generous: the machine may be busy
QUESTION = "Which papers study speculative decoding, and what speedups do they report?"
FOLLOW_UP = "What speedup does it report?"
OFF_TOPIC = "What is the best recipe for sourdough bread?"
SCOPED = "which ICLR 2026 papers use DCT?"
ABSENT_VENUE = "which NeurIPS papers use DCT?"  # the seeds are all ICLR 2026
# One paper answers it (its quoted answer is one sentence, which the endpoint's quote keeps)
ONE_PAPER = "How is the DCT used to approximate gradient projections?"
_SOURCE = re.compile(r'<source n="(\d+)" label="[^"]*">\n(.*?)\n</source>', re.S)
_DRAFT = re.compile(r"<draft>\n(.*?)\n</draft>", re.S)


# -- helpers -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _hash_embedded_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page here embeds with `HashEmbedder` (the app's test hook): no model loads,
    also in the tests that start the app without `app`."""
    monkeypatch.setenv("RAG_UI_EMBEDDER", HASH_EMBEDDER_HOOK)


@pytest.fixture
def app(
    hashed_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., AppTest]:
    """Start the app over a copy of the hash-embedded seeds, with extra environment variables
    (and the hook that embeds with `HashEmbedder`, also where another module imports `app`)."""
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    monkeypatch.chdir(tmp_path)  # no .env from the working copy
    monkeypatch.setenv("RAG_UI_EMBEDDER", HASH_EMBEDDER_HOOK)

    def start(**env: str) -> AppTest:
        monkeypatch.setenv("RAG_INDEX_DIR", str(index))
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.run()
        assert not at.exception, at.exception
        return at

    return start


def ask(at: AppTest, question: str) -> AppTest:
    """Submit a question and assert the page did not raise."""
    at.chat_input(key="question").set_value(question).run()
    assert not at.exception, at.exception
    return at


def markdown(at: AppTest) -> str:
    """Every Markdown element of the main area, joined."""
    return "\n".join(m.value for m in at.main.markdown)


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def chips(at: AppTest, turn: int) -> dict[str, str]:
    """The removable scope chips under answer `turn`: field -> label."""
    prefix = f"chip-{turn}-"
    return {
        str(b.key).removeprefix(prefix): b.label
        for b in at.main.button
        if str(b.key).startswith(prefix)
    }


def notices(at: AppTest) -> list[str]:
    return [n.value for n in (*at.main.warning, *at.main.info)]


def applied(at: AppTest) -> list[dict[str, Any]]:
    return [t.answer.applied_filters for t in at.session_state["conversation"].turns]


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    """Upload a file in the sidebar and press Ingest."""
    at.file_uploader(key="upload").set_value((name, data, "application/octet-stream")).run()
    at.button(key="ingest").click().run()
    assert not at.exception, at.exception
    return at


# -- a loopback OpenAI-compatible endpoint (the one scripted server of the tests) ---------


def _reply(request: Request) -> str:
    """Quote what source 1 says in answer, as a good model does: the draft's sentence
    citing [1] when the prompt offers one, else the first sentence of source 1 (or give
    the condensed follow-up when asked to rewrite one)."""
    user = request.body["messages"][-1]["content"]
    if "Standalone query:" in user:  # the follow-up condenser
        return "speculative decoding speedup"
    drafted = _DRAFT.search(user)
    cited = [s for s in re.split(r"(?<=\])\s+", drafted.group(1))] if drafted else []
    first = next((s for s in cited if "[1]" in s), "")
    first = CITATION.sub("", first).strip().rstrip(".")
    if not first:
        first = _SOURCE.findall(user)[0][1].split(". ")[0].rstrip(".")
    return f"The top paper reports that {first[0].lower()}{first[1:]} [1]."


def streamed(server: OpenAIServer) -> int:
    """Chat requests that asked for a token stream."""
    return sum(1 for r in server.chat_requests if r.body.get("stream"))


@contextmanager
def fake_endpoint() -> Iterator[OpenAIServer]:
    """Serve the scripted endpoint on a free loopback port for the duration of the block."""
    with OpenAIServer(reply(_reply)) as server:
        yield server


@pytest.fixture
def endpoint() -> Iterator[OpenAIServer]:
    with fake_endpoint() as server:
        yield server


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- tests ---------------------------------------------------------------------------


@pytest.mark.model
def test_first_start_builds_the_bundled_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one page here with the test hook unset: the product's own model builds it."""
    monkeypatch.delenv("RAG_UI_EMBEDDER")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "fresh"))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert any("Indexed 52" in t.value for t in at.toast)
    assert at.metric[0].value == "52"
    assert "Try asking" in markdown(at)
    assert "Embedding model: `all-MiniLM-L6-v2" in captions(at)


def test_the_test_hook_gives_the_page_the_hash_embedder(app: Callable[..., AppTest]) -> None:
    at = app()
    assert "Embedding model: `test:hash-64`" in captions(at)
    assert at.metric[0].value == "52"


def test_question_gets_cited_answer_and_sources_panel(app: Callable[..., AppTest]) -> None:
    at = ask(app(), QUESTION)
    page = markdown(at)
    assert "[\\[1\\]](#src-0-1)" in page  # [1] links to source card 1
    assert 'id="src-0-1"' in page and "<mark>" in page  # the card, with the highlight
    assert "derived label" in page  # the bundled abstracts have no titles
    assert any(e.label.startswith("Also relevant") for e in at.expander)
    assert "Offline extractive" in captions(at)
    assert "References:" in at.code[0].value  # the copy block holds the references
    assert not at.sidebar.download_button(key="export").disabled


def test_follow_up_keeps_the_context(app: Callable[..., AppTest]) -> None:
    at = ask(ask(app(), QUESTION), FOLLOW_UP)
    assert len(at.chat_message) == 4
    assert "searched as" in captions(at)
    assert "#src-1-1" in markdown(at)
    assert len(at.session_state["conversation"].turns) == 2


def test_off_topic_question_abstains_with_closest_papers(app: Callable[..., AppTest]) -> None:
    """How the page shows a refusal. The hash embedder's cosines say nothing of a topic
    (function words fill its 64 buckets), so the refusal is pinned by the threshold the
    settings allow; the real model's refusal of this question is tested in test_answer.py."""
    at = ask(app(RAG_ABSTAIN_THRESHOLD="0.99"), OFF_TOPIC)
    assert any("Not found in the indexed abstracts" in w.value for w in at.warning)
    page = markdown(at)
    assert "Closest papers" in page and "rag-related" in page
    assert "#src-0-" not in page  # nothing is cited


def test_scope_read_from_the_question_shows_as_removable_chips(
    app: Callable[..., AppTest],
) -> None:
    at = ask(app(), SCOPED)
    assert chips(at, 0) == {"venue": "ICLR", "year": "2026"}
    assert "Searched within" in markdown(at)
    assert not any(n.startswith("scope:") for n in notices(at))  # the chips say it once
    answer = at.session_state["conversation"].turns[0].answer
    if not answer.abstained and answer.confidence is not None:
        assert f"confidence {answer.confidence:.2f}" in captions(at)

    at.button(key="chip-0-year").click().run()  # asks again, as a new turn, without 2026
    assert not at.exception, at.exception
    assert len(at.chat_message) == 4
    assert at.session_state["conversation"].turns[1].question == SCOPED
    assert applied(at) == [{"venue": "ICLR", "year": 2026}, {"venue": "ICLR"}]
    assert chips(at, 1) == {"venue": "ICLR"}  # the year is gone from the new answer
    assert "Asked again without 2026" in captions(at)
    assert chips(at, 0) == {"venue": "ICLR", "year": "2026"}  # the old turn is kept as it was

    at.button(key="chip-1-venue").click().run()  # the removed year stays removed
    assert not at.exception, at.exception
    assert applied(at)[2] == {}
    assert chips(at, 2) == {}
    assert "Asked again without 2026, ICLR" in captions(at)


def test_scope_the_index_lacks_abstains_until_its_chip_is_removed(
    app: Callable[..., AppTest],
) -> None:
    at = ask(app(), ABSENT_VENUE)
    assert any("this index holds no NeurIPS papers" in n for n in notices(at))
    assert any("No indexed paper falls in the scope" in w.value for w in at.warning)
    assert chips(at, 0) == {"venue": "NeurIPS"}

    at.button(key="chip-0-venue").click().run()
    assert not at.exception, at.exception
    turns = at.session_state["conversation"].turns
    assert len(turns) == 2 and applied(at)[1] == {}
    assert turns[1].answer.sources  # searched the seeds this time
    assert all("holds no" not in n for n in turns[1].answer.notices)
    assert chips(at, 1) == {}


def test_sidebar_and_carried_over_filters_show_as_fixed_chips(
    app: Callable[..., AppTest],
) -> None:
    at = app()
    at.sidebar.selectbox(key="filter_year").set_value(2026).run()
    at = ask(at, "which ICLR papers use DCT?")
    assert applied(at) == [{"venue": "ICLR", "year": 2026}]
    assert chips(at, 0) == {"venue": "ICLR"}  # the sidebar's year is changed there
    assert 'class="rag-chip"' in markdown(at) and "sidebar</span>" in markdown(at)

    at.sidebar.selectbox(key="filter_year").set_value("Any").run()
    at = ask(ask(at, SCOPED), "how does it work?")  # a follow-up keeps the scope
    assert applied(at)[2] == {"venue": "ICLR", "year": 2026}
    assert chips(at, 2) == {}
    assert "previous question</span>" in markdown(at)


def test_question_language_is_shown_when_not_english(app: Callable[..., AppTest]) -> None:
    at = ask(app(), "如何改进CLIP的组合推理？")
    assert at.session_state["conversation"].turns[0].answer.language == "zh"
    assert "asked in Chinese" in captions(at)


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("papers.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary"),
        ("papers.json", b'[{"title": "x", "abstract": ', "invalid JSON"),
        ("papers.csv", b"", "no records"),
    ],
)
def test_bad_upload_shows_a_readable_error(
    app: Callable[..., AppTest], name: str, data: bytes, reason: str
) -> None:
    at = upload(app(), name, data)
    errors = [e.value for e in at.sidebar.error]
    assert errors and reason in errors[0], errors
    assert at.metric[0].value == "52"


def test_upload_ingests_and_updates_the_stats(app: Callable[..., AppTest]) -> None:
    record = {
        "title": "Sourdough Fermentation Dynamics",
        "abstract": "We model how wild yeast and lactic acid bacteria in sourdough starters "
        "compete, and show that a higher hydration speeds up fermentation by a third.",
        "site": "https://openreview.net/forum?id=abc123XYZ0",
    }
    line = json.dumps(record).encode()
    at = upload(app(), "extra.jsonl", line + b"\nnot json\n")
    message = at.sidebar.success[0].value
    assert "1 new" in message and "1 skipped" in message
    assert at.metric[0].value == "53"
    at = ask(at, "How does hydration affect sourdough fermentation?")
    page = markdown(at)
    assert "Sourdough Fermentation Dynamics" in page and "openreview.net/forum" in page


def test_mode_switch_between_endpoint_and_extractive(
    app: Callable[..., AppTest], endpoint: OpenAIServer
) -> None:
    # the scripted endpoint answers with a framed quote of one sentence: not judged as a
    # copy, nor as dropping the rest of the quoted answer, here
    at = app(
        OPENAI_BASE_URL=endpoint.base_url,
        RAG_LLM_MIN_NEW_WORDS="0",
        RAG_LLM_MIN_DRAFT_COVERAGE="0",
    )
    assert at.radio(key="mode").value == "llm"
    assert "Endpoint reachable (test-model)" in captions(at)
    at = ask(at, ONE_PAPER)
    assert streamed(endpoint) == 1  # the answer came through the token stream
    assert "The top paper reports that" in markdown(at)
    assert "<mark>" in markdown(at)  # the cited sentence is found by overlap
    assert "Endpoint model" in captions(at)
    at.radio(key="mode").set_value("extractive").run()
    at = ask(at, "How do the speculative decoding papers train their draft models?")
    assert streamed(endpoint) == 1
    turns = at.session_state["conversation"].turns
    assert [t.answer.mode for t in turns] == ["llm", "extractive"]
    assert "Offline extractive" in captions(at)


def test_endpoint_down_falls_back_with_a_notice(app: Callable[..., AppTest]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    at = app(OPENAI_BASE_URL=url, RAG_LLM_RETRIES="0", RAG_LLM_DEADLINE_S="5")
    assert "Endpoint unreachable" in captions(at)
    at = ask(at, QUESTION)
    assert any("LLM endpoint failed" in w.value for w in at.warning)
    assert "#src-0-1" in markdown(at)
    assert "Offline extractive" in captions(at)


def test_sessions_keep_separate_conversations(app: Callable[..., AppTest]) -> None:
    first, second = app(), app()
    ask(first, QUESTION)
    one, two = first.session_state["conversation"], second.session_state["conversation"]
    assert len(one.turns) == 1 and not two.turns
    assert one.assistant is two.assistant  # loaded once per process


def test_clear_chat_empties_the_conversation(app: Callable[..., AppTest]) -> None:
    at = ask(app(), QUESTION)
    at.sidebar.button(key="clear").click().run()
    assert not at.chat_message
    assert not at.session_state["conversation"].turns
    assert at.sidebar.download_button(key="export").disabled


def test_empty_index_says_so_and_disables_the_question_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rag.assistant.Assistant.ensure_default_corpus", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "empty"))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert any("The index is empty" in w.value for w in at.warning)
    assert at.chat_input(key="question").disabled


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAG_TOP_K": "0"}, "RAG_TOP_K: Input should be greater than or equal to 1"),
        ({"RAG_INDEX_DIR": "a-file"}, "Cannot open the index: cannot open the index folder"),
    ],
)
def test_bad_settings_or_index_show_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert message in at.error[0].value


def test_two_sessions_can_ask_at_the_same_time(fake_seeded: Assistant) -> None:
    questions = [QUESTION, "Can images be synthesised from a frozen CLIP model without a decoder?"]
    conversations = [fake_seeded.conversation() for _ in questions]
    last: dict[int, Any] = {}

    def run(i: int) -> None:
        last[i] = list(ask_events(conversations[i], questions[i]))[-1]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(questions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(isinstance(last[i], Done) for i in range(len(questions))), last
    for conversation, question in zip(conversations, questions, strict=True):
        assert [t.question for t in conversation.turns] == [question]
        assert conversation.turns[0].answer.citations

"""Generated titles: one short call, cleaned, None on failure (tests/openai_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.llm import ChatClient
from rag.titles import clean_title, generate_title
from tests.conftest import make_settings
from tests.openai_server import OpenAIServer, reply, status

ABSTRACT = "We propose FastDraft, a way to train draft models for speculative decoding."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def client(server: OpenAIServer, tmp_path: Path) -> ChatClient:
    return ChatClient(make_settings(tmp_path, base_url=server.base_url, llm_retries=0))


def test_one_call_gives_a_clean_title(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(reply('Title: "FastDraft: Training Drafts for Speculative Decoding."'))
    title = generate_title(client(server, tmp_path), ABSTRACT)
    assert title == "FastDraft: Training Drafts for Speculative Decoding"
    assert len(server.chat_requests) == 1
    assert "<abstract>" in server.chat_requests[0].content("user")


def test_failing_endpoint_gives_none(server: OpenAIServer, tmp_path: Path) -> None:
    server.script(status(500), status(500), status(500), status(500))
    assert generate_title(client(server, tmp_path), ABSTRACT) is None


def test_clean_title_rejects_what_is_no_title() -> None:
    assert clean_title("  \n ") is None
    assert clean_title(" ".join(["word"] * 30)) is None
    assert clean_title("**A Title**\nextra line") == "A Title"

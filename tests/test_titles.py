"""Generated titles: one short call each, cleaned, stored at ingest, never over a real title
(through the scripted OpenAI server, tests/openai_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from rag.answering.answer import make_sources
from rag.assistant import Assistant
from rag.corpus.labels import derive_label
from rag.corpus.papers import FieldMap
from rag.corpus.titles import GIVE_UP_AFTER, TitleJob, clean_title, generate_title, title_papers
from rag.llm import ChatClient, LLMError
from rag.types import Paper
from tests.conftest import make_settings
from tests.fakes import HashEmbedder
from tests.openai_server import OpenAIServer, Request, reply, status

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


def test_failing_endpoint_raises_and_a_reply_that_is_no_title_gives_empty(
    server: OpenAIServer, tmp_path: Path
) -> None:
    server.script(status(500))
    with pytest.raises(LLMError):
        generate_title(client(server, tmp_path), ABSTRACT)
    server.script(reply("<title>"))
    assert generate_title(client(server, tmp_path), ABSTRACT) == ""


def test_clean_title_rejects_what_is_no_title() -> None:
    assert clean_title("  \n ") is None
    assert clean_title(" ".join(["word"] * 30)) is None
    assert clean_title("<title>") is None and clean_title("<summary>\n</summary>") is None
    assert clean_title("**A Title**\nextra line") == "A Title"
    assert clean_title("<title>FastDraft: Trained Drafts</title>") == "FastDraft: Trained Drafts"
    # a heading or a field's name is no title of this abstract (SmolLM2 gives both)
    assert clean_title("Introduction", ABSTRACT + " We introduce it.") is None
    assert clean_title("Machine Learning", ABSTRACT + " Learning is fast.") is None
    # the abstract's first words copied name nothing (SmolLM2 does this)
    assert clean_title("We propose FastDraft, a way to train", ABSTRACT) is None
    assert (
        clean_title("FastDraft: Trained Draft Models", ABSTRACT)
        == "FastDraft: Trained Draft Models"
    )


# -- titles stored at ingest (RAG_GENERATE_TITLES) ---------------------------------------

UNTITLED = [
    "We propose FastDraft, a recipe that trains small draft models for speculative decoding "
    "of large language models and doubles decoding speed on code benchmarks.",
    "Model merging methods combine models fine-tuned on different tasks; we show that a "
    "sparse mask over task vectors keeps ninety percent of each task's accuracy.",
    "We study reward hacking in reinforcement learning from human feedback and find that "
    "ensembles of reward models reduce over-optimisation on summarisation tasks.",
]
TITLED = {
    "paper_id": "t-1",
    "title": "Kernel Tricks Revisited",
    "summary": "We revisit random Fourier features for kernel ridge regression and show "
    "that leverage-score sampling halves the number of features needed for a given error.",
}


def _abstract_of(request: Request) -> str:
    user = request.content("user")
    return user.split("<abstract>\n", 1)[1].split("\n</abstract>", 1)[0]


def _title_for(request: Request) -> str:
    """A title the test can predict: 'Generated: ' and the abstract's first three words."""
    return "Title: Generated: " + " ".join(_abstract_of(request).split()[:3])


def _corpus(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "list.txt"
    text.write_text("Untitled abstracts\n" + "\n\n".join(UNTITLED) + "\n")
    jsonl = folder / "titled.jsonl"
    jsonl.write_text(json.dumps(TITLED) + "\n")
    return [text, jsonl]


def _assistant(tmp_path: Path, server: OpenAIServer, **overrides: Any) -> Assistant:
    settings = make_settings(
        tmp_path / "index",
        base_url=server.base_url,
        llm_retries=0,
        generate_titles=True,
        title_workers=2,
        **overrides,
    )
    return Assistant(settings, HashEmbedder())


def _fields() -> FieldMap:
    return FieldMap.with_overrides({"abstract": "summary"})


def test_ingest_stores_one_generated_title_per_untitled_paper(tmp_path: Path) -> None:
    with OpenAIServer(default=reply(_title_for)) as server:
        assistant = _assistant(tmp_path, server)
        summary = assistant.ingest(_corpus(tmp_path / "data"), _fields())
        asked = [_abstract_of(r) for r in server.chat_requests]
        assert sorted(asked) == sorted(UNTITLED)  # the titled paper is never asked
        assert (summary.titles_generated, summary.titles_failed) == (3, 0)

        papers = {p.abstract: p for p in assistant.papers().values()}
        for abstract in UNTITLED:
            paper = papers[abstract]
            expected = "Generated: " + " ".join(abstract.split()[:3])
            assert (paper.title, paper.generated_title, paper.label) == (None, expected, expected)
            assert paper.label_is_derived
        titled = papers[TITLED["summary"]]
        assert (titled.label, titled.generated_title) == ("Kernel Tricks Revisited", None)
        # never embedded: vectors and BM25 see the source's own words only
        assert not any("Generated:" in text for text in assistant.embedded_texts()[1])

        # a new process reads them back from Chroma; a re-ingest asks nothing again
        again = _assistant(tmp_path, server)
        assert {p.generated_title for p in again.papers().values()} == {
            None,
            *("Generated: " + " ".join(a.split()[:3]) for a in UNTITLED),
        }
        summary = again.ingest(_corpus(tmp_path / "data"), _fields())
        assert summary.papers_unchanged == 4 and summary.titles_generated == 0
        assert len(server.chat_requests) == 3

        hits = again.search("speculative decoding draft models")
        source = make_sources(hits)[0]
        assert source.title == "Generated: We propose FastDraft,"
        assert (source.title_is_derived, source.title_generated) == (True, True)
        assert source.label_note == "generated title"
        assert json.loads(json.dumps(asdict(source)))["title_generated"] is True


def test_changed_abstract_loses_its_generated_title_and_is_asked_anew(tmp_path: Path) -> None:
    with OpenAIServer(default=reply(_title_for)) as server:
        assistant = _assistant(tmp_path, server)
        files = _corpus(tmp_path / "data")
        assistant.ingest(files, _fields())
        edited = UNTITLED[0].replace("doubles", "triples")
        files[0].write_text("Untitled abstracts\n" + "\n\n".join([edited, *UNTITLED[1:]]) + "\n")
        summary = assistant.ingest(files, _fields(), prune=True)
        # an untitled line is known by its text: the edit is a new paper, the old one pruned
        assert (summary.papers_new, summary.papers_pruned, summary.titles_generated) == (1, 1, 1)
        assert _abstract_of(server.chat_requests[-1]) == edited
        assert len(server.chat_requests) == 4


def test_endpoint_down_keeps_offline_labels_gives_up_and_asks_again_next_time(
    tmp_path: Path,
) -> None:
    many = [
        f"We propose Method{i}, a new way to train models on task number {i}." for i in range(12)
    ]
    data = tmp_path / "data"
    data.mkdir()
    (data / "list.txt").write_text("Untitled\n" + "\n\n".join(many) + "\n")
    with OpenAIServer(default=status(500)) as server:
        assistant = _assistant(tmp_path, server)
        summary = assistant.ingest([data / "list.txt"])
        # it stops after a run of failures instead of asking all 12 (bounded, no hang)
        assert summary.titles_generated == 0
        assert GIVE_UP_AFTER <= summary.titles_failed < len(many)
        assert len(server.chat_requests) == summary.titles_failed
        papers = assistant.papers().values()
        assert {p.label for p in papers} == {derive_label(a) for a in many}  # offline labels
        assert all(p.generated_title is None for p in papers)

        server.default = reply(_title_for)  # the endpoint is back: the next ingest asks again
        summary = assistant.ingest([data / "list.txt"])
        assert summary.titles_generated == len(many)
        assert all(p.generated_title for p in assistant.papers().values())


def test_off_by_default_and_without_endpoint(tmp_path: Path) -> None:
    with OpenAIServer(default=reply(_title_for)) as server:
        settings = make_settings(tmp_path / "index", base_url=server.base_url)
        assistant = Assistant(settings, HashEmbedder())
        assert assistant.title_job() is None
        summary = assistant.ingest(_corpus(tmp_path / "data"), _fields())
        assert summary.titles_generated == 0 and server.chat_requests == []
    offline = Assistant(make_settings(tmp_path / "index2", generate_titles=True), HashEmbedder())
    assert offline.title_job() is None


def test_title_papers_stops_after_failures_in_a_row() -> None:
    papers = [Paper(paper_id=str(i), abstract=f"abstract {i}") for i in range(20)]
    calls: list[str] = []

    def titler(abstract: str) -> str:
        calls.append(abstract)
        if abstract in {"abstract 0", "abstract 3"}:
            return "A Title"
        if abstract == "abstract 1":
            return ""  # a reply, just no title: the endpoint works, the streak restarts
        raise LLMError("HTTP 500", retryable=True)

    got = list(title_papers(papers, TitleJob(titler, workers=1)))
    # 0 works, 1 no title, 2 fails, 3 works (the streak restarts), 4-7 fail: 4 in a row
    assert GIVE_UP_AFTER == 4
    assert [p.paper_id for p, _ in got] == [str(i) for i in range(8)]
    assert [t for _, t in got] == ["A Title", "", None, "A Title", None, None, None, None]
    assert len(calls) == 8


def test_a_reply_that_is_no_title_is_recorded_and_not_asked_again(tmp_path: Path) -> None:
    with OpenAIServer(default=reply("<title>")) as server:
        assistant = _assistant(tmp_path, server)
        summary = assistant.ingest(_corpus(tmp_path / "data"), _fields())
        assert (summary.titles_generated, summary.titles_rejected, summary.titles_failed) == (
            0,
            3,
            0,
        )
        untitled = [p for p in assistant.papers().values() if not p.title]
        assert {p.generated_title for p in untitled} == {""}
        assert {p.label for p in untitled} == {derive_label(a) for a in UNTITLED}
        assert assistant.ingest(_corpus(tmp_path / "data"), _fields()).titles_rejected == 0
        assert len(server.chat_requests) == 3

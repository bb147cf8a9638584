"""Answering from the snapshot without Chroma: an embedded index's collection metadata,
version stamp and chunk count are read from its SQLite file (`rag.store.index.peek`), and a
new process that answers from the snapshot never imports chromadb (~0.7 s of a cold
`rag ask`). Every value is checked against what Chroma itself reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag.store.index import STAMP_KEY, Store, _client, peek
from tests.fakes import HashEmbedder

from .conftest import make_settings

ASK = """
import json, sys
sys.path.insert(0, sys.argv[1])  # the repository root: tests.fakes
from rag.assistant import Assistant
from rag.config import Settings
from tests.fakes import HashEmbedder
assistant = Assistant(Settings(_env_file=None), HashEmbedder())  # the vectors of hashed_index
answer = assistant.ask("what is GTO?")
print(json.dumps({"chromadb": "chromadb" in sys.modules, "opened": assistant.store.opened,
                  "cited": [s.title for s in answer.sources if s.cited],
                  "abstained": answer.abstained}))
"""


def test_peek_reads_what_chroma_reports(hashed_index: Path) -> None:
    settings = make_settings(hashed_index)
    peeked = peek(settings)
    assert peeked is not None
    collection = _client(settings).get_collection(settings.collection)
    assert peeked.metadata == collection.metadata
    assert peeked.count == collection.count() > 0
    assert isinstance(peeked.metadata[STAMP_KEY], str)


def test_peek_declines_what_it_cannot_read(tmp_path: Path, hashed_index: Path) -> None:
    assert peek(make_settings(tmp_path / "none")) is None  # no index yet
    assert peek(make_settings(hashed_index, collection="other")) is None  # no such collection
    assert peek(make_settings(hashed_index, chroma_url="http://127.0.0.1:9")) is None  # server
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "chroma.sqlite3").write_bytes(b"not a database")
    assert peek(make_settings(broken)) is None


def test_a_write_opens_chroma_and_the_stamp_follows_it(
    tmp_path: Path, hashed_index: Path, fake_embedder: HashEmbedder
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    settings = make_settings(index)
    store = Store(settings, fake_embedder.name)
    assert not store.opened  # opening an existing embedded index touches no Chroma
    before = store.stamp()
    assert before == peek(settings).metadata[STAMP_KEY]  # type: ignore[union-attr]
    assert store.count() == peek(settings).count  # type: ignore[union-attr]
    store.set_stamp("a-new-stamp")
    assert store.opened
    assert store.stamp() == "a-new-stamp"
    assert Store(settings, fake_embedder.name).stamp() == "a-new-stamp"  # seen by a new reader


def test_a_wrong_model_is_refused_without_opening_chroma(hashed_index: Path) -> None:
    from rag.store.index import StoreError

    with pytest.raises(StoreError, match="was built with"):
        Store(make_settings(hashed_index), "local:another-model@128")


@pytest.mark.slow
def test_a_new_process_answers_from_the_snapshot_without_chromadb(
    tmp_path: Path, hashed_index: Path
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    env = {**os.environ, "RAG_INDEX_DIR": str(index)}
    root = str(Path(__file__).resolve().parents[1])

    def ask() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", ASK, root], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = ask()  # may read the vectors from Chroma once, and save them to the snapshot
    second = ask()
    assert second == {**first, "chromadb": False, "opened": False}
    assert not second["abstained"]
    assert any("GTO" in str(title) for title in second["cited"])  # type: ignore[attr-defined]

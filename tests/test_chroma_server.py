"""Server mode: the same pipeline against a real `chroma run` on loopback.

The server is the point, not the model: every assistant here, in this process and in the
asking subprocesses, embeds with `HashEmbedder` (the collection holds its vectors).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eval.scale import chroma_server, free_port
from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.store.index import StoreError

from .conftest import FIXTURES
from .fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A `chroma run` server on 127.0.0.1, stopped after the module."""
    folder = tmp_path_factory.mktemp("chroma-server")
    with chroma_server(folder / "data", folder / "server.log") as (url, _):
        yield url


@pytest.mark.slow
def test_ingest_and_ask_through_a_chroma_server(
    chroma_url: str, settings_factory: Callable[..., Settings], fake_embedder: HashEmbedder
) -> None:
    settings = settings_factory(chroma_url=chroma_url, collection="server-test")
    writer = Assistant(settings, fake_embedder)
    first = writer.ingest([BUNDLED_CORPUS, FIXTURES / "records.csv"])
    assert first.total_papers == 54 and first.chunks_embedded == first.total_chunks
    assert writer.ingest([BUNDLED_CORPUS]).chunks_embedded == 0

    reader = Assistant(settings, fake_embedder)  # e.g. a second app instance on another machine
    assert reader.stats()["papers"] == 54 and reader.stats()["location"] == chroma_url
    answer = reader.ask("Which papers improve speculative decoding or speculative sampling?")
    texts = " ".join(s.text for s in answer.sources)
    assert "Speculative decoding accelerates" in texts and "Speculative sampling" in texts
    assert not answer.abstained and answer.citations


def test_unreachable_server_is_a_clear_error(
    settings_factory: Callable[..., Settings], fake_embedder: HashEmbedder
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError, match=f"cannot reach the Chroma server at {url}"):
        Assistant(settings_factory(chroma_url=url), fake_embedder)


ASKER = """
import json, sys
sys.path.insert(0, sys.argv[4])  # the repository root: tests.fakes
from concurrent.futures import ThreadPoolExecutor
from rag.assistant import Assistant
from rag.config import Settings
from tests.fakes import HashEmbedder
settings = Settings(_env_file=None, chroma_url=sys.argv[1], collection="server-test",
                    index_dir=sys.argv[2])
assistant = Assistant(settings, HashEmbedder())
questions = json.loads(sys.argv[3])
with ThreadPoolExecutor(8) as pool:
    answers = list(pool.map(assistant.ask, questions))
print(json.dumps([[a.question, [s.paper_id for s in a.sources], a.answer] for a in answers]))
"""


@pytest.mark.slow
def test_two_processes_query_one_server_concurrently(
    chroma_url: str,
    settings_factory: Callable[..., Settings],
    fake_embedder: HashEmbedder,
    tmp_path: Path,
) -> None:
    import json

    from eval.bench import QUESTIONS

    settings = settings_factory(chroma_url=chroma_url, collection="server-test")
    reader = Assistant(settings, fake_embedder)
    reader.ingest([BUNDLED_CORPUS])  # no-op when the first test already filled it
    expected = {q: [s.paper_id for s in reader.ask(q).sources] for q in QUESTIONS[:8]}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                ASKER,
                chroma_url,
                str(tmp_path / f"p{i}"),
                json.dumps(QUESTIONS[:8]),
                str(ROOT),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        answers = json.loads(out.strip().splitlines()[-1])
        assert [q for q, _, _ in answers] == QUESTIONS[:8]
        for question, sources, text in answers:
            assert sources == expected[question] and text


@pytest.mark.slow
@pytest.mark.parametrize(
    "layout",
    [
        {"collection": "server-test"},
        # collections of 20 chunks, written 4 papers at a time: 5 or more on the server
        {"collection": "server-shards", "shard_chunks": 20, "ingest_batch": 4},
    ],
)
def test_past_ann_min_rows_the_server_searches_and_no_vector_is_pulled(
    layout: dict[str, object],
    chroma_url: str,
    settings_factory: Callable[..., Settings],
    fake_embedder: HashEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rag.retrieval import retrieve
    from rag.types import Filters

    monkeypatch.setattr(retrieve, "SERVED_NAMED_MAX", 10)  # 2024 names its chunks, 2026 not

    local = settings_factory(chroma_url=chroma_url, **layout)
    Assistant(local, fake_embedder).ingest([BUNDLED_CORPUS, FIXTURES / "records.csv"])
    exact = Assistant(local, fake_embedder)  # pulls the vectors, searches them exactly
    assert len(exact.store.shards) >= (5 if "shard_chunks" in layout else 1)
    elsewhere = {"ann_min_rows": 0, "index_dir": tmp_path / "instance"}  # another machine
    served = Assistant(local.model_copy(update=elsewhere), fake_embedder)
    questions = ["speculative decoding latency", "which papers prune kv caches?", "graph rewiring"]
    scopes = [None, Filters(year=2024), Filters(year=2026)]  # all, narrow, wide
    for question in questions:
        for scope in scopes:
            want = exact.retriever.search(question, top_k=5, filters=scope)
            got = served.retriever.search(question, top_k=5, filters=scope)
            assert [h.paper.paper_id for h in got] == [h.paper.paper_id for h in want]
            for a, b in zip(got, want, strict=True):
                assert a.dense_similarity == pytest.approx(b.dense_similarity, abs=1e-5)
    assert served.ask("which papers improve speculative decoding?").citations
    state = served.retriever._state()
    assert state.vectors == [] and state.ann == []  # nothing pulled, no local ANN index
    assert not list((tmp_path / "instance").rglob("vectors-*"))  # no vector snapshot either
    pulled = Assistant(
        local.model_copy(
            update={**elsewhere, "server_dense": "local", "index_dir": tmp_path / "b"}
        ),
        fake_embedder,
    )
    assert [h.paper.paper_id for h in pulled.retriever.search(questions[0], top_k=5)] == [
        h.paper.paper_id for h in exact.retriever.search(questions[0], top_k=5)
    ]
    assert list((tmp_path / "b").rglob("vectors-*"))  # RAG_SERVER_DENSE=local pulls them once

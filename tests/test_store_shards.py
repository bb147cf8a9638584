"""An index past RAG_SHARD_CHUNKS spreads over several Chroma collections (issue 25: each
insert then costs what it costs in a collection of bounded size). Everything a reader
sees is the same as from one collection: the count, the catalog, the vectors, the
nearest chunks, the answers; a chunk rewritten later lives in one collection only."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.corpus.chunk import Chunker
from rag.store.index import SHARDS_KEY, Store, _client, peek, shard_name
from tests.fakes import HashEmbedder

from .conftest import make_settings

SHARD = 20  # chunks a collection takes before the next one starts
ROUND = 4  # texts an ingest writes at a time (RAG_INGEST_BATCH)
QUESTIONS = ("what is GTO?", "which papers improve speculative decoding?", "dpo variants")


def _built(index: Path, embedder: HashEmbedder, shard_chunks: int) -> Assistant:
    settings = make_settings(index, shard_chunks=shard_chunks, ingest_batch=ROUND)
    assistant = Assistant(settings, embedder)
    assistant.ingest([BUNDLED_CORPUS])
    return assistant


@pytest.fixture
def pair(tmp_path: Path, fake_embedder: HashEmbedder) -> tuple[Assistant, Assistant]:
    """The seeds in one collection, and in collections of SHARD chunks."""
    return (
        _built(tmp_path / "one", fake_embedder, 0),
        _built(tmp_path / "sharded", fake_embedder, SHARD),
    )


def _collections(settings: Settings) -> dict[str, int]:
    client = _client(settings)
    return {c.name: client.get_collection(c.name).count() for c in client.list_collections()}


def test_a_large_index_spreads_over_bounded_collections(
    pair: tuple[Assistant, Assistant], fake_embedder: HashEmbedder
) -> None:
    one, sharded = pair
    total = one.store.count()
    held = _collections(sharded.settings)
    shards = sharded.store.collection.metadata[SHARDS_KEY]
    assert shards == len(held) >= 3 and total > 2 * SHARD
    assert set(held) == {shard_name("abstracts", k) for k in range(shards)}
    assert all(n <= SHARD for n in held.values())
    assert sum(held.values()) == total == sharded.store.count()
    assert _collections(one.settings) == {"abstracts": total}
    reopened = Store(sharded.settings, fake_embedder.name)
    assert not reopened.opened and reopened.count() == total  # read from SQLite alone
    assert peek(sharded.settings).count == total  # type: ignore[union-attr]


def test_readers_see_the_same_index_either_way(
    pair: tuple[Assistant, Assistant], fake_embedder: HashEmbedder
) -> None:
    one, sharded = pair
    a, b = one.store.load_catalog(), sharded.store.load_catalog()
    assert sorted(a.ids) == sorted(b.ids) and a.papers.keys() == b.papers.keys()
    assert all(a.papers[p].paper == b.papers[p].paper for p in a.papers)
    ids_a, vectors_a = one.store.vectors()
    ids_b, vectors_b = sharded.store.vectors()
    order = [ids_b.index(i) for i in ids_a]
    assert np.allclose(vectors_a, vectors_b[order])
    some = ids_a[::7]  # spread over every collection
    assert sharded.store.vectors(some)[0] == sorted(some, key=ids_b.index)
    query = fake_embedder.embed_query("speculative decoding")
    assert sharded.store.similarities(query, some) == pytest.approx(
        one.store.similarities(query, some), abs=1e-6
    )
    exact = sorted(ids_a, key=lambda i: -float(vectors_a[ids_a.index(i)] @ query))[:5]
    assert [cid for cid, _ in sharded.store.nearest(query, 5)] == exact  # merged, best first
    among = exact[2:] + ids_a[-3:]
    assert {cid for cid, _ in sharded.store.nearest(query, 3, among)} <= set(among)
    assert sharded.store.nearest(query, 3, ["no-such-paper#0"]) == []
    for question in QUESTIONS:
        want, got = one.ask(question), sharded.ask(question)
        assert [s.paper_id for s in got.sources] == [s.paper_id for s in want.sources]
        assert got.answer == want.answer


def test_a_chunk_rewritten_later_lives_in_one_collection(
    pair: tuple[Assistant, Assistant],
) -> None:
    _, sharded = pair
    store = sharded.store
    first = store.shards[0]
    catalog = store.load_catalog()
    stored = first.get(limit=2, include=["embeddings"])
    papers = [catalog.papers[catalog.paper_of[catalog.ids.index(c)]].paper for c in stored["ids"]]
    chunker = Chunker(sharded.settings.chunk_tokens, sharded.settings.chunk_overlap)
    chunks = {c.chunk_id: (p, c) for p in papers for c in chunker.split(p)}
    items = [chunks[cid] for cid in stored["ids"]]
    total = store.count()
    store.write(items, np.asarray(stored["embeddings"], dtype=np.float32))
    assert store.count() == total  # moved, not copied
    assert first.get(ids=stored["ids"])["ids"] == []
    assert sorted(store.shards[-1].get(ids=stored["ids"])["ids"]) == sorted(stored["ids"])

    elsewhere = store.shards[1].get(limit=1)["ids"][0]  # metadata rewritten where it lives
    paper = catalog.papers[catalog.paper_of[catalog.ids.index(elsewhere)]].paper
    moved = replace(paper, sources=[*paper.sources, "moved.txt:1"])
    store.update_metadata([(moved, c) for c in chunker.split(moved) if c.chunk_id == elsewhere])
    assert "moved.txt:1" in store.load_catalog().papers[paper.paper_id].paper.sources

    store.delete([stored["ids"][0], elsewhere])
    assert store.count() == total - 2
    assert len(store.load_catalog().ids) + len(store.load_catalog().stale_ids) == total - 2

"""Ingest: incremental, in-place updates, prune, one writer at a time, crash-safe."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.embedding.embed import LocalEmbedder
from rag.ingest import IngestLocked, ingest, ingest_lock
from rag.store.index import PACKED_KEY, TEXT_KEY, Store, StoreError, adopt_layout, unpacked_metadata
from tests.fakes import HashEmbedder

from .conftest import FIXTURES, make_settings

SettingsFactory = Callable[..., Settings]


def write_list(path: Path, abstracts: list[str], header: str = "ICLR 2026 Papers") -> Path:
    path.write_text("\n\n".join([header, *abstracts]) + "\n", "utf-8")
    return path


A1 = (
    "We propose WidgetNet, a convolutional model that recognises widgets in screenshots "
    "and reaches 91% accuracy on a new benchmark of mobile interfaces."
)
A2 = (
    "We study the convergence of gradient descent on two-layer networks with quadratic "
    "activations and prove global convergence from small random initialisation."
)
A3 = (
    "We introduce a retrieval benchmark of scientific abstracts with paraphrased questions "
    "and show that hybrid lexical and dense retrieval beats either alone."
)


def test_reingest_embeds_nothing_and_changes_update_in_place(
    tmp_path: Path, settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    assistant = Assistant(settings_factory(), fake_embedder)
    corpus = write_list(tmp_path / "list.txt", [A1, A2])
    first = assistant.ingest([corpus])
    assert (first.papers_new, first.chunks_embedded, first.total_papers) == (
        2,
        first.total_chunks,
        2,
    )

    again = assistant.ingest([corpus])
    assert (again.papers_new, again.papers_unchanged, again.chunks_embedded) == (0, 2, 0)

    # A JSON record with the same abstract and a real title updates nothing but metadata.
    edited = A2.replace("small random", "tiny random")
    write_list(corpus, [A1, edited])
    changed = assistant.ingest([corpus])
    assert changed.papers_new == 1  # an id-less abstract whose text changed is a new paper
    assert assistant.stats()["papers"] == 3  # the old version stays until pruned

    pruned = assistant.ingest([corpus], prune=True)
    assert pruned.papers_pruned == 1 and pruned.chunks_embedded == 0
    assert pruned.total_papers == 2
    store = assistant.store
    assert store.count() == pruned.total_chunks


def test_external_ids_update_in_place_and_sources_accumulate(
    tmp_path: Path, settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    assistant = Assistant(settings_factory(), fake_embedder)
    record = {
        "id": "WidGet1234",
        "title": "Widgets",
        "abstract": A1,
        "site": "https://openreview.net/forum?id=WidGet1234",
    }
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(record) + "\n", "utf-8")
    assistant.ingest([path])
    record["abstract"] = A1 + " Code and data are released."
    path.write_text(json.dumps(record) + "\n", "utf-8")
    updated = assistant.ingest([path])
    assert (updated.papers_updated, updated.papers_new, updated.total_papers) == (1, 0, 1)
    [stored] = assistant.retriever.catalog.papers.values()
    assert stored.paper.abstract.endswith("Code and data are released.")

    # The same abstract in a second file is stored once and remembers both places.
    copy = tmp_path / "b.jsonl"
    copy.write_text(json.dumps(record) + "\n", "utf-8")
    both = assistant.ingest([copy])
    assert (both.papers_unchanged, both.chunks_embedded) == (1, 0)
    [stored] = assistant.retriever.catalog.papers.values()
    assert [s.split(":")[0] for s in stored.paper.sources] == [str(path), str(copy)]


def test_bad_records_are_reported_and_good_ones_kept(
    settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    assistant = Assistant(settings_factory(), fake_embedder)
    summary = assistant.ingest([FIXTURES / "copilot.json", FIXTURES / "records.csv"])
    assert summary.papers_new == 4
    assert {(Path(s.file).name, s.position) for s in summary.skipped} == {
        ("copilot.json", 2),
        ("copilot.json", 3),
        ("copilot.json", 4),
        ("copilot.json", 5),
        ("records.csv", 3),
    }
    data = summary.to_dict()
    assert set(data["skipped"][0]) == {"file", "position", "reason"}


def test_second_ingest_is_locked_out(settings_factory: SettingsFactory) -> None:
    settings = settings_factory()
    with (
        ingest_lock(settings),
        pytest.raises(IngestLocked, match="another ingest"),
        ingest_lock(settings),
    ):
        pass
    with ingest_lock(settings):  # released after use
        pass


def test_opening_with_another_embedding_model_is_an_error(
    settings_factory: SettingsFactory,
) -> None:
    settings = settings_factory()
    Store(settings, "local:all-MiniLM-L6-v2")
    with pytest.raises(StoreError, match=r"built with 'local:all-MiniLM-L6-v2\|per-paper'"):
        Store(settings, "api:text-embedding-3-small")


def synthetic_corpus(path: Path, n: int, seed: int = 7) -> Path:
    """n distinct abstracts made by shuffling the seed sentences."""
    rng = random.Random(seed)
    lines = [
        ln
        for f in sorted(BUNDLED_CORPUS.glob("*.txt"))
        for ln in f.read_text("utf-8").splitlines()[1:]
        if ln.strip()
    ]
    sentences = [s for ln in lines for s in re.split(r"(?<=\.)\s+", ln) if len(s) > 40]
    abstracts = [" ".join(rng.sample(sentences, 5)) + f" Variant {i}." for i in range(n)]
    return write_list(path, abstracts)


def _ingest_process(index: Path, corpus: Path) -> subprocess.Popen[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAG_", "OPENAI_")) or k == "RAG_CACHE_DIR"  # the test's cache
    }
    env["RAG_INGEST_BATCH"] = "64"  # several writes, so a kill can land between them
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rag.cli",
            "--index-dir",
            str(index),
            "ingest",
            str(corpus),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=index.parent,
    )


@pytest.mark.slow
def test_killed_ingest_leaves_a_consistent_index_that_a_rerun_completes(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    corpus = synthetic_corpus(tmp_path / "synthetic.txt", 300)
    index = tmp_path / "index"
    settings = Settings(_env_file=None, index_dir=index)  # type: ignore[call-arg]
    rng = random.Random(11)
    partial_counts = []
    for _ in range(3):
        proc = _ingest_process(index, corpus)
        assert proc.stderr is not None
        for line in proc.stderr:  # wait until the first batch is written
            if re.search(r": [1-9]\d*/\d+", line):
                break
        time.sleep(rng.uniform(0.0, 0.4))  # a batch of 64 takes ~0.3-1 s to embed
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        store = Store(settings, embedder.name)
        catalog = store.load_catalog()
        assert store.count() == catalog.n_chunks + len(catalog.stale_ids)
        assert len(set(catalog.ids)) == len(catalog.ids)
        partial_counts.append(len(catalog.papers))
    final = _ingest_process(index, corpus)
    out, err = final.communicate(timeout=600)
    assert final.returncode == 0, err
    summary = json.loads(out)
    assert summary["total_papers"] == 300
    store = Store(settings, embedder.name)
    catalog = store.load_catalog()
    assert store.count() == catalog.n_chunks == summary["total_chunks"]
    assert all(sp.complete for sp in catalog.papers.values())
    assert len(set(catalog.ids)) == len(catalog.ids)
    assert any(0 < n < 300 for n in partial_counts), partial_counts  # a kill landed mid-way


def test_per_paper_vectors_are_shared_by_a_papers_chunks(
    tmp_path: Path, settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    settings = settings_factory(embed_unit="paper", chunk_tokens=40, chunk_overlap=8)
    assistant = Assistant(settings, fake_embedder)
    long = " ".join([A1, A2, A3])  # ~100 tokens: three chunks of 40
    assistant.ingest([write_list(tmp_path / "list.txt", [long, A3])])
    catalog = assistant.retriever.catalog
    multi = next(sp for sp in catalog.papers.values() if sp.n_chunks > 1)
    got = assistant.store.collection.get(ids=multi.chunk_ids, include=["embeddings"])
    vectors = np.asarray(got["embeddings"])
    first = catalog.texts[catalog.ids.index(multi.chunk_ids[0])]
    assert np.allclose(vectors, vectors[0], atol=1e-6)  # one vector for the whole paper
    assert np.allclose(vectors[0], fake_embedder.embed([first])[0], atol=1e-5)
    hits = assistant.search("a retrieval benchmark of paraphrased questions", retriever="hybrid")
    assert hits[0].paper.abstract in (A3, long)
    with pytest.raises(StoreError, match="RAG_EMBED_UNIT"):
        Store(settings.model_copy(update={"embed_unit": "chunk"}), fake_embedder.name)


@pytest.mark.model  # builds the sentence-transformers model twice (5 s): never in `make check`
def test_texts_cut_shorter_make_another_embedding_model() -> None:
    short = LocalEmbedder("all-MiniLM-L6-v2", max_tokens=128)
    assert short.name == "local:all-MiniLM-L6-v2@128"
    assert short.model.max_seq_length == 128
    assert LocalEmbedder("all-MiniLM-L6-v2").name == "local:all-MiniLM-L6-v2"


def test_an_existing_index_is_opened_the_way_it_was_built(
    tmp_path: Path, settings_factory: SettingsFactory, embedder: LocalEmbedder
) -> None:
    built = settings_factory(embed_unit="chunk")  # not the default: per paper
    Assistant(built, embedder).ingest([write_list(tmp_path / "list.txt", [A1, A2])])
    defaults = settings_factory()
    assert defaults.embed_unit == "paper"
    adopted = adopt_layout(defaults)
    assert (adopted.embed_unit, adopted.embed_max_tokens) == ("chunk", embedder.max_tokens)
    reopened = Assistant(defaults)  # no embedder given: it adopts the index's layout
    assert reopened.search("widgets in screenshots")[0].paper.abstract == A1
    explicit = settings_factory(embed_unit="paper")  # what the user sets wins, and is checked
    assert adopt_layout(explicit).embed_unit == "paper"
    with pytest.raises(StoreError, match="per-paper"):
        Assistant(explicit)
    fresh = make_settings(tmp_path / "empty")
    assert adopt_layout(fresh) == fresh


@pytest.mark.parametrize("layout", ["document", "flat"])
def test_an_index_written_in_an_earlier_layout_still_loads(
    layout: str, tmp_path: Path, settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    """Before 2026-11 the text was the Chroma document; until 2026-12 every field (the
    text among them) was a metadata key of its own. Both read as the packed layout does."""
    assistant = Assistant(settings_factory(), fake_embedder)
    assistant.ingest([write_list(tmp_path / "list.txt", [A1, A2])])
    expected = assistant.store.load_catalog()
    collection = assistant.store.collection
    stored = collection.get(include=["metadatas", "embeddings"])
    assert all(set(m) == {"paper_id", PACKED_KEY} for m in stored["metadatas"])
    texts, fields = zip(*(unpacked_metadata(m) for m in stored["metadatas"]), strict=True)
    collection.delete(ids=stored["ids"])
    if layout == "document":
        collection.add(
            ids=stored["ids"],
            embeddings=stored["embeddings"],
            documents=list(texts),
            metadatas=list(fields),
        )
    else:
        metadatas = [{**f, TEXT_KEY: t} for f, t in zip(fields, texts, strict=True)]
        collection.add(ids=stored["ids"], embeddings=stored["embeddings"], metadatas=metadatas)
    catalog = assistant.store.load_catalog()
    assert sorted(sp.paper.abstract for sp in catalog.papers.values()) == sorted([A1, A2])
    assert catalog.texts == expected.texts and catalog.ids == expected.ids
    assert {pid: sp.paper for pid, sp in catalog.papers.items()} == {
        pid: sp.paper for pid, sp in expected.papers.items()
    }


def test_an_endpoint_built_index_keeps_its_unit(settings_factory: SettingsFactory) -> None:
    Store(settings_factory(embed_unit="chunk"), "api:text-embedding-3-small")
    adopted = adopt_layout(settings_factory())
    assert adopted.embed_unit == "chunk"
    assert adopted.embed_max_tokens == settings_factory().embed_max_tokens  # local only
    Store(adopted, "api:text-embedding-3-small")  # opens: same recorded model


def test_the_catalog_an_ingest_returns_is_what_chroma_reads_back(
    tmp_path: Path, settings_factory: SettingsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest that only adds papers builds its catalog in memory instead of reading
    Chroma again: field for field and row for row, it must be what Chroma holds."""
    from tests.fakes import HashEmbedder

    long = " ".join([A1, A2, A3] * 4)  # several chunks
    assistant = Assistant(settings_factory(), HashEmbedder())
    first = [FIXTURES / "copilot.json", FIXTURES / "records.jsonl"]
    second = [FIXTURES / "openreview_v2.json", write_list(tmp_path / "l.txt", [A1, long])]
    store = assistant.store
    reads: list[int] = []
    load = store.load_catalog
    monkeypatch.setattr(store, "load_catalog", lambda: reads.append(1) or load())
    for paths in (first, second):  # into an empty index, then onto a full one
        reads.clear()
        _, built = ingest(paths, store, assistant.embedder, assistant.settings)
        assert len(reads) <= 1  # the catalog before the writes, never after them
        read = load()
        assert (built.ids, built.texts, built.paper_of) == (read.ids, read.texts, read.paper_of)
        assert built.papers == read.papers
    assert any(sp.n_chunks > 1 for sp in built.papers.values())
    assert {sp.paper.title for sp in built.papers.values()} > {None}

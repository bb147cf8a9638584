"""The on-disk snapshot: a fast re-ingest and first question, never trusted blindly.

Every test checks an observable fact: which path an ingest took (the catalog read from
Chroma, the files parsed), what a later process sees after another writer, and that
search results are the same with a snapshot as without one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import pytest

import rag.ingest
import rag.retrieval.retrieve
import rag.store.columns
from rag.assistant import Assistant
from rag.config import Settings
from rag.corpus.papers import FieldMap
from rag.embedding.embed import LocalEmbedder
from rag.retrieval.retrieve import BM25Index, Filters, Retriever, TermStats
from rag.store import snapshot as snapshots
from rag.store.index import Catalog, Store, StoreError
from rag.text import surface_words
from tests.fakes import HashEmbedder

from .conftest import FIXTURES, make_settings
from .test_chroma_server import chroma_url  # noqa: F401 - the server fixture, reused
from .test_ingest import A1, A2, A3, _ingest_process, synthetic_corpus, write_list

SettingsFactory = Callable[..., Settings]


class Forbidden(AssertionError):
    """Raised by a step the fast path must skip."""


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (no `except Exception` catches it)."""


def forbid(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise Forbidden(f"{name} was called")

    monkeypatch.setattr(target, name, refuse)


def catalog_view(catalog: Catalog) -> tuple[Any, ...]:
    papers = {
        pid: (sp.paper, sp.content_hash, sp.chunk_ids, sp.n_chunks)
        for pid, sp in catalog.papers.items()
    }
    return catalog.ids, catalog.texts, catalog.paper_of, catalog.stale_ids, papers


def without_seconds(summary: Any) -> dict[str, Any]:
    data: dict[str, Any] = summary.to_dict()
    data.pop("seconds")
    return data


def snap_file(settings: Settings, kind: str) -> Path:
    if kind == "catalog":  # mapped columns, one file per stamp
        [path] = snapshots.folder(settings).glob("catalog-*.cols")
        return path
    return snapshots.folder(settings) / f"{kind}.snap"


def saved(settings: Settings, kind: str, stamp: str | None) -> Any | None:
    """What a process would read for `kind` under `stamp` (None: nothing it trusts)."""
    if kind == "catalog":
        return snapshots.read_catalog(settings, stamp)
    return snapshots.read(settings, kind, stamp)


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    """A list file, a JSONL file with ids, and a CSV with bad rows (skips to repeat)."""
    listed = write_list(tmp_path / "list.txt", [A1, A2])
    records = tmp_path / "more.jsonl"
    records.write_text(
        json.dumps({"id": "RetBench01", "title": "A retrieval benchmark", "abstract": A3}) + "\n",
        "utf-8",
    )
    csv = tmp_path / "records.csv"
    shutil.copy(FIXTURES / "records.csv", csv)
    return [listed, records, csv]


def test_unchanged_reingest_takes_the_fast_path_and_reports_what_a_full_run_would(
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory()
    assistant = Assistant(settings, fake_embedder)
    first = assistant.ingest(corpus)
    assert first.papers_new == first.total_papers == 5 and first.skipped
    stamp = assistant.store.stamp()
    assert snapshots.is_clean(stamp)
    meta = assistant.store.collection.metadata or {}
    assert meta["embed_model"] == assistant.store.embed_model and meta["rag_stamp"] == stamp
    hnsw = assistant.store.collection.configuration_json["hnsw"]
    assert (hnsw["space"], hnsw["ef_construction"]) == ("cosine", 40)  # kept through stamps

    with monkeypatch.context() as patch:  # neither Chroma's catalog nor the files are read
        forbid(patch, Store, "load_catalog")
        forbid(patch, rag.ingest, "read_papers")
        summary, catalog = rag.ingest.ingest(corpus, assistant.store, fake_embedder, settings)
    assert (summary.papers_unchanged, summary.chunks_embedded, summary.papers_new) == (5, 0, 0)
    assert assistant.store.stamp() == stamp  # nothing written
    assert catalog_view(catalog) == catalog_view(assistant.store.load_catalog())

    shutil.rmtree(snapshots.folder(settings))  # the normal path reports the same
    normal = assistant.ingest(corpus)
    assert without_seconds(normal) == without_seconds(summary)
    with monkeypatch.context() as patch:  # and leaves the snapshot for the next one
        forbid(patch, rag.ingest, "read_papers")
        again, _ = rag.ingest.ingest(corpus, assistant.store, fake_embedder, settings)
    assert without_seconds(again) == without_seconds(summary)

    # Another Store on the same index (another process) takes the fast path too.
    with monkeypatch.context() as patch:
        forbid(patch, Store, "load_catalog")
        forbid(patch, rag.ingest, "read_papers")
        other = Assistant(settings, fake_embedder)
        assert without_seconds(other.ingest(corpus)) == without_seconds(summary)
        assert other.stats()["papers"] == 5


def test_changed_content_settings_or_fields_take_the_normal_path(
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assistant = Assistant(settings_factory(), fake_embedder)
    assistant.ingest(corpus)
    calls: list[int] = []
    real_read = rag.ingest.read_papers
    monkeypatch.setattr(rag.ingest, "read_papers", lambda *a: (calls.append(1), real_read(*a))[1])

    # Same size, same mtime, one letter changed: only the content hash tells.
    listed = corpus[0]
    stat = listed.stat()
    text = listed.read_text("utf-8")
    listed.write_text(text.replace("small random", "smell random"), "utf-8")
    os.utime(listed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert listed.stat().st_size == stat.st_size
    changed = assistant.ingest(corpus)
    assert calls and changed.papers_new == 1 and changed.chunks_embedded > 0

    calls.clear()
    assert assistant.ingest(corpus).chunks_embedded == 0 and not calls  # fast again

    for settings in (
        settings_factory(chunk_tokens=64),
        settings_factory(chunk_overlap=8),
    ):
        calls.clear()
        summary = Assistant(settings, fake_embedder).ingest(corpus)
        assert calls and (summary.papers_unchanged, summary.total_papers) == (5, 6)

    calls.clear()
    assistant.ingest(corpus, fields=FieldMap.with_overrides({"abstract": "summary"}))
    assert calls

    calls.clear()
    assistant.ingest(corpus[:2])  # another file list
    assert calls


def test_prune_takes_the_fast_path_only_while_every_source_is_there(
    tmp_path: Path, settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    assistant = Assistant(settings_factory(), fake_embedder)
    gone = write_list(tmp_path / "gone.txt", [A3])
    assistant.ingest([gone])
    kept = write_list(tmp_path / "kept.txt", [A1, A2])
    assert assistant.ingest([kept], prune=True).total_papers == 3
    fast = assistant.ingest([kept], prune=True)
    assert (fast.papers_unchanged, fast.papers_pruned, fast.total_papers) == (2, 0, 3)

    gone.unlink()  # a source outside this call's files went: pruning must look again
    pruned = assistant.ingest([kept], prune=True)
    assert (pruned.papers_pruned, pruned.total_papers) == (1, 2)


def test_a_stamp_another_writer_set_makes_the_snapshot_stale(
    tmp_path: Path,
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory()
    first = Assistant(settings, fake_embedder)
    first.ingest(corpus[:1])
    first.search("widgets in screenshots", retriever="bm25")
    old = json.loads(snap_file(settings, "retrieval").read_bytes().split(b"\n")[1])["stamp"]

    # Another writer that leaves no snapshot (e.g. on another machine).
    with monkeypatch.context() as patch:
        patch.setattr(snapshots, "write", lambda *a, **k: False)
        Assistant(settings, fake_embedder).ingest([corpus[1]])
    assert Assistant(settings, fake_embedder).store.stamp() != old

    later = Assistant(settings, fake_embedder)
    assert later.stats()["papers"] == 3
    [hit, *_] = later.search("retrieval benchmark of scientific abstracts", retriever="bm25")
    assert hit.paper.paper_id == "RetBench01"
    new = later.store.stamp()
    assert saved(settings, "catalog", new) is not None  # rebuilt and saved
    assert saved(settings, "retrieval", new) is not None
    assert saved(settings, "catalog", old) is None

    # A writer that changes the chunks but not the stamp (an older rag): the chunk count
    # no longer matches the snapshot, which is ignored.
    store = Store(settings, fake_embedder.name)
    catalog = store.load_catalog()
    store.delete(catalog.papers["RetBench01"].chunk_ids)
    assert store.stamp() == new
    assert snapshots.load_catalog(store, new) is None
    assert Assistant(settings, fake_embedder).stats()["papers"] == 2


@pytest.mark.parametrize("kind", ["catalog", "retrieval", "manifest"])
@pytest.mark.parametrize("damage", ["truncate", "garble", "empty", "old-format"])
def test_a_damaged_snapshot_is_ignored_and_rewritten(
    kind: str,
    damage: str,
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory()
    assistant = Assistant(settings, fake_embedder)
    assistant.ingest(corpus)
    expected = [(h.paper.paper_id, h.score) for h in assistant.search("gradient descent")]
    path = snap_file(settings, kind)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "garble":
        middle = len(data) - 40
        path.write_bytes(
            data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 8]) + data[middle + 8 :]
        )
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        magic, header, body = data.split(b"\n", 2)
        fields = json.loads(header)
        fields["format"] = snapshots.FORMAT + 1
        path.write_bytes(magic + b"\n" + json.dumps(fields).encode() + b"\n" + body)
    assert saved(settings, kind, assistant.store.stamp()) is None

    calls: list[int] = []
    real_read = rag.ingest.read_papers
    monkeypatch.setattr(rag.ingest, "read_papers", lambda *a: (calls.append(1), real_read(*a))[1])
    again = Assistant(settings, fake_embedder)
    summary = again.ingest(corpus)
    assert summary.chunks_embedded == 0 and summary.total_papers == 5
    assert bool(calls) == (kind != "retrieval")  # no manifest or catalog: the normal path
    assert [(h.paper.paper_id, h.score) for h in again.search("gradient descent")] == expected
    assert saved(settings, kind, again.store.stamp()) is not None  # rewritten


def test_a_snapshot_loaded_retriever_finds_what_a_fresh_one_finds(
    tmp_path: Path, hashed_index: Path, fake_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    settings = make_settings(index)
    shutil.rmtree(snapshots.folder(settings), ignore_errors=True)
    store = Store(settings, fake_embedder.name)
    fresh = Retriever(store, fake_embedder, settings)
    questions = [
        ("Which papers improve speculative decoding?", Filters()),
        ("low-rank adapters for fine-tuning", Filters()),
        ("reinforcement learning robust to distribution shift", Filters(year=2026)),
        ("graph neural networks", Filters(venue="ICLR")),
        ("the the of", Filters()),
    ]
    modes = ["hybrid", "bm25", "dense"]

    def run(retriever: Retriever) -> list[Any]:
        return [
            [
                (h.paper.paper_id, h.score, h.dense_similarity, h.bm25_score, h.chunk_indexes)
                for h in retriever.search(q, 8, f, mode)
            ]
            for q, f in questions
            for mode in modes
        ]

    expected = run(fresh)  # built from Chroma, and saved
    assert snap_file(settings, "catalog").exists() and snap_file(settings, "retrieval").exists()
    forbid(monkeypatch, Store, "load_catalog")
    forbid(monkeypatch, bm25s.BM25, "index")
    loaded = Retriever(Store(settings, fake_embedder.name), fake_embedder, settings)
    assert run(loaded) == expected
    terms = loaded.terms
    assert (terms.n, terms.df) == (fresh.terms.n, fresh.terms.df)
    assert loaded.terms.coverage("speculative decoding", "speculative decoding drafts") == (
        fresh.terms.coverage("speculative decoding", "speculative decoding drafts")
    )
    # The typo table was saved with them: a new process reads it, no pass over abstracts.
    assert snap_file(settings, "spelling").exists()
    forbid(monkeypatch, rag.retrieval.retrieve, "surface_words")
    assert loaded.spelling_counts() == fresh.spelling_counts() and loaded.spelling_counts()
    assert loaded.correct("speculatve decoding") == fresh.correct("speculatve decoding")


def test_bm25_and_term_stats_round_trip_their_state() -> None:
    texts = ["Speculative decoding with draft models.", "LoRA adapters of low rank.", ""]
    index = BM25Index(texts)
    again = BM25Index.from_state(index.to_state(), len(texts))
    for query in ("speculative drafts", "adapter rank", "nothing known"):
        assert index.scores(query).tolist() == again.scores(query).tolist()
    assert BM25Index.from_state(BM25Index([]).to_state(), 0).scores("x").size == 0
    with pytest.raises(ValueError):
        BM25Index.from_state(index.to_state(), len(texts) + 1)
    with pytest.raises(ValueError):
        BM25Index.from_state({**index.to_state(), "bm25s": "0.0.0"}, len(texts))
    stats = TermStats.of(texts)
    copy = TermStats.from_state(stats.to_state(), stats.n)
    assert (copy.n, copy.df) == (stats.n, stats.df)
    with pytest.raises(ValueError):
        TermStats.from_state(stats.to_state(), stats.n + 1)


def test_a_new_snapshot_reads_the_papers_once_for_what_each_table_would_read(
    fake_seeded: Assistant,
) -> None:
    """`_scan`'s one pass gives the term statistics and the name, acronym and spelling
    tables their own passes give (a fresh retriever lazily makes each of those)."""
    built = fake_seeded.retriever
    built._scan(built.catalog)
    scanned = (built._names, built._long_forms, built._written, built._spelling)
    lazy = Retriever(built.store, built.embedder, built.settings)
    lazy._snapshot, lazy._catalog = None, built.catalog  # no snapshot: every table computed
    papers = list(built.catalog.papers.values())
    texts = [f"{sp.paper.label} {sp.paper.abstract}" for sp in papers]
    with_stems = TermStats.of(texts)
    assert built._scan(built.catalog).df == with_stems.df and with_stems.n == len(papers)
    assert scanned[0] == rag.retrieval.retrieve.names_written(sp.paper.abstract for sp in papers)
    assert lazy._acronyms() == scanned[1] and lazy._written == scanned[2]
    spelled = [w for sp in papers for w in surface_words(sp.paper.abstract) if w.isalpha()]
    assert scanned[3] == Counter(spelled) and scanned[3]["decoding"] > 1
    assert "clip" in scanned[0] and scanned[1]  # the seeds hold names and acronyms


def test_an_ingest_in_the_same_process_refreshes_the_state(
    corpus: list[Path], settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    settings = settings_factory()
    assistant = Assistant(settings, fake_embedder)
    assistant.ingest(corpus[:1])
    question = "retrieval benchmark of scientific abstracts"
    assert assistant.search(question, retriever="bm25")[0].paper.paper_id != "RetBench01"
    before = assistant.store.stamp()
    assistant.ingest(corpus[1:2])
    after = assistant.store.stamp()
    assert after != before and assistant.retriever.catalog.stamp == after
    [hit, *_] = assistant.search(question, retriever="bm25")
    assert hit.paper.paper_id == "RetBench01"
    assert assistant.retriever.terms.n == 3
    assert saved(settings, "retrieval", after) is not None


def test_an_interrupted_ingest_leaves_a_stamp_no_snapshot_matches(
    tmp_path: Path,
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory(ingest_batch=1)  # a write per paper
    assistant = Assistant(settings, fake_embedder)
    stored = assistant.ingest(corpus[:1]).total_chunks
    clean = assistant.store.stamp()
    bigger = write_list(tmp_path / "bigger.txt", [A3, A1 + " Extended.", A2 + " Extended."])

    # Set the stamp, write one batch of chunks, die before finishing (as SIGKILL would).
    real_write = Store.write
    writes: list[int] = []

    def write_once(self: Store, items: Any, vectors: Any) -> None:
        if writes:
            raise Killed
        writes.append(len(items))
        real_write(self, items, vectors)

    monkeypatch.setattr(Store, "write", write_once)
    with pytest.raises(Killed):
        assistant.ingest([bigger])
    monkeypatch.setattr(Store, "write", real_write)

    store = Store(settings, fake_embedder.name)
    stamp = store.stamp()
    assert stamp != clean and stamp is not None and not snapshots.is_clean(stamp)
    for kind in ("catalog", "retrieval", "manifest"):
        assert saved(settings, kind, stamp) is None
        if kind == "catalog":  # never saved under it
            assert not snapshots.write_catalog(settings, stamp, Catalog())
        else:
            assert not snapshots.write(settings, kind, stamp, {"x": 1})
    files = {p.name: p.stat().st_mtime_ns for p in snapshots.folder(settings).iterdir()}
    reader = Assistant(settings, fake_embedder)  # sees what Chroma holds, and saves nothing
    assert reader.stats()["chunks"] == store.load_catalog().n_chunks == stored + writes[0]
    assert reader.retriever.catalog.stamp is None
    reader.search("widgets")
    assert reader.store.stamp() == stamp
    assert {p.name: p.stat().st_mtime_ns for p in snapshots.folder(settings).iterdir()} == files

    rerun = Assistant(settings, fake_embedder).ingest([bigger])  # completes the work
    assert rerun.total_papers == 5 and snapshots.is_clean(
        Store(settings, fake_embedder.name).stamp()
    )
    assert Assistant(settings, fake_embedder).ingest([bigger]).papers_unchanged == 3


@pytest.mark.slow
def test_sigkill_mid_ingest_leaves_a_stamp_no_snapshot_matches(
    tmp_path: Path, settings_factory: SettingsFactory, embedder: LocalEmbedder
) -> None:
    settings = settings_factory()
    index = Path(settings.index_dir)
    Assistant(settings, embedder).ingest([write_list(tmp_path / "one.txt", [A1])])
    clean = Store(settings, embedder.name).stamp()
    corpus = synthetic_corpus(tmp_path / "synthetic.txt", 300)  # two batches
    proc = _ingest_process(index, corpus)
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until a batch is written
        if re.search(r": [1-9]\d*/\d+", line):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    store = Store(settings, embedder.name)
    stamp = store.stamp()
    assert stamp != clean and not snapshots.is_clean(stamp)
    assert snapshots.load_catalog(store, stamp) is None
    assert saved(settings, "catalog", clean) is not None  # there, but stale
    reader = Assistant(settings, embedder)
    assert reader.stats()["chunks"] == store.count()


def test_an_unwritable_snapshot_folder_costs_only_speed(
    corpus: list[Path],
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory()
    folder = snapshots.folder(settings)
    real_replace = os.replace

    def full_disk(source: Any, target: Any) -> None:
        if Path(target).parent == folder:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", full_disk)
    assistant = Assistant(settings, fake_embedder)
    summary = assistant.ingest(corpus)
    assert summary.total_papers == 5
    assert assistant.search("gradient descent convergence")
    assert not list(folder.glob("*"))  # no temp file left behind
    assert assistant.ingest(corpus).papers_unchanged == 5  # the normal path, still right
    monkeypatch.setattr(os, "replace", real_replace)

    # A file where the snapshot folder should be: nothing can be saved, all still works.
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.parent.write_text("not a folder")
    again = Assistant(settings, fake_embedder)
    assert again.ingest(corpus).papers_unchanged == 5
    assert again.search("gradient descent convergence")


def test_the_stamp_keeps_the_other_collection_metadata(
    settings_factory: SettingsFactory, fake_embedder: HashEmbedder
) -> None:
    settings = settings_factory()
    store = Store(settings, fake_embedder.name)
    assert store.stamp() is None
    store.set_stamp("abc")
    assert store.stamp() == "abc" and Store(settings, fake_embedder.name).stamp() == "abc"
    assert (store.collection.metadata or {})["embed_model"] == store.embed_model
    with pytest.raises(StoreError, match="built with"):
        Store(settings, "api:text-embedding-3-small")


@pytest.mark.slow
def test_server_mode_each_machine_sees_the_others_writes(
    chroma_url: str,  # noqa: F811 - the imported fixture
    tmp_path: Path,
    corpus: list[Path],
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def machine(name: str) -> Settings:
        return make_settings(tmp_path / name, chroma_url=chroma_url, collection="snapshot-test")

    a, b = machine("a"), machine("b")
    Assistant(a, fake_embedder).ingest(corpus[:1])
    reader = Assistant(b, fake_embedder)
    assert reader.stats()["papers"] == 2
    reader.search("widgets")
    assert snap_file(b, "catalog").exists() and snap_file(b, "retrieval").exists()

    Assistant(a, fake_embedder).ingest(corpus[1:2])  # machine a writes; b's snapshot is stale
    later = Assistant(b, fake_embedder)
    assert later.stats()["papers"] == 3
    [hit, *_] = later.search("retrieval benchmark of scientific abstracts", retriever="bm25")
    assert hit.paper.paper_id == "RetBench01"
    similarity = later.search(A3, retriever="dense")[0].dense_similarity
    assert similarity is not None and similarity > 0.6  # still cosine after the stamp

    again = Assistant(b, fake_embedder).ingest(corpus[:2])  # b's own ingest then goes fast
    forbid(monkeypatch, Store, "load_catalog")
    forbid(monkeypatch, rag.ingest, "read_papers")
    fast = Assistant(b, fake_embedder).ingest(corpus[:2])
    assert without_seconds(fast) == without_seconds(again)


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(
    settings_factory: SettingsFactory,
) -> None:
    settings = settings_factory()
    folder = snapshots.folder(settings)
    folder.mkdir(parents=True)
    old = folder / ".catalog-stamp0.cols.1.dead.tmp"  # another stamp's, killed
    recent = folder / ".catalog-stamp1.cols.2.live.tmp"
    for path in (old, recent):
        path.write_bytes(b"partial")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert snapshots.write_catalog(settings, "stamp1", Catalog())
    assert not old.exists() and recent.exists()  # a live writer's file is left alone
    assert saved(settings, "catalog", "stamp1").n_chunks == 0
    assert saved(settings, "catalog", "stamp2") is None


def test_an_ingest_that_only_adds_papers_appends_to_the_saved_catalog(
    corpus: list[Path],
    tmp_path: Path,
    settings_factory: SettingsFactory,
    fake_embedder: HashEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """New papers onto a saved catalog: its file is extended (nothing stored is decoded
    or re-encoded, Chroma is not read back) and holds what Chroma holds."""
    settings = settings_factory()
    assistant = Assistant(settings, fake_embedder)
    assistant.ingest(corpus)
    added = tmp_path / "added.jsonl"
    records = [
        {"id": "new-1", "title": "A", "abstract": A1 + " Again.", "venue": "NeurIPS", "year": 2031},
        {"id": "new-2", "abstract": A2 + " Once more.", "venue": "ICLR", "year": 2026},
    ]
    added.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    with monkeypatch.context() as patch:
        forbid(patch, Store, "load_catalog")
        forbid(patch, snapshots, "write_columns")  # the whole-catalog writer
        forbid(patch, rag.store.columns, "decode_record")  # no stored paper decoded
        summary, catalog = rag.ingest.ingest([added], assistant.store, fake_embedder, settings)
    assert (summary.papers_new, summary.papers_unchanged) == (2, 0)
    assert isinstance(catalog, rag.store.columns.MappedCatalog)
    assert catalog.stamp == assistant.store.stamp()
    stored = assistant.store.load_catalog()
    assert catalog_view(catalog) == catalog_view(stored)
    assert catalog.facets()[0] == stored.facets()[0]  # the new venue appended as a code
    assert list(catalog.facets()[1]) == list(stored.facets()[1])
    assert list(catalog.row_papers()) == list(stored.row_papers())
    assert catalog.by_hash() == stored.by_hash() and catalog.all_complete()
    # a new process opens the appended file and answers from it, the new papers in scope
    fresh = Assistant(settings, fake_embedder)
    hits = fresh.retriever.search("sentences", top_k=10, filters=Filters(venue="NeurIPS"))
    assert [h.paper.paper_id for h in hits] == ["added/new-1"]
    again, _ = rag.ingest.ingest([*corpus, added], assistant.store, fake_embedder, settings)
    assert (again.papers_new, again.papers_unchanged, again.chunks_embedded) == (0, 7, 0)


def test_prefetch_reads_the_mapped_files_of_the_current_stamp(
    fake_factory: Callable[..., Assistant], monkeypatch: pytest.MonkeyPatch
) -> None:
    assistant = fake_factory()
    assistant.search("speculative decoding")  # the retrieval and vector snapshots exist
    assistant.retriever.stored_vectors()
    settings, stamp = assistant.settings, assistant.retriever.catalog.stamp
    paths = snapshots.prefetched_paths(settings, stamp)
    kinds = [p.name.split(f"-{stamp}")[0] for p in paths]
    assert kinds == ["bm25-indptr", "bm25-indices", "bm25-data", "catalog", "vectors"]
    read: Counter[str] = Counter()
    real_open = Path.open

    def counted_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        file = real_open(self, *args, **kwargs)
        if self in paths:
            read[self.name] += self.stat().st_size
        return file

    monkeypatch.setattr(Path, "open", counted_open)
    thread = assistant.prefetch()
    assert thread is not None
    thread.join(timeout=30)
    assert set(read) == {p.name for p in paths}
    off = fake_factory(prefetch=False)
    assert off.prefetch() is None
    assert snapshots.prefetch(settings, "no-such-stamp") is None

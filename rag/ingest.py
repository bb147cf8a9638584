"""Files -> papers -> chunks -> embeddings in the store, incrementally and resumably.

The diff against the catalog decides each paper's fate: new or changed papers are chunked
and embedded; unchanged ones cost nothing (a re-ingest embeds 0 chunks); a paper whose
only change is a new source gets a metadata update. A paper with missing chunks (a killed
ingest) is redone. One ingest at a time per index: a lock file makes a second one stop
with a clear message instead of interleaving writes.

Each ingest that writes changes the collection's version stamp before its first write and
after its last, then saves the catalog and a manifest of its inputs (rag/store/snapshot.py).
Re-ingesting the same unchanged files then reads neither Chroma nor the files (~0.5 s
instead of ~12 s on 22k papers); a changed index or input takes the normal path.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rag.config import Settings
from rag.corpus.chunk import Chunker
from rag.corpus.load import expand_paths, read_records
from rag.corpus.papers import FieldMap, dedupe, paper_from_record
from rag.corpus.titles import TitleJob, needs_title, title_papers
from rag.embedding.embed import Embedder
from rag.errors import RagError
from rag.store import snapshot as snapshots
from rag.store.columns import MappedCatalog
from rag.store.index import Catalog, Store, StoredPaper, embedded_text
from rag.types import Chunk, IngestSummary, Paper, Skip, SourceRef

Progress = Callable[[int, int], None]  # (papers embedded so far, papers to embed)
TITLE_BATCH = 32  # generated titles per metadata write (a killed ingest keeps what was written)


class IngestLocked(RagError, RuntimeError):
    """Another ingest holds the index lock."""


@contextmanager
def ingest_lock(settings: Settings) -> Iterator[None]:
    """Hold an exclusive lock on the index folder for the duration of an ingest."""
    folder = Path(settings.index_dir)
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".ingest.lock", "a+")  # noqa: SIM115 - held for the block
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise IngestLocked(
            f"another ingest is running on {folder} ({holder}); wait for it to finish"
        ) from None
    handle.truncate(0)
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def read_papers(
    paths: Iterable[Path], fields: FieldMap, summary: IngestSummary
) -> Iterator[Paper | Skip]:
    """Read every file into deduplicated papers; count files and records as they pass."""

    def records() -> Iterator[Paper | Skip]:
        for path in paths:
            summary.files += 1
            for record in read_records(path):
                if isinstance(record, Skip):
                    yield record
                    continue
                summary.records += 1
                yield paper_from_record(record, fields)

    merged: list[int] = []
    yield from dedupe(records(), merged)
    summary.duplicates_merged = len(merged)


def ingest(
    paths: Iterable[str | Path],
    store: Store,
    embedder: Embedder,
    settings: Settings,
    fields: FieldMap | None = None,
    prune: bool = False,
    progress: Progress | None = None,
    titles: TitleJob | None = None,
) -> tuple[IngestSummary, Catalog | MappedCatalog]:
    """Bring the store in step with the given files; return what changed and the catalog.

    With `titles`, papers stored with neither a real nor a generated title are then given
    one by the endpoint (rag/corpus/titles.py), those of earlier ingests included.

    Fast path: when the files (size, mtime, content), the settings and the code are those
    of the last ingest, and the index has not changed since (its stamp still matches that
    ingest's snapshot), nothing is parsed or diffed: its summary is repeated, every paper
    unchanged. Any doubt takes the normal path. See rag/store/snapshot.py for the stamp protocol.
    """
    started = time.perf_counter()
    summary = IngestSummary()
    files = expand_paths(paths)
    fields = fields or FieldMap()
    with ingest_lock(settings):
        stamp = store.stamp()
        if not snapshots.is_clean(stamp):  # a new index, or one a killed ingest left
            stamp = snapshots.new_stamp()
            store.set_stamp(stamp)
        assert stamp is not None
        inputs = snapshots.inputs_of(files, fields.names, settings, store.embed_model)
        saved = snapshots.open_saved_catalog(store, stamp)
        if titles and isinstance(saved, MappedCatalog):
            saved = saved.materialize()  # titling edits stored papers in place
        if (
            saved is not None
            and not (titles and any(needs_title(sp.paper) for sp in saved.papers.values()))
            and _replay(snapshots.load_manifest(settings, stamp), inputs, prune, saved, summary)
        ):
            return _finish(summary, saved, started), saved
        from_snapshot = saved is not None
        catalog = store.load_catalog() if saved is None else saved
        catalog.stamp = catalog.stamp or stamp
        plan = _Plan(catalog, summary)
        for item in read_papers(files, fields, summary):
            if isinstance(item, Skip):
                summary.skipped.append(item)
            else:
                plan.add(item)
        if prune:
            plan.prune({str(f) for f in files})
        untitled = [p for p in plan.stored_after() if needs_title(p)] if titles else []
        changed = bool(plan.embed or plan.relabel or plan.delete or untitled)
        if changed:  # before the first write: a killed ingest leaves a stamp nothing matches
            store.set_stamp(snapshots.new_stamp(writing=True))
        chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
        per_paper = settings.embed_unit == "paper"
        written = _apply(
            plan, store, embedder, chunker, summary, progress, per_paper, settings.ingest_batch
        )
        if titles and untitled:
            _write_titles(untitled, titles, plan, store, chunker, summary)
        final: Catalog | MappedCatalog = catalog
        if changed:  # after the last write
            stamp = snapshots.new_stamp()
            store.set_stamp(stamp)
            # Only new papers written: the catalog grows by them as Chroma would read it
            # back (22k papers: ~2.5 s less), an opened file by its bytes and the new
            # papers' (rag/store/columns.py); anything else is read back from Chroma.
            if not plan.appends_only:
                final = store.load_catalog()
            elif isinstance(catalog, MappedCatalog):
                added = _appended(Catalog(labels=catalog.labels, stamp=stamp), written)
                final = snapshots.append_catalog(store, catalog, added) or store.load_catalog()
            else:
                final = _appended(catalog, written)
            final.stamp = stamp
        if isinstance(final, Catalog) and (changed or not from_snapshot):
            snapshots.save_catalog(store, final)
        if plan.distinct:  # else a re-run may not repeat this one: leave it the normal path
            snapshots.save_manifest(store, stamp, _manifest(inputs, prune, summary))
    return _finish(summary, final, started), final


def _finish(
    summary: IngestSummary, catalog: Catalog | MappedCatalog, started: float
) -> IngestSummary:
    summary.total_papers = len(catalog.papers)
    summary.total_chunks = catalog.n_chunks
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def _manifest(inputs: snapshots.Inputs, prune: bool, summary: IngestSummary) -> snapshots.Manifest:
    return snapshots.Manifest(
        inputs=inputs,
        prune=prune,
        files=summary.files,
        records=summary.records,
        duplicates_merged=summary.duplicates_merged,
        papers_seen=summary.papers_new + summary.papers_updated + summary.papers_unchanged,
        skipped=list(summary.skipped),
    )


def _replay(
    manifest: snapshots.Manifest | None,
    inputs: snapshots.Inputs,
    prune: bool,
    catalog: Catalog | MappedCatalog,
    summary: IngestSummary,
) -> bool:
    """Fill in what a re-run over unchanged inputs would report; False when in any doubt."""
    if manifest is None or manifest.inputs != inputs:
        return False
    if prune and not (manifest.prune and _other_sources_exist(catalog, inputs)):
        return False  # pruning again could drop papers whose files went since
    if catalog.stale_ids or not catalog.all_complete():
        return False  # left over by a crash: the normal path cleans up
    summary.files = manifest.files
    summary.records = manifest.records
    summary.duplicates_merged = manifest.duplicates_merged
    summary.papers_unchanged = manifest.papers_seen
    summary.skipped = list(manifest.skipped)
    return True


def _other_sources_exist(catalog: Catalog | MappedCatalog, inputs: snapshots.Inputs) -> bool:
    ingested = {path for path, *_ in inputs.files}
    named = {SourceRef.parse(s).file for sp in catalog.papers.values() for s in sp.paper.sources}
    return all(Path(name).exists() for name in named - ingested)


class _Plan:
    """What to do with each incoming paper, decided against the catalog."""

    def __init__(self, catalog: Catalog | MappedCatalog, summary: IngestSummary) -> None:
        self.catalog = catalog
        self.summary = summary
        # what each incoming paper is looked up in: sets and dicts (an opened file's from
        # its id and hash columns, ~1 s a million), a stored paper decoded only when found
        self.stored: Collection[str] = (
            set(catalog.paper_ids) if isinstance(catalog, MappedCatalog) else catalog.papers
        )
        self.by_hash = catalog.by_hash()
        self.rewrites = False  # a stored paper is embedded again
        self.embed: list[Paper] = []
        self.relabel: list[Paper] = []
        self.delete: list[str] = list(catalog.stale_ids)
        self.pruned: set[str] = set()  # stored papers left with no source: deleted
        self.seen: set[str] = set()
        self.distinct = True  # no two incoming papers landed on one stored id

    def add(self, paper: Paper) -> None:
        # The same abstract stored under another id (e.g. first seen without an external
        # id) keeps its stored id: ids stay stable across re-ingest.
        pid = (
            paper.paper_id
            if paper.paper_id in self.stored
            else self.by_hash.get(paper.content_hash, paper.paper_id)
        )
        paper.paper_id = pid
        self.distinct = self.distinct and pid not in self.seen
        self.seen.add(pid)
        stored = self.catalog.papers[pid] if pid in self.stored else None
        if stored is None:
            self.summary.papers_new += 1
            self.embed.append(paper)
            return
        paper.sources = _union(stored.paper.sources, paper.sources)
        if stored.content_hash == paper.content_hash and stored.paper.generated_title is not None:
            paper.generated_title = stored.paper.generated_title  # same abstract: still fits
            paper.label = paper.title or paper.generated_title or paper.label
        if stored.content_hash != paper.content_hash:
            self.summary.papers_updated += 1
            self.embed.append(paper)
            self.rewrites = True
            self.delete.extend(stored.chunk_ids)  # new ids overwrite; leftovers go
        elif not stored.complete:
            self.summary.papers_new += 1  # redo a paper a killed ingest left half-written
            self.embed.append(paper)
            self.rewrites = True
        else:
            self.summary.papers_unchanged += 1
            if _visible_fields(paper) != _visible_fields(stored.paper):
                self.relabel.append(paper)

    def prune(self, files: set[str]) -> None:
        """Drop sources in the ingested files that no longer hold the paper, or whose file
        is gone; delete papers left with no source."""
        for pid, stored in self.catalog.papers.items():
            if pid in self.seen:
                continue
            kept = [
                s
                for s in stored.paper.sources
                if (file := SourceRef.parse(s).file) not in files and Path(file).exists()
            ]
            if kept == stored.paper.sources:
                continue
            if kept:
                stored.paper.sources = kept
                self.relabel.append(stored.paper)
            else:
                self.summary.papers_pruned += 1
                self.pruned.add(pid)
                self.delete.extend(stored.chunk_ids)

    @property
    def appends_only(self) -> bool:
        """Tell whether the plan only adds papers the catalog does not hold."""
        return not self.delete and not self.relabel and not self.rewrites

    def stored_after(self) -> list[Paper]:
        """Every paper the store holds once the plan is applied: stored ones (as updated)
        in their stored order, then new ones."""
        after = {pid: sp.paper for pid, sp in self.catalog.papers.items() if pid not in self.pruned}
        after.update((p.paper_id, p) for p in [*self.embed, *self.relabel])
        return list(after.values())


def _union(old: list[str], new: list[str]) -> list[str]:
    return list(dict.fromkeys([*old, *new]))


def _visible_fields(paper: Paper) -> tuple[object, ...]:
    return (
        paper.sources,
        paper.label,
        paper.venue,
        paper.year,
        paper.status,
        paper.area,
        paper.keywords,
        paper.authors,
        paper.site,
        paper.tldr,
    )


def _apply(
    plan: _Plan,
    store: Store,
    embedder: Embedder,
    chunker: Chunker,
    summary: IngestSummary,
    progress: Progress | None,
    per_paper: bool = False,
    batch_texts: int = 512,
) -> list[tuple[Paper, list[Chunk]]]:
    """Embed and write in batches of whole papers; then metadata updates and deletions.
    Returns the papers written with their chunks, in write order.

    A batch is at most `batch_texts` texts to embed (RAG_INGEST_BATCH; 512: ~200 KB of
    text, ~1.5 s on 2 cores), smaller first and last (`round_size`). Each upsert costs a
    share of its own beside its rows (2,052 papers, texts a batch -> ingest_vs_raw: 128 ->
    0.79, 256 -> 0.87, 512 -> 0.89, 1,024 -> 0.89, medians of 4 runs, before the rounds
    were sized).

    With `per_paper`, each paper is embedded once (title + its first chunk, which the model
    cuts at its max tokens) and its chunks share that vector."""
    total = len(plan.embed)
    work: list[tuple[Paper, list[Chunk]]] = []
    if progress and total:
        progress(0, total)
    # Three stages at once: this thread chunks a batch while the model embeds the one
    # before it and the writer stores the one before that (chunking all papers first
    # kept a core idle: ~0.4 s per 2,000 papers). The model stage takes the next batch
    # while one is running: its tokens and batches queue behind the running ones on the
    # embedder's threads, so no core waits at a round's end (2,052 papers: the model's
    # threads sat 2.0 core-seconds between batches, now 0.06).
    with _Writer(store) as writer, ThreadPoolExecutor(2, thread_name_prefix="rag-model") as model:
        in_flight: tuple[list[tuple[Paper, Chunk]], Future[np.ndarray], int] | None = None
        batch: list[tuple[Paper, Chunk]] = []
        texts = flushed = 0  # texts in this batch; papers in those before it

        def hand_on() -> None:
            """The batch in flight, once embedded, to the writer."""
            if in_flight is not None:
                items, vectors, done = in_flight
                writer.put(items, vectors.result())
                summary.chunks_embedded += len(items)
                if progress:
                    progress(done, total)

        def flush() -> None:
            nonlocal in_flight, batch, texts, flushed
            submitted = (batch, model.submit(_vectors, embedder, batch, per_paper), len(work))
            hand_on()
            in_flight, batch, texts, flushed = submitted, [], 0, len(work)

        for paper in plan.embed:
            chunks = chunker.split(paper)
            work.append((paper, chunks))
            batch.extend((paper, c) for c in chunks)
            texts += 1 if per_paper else len(chunks)
            if texts >= round_size(flushed, total, batch_texts):
                flush()
        if batch:
            flush()
        hand_on()
    keep = {c.chunk_id for _, chunks in work for c in chunks}
    for paper in plan.relabel:
        stored_ids = set(plan.catalog.papers[paper.paper_id].chunk_ids)
        store.update_metadata(
            [(paper, c) for c in chunker.split(paper) if c.chunk_id in stored_ids]
        )
    stale = [cid for cid in plan.delete if cid not in keep]
    store.delete(stale)
    summary.chunks_deleted = len(stale)
    return work


FIRST_ROUND = 64  # texts in an ingest's first embed+write round


def round_size(done: int, total: int, cap: int) -> int:
    """Texts in the next round, after `done` of `total` papers: the first round small (the
    model starts while later papers are still being chunked), each then as large as all
    before it, up to `cap`; near the end half of what is left, so the last write, the one
    no embedding overlaps, is short. 2,052 papers at cap 512: 64, 64, 128, 256, 512, 512,
    288, 128, 64, 36."""
    size = min(cap, max(FIRST_ROUND, done))
    left = total - done
    if left < 2 * size:
        size = max(32, -(-left // 64) * 32)  # half of what is left, rounded up to 32
        if left - size < 32:  # no round of a few texts after it
            size = left
    return max(1, min(cap, size))


def _appended(catalog: Catalog, written: list[tuple[Paper, list[Chunk]]]) -> Catalog:
    """The catalog with newly written papers added, in write order: what
    `Store.load_catalog` reads back after an ingest that only added papers."""
    for paper, chunks in written:
        ids = [c.chunk_id for c in chunks]
        catalog.papers[paper.paper_id] = StoredPaper(paper, paper.content_hash, ids, len(chunks))
        catalog.ids.extend(ids)
        catalog.texts.extend(embedded_text(paper, c) for c in chunks)
        catalog.paper_of.extend([paper.paper_id] * len(chunks))
    return catalog


def _write_titles(
    papers: list[Paper],
    job: TitleJob,
    plan: _Plan,
    store: Store,
    chunker: Chunker,
    summary: IngestSummary,
) -> None:
    """Ask for the titles of untitled papers and store each as a metadata update of its
    chunks, TITLE_BATCH papers a write."""
    embedded = {p.paper_id for p in plan.embed}
    items: list[tuple[Paper, Chunk]] = []
    for n, (paper, title) in enumerate(title_papers(papers, job), start=1):
        if title is None:  # the endpoint failed: asked again by the next ingest
            summary.titles_failed += 1
        else:  # "" records a reply that was no title: the offline label stays
            summary.titles_generated += bool(title)
            summary.titles_rejected += not title
            paper.generated_title = title
            paper.label = title or paper.label
            stored = plan.catalog.papers.get(paper.paper_id)
            written = None if paper.paper_id in embedded or stored is None else stored.chunk_ids
            items.extend(
                (paper, c) for c in chunker.split(paper) if written is None or c.chunk_id in written
            )
        if n % TITLE_BATCH == 0:
            store.update_metadata(items)
            items = []
    store.update_metadata(items)


def _vectors(embedder: Embedder, batch: list[tuple[Paper, Chunk]], per_paper: bool) -> np.ndarray:
    """One vector per chunk: its own, or (per paper) its paper's first chunk's."""
    if not per_paper:
        return embedder.embed([embedded_text(p, c) for p, c in batch])
    firsts = [i for i, (_, c) in enumerate(batch) if c.index == 0]
    vectors = embedder.embed([embedded_text(*batch[i]) for i in firsts])
    # Batches hold whole papers in chunk order: row i belongs to the latest first chunk.
    owner = np.cumsum([c.index == 0 for _, c in batch]) - 1
    return vectors[owner]


class _Writer:
    """Writes batches to the store on a second thread, so Chroma's indexing overlaps the
    embedding of the next batch. At most two batches wait (bounded memory); the first
    write error stops the ingest and is raised in the caller's thread."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: queue.Queue[tuple[list[tuple[Paper, Chunk]], np.ndarray] | None] = queue.Queue(
            maxsize=2
        )
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="rag-writer", daemon=True)

    def __enter__(self) -> _Writer:
        self.thread.start()
        return self

    def put(self, batch: list[tuple[Paper, Chunk]], vectors: np.ndarray) -> None:
        """Queue a batch (blocks while two are waiting)."""
        self._raise()
        self.queue.put((batch, vectors))

    def __exit__(self, *exc: object) -> None:
        self.queue.put(None)
        self.thread.join()
        self._raise()

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.store.write(*item)
                except BaseException as exc:  # re-raised in the ingest thread
                    self.error = exc

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

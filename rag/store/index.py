"""Chunks + embeddings <-> Chroma: the only module that talks to Chroma.

A chunk's id is "<paper_id>#<i>", its metadata its paper's id and, packed as one JSON
string, the chunk's own text and the paper's fields (so a server-mode index needs nothing
else). The chunks live in one collection until it holds RAG_SHARD_CHUNKS, then in
further ones ("<collection>-shard1", ...) written in turn: a Chroma insert costs more the
larger its collection (its HNSW graph), so bounded collections keep an ingest linear.
The first collection records the embedding model (opening it with another is an error),
the version stamp and how many collections there are.

`Catalog` is the in-memory view of what is stored (ids, texts, paper metadata), loaded in
pages once per process: the ingest diff and BM25 both read it instead of asking Chroma.
Writes go paper by paper inside each upsert, so a paper is either complete, or detected
as incomplete (fewer than `n_chunks` chunks) and redone by the next ingest.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlparse

import numpy as np

from rag.config import Settings
from rag.corpus.chunk import stitch
from rag.corpus.labels import LABELS_VERSION, paper_label
from rag.embedding.embed import MAX_TOKENS
from rag.errors import RagError
from rag.types import Chunk, Paper, split_chunk_id

PAGE = 5000  # rows per `get` page when loading the catalog
SPACE = "cosine"
# Chroma builds an HNSW graph of the vectors, which none of this project's searches use
# (they are exact products with the vectors in memory): built with a construction ef of
# 40 instead of Chroma's 100 it costs 5.5 -> 3.6 s for 31,100 vectors, and Chroma's own
# queries of the collection (other tools) keep a recall@10 of 0.973 (0.983 at 100).
HNSW = {"hnsw:space": SPACE, "hnsw:construction_ef": 40}
# A chunk is stored as its id, its vector and two metadata keys: `paper_id`, and every
# other field with the chunk's text as one JSON string (PACKED_KEY). Each metadata key is
# a row in Chroma's SQLite: the ~12 keys and the text a chunk had (until 2026-12) made its
# upserts 1.4 s of CPU per 2,648 chunks, packed 0.85 s. Not as a Chroma document either:
# documents get a full-text index (unused here) that made writes ~1.8x slower.
PACKED_KEY = "rag"
TEXT_KEY = "text"  # the chunk's text inside the packed JSON (a key of its own until 2026-12)
FAMILY_KEY = "embed_family"  # collection metadata: "fp32" or "int8" (rag/embedding/backends.py)
STAMP_KEY = "rag_stamp"  # collection metadata: changes with every write (see rag/store/snapshot.py)
SHARDS_KEY = "rag_shards"  # the first collection's metadata: collections holding chunks


class StoreError(RagError, RuntimeError):
    """The index cannot be opened or written; the message names the path or URL."""


@dataclass
class StoredPaper:
    """A paper as stored: its record, its chunk ids, and whether all chunks are there."""

    paper: Paper
    content_hash: str
    chunk_ids: list[str] = field(default_factory=list)
    n_chunks: int = 0

    @property
    def complete(self) -> bool:
        """Tell whether every chunk of the paper was written."""
        return len(self.chunk_ids) == self.n_chunks


class Facet(NamedTuple):
    """The fields a scope tests, as one paper holds them."""

    venue: str | None
    year: int | None
    status: str | None
    area: str | None

    @classmethod
    def of(cls, paper: Paper) -> Facet:
        """The paper's scope fields."""
        return cls(paper.venue, paper.year, paper.status, paper.area)


class CatalogView(Protocol):
    """What a reader of the catalog uses: the in-memory `Catalog`, or one opened from its
    mapped file (rag/store/columns.py) that decodes only what is read."""

    stamp: str | None
    labels: int

    @property
    def ids(self) -> Sequence[str]: ...
    @property
    def texts(self) -> Sequence[str]: ...
    @property
    def paper_of(self) -> Sequence[str]: ...
    @property
    def papers(self) -> Mapping[str, StoredPaper]: ...
    @property
    def stale_ids(self) -> Sequence[str]: ...
    @property
    def paper_ids(self) -> Sequence[str]: ...
    @property
    def n_chunks(self) -> int: ...
    def row_of(self) -> Mapping[str, int]: ...
    def row_papers(self) -> np.ndarray: ...
    def facets(self) -> tuple[list[Facet], np.ndarray]: ...


@dataclass
class Catalog:
    """Everything stored, in memory: rows for BM25 and papers for the ingest diff."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # the text that was embedded (title + chunk)
    paper_of: list[str] = field(default_factory=list)  # paper id per row
    papers: dict[str, StoredPaper] = field(default_factory=dict)
    stale_ids: list[str] = field(default_factory=list)  # left over by a crash mid-update
    stamp: str | None = None  # the collection's version stamp this view matches, if known
    labels: int = 0  # the labelling rule its derived labels follow (0: saved before rules had one)

    def relabel(self) -> None:
        """Derive the labels of untitled papers again if an older rule made them (a catalog
        saved before the rule changed; ~0.6 ms a paper)."""
        if self.labels == LABELS_VERSION:
            return
        for stored in self.papers.values():
            paper = stored.paper
            if not paper.title:
                paper.label = paper_label(None, paper.generated_title, paper.abstract)
        self.labels = LABELS_VERSION

    def row_of(self) -> dict[str, int]:
        """Map chunk id -> row number."""
        return {cid: i for i, cid in enumerate(self.ids)}

    @property
    def n_chunks(self) -> int:
        """Count live chunks."""
        return len(self.ids)

    @property
    def paper_ids(self) -> list[str]:
        """The stored papers' ids, in the order `row_papers` and `facets` number them."""
        return list(self.papers)

    def all_complete(self) -> bool:
        """Tell whether every paper has all its chunks."""
        return all(sp.complete for sp in self.papers.values())

    def by_hash(self) -> dict[str, str]:
        """Content hash -> paper id of every paper."""
        return {sp.content_hash: pid for pid, sp in self.papers.items()}

    def row_papers(self) -> np.ndarray:
        """Each chunk row's paper number (an index into `paper_ids`)."""
        number = {pid: i for i, pid in enumerate(self.papers)}
        return np.fromiter((number[p] for p in self.paper_of), np.int32, len(self.paper_of))

    def facets(self) -> tuple[list[Facet], np.ndarray]:
        """The distinct scope fields the papers hold, and each paper's code into them
        (a scope is then tested once per combination, not once per paper)."""
        code: dict[Facet, int] = {}
        codes = np.fromiter(
            (code.setdefault(Facet.of(sp.paper), len(code)) for sp in self.papers.values()),
            np.int32,
            len(self.papers),
        )
        return list(code), codes


def embedded_text(paper: Paper, chunk: Chunk) -> str:
    """The text embedded and BM25-indexed: the real title (if any) gives context."""
    return f"{paper.title}. {chunk.text}" if paper.title else chunk.text


def chunk_metadata(paper: Paper, chunk: Chunk) -> dict[str, Any]:
    """Flatten paper + chunk into the fields stored for it (scalars only, no None; packed
    into one JSON key by `packed_metadata`).

    Every chunk carries its place, its paper's content hash and the fields filters test
    (venue, year, status, area); the paper's other fields ride on its first chunk only,
    which is where the catalog reads them (`_build_catalog`)."""
    meta: dict[str, Any] = {
        "paper_id": paper.paper_id,
        "index": chunk.index,
        "n_chunks": chunk.n_chunks,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "n_tokens": chunk.n_tokens,
        "content_hash": paper.content_hash,
        "venue": paper.venue,
        "year": paper.year,
        "status": paper.status,
        "area": paper.area,
    }
    if chunk.index == 0:  # (the label is derived when read, never stored)
        meta |= {
            "sources": json.dumps(paper.sources),
            "title": paper.title,
            "keywords": "; ".join(paper.keywords) or None,
            "authors": "; ".join(paper.authors) or None,
            "site": paper.site,
            "tldr": paper.tldr,
            "generated_title": paper.generated_title,
        }
    return {k: v for k, v in meta.items() if v is not None}


def packed_metadata(paper: Paper, chunk: Chunk) -> dict[str, Any]:
    """The metadata Chroma stores for a chunk: {"paper_id": ..., "rag": "{...JSON...}"}."""
    fields = chunk_metadata(paper, chunk)
    paper_id = fields.pop("paper_id")
    fields[TEXT_KEY] = chunk.text
    return {"paper_id": paper_id, PACKED_KEY: json.dumps(fields, separators=(",", ":"))}


def unpacked_metadata(
    meta: dict[str, Any], document: str | None = None
) -> tuple[str, dict[str, Any]]:
    """A chunk's text and its `chunk_metadata` fields, from any layout it was stored in:
    packed (since 2026-12), every field a key of its own with the text among them, or
    (before 2026-11) the text as the Chroma document."""
    packed = meta.get(PACKED_KEY)
    fields = dict(meta)
    if isinstance(packed, str):
        del fields[PACKED_KEY]
        fields |= json.loads(packed)
    return fields.pop(TEXT_KEY, None) or document or "", fields


def paper_from_metadata(meta: dict[str, Any], abstract: str) -> Paper:
    """Rebuild a Paper from one chunk's metadata and the stitched abstract."""
    title = meta.get("title")
    return Paper(
        paper_id=meta["paper_id"],
        abstract=abstract,
        title=title,
        # derived afresh, not read: a better labelling rule shows without re-ingest
        label=paper_label(title, meta.get("generated_title"), abstract),
        venue=meta.get("venue"),
        year=meta.get("year"),
        status=meta.get("status"),
        area=meta.get("area"),
        keywords=tuple(k for k in meta.get("keywords", "").split("; ") if k),
        authors=tuple(a for a in meta.get("authors", "").split("; ") if a),
        site=meta.get("site"),
        tldr=meta.get("tldr"),
        sources=json.loads(meta.get("sources", "[]")),
        generated_title=meta.get("generated_title"),
    )


@dataclass(frozen=True)
class Peek:
    """An embedded index's collections as its SQLite file records them, read without Chroma."""

    metadata: dict[str, Any]  # the first collection's
    count: int | None  # chunks of every collection; None while Chroma's log holds writes


def shard_name(collection: str, k: int) -> str:
    """The name of the index's k-th collection: 'abstracts', 'abstracts-shard1', ..."""
    return collection if k == 0 else f"{collection}-shard{k}"


def shard_count(metadata: Mapping[str, Any]) -> int:
    """How many collections the first collection's metadata says hold chunks (at least 1)."""
    value = metadata.get(SHARDS_KEY)
    return value if isinstance(value, int) and value > 1 else 1


def peek(settings: Settings) -> Peek | None:
    """Read an embedded index's collection metadata and chunk count straight from its
    `chroma.sqlite3`, read-only, in ~1 ms: a question answered from the snapshot then
    needs no `import chromadb` (~0.7 s of a new `rag ask` on 2 cores) and no client.
    None for a Chroma server, a missing index or collection, or any schema this does not
    know (then Chroma itself is asked): it never writes and never guesses."""
    if settings.chroma_url:
        return None
    path = Path(settings.index_dir) / "chroma.sqlite3"
    if not path.is_file():
        return None
    import sqlite3

    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            found = _collection_id(db, settings.collection)
            if found is None:
                return None
            metadata: dict[str, Any] = {}
            for key, text, integer, real, flag in db.execute(
                "SELECT key, str_value, int_value, float_value, bool_value "
                "FROM collection_metadata WHERE collection_id = ?",
                (found,),
            ):
                values = (text, integer, real, flag)
                metadata[key] = next((v for v in values if v is not None), None)
            count: int | None = 0
            for k in range(shard_count(metadata)):
                shard = found if k == 0 else _collection_id(db, shard_name(settings.collection, k))
                held = 0 if shard is None else _peek_count(db, shard)  # not created yet: empty
                count = None if count is None or held is None else count + held
            return Peek(metadata, count)
        finally:
            db.close()
    except (sqlite3.Error, ValueError, TypeError):
        return None


def _collection_id(db: Any, name: str) -> str | None:
    found = db.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchall()
    return found[0][0] if len(found) == 1 else None


def _peek_count(db: Any, collection: str) -> int | None:
    """Chunks the collection's metadata segment holds, trusted only when it has applied
    every write Chroma's log holds for the collection (else None)."""
    segment = db.execute(
        "SELECT s.id, m.seq_id FROM segments s LEFT JOIN max_seq_id m "
        "ON m.segment_id = s.id WHERE s.collection = ? AND s.scope = 'METADATA'",
        (collection,),
    ).fetchall()
    logged = db.execute(
        "SELECT MAX(seq_id) FROM embeddings_queue WHERE topic LIKE ?", (f"%{collection}",)
    ).fetchone()[0]
    if len(segment) != 1 or (logged is not None and segment[0][1] != logged):
        return None
    return int(
        db.execute(
            "SELECT COUNT(*) FROM embeddings WHERE segment_id = ?", (segment[0][0],)
        ).fetchone()[0]
    )


def _collection_metadata(settings: Settings) -> dict[str, Any] | None:
    """The collection's metadata: peeked when embedded, else from Chroma; None without one."""
    peeked = peek(settings)
    if peeked is not None:
        return peeked.metadata
    try:
        return _client(settings).get_collection(settings.collection).metadata or {}
    except Exception:  # no collection yet, or a store error that Store will name
        return None


class Store:
    """The Chroma collections of an index's chunks, embedded locally on disk or on a Chroma
    server (one collection up to RAG_SHARD_CHUNKS chunks, then more: the module docstring).

    An existing embedded index is opened in Chroma only when something needs Chroma (a
    write, or reading chunks the snapshot lacks): its metadata, version stamp and count
    are read from its SQLite file meanwhile (`peek`), so answering from the snapshot never
    imports chromadb."""

    def __init__(self, settings: Settings, embed_model: str, family: str | None = None) -> None:
        self.settings = settings
        self.location = settings.chroma_url or str(settings.index_dir)
        # An index of per-paper vectors answers dense queries differently: never mix them.
        embed_model += PER_PAPER if settings.embed_unit == "paper" else ""
        self.embed_model = embed_model
        self._created: dict[str, Any] = {**HNSW, "embed_model": embed_model}
        if family:
            self._created[FAMILY_KEY] = family
        self._client: Any = None
        self._shards: list[Any] = []  # the opened collections, the first one first
        self._last_count: int | None = None  # chunks in the last collection (writes add)
        peeked = peek(settings)
        if peeked is not None and peeked.metadata.get("embed_model"):
            metadata = peeked.metadata
        else:  # a new collection, a server, or an index peek cannot read
            metadata = self.collection.metadata or {}
        self._check(metadata, family)

    @property
    def client(self) -> Any:
        """The Chroma client (created on first use)."""
        if self._client is None:
            self._client = _client(self.settings)
        return self._client

    @property
    def collection(self) -> Any:
        """The first Chroma collection (opened, or created, on first use): it holds the
        index's metadata, and its first RAG_SHARD_CHUNKS chunks."""
        return self.shards[0]

    @property
    def shards(self) -> list[Any]:
        """Every collection holding the index's chunks, the first one first (opened on
        first use; one the metadata names but a crash left uncreated is created empty)."""
        if not self._shards:
            first = self._open(self.settings.collection)
            count = shard_count(first.metadata or {})
            self._shards = [first] + [
                self._open(shard_name(self.settings.collection, k)) for k in range(1, count)
            ]
        return self._shards

    @property
    def opened(self) -> bool:
        """Whether this process has opened the index in Chroma."""
        return bool(self._shards)

    def _open(self, name: str) -> Any:
        """A collection of the index, created when missing."""
        try:
            return self.client.get_or_create_collection(
                name, metadata=self._created, embedding_function=None
            )
        except StoreError:
            raise
        except Exception as exc:  # chromadb raises many types; name the place either way
            raise StoreError(f"cannot open collection {name} at {self.location}: {exc}") from exc

    def _check(self, metadata: dict[str, Any], family: str | None) -> None:
        embed_model = self.embed_model
        stored = metadata.get("embed_model")
        if stored and stored != embed_model:
            raise StoreError(
                f"the index at {self.location} was built with {stored!r}, not {embed_model!r}: "
                "use the same RAG_EMBED_MODEL, RAG_EMBED_MAX_TOKENS and RAG_EMBED_UNIT, or "
                "another RAG_INDEX_DIR / RAG_COLLECTION"
            )
        # fp32 and int8 vectors agree to cosine 0.999, not 0.9999: one family per index.
        recorded = metadata.get(FAMILY_KEY)
        if family and recorded and recorded != family:
            raise StoreError(
                f"the index at {self.location} holds {recorded} vectors, and this process "
                f"embeds {family} ones: set RAG_EMBED_BACKEND=auto (it keeps to the index's "
                "family) or a backend of that family, or re-ingest into another RAG_INDEX_DIR"
            )

    def count(self) -> int:
        """Count the index's chunks (every collection's)."""
        if not self.opened:
            peeked = peek(self.settings)
            if peeked is not None and peeked.count is not None:
                return peeked.count
        try:
            return sum(int(shard.count()) for shard in self.shards)
        except Exception as exc:
            raise StoreError(f"cannot read the index at {self.location}: {exc}") from None

    def stamp(self) -> str | None:
        """The index's version stamp, read afresh (another process may have set it)."""
        if not self.opened:
            peeked = peek(self.settings)
            if peeked is not None:
                value = peeked.metadata.get(STAMP_KEY)
                return value if isinstance(value, str) and value else None
        try:
            collection = self.client.get_collection(
                self.settings.collection, embedding_function=None
            )
        except Exception as exc:
            raise StoreError(f"cannot read the index at {self.location}: {exc}") from None
        value = (collection.metadata or {}).get(STAMP_KEY)
        return value if isinstance(value, str) and value else None

    def set_stamp(self, stamp: str) -> None:
        """Record a new version stamp in the index's metadata, keeping its other keys."""
        self._set_metadata(STAMP_KEY, stamp)

    def _set_metadata(self, key: str, value: Any) -> None:
        """Set one key of the first collection's metadata, keeping the others.

        Chroma's `modify` replaces the whole metadata and refuses the "hnsw:" keys in it, so
        they drop out of the metadata; the distance and the graph's settings live in the
        collection's configuration and stay.
        """
        try:
            current = self.client.get_collection(
                self.settings.collection, embedding_function=None
            ).metadata
            metadata = {k: v for k, v in (current or {}).items() if not k.startswith("hnsw:")}
            metadata[key] = value
            self.collection.modify(metadata=metadata)
        except Exception as exc:  # e.g. a full disk
            raise StoreError(f"cannot write to the index at {self.location}: {exc}") from None

    def load_catalog(self) -> Catalog:
        """Read every chunk (texts and metadata) in pages and group them by paper."""
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for shard in self.shards:
            for page in self._pages(shard, ["documents", "metadatas"]):
                metas = page["metadatas"] or []
                docs = page["documents"] or [None] * len(metas)
                rows.extend(
                    (cid, *unpacked_metadata(meta, doc))
                    for cid, doc, meta in zip(page["ids"], docs, metas, strict=True)
                )
        return _build_catalog(rows)

    def _pages(self, shard: Any, include: list[str]) -> Iterator[dict[str, Any]]:
        """A collection's chunks, PAGE at a time."""
        offset = 0
        while True:
            try:
                page = shard.get(include=include, limit=PAGE, offset=offset)
            except Exception as exc:  # e.g. a full disk blocks Chroma's compaction
                raise StoreError(f"cannot read the index at {self.location}: {exc}") from None
            yield page
            if len(page["ids"]) < PAGE:
                return
            offset += PAGE

    def _holding(
        self, ids: Sequence[str], shards: Sequence[Any] | None = None
    ) -> Iterator[tuple[Any, list[str]]]:
        """(collection, the given ids it holds) for each of `shards` (default: every
        collection) holding any of them; with one collection, it and every id, unasked."""
        shards = self.shards if shards is None else shards
        if len(self.shards) == 1:
            yield from ((shard, list(ids)) for shard in shards)
            return
        for shard in shards:
            held: list[str] = []
            for start in range(0, len(ids), PAGE):
                try:
                    held += shard.get(ids=list(ids[start : start + PAGE]), include=[])["ids"]
                except Exception as exc:
                    raise StoreError(f"cannot read the index at {self.location}: {exc}") from None
            if held:
                yield shard, held

    def _target(self, adding: int) -> Any:
        """The collection `adding` new chunks go to: the last one, or a new one when they
        would take the last one past RAG_SHARD_CHUNKS (recorded in the first collection's
        metadata before it is made, so a crash in between leaves a name to create, never
        chunks nobody reads)."""
        shards = self.shards
        if self._last_count is None:
            self._last_count = int(shards[-1].count())
        limit = self.settings.shard_chunks
        if limit and self._last_count and self._last_count + adding > limit:
            self._set_metadata(SHARDS_KEY, len(shards) + 1)
            shards.append(self._open(shard_name(self.settings.collection, len(shards))))
            self._last_count = 0
        return shards[-1]

    def write(self, items: Sequence[tuple[Paper, Chunk]], vectors: np.ndarray) -> None:
        """Upsert chunks with their vectors (one call: all of a paper's chunks land together)
        into the last collection; a chunk an earlier collection holds is deleted there
        first (a crash in between leaves its paper incomplete, which the next ingest redoes)."""
        if not items:
            return
        ids = [c.chunk_id for _, c in items]
        try:
            target = self._target(len(ids))
            if len(self.shards) > 1:
                for shard, held in self._holding(ids, self.shards[:-1]):
                    shard.delete(ids=held)
            target.upsert(
                ids=ids,
                embeddings=vectors,  # numpy as it is: no per-float Python list
                metadatas=[packed_metadata(p, c) for p, c in items],
            )
            self._last_count = (self._last_count or 0) + len(ids)  # at most: some were there
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot write to the index at {self.location}: {exc}") from exc

    def update_metadata(self, items: Sequence[tuple[Paper, Chunk]]) -> None:
        """Rewrite metadata only (e.g. new sources), without re-embedding."""
        if not items:
            return
        packed = {c.chunk_id: packed_metadata(p, c) for p, c in items}
        try:
            for shard, held in self._holding(list(packed)):
                shard.update(ids=held, metadatas=[packed[i] for i in held])
        except Exception as exc:
            raise StoreError(f"cannot write to the index at {self.location}: {exc}") from exc

    def delete(self, ids: Iterable[str]) -> None:
        """Delete chunks by id."""
        for shard, held in self._holding(list(ids)):
            for start in range(0, len(held), PAGE):
                shard.delete(ids=held[start : start + PAGE])

    def vectors(self, ids: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """(chunk ids, their stored vectors as float32 rows): the given chunks, or every
        chunk read in pages (31k chunks: ~1 s)."""
        found: list[str] = []
        rows: list[np.ndarray] = []
        if ids is not None and not ids:  # Chroma refuses an empty id list
            return found, np.zeros((0, 0), dtype=np.float32)
        if ids is None:
            pages = (page for shard in self.shards for page in self._pages(shard, ["embeddings"]))
        else:
            pages = (
                self._get(shard, held[start : start + PAGE])
                for shard, held in self._holding(ids)
                for start in range(0, len(held), PAGE)
            )
        for page in pages:
            found.extend(page["ids"])
            if page["ids"]:
                rows.append(np.asarray(page["embeddings"], dtype=np.float32))
        return found, np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _get(self, shard: Any, ids: list[str]) -> dict[str, Any]:
        """These chunks' vectors from one collection."""
        try:
            return dict(shard.get(ids=ids, include=["embeddings"]))
        except Exception as exc:
            raise StoreError(f"cannot read the index at {self.location}: {exc}") from None

    def paper_vectors(self, papers: Collection[str] | None = None) -> tuple[list[str], np.ndarray]:
        """One unit vector per paper, the mean of its chunks' vectors (with per-paper
        embedding they are one and the same), in the order first stored. `papers`: only
        these (e.g. the catalog's, which skips chunks a crash left behind)."""
        chunk_ids, matrix = self.vectors()
        return mean_per_paper(chunk_ids, matrix, papers)

    def similarities(self, vector: np.ndarray, ids: list[str]) -> list[float]:
        """Cosine similarity of the query to the given chunks (vectors are unit length)."""
        if not ids:
            return []
        found_ids, matrix = self.vectors(ids)
        found = dict(zip(found_ids, matrix, strict=True))
        return [float(found[i] @ vector) if i in found else 0.0 for i in ids]

    def nearest(
        self, vector: np.ndarray, depth: int, ids: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The `depth` chunks nearest the query vector by Chroma's own HNSW index (each
        collection's, merged), best first, with their cosine (`ids`: only among these).
        What a Chroma server searches past RAG_ANN_MIN_ROWS, so an instance never pulls
        every vector for a question."""
        if ids is not None and not ids:
            return []
        query = [np.asarray(vector, dtype=np.float32)]
        searched = (
            [(shard, None) for shard in self.shards] if ids is None else list(self._holding(ids))
        )

        def search(shard: Any, among: list[str] | None) -> list[tuple[str, float]]:
            got = shard.query(  # Chroma refuses an id filter naming an id it lacks
                query_embeddings=query, n_results=depth, ids=among, include=["distances"]
            )
            return [  # cosine space: distance = 1 - cosine
                (cid, 1.0 - float(distance))
                for cid, distance in zip(got["ids"][0], got["distances"][0], strict=True)
            ]

        if not searched:  # none of `ids` is stored
            return []
        try:
            if len(searched) == 1:
                hits = search(*searched[0])
            else:  # each collection's search at once (on a server: one request each)
                with ThreadPoolExecutor(min(len(searched), 8)) as pool:
                    found = pool.map(lambda pair: search(*pair), searched)
                    hits = [hit for each in found for hit in each]
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot search the index at {self.location}: {exc}") from None
        return sorted(hits, key=lambda hit: -hit[1])[:depth]


def mean_per_paper(
    chunk_ids: Sequence[str], matrix: np.ndarray, papers: Collection[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """Average chunk vectors per paper and rescale to unit length:
    (['a#0', 'a#1', 'b#0'], 3 rows) -> (['a', 'b'], 2 rows)."""
    of_paper = [split_chunk_id(cid)[0] for cid in chunk_ids]
    keep = [i for i, pid in enumerate(of_paper) if papers is None or pid in papers]
    order = {pid: n for n, pid in enumerate(dict.fromkeys(of_paper[i] for i in keep))}
    sums = np.zeros((len(order), matrix.shape[1] if matrix.size else 0), dtype=np.float32)
    np.add.at(sums, [order[of_paper[i]] for i in keep], matrix[keep])
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return list(order), sums / np.where(norms > 0, norms, 1.0)


PER_PAPER = "|per-paper"  # suffix of the recorded model of an index of per-paper vectors


def adopt_layout(settings: Settings) -> Settings:
    """Settings that open an existing index the way it was built.

    Unless RAG_EMBED_UNIT or RAG_EMBED_MAX_TOKENS is set, the embedding unit and truncation
    recorded in the collection ("local:all-MiniLM-L6-v2@128|per-paper") win over the
    defaults, so an index keeps working when the defaults change. With neither an index
    nor a record (or an unreachable server, which `Store` then reports), nothing changes.
    """
    if settings.model_fields_set & {"embed_unit", "embed_max_tokens"}:
        return settings
    metadata = _collection_metadata(settings)
    if metadata is None:
        return settings
    recorded = str(metadata.get("embed_model") or "")
    if not recorded:
        return settings
    update: dict[str, Any] = {"embed_unit": "paper" if recorded.endswith(PER_PAPER) else "chunk"}
    if recorded.startswith("local:"):  # only the local model is cut at embed_max_tokens
        tokens = recorded.removesuffix(PER_PAPER).partition("@")[2]
        update["embed_max_tokens"] = int(tokens) if tokens.isdigit() else MAX_TOKENS
    return settings.model_copy(update=update)


def recorded_family(settings: Settings) -> str | None:
    """The vector family the existing index records ('fp32', 'int8'); None without one."""
    metadata = _collection_metadata(settings)
    if metadata is None:
        return None
    family = metadata.get(FAMILY_KEY)
    return family if isinstance(family, str) and family else None


def _client(settings: Settings) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        try:
            client = chromadb.HttpClient(
                host=url.hostname or "127.0.0.1",
                port=url.port or 8000,
                ssl=url.scheme == "https",
                settings=chroma_settings,
            )
            client.heartbeat()
        except Exception as exc:
            raise StoreError(
                f"cannot reach the Chroma server at {settings.chroma_url}: {exc}"
            ) from None
        return client
    path = Path(settings.index_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    except Exception as exc:
        raise StoreError(f"cannot open the index folder {path}: {exc}") from None


def _build_catalog(rows: list[tuple[str, str, dict[str, Any]]]) -> Catalog:
    by_paper: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for row in rows:
        by_paper.setdefault(row[2]["paper_id"], []).append(row)
    catalog = Catalog(labels=LABELS_VERSION)  # papers are labelled as they are read
    for paper_id, chunks in by_paper.items():
        chunks.sort(key=lambda r: r[2]["index"])
        head = chunks[0][2]
        live = [
            r
            for r in chunks
            if r[2]["content_hash"] == head["content_hash"] and r[2]["index"] < head["n_chunks"]
        ]
        catalog.stale_ids.extend(r[0] for r in chunks if r not in live)
        abstract = stitch([(m["char_start"], m["char_end"], doc) for _, doc, m in live])
        paper = paper_from_metadata(head, abstract)
        catalog.papers[paper_id] = StoredPaper(
            paper, head["content_hash"], [r[0] for r in live], head["n_chunks"]
        )
        title = head.get("title")
        for cid, doc, _ in live:
            catalog.ids.append(cid)
            catalog.texts.append(f"{title}. {doc}" if title else doc)
            catalog.paper_of.append(paper_id)
    return catalog

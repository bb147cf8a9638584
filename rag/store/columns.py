"""The catalog as columns in one mapped file: a process opens it in milliseconds and reads
only the rows it touches.

A pickled catalog has to be read whole before the first question: 1M papers, 2.6 GB and
18 s of unpickling, ~5 GB of Python objects per process. Here each list is a column: a
string column is one UTF-8 blob plus the byte offset of every item, an integer column an
array, all mapped read-only (`np.memmap`), so the page cache holds them once for every
process on the machine. A paper is one JSON record (its fields, content hash, chunk ids
and rows), decoded when asked for; papers are found by id through a sorted permutation
(binary search, no dict of a million keys); the scope fields (venue, year, status, area)
are a code per paper into the table of their distinct combinations, so a filter is tested
once per combination, not once per paper.

File layout: MAGIC, one JSON header line (format, stamp, the arrays' dtype, shape and
offset, the meta fields, a sha256), then the arrays, each 64-byte aligned. The sha256
covers the header fields and every array but the two text blobs (chunk texts, paper
records: most of the bytes, which a cold start must not read): a truncated file, a torn
write or damaged offsets are refused; a flipped byte inside a text is not seen, as with
the mapped vectors and BM25 arrays.

An ingest that only adds papers writes the next file from the one it opened
(`write_appended`): the old arrays' bytes are copied as they are and only the new papers
are encoded, so adding a thousand papers to a million does not decode and re-encode the
million (each paper's content hash and chunk count are columns, for the ingest's plan).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
from collections import OrderedDict
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import fields
from pathlib import Path
from typing import Any, BinaryIO, overload

import numpy as np

from rag.errors import RagError
from rag.store.index import Catalog, Facet, StoredPaper
from rag.store.reads import Blob
from rag.types import Paper, split_chunk_id

MAGIC = b"RAG-COLUMNS\n"
FORMAT = 2  # bump when the layout changes: older files are then ignored (and rebuilt)
# 2: each paper's content hash and chunk count, so an ingest plans on the mapped file
_ALIGN = 64
_UNHASHED = frozenset({"texts.blob", "records.blob"})
_CACHE = 4096  # decoded papers kept per catalog (a question touches tens)
_PIECE = 1 << 14  # items decoded per piece when a column is read through


class ColumnsError(ValueError):
    """The file is not a whole catalog of this format (the caller rebuilds it)."""


class DamagedRecord(RagError):
    """A paper's record in an opened catalog file does not decode (a flipped byte the
    checksum does not cover): the file is removed, so the next process rebuilds it."""


class Strings(Sequence[str]):
    """A read-only list of strings over a blob and the byte offsets of its items."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, read: Blob | None = None) -> None:
        self._blob, self._offsets = blob, offsets
        self._read = read  # one item's bytes by pread (rag/store/reads.py), not the map

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        raw = self._read(start, end) if self._read else self._blob[start:end].tobytes()
        return raw.decode(errors="replace")

    def __iter__(self) -> Iterator[str]:
        offsets = self._offsets
        for first in range(0, len(self), _PIECE):
            last = min(first + _PIECE, len(self))
            bounds = offsets[first : last + 1].tolist()
            base = bounds[0]
            piece = self._blob[base : bounds[-1]].tobytes()
            for a, b in itertools.pairwise(bounds):
                yield piece[a - base : b - base].decode(errors="replace")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class _Sorted(Sequence[str]):
    """The paper ids in sorted order (a view through the permutation), for `bisect`."""

    def __init__(self, ids: Strings, order: np.ndarray) -> None:
        self._ids, self._order = ids, order

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self._ids[int(self._order[i])]


class PaperOf(Sequence[str]):
    """The paper id of every chunk row, through each row's paper number."""

    def __init__(self, ids: Strings, row_papers: np.ndarray) -> None:
        self._ids, self._rows = ids, row_papers

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self._ids[int(self._rows[i])]

    def __iter__(self) -> Iterator[str]:
        ids = list(self._ids)
        return (ids[j] for j in self._rows.tolist())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class Papers(Mapping[str, StoredPaper]):
    """Paper id -> StoredPaper, decoded from its record on demand (the last few thousand
    kept, so a paper asked twice is the same object)."""

    def __init__(self, ids: Strings, order: np.ndarray, records: Strings, path: Path) -> None:
        self._ids, self._records, self._path = ids, records, path
        self._sorted = _Sorted(ids, order)
        self._order = order
        self._cache: OrderedDict[int, tuple[StoredPaper, list[int]]] = OrderedDict()

    def index(self, paper_id: str) -> int | None:
        """The paper's number (its place in the id column), or None if it is not stored."""
        at = bisect.bisect_left(self._sorted, paper_id)
        if at < len(self._sorted) and self._sorted[at] == paper_id:
            return int(self._order[at])
        return None

    def entry(self, number: int) -> tuple[StoredPaper, list[int]]:
        """The paper stored at `number`, and the catalog rows of its chunks."""
        found = self._cache.get(number)
        if found is None:
            found = self._decode(number, self._records[number])
            self._cache[number] = found
            if len(self._cache) > _CACHE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(number)
        return found

    def __getitem__(self, paper_id: str) -> StoredPaper:
        number = self.index(paper_id) if isinstance(paper_id, str) else None
        if number is None:
            raise KeyError(paper_id)
        return self.entry(number)[0]

    def __contains__(self, paper_id: object) -> bool:
        return isinstance(paper_id, str) and self.index(paper_id) is not None

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def values(self) -> ValuesView[StoredPaper]:
        return _Values(self)

    def items(self) -> ItemsView[str, StoredPaper]:
        return _Items(self)

    def stream(self) -> Iterator[StoredPaper]:
        """Every paper in order, decoded one after another (not through the cache)."""
        return (self._decode(n, r)[0] for n, r in enumerate(self._records))

    def _decode(self, number: int, record: str) -> tuple[StoredPaper, list[int]]:
        try:
            return decode_record(record)
        except (ValueError, KeyError, TypeError) as exc:
            with contextlib.suppress(OSError):
                self._path.unlink(missing_ok=True)
            raise DamagedRecord(
                f"{self._path}: the record of paper {number} does not decode ({exc}); the file "
                "is removed and the next run rebuilds it from the store"
            ) from None


class _Values(ValuesView[StoredPaper]):
    _mapping: Papers

    def __iter__(self) -> Iterator[StoredPaper]:
        return self._mapping.stream()


class _Items(ItemsView[str, StoredPaper]):
    _mapping: Papers

    def __iter__(self) -> Iterator[tuple[str, StoredPaper]]:
        return zip(self._mapping, self._mapping.stream(), strict=True)


class Rows(Mapping[str, int]):
    """Chunk id -> row, read from its paper's record (no dict of every chunk id)."""

    def __init__(self, papers: Papers, ids: Strings) -> None:
        self._papers, self._ids = papers, ids

    def __getitem__(self, chunk_id: str) -> int:
        number = (
            self._papers.index(split_chunk_id(chunk_id)[0]) if isinstance(chunk_id, str) else None
        )
        if number is not None:
            stored, rows = self._papers.entry(number)
            for cid, row in zip(stored.chunk_ids, rows, strict=True):
                if cid == chunk_id:
                    return row
        raise KeyError(chunk_id)

    def __contains__(self, chunk_id: object) -> bool:
        try:
            self[chunk_id]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)


class MappedCatalog:
    """A saved catalog opened in place: the read side of `Catalog`, decoded as it is read.
    `materialize()` gives the in-memory `Catalog` an ingest edits."""

    def __init__(self, path: Path, header: dict[str, Any], data: np.ndarray) -> None:
        self.path = path
        arrays = {
            name: data[spec["offset"] : spec["offset"] + spec["bytes"]]
            .view(np.dtype(spec["dtype"]))
            .reshape(spec["shape"])
            for name, spec in header["arrays"].items()
        }
        self.arrays = arrays  # as mapped, for `appended_columns`
        meta = header["meta"]
        self.stamp: str | None = header["stamp"]
        self.labels: int = meta["labels"]
        self.stale_ids: list[str] = list(meta["stale_ids"])
        self._facets = [Facet(*f) for f in meta["facets"]]
        self.ids = Strings(arrays["ids.blob"], arrays["ids.offsets"])
        # the two text blobs, most of the file, are read an item at a time with pread
        blobs = {
            name: Blob(path, int(getattr(data, "offset", 0)) + header["arrays"][name]["offset"])
            for name in _UNHASHED
        }
        self.texts = Strings(arrays["texts.blob"], arrays["texts.offsets"], blobs["texts.blob"])
        self.paper_ids = Strings(arrays["pids.blob"], arrays["pids.offsets"])
        self._row_papers = arrays["row_papers"]
        self._facet_codes = arrays["facet_codes"]
        self.hashes = Strings(arrays["hashes.blob"], arrays["hashes.offsets"])
        self._n_chunks = arrays["n_chunks"]
        records = Strings(arrays["records.blob"], arrays["records.offsets"], blobs["records.blob"])
        self.papers = Papers(self.paper_ids, arrays["pid_order"], records, path)
        self.paper_of = PaperOf(self.paper_ids, self._row_papers)

    @property
    def n_chunks(self) -> int:
        """Count live chunks."""
        return len(self.ids)

    def row_of(self) -> Mapping[str, int]:
        """Map chunk id -> row number (looked up through the paper, never built whole)."""
        return Rows(self.papers, self.ids)

    def row_papers(self) -> np.ndarray:
        """Each chunk row's paper number (an index into `paper_ids`)."""
        return self._row_papers

    def facets(self) -> tuple[list[Facet], np.ndarray]:
        """The distinct scope fields, and each paper's code into them."""
        return self._facets, self._facet_codes

    def all_complete(self) -> bool:
        """Tell whether every paper has all its chunks (nothing decoded)."""
        held = np.bincount(self._row_papers, minlength=len(self.paper_ids))
        return bool(np.array_equal(held, self._n_chunks))

    def by_hash(self) -> dict[str, str]:
        """Content hash -> paper id of every paper (read from two columns, nothing decoded)."""
        return dict(zip(self.hashes, self.paper_ids, strict=True))

    def materialize(self) -> Catalog:
        """Everything read into the in-memory catalog (what an ingest diffs and edits)."""
        papers = dict(zip(self.paper_ids, self.papers.stream(), strict=True))
        return Catalog(
            ids=list(self.ids),
            texts=list(self.texts),
            paper_of=list(self.paper_of),
            papers=papers,
            stale_ids=list(self.stale_ids),
            stamp=self.stamp,
            labels=self.labels,
        )


# -- records ----------------------------------------------------------------------------


_PAPER_FIELDS = tuple(f.name for f in fields(Paper))


def encode_record(stored: StoredPaper, rows: list[int]) -> str:
    """One paper as the JSON its catalog row holds (its fields read directly: what
    dataclasses.asdict gives, without its deep copy, 0.079 -> 0.031 ms a paper)."""
    paper = stored.paper
    return json.dumps(
        {
            "paper": {name: getattr(paper, name) for name in _PAPER_FIELDS},
            "hash": stored.content_hash,
            "chunks": stored.chunk_ids,
            "rows": rows,
            "n": stored.n_chunks,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def decode_record(text: str) -> tuple[StoredPaper, list[int]]:
    """The StoredPaper a record holds, and its chunks' rows."""
    data = json.loads(text)
    fields = data["paper"]
    fields["keywords"] = tuple(fields["keywords"])
    fields["authors"] = tuple(fields["authors"])
    return StoredPaper(Paper(**fields), data["hash"], data["chunks"], data["n"]), data["rows"]


# -- the file ---------------------------------------------------------------------------


def _strings(values: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


_STRING_COLUMNS = ("ids", "texts", "pids", "hashes", "records")
Parts = dict[str, list[np.ndarray]]  # each array of the file, as the pieces written in order


def _columns(catalog: Catalog, row_base: int, paper_base: int, code: dict[Facet, int]) -> Parts:
    """The per-row and per-paper arrays of `catalog`'s papers, numbered as if
    `paper_base` papers and `row_base` rows came before them; `code` numbers the scope
    combinations (extended with the new ones, in first-seen order: `Catalog.facets`)."""
    pids = list(catalog.papers)
    stored = list(catalog.papers.values())
    number = {pid: i for i, pid in enumerate(pids)}
    rows: list[list[int]] = [[] for _ in pids]
    row_papers = np.empty(len(catalog.paper_of), dtype=np.int32)
    for row, pid in enumerate(catalog.paper_of):
        row_papers[row] = paper_base + number[pid]
        rows[number[pid]].append(row_base + row)
    codes = (code.setdefault(Facet.of(sp.paper), len(code)) for sp in stored)
    arrays: Parts = {}
    for name, values in (
        ("ids", catalog.ids),
        ("texts", catalog.texts),
        ("pids", pids),
        ("hashes", (sp.content_hash for sp in stored)),
        ("records", (encode_record(sp, r) for sp, r in zip(stored, rows, strict=True))),
    ):
        blob, offsets = _strings(values)
        arrays[f"{name}.blob"], arrays[f"{name}.offsets"] = [blob], [offsets]
    arrays["row_papers"] = [row_papers]
    arrays["facet_codes"] = [np.fromiter(codes, np.int32, len(stored))]
    arrays["n_chunks"] = [np.fromiter((sp.n_chunks for sp in stored), np.int32, len(stored))]
    return arrays


def _sort_order(values: Iterable[str]) -> np.ndarray:
    """The permutation that sorts the strings (numpy's order of str is Python's)."""
    return np.argsort(np.array(list(values), dtype=str), kind="stable").astype(np.int32)


def columns_of(catalog: Catalog) -> tuple[Parts, dict[str, Any]]:
    """The arrays and meta fields that hold `catalog`."""
    code: dict[Facet, int] = {}
    arrays = _columns(catalog, 0, 0, code)
    arrays["pid_order"] = [_sort_order(catalog.papers)]
    meta = {
        "labels": catalog.labels,
        "stale_ids": list(catalog.stale_ids),
        "facets": [list(f) for f in code],
    }
    return arrays, meta


def appended_columns(old: MappedCatalog, added: Catalog) -> tuple[Parts, dict[str, Any]]:
    """The arrays and meta fields of `old` with the papers of `added` after its own: its
    arrays are carried as they are (bytes copied, nothing decoded), only the new papers
    are encoded, and the id order is sorted again (numpy, ~1 s a million)."""
    code = {facet: i for i, facet in enumerate(old.facets()[0])}
    new = _columns(added, old.n_chunks, len(old.paper_ids), code)
    arrays: Parts = {}
    for name in _STRING_COLUMNS:
        offsets = old.arrays[f"{name}.offsets"]
        arrays[f"{name}.blob"] = [old.arrays[f"{name}.blob"], *new[f"{name}.blob"]]
        arrays[f"{name}.offsets"] = [offsets, new[f"{name}.offsets"][0][1:] + offsets[-1]]
    for name in ("row_papers", "facet_codes", "n_chunks"):
        arrays[name] = [old.arrays[name], *new[name]]
    arrays["pid_order"] = [_sort_order(itertools.chain(old.paper_ids, added.papers))]
    meta = {
        "labels": old.labels,
        "stale_ids": list(old.stale_ids),
        "facets": [list(f) for f in code],
    }
    return arrays, meta


def write_columns(handle: BinaryIO, stamp: str, catalog: Catalog) -> None:
    """Write `catalog` to an open file in the layout above."""
    _write(handle, stamp, *columns_of(catalog))


def write_appended(handle: BinaryIO, stamp: str, old: MappedCatalog, added: Catalog) -> None:
    """Write `old` with `added`'s papers after its own (`appended_columns`)."""
    _write(handle, stamp, *appended_columns(old, added))


def _write(handle: BinaryIO, stamp: str, arrays: Parts, meta: dict[str, Any]) -> None:
    specs: dict[str, dict[str, Any]] = {}
    pieces: list[tuple[int, str, Any]] = []
    offset = 0
    for name, parts in arrays.items():
        offset = -(-offset // _ALIGN) * _ALIGN
        dtype = parts[0].dtype
        nbytes = sum(part.nbytes for part in parts)
        specs[name] = {
            "dtype": dtype.str,
            "shape": [sum(len(part) for part in parts)],
            "offset": offset,
            "bytes": nbytes,
        }
        for part in parts:
            assert part.dtype == dtype and part.ndim == 1, name
            pieces.append((offset, name, np.ascontiguousarray(part).data.cast("B")))
            offset += part.nbytes
    header = {"format": FORMAT, "stamp": stamp, "arrays": specs, "meta": meta, "size": offset}
    header["sha256"] = _digest(header, pieces, lambda start, end: b"\0" * (end - start))
    line = MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n"
    start = -(-len(line) // _ALIGN) * _ALIGN
    handle.write(line + b"\0" * (start - len(line)))
    written = 0
    for at, _, piece in pieces:
        handle.write(b"\0" * (at - written))
        handle.write(piece)
        written = at + len(piece)


def _digest(
    header: dict[str, Any],
    pieces: Iterable[tuple[int, str, Any]],
    gap: Callable[[int, int], Any],
) -> str:
    """sha256 of the header fields and the data: every array (but the text blobs) and the
    padding between them (`gap(start, end)`), so no byte outside the texts goes unseen."""
    digest = hashlib.sha256(json.dumps({k: header[k] for k in sorted(header)}).encode())
    end = 0
    for at, name, piece in sorted(pieces, key=lambda p: p[0]):
        digest.update(gap(end, at))
        if name not in _UNHASHED:
            digest.update(piece)
        end = at + len(piece)
    digest.update(gap(end, int(header["size"])))
    return digest.hexdigest()


def read_columns(path: Path, stamp: str) -> MappedCatalog:
    """Open the catalog file saved for `stamp`; ColumnsError if it is not one, whole."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                raise ColumnsError("not a catalog file")
            header = json.loads(handle.readline())
            start = -(-handle.tell() // _ALIGN) * _ALIGN
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ColumnsError("another format")
        if header.get("stamp") != stamp:
            raise ColumnsError("saved for another version of the index")
        if path.stat().st_size != start + int(header["size"]):
            raise ColumnsError("truncated")
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(int(header["size"]),))
        pieces = [
            (spec["offset"], name, data[spec["offset"] : spec["offset"] + spec["bytes"]])
            for name, spec in header["arrays"].items()
        ]
        expected = header.pop("sha256")
        if _digest(header, pieces, lambda start, end: data[start:end]) != expected:
            raise ColumnsError("damaged (checksum)")
        return MappedCatalog(path, header, data)
    except ColumnsError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ColumnsError(f"{type(exc).__name__}: {exc}") from None

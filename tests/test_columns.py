"""The catalog's mapped columns (rag/store/columns.py): what a process reads from the file
is what was saved, lookups find what a dict would, and a file that is not whole is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.retrieval.retrieve import Filters, Scope, papers_in, vocabulary_of
from rag.store.columns import (
    ColumnsError,
    DamagedRecord,
    MappedCatalog,
    read_columns,
    write_columns,
)
from rag.store.index import Catalog, StoredPaper
from rag.types import Paper

from .test_snapshot import catalog_view

PAPERS = [
    # (id, venue, year, status, area, keywords, chunks)
    ("p-b", "ICLR", 2026, "Poster", "RL", ("reinforcement learning",), 2),
    ("p-a", "ICLR", 2025, "Oral", None, ("diffusion", "vision"), 1),
    ("p-ü", "NeurIPS", 2026, None, "RL", (), 3),  # a non-ASCII id and text
    ("p-c", "ICLR", 2026, "Poster", "RL", ("graphs",), 1),
]


def a_catalog() -> Catalog:
    catalog = Catalog(stamp="s1", labels=3, stale_ids=["gone#0"])
    for pid, venue, year, status, area, keywords, n in PAPERS:
        paper = Paper(
            pid,
            f"Abstract of {pid}: naïve méthode, 模型 {n}.",
            title=f"Title {pid}",
            venue=venue,
            year=year,
            status=status,
            area=area,
            keywords=keywords,
            authors=("A. Author", "B. Author"),
        )
        chunk_ids = [f"{pid}#{i}" for i in range(n)]
        catalog.papers[pid] = StoredPaper(paper, f"hash-{pid}", chunk_ids, n)
    # rows interleave papers, as an update that rewrote one paper leaves them
    for i in range(3):
        for pid, *_, n in PAPERS:
            if i < n:
                catalog.ids.append(f"{pid}#{i}")
                catalog.texts.append(f"Title {pid}. chunk {i} of {pid} — ünïcode")
                catalog.paper_of.append(pid)
    return catalog


def saved(tmp_path: Path, catalog: Catalog, stamp: str = "s1") -> Path:
    path = tmp_path / f"catalog-{stamp}.cols"
    with open(path, "wb") as handle:
        write_columns(handle, stamp, catalog)
    return path


def test_what_is_read_back_is_what_was_saved(tmp_path: Path) -> None:
    catalog = a_catalog()
    mapped = read_columns(saved(tmp_path, catalog), "s1")
    assert catalog_view(mapped.materialize()) == catalog_view(catalog)
    assert mapped.materialize().labels == 3 and mapped.stamp == "s1"
    assert list(mapped.ids) == catalog.ids and list(mapped.texts) == catalog.texts
    assert mapped.texts[-1] == catalog.texts[-1] and mapped.texts[:2] == catalog.texts[:2]
    assert list(mapped.paper_of) == catalog.paper_of
    assert [mapped.paper_of[i] for i in range(len(catalog.ids))] == catalog.paper_of
    assert list(mapped.paper_ids) == catalog.paper_ids and mapped.stale_ids == ["gone#0"]
    assert np.array_equal(mapped.row_papers(), catalog.row_papers())
    assert mapped.n_chunks == catalog.n_chunks == 7


def test_lookups_find_what_a_dict_finds(tmp_path: Path) -> None:
    catalog = a_catalog()
    mapped = read_columns(saved(tmp_path, catalog), "s1")
    for pid, stored in catalog.papers.items():
        assert pid in mapped.papers and mapped.papers[pid].paper == stored.paper
        assert mapped.papers.get(pid) is mapped.papers[pid]  # decoded once, then kept
    for missing in ("p", "p-d", "", "p-a#0", 3):
        assert missing not in mapped.papers
    with pytest.raises(KeyError):
        mapped.papers["nope"]
    assert dict(mapped.papers.items()).keys() == catalog.papers.keys()
    rows = mapped.row_of()
    assert dict(rows.items()) == catalog.row_of()
    assert "p-a#1" not in rows and "nope#0" not in rows and len(rows) == 7


def test_a_filter_passes_the_papers_it_matches(tmp_path: Path) -> None:
    catalog = a_catalog()
    mapped = read_columns(saved(tmp_path, catalog), "s1")
    assert vocabulary_of(mapped) == vocabulary_of(catalog)
    vocabulary = vocabulary_of(catalog)
    for filters in (
        Filters(),
        Filters(venue="ICLR"),
        Filters(year=2026),
        Filters(venue="iclr", year=2026, status="poster"),
        Filters(year_min=2026),
        Filters(keyword="diffusion"),
        Filters(venue="ICML"),
    ):
        scope = Scope.of(filters, vocabulary)
        expected = [scope.match(sp.paper) for sp in catalog.papers.values()]
        if scope.empty:
            expected = [False] * len(expected)
        assert papers_in(mapped, scope).tolist() == expected, filters
        assert papers_in(catalog, scope).tolist() == expected, filters


def test_an_empty_catalog_roundtrips(tmp_path: Path) -> None:
    mapped = read_columns(saved(tmp_path, Catalog()), "s1")
    assert mapped.n_chunks == 0 and len(mapped.papers) == 0 and list(mapped.texts) == []
    assert catalog_view(mapped.materialize()) == catalog_view(Catalog())


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    magic, rest = data[: len(b"RAG-COLUMNS\n")], data[len(b"RAG-COLUMNS\n") :]
    line, _, body = rest.partition(b"\n")
    header = json.loads(line)
    if how == "truncated":
        path.write_bytes(data[:-1])
    elif how == "not-a-catalog":
        path.write_bytes(b"PK\x03\x04" + data[4:])
    elif how == "offsets":  # a flipped byte in the row -> paper numbers
        at = len(magic) + len(line) + 1
        at = -(-at // 64) * 64 + header["arrays"]["row_papers"]["offset"]
        path.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    elif how == "padding":  # a byte between two arrays
        spec = header["arrays"]["ids.blob"]
        at = -(-(len(magic) + len(line) + 1) // 64) * 64 + spec["offset"] + spec["bytes"]
        path.write_bytes(data[:at] + b"\x07" + data[at + 1 :])
    elif how == "format":
        header["format"] += 1
        path.write_bytes(magic + json.dumps(header).encode() + b"\n" + body)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how", ["truncated", "not-a-catalog", "offsets", "padding", "format", "stamp", "empty"]
)
def test_a_file_that_is_not_whole_is_refused(tmp_path: Path, how: str) -> None:
    path = saved(tmp_path, a_catalog())
    if how == "stamp":
        with pytest.raises(ColumnsError, match="another version"):
            read_columns(path, "s2")
        return
    if how == "empty":
        path.write_bytes(b"")
    else:
        _damage(path, how)
    with pytest.raises(ColumnsError):
        read_columns(path, "s1")


def test_a_damaged_record_names_the_file_and_removes_it(tmp_path: Path) -> None:
    catalog = a_catalog()
    path = saved(tmp_path, catalog)
    data = bytearray(path.read_bytes())
    at = data.index(b'{"paper":')  # the first record: not covered by the checksum
    data[at] = ord("[")
    path.write_bytes(bytes(data))
    mapped: MappedCatalog = read_columns(path, "s1")
    assert mapped.papers["p-a"].paper.paper_id == "p-a"  # other records still decode
    with pytest.raises(DamagedRecord, match=f"{path}.*record of paper 0"):
        mapped.papers["p-b"]
    assert not path.exists()  # the next process rebuilds it from the store

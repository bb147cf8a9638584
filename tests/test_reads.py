"""rag/store/reads.py: pread of a few rows, of BM25's columns and of catalog blobs gives
the bytes the mapping holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.store import reads


def mapped(tmp_path: Path, array: np.ndarray) -> np.ndarray:
    np.save(tmp_path / "a.npy", array)
    return np.load(tmp_path / "a.npy", mmap_mode="r")


def test_rows_read_with_pread_equal_the_mapped_rows(tmp_path: Path) -> None:
    matrix = np.random.default_rng(0).normal(size=(500, 24)).astype(np.float32)
    on_disk = mapped(tmp_path, matrix)
    picked = [499, 3, 3, 250, 0]
    got = reads.rows(on_disk, picked)
    assert not isinstance(got, np.memmap) and np.array_equal(got, matrix[picked])
    many = list(range(reads.MAX_ROWS + 1))  # through the mapping past MAX_ROWS
    assert np.array_equal(reads.rows(on_disk, many), matrix[many])
    assert np.array_equal(reads.rows(matrix, picked), matrix[picked])  # in memory
    assert np.array_equal(reads.rows(on_disk[10:], [0, 1]), matrix[10:12])  # a view


def test_warm_reads_ranges_and_leaves_the_array_as_it_is(tmp_path: Path) -> None:
    column = np.arange(10_000, dtype=np.int32)
    on_disk = mapped(tmp_path, column)
    reads.warm(on_disk, [(0, 10), (9_990, 10_000), (5, 5)])
    reads.warm(column, [(0, 10)])  # in memory: nothing to read
    assert np.array_equal(on_disk, column)


def test_a_blob_reads_byte_ranges_past_its_offset(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"HEADERhello world")
    blob = reads.Blob(path, 6)
    assert blob(0, 5) == b"hello" and blob(6, 11) == b"world"

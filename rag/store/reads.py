"""Small reads of the mapped snapshot files, done with pread.

A page fault on a mapped file that is not in the page cache reads the device's whole
read-ahead window around it: 8 MB on the Firecracker VM measured (`read_ahead_kb`), ~3 ms
a fault, for a 2.6 KB paper record or a 1.5 KB vector row. A question of a new process at
1M papers touches tens of such places (its hits' records and chunk texts, their vector
rows, BM25's columns of its terms), so its first questions waited on ~100-250 ms of disk
(Xeon, 2 cores, caches dropped). `pread` reads only the bytes asked for (0.08 ms for 4 KB
there) and leaves them in the page cache, so the mapping then finds them. Once the files
are cached (the read-ahead thread of `snapshot.prefetch`, or earlier questions) these
reads cost a copy of the same bytes.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence

import numpy as np

# Up to this many rows are read one pread each; more are taken through the mapping.
MAX_ROWS = 256


def _file_range(array: np.ndarray) -> tuple[str, int] | None:
    """The file and byte offset of a whole mapped array (np.load(mmap_mode='r')), else None
    (an in-memory array, or a slice: numpy keeps its parent's offset on a slice)."""
    if not isinstance(array, np.memmap) or array.filename is None:
        return None
    if isinstance(array.base, np.ndarray):  # a view of another mapped array
        return None
    if not array.flags.c_contiguous:
        return None
    return str(array.filename), int(array.offset)


def rows(array: np.ndarray, picked: Sequence[int]) -> np.ndarray:
    """`array[picked]` for a few rows of a mapped 2-D array, each read with pread."""
    where = _file_range(array)
    if where is None or len(picked) > MAX_ROWS or array.ndim != 2:
        return np.asarray(array[list(picked)])
    path, offset = where
    width = array.shape[1] * array.itemsize
    out = np.empty((len(picked), array.shape[1]), dtype=array.dtype)
    fd = os.open(path, os.O_RDONLY)
    try:
        for i, row in enumerate(picked):
            raw = os.pread(fd, width, offset + int(row) * width)
            if len(raw) != width:  # shorter than its header says: read through the map
                return np.asarray(array[list(picked)])
            out[i] = np.frombuffer(raw, dtype=array.dtype)
    finally:
        os.close(fd)
    return out


def warm(array: np.ndarray, ranges: Sequence[tuple[int, int]]) -> None:
    """Have the page cache hold `array[start:stop]` for each range of a mapped 1-D array
    (read with pread and dropped), before code that indexes the mapping reads them."""
    where = _file_range(array)
    if where is None or not ranges:
        return
    path, offset = where
    size = array.itemsize
    fd = os.open(path, os.O_RDONLY)
    try:
        for start, stop in ranges:
            if stop > start:
                os.pread(fd, (stop - start) * size, offset + start * size)
    finally:
        os.close(fd)


class Blob:
    """Byte ranges of a blob that starts `offset` bytes into the file at `path`, read with
    pread through one descriptor, closed with the object (a file replaced meanwhile is still
    read whole, as its mapping is)."""

    def __init__(self, path: str | os.PathLike[str], offset: int) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._offset = offset
        weakref.finalize(self, os.close, self._fd)

    def __call__(self, start: int, stop: int) -> bytes:
        return os.pread(self._fd, stop - start, self._offset + start)

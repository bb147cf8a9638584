"""Dense candidates past the exact search's size: an inverted-file index (faiss IVF, SQ8).

Below `Settings.ann_min_rows` chunks the dense search is one exact product with every
vector (AMD EPYC, 2 cores: 300,000 x 384 float32 rows take 16 ms a query, so ~75 ms at
1.4M chunks, over the 50 ms target alone). Above it, `AnnIndex` finds the nearest chunks
and scores them from its own codes, held in memory: rescoring them against the stored
float32 rows cost ~100 random reads of the 2 GB vector file a question at 1M papers, what
made a new process's first questions slow, and changed no ranking (recall@10 against
the exact search 0.927 rescored, 0.924 from the codes: 200,000 papers). The hits' own
cosines, which the abstention reads, are then computed exactly (a few rows). Its recall@10
against the exact search: `rag bench --scale`.

The index: `nlist` k-means cells over the unit vectors (about sqrt(rows)), each vector
stored as 8-bit scalar-quantised codes (384 bytes a vector instead of 1,536), a query
scanning its `nprobe` nearest cells. Deliberately left out: HNSW (its graph costs more
memory and minutes of build on 2 cores), product quantisation (lower recall), GPU.
Scoped searches pass a bitmap of the rows in scope (faiss's IDSelectorBitmap).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import secrets
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

TRAIN_PER_CELL = 40  # k-means sample per cell (faiss warns under 39)
MIN_CELLS, MAX_CELLS = 16, 4096


def cells_for(rows: int) -> int:
    """Cells for an index of `rows` vectors: ~sqrt(rows), 1,400,000 -> 1183."""
    return int(min(MAX_CELLS, max(MIN_CELLS, round(math.sqrt(rows)))))


class AnnIndex:
    """An IVF-SQ8 inner-product index over unit vectors (row number = chunk row)."""

    def __init__(self, index: Any, nprobe: int) -> None:
        self.index = index
        self.nprobe = nprobe

    @property
    def rows(self) -> int:
        """Vectors in the index."""
        return int(self.index.ntotal)

    @classmethod
    def build(cls, matrix: np.ndarray, nprobe: int, seed: int = 0) -> AnnIndex:
        """Train the cells on a sample of the rows and add every row (1.4M rows, 2 cores:
        about a minute)."""
        import faiss

        rows, dim = matrix.shape
        nlist = cells_for(rows)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        index.cp.seed = seed
        sample = min(rows, nlist * TRAIN_PER_CELL)
        picked = np.sort(np.random.default_rng(seed).choice(rows, sample, replace=False))
        index.train(np.ascontiguousarray(matrix[picked], dtype=np.float32))
        for start in range(0, rows, 100_000):  # in slices: a memory-mapped matrix stays so
            index.add(np.ascontiguousarray(matrix[start : start + 100_000], dtype=np.float32))
        return cls(index, nprobe)

    def search(
        self, vector: np.ndarray, depth: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Row numbers of up to `depth` approximate nearest rows (inside the mask), best
        first, and their inner products with the query computed from the 8-bit codes
        (within ~0.006 of the exact cosine, 0.001 on average: 284,000 MiniLM chunks)."""
        import faiss

        params = faiss.SearchParametersIVF()
        params.nprobe = self.nprobe
        if mask is not None:
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
        query = np.ascontiguousarray(vector.reshape(1, -1), dtype=np.float32)
        scores, found = self.index.search(query, depth, params=params)
        kept = found[0] >= 0
        return found[0][kept], scores[0][kept]

    def save(self, path: Path) -> bool:
        """Write the index atomically; False (and nothing) on OSError."""
        import faiss

        temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            faiss.write_index(self.index, str(temp))
            os.replace(temp, path)
            return True
        except (OSError, RuntimeError) as exc:  # faiss raises RuntimeError on I/O errors
            log.info("cannot save the ANN index %s: %s", path, exc)
            return False
        finally:
            with contextlib.suppress(OSError):  # e.g. the folder is a file
                temp.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path, rows: int, nprobe: int) -> AnnIndex | None:
        """The index saved at `path` if it reads back and holds `rows` vectors, else None."""
        import faiss

        try:
            index = faiss.read_index(str(path))
        except (OSError, RuntimeError) as exc:  # missing, truncated, another format
            log.info("ignoring ANN index %s: %s", path, exc)
            return None
        if int(index.ntotal) != rows:
            return None
        return cls(index, nprobe)

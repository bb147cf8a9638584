"""A stored paper -> the stored papers nearest to it ("papers like [2]").

Nearness is the cosine of paper vectors: a paper's vector is the mean of its chunks'
(with per-paper embedding, the one vector it was given: its title and the start of its
abstract), searched exactly among the stored vectors in memory (one product with them,
as the dense search does; it was Chroma's approximate HNSW index until 2026-12). The
paper itself never counts, nor do chunks a crash left behind. Deliberately left out: BM25
(an abstract as a 200-word query finds papers sharing its filler words) and citations
(the lists hold none).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rag.errors import RagError
from rag.store.index import CatalogView
from rag.types import Paper


class UnknownPaper(RagError, LookupError):
    """No stored paper has this id; the message names the index and the closest ids."""


@dataclass(frozen=True, slots=True)
class RelatedPaper:
    """A paper near another, with its cosine similarity to it."""

    paper_id: str
    title: str  # the real title, or the derived label (see `title_is_derived`)
    title_is_derived: bool
    score: float  # cosine similarity of the two paper vectors, in [-1, 1]
    venue: str | None = None
    year: int | None = None
    site: str | None = None


@dataclass(slots=True)
class Related:
    """What `rag related --json` prints: the paper, then its neighbours, nearest first."""

    paper_id: str
    title: str
    related: list[RelatedPaper] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """{"paper_id", "title", "related": [{"paper_id", "title", "score", ...}]}"""
        return {
            "paper_id": self.paper_id,
            "title": self.title,
            "related": [asdict(r) for r in self.related],
        }


def related(
    catalog: CatalogView,
    rows: Mapping[str, int],
    matrix: np.ndarray,
    paper_id: str,
    top_k: int = 10,
    keep: Callable[[Paper], bool] | None = None,
    location: str = "the index",
) -> Related:
    """The `top_k` stored papers nearest to `paper_id` (those `keep` passes: a scope).

    `matrix` holds every stored vector, a row per chunk in catalog order (what the dense
    search multiplies with; `rows` maps chunk ids to them): the search is one product
    with it, exact. A paper's score is
    its best chunk's cosine to the paper's mean vector."""
    stored = catalog.papers.get(paper_id)
    if stored is None:
        raise UnknownPaper(_unknown(paper_id, catalog, location))
    own = [rows[cid] for cid in stored.chunk_ids if cid in rows]
    if not own or len(matrix) != len(catalog.ids):
        raise UnknownPaper(f"paper {paper_id!r} has no stored vector in {location}")
    vector = matrix[own].mean(axis=0)
    norm = float(np.linalg.norm(vector))
    scores = matrix @ (vector / norm if norm > 0 else vector)
    found: dict[str, float] = {}
    for row in np.argsort(-scores, kind="stable"):
        pid = catalog.paper_of[row]
        if pid == paper_id or pid in found:
            continue
        other = catalog.papers.get(pid)
        if other is None or (keep is not None and not keep(other.paper)):
            continue
        found[pid] = float(scores[row])
        if len(found) >= top_k:
            break
    paper = stored.paper
    return Related(paper_id, paper.label, [_entry(catalog, pid, s) for pid, s in found.items()])


def _entry(catalog: CatalogView, paper_id: str, score: float) -> RelatedPaper:
    paper = catalog.papers[paper_id].paper
    return RelatedPaper(
        paper_id,
        paper.label,
        paper.label_is_derived,
        round(min(score, 1.0), 4),
        paper.venue,
        paper.year,
        paper.site,
    )


def _unknown(paper_id: str, catalog: CatalogView, location: str) -> str:
    """'no paper 'abc' in the index at X (closest ids: 'abd', ...)'."""
    close = difflib.get_close_matches(paper_id, list(catalog.papers), n=3, cutoff=0.6)
    hint = f" (closest ids: {', '.join(repr(c) for c in close)})" if close else ""
    return f"no paper {paper_id!r} in the index at {location}{hint}; `rag search` shows ids"

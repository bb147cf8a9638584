"""A stored paper -> the stored papers nearest to it ("papers like [2]").

Nearness is the cosine of paper vectors: a paper's vector is the mean of its chunks'
(with per-paper embedding, the one vector it was given: its title and the start of its
abstract), searched in Chroma's HNSW index. The paper itself never counts, nor do chunks
a crash left behind. Deliberately left out: BM25 (an abstract as a 200-word query finds
papers sharing its filler words) and citations (the lists hold none).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rag.errors import RagError
from rag.index import Catalog, Store
from rag.types import Paper, split_chunk_id


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
    store: Store,
    catalog: Catalog,
    paper_id: str,
    top_k: int = 10,
    where: dict[str, Any] | None = None,
    keep: Callable[[Paper], bool] | None = None,
) -> Related:
    """The `top_k` stored papers nearest to `paper_id` (inside `where` / `keep`, a scope)."""
    stored = catalog.papers.get(paper_id)
    if stored is None:
        raise UnknownPaper(_unknown(paper_id, catalog, store.location))
    _, vectors = store.vectors(stored.chunk_ids)
    if not len(vectors):
        raise UnknownPaper(f"paper {paper_id!r} has no stored vector in {store.location}")
    vector = vectors.mean(axis=0)
    found: dict[str, float] = {}
    total = store.count()
    depth = (top_k + 1) * 3  # a paper of ~1.4 chunks can fill several of the nearest slots
    while True:
        for chunk, score in store.query(vector, depth, where):
            pid = split_chunk_id(chunk)[0]
            other = catalog.papers.get(pid)
            if pid == paper_id or other is None or chunk not in other.chunk_ids:
                continue
            if keep is None or keep(other.paper):
                found[pid] = max(score, found.get(pid, -1.0))
        if len(found) >= top_k or depth >= total:
            break
        depth *= 4
    nearest = sorted(found, key=found.__getitem__, reverse=True)[:top_k]
    paper = stored.paper
    return Related(paper_id, paper.label, [_entry(catalog, pid, found[pid]) for pid in nearest])


def _entry(catalog: Catalog, paper_id: str, score: float) -> RelatedPaper:
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


def _unknown(paper_id: str, catalog: Catalog, location: str) -> str:
    """'no paper 'abc' in the index at X (closest ids: 'abd', ...)'."""
    close = difflib.get_close_matches(paper_id, list(catalog.papers), n=3, cutoff=0.6)
    hint = f" (closest ids: {', '.join(repr(c) for c in close)})" if close else ""
    return f"no paper {paper_id!r} in the index at {location}{hint}; `rag search` shows ids"

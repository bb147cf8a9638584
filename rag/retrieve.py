"""Question -> ranked papers: dense (Chroma) and BM25 (bm25s) fused by reciprocal rank fusion.

Fusion follows Cormack, Clarke & Buettcher (SIGIR 2009), as llama-index's
QueryFusionRetriever does: score(chunk) = sum_r w_r / (k + rank_r), k = 60. Chunk
scores are then grouped per paper (best chunk wins; at most `per_paper_cap` chunks kept
as evidence). BM25 lives in memory, built once from the catalog and rebuilt only when
the store changes (`refresh`), never per query.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import bm25s
import numpy as np
import Stemmer

from rag.config import Settings
from rag.embed import Embedder
from rag.index import Catalog, Store
from rag.text import content_words, normalise_terms
from rag.types import Hit, Paper

DEPTH_PER_K = 8  # candidates per requested paper from each retriever, before fusion


@dataclass(frozen=True, slots=True)
class Filters:
    """Metadata filters; None means any. Text fields match case-insensitively."""

    venue: str | None = None
    year: int | None = None
    status: str | None = None
    area: str | None = None
    keyword: str | None = None

    def where(self) -> dict[str, Any] | None:
        """The exact-match part as a Chroma `where` clause."""
        clauses = [
            {k: v}
            for k, v in (
                ("venue", self.venue),
                ("year", self.year),
                ("status", self.status),
                ("area", self.area),
            )
            if v
        ]
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def match(self, paper: Paper) -> bool:
        """Tell whether a paper passes every filter."""

        def same(a: str | None, b: str | None) -> bool:
            return b is None or (a or "").casefold() == b.casefold()

        keyword = (self.keyword or "").casefold()
        return (
            same(paper.venue, self.venue)
            and (self.year is None or paper.year == self.year)
            and same(paper.status, self.status)
            and same(paper.area, self.area)
            and (not keyword or any(keyword in k.casefold() for k in paper.keywords))
        )

    @property
    def active(self) -> bool:
        """Tell whether any filter is set."""
        return any(
            v is not None for v in (self.venue, self.year, self.status, self.area, self.keyword)
        )


class BM25Index:
    """Okapi BM25 over chunk texts, English stop words removed, Snowball-stemmed."""

    def __init__(self, texts: list[str]) -> None:
        self.stemmer = Stemmer.Stemmer("english")
        self.size = len(texts)
        self.model = bm25s.BM25()
        if texts:
            tokens = bm25s.tokenize(
                [self._prep(t) for t in texts],
                stopwords="en",
                stemmer=self.stemmer,
                show_progress=False,
            )
            self.model.index(tokens, show_progress=False)

    @staticmethod
    def _prep(text: str) -> str:
        return normalise_terms(text)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for the query (zeros when no term is known)."""
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        tokens = bm25s.tokenize(
            [self._prep(query)],
            stopwords="en",
            stemmer=self.stemmer,
            show_progress=False,
            return_ids=False,
        )[0]
        vocab = self.model.vocab_dict
        known = [t for t in tokens if t in vocab]
        if not known:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.model.get_scores(known), dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    catalog: Catalog
    bm25: BM25Index
    terms: TermStats
    rows: dict[str, int]


class TermStats:
    """Document frequencies of stemmed content words over papers, for term weighting."""

    def __init__(self, texts: list[str]) -> None:
        self.n = len(texts)
        self.df: Counter[str] = Counter(w for t in texts for w in content_words(t))

    def idf(self, word: str) -> float:
        """Inverse document frequency; unseen words weigh most: log((N+1)/0.5)."""
        return math.log((self.n + 1) / (self.df.get(word, 0) + 0.5))

    def coverage(self, question: str, text: str) -> float:
        """IDF-weighted share of the question's content words found in the text (0..1).

        'speculative decoding for KV caches' vs an abstract on speculative decoding: the
        rare 'kv', 'cach' weigh most, so coverage stays low although two words match.
        """
        asked = content_words(question)
        total = sum(self.idf(w) for w in asked)
        if not total:
            return 0.0
        return sum(self.idf(w) for w in asked & content_words(text)) / total


class Retriever:
    """Hybrid retrieval over one store; safe to share between threads."""

    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._lock = threading.RLock()
        self._catalog: Catalog | None = None
        self._snapshot: _Snapshot | None = None

    def refresh(self, catalog: Catalog | None = None) -> None:
        """Forget the in-memory state (after an ingest); it is rebuilt on next use."""
        with self._lock:
            self._catalog = catalog
            self._snapshot = None

    @property
    def catalog(self) -> Catalog:
        """What the store holds (loaded once, on first use)."""
        catalog = self._catalog
        if catalog is None:
            with self._lock:
                if self._catalog is None:
                    self._catalog = self.store.load_catalog()
                catalog = self._catalog
        return catalog

    @property
    def terms(self) -> TermStats:
        """Term statistics over the stored papers."""
        return self._state().terms

    def _state(self) -> _Snapshot:
        """BM25 and term statistics, built once per catalog (not per query)."""
        snapshot = self._snapshot
        if snapshot is None:
            catalog = self.catalog
            with self._lock:
                if self._snapshot is None:
                    texts = [
                        f"{sp.paper.label} {sp.paper.abstract}" for sp in catalog.papers.values()
                    ]
                    self._snapshot = _Snapshot(
                        catalog, BM25Index(catalog.texts), TermStats(texts), catalog.row_of()
                    )
                snapshot = self._snapshot
        return snapshot

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        mode: str | None = None,
        timings: dict[str, float] | None = None,
    ) -> list[Hit]:
        """Return up to top_k papers, best first."""
        top_k = top_k or self.settings.top_k
        mode = mode or self.settings.retriever
        filters = filters or Filters()
        state = self._state()  # one consistent snapshot, even if an ingest refreshes meanwhile
        catalog, bm25, rows = state.catalog, state.bm25, state.rows
        depth = max(50, top_k * DEPTH_PER_K)
        timings = timings if timings is not None else {}
        dense: list[tuple[str, float]] = []
        if mode in ("dense", "hybrid"):
            t0 = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed_query"] = _ms(t0)
            t0 = time.perf_counter()
            dense = [
                (c, s)
                for c, s in self.store.query(vector, depth, filters.where())
                if c in rows and (not filters.keyword or _passes(catalog, c, filters))
            ]
            timings["dense"] = _ms(t0)
        sparse: list[tuple[str, float]] = []
        if mode in ("bm25", "hybrid"):
            t0 = time.perf_counter()
            sparse = _top_bm25(bm25.scores(query), catalog, depth, filters)
            timings["bm25"] = _ms(t0)
        t0 = time.perf_counter()
        hits = self._fuse(dense, sparse, catalog, top_k)
        self._fill_similarity(hits, query)  # abstention needs it, whatever the retriever
        timings["fuse"] = _ms(t0)
        return hits

    def _fuse(
        self,
        dense: list[tuple[str, float]],
        sparse: list[tuple[str, float]],
        catalog: Catalog,
        top_k: int,
    ) -> list[Hit]:
        k, s = self.settings.rrf_k, self.settings
        fused: dict[str, float] = {}
        for weight, ranking in ((s.dense_weight, dense), (s.bm25_weight, sparse)):
            for rank, (cid, _) in enumerate(ranking, start=1):
                fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
        similarity = dict(dense)
        bm25_score = dict(sparse)
        hits: dict[str, Hit] = {}
        for cid in sorted(fused, key=fused.__getitem__, reverse=True):
            pid = cid.rpartition("#")[0]
            hit = hits.get(pid)
            if hit is None:
                if len(hits) == top_k:
                    continue
                hit = hits[pid] = Hit(paper=catalog.papers[pid].paper, score=fused[cid])
            if len(hit.chunk_indexes) < s.per_paper_cap:
                hit.chunk_indexes.append(int(cid.rpartition("#")[2]))
            if cid in similarity:
                hit.dense_similarity = max(hit.dense_similarity or -1.0, similarity[cid])
            if cid in bm25_score:
                hit.bm25_score = max(hit.bm25_score or 0.0, bm25_score[cid])
        return list(hits.values())

    def _fill_similarity(self, hits: list[Hit], query: str) -> None:
        """Give every hit its cosine similarity (BM25-only finds have none yet)."""
        missing = [h for h in hits if h.dense_similarity is None]
        if not missing:
            return
        vector = self.embedder.embed_query(query)
        for hit in missing:
            stored = self.catalog.papers.get(hit.paper.paper_id)
            ids = stored.chunk_ids if stored else []
            sims = self.store.similarities(vector, ids)
            hit.dense_similarity = max(sims) if sims else None


def _passes(catalog: Catalog, chunk_id: str, filters: Filters) -> bool:
    return filters.match(catalog.papers[chunk_id.rpartition("#")[0]].paper)


def _top_bm25(
    scores: np.ndarray, catalog: Catalog, depth: int, filters: Filters
) -> list[tuple[str, float]]:
    if not len(scores):
        return []
    if filters.active:
        mask = np.fromiter(
            (filters.match(catalog.papers[p].paper) for p in catalog.paper_of),
            dtype=bool,
            count=len(catalog.paper_of),
        )
        scores = np.where(mask, scores, 0.0)
    depth = min(depth, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    top = top[np.argsort(-scores[top])]
    return [(catalog.ids[i], float(scores[i])) for i in top if scores[i] > 0]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)

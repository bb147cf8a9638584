"""Question -> ranked papers: dense (Chroma) and BM25 (bm25s), fused per paper.

Each retriever's chunk scores are grouped per paper (its best chunk), then fused:
- `relative` (default): every retriever's paper scores are min-max normalised over its
  candidates and summed with the fusion weights (relative score fusion, as llama-index's
  QueryFusionRetriever calls it). Unlike ranks, scores keep how far ahead a paper is:
  among 22,000 abstracts BM25's clear winners stopped losing to a weaker dense vote
  (eval hit@1 0.82 -> 0.87, hit@5 0.95 -> 0.96; on the seeds alone 0.99 -> 0.98).
- `rrf`: reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009), k = 60.
A paper keeps at most `per_paper_cap` chunks as evidence, its best-scoring first. BM25
lives in memory, built once from the catalog and rebuilt only when the store changes
(`refresh`), never per query.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import bm25s
import numpy as np
import Stemmer

from rag.config import Settings
from rag.corpus.papers import same_paper, sentence_keys
from rag.embedding.embed import Embedder
from rag.question.reading import Vocabulary, status_matches, venue_key
from rag.retrieval.ann import AnnIndex
from rag.store import reads
from rag.store import snapshot as snapshots
from rag.store.index import CatalogView, Facet, Store, StoreError
from rag.text import (
    TERMS_VERSION,
    content_words,
    hyphen_words,
    is_english_word,
    mentions,
    near_word,
    normalise_terms,
    one_edit_apart,
    spelled_out,
    stems,
    stems_by_word,
    surface_words,
    words,
)
from rag.types import Filters, Hit, Paper, split_chunk_id

__all__ = ["Filters", "Retriever", "Scope"]

SPREAD_SAMPLE = 20_000  # chunk vectors the cosine spread of a query is estimated from
DEPTH_PER_K = 8  # candidates per requested paper from each retriever, before fusion
SAMPLED_ROWS = 100_000  # from here a top-k looks only above a sampled floor (`_best_rows`)
# A scoped search on a Chroma server names the scope's chunks up to this many (ids sent with
# each query); past it, it asks for more neighbours, at most SERVED_NEIGHBOURS_MAX.
SERVED_NAMED_MAX = 10_000
SERVED_NEIGHBOURS_MAX = 5_000
# Chunks from which BM25 runs beside the dense search (on the pool's thread). Below, one
# thread is as fast: at 2,648 chunks BM25 takes 0.25 ms and the hand-over eats it
# (retrieval p50 4.9 ms beside, 4.5 ms after one another, under load).
PARALLEL_ROWS = 20_000
# A lower-case word is read as the name the abstracts write when they write it so in at
# least this share of its uses: 'clip' -> CLIP (all of them), not 'map' -> MAP.
WRITTEN_AS_NAME = 0.8


@dataclass(frozen=True, slots=True)
class Scope:
    """Filters resolved against what the index holds: the stored spellings each text
    filter stands for (aliases and case folded), which the dense and BM25 masks test."""

    filters: Filters
    venues: frozenset[str] | None = None  # None: any
    statuses: frozenset[str] | None = None
    areas: frozenset[str] | None = None

    @classmethod
    def of(cls, filters: Filters, vocabulary: Vocabulary) -> Scope:
        """'neurips' -> {'NIPS'}; status 'accepted' -> every accepted status stored."""

        def pick(wanted: str | None, stored: frozenset[str], same: Any) -> frozenset[str] | None:
            return None if wanted is None else frozenset(v for v in stored if same(v, wanted))

        return cls(
            filters,
            pick(filters.venue, vocabulary.venues, lambda v, w: venue_key(v) == venue_key(w)),
            pick(filters.status, vocabulary.statuses, status_matches),
            pick(filters.area, vocabulary.areas, lambda v, w: v.casefold() == w.casefold()),
        )

    @property
    def empty(self) -> bool:
        """Tell whether a text filter matches no stored value (nothing can pass)."""
        return any(s is not None and not s for s in (self.venues, self.statuses, self.areas))

    def match(self, paper: Paper) -> bool:
        """Tell whether a paper passes every filter."""
        f = self.filters
        keyword = (f.keyword or "").casefold()
        return (
            (self.venues is None or paper.venue in self.venues)
            and (self.statuses is None or paper.status in self.statuses)
            and (self.areas is None or paper.area in self.areas)
            and (f.year is None or paper.year == f.year)
            and (f.year_min is None or (paper.year or 0) >= f.year_min)
            and (f.year_max is None or (paper.year or 10**4) <= f.year_max)
            and (not keyword or any(keyword in k.casefold() for k in paper.keywords))
            and (not f.author or written_by(paper.authors, f.author))
        )


def vocabulary_of(catalog: CatalogView) -> Vocabulary:
    """The venues, years, statuses and areas the catalog holds."""
    facets, _ = catalog.facets()
    return Vocabulary(
        venues=frozenset(f.venue for f in facets if f.venue),
        years=frozenset(f.year for f in facets if f.year),
        statuses=frozenset(f.status for f in facets if f.status),
        areas=frozenset(f.area for f in facets if f.area),
    )


def papers_in(catalog: CatalogView, scope: Scope) -> np.ndarray:
    """Which papers (numbered as `catalog.paper_ids`) pass the scope: each distinct venue,
    year, status and area tested once; a keyword or author filter reads every paper."""
    if scope.empty:
        return np.zeros(len(catalog.paper_ids), dtype=bool)
    if scope.filters.keyword or scope.filters.author:
        papers = catalog.papers.values()
        return np.fromiter((scope.match(sp.paper) for sp in papers), bool, len(catalog.papers))
    facets, codes = catalog.facets()
    passes = np.array([scope.match(_stand_in(f)) for f in facets] or [False], dtype=bool)
    return passes[codes]


def written_by(authors: Sequence[str], name: str) -> bool:
    """Tell whether one of `authors` is `name`: the full name ('Yoshua Bengio'), or the
    last name alone ('bengio': Yoshua and Samy), case aside."""
    wanted = " ".join(name.casefold().split())
    single = " " not in wanted
    return any(
        (held := " ".join(a.casefold().split())) == wanted
        or (single and held.rsplit(" ", 1)[-1] == wanted)
        for a in authors
    )


def author_names(catalog: CatalogView) -> frozenset[str]:
    """Every author's full name and last name the catalog's records give, folded: what a
    question's 'papers by ...' is looked up in (read once per catalog by the caller)."""
    names: set[str] = set()
    for stored in catalog.papers.values():
        for author in stored.paper.authors:
            full = " ".join(author.casefold().split())
            if full:
                names.update((full, full.rsplit(" ", 1)[-1]))
    return frozenset(names)


def _stand_in(facet: Facet) -> Paper:
    """A paper holding only the scope fields (what `Scope.match` reads without a keyword)."""
    return Paper("", "", venue=facet.venue, year=facet.year, status=facet.status, area=facet.area)


class BM25Index:
    """Okapi BM25 over chunk texts, English stop words removed, Snowball-stemmed."""

    def __init__(self, texts: Sequence[str]) -> None:
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

    _PARAMS = ("k1", "b", "delta", "method", "idf_method", "dtype", "int_dtype", "backend")
    _ARRAYS = ("data", "indices", "indptr")

    def arrays(self) -> dict[str, np.ndarray]:
        """The sparse score matrix's arrays (saved as mapped .npy files beside the state)."""
        return {name: self.model.scores[name] for name in self._ARRAYS} if self.size else {}

    def to_state(self, arrays: bool = True) -> dict[str, Any]:
        """The index as builtins and bytes, for the snapshot (what bm25s's `save` writes);
        without the arrays when they are saved on their own (`arrays`)."""
        state: dict[str, Any] = {
            "bm25s": bm25s.__version__,
            "terms": TERMS_VERSION,
            "size": self.size,
        }
        if self.size:
            model = self.model
            state["params"] = {name: getattr(model, name) for name in self._PARAMS}
            state["lengths"] = {name: len(model.scores[name]) for name in self._ARRAYS}
            if arrays:
                state["arrays"] = {
                    name: (model.scores[name].dtype.str, model.scores[name].tobytes())
                    for name in self._ARRAYS
                }
            state["num_docs"] = model.scores["num_docs"]
            state["vocab"] = dict(model.vocab_dict)
        return state

    @classmethod
    def from_state(
        cls, state: dict[str, Any], size: int, arrays: dict[str, np.ndarray] | None = None
    ) -> BM25Index:
        """Rebuild an index saved by `to_state` (as bm25s's `load` does), its arrays from
        the state or given (mapped); ValueError when it was saved by another bm25s or for
        another number of chunks, or its arrays are missing."""
        if (
            state["bm25s"] != bm25s.__version__
            or state.get("terms") != TERMS_VERSION
            or state["size"] != size
        ):
            raise ValueError("BM25 state of another bm25s version or catalog")
        index = cls([])
        index.size = size
        if size:
            model = bm25s.BM25(**state["params"])
            if model.method in model.methods_requiring_nonoccurrence:
                raise ValueError(f"BM25 method {model.method!r} is not saved")
            model.vocab_dict = state["vocab"]
            model.unique_token_ids_set = set(model.vocab_dict.values())
            if "arrays" in state:
                model.scores = {
                    name: np.frombuffer(raw, dtype=np.dtype(kind)).copy()
                    for name, (kind, raw) in state["arrays"].items()
                }
            elif arrays is not None and set(arrays) == set(cls._ARRAYS):
                model.scores = dict(arrays)
            else:
                raise ValueError("BM25 arrays missing")
            lengths = state.get("lengths")
            if lengths and any(len(model.scores[n]) != lengths[n] for n in cls._ARRAYS):
                raise ValueError("BM25 arrays of another index")
            model.scores["num_docs"] = state["num_docs"]
            model.nonoccurrence_array = None  # as `index` leaves it for these methods
            index.model = model
        return index

    def _known_tokens(self, query: str) -> list[str]:
        tokens = bm25s.tokenize(
            [self._prep(query)],
            stopwords="en",
            stemmer=self.stemmer,
            show_progress=False,
            return_ids=False,
        )[0]
        vocab = self.model.vocab_dict
        return [t for t in tokens if t in vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for the query (zeros when no term is known)."""
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        known = self._known_tokens(query)
        if not known:
            return np.zeros(self.size, dtype=np.float32)
        scores, indptr = self.model.scores, self.model.scores["indptr"]
        columns = [
            (int(indptr[t]), int(indptr[t + 1]))
            for t in map(self.model.vocab_dict.get, known)
            if t is not None
        ]
        for name in ("data", "indices"):  # the terms' columns, read exactly (rag/store/reads.py)
            reads.warm(scores[name], columns)
        return np.asarray(self.model.get_scores(known), dtype=np.float32)

    def ceiling(self, query: str) -> float:
        """The score of a chunk matching every query term as well as the best chunk for
        that term does: what a best score is measured against (0 when no term is known)."""
        if not self.size:
            return 0.0
        data, indptr = self.model.scores["data"], self.model.scores["indptr"]
        total = 0.0
        for token in self._known_tokens(query):
            i = self.model.vocab_dict[token]
            column = data[indptr[i] : indptr[i + 1]]
            total += float(column.max()) if len(column) else 0.0
        return total


@dataclass(frozen=True, slots=True)
class _Snapshot:
    catalog: CatalogView
    bm25: BM25Index
    terms: TermStats
    rows: Mapping[str, int]
    vocabulary: Vocabulary
    # (papers, chunk rows) in scope, per filters seen (bounded)
    masks: dict[Filters, tuple[np.ndarray, np.ndarray]]
    vectors: list[np.ndarray]  # [every stored vector, in catalog order] once loaded
    ann: list[AnnIndex | None]  # [the ANN index, or None below RAG_ANN_MIN_ROWS] once opened
    spread: list[tuple[np.ndarray, np.ndarray]]  # [(mean, covariance) of the vectors] once made

    def mask(self, scope: Scope) -> np.ndarray:
        """The chunk rows inside the scope: computed once per filters, not per query."""
        return self._masks(scope)[1]

    def inside(self, scope: Scope) -> np.ndarray:
        """The papers inside the scope (numbered as `catalog.paper_ids`), cached alike."""
        return self._masks(scope)[0]

    def _masks(self, scope: Scope) -> tuple[np.ndarray, np.ndarray]:
        masks = self.masks.get(scope.filters)
        if masks is None:
            papers = papers_in(self.catalog, scope)  # an author or keyword reads every paper
            masks = (papers, papers[self.catalog.row_papers()])
            if len(self.masks) >= 64:
                self.masks.clear()
            self.masks[scope.filters] = masks
        return masks


class TermStats:
    """Document frequencies of stemmed content words over papers, for term weighting."""

    def __init__(self, n: int = 0, df: Counter[str] | None = None) -> None:
        self.n = n  # the papers counted
        self.df: Counter[str] = df if df is not None else Counter()

    @classmethod
    def of(cls, texts: list[str]) -> TermStats:
        """The statistics of texts (`Retriever._scan` counts a catalog's in its one pass)."""
        return cls(len(texts), Counter(w for t in texts for w in content_words(t)))

    def to_state(self) -> dict[str, Any]:
        """The statistics as builtins, for the snapshot."""
        return {"n": self.n, "df": dict(self.df)}

    @classmethod
    def from_state(cls, state: dict[str, Any], n: int) -> TermStats:
        """Rebuild statistics saved by `to_state`; ValueError when made over another n."""
        if state["n"] != n or not isinstance(state["df"], dict):
            raise ValueError("term statistics of another catalog")
        return cls(n, Counter(state["df"]))

    def idf(self, word: str) -> float:
        """Inverse document frequency; unseen words weigh most: log((N+1)/0.5)."""
        return math.log((self.n + 1) / (self.df.get(word, 0) + 0.5))

    def found(
        self, question: str, text: str, names: Sequence[str] = ()
    ) -> tuple[set[str], set[str]]:
        """The question's content words (stems) the text holds, and those it lacks. A word
        one typo away from a word of the text counts as held ('unlearing' ~ 'unlearning').
        A word that is one of `names` ('clip' for CLIP) is held where the text names it as
        written ('CLIP', 'NeuCLIP'), not where it holds the word ('clipping')."""
        asked = stems_by_word(question)
        named = {n.casefold(): n for n in names}
        by_name = {w for w, surface in asked.items() if surface in named}
        have = content_words(text)
        held = {
            w
            for w in asked
            if w not in by_name and (w in have or (w.endswith("s") and w[:-1] in have))
        }
        held |= {w for w in by_name if mentions(text, named[asked[w]])}
        missing = set(asked) - held - by_name
        if missing:
            words = surface_words(text)
            held |= {w for w in missing if near_word(asked[w], words)}
        return held, set(asked) - held

    def coverage(
        self, question: str, text: str, names: Sequence[str] = (), known: bool = False
    ) -> float:
        """IDF-weighted share of the question's content words found in the text (0..1).

        'speculative decoding for KV caches' vs an abstract on speculative decoding: the
        rare 'kv', 'cach' weigh most, so coverage stays low although two words match.
        With `known`, only over the words some stored abstract holds: 'recsys that doesnt
        recommend everyone the same stuff' is judged on 'recommend', 'everyone', 'stuff',
        not on the 'recsys' and 'doesnt' no abstract writes (`rarest_missing` sees those).
        """
        held, missing = self.found(question, text, names)
        if known:
            missing = {w for w in missing if self.df.get(w, 0)}
        total = sum(self.idf(w) for w in held | missing)
        if not total:
            return 0.0
        return sum(self.idf(w) for w in held) / total

    def rarest_missing(self, question: str, text: str) -> float:
        """How rare the rarest question word the text lacks is, as a share of the largest
        IDF (1: a word no stored abstract holds, like 'splatting' among the seeds; 0: none
        is missing)."""
        _, missing = self.found(question, text)
        if not missing:
            return 0.0
        return max(self.idf(w) for w in missing) / math.log((self.n + 1) / 0.5)


class Retriever:
    """Hybrid retrieval over one store; safe to share between threads."""

    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self._lock = threading.RLock()
        self._catalog: CatalogView | None = None
        self._snapshot: _Snapshot | None = None
        self._spelling: Counter[str] | None = None  # stored words -> how often (for typos)
        self._long_forms: dict[str, tuple[str, ...]] | None = None  # acronym -> spelled out
        self._written: dict[str, str] = {}  # acronym (casefolded) -> as the abstracts write it
        self._names_written: dict[str, str | None] = {}  # 'clip' -> 'CLIP' (None: a word)
        self._names: dict[str, str] | None = None  # every word written as a name: 'clip' -> 'CLIP'

    def refresh(self, catalog: CatalogView | None = None) -> None:
        """Forget the in-memory state (after an ingest); it is rebuilt on next use."""
        with self._lock:
            self._catalog = catalog
            self._snapshot = None
            self._spelling = None
            self._long_forms = None
            self._names_written = {}
            self._names = None

    @property
    def catalog(self) -> CatalogView:
        """What the store holds (loaded once, on first use: from the on-disk snapshot when
        it matches the store's version stamp, else from Chroma; see rag/store/snapshot.py)."""
        catalog = self._catalog
        if catalog is None:
            with self._lock:
                if self._catalog is None:
                    self._catalog = snapshots.open_catalog(self.store)
                catalog = self._catalog
        return catalog

    @property
    def terms(self) -> TermStats:
        """Term statistics over the stored papers."""
        return self._state().terms

    def _state(self) -> _Snapshot:
        """BM25 and term statistics, built once per catalog (not per query), or loaded from
        the snapshot saved for the same version of the store (and saved once built)."""
        snapshot = self._snapshot
        if snapshot is None:
            with self._lock:
                if self._snapshot is None:
                    catalog = self.catalog  # under the lock: the one a `refresh` left
                    saved = snapshots.read(self.settings, "retrieval", catalog.stamp)
                    built: tuple[BM25Index, TermStats] | None = None
                    if isinstance(saved, dict):
                        try:
                            arrays = self._bm25_arrays(catalog.stamp)
                            built = (
                                BM25Index.from_state(saved["bm25"], catalog.n_chunks, arrays),
                                TermStats.from_state(saved["terms"], len(catalog.papers)),
                            )
                        except (KeyError, TypeError, ValueError):  # not for this catalog
                            built = None
                        if built is not None:
                            self._adopt_tables(saved)
                    if built is None:
                        built = (BM25Index(catalog.texts), self._scan(catalog))
                        if catalog.stamp:  # best effort: a read-only or full disk is fine
                            self._save_retrieval(catalog.stamp, *built)
                    self._snapshot = _Snapshot(
                        catalog, *built, catalog.row_of(), vocabulary_of(catalog), {}, [], [], []
                    )
                snapshot = self._snapshot
        return snapshot

    def _scan(self, catalog: CatalogView) -> TermStats:
        """One pass over the stored papers (each decoded once, its abstract's words found
        once) for what a new snapshot needs of them: the term statistics of label and
        abstract, and the tables `names`, `_acronyms` and `spelling_counts` would make
        on their own passes (each exactly as they make it)."""
        df: Counter[str] = Counter()
        spelling: Counter[str] = Counter()
        runs: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = {}
        written: dict[str, Counter[str]] = {}
        n = 0
        for stored in catalog.papers.values():
            paper, n = stored.paper, n + 1
            found = words(paper.abstract)
            df.update(frozenset(stems(words(paper.label) + found)))
            spelling.update(w for w in frozenset(found) if w.isalpha())
            runs.update(hyphen_words(paper.abstract))
            _count_acronyms(paper.abstract, forms, written)
        terms = TermStats(n, df)
        self._names = names_of_runs(runs)
        self._long_forms, self._written = _acronym_tables(forms, written)
        self._spelling = spelling
        return terms

    def _bm25_arrays(self, stamp: str | None) -> dict[str, np.ndarray] | None:
        """BM25's arrays saved for `stamp`, mapped; None when one is missing or damaged."""
        arrays = {
            name: snapshots.read_array(self.settings, f"bm25-{name}", stamp)
            for name in BM25Index._ARRAYS
        }
        found = {name: a for name, a in arrays.items() if a is not None}
        return found if len(found) == len(arrays) else None

    def _save_retrieval(self, stamp: str, bm25: BM25Index, terms: TermStats) -> None:
        """Save BM25's arrays as mapped .npy files, then the rest as retrieval.snap with
        the tables every question reads that a pass over all abstracts makes (the names,
        the acronyms: 1M papers, ~40 s and ~30 s, paid here once instead of by each new
        process's first question)."""
        for name, array in bm25.arrays().items():
            if not snapshots.write_array(self.settings, f"bm25-{name}", stamp, array):
                return
        state = {
            "bm25": bm25.to_state(arrays=False),
            "terms": terms.to_state(),
            "acronyms": [self._acronyms(), self._written],
        }
        snapshots.write(self.settings, "retrieval", stamp, state)
        # and the spelling counts and names as their own snapshots (`_scan` counted them)
        snapshots.write(self.settings, "spelling", stamp, dict(self.spelling_counts()))
        self._save_names(stamp, self.names())

    def _save_names(self, stamp: str, names: dict[str, str]) -> None:
        snapshots.write(self.settings, "names", stamp, {"version": NAMES_VERSION, "names": names})

    def _adopt_tables(self, saved: dict[str, Any]) -> None:
        """Take the acronym tables a retrieval snapshot holds (an older one holds none:
        they are then made on first use)."""
        acronyms = saved.get("acronyms")
        if isinstance(acronyms, list) and len(acronyms) == 2:
            self._long_forms, self._written = acronyms

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        searches: str | None = None,
        timings: dict[str, float] | None = None,
        lexical: str | None = None,
        prefer: Sequence[str] = (),
    ) -> list[Hit]:
        """Return up to top_k papers, best first (`lexical`: what BM25 searches, when it
        differs from `query`: the question less its framing words). Papers in `prefer`
        (what a follow-up's 'it' refers to) come first, in their fused order, when they are
        inside the filters. `searches`: dense | bm25 | hybrid (default RAG_RETRIEVER)."""
        top_k = top_k or self.settings.top_k
        searches = searches or self.settings.retriever
        state = self._state()  # one consistent snapshot, even if an ingest refreshes meanwhile
        catalog, bm25, rows = state.catalog, state.bm25, state.rows
        if not catalog.ids:  # an empty index holds nothing to search
            return []
        scope = Scope.of(filters or Filters(), state.vocabulary)
        if scope.empty:
            return []
        mask = state.mask(scope) if scope.filters.active else None
        if mask is not None and not mask.any():
            return []
        depth = max(50, top_k * DEPTH_PER_K)
        timings = timings if timings is not None else {}
        pinned = [
            cid
            for pid in prefer
            if pid in catalog.papers
            for cid in catalog.papers[pid].chunk_ids
            if cid in rows and (mask is None or mask[rows[cid]])
        ]

        def dense_search() -> list[tuple[str, float]]:
            t0 = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed_query"] = _ms(t0)
            t0 = time.perf_counter()
            nearest = self._dense(state, vector, depth, mask)
            found = [(catalog.ids[i], score) for i, score in nearest]
            seen = {c for c, _ in found}
            extra = [rows[c] for c in pinned if c not in seen]
            if extra:
                scores = self._cosines(state, extra, vector)
                found += [(catalog.ids[i], float(x)) for i, x in zip(extra, scores, strict=True)]
            timings["dense"] = _ms(t0)
            return found

        def sparse_search() -> list[tuple[str, float]]:
            t0 = time.perf_counter()
            scores = bm25.scores(lexical or query)
            found = _top(scores, catalog, depth, mask)
            seen = {c for c, _ in found}
            found += [
                (c, float(scores[rows[c]])) for c in pinned if c not in seen and scores[rows[c]] > 0
            ]
            timings["bm25"] = _ms(t0)
            return found

        dense: list[tuple[str, float]] = []
        sparse: list[tuple[str, float]] = []
        if searches == "hybrid" and len(rows) >= PARALLEL_ROWS:
            # BM25 on the pool's thread while this one embeds and asks Chroma: the model,
            # Chroma and BM25's numpy release the GIL.
            pending = _pool().submit(sparse_search)
            dense = dense_search()
            sparse = pending.result()
        else:
            dense = dense_search() if searches in ("dense", "hybrid") else []
            sparse = sparse_search() if searches in ("bm25", "hybrid") else []
        t0 = time.perf_counter()
        hits = self._fuse(dense, sparse, catalog, top_k + depth if prefer else top_k)
        if prefer:
            first = set(prefer)
            hits = [h for h in hits if h.paper.paper_id in first] + [
                h for h in hits if h.paper.paper_id not in first
            ]
        hits = hits[:top_k]
        # abstention needs it, whatever the retriever, and exact (the ANN's is near)
        approximate = searches != "bm25" and self._approximate(state, mask)
        self._fill_similarity(hits, query, every=approximate)
        timings["fuse"] = _ms(t0)
        return hits

    def correct(self, text: str) -> tuple[str, dict[str, str]]:
        """The text with typos of the index's words mended, and what was changed:
        'machine unlearing' -> ('machine unlearning', {'unlearing': 'unlearning'}). Only a
        word no stored abstract holds and English does not know is changed, to the most
        frequent stored word one edit away."""
        terms = self.terms
        fixes: dict[str, str] = {}
        for stem, word in stems_by_word(text).items():
            if terms.df.get(stem) or len(word) < 5 or not word.isalpha():
                continue
            if word not in fixes and not is_english_word(word):
                near = [w for w in self._spellings(word) if one_edit_apart(word, w)]
                if near:
                    fixes[word] = max(near, key=self.spelling_counts().__getitem__)
        for typo, fixed in fixes.items():
            text = re.sub(rf"(?i)\b{re.escape(typo)}\b", fixed, text)
        return text, fixes

    def aliases(self, terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """What the stored abstracts spell the terms out as: ('DCT',) -> {'DCT':
        ('discrete cosine transform',)}, the most frequent long forms first (at most 2)."""
        table = self._acronyms()
        return {t: table[t.casefold()] for t in terms if t.casefold() in table}

    def abbreviations(self, text: str) -> tuple[str, ...]:
        """The acronyms of the long forms a text spells out: 'which papers use the
        discrete cosine transform?' -> ('dct',), as the stored abstracts abbreviate it."""
        lowered = f" {' '.join(text.casefold().split())} "
        return tuple(
            acronym
            for acronym, forms in self._acronyms().items()
            if any(f" {form} " in lowered or f" {form}?" in lowered for form in forms)
        )

    def written_names(self, text: str) -> tuple[str, ...]:
        """The words typed in lower case that the stored abstracts write as a name in
        nearly every place they use them: 'clip' -> CLIP (written so wherever it stands
        alone; 'clipping', which shares its stem, is another word), 'imagenet' ->
        ImageNet (of 'ImageNet-1K'), 'qwen' -> Qwen (of 'Qwen3-8B'); not 'map', which
        abstracts also write as a word. Decided by the corpus, so a common English word
        is read as a name only where the abstracts use it as one. A name is matched as
        written (rag.text.mentions) and kept where a paper names it as an example."""
        found = []
        for word in dict.fromkeys(re.findall(r"(?<![\w-])[a-z][a-z0-9]+(?![\w-])", text)):
            name = self._written_as(word)
            if name:
                found.append(name)
        return tuple(found)

    def _written_as(self, word: str) -> str | None:
        """The one way the stored abstracts write `word` (any case, plural too) in at
        least WRITTEN_AS_NAME of its uses, when that is not lower case; cached until the
        store changes."""
        if word not in self._names_written:
            self._names_written[word] = self.names().get(word)
        return self._names_written[word]

    def names(self) -> dict[str, str]:
        """Every lower-case word the stored abstracts write one non-lower-case way in at
        least WRITTEN_AS_NAME of its uses: {'clip': 'CLIP'} (one pass over the abstracts,
        1M papers: about a minute, so it is saved as its own snapshot, `names.snap`, read
        by the first count; `_written_as` once scanned every abstract for each word a
        question held, ~18 s a word at 1M)."""
        table = self._names
        if table is None:
            with self._lock:
                if self._names is None:
                    stamp = self.catalog.stamp
                    saved = snapshots.read(self.settings, "names", stamp)
                    if isinstance(saved, dict) and saved.get("version") == NAMES_VERSION:
                        self._names = dict(saved["names"])
                    else:  # none, or made by an earlier rule: made again
                        self._names = names_written(
                            sp.paper.abstract for sp in self.catalog.papers.values()
                        )
                        if stamp:
                            self._save_names(stamp, self._names)
                table = self._names
        return table

    def acronym_spellings(self) -> dict[str, str]:
        """The acronyms the stored abstracts spell out, as they write them: {'dpo': 'DPO',
        'lora': 'LoRA'} (the most frequent spelling of each)."""
        self._acronyms()
        return self._written

    def _acronyms(self) -> dict[str, tuple[str, ...]]:
        table = self._long_forms
        if table is None:
            with self._lock:
                if self._long_forms is None:
                    forms: dict[str, Counter[str]] = {}
                    written: dict[str, Counter[str]] = {}
                    for sp in self.catalog.papers.values():
                        _count_acronyms(sp.paper.abstract, forms, written)
                    self._long_forms, self._written = _acronym_tables(forms, written)
                table = self._long_forms
        return table

    def spelling_counts(self) -> Counter[str]:
        """The stored abstracts' words as written (lower-cased) -> how often they occur
        (a pass over every abstract, 1M papers: minutes; so saved as its own snapshot,
        `spelling.snap`, read only by a process that meets a typo or a name)."""
        counts = self._spelling
        if counts is None:
            with self._lock:
                if self._spelling is None:
                    stamp = self.catalog.stamp
                    saved = snapshots.read(self.settings, "spelling", stamp)
                    if isinstance(saved, dict):
                        self._spelling = Counter(saved)
                    else:
                        papers = self.catalog.papers.values()
                        self._spelling = Counter(
                            w
                            for sp in papers
                            for w in surface_words(sp.paper.abstract)
                            if w.isalpha()
                        )
                        if stamp:  # best effort, as the retrieval snapshot
                            snapshots.write(self.settings, "spelling", stamp, dict(self._spelling))
                counts = self._spelling
        return counts

    def _spellings(self, word: str) -> list[str]:
        """Stored words that could be `word` with one edit (same first letter)."""
        return [
            w for w in self.spelling_counts() if w[:1] == word[:1] and abs(len(w) - len(word)) <= 1
        ]

    def held(self, word: str) -> float:
        """How much the index holds an English word or phrase: log(1 + the stored papers
        holding its rarest stem); 0 for a word none holds."""
        df = self.terms.df
        counts = [df.get(stem, 0) for stem in content_words(word)]
        return math.log1p(min(counts)) if counts else 0.0

    def bm25_scores(self, query: str) -> np.ndarray:
        """Each chunk row's BM25 score for the query, in catalog order (what a count weighs
        over the whole scope, rag/aggregate/matching.py)."""
        return self._state().bm25.scores(query)

    def lexical_ceiling(self, query: str) -> float:
        """The best BM25 score the query could reach here (see `BM25Index.ceiling`)."""
        return self._state().bm25.ceiling(query)

    def vocabulary(self) -> Vocabulary:
        """The scope values the index holds (venues, years, statuses, areas)."""
        return self._state().vocabulary

    def papers_inside(self, filters: Filters) -> tuple[CatalogView, np.ndarray]:
        """The catalog and which of its papers (numbered as `paper_ids`) are inside the
        filters, every one when none is set: from the mask the search caches."""
        state = self._state()
        if not filters.active:
            return state.catalog, np.ones(len(state.catalog.paper_ids), dtype=bool)
        scope = Scope.of(filters, state.vocabulary)
        if scope.empty:
            return state.catalog, np.zeros(len(state.catalog.paper_ids), dtype=bool)
        return state.catalog, state.inside(scope)

    def holds(self, filters: Filters) -> bool:
        """Tell whether any stored paper is inside the filters (from the cached mask the
        search uses, not a pass over the papers)."""
        state = self._state()
        scope = Scope.of(filters, state.vocabulary)
        if scope.empty:
            return False
        if not filters.active:
            return bool(state.catalog.papers)
        return bool(state.mask(scope).any())

    def _fuse(
        self,
        dense: list[tuple[str, float]],
        sparse: list[tuple[str, float]],
        catalog: CatalogView,
        top_k: int,
    ) -> list[Hit]:
        s = self.settings
        rankings = [(w, r) for w, r in ((s.dense_weight, dense), (s.bm25_weight, sparse)) if r]
        if len(rankings) == 1:  # one retriever (or one found nothing): its order stands
            rankings = [(1.0, rankings[0][1])]
        if s.fusion == "rrf":
            chunk_score = _rrf(rankings, s.rrf_k)
            paper_score = _best_per_paper(chunk_score)
        else:
            chunk_score, paper_score = _relative(rankings)
        by_paper: dict[str, list[str]] = {}
        for cid in sorted(chunk_score, key=chunk_score.__getitem__, reverse=True):
            by_paper.setdefault(_paper_id(cid), []).append(cid)
        similarity, bm25_score = dict(dense), dict(sparse)
        hits: list[Hit] = []
        keys: list[frozenset[str]] = []  # each hit's sentence keys, when versions fold
        for pid in sorted(paper_score, key=paper_score.__getitem__, reverse=True):
            if len(hits) == top_k:
                break
            paper = catalog.papers[pid].paper
            if s.fold_versions:
                own = sentence_keys(paper.abstract)
                first = next(
                    (h for h, k in zip(hits, keys, strict=True) if same_paper(own, k)), None
                )
                if first is not None:
                    first.versions.append(paper)
                    continue
                keys.append(own)
            hit = Hit(paper=paper, score=paper_score[pid])
            cids = by_paper[pid]
            hit.chunk_indexes = [split_chunk_id(c)[1] for c in cids[: s.per_paper_cap]]
            sims = [similarity[c] for c in cids if c in similarity]
            hit.dense_similarity = max(sims) if sims else None
            lexical = [bm25_score[c] for c in cids if c in bm25_score]
            hit.bm25_score = max(lexical) if lexical else None
            hits.append(hit)
        return hits

    def _approximate(self, state: _Snapshot, mask: np.ndarray | None) -> bool:
        """Tell whether a dense search inside `mask` scores from the ANN index's codes."""
        if self._served(state) or self._ann(state) is None:
            return False
        in_scope = len(state.catalog.ids) if mask is None else int(mask.sum())
        return in_scope >= self.settings.ann_min_rows

    def _fill_similarity(self, hits: list[Hit], query: str, every: bool = False) -> None:
        """Give every hit its exact cosine similarity: the hits without one (BM25-only
        finds), or `every` hit (the ANN index's scores are near, not exact)."""
        missing = [h for h in hits if every or h.dense_similarity is None]
        if not missing:
            return
        vector = self.embedder.embed_query(query)
        state = self._state()
        rows_of = []
        for hit in missing:
            stored = state.catalog.papers.get(hit.paper.paper_id)
            rows_of.append(
                [state.rows[c] for c in (stored.chunk_ids if stored else []) if c in state.rows]
            )
        # one product (or one request to a Chroma server) for every missing hit's chunks
        cosines = self._cosines(state, [r for rows in rows_of for r in rows], vector)
        ends = np.cumsum([len(rows) for rows in rows_of])
        for hit, scores in zip(missing, np.split(cosines, ends[:-1]), strict=True):
            hit.dense_similarity = float(scores.max()) if len(scores) else None

    def _cosines(self, state: _Snapshot, rows: list[int], vector: np.ndarray) -> np.ndarray:
        """The query's cosine to the given chunk rows: from the stored vectors, or asked of
        the Chroma server when it searches (`_served`)."""
        if self._served(state):
            ids = [state.catalog.ids[i] for i in rows]
            return np.asarray(self.store.similarities(vector, ids), dtype=np.float32)
        return _dot(reads.rows(self._matrix(state), rows), vector)

    def cosine_spread(self, vector: np.ndarray) -> tuple[float, float]:
        """The mean and standard deviation of the query's cosine over every stored chunk,
        without a pass over them: q . mean and sqrt(q' C q), the mean and covariance C of
        the vectors estimated once per index version from at most SPREAD_SAMPLE of them
        (what tells a paper that stands out for a question from one that is merely the
        closest of many equally far: rag/answering/answerable.py `dense_z`)."""
        state = self._state()
        if not state.catalog.ids:
            return 0.0, 1.0
        if not state.spread:
            with self._lock:
                if not state.spread:
                    state.spread.append(self._spread_of(state))
        mean, covariance = state.spread[0]
        q = np.asarray(vector, dtype=np.float64)
        return float(q @ mean), math.sqrt(max(float(q @ covariance @ q), 1e-12))

    def _spread_of(self, state: _Snapshot) -> tuple[np.ndarray, np.ndarray]:
        ids = state.catalog.ids
        rows = np.unique(np.linspace(0, len(ids) - 1, min(len(ids), SPREAD_SAMPLE)).astype(int))
        if self._served(state):  # the server's vectors: a sample, never all of them
            _, sample = self.store.vectors([ids[i] for i in rows])
        else:
            sample = self._matrix(state)[rows]
        sample = np.asarray(sample, dtype=np.float64)
        if len(sample) < 2:
            return sample.mean(axis=0), np.zeros((sample.shape[1], sample.shape[1]))
        return sample.mean(axis=0), np.cov(sample, rowvar=False)

    def _served(self, state: _Snapshot) -> bool:
        """Tell whether the dense search is the Chroma server's: with RAG_CHROMA_URL past
        RAG_ANN_MIN_ROWS chunks the server's HNSW index answers it, so an instance does not
        pull every vector (1M chunks: 1.5 GB) to answer a question."""
        s = self.settings
        past = len(state.catalog.ids) >= max(1, s.ann_min_rows)
        return bool(s.chroma_url) and s.server_dense == "server" and past

    def exact(self) -> bool:
        """Tell whether the dense search reads every stored vector in this process (below
        RAG_ANN_MIN_ROWS chunks, not the Chroma server's): per-paper work over the whole
        index is then cheap."""
        state = self._state()
        return not self._served(state) and len(state.catalog.ids) < max(
            1, self.settings.ann_min_rows
        )

    def prefetch(self) -> threading.Thread | None:
        """Have the kernel read this index's mapped snapshot files into the page cache on a
        thread of its own (rag/store/snapshot.py `prefetch`; off with RAG_PREFETCH=false)."""
        if not self.settings.prefetch:
            return None
        return snapshots.prefetch(self.settings, self.catalog.stamp)

    def stored_vectors(self) -> tuple[CatalogView, Mapping[str, int], np.ndarray]:
        """The catalog, its chunk id -> row map, and every stored vector, a row per chunk
        in its order (one consistent view, even if an ingest refreshes meanwhile)."""
        state = self._state()
        return state.catalog, state.rows, self._matrix(state)

    def dense_rows(
        self, vector: np.ndarray, depth: int, exact: bool = False
    ) -> list[tuple[int, float]]:
        """The `depth` chunk rows nearest the query vector, best first, with their cosine:
        through the ANN index past RAG_ANN_MIN_ROWS unless `exact` (what recall@10 of the
        ANN index is measured against, eval/scale.py)."""
        state = self._state()
        if exact:
            return _best_rows(_dot(self._matrix(state), vector), depth, None)
        return self._dense(state, vector, depth, None)

    def _dense(
        self, state: _Snapshot, vector: np.ndarray, depth: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """Nearest rows inside the mask: exact below RAG_ANN_MIN_ROWS rows (or when the
        mask keeps fewer), else the ANN index's, scored from its codes (`approximate`); with
        a Chroma server past RAG_ANN_MIN_ROWS, its HNSW index's."""
        if self._served(state):
            return self._served_rows(state, vector, depth, mask)
        ann = self._ann(state)
        if ann is not None and self._approximate(state, mask):
            rows, scores = ann.search(vector, depth, mask)
            return [(int(r), float(x)) for r, x in zip(rows, scores, strict=True)]
        matrix = self._matrix(state)
        if mask is not None and int(mask.sum()) < len(matrix) // 4:
            picked = np.flatnonzero(mask)  # a narrow scope: only its rows are read
            best = _best_rows(_dot(matrix[picked], vector), depth, None)
            return [(int(picked[i]), score) for i, score in best]
        return _best_rows(_dot(matrix, vector), depth, mask)

    def _served_rows(
        self, state: _Snapshot, vector: np.ndarray, depth: int, mask: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """Nearest rows inside the mask from the Chroma server: a scope of at most
        SERVED_NAMED_MAX chunks names them; a wider one asks for enough neighbours that
        about 2 x depth fall inside it (at most SERVED_NEIGHBOURS_MAX, so a scope of under
        ~2% of the chunks may return fewer than depth). A chunk written after this catalog was
        read is passed over until the next refresh. (Asking 4 x depth, which widens the
        HNSW search, moved recall@10 at 281k chunks in one collection only 0.59 -> 0.61,
        slower; two collections of at most 250k chunks gave 0.83.)"""
        catalog, rows = state.catalog, state.rows
        total = len(catalog.ids)
        in_scope = total if mask is None else int(mask.sum())
        if mask is not None and in_scope <= SERVED_NAMED_MAX:
            scoped = [catalog.ids[int(i)] for i in np.flatnonzero(mask)]
            found = self.store.nearest(vector, depth, scoped)
        elif mask is None:
            found = self.store.nearest(vector, depth)
        else:
            wanted = -(-2 * depth * total // in_scope)
            found = self.store.nearest(vector, min(total, wanted, SERVED_NEIGHBOURS_MAX))
        best = [(rows[c], score) for c, score in found if c in rows]
        return [(i, s) for i, s in best if mask is None or mask[i]][:depth]

    def _ann(self, state: _Snapshot) -> AnnIndex | None:
        """The ANN index past RAG_ANN_MIN_ROWS chunks (None below): read from the snapshot
        saved for this version of the store, else built from the vectors and saved."""
        if state.ann:
            return state.ann[0]
        with self._lock:
            if not state.ann:
                rows, stamp = len(state.catalog.ids), state.catalog.stamp
                ann = None
                if rows and rows >= self.settings.ann_min_rows:
                    path = snapshots.stamped_path(self.settings, "ann", stamp, ".faiss")
                    nprobe = self.settings.ann_nprobe
                    ann = AnnIndex.load(path, rows, nprobe) if path and path.exists() else None
                    if ann is None:
                        ann = AnnIndex.build(self._matrix(state), nprobe)
                        if path is not None and stamp and ann.save(path):
                            snapshots.remove_other_stamps(self.settings, "ann", stamp)
                state.ann.append(ann)
        return state.ann[0]

    def _matrix(self, state: _Snapshot) -> np.ndarray:
        """Every stored vector, a row per chunk in catalog order: the dense search is one
        product with it (exact; 2,648 chunks: 1.5 ms through Chroma, ~0.1 ms here). Read
        from the snapshot saved for this version of the store, else from the store."""
        if state.vectors:
            return state.vectors[0]
        with self._lock:
            if not state.vectors:
                catalog = state.catalog
                matrix = snapshots.read_array(
                    self.settings, "vectors", catalog.stamp, len(catalog.ids)
                )
                if matrix is None:
                    found, read = self.store.vectors(catalog.ids)
                    if found != catalog.ids:
                        where = {cid: i for i, cid in enumerate(found)}
                        if len(where) != len(catalog.ids):
                            raise StoreError(
                                f"the index at {self.store.location} changed while read"
                            )
                        read = read[[where[cid] for cid in catalog.ids]]
                    matrix = read
                    if catalog.stamp and len(matrix):
                        written = snapshots.write_array(
                            self.settings, "vectors", catalog.stamp, matrix
                        )
                        if written:  # mapped: the process's copy goes, the OS caches pages
                            matrix = snapshots.read_array(
                                self.settings, "vectors", catalog.stamp, len(catalog.ids)
                            )
                            matrix = read if matrix is None else matrix
                state.vectors.append(matrix)
        return state.vectors[0]


def _dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row's dot product with the vector, on this thread. Not `matrix @ vector`: BLAS
    runs that on two threads, and with another process on one core the second thread
    waits for a time slice (12 questions, 2,648 chunks, under load: dense p50 5.4 ms
    through BLAS, 0.2 ms here; 31,000 chunks: 1.7 ms)."""
    if not len(matrix):
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,j->i", matrix, vector)


NAMES_VERSION = (
    2  # bump when `names_of_runs` changes what it finds: saved tables are then made again
)
_NAME_WORD = re.compile(r"[a-z][a-z0-9]+")  # the words `written_names` looks up


def names_written(abstracts: Iterable[str]) -> dict[str, str]:
    """Lower-case word -> its written form, where one form that is not lower case holds
    at least WRITTEN_AS_NAME of the word's uses (a use: a whole run of word characters and
    hyphens equal to the word or its plural, in any case; a plural counts as the word):
    ['CLIP and CLIPs', 'the clip'] -> {} (2 uses of 3); ['CLIP, CLIPs, NeuCLIP'] ->
    {'clip': 'CLIP'} (NeuCLIP is another word)."""
    runs: Counter[str] = Counter()
    for text in abstracts:
        runs.update(hyphen_words(text))
    return names_of_runs(runs)


def names_of_runs(runs: Counter[str]) -> dict[str, str]:
    """`names_written` from the runs its abstracts hold, counted. A run's head counts as a
    use too, the word before its first hyphen and the letters before a version number:
    'ImageNet' of 'ImageNet-1K', 'LLaMA' of 'LLaMA-3', 'Qwen' of 'Qwen3-8B' (and 'low' of
    'low-rank', so that 'Low-rank' opening a sentence makes no name of 'low')."""
    uses: dict[str, Counter[str]] = {}
    for run, times in runs.items():
        for written in _run_words(run):
            if not written.isascii():  # (the words looked up are ASCII)
                continue
            folded = written.lower()
            if _NAME_WORD.fullmatch(folded):
                uses.setdefault(folded, Counter())[written] += times
            if len(written) > 2 and written[-1] in "sS" and _NAME_WORD.fullmatch(folded[:-1]):
                uses.setdefault(folded[:-1], Counter())[written.removesuffix("s")] += times
    names = {}
    for word, forms in uses.items():
        written, times = forms.most_common(1)[0]
        if written != written.lower() and times >= WRITTEN_AS_NAME * forms.total():
            names[word] = written
    return names


_VERSIONED = re.compile(r"([A-Za-z]{3,})\d[\w.]*")  # 'Qwen3', 'ResNet50': a name, a version


def _run_words(run: str) -> list[str]:
    """A run and its head: 'ImageNet-1K' -> ['ImageNet-1K', 'ImageNet'], 'Qwen3-8B' ->
    ['Qwen3-8B', 'Qwen3', 'Qwen'], 'CLIP' -> ['CLIP']."""
    found = [run]
    head = run.split("-", 1)[0]
    if head and head != run:
        found.append(head)
    versioned = _VERSIONED.fullmatch(head)
    if versioned:
        found.append(versioned[1])
    return found


def _count_acronyms(
    abstract: str, forms: dict[str, Counter[str]], written: dict[str, Counter[str]]
) -> None:
    """Count the acronyms an abstract spells out: their long forms and their spellings."""
    for acronym, long in spelled_out(abstract).items():
        forms.setdefault(acronym.casefold(), Counter())[long.casefold()] += 1
        written.setdefault(acronym.casefold(), Counter())[acronym] += 1


def _acronym_tables(
    forms: dict[str, Counter[str]], written: dict[str, Counter[str]]
) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Acronym -> its two most frequent long forms, and -> its most frequent spelling."""
    long_forms = {a: tuple(f for f, _ in c.most_common(2)) for a, c in forms.items()}
    return long_forms, {a: c.most_common(1)[0][0] for a, c in written.items()}


def _best_rows(scores: np.ndarray, depth: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
    """The `depth` best-scoring rows inside the mask, best first, with their scores."""
    if not len(scores):
        return []
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    depth = min(depth, len(scores))
    rows = _above_sampled_floor(scores, depth)  # the same best rows, from a few hundred
    picked = scores if rows is None else scores[rows]
    chosen = np.arange(len(picked))
    if len(picked) > depth:  # the best `depth`; of rows tied at the cut, the first ones
        cut = np.partition(picked, len(picked) - depth)[len(picked) - depth]
        above = np.flatnonzero(picked > cut)
        chosen = np.concatenate([above, np.flatnonzero(picked == cut)[: depth - len(above)]])
    top = chosen if rows is None else rows[chosen]
    top = top[np.lexsort((top, -scores[top]))]  # ties (a paper's equal chunks): by row
    return [(int(i), float(scores[i])) for i in top if scores[i] > -np.inf]


SAMPLE_STRIDE = 16  # every 16th row estimates the floor of a large top-k (`_best_rows`)


def _above_sampled_floor(scores: np.ndarray, depth: int) -> np.ndarray | None:
    """The rows scoring at least the `depth`-th best score of every SAMPLE_STRIDE-th row:
    those rows are themselves `depth` rows, so the best `depth` of all are among them
    (exact), and there are about SAMPLE_STRIDE x depth of them. None below SAMPLED_ROWS
    rows, or when the floor keeps too many (ties, masked rows), where one partition of
    every row is as fast (1.4M chunks: the BM25 top 50 in ~2 ms instead of ~12)."""
    if len(scores) < SAMPLED_ROWS:
        return None
    sample = scores[::SAMPLE_STRIDE]
    if len(sample) < depth:
        return None
    floor = np.partition(sample, len(sample) - depth)[len(sample) - depth]
    if not np.isfinite(floor):
        return None
    rows = np.flatnonzero(scores >= floor)
    return rows if len(rows) <= len(scores) // 8 else None


def _paper_id(chunk_id: str) -> str:
    return split_chunk_id(chunk_id)[0]


def _best_per_paper(scores: dict[str, float]) -> dict[str, float]:
    best: dict[str, float] = {}
    for cid, score in scores.items():
        pid = _paper_id(cid)
        best[pid] = max(score, best.get(pid, score))
    return best


def _rrf(rankings: list[tuple[float, list[tuple[str, float]]]], k: int) -> dict[str, float]:
    """Chunk scores by reciprocal rank fusion: sum of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for weight, ranking in rankings:
        for rank, (cid, _) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return fused


def _relative(
    rankings: list[tuple[float, list[tuple[str, float]]]],
) -> tuple[dict[str, float], dict[str, float]]:
    """Chunk and paper scores by relative score fusion.

    Per retriever, each paper's best chunk score is min-max normalised over the papers it
    returned (the best gets 1, the weakest 0, papers it missed 0); the fused score is the
    weighted mean. Chunks are scored the same way, to order a paper's evidence.
    """
    total = sum(w for w, _ in rankings) or 1.0
    chunk_score: dict[str, float] = {}
    paper_score: dict[str, float] = {}
    for weight, ranking in rankings:
        if not ranking:
            continue
        low = min(score for _, score in ranking)
        span = max(score for _, score in ranking) - low
        share = weight / total
        normed = {cid: (score - low) / span if span else 1.0 for cid, score in ranking}
        for cid, value in normed.items():
            chunk_score[cid] = chunk_score.get(cid, 0.0) + share * value
        for pid, value in _best_per_paper(normed).items():
            paper_score[pid] = paper_score.get(pid, 0.0) + share * value
    return chunk_score, paper_score


def _top(
    scores: np.ndarray,
    catalog: CatalogView,
    depth: int,
    mask: np.ndarray | None,
    keep_zero: bool = False,
) -> list[tuple[str, float]]:
    """The `depth` best-scoring chunks inside the mask, best first (BM25: score > 0)."""
    floor = -np.inf if keep_zero else 0.0
    return [
        (catalog.ids[i], score) for i, score in _best_rows(scores, depth, mask) if score > floor
    ]


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    """One worker for the BM25 half of hybrid searches, shared by every retriever."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="rag-bm25")


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)

"""A topic + a scope -> every paper of the scope that is about it: the set a count counts.

Retrieval (rag/retrieval/retrieve.py) ranks the top k; a count needs a set, decided paper by paper
over the whole scope. Each paper of the scope is weighed (the best `match_depth` by BM25
and by cosine, which is every paper of a scope up to that size) on its evidence, each
in about 0..1:
  - `coverage`: IDF-weighted share of the topic's content words the paper holds (a
    word that is one of the topic's names, 'clip' for CLIP, only where the paper names
    it: 'CLIP' or 'NeuCLIP', not 'clipping'), its example clauses left out: "used in
    applications such as medical diagnosis and autonomous driving" is not a paper about
    autonomous driving (rag.text.without_examples; a name of the topic's counts there);
  - `sentence_coverage`: the same share for its best sentence (the words together:
    'speculative decoding' in one sentence, not 'speculative' here and 'decoding' there);
  - `title_coverage`: the same share for its title or derived label;
  - `bm25`: its best chunk's BM25 score over the topic's ceiling (rag/retrieval/retrieve.py);
  - `bm25_share`: that score over the best one in the scope;
  - `dense`: cosine of the topic to the paper's vector;
  - `dense_gap`: how far its cosine is below the best one in the scope;
  - `terms`: share of the topic's names ('GRPO', 'DCT') the paper names.
A logistic model over them gives P(member); members are the papers at or above its
threshold. Weights and threshold are fitted on labelled count questions by `rag eval
calibrate-count` (eval/matchfit.py) and read from rag/data/match.json (or
RAG_MATCH_FILE); nothing is hand-set. What it leaves out: the LLM (a set of hundreds is
decided offline, the same with or without an endpoint).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from rag.answering.answerable import Model
from rag.config import DATA_DIR, load_fitted
from rag.embedding.embed import Embedder
from rag.retrieval.retrieve import Retriever, Scope, papers_in
from rag.store.index import CatalogView
from rag.text import mentions, split_sentences, without_examples
from rag.types import Filters, Paper

FEATURES = (
    "coverage",
    "sentence_coverage",
    "title_coverage",
    "bm25",
    "bm25_share",
    "dense",
    "dense_gap",
    "terms",
)
DEFAULT_MODEL = DATA_DIR / "match.json"
NEAREST = 3  # papers below the cut a count of none still shows, to open and judge
NEAREST_SHARE = 0.1  # ... each with a P(member) of at least this share of the cut


@lru_cache(maxsize=4)
def load_model(path: Path | None = None) -> Model:
    """The fitted cut (default: the one shipped in rag/data)."""
    return load_fitted(
        path or DEFAULT_MODEL, "match model", lambda data: Model.from_json(data, FEATURES, "match")
    )


@dataclass(frozen=True, slots=True)
class Candidate:
    """One paper of the scope, its evidence and, once a model is applied, P(member)."""

    paper: Paper
    features: dict[str, float]
    probability: float = 0.0


@dataclass(frozen=True, slots=True)
class Matches:
    """The papers of a scope weighed for a topic: members first, most probable first."""

    topic: str
    members: list[Candidate]
    weighed: int  # papers whose evidence was measured
    in_scope: int  # papers inside the scope
    threshold: float
    nearest: list[Candidate] = field(default_factory=list)  # the most probable below the cut
    alternatives: tuple[str, ...] = ()  # the other topics a member may be about instead


@dataclass(frozen=True, slots=True)
class _Weighed:
    """One topic weighed over the scope: every paper's cosine and best BM25 score."""

    topic: str
    dense: np.ndarray
    lexical: np.ndarray
    ceiling: float  # the topic's BM25 ceiling (rag/retrieval/retrieve.py)
    best_dense: float  # the scope's best cosine
    best_bm25: float  # ... and best BM25 score
    order: list[int]  # the papers to weigh, as numbered in the catalog

    def features(
        self, i: int, paper: Paper, retriever: Retriever, names: tuple[str, ...]
    ) -> dict[str, float]:
        """Paper `i`'s evidence of being about the topic (see the module docstring)."""
        topic, terms = self.topic, retriever.terms
        text = f"{paper.label} {paper.abstract}"
        coverage = terms.coverage(topic, text, names)
        sentences = split_sentences(paper.abstract) if coverage > 0 else []
        stated = [_stated(s, names) for s in sentences]
        if stated != sentences:  # an example clause held some of its words
            coverage = terms.coverage(topic, " ".join([paper.label, *stated]), names)
        return {
            "coverage": coverage,
            "sentence_coverage": max(
                (terms.coverage(topic, s, names) for s in stated), default=0.0
            ),
            "title_coverage": terms.coverage(topic, paper.label, names) if paper.label else 0.0,
            "bm25": min(1.0, float(self.lexical[i]) / self.ceiling) if self.ceiling > 0 else 0.0,
            "bm25_share": float(self.lexical[i]) / self.best_bm25 if self.best_bm25 > 0 else 0.0,
            "dense": float(self.dense[i]),
            "dense_gap": self.best_dense - float(self.dense[i]),
            "terms": sum(mentions(text, t) for t in names) / len(names) if names else 0.0,
        }


def _stated(sentence: str, names: tuple[str, ...]) -> str:
    """A sentence less its example clauses, but not less the topic's names: a paper that
    "applies a fast orthonormal transform (e.g., DCT)" names the transform it uses."""
    kept = without_examples(sentence)
    if kept == sentence:
        return sentence
    return " ".join([kept, *(n for n in names if mentions(sentence, n) and not mentions(kept, n))])


def _names_in(alternative: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """Of the topic's names, those an alternative holds ('CLIP' of 'CLIP or SigLIP' is
    not asked of 'SigLIP')."""
    return tuple(n for n in names if mentions(alternative, n))


class Matcher:
    """Weighs every paper of a scope for a topic; one per `Assistant`, thread-safe."""

    def __init__(self, retriever: Retriever, embedder: Embedder, depth: int) -> None:
        self.retriever = retriever
        self.embedder = embedder
        self.depth = depth
        self._lock = threading.Lock()
        self._vectors: tuple[int, np.ndarray] | None = None

    def candidates(
        self,
        topic: str,
        filters: Filters | None = None,
        names: tuple[str, ...] = (),
        within: Collection[str] | None = None,
        alternatives: Sequence[str] = (),
    ) -> tuple[list[Candidate], int]:
        """The evidence of the scope's papers most likely to be about `topic` (at most
        `depth` per topic; with `within`, only those of these ids), and how many papers the
        scope holds. The scope's best cosine and BM25 score are the whole scope's either
        way. With `alternatives` ('fourier transforms', 'wavelet transforms' of 'fourier or
        wavelet transforms') a paper is about the topic when it is about any one of them:
        each feature is its best over the topic and each alternative (the lowest gap)."""
        catalog, vectors = self._paper_vectors()
        ids = catalog.paper_ids
        scope = Scope.of(filters or Filters(), self.retriever.vocabulary())
        inside = papers_in(catalog, scope)
        if not inside.any():
            return [], 0
        asked = [self._weigh(t, vectors, catalog, inside) for t in (topic, *alternatives)]
        named = [names, *(_names_in(t, names) for t in alternatives)]
        order = list(dict.fromkeys(i for a in asked for i in a.order))
        if within is not None:
            order = [i for i in order if ids[i] in within]
        found = []
        for i in order:
            paper = catalog.papers[ids[i]].paper
            each = [
                a.features(i, paper, self.retriever, n) for a, n in zip(asked, named, strict=True)
            ]
            best = {k: max(f[k] for f in each) for k in FEATURES}
            best["dense_gap"] = min(f["dense_gap"] for f in each)
            found.append(Candidate(paper, {k: round(v, 4) for k, v in best.items()}))
        return found, int(inside.sum())

    def _weigh(
        self, topic: str, vectors: np.ndarray, catalog: CatalogView, inside: np.ndarray
    ) -> _Weighed:
        """One topic's cosine and BM25 score of every paper, and the papers to weigh."""
        dense = vectors @ self.embedder.embed_query(topic) if len(vectors) else np.zeros(0)
        lexical = self._bm25_per_paper(topic, catalog)
        return _Weighed(
            topic,
            dense,
            lexical,
            self.retriever.lexical_ceiling(topic),
            float(dense[inside].max()),
            float(lexical[inside].max()),
            _pool(dense, lexical, inside, self.depth),
        )

    def match(
        self,
        topic: str,
        model: Model,
        filters: Filters | None = None,
        names: tuple[str, ...] = (),
        within: Collection[str] | None = None,
        alternatives: Sequence[str] = (),
    ) -> Matches:
        """The members of the scope for `topic` (or any of its `alternatives`): the papers
        whose P(member) passes the cut (with `within`, of those papers only)."""
        found, in_scope = self.candidates(topic, filters, names, within, alternatives)
        scored = [Candidate(c.paper, c.features, model.confidence(c.features)) for c in found]
        ranked = sorted(scored, key=lambda c: -c.probability)
        members = [c for c in ranked if c.probability >= model.threshold]
        floor = NEAREST_SHARE * model.threshold  # 'protein folding' shows none (P 0.01 of 0.35)
        below = [c for c in ranked if floor <= c.probability < model.threshold]
        nearest = below[:NEAREST]
        return Matches(
            topic, members, len(found), in_scope, model.threshold, nearest, tuple(alternatives)
        )

    def _paper_vectors(self) -> tuple[CatalogView, np.ndarray]:
        """The catalog and every paper's unit vector (the mean of its chunks'), numbered as
        `catalog.paper_ids`: summed from the stored vectors once per catalog."""
        catalog, _, matrix = self.retriever.stored_vectors()
        with self._lock:
            if self._vectors is None or self._vectors[0] != id(catalog):
                sums = np.zeros((len(catalog.paper_ids), matrix.shape[1]), dtype=np.float32)
                np.add.at(sums, catalog.row_papers(), matrix)
                norms = np.linalg.norm(sums, axis=1, keepdims=True)
                self._vectors = (id(catalog), sums / np.where(norms > 0, norms, 1.0))
            return catalog, self._vectors[1]

    def _bm25_per_paper(self, topic: str, catalog: CatalogView) -> np.ndarray:
        """Each paper's best chunk BM25 score for the topic, numbered as `catalog.paper_ids`."""
        scores = self.retriever.bm25_scores(topic)
        best = np.zeros(len(catalog.paper_ids), dtype=np.float32)
        if len(scores):
            np.maximum.at(best, catalog.row_papers(), scores)
        return best


def _pool(dense: np.ndarray, lexical: np.ndarray, inside: np.ndarray, depth: int) -> list[int]:
    """The papers of the scope to weigh: all of them up to `depth`, else the best `depth`
    by BM25 (any that match a word) joined by the best by cosine."""
    rows = np.flatnonzero(inside)
    if len(rows) <= depth:
        return rows.tolist()
    by_lexical = rows[np.argsort(-lexical[rows])][:depth]
    by_lexical = by_lexical[lexical[by_lexical] > 0]
    by_dense = rows[np.argsort(-dense[rows])][: max(depth - len(by_lexical), depth // 4)]
    return list(dict.fromkeys([*by_lexical.tolist(), *by_dense.tolist()]))

"""Paper vectors -> topics: clusters of the stored paper vectors, named by their terms.

- **Clusters**: k-means (scikit-learn, k-means++ seeded) over one unit vector per paper,
  k = 1.3 ∛n unless asked (52 papers -> 5 topics, 22,137 -> 37). Every paper gets a
  topic: HDBSCAN would leave a "noise" share unassigned and wants a reduced space first
  (UMAP, a numba stack this project does not ship).
- **Labels**: class-based TF-IDF (c-TF-IDF, Grootendorst 2022, as in BERTopic): a topic's
  papers are one document; a term weighs its share of it times log(1 + A / f), A the
  words per topic on average, f the term's count over all topics. Terms of one to three
  words that never span punctuation; research filler ("propose", "results") never
  counts; a longer term takes the place of the words it holds ("monte", "carlo" ->
  "Monte Carlo"), an acronym of a kept term goes ("RL" after "reinforcement learning");
  each term is shown as the abstracts spell it most ("LLMs").
- **Map**: t-SNE (scikit-learn) of at most `topics_map_points` papers, drawn per topic in
  proportion to its size; only the app draws it, so `rag topics` never pays for it.

`build` and `add_map` are pure (vectors and texts in, plain data out); `topics_of` adds
the cache, one snapshot file per index version and request (rag/store/snapshot.py), so asking
again is instant. Deliberately left out: topic hierarchies, topics over time, merging.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import Settings
from rag.lexicon import BOILERPLATE
from rag.store import snapshot
from rag.store.index import Store
from rag.types import Paper

# Cached topics are keyed by this module's code: a change to clustering or labelling
# rebuilds them, as does a new version of the index.
_CODE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
SEED = 0  # k-means and t-SNE are seeded: the same index gives the same topics
LABEL_TERMS = 3  # terms in a label: "speculative decoding, draft model, LLM inference"
TERMS = 8  # terms listed per topic
TEXTS_PER_TOPIC = 250  # papers a topic's terms are counted over (a seeded draw)
MAX_SHARE = 0.25  # a term in more than a quarter of all papers names no topic ("model")
ABSORB = 0.3  # a longer term replaces its words when it weighs this share of them
_TOKEN = r"(?u)\b[A-Za-z][A-Za-z0-9\-]*[A-Za-z0-9]\b"


@dataclass(frozen=True, slots=True)
class TopicPaper:
    """A paper in a topic: its display title, closeness to the topic's centre, map place."""

    paper_id: str
    title: str  # the real title, or the derived label (see `title_is_derived`)
    title_is_derived: bool
    similarity: float  # cosine to the topic's centre (1 = the most typical paper)
    x: float | None = None  # map position, for the papers drawn on the map
    y: float | None = None


@dataclass(slots=True)
class Topic:
    """One cluster: its label, distinctive terms, size and papers (most central first)."""

    topic: int  # 0 = the largest
    label: str
    terms: list[str]
    size: int
    papers: list[TopicPaper]

    def to_dict(self, papers: int | None = None) -> dict[str, Any]:
        """The `--json` form: label, size, papers (the first `papers`, None = all)."""
        shown = self.papers if papers is None else self.papers[:papers]
        return {
            "label": self.label,
            "size": self.size,
            "papers": [
                {"paper_id": p.paper_id, "title": p.title, "similarity": p.similarity}
                for p in shown
            ],
            "topic": self.topic,
            "terms": self.terms,
        }


@dataclass(slots=True)
class TopicSet:
    """What `rag topics` prints and the app's Topics tab draws."""

    topics: list[Topic]
    n_papers: int
    filters: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # what building them took (a cached answer keeps this figure)
    cached: bool = False  # read from the cache rather than built by this call
    method: str = ""  # how they were made, for people: "k-means (k=37) ..."
    mapped: bool = False  # whether papers carry map positions (x, y)

    def to_dict(self, papers: int | None = 10) -> dict[str, Any]:
        """The `--json` contract: {"topics": [{"label", "size", "papers": [...]}]} first."""
        return {
            "topics": [t.to_dict(papers) for t in self.topics],
            "n_papers": self.n_papers,
            "applied_filters": self.filters,
            "seconds": self.seconds,
            "cached": self.cached,
            "method": self.method,
        }

    def mapped_papers(self) -> list[tuple[Topic, TopicPaper]]:
        """The papers drawn on the map, with their topics."""
        return [(t, p) for t in self.topics for p in t.papers if p.x is not None]


# -- building ----------------------------------------------------------------------------


def n_topics(n_papers: int) -> int:
    """The default k: 1.3 ∛n, at least 2 and at most n / 3 (52 -> 5, 22,137 -> 37)."""
    if n_papers < 4:
        return 1
    return max(2, min(round(1.3 * n_papers ** (1 / 3)), n_papers // 3))


def build(
    ids: Sequence[str], vectors: np.ndarray, texts: Sequence[str], k: int | None = None
) -> dict[str, Any]:
    """Cluster and label papers: the plain-data payload the cache stores.

    {"topics": [{"label", "terms", "ids" (most central first), "sims"}], "k", "seconds",
    "map": None}: ids and numbers only, so titles are always the current ones. The map
    is added by `add_map` when someone draws it.
    """
    started = time.perf_counter()
    k = min(k or n_topics(len(ids)), len(ids))
    if not len(ids):
        return {"topics": [], "k": 0, "seconds": 0.0, "map": None}
    assign, centres = cluster(vectors, k)
    sizes = np.bincount(assign, minlength=k)
    order = [int(c) for c in np.argsort(-sizes, kind="stable") if sizes[c]]
    terms = distinctive_terms(texts, assign, k)
    topics: list[dict[str, Any]] = []
    for c in order:
        members = np.flatnonzero(assign == c)
        sims = vectors[members] @ centres[c]
        ranked = np.argsort(-sims, kind="stable")
        label = ", ".join(terms[c][:LABEL_TERMS]) or f"Topic {len(topics) + 1}"
        topics.append(
            {
                "label": label[:1].upper() + label[1:],
                "terms": terms[c][:TERMS],
                "ids": [ids[i] for i in members[ranked]],
                "sims": [round(float(s), 4) for s in sims[ranked]],
            }
        )
    return {
        "topics": topics,
        "k": k,
        "seconds": round(time.perf_counter() - started, 2),
        "map": None,
    }


def add_map(
    payload: dict[str, Any], ids: Sequence[str], vectors: np.ndarray, points: int
) -> dict[str, Any]:
    """The payload with its map: t-SNE positions of at most `points` papers, drawn per
    topic in proportion to its size ({"ids", "x", "y", "seconds"})."""
    started = time.perf_counter()
    row = {pid: i for i, pid in enumerate(ids)}
    assign = np.full(len(ids), -1)
    for n, topic in enumerate(payload["topics"]):
        assign[[row[pid] for pid in topic["ids"]]] = n
    drawn = sample_per_topic(assign, points)
    xy = project(vectors[drawn])
    payload["map"] = {
        "ids": [ids[i] for i in drawn],
        "x": [round(float(v), 3) for v in xy[:, 0]],
        "y": [round(float(v), 3) for v in xy[:, 1]],
        "seconds": round(time.perf_counter() - started, 2),
    }
    return payload


def cluster(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k-means over unit vectors: (topic per paper, unit centre per topic)."""
    if k <= 1:
        centre = vectors.mean(axis=0, keepdims=True)
        return np.zeros(len(vectors), dtype=int), _unit(centre)
    from sklearn.cluster import KMeans

    model = KMeans(n_clusters=k, n_init=1, random_state=SEED).fit(vectors)  # k-means++
    return model.labels_.astype(int), _unit(model.cluster_centers_)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def distinctive_terms(texts: Sequence[str], assign: np.ndarray, k: int) -> list[list[str]]:
    """Each topic's terms by c-TF-IDF, best first, merged and spelled as the texts spell
    them: ['speculative decoding', 'draft model', 'LLM inference', ...]. Counted over at
    most `TEXTS_PER_TOPIC` papers a topic (22k papers: 9k texts, ~4 s instead of ~10)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    rows = sample_per_topic(assign, TEXTS_PER_TOPIC * k)
    texts, assign = [texts[i] for i in rows], assign[rows]
    n = len(texts)
    vectorizer = CountVectorizer(
        ngram_range=(1, 3),
        preprocessor=_phrases,
        token_pattern=_TOKEN,
        min_df=5 if n >= 2000 else (2 if n >= 20 else 1),
        max_df=max(MAX_SHARE, 1.5 / k) if n >= 20 else 1.0,  # 3 topics: a third each
    )
    try:
        counts = vectorizer.fit_transform(texts)
    except ValueError:  # no term survives (a handful of tiny texts)
        return [[] for _ in range(k)]
    vocabulary = vectorizer.get_feature_names_out()
    keep = np.flatnonzero([_is_term(t) for t in vocabulary])
    counts, vocabulary = counts[:, keep], vocabulary[keep]
    member = sparse.csr_matrix((np.ones(n), (assign, np.arange(n))), shape=(k, n))
    per_topic = np.asarray((member @ counts).todense(), dtype=np.float64)
    share = per_topic / np.maximum(per_topic.sum(axis=1, keepdims=True), 1)
    average = per_topic.sum() / k
    weight = share * np.log1p(average / np.maximum(per_topic.sum(axis=0), 1))
    terms: list[list[str]] = []
    for c in range(k):
        best = [i for i in np.argsort(-weight[c])[: TERMS * 5] if weight[c, i] > 0]
        picked = merge_terms([(vocabulary[i], float(weight[c, i])) for i in best])[:TERMS]
        terms.append(spell(picked, [texts[i] for i in np.flatnonzero(assign == c)]))
    return terms


_BREAK = "zzbreak"  # stands where punctuation was: no term spans it ("models (LLMs)")
_PUNCTUATION = re.compile(r"[()\[\],.;:!?\"“”]+|\s-\s|--")


_MATH = re.compile(r"\$[^$]{0,200}\$|\\[A-Za-z]+")  # '$\\varepsilon$', '\\mathcal': no term


def _phrases(text: str) -> str:
    """Lower-case, a break at punctuation: 'models (LLMs).' -> 'models zzbreak llms zzbreak '."""
    return _PUNCTUATION.sub(f" {_BREAK} ", _MATH.sub(f" {_BREAK} ", text).lower())


def _is_term(term: str) -> bool:
    """'reinforcement learning', 'bandits' are terms; 'of the', 'results', 'we show' are not."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = term.split()
    if any(w in ENGLISH_STOP_WORDS or w == _BREAK for w in words):
        return False
    if len(words) > 1 and (
        words[0] in BOILERPLATE or (_loose(words[-1]) and words[-1] not in _HEADS)
    ):
        return False  # 'present speech recognition', 'grows slowly': not a phrase's edge
    return not all(w in BOILERPLATE for w in words)


_HEADS = {"learning", "models", "model", "data", "methods", "algorithms", "training"}


def _loose(word: str) -> bool:
    """Words a term does not end with: filler, adverbs, participles, verbs."""
    return word in BOILERPLATE or word.endswith(("ly", "ed")) or word in {"uses", "grows", "makes"}


def merge_terms(ranked: Sequence[tuple[str, float]]) -> list[str]:
    """Fold (term, weight) pairs, best first, into distinct terms: plural forms fold, a
    longer term takes the place of the words it holds when it weighs at least half as
    much as they do / ABSORB (else it is a narrower aspect and goes), overlapping phrases
    join, and an acronym of a kept term goes.
    [('monte', 3), ('carlo', 3), ('monte carlo', 2.5), ('mcmc', 2)] -> ['monte carlo', 'mcmc']
    """
    picked: list[str] = []
    keys: list[frozenset[str]] = []
    weights: list[float] = []
    for term, weight in ranked:
        joined = [(i, _join(kept, term)) for i, kept in enumerate(picked)]
        overlap = next(((i, j) for i, j in joined if j), None)
        if overlap:  # 'markov chain monte' + 'chain monte carlo': the phrase they cut
            i, phrase = overlap
            picked[i], keys[i] = phrase, _key(phrase)
            continue
        key = _key(term)
        if any(key <= kept for kept in keys) or _abbreviates(term, picked):
            continue
        if any(_edge_overlap(kept, term) for kept in picked):
            continue  # 'process regression' beside 'gaussian process': a cut phrase
        absorbed = [i for i, kept in enumerate(keys) if kept < key]
        if absorbed and weight < ABSORB * max(weights[i] for i in absorbed):
            continue  # 'local differential privacy' is not what 'differential privacy' names
        if absorbed:  # 'monte carlo' takes the place of 'monte'
            first = absorbed[0]
            picked[first], keys[first] = term, key
            for i in reversed(absorbed[1:]):
                del picked[i], keys[i], weights[i]
            continue
        picked.append(term)
        keys.append(key)
        weights.append(weight)
    return picked


def _join(a: str, b: str) -> str | None:
    """Two three-word phrases cut from one four-word phrase, as that phrase:
    ('markov chain monte', 'chain monte carlo') -> 'markov chain monte carlo' (either order)."""
    x, y = a.split(), b.split()
    if len(x) != 3 or len(y) != 3:
        return None
    if x[1:] == y[:2]:
        return " ".join([*x, y[2]])
    if y[1:] == x[:2]:
        return " ".join([*y, x[2]])
    return None


def _edge_overlap(a: str, b: str) -> bool:
    """Tell whether two-word phrases share an end word: 'gaussian process', 'process regression'."""
    x, y = a.split(), b.split()
    return len(x) == len(y) == 2 and (x[-1] == y[0] or y[-1] == x[0])


def _key(term: str) -> frozenset[str]:
    """The words of a term, singular: 'neural networks' -> {'neural', 'network'}."""
    return frozenset(_singular(w) for w in term.split())


def _singular(word: str) -> str:
    """'images' -> 'image', 'processes' -> 'process', 'policies' -> 'policy'."""
    if len(word) <= 3:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _abbreviates(term: str, picked: Sequence[str]) -> bool:
    """'rl' abbreviates 'reinforcement learning'; 'gps' 'gaussian processes'."""
    if " " in term or len(term) > 6:
        return False
    letters = term.rstrip("s") if len(term) > 2 else term
    for kept in picked:
        words = re.split(r"[\s\-]+", kept)
        if len(words) >= 2 and "".join(w[0] for w in words) == letters:
            return True
    return False


def spell(terms: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Show each term as the texts spell it most: 'llms' -> 'LLMs', 'monte carlo' ->
    'Monte Carlo'; a term the texts never spell stays lower-case."""
    if not terms:
        return []
    patterns = [r"[\s\-]+".join(map(re.escape, re.split(r"[\s\-]+", t))) for t in terms]
    alternation = re.compile(r"\b(" + "|".join(patterns) + r")\b", re.I)
    forms: dict[str, Counter[str]] = {t: Counter() for t in terms}
    for match in alternation.finditer("\n".join(texts)):
        found = match.group(0)
        canonical = re.sub(r"[\s\-]+", " ", found.lower())
        for t in terms:
            if re.sub(r"[\s\-]+", " ", t) == canonical:
                forms[t][found] += 1
                break
    spelled = []
    for t in terms:
        # A capitalised sentence start is not how a term is spelled: prefer the lower case
        # unless the upper-case form dominates ("LLMs", "Monte Carlo", "Bayesian").
        best = forms[t].most_common()
        lower = forms[t].get(t, 0)
        form = best[0][0] if best and best[0][1] > 1.5 * lower else t
        spelled.append(form)
    return spelled


def sample_per_topic(assign: np.ndarray, limit: int) -> np.ndarray:
    """At most `limit` rows, each topic's share in proportion to its size (at least 3),
    drawn with a fixed seed: rows in ascending order."""
    n = len(assign)
    if n <= limit:
        return np.arange(n)
    rng = np.random.default_rng(SEED)
    drawn = []
    for c in np.unique(assign):
        rows = np.flatnonzero(assign == c)
        take = min(len(rows), max(3, round(limit * len(rows) / n)))
        drawn.append(rng.choice(rows, take, replace=False))
    return np.sort(np.concatenate(drawn))


def project(vectors: np.ndarray) -> np.ndarray:
    """2-D positions: t-SNE over the first 50 principal components (PCA below 8 papers),
    scaled into [-1, 1]."""
    n = len(vectors)
    if n < 3:
        return np.zeros((n, 2))
    from sklearn.decomposition import PCA

    reduced = PCA(min(50, n - 1, vectors.shape[1]), random_state=SEED).fit_transform(vectors)
    if n < 8:
        xy = reduced[:, :2] if reduced.shape[1] >= 2 else np.c_[reduced, np.zeros(n)]
    else:
        from sklearn.manifold import TSNE

        perplexity = min(30.0, (n - 1) / 3)
        tsne = TSNE(2, perplexity=perplexity, init="pca", max_iter=500, random_state=SEED)
        xy = tsne.fit_transform(reduced)
    xy = xy - xy.mean(axis=0)
    scale = float(np.abs(xy).max()) or 1.0
    return xy / scale


# -- the cache -----------------------------------------------------------------------------


def cache_kind(filters: Mapping[str, Any], k: int | None, map_points: int) -> str:
    """The snapshot kind of one request: 'topics-3f1a9c0b2d4e' (filters, k, map size, code)."""
    request = json.dumps([_CODE, sorted(filters.items()), k, map_points], default=str)
    return "topics-" + hashlib.sha256(request.encode()).hexdigest()[:12]


def topics_of(
    store: Store,
    stamp: str | None,
    papers: Mapping[str, Paper],
    settings: Settings,
    filters: Mapping[str, Any] | None = None,
    k: int | None = None,
    with_map: bool = False,
) -> TopicSet:
    """The topics of `papers` (the index's papers inside `filters`), with their map when
    asked: from the cache saved for this index version when it has them, else built (and
    saved with what was built)."""
    filters = dict(filters or {})
    k = k or settings.topics_k or None
    kind = cache_kind(filters, k, settings.topics_map_points)
    saved: Any = snapshot.read(settings, kind, stamp)
    cached = isinstance(saved, dict) and _fits(saved, papers)
    if not cached or (with_map and saved.get("map") is None):
        ids, vectors = store.paper_vectors(papers)
        if not cached:
            saved = build(ids, vectors, [_text(papers[pid]) for pid in ids], k)
        assert isinstance(saved, dict)
        if with_map:
            saved = add_map(saved, ids, vectors, settings.topics_map_points)
        if stamp:  # best effort: a read-only index folder only costs the next call
            snapshot.write(settings, kind, stamp, saved)
    assert isinstance(saved, dict)
    return materialise(saved, papers, filters, cached)


def _fits(saved: dict[str, Any], papers: Mapping[str, Paper]) -> bool:
    """Tell whether a cached payload covers exactly these papers."""
    try:
        listed = sum(len(t["ids"]) for t in saved["topics"])
        return listed == len(papers) and all(t["ids"][0] in papers for t in saved["topics"])
    except (KeyError, TypeError, IndexError):
        return False


def _text(paper: Paper) -> str:
    return f"{paper.title}. {paper.abstract}" if paper.title else paper.abstract


def materialise(
    saved: dict[str, Any], papers: Mapping[str, Paper], filters: dict[str, Any], cached: bool
) -> TopicSet:
    """Records from a payload, with the papers' current titles."""
    drawn = saved["map"] or {"ids": [], "x": [], "y": [], "seconds": 0.0}
    place = {pid: (x, y) for pid, x, y in zip(drawn["ids"], drawn["x"], drawn["y"], strict=True)}
    topics = []
    for n, raw in enumerate(saved["topics"]):
        members = []
        for pid, sim in zip(raw["ids"], raw["sims"], strict=True):
            paper = papers[pid]
            x, y = place.get(pid, (None, None))
            members.append(TopicPaper(pid, paper.label, paper.label_is_derived, sim, x, y))
        topics.append(Topic(n, raw["label"], list(raw["terms"]), len(members), members))
    total = sum(t.size for t in topics)
    method = f"k-means (k={saved['k']}) over {total:,} paper vectors, labelled by c-TF-IDF"
    if place:
        method += f"; map: t-SNE of {len(place):,} papers"
    seconds = saved["seconds"] + drawn["seconds"]
    return TopicSet(topics, total, filters, round(seconds, 2), cached, method, bool(place))


__all__ = ["Topic", "TopicPaper", "TopicSet", "build", "n_topics", "topics_of"]

"""Retrieved papers -> one answerability decision, made from evidence.

The evidence about the best paper (what `features` measures, each in about 0..1):
  - `sentence`: cosine of the question to the abstract's closest sentence (not the one
    vector of the paper's start, which is blind to what its later sentences say);
  - `paper`: cosine of the question to the paper's vector;
  - `coverage`: IDF-weighted share of the question's content words the abstract holds
    (a word one typo from one of the abstract's counts as held);
  - `sentence_coverage`: the same share for the abstract's best sentence: a paper on
    speculative decoding holds every word of "speculative decoding for diffusion
    language models", but no sentence of it holds them together;
  - `rarest_missing`: the IDF of the rarest question word the abstract lacks, over the
    largest IDF ('gaussian splatting' of an index with no 'splatting': 1);
  - `terms_found`, `terms_missing`: shares of the question's distinctive terms (names,
    quoted phrases, numbers: rag/question/reading.py) that occur, or do not, in the abstract; a
    method name the question names, found in the abstract, is strong evidence;
  - `bm25`: the best paper's BM25 score over the sum of the question's term IDFs
    (how much of the query's lexical weight it matched);
  - `margin`: how far the best paper's fused score is ahead of the second's;
  - `unheld`: `rarest_missing` over the first HELD_BY hits together, the question's
    hyphenated words in parts: 'papers on diffusion language models' among abstracts
    none of which says 'diffusion' (1 for a word no stored abstract holds);
  - `dense_z`: how far the paper's cosine stands above the question's cosines to every
    stored chunk, in their standard deviations: an informal question ('training llms over
    slow internet links') matches its paper with a low cosine that still stands out, an
    off-topic one is about as far from every paper (Retriever.cosine_spread);
  - `dense_lead`: its cosine less the best of the other first HELD_BY hits' (below 0
    when BM25 put it ahead of a paper the question is closer to).
A logistic model over them gives `confidence`; below its threshold the answer abstains.
Its weights and threshold are fitted on labelled questions by `rag eval calibrate` and
read from `rag/data/answerability.json` (or RAG_ANSWERABILITY_FILE); nothing is hand-set.

Besides the model, the record is checked for details a question asks and an abstract
cannot hold: authors or affiliations (the lists carry none), a code link (no URL), and,
for a question after one figure or name, a named term or any figure the abstract lacks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from rag import logistic
from rag.answering import extractive
from rag.config import DATA_DIR
from rag.logistic import Model
from rag.question.reading import Query
from rag.text import mentions
from rag.types import Hit

FEATURES = (
    "sentence",
    "paper",
    "coverage",
    "sentence_coverage",
    "rarest_missing",
    "terms_found",
    "terms_missing",
    "bm25",
    "margin",
    "unheld",
    "dense_z",
    "dense_lead",
)
HELD_BY = 5  # hits whose union `unheld` is measured over
DEFAULT_MODEL = DATA_DIR / "answerability.json"

Coverage = Callable[[str, str], float]  # (question, text) -> 0..1
Lexical = Callable[[str], float]  # the sum of a query's BM25 term weights (its best score)
Spread = Callable[[np.ndarray], tuple[float, float]]  # question vector -> its cosines' mean, sd
Z_LIMIT = 8.0  # `dense_z` is clipped to +-this (an index of one chunk has no spread)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What speaks for an answer in the best retrieved paper."""

    features: dict[str, float]
    missing_detail: str | None = None  # a detail asked that the record cannot hold


@lru_cache(maxsize=4)
def load_model(path: Path | None = None) -> Model:
    """The fitted model (default: the one shipped in rag/data)."""
    return logistic.load(path or DEFAULT_MODEL, FEATURES, "answerability")


def gather(
    query: Query,
    hits: Sequence[Hit],
    sentence_similarity: float,
    coverage: Coverage,
    lexical: Lexical,
    rarest_missing: Coverage,
    at: int = 0,
    sentence_coverage: float = 0.0,
    held: float | None = None,
    spread: tuple[float, float] = (0.0, 1.0),
) -> Evidence:
    """Measure the evidence in hit `at` (`sentence_similarity`: its best sentence); the
    margin is how far it leads the next hit (0 for any but the first). `held`: `unheld`
    of these hits when the caller has it (the same for every `at`). `spread`: the mean and
    standard deviation of the question's cosine over the stored chunks."""
    best = hits[at]
    cosine = best.dense_similarity or 0.0
    others = [h.dense_similarity or 0.0 for i, h in enumerate(hits[:HELD_BY]) if i != at]
    mean, deviation = spread
    text = f"{best.paper.label} {best.paper.abstract}"
    terms = query.terms
    found = sum(1 for t in terms if any(mentions(text, n) for n in query.spellings(t)))
    ceiling = lexical(query.keywords)
    second = hits[at + 1].score if len(hits) > at + 1 else 0.0
    if at:
        second = max(second, hits[0].score)
    features = {
        "sentence": sentence_similarity,
        "paper": cosine,
        "coverage": coverage(query.text, text),
        "sentence_coverage": sentence_coverage,
        "rarest_missing": rarest_missing(query.text, text),
        "terms_found": found / len(terms) if terms else 0.0,
        "terms_missing": (len(terms) - found) / len(terms) if terms else 0.0,
        "bm25": min(1.0, (best.bm25_score or 0.0) / ceiling) if ceiling > 0 else 0.0,
        "margin": max(0.0, best.score - second) / (best.score or 1.0),
        "unheld": unheld(query, hits, rarest_missing) if held is None else held,
        "dense_z": max(-Z_LIMIT, min(Z_LIMIT, (cosine - mean) / max(deviation, 1e-6))),
        "dense_lead": cosine - max(others, default=0.0),
    }
    return Evidence(features, missing_detail(query, best))


def unheld(query: Query, hits: Sequence[Hit], rarest_missing: Coverage) -> float:
    """The `unheld` feature: the rarest question word (hyphenated words in parts) that
    none of the first HELD_BY hits holds."""
    together = " ".join(f"{h.paper.label} {h.paper.abstract}" for h in hits[:HELD_BY])
    return rarest_missing(query.text.replace("-", " "), together)


def missing_detail(query: Query, hit: Hit) -> str | None:
    """Authors, affiliations, code links, or a named term or figure asked of one paper
    that its record lacks ("What ImageNet accuracy does X reach?" of an abstract that
    reports no numbers)."""
    paper = hit.paper
    if query.asks_authors and not paper.authors:
        return "the records hold no author or affiliation information"
    if query.asks_code and "http" not in paper.abstract:
        return "the abstract gives no code link"
    if query.wants and query.wants not in extractive.DESCRIBED and not query.plural:
        text = f"{paper.label} {paper.abstract}"
        asked = query.own(query.terms)
        missing = [t for t in asked if not any(mentions(text, n) for n in query.spellings(t))]
        if missing:
            return "the closest abstract does not mention " + ", ".join(missing)
        counts = query.asks_count_of_things
        if query.wants == "number" and not extractive.reports_figure(paper.abstract, counts):
            return "the closest abstract reports no figures"
        if query.counted and not extractive.counts(paper.abstract, query.counted):
            return f"the closest abstract gives no number of {query.counted}"
    return None


@dataclass(frozen=True, slots=True)
class Decision:
    """Answer or abstain, with the confidence and, when abstaining, why."""

    answer: bool
    confidence: float
    why: str = ""


def decide(evidence: Evidence, model: Model) -> Decision:
    """Abstain on a missing detail or low confidence, with or without an LLM: the model
    never answers what this refuses (rag/answering/answer.py judges what it writes otherwise)."""
    confidence = round(model.confidence(evidence.features), 4)
    if evidence.missing_detail:
        return Decision(False, confidence, evidence.missing_detail)
    if confidence < model.threshold:
        f = evidence.features
        return Decision(
            False,
            confidence,
            f"the closest abstract gives too little evidence (confidence {confidence:.2f} < "
            f"{model.threshold:.2f}; best sentence cosine {f['sentence']:.2f}, coverage "
            f"{f['coverage']:.2f})",
        )
    return Decision(True, confidence)


# --- fitting (used by `rag eval calibrate`) -------------------------------------------


def fit(
    rows: Sequence[dict[str, float]],
    labels: Sequence[bool],
    max_false_abstention: float = 0.02,
    l2: float = 1.0,
    about: dict[str, Any] | None = None,
) -> Model:
    """Fit a logistic model (L2-regularised, rag/logistic.py) on evidence rows labelled
    answerable or not, then pick the highest threshold whose false abstention on the
    answerable rows stays within `max_false_abstention`."""
    model = logistic.fit(rows, labels, FEATURES, l2, about)
    confidence = np.array([model.confidence(r) for r in rows])
    threshold = pick_threshold(confidence, np.array(labels, dtype=bool), max_false_abstention)
    return logistic.with_threshold(model, threshold)


def pick_threshold(confidence: np.ndarray, answerable: np.ndarray, max_false: float) -> float:
    """The highest threshold that abstains on at most `max_false` of the answerable ones:
    confidences [0.1, 0.6, 0.9] of answerable [F, T, T], max 0 -> just below 0.6."""
    positives = np.sort(confidence[answerable])
    if not len(positives):
        return 0.5
    allowed = math.floor(max_false * len(positives))  # answerable ones we may refuse
    threshold = positives[allowed] - 1e-6
    return float(max(0.0, threshold))

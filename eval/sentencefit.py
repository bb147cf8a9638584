"""Labelled answers -> the weights the offline answerer scores sentences by: `rag eval
fit-sentences`.

Each question that names what its answer must contain (`answer_contains`) and has one
gold paper, asked on its own (no follow-up), is read as `rag ask` reads it; every sentence
of the gold abstract becomes a row of rag/answering/extractive.py's `sentence_features`
(cosine to the question, shared words, terms named, figures or names of the kind asked,
a contribution), labelled by whether it holds an `answer_contains` string. Questions
whose abstract has no such sentence, or only such sentences, teach nothing and are left
out. A logistic model (scikit-learn, standardised features) is fitted on the rows; its
weights, rescaled so that the cosine's weight is 1 (the answerer adds the features up),
are written with how often the top-scored sentence holds the answer under the shipped and
the fitted weights. Installing them (rag/data/sentence.json) is a separate step, taken
only when `rag eval run` shows whole answers improve: the first fit picked better single
sentences but worse answers, so the shipped weights are still the hand-set ones (the
file's `about` has the figures).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.questions import Question, ResolvedGold
from rag.answering import extractive
from rag.assistant import Assistant
from rag.text import split_sentences
from rag.types import normalise_text

FEATURES = extractive.SENTENCE_FEATURES


def sentence_rows(
    assistant: Assistant, questions: Sequence[Question], gold: ResolvedGold
) -> list[dict[str, Any]]:
    """One row per sentence of each usable question's gold abstract."""
    papers = assistant.retriever.catalog.papers
    rows: list[dict[str, Any]] = []
    for q in questions:
        ids = gold.ids.get(q.id)
        if not q.answer_contains or q.follow_up_of or not ids or len(ids) != 1:
            continue
        stored = papers.get(next(iter(ids)))
        if stored is None:
            continue
        query = assistant.read(q.question)
        sentences = split_sentences(stored.paper.abstract)
        labels = [_holds(s, q.answer_contains) for s in sentences]
        if not any(labels) or all(labels):
            continue
        vector = assistant.embedder.embed_query(query.text)
        similarity = assistant.embedder.embed(sentences) @ vector
        for sentence, sim, label in zip(sentences, similarity, labels, strict=True):
            features = extractive.sentence_features(query, sentence, float(sim))
            rows.append({"id": q.id, "features": features, "label": label})
    return rows


def _holds(sentence: str, expected: Sequence[str]) -> bool:
    text = normalise_text(sentence)
    return any(normalise_text(e) in text for e in expected)


def fit(rows: Sequence[dict[str, Any]], c: float = 1.0) -> dict[str, float]:
    """Weights per feature, the cosine's 1 (see the module docstring)."""
    from sklearn.linear_model import LogisticRegression

    if not rows or len({r["label"] for r in rows}) < 2:
        raise ValueError("fitting the sentence weights needs sentences with and without answers")
    x = np.array([[r["features"][n] for n in FEATURES] for r in rows], dtype=np.float64)
    y = np.array([r["label"] for r in rows], dtype=int)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    coef = LogisticRegression(C=c, max_iter=10_000).fit(x / scale, y).coef_[0] / scale
    if coef[0] <= 0:
        raise ValueError("the fitted cosine weight is not positive: too few rows to fit on")
    return {n: round(float(w / coef[0]), 4) for n, w in zip(FEATURES, coef, strict=True)}


def top_hit_rate(rows: Sequence[dict[str, Any]], weights: dict[str, float]) -> float:
    """Share of questions whose best-scored sentence holds the answer."""
    by_question: dict[str, list[tuple[float, bool]]] = {}
    for r in rows:
        score = sum(weights[n] * r["features"][n] for n in FEATURES)
        by_question.setdefault(r["id"], []).append((score, r["label"]))
    hits = [max(scored)[1] for scored in by_question.values()]
    return round(sum(hits) / len(hits), 4) if hits else float("nan")


def write(weights: dict[str, float], about: dict[str, Any], target: Path) -> None:
    """Write the weights where extractive.py reads them."""
    data = {"weights": weights, "about": about}
    target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

"""The offline answerer's sentence weights: fitted on labelled answers, read by extractive."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval import sentencefit
from rag.answering import extractive
from rag.question.reading import read


def _rows(seed: int = 0) -> list[dict]:
    """Questions of 6 sentences each: the answer sentence has the figure (evidence) and
    shares more words; cosine is noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(40):
        answer = int(rng.integers(6))
        for j in range(6):
            hit = j == answer
            rows.append(
                {
                    "id": f"q{q}",
                    "label": hit,
                    "features": {
                        "similarity": float(rng.uniform(0.2, 0.6)) + (0.1 if hit else 0.0),
                        "overlap": float(rng.uniform(0, 0.4)) + (0.3 if hit else 0.0),
                        "named": float(rng.integers(2)),
                        "evidence": float(rng.integers(2)) + (1.0 if hit else 0.0),
                        "contribution": float(rng.integers(2)),
                    },
                }
            )
    return rows


def test_the_fit_weighs_what_tells_the_answer_sentence_and_keeps_the_cosine_at_one() -> None:
    rows = _rows()
    weights = sentencefit.fit(rows)
    assert weights["similarity"] == 1.0
    assert weights["evidence"] > 0 and weights["overlap"] > 0
    assert abs(weights["named"]) < weights["evidence"]  # noise weighs less than signal
    hand = {"similarity": 1.0, "overlap": 0.0, "named": 0.0, "evidence": 0.0, "contribution": 0.0}
    assert sentencefit.top_hit_rate(rows, weights) > sentencefit.top_hit_rate(rows, hand)


def test_a_fit_without_both_labels_is_refused() -> None:
    rows = [r for r in _rows() if r["label"]]
    with pytest.raises(ValueError, match="with and without answers"):
        sentencefit.fit(rows)


def test_the_answerer_scores_a_sentence_as_the_weighted_sum_of_its_features() -> None:
    query = read("how much faster is GTO than EAGLE-3?")
    sentence = "We propose GTO, which yields an additional 7.7% speedup over EAGLE-3."
    features = extractive.sentence_features(query, sentence, 0.5)
    assert features["evidence"] >= 1 and features["named"] == 1.0
    assert features["contribution"] == 1.0
    weights = extractive.sentence_weights()
    expected = sum(weights[n] * v for n, v in features.items())
    assert extractive._score(query, sentence, 0.5) == pytest.approx(expected)
    shipped = json.loads(extractive.SENTENCE_MODEL.read_text(encoding="utf-8"))
    assert set(shipped["weights"]) == set(extractive.SENTENCE_FEATURES)

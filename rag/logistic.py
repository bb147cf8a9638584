"""One fitted form for the yes/no decisions: a logistic model over named features.

Three decisions use it, each over its own features and fitted by its own command:
answerability (rag/answering/answerable.py, `rag eval calibrate`), which papers a count takes
(rag/aggregate/matching.py, `rag eval calibrate-count`) and whether a question leans on the
answer before it (rag/question/followup.py, `rag eval fit-followup`). Each feature is
standardised by the mean and spread of the rows it was fitted on; the weights are
scikit-learn's L2-regularised LogisticRegression; the threshold is the decision's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag.config import load_fitted


@dataclass(frozen=True, slots=True)
class Model:
    """A logistic model: weights per standardised feature, and a threshold."""

    weights: dict[str, float]
    bias: float
    mean: dict[str, float]
    scale: dict[str, float]
    threshold: float
    about: dict[str, Any] = field(default_factory=dict)  # what it was fitted on

    def confidence(self, features: dict[str, float]) -> float:
        """P(yes | features) in 0..1."""
        z = self.bias + sum(
            w * (features[n] - self.mean[n]) / (self.scale[n] or 1.0)
            for n, w in self.weights.items()
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict[str, Any]:
        """The on-disk form."""
        return {
            "features": list(self.weights),
            "weights": self.weights,
            "bias": self.bias,
            "mean": self.mean,
            "scale": self.scale,
            "threshold": self.threshold,
            "about": self.about,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], features: Sequence[str], what: str) -> Model:
        """Read the on-disk form; ValueError when a feature is not one of `features`."""
        unknown = set(data["weights"]) - set(features)
        if unknown:
            raise ValueError(f"unknown {what} features: {', '.join(sorted(unknown))}")
        return cls(
            weights={k: float(v) for k, v in data["weights"].items()},
            bias=float(data["bias"]),
            mean={k: float(v) for k, v in data["mean"].items()},
            scale={k: float(v) for k, v in data["scale"].items()},
            threshold=float(data["threshold"]),
            about=dict(data.get("about", {})),
        )


def load(path: Path, features: Sequence[str], what: str) -> Model:
    """A fitted model from its JSON file; a missing or malformed one is a ValueError
    naming it ('cannot read the follow-up model rag/data/followup.json: ...')."""
    return load_fitted(path, f"{what} model", lambda data: Model.from_json(data, features, what))


def fit(
    rows: Sequence[dict[str, float]],
    labels: Sequence[bool],
    features: Sequence[str],
    l2: float = 1.0,
    about: dict[str, Any] | None = None,
) -> Model:
    """Fit the weights on rows of features labelled yes or no (threshold 0.5: each
    decision picks its own with `with_threshold`)."""
    x = np.array([[r[n] for n in features] for r in rows], dtype=np.float64)
    y = np.array(labels, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    w = logistic_weights((x - mean) / scale, y, l2)
    return Model(
        weights={n: round(float(v), 6) for n, v in zip(features, w[:-1], strict=True)},
        bias=round(float(w[-1]), 6),
        mean={n: round(float(v), 6) for n, v in zip(features, mean, strict=True)},
        scale={n: round(float(v), 6) for n, v in zip(features, scale, strict=True)},
        threshold=0.5,
        about=about or {},
    )


def best_threshold(
    levels: Sequence[float],
    score: Callable[[float], float] | None = None,
    scores: Callable[[np.ndarray], np.ndarray] | None = None,
) -> float:
    """The cut of the best `score(cut)` over the distinct `levels` (probabilities of the
    rows, each tried as 'at least this'), placed halfway to the next lower level (0 below
    the last); the highest cut wins a tie. `scores` scores every level at once (the
    levels, highest first, in one array): one call instead of one per level."""
    ordered = sorted(set(levels), reverse=True)
    if scores is not None:
        values = [float(v) for v in scores(np.asarray(ordered, dtype=float))]
    elif score is not None:
        values = [score(level) for level in ordered]
    else:
        raise ValueError("best_threshold needs `score` or `scores`")
    best, best_score = 0.5, -1.0
    for at, (level, value) in enumerate(zip(ordered, values, strict=True)):
        if value > best_score + 1e-9:
            below = ordered[at + 1] if at + 1 < len(ordered) else 0.0
            best, best_score = (level + below) / 2, value
    return best


def with_threshold(model: Model, threshold: float) -> Model:
    """The model with a threshold, floored to 4 decimals (never rounded up past a row)."""
    return replace(model, threshold=math.floor(threshold * 1e4) / 1e4)


def logistic_weights(z: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Weights (the last one: the bias) of an L2-regularised logistic regression on
    standardised features `z` and 0/1 labels `y`: scikit-learn's LogisticRegression,
    minimising the summed log-loss plus `l2`/2 times the squared weights (C = 1/l2; the
    bias is not shrunk)."""
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(C=1.0 / l2, tol=1e-10, max_iter=10_000).fit(z, y.astype(int))
    return np.append(fitted.coef_[0], fitted.intercept_[0])

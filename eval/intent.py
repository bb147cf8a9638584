"""Labelled questions -> the intent model: `rag eval fit-intent`.

eval/questions/intent.jsonl holds questions with the intent a person gave each (`dev`:
the dev sets' English questions and ones written for the classifier; `test`: the test
set's, labelled without looking at a prediction). Each question is read as `rag ask`
reads it (its scope words cut, rag/question/reading.py) and turned into
rag/question/intent.py's features; scikit-learn's LogisticRegression is fitted on the dev
rows, its regularisation chosen by 5-fold cross-validation on them, and scored once on the
test rows. The model, with those figures in `about`, is written where rag/question/intent.py
reads it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.question import intent as intents
from rag.question.reading import searched_text

C_GRID = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
FOLDS = 5


@dataclass(frozen=True, slots=True)
class Labelled:
    """A question with its intent."""

    id: str
    question: str
    intent: str
    split: str


def read_labels(path: Path) -> list[Labelled]:
    """The labelled questions; a bad line is an error naming the file and line."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            row = Labelled(data["id"], data["question"], data["intent"], data.get("split", "dev"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a labelled question ({exc})") from None
        if row.intent not in intents.INTENTS:
            raise ValueError(
                f"{path}:{n}: unknown intent {row.intent!r} (one of {intents.INTENTS})"
            )
        rows.append(row)
    return rows


def _fit(rows: Sequence[Labelled], c: float) -> intents.Model:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = DictVectorizer()
    x = vectorizer.fit_transform([dict.fromkeys(_features(r), 1.0) for r in rows])
    classes = [c for c in intents.INTENTS if any(r.intent == c for r in rows)]
    y = np.array([classes.index(r.intent) for r in rows])
    fitted = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    coef = fitted.coef_ if len(classes) > 2 else np.vstack([-fitted.coef_, fitted.coef_]) / 2
    bias = fitted.intercept_ if len(classes) > 2 else np.array([-1, 1]) * fitted.intercept_[0] / 2
    names = vectorizer.get_feature_names_out()
    weights = {
        str(name): tuple(round(float(w), 5) for w in coef[:, j])
        for j, name in enumerate(names)
        if np.abs(coef[:, j]).max() >= 1e-4
    }
    return intents.Model(
        classes=tuple(classes), bias=tuple(round(float(b), 5) for b in bias), weights=weights
    )


def _features(row: Labelled) -> list[str]:
    return intents.features(searched_text(row.question))


def accuracy(model: intents.Model, rows: Sequence[Labelled]) -> float:
    """The share of rows whose intent the model predicts."""
    hits = [model.predict(searched_text(r.question)) == r.intent for r in rows]
    return round(sum(hits) / len(hits), 4) if hits else float("nan")


def cross_validated(rows: Sequence[Labelled], c: float, folds: int = FOLDS) -> float:
    """Accuracy over `folds` folds (rows dealt round-robin in file order)."""
    correct = 0
    for k in range(folds):
        train = [r for i, r in enumerate(rows) if i % folds != k]
        held = [r for i, r in enumerate(rows) if i % folds == k]
        correct += round(accuracy(_fit(train, c), held) * len(held))
    return round(correct / len(rows), 4)


def fit(rows: Sequence[Labelled], source: str) -> tuple[intents.Model, dict[str, Any]]:
    """Fit on the dev rows (C by cross-validation), score on the test rows."""
    dev = [r for r in rows if r.split != "test"]
    test = [r for r in rows if r.split == "test"]
    if not dev:
        raise ValueError(f"{source}: no dev questions to fit on")
    cv = {c: cross_validated(dev, c) for c in C_GRID}
    best = max(C_GRID, key=lambda c: (cv[c], -c))
    model = _fit(dev, best)
    wrong = [
        {"id": r.id, "question": r.question, "intent": r.intent, "predicted": p}
        for r in test
        if (p := model.predict(searched_text(r.question))) != r.intent
    ]
    about = {
        "fitted_on": source,
        "dev": len(dev),
        "test": len(test),
        "per_intent": dict(Counter(r.intent for r in dev)),
        "C": best,
        "cv_accuracy": cv,
        "dev_accuracy": accuracy(model, dev),
        "test_accuracy": accuracy(model, test) if test else None,
        "test_wrong": wrong,
    }
    return intents.Model(model.classes, model.bias, model.weights, about), about


def write(model: intents.Model, path: Path) -> None:
    """Write the model as rag/question/intent.py reads it, a feature's weights a line."""
    data = model.to_json()
    head = {k: v for k, v in data.items() if k != "weights"}
    lines = [json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "weights": {']
    rows = [
        f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(v)}"
        for k, v in data["weights"].items()
    ]
    path.write_text("\n".join(lines) + "\n" + ",\n".join(rows) + "\n }\n}\n", "utf-8")

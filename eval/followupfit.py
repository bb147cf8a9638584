"""Labelled conversations -> the follow-up model: `rag eval fit-followup`.

Every question of a file after its first is asked right after the line before it, as a
person would type them in one chat: the line before is answered (after its own previous
turn when it is a follow-up itself), then the question is read and its follow-up
features (rag/question/followup.py) measured against that answer. The label is whether the
question's `follow_up_of` names the line before; every other pair is a change of topic,
or a question that stands alone although it says 'it' ('why does SGD never wander along
them?'). A question that stands alone and, asked alone, is answered from the very paper in
focus ('gto speedup over eagle-3' after 'what is GTO') is left out of the fit: read
either way it finds the same paper, so its label says nothing of what the decision
changes. A logistic model (rag/logistic.py) is fitted on the other rows; the threshold is
the one of the best F1 on them. Figures of a 5-fold cross-validation over the questions go
into `about`. Fit on dev files only; the test files are scored, never fitted on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from eval.questions import Question
from rag import logistic
from rag.assistant import Assistant
from rag.logistic import Model
from rag.question import followup
from rag.types import Answer

FOLDS = 5


def followup_rows(
    assistant: Assistant, questions: Sequence[Question], index: str
) -> list[dict[str, Any]]:
    """One row per question after the first: its features after the line before it."""
    by_id = {q.id: q for q in questions}
    rows = []
    for previous, q in itertools.pairwise(questions):
        if q.kind == "related" or previous.kind == "related":
            continue
        conversation = assistant.conversation()
        parent = by_id.get(previous.follow_up_of or "")
        for asked in (parent, previous):
            if asked is not None:
                conversation.ask(asked.question)
        read_q = assistant.read(q.question, None, conversation.translations)
        alone = assistant.conversation().ask(q.question)
        rows.append(
            {
                "id": q.id,
                "index": index,
                "question": q.question,
                "previous": previous.question,
                "follow_up": q.follow_up_of == previous.id,
                "features": conversation.followup_features(read_q),
                "same_paper": _first_cited(alone) == _first_cited(conversation.turns[-1].answer),
            }
        )
    return rows


def _first_cited(answer: Answer) -> str | None:
    shown = [s for s in answer.sources if s.cited] or answer.sources
    return shown[0].paper_id if shown else None


def informative(row: dict[str, Any]) -> bool:
    """Tell whether a row's label says anything: not a question that stands alone and
    finds the paper in focus anyway."""
    return row["follow_up"] or not row.get("same_paper")


def fit(
    rows: Sequence[dict[str, Any]], l2: float = 1.0, about: dict[str, Any] | None = None
) -> Model:
    """The model on the informative rows, its threshold the best F1's, with
    cross-validated figures."""
    every = len(rows)
    rows = [r for r in rows if informative(r)]
    if not any(r["follow_up"] for r in rows) or all(r["follow_up"] for r in rows):
        raise ValueError("the follow-up model needs follow-ups and questions that stand alone")
    model = _fitted(rows, l2)
    folds = [r["id"] for r in rows]
    predicted = np.zeros(len(rows), dtype=bool)
    for k in range(FOLDS):
        train = [r for i, r in enumerate(rows) if hash_fold(folds[i]) != k]
        if not any(r["follow_up"] for r in train):
            continue
        fold_model = _fitted(train, l2)
        for i, r in enumerate(rows):
            if hash_fold(folds[i]) == k:
                predicted[i] = fold_model.confidence(r["features"]) >= fold_model.threshold
    labels = np.array([r["follow_up"] for r in rows], dtype=bool)
    return replace(
        model,
        about={
            **(about or {}),
            "rows": every,
            "fitted_rows": len(rows),
            "follow_ups": int(labels.sum()),
            "fitted": scores(labels, _decisions(model, rows)),
            "cross_validated": scores(labels, predicted),
            "cross_validated_with_rule": scores(
                labels, (predicted | _refers(rows)) & ~_alone(rows)
            ),
            "rule_alone": scores(labels, _refers(rows)),
        },
    )


def hash_fold(question_id: str) -> int:
    """A question's fold, stable across runs (not Python's salted hash)."""
    return sum(question_id.encode()) % FOLDS


def _fitted(rows: Sequence[dict[str, Any]], l2: float) -> Model:
    model = logistic.fit(
        [r["features"] for r in rows], [r["follow_up"] for r in rows], followup.FEATURES, l2
    )
    labels = np.array([r["follow_up"] for r in rows], dtype=bool)
    confidence = np.array([model.confidence(r["features"]) for r in rows])
    best = logistic.best_threshold(
        confidence.tolist(), lambda cut: scores(labels, confidence >= cut)["f1"]
    )
    return logistic.with_threshold(model, best)


def _refers(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    """The rows a rule reads as follow-ups whatever the model says."""
    return np.array([followup.leans_back(r["features"]) for r in rows], dtype=bool)


def _alone(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([followup.stands_alone(r["features"]) for r in rows], dtype=bool)


def _decisions(model: Model, rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([model.confidence(r["features"]) >= model.threshold for r in rows])


def scores(labels: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of the follow-ups found."""
    hit = int((labels & predicted).sum())
    precision = hit / int(predicted.sum()) if predicted.any() else 0.0
    recall = hit / int(labels.sum()) if labels.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def write(model: Model, rows: Sequence[dict[str, Any]], target: Path, out: Path) -> None:
    """The model where rag/question/followup.py reads it; the rows beside it in `out`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(model.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )

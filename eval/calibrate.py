"""Labelled questions -> the answerability model: `rag eval calibrate`.

Each question is asked exactly as `rag eval run` asks it (extractive, through a
conversation, in the scope it names) and the evidence its answer was decided on
(`Answer.evidence`, see rag/answering/answerable.py) is kept with its label: answerable or not.
Questions a detail check already refuses (authors, code links, figures the abstract
lacks) and questions whose scope the index does not hold are decided without the model
and left out of the fit. A logistic model is fitted on the rest; on each index the
highest threshold that refuses at most `--max-false-abstention` of its answerable
questions is found, the lowest of those kept, and the result written where
`Settings.answerability_file` reads it. Among distractors an "unanswerable" topic often
has a real answer, so there only unanswerable questions searched inside a scope the
distractors are not in ("which ICLR 2026 papers ...") are used (`labelled`).

Evidence rows from other indexes (`--rows`, e.g. the 22k-abstract index) join the fit, so
one model serves a small and a large index. Writes `rows.jsonl`, `calibration.json`
(the model, the fit's figures, the risk-coverage curve) and `risk_coverage.png`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from eval.questions import Question, ResolvedGold
from eval.run import Variant, answer_all
from rag.answering import answerable
from rag.assistant import Assistant


def evidence_rows(
    assistant: Assistant,
    questions: Sequence[Question],
    gold: ResolvedGold,
    index: str,
    distractors: bool,
) -> list[dict[str, Any]]:
    """One row per question: its evidence, label, and whether a rule decided it."""
    rows = []
    for result in answer_all(assistant, questions, gold, Variant(mode="extractive")):
        answer, q = result.answer, result.question
        evidence = answer.get("evidence") or {}
        rows.append(
            {
                "id": q.id,
                "index": index,
                "group": getattr(q, "group", q.kind),
                "question": q.question,
                "answerable": q.answerable,
                "has_gold": bool(result.gold),
                "gold_cited": bool(result.gold and result.gold & _cited(answer)),
                "by_rule": not evidence or bool(evidence.get("missing_detail")),
                "distractors": distractors,
                "scoped": bool(answer.get("applied_filters")),
                "features": {k: evidence.get(k, 0.0) for k in answerable.FEATURES},
            }
        )
    return rows


def labelled(row: dict[str, Any]) -> bool:
    """Tell whether a row's label holds on its index. Among distractors (22,000 other
    abstracts) an 'unanswerable' topic often has a real answer ('watermarks for LLMs'
    has several), so there an unanswerable question counts only when it was searched
    inside a scope the distractors are not in ('which ICLR 2026 papers ...')."""
    return row["answerable"] or not row.get("distractors") or bool(row.get("scoped"))


def _cited(answer: dict[str, Any]) -> frozenset[str]:
    return frozenset(s["paper_id"] for s in answer["sources"] if s["cited"])


def calibrate(
    rows: Sequence[dict[str, Any]], max_false_abstention: float, about: dict[str, Any]
) -> tuple[answerable.Model, dict[str, Any]]:
    """Fit the model on the rows no rule decided; report how it does on every row, and
    how it does on each question file when fitted without it (`cross_validate`)."""
    model = _fit(rows, max_false_abstention, about)
    report = summary(rows, model)
    crossed = cross_validate(rows, max_false_abstention)
    if crossed:
        report["cross_validated"] = crossed
        model = replace(model, about={**model.about, "cross_validated": crossed["overall"]})
    return model, report


def cross_validate(
    rows: Sequence[dict[str, Any]], max_false_abstention: float
) -> dict[str, Any] | None:
    """Leave one question file out: each file's rows (on every index) decided by the model
    and threshold fitted on the other files' rows alone, as a question set nobody tuned
    for meets them. Only the rows the model decides count (a rule's refusals are the same
    in every fold). The gap between these figures and the fitted ones is what a fresh set
    loses (over the seeds, dev2.jsonl held out: false abstention 0.14). None when the
    rows come from fewer than two files (rows read with `--rows` from before rows named
    their file are fitted on in every fold, and scored in none)."""
    files = sorted({r["file"] for r in rows if r.get("file")})
    if len(files) < 2:
        return None
    out: dict[str, Any] = {}
    refused_good = good_n = refused_bad = bad_n = 0
    for name in files:
        try:
            model = _fit([r for r in rows if r.get("file") != name], max_false_abstention, {})
        except ValueError:  # the other files hold no unanswerable question
            continue
        mine = [r for r in rows if r.get("file") == name and labelled(r) and not r["by_rule"]]
        refused = [model.confidence(r["features"]) < model.threshold for r in mine]
        good = [r["answerable"] for r in mine]
        fa = sum(f and g for f, g in zip(refused, good, strict=True))
        ar = sum(f and not g for f, g in zip(refused, good, strict=True))
        refused_good, good_n = refused_good + fa, good_n + sum(good)
        refused_bad, bad_n = refused_bad + ar, bad_n + len(good) - sum(good)
        out[name] = {
            "questions": len(mine),
            "threshold": model.threshold,
            "false_abstention": _share(fa, sum(good)),
            "abstention_recall": _share(ar, len(good) - sum(good)),
        }
    out["overall"] = {
        "false_abstention": _share(refused_good, good_n),
        "abstention_recall": _share(refused_bad, bad_n),
    }
    return out


def _fit(
    rows: Sequence[dict[str, Any]], max_false_abstention: float, about: dict[str, Any]
) -> answerable.Model:
    """The model fitted on the rows no rule decided, with the threshold every index allows."""
    fitted = [r for r in rows if not r["by_rule"] and labelled(r)]
    if not any(r["answerable"] for r in fitted) or all(r["answerable"] for r in fitted):
        raise ValueError("calibration needs answerable and unanswerable questions")
    model = answerable.fit(
        [r["features"] for r in fitted],
        [r["answerable"] for r in fitted],
        max_false_abstention=max_false_abstention,
        about={**about, "rows": len(fitted)},
    )
    # One threshold serves every index: the lowest of those each index's own rows allow,
    # so false abstention stays within bounds on the small index and the large one.
    per_index = []
    for index in sorted({r["index"] for r in fitted}):
        mine = [r for r in fitted if r["index"] == index]
        confidence = np.array([model.confidence(r["features"]) for r in mine])
        good = np.array([r["answerable"] for r in mine], dtype=bool)
        per_index.append(answerable.pick_threshold(confidence, good, max_false_abstention))
    threshold = math.floor(min(per_index) * 1e4) / 1e4
    return replace(model, threshold=threshold)


def summary(rows: Sequence[dict[str, Any]], model: answerable.Model) -> dict[str, Any]:
    """False abstention and abstention recall at the chosen threshold, per index."""
    out: dict[str, Any] = {}
    for index in sorted({r["index"] for r in rows}):
        mine = [r for r in rows if r["index"] == index and labelled(r)]
        refused = [_refused(r, model) for r in mine]
        good = [r["answerable"] for r in mine]
        answerable_n = sum(good)
        unanswerable_n = len(good) - answerable_n
        out[index] = {
            "questions": len(mine),
            "false_abstention": _share(
                sum(f and g for f, g in zip(refused, good, strict=True)), answerable_n
            ),
            "abstention_recall": _share(
                sum(f and not g for f, g in zip(refused, good, strict=True)), unanswerable_n
            ),
        }
    return out


def _refused(row: dict[str, Any], model: answerable.Model) -> bool:
    return row["by_rule"] or model.confidence(row["features"]) < model.threshold


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def curve_points(
    rows: Sequence[dict[str, Any]], model: answerable.Model
) -> list[tuple[float, bool, bool]]:
    """(confidence, correct if answered, should answer) per row, for the risk-coverage
    curve: a rule-decided row gets confidence 0 (it is always refused)."""
    points = []
    for r in filter(labelled, rows):
        confidence = 0.0 if r["by_rule"] else model.confidence(r["features"])
        correct = r["answerable"] and (r["gold_cited"] or not r["has_gold"])
        points.append((confidence, bool(correct), bool(r["answerable"])))
    return points


def write(
    out: Path,
    rows: Sequence[dict[str, Any]],
    model: answerable.Model,
    report: dict[str, Any],
    model_path: Path,
) -> None:
    """Write rows.jsonl, calibration.json, risk_coverage.png and the model file."""
    from eval.metrics import operating_point, risk_coverage
    from eval.report import plot_risk_coverage

    out.mkdir(parents=True, exist_ok=True)
    with open(out / "rows.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    points = curve_points(rows, model)
    curve = risk_coverage(points)
    actual = operating_point([(c < model.threshold, ok, a) for c, ok, a in points])
    data = {
        "model": model.to_json(),
        "at_threshold": report,
        "risk_coverage": {"curve": curve, "actual": actual},
    }
    (out / "calibration.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    plot_risk_coverage(
        curve,
        actual,
        out / "risk_coverage.png",
        title="Answerability: share correct among answered",
    )
    model_path.write_text(json.dumps(model.to_json(), indent=2) + "\n", encoding="utf-8")
    answerable.load_model.cache_clear()


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows written by an earlier calibration (`rows.jsonl`)."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

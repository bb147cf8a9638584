"""`rag eval calibrate`: the answerability fit, and what it loses on a file it never saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eval.calibrate import calibrate, cross_validate
from rag.answering.answerable import FEATURES


def _rows(file: str, n: int, good_at: float, bad_at: float, seed: int) -> list[dict[str, Any]]:
    """n answerable rows around `good_at` and n unanswerable ones around `bad_at`, on
    every feature, from `file`."""
    rng = np.random.default_rng(seed)
    rows = []
    for answerable, centre in ((True, good_at), (False, bad_at)):
        for i in range(n):
            value = float(np.clip(centre + rng.normal(0, 0.08), 0, 1))
            rows.append(
                {
                    "id": f"{file}-{answerable}-{i}",
                    "index": "seeds",
                    "file": file,
                    "answerable": answerable,
                    "by_rule": False,
                    "features": dict.fromkeys(FEATURES, value),
                }
            )
    return rows


def test_a_file_unlike_the_others_loses_more_when_left_out() -> None:
    # 'informal' answers with weaker evidence than the two formal files: fitted with
    # them, its answerable rows pull the threshold down; left out, it is cut above them.
    rows = [
        *_rows("formal-a.jsonl", 40, 0.7, 0.3, 1),
        *_rows("formal-b.jsonl", 40, 0.7, 0.3, 2),
        *_rows("informal.jsonl", 40, 0.45, 0.3, 3),
    ]
    crossed = cross_validate(rows, 0.02)
    assert crossed is not None
    assert set(crossed) == {"formal-a.jsonl", "formal-b.jsonl", "informal.jsonl", "overall"}
    held_out = crossed["informal.jsonl"]["false_abstention"]
    model, report = calibrate(rows, 0.02, {})
    informal = [r for r in rows if r["file"] == "informal.jsonl" and r["answerable"]]
    fitted = sum(model.confidence(r["features"]) < model.threshold for r in informal)
    assert held_out > 0.3 > fitted / len(informal)
    assert crossed["formal-a.jsonl"]["false_abstention"] <= 0.05
    assert report["cross_validated"]["overall"] == crossed["overall"]
    assert model.about["cross_validated"] == crossed["overall"]


def test_rows_of_one_file_have_nothing_to_hold_out() -> None:
    assert cross_validate(_rows("only.jsonl", 10, 0.7, 0.3, 0), 0.02) is None


def test_a_fitted_model_records_its_files_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval.cli import _recorded

    (tmp_path / "q").mkdir()
    monkeypatch.chdir(tmp_path)
    inside, outside = str(tmp_path / "q" / "dev.jsonl"), "/elsewhere/dev.jsonl"
    assert _recorded([inside, "q/x.jsonl", outside]) == ["q/dev.jsonl", "q/x.jsonl", outside]

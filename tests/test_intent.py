"""The question-intent model: its features, its fit, and the shipped model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval import intent as fitting
from rag.cli import main
from rag.question import intent
from rag.question.reading import read, searched_text

LABELS = Path(__file__).parents[1] / "eval" / "questions" / "intent.jsonl"


def _rows(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_features_are_words_kinds_and_the_question_start() -> None:
    found = intent.features("how many papers on DPO?")
    assert {"w=how", "w=many", "w=papers", "w=<name>", "s=how many", "asks"} <= set(found)
    assert "many+paper" in found
    assert "many+paper" not in intent.features("how many GPUs did DeMo use")
    assert "measure" in intent.features("AltGDA convergence rate")
    assert "w=<num>" in intent.features("gain on aime 25")


def test_read_labels_names_the_file_and_line_of_a_bad_row(tmp_path: Path) -> None:
    path = _rows(tmp_path, [{"id": "a", "question": "what is GTO", "intent": "definition"}])
    with path.open("a", encoding="utf-8") as out:
        out.write('{"id": "b", "question": "gto speedup", "intent": "speed"}\n')
    with pytest.raises(ValueError, match=r"labels\.jsonl:2: unknown intent 'speed'"):
        fitting.read_labels(path)
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"labels\.jsonl:1: not a labelled question"):
        fitting.read_labels(path)


def test_a_fit_learns_intents_from_words_and_scores_the_test_rows() -> None:
    dev = [
        *[("how many papers on " + t, "count") for t in ("dpo", "lora", "rl", "gans", "nas")],
        *[("what is " + t, "definition") for t in ("GTO", "DeMo", "BoRA", "SPO", "LES")],
        *[(t + " speedup", "figure") for t in ("gto", "demo", "bora", "spo", "les")],
    ]
    test = [("how many papers on clip", "count"), ("what is CSAM", "definition")]
    rows = [
        fitting.Labelled(f"{split}{i}", q, label, split)
        for split, pairs in (("dev", dev), ("test", test))
        for i, (q, label) in enumerate(pairs)
    ]
    model, about = fitting.fit(rows, "inline")
    assert model.predict("how many papers on unlearning") == "count"
    assert model.predict("what is AuxDPO") == "definition"
    assert model.predict("altgda speedup") == "figure"
    assert about["dev"] == 15 and about["test"] == 2 and about["test_accuracy"] == 1.0
    assert set(model.classes) == {"count", "definition", "figure"}
    probabilities = model.probabilities("how many papers on dpo")
    assert abs(sum(probabilities.values()) - 1.0) < 1e-9


def test_the_shipped_model_is_the_fit_of_the_shipped_labels() -> None:
    """rag/data/intent.json agrees with eval/questions/intent.jsonl: its recorded test
    accuracy is what it scores on the test rows now (a label edited without a refit fails)."""
    model = intent.load_model()
    rows = fitting.read_labels(LABELS)
    test = [r for r in rows if r.split == "test"]
    assert model.about["test"] == len(test)
    assert model.about["test_accuracy"] == fitting.accuracy(model, test)
    assert fitting.accuracy(model, [r for r in rows if r.split == "dev"]) >= 0.95
    assert set(model.classes) == set(intent.INTENTS)


def test_read_takes_the_intent_from_the_model_on_the_text_without_its_scope() -> None:
    assert searched_text("which ICLR 2026 papers use DCT per year?") == "which papers use DCT?"
    assert read("which ICLR 2026 papers use CLIP").intent == "papers"
    assert read("UniBiO oracle complexity").intent == "figure"  # no 'how much' needed


def test_fit_intent_writes_a_model_the_reader_loads(tmp_path: Path) -> None:
    labels = _rows(
        tmp_path,
        [
            {"id": f"d{i}", "question": q, "intent": label}
            for i, (q, label) in enumerate(
                [("what is " + t, "definition") for t in ("GTO", "DeMo", "BoRA", "SPO", "LES")]
                + [("papers on " + t, "papers") for t in ("dpo", "lora", "rl", "gans", "nas")]
            )
        ],
    )
    target = tmp_path / "intent.json"
    result = CliRunner().invoke(main, ["eval", "fit-intent", str(labels), "--write", str(target)])
    assert result.exit_code == 0, result.output
    model = intent.load_model(target)
    assert model.predict("papers on clip") == "papers"
    assert model.about["fitted_on"] == str(labels)


def test_a_broken_model_file_is_an_error_naming_it(tmp_path: Path) -> None:
    broken = tmp_path / "intent.json"
    broken.write_text('{"classes": ["lookup"]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"cannot read the intent model .*intent\.json"):
        intent.load_model(broken)

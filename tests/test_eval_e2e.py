"""`rag eval run | compare | check` end to end through click, on copies of the hashed seeds.

The runs are the point, not the model: each runs on a copy of the hash-embedded seeds
(`hashed_index`), and the CLI's assistant embeds with `HashEmbedder` (`hash_embedded`).
The copies keep the session's index untouched; the runs ingest the seeds again (a no-op:
0 chunks embedded) exactly as a user's run would.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rag.cli import main

QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions" / "iclr2026.jsonl"
SUBSET = ("q001", "q003", "q056", "q081", "q099", "q101", "q111", "q126")  # 2 of each kind
ASK_KEYS = {
    "question",
    "answer",
    "abstained",
    "citations",
    "sources",
    "mode",
    "notices",
    "timings_ms",
    "query",
    "flagged",
}
# A question quoting its abstract: retrieval must put that paper first, or ids are mismatched.
QUOTE = {
    "id": "quote",
    "question": "alternating gradient descent-ascent AltGDA two-player zero-sum games "
    "interior Nash equilibrium ergodic convergence rate",
    "kind": "lookup",
    "gold": ["We study the alternating gradient descent-ascent (AltGDA) algorithm"],
}


def subset(tmp_path: Path, ids: tuple[str, ...], extra: list[dict[str, Any]] = ()) -> Path:  # type: ignore[assignment]
    lines = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    chosen = [q for q in lines if q["id"] in ids] + list(extra)
    path = tmp_path / "subset.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in chosen), encoding="utf-8")
    return path


def rag(tmp_path: Path, *args: str) -> Result:
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):  # no developer .env in the cwd
        return runner.invoke(main, list(args), catch_exceptions=False)


def test_eval_run_writes_results_metrics_and_report(
    tmp_path: Path, hashed_index: Path, hash_embedded: None
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    questions = subset(tmp_path, SUBSET, [QUOTE])
    out = tmp_path / "run"

    result = rag(
        tmp_path, "--index-dir", str(index), "eval", "run", str(questions), "--out", str(out)
    )

    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == [*SUBSET, "quote"]
    for r in lines:
        assert set(r) >= ASK_KEYS, r.keys()
        assert r["sources"] and {"paper_id", "cited", "text"} <= set(r["sources"][0])
        assert len(r["eval"]["ranking"]) == 10
    quote = lines[-1]["eval"]
    assert quote["ranking"][0]["paper_id"] in quote["gold"]
    assert quote["scores"]["hit@1"] == 1.0

    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["per_kind"]) == {"lookup", "factual", "multi", "unanswerable"}
    for key in (
        "hit@1",
        "hit@5",
        "hit@10",
        "mrr",
        "ndcg@10",
        "recall@10",
        "citation_precision",
        "citation_recall",
        "answer_contains",
        "abstention_precision",
        "abstention_recall",
        "false_abstention_rate",
        "latency_ms",
        "n",
    ):
        assert key in metrics["overall"]
    assert metrics["overall"]["questions"] == metrics["overall"]["scored"] == 9
    assert {"p50", "p95"} == set(metrics["overall"]["latency_ms"]["total"])
    assert metrics["run"]["ingest"]["chunks_embedded"] == 0  # the seeds were already there
    assert metrics["gold_problems"] == [] and metrics["unscored"] == []

    # no question of the shipped set has a group or language of its own: kind and "en"
    assert metrics["per_group"].keys() == metrics["per_kind"].keys()
    assert set(metrics["per_language"]) == {"en"}
    assert metrics["per_language"]["en"]["questions"] == 9
    risk = metrics["risk_coverage"]
    assert risk["curve"] and risk["curve"][-1]["coverage"] == 1.0
    assert {"coverage", "accuracy", "answered", "correct"} <= set(risk["actual"])

    report = (out / "report.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert len(images) == 5 and "risk_coverage.png" in images
    for image in images:
        assert (out / image).read_bytes().startswith(b"\x89PNG")


def test_a_follow_up_is_asked_in_the_conversation_it_follows(
    tmp_path: Path, hashed_index: Path, hash_embedded: None
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    extra = [
        QUOTE,
        {"id": "short", "question": "Which datasets?", "group": "short"},  # a new conversation
        {
            "id": "more",
            "question": "What convergence rate does it show?",
            "follow_up_of": "quote",
            "group": "follow-up",
            "gold": QUOTE["gold"],
            "scope": {"venue": "ICLR", "year": 2026},
        },
    ]
    questions = subset(tmp_path, (), extra)
    out = tmp_path / "run"

    result = rag(
        tmp_path, "--index-dir", str(index), "eval", "run", str(questions), "--out", str(out)
    )

    assert result.exit_code == 0, result.output
    _, short, more = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    # offline, a follow-up is searched together with the query of the turn it follows
    assert "AltGDA" in more["query"] and more["query"] != more["question"]
    assert "AltGDA" not in short["query"]  # not glued to the question before it
    assert more["eval"]["follow_up_of"] == "quote" and more["eval"]["group"] == "follow-up"
    assert more["eval"]["ranking"][0]["paper_id"] in more["eval"]["gold"]
    assert more["eval"]["scores"]["in_scope_citations"] in (None, 1.0)  # seeds: ICLR 2026
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics["per_group"]) == ["lookup", "short", "follow-up"]


def corpus(path: Path, name: str) -> Path:
    """A tiny paperlists-style file of three distractor abstracts."""
    records = [
        {
            "id": f"{name}-{i}",
            "title": f"Distractor {name} {i}",
            "abstract": f"We study topic {i} of {name}: a distractor abstract about kernels, "
            f"graphs and sampling, written for the evaluation tests (variant {i}).",
        }
        for i in range(3)
    ]
    file = path / f"{name}.json"
    file.write_text(json.dumps(records), encoding="utf-8")
    return file


def test_with_corpus_adds_distractors_once(
    tmp_path: Path, hashed_index: Path, hash_embedded: None
) -> None:
    out = tmp_path / "run"
    shutil.copytree(hashed_index, out / "index")  # the default index: OUT/index
    questions = subset(tmp_path, ("q111", "q126"))
    first, second = corpus(tmp_path, "alpha"), corpus(tmp_path, "beta")
    args = [
        "eval",
        "run",
        str(questions),
        "--out",
        str(out),
        "--with-corpus",
        str(first),
        str(second),
        "--top-k",
        "3",
    ]

    assert (result := rag(tmp_path, *args)).exit_code == 0, result.output
    run = json.loads((out / "metrics.json").read_text())["run"]
    assert run["papers"] == 52 + 6 and run["ingest"]["chunks_embedded"] == 6
    assert run["corpora"] == [str(first), str(second)] and run["top_k"] == 3
    assert run["index"] == str(out / "index")

    assert (result := rag(tmp_path, *args)).exit_code == 0, result.output
    run = json.loads((out / "metrics.json").read_text())["run"]
    assert run["papers"] == 58 and run["ingest"]["chunks_embedded"] == 0


def test_compare_writes_one_table_and_one_plot(
    tmp_path: Path, hashed_index: Path, hash_embedded: None
) -> None:
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    questions = subset(tmp_path, ("q001", "q111"))
    out = tmp_path / "cmp"

    result = rag(
        tmp_path,
        "--index-dir",
        str(index),
        "eval",
        "compare",
        str(questions),
        "--out",
        str(out),
        "--retriever",
        "dense",
        "--retriever",
        "bm25",
    )

    assert result.exit_code == 0, result.output
    table = (out / "compare.md").read_text().splitlines()
    assert [row.split("|")[1].strip() for row in table[2:]] == [
        "extractive-dense",
        "extractive-bm25",
    ]
    assert (out / "compare.png").read_bytes().startswith(b"\x89PNG")
    overall = json.loads((out / "compare.json").read_text())
    assert set(overall) == {"extractive-dense", "extractive-bm25"}
    assert (out / "extractive-bm25" / "results.jsonl").exists()


def test_llm_mode_without_an_endpoint_is_refused(tmp_path: Path) -> None:
    questions = subset(tmp_path, ("q001",))
    result = rag(tmp_path, "eval", "run", str(questions), "--out", "x", "--mode", "llm")
    assert result.exit_code == 2 and "OPENAI_BASE_URL" in result.output


def test_a_broken_question_set_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "Q?"}\n{"id": "b"}\n', encoding="utf-8")
    result = rag(tmp_path, "eval", "run", str(bad), "--out", "x")
    assert result.exit_code == 2 and f"{bad}:2:" in result.output


@pytest.mark.parametrize("corpora", [[], ["--with-corpus"]])
def test_check_resolves_the_shipped_set(tmp_path: Path, corpora: list[str]) -> None:
    extra = [*corpora, str(corpus(tmp_path, "gamma"))] if corpora else []
    result = rag(tmp_path, "eval", "check", str(QUESTIONS), *extra)
    assert result.exit_code == 0, result.output
    assert "135 questions" in result.output and "exactly one paper" in result.output
    assert ("55 papers" if corpora else "52 papers") in result.output


def test_check_reports_a_snippet_that_matches_nothing(tmp_path: Path) -> None:
    path = subset(tmp_path, (), [{"id": "x", "question": "Q?", "gold": ["no abstract says this"]}])
    result = rag(tmp_path, "eval", "check", str(path))
    assert result.exit_code == 1 and "x: 'no abstract says this' matches no paper" in result.output


def test_eval_is_registered_when_rag_cli_runs_as_a_module() -> None:
    # `python -m rag.cli` imports rag.cli twice (as __main__, then by name): no import cycle.
    done = subprocess.run(
        [sys.executable, "-m", "rag.cli", "eval", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "compare" in done.stdout and "check" in done.stdout

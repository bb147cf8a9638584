"""`rag bench` runs end to end on a tiny corpus (figures are printed, never asserted as
speed targets: timing belongs in the benchmark, not in unit tests)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from eval.bench import TARGETS, even_sample, format_table
from eval.peer import distinct, hit_rate, percentile
from rag.cli import main
from rag.config import BUNDLED_CORPUS
from rag.embedding.backends import BACKENDS

from .conftest import FIXTURES


def test_percentile_is_the_one_eval_reports() -> None:
    from eval.metrics import percentile as eval_percentile

    assert percentile([1, 2, 3, 4], 50) == 2.5 == eval_percentile([1, 2, 3, 4], 50)
    assert percentile([5, 1, 3], 95) == 4.8
    assert percentile([7], 50) == 7


def test_even_sample_spreads_across_the_texts() -> None:
    assert even_sample(list("abcdef"), 3) == ["a", "c", "e"]
    assert even_sample(list("ab"), 5) == ["a", "b"]
    assert len(even_sample([str(i) for i in range(10_000)], 2048)) == 2048


def test_hit_rate_counts_gold_in_the_first_five_distinct_papers() -> None:
    scored = [("q1", frozenset({"p6"})), ("q2", frozenset({"p2", "p9"}))]
    ranked = [distinct(["p1", "p1", "p2", "p3", "p4", "p5", "p6"]), ["p9"]]
    assert ranked[0][:5] == ["p1", "p2", "p3", "p4", "p5"]
    assert hit_rate(ranked, scored) == 0.5
    assert hit_rate([], []) is None


@pytest.mark.model
def test_bench_reports_every_figure(tmp_path: object) -> None:
    result = CliRunner().invoke(
        main,
        [
            "--index-dir",
            f"{tmp_path}/unused",
            "bench",
            "--json",
            "--limit",
            "3",
            "--corpus",
            str(FIXTURES / "records.csv"),
            "--corpus",
            str(FIXTURES / "copilot.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # 4 papers, limited to 3, and the 52 bundled seeds always added: hit@5 is scored
    assert data["abstracts"] == 3 + 52 and data["chunks"] >= 3 + 52
    assert data["limit"] == 3
    assert data["raw_sample"] == data["embedded_texts"]  # fewer texts than the sample size
    assert data["hit_questions"] > 0 and 0 <= data["hit_at_5"] <= 1
    assert data["peer"].startswith("llama-index VectorStoreIndex")
    assert "HuggingFaceEmbedding" in data["peer"] and "our embedder" in data["peer_same_embedder"]
    assert data["peer_chunks"] >= 1 and data["peer_same_embedder_chunks"] >= 1
    assert data["cpu"]["cores"] >= 1 and isinstance(data["cpu"]["flags"], list)
    assert data["embed_backend"] in BACKENDS and data["embed_query_backend"] in BACKENDS
    assert data["embed_family"] in ("fp32", "int8")
    for key in (
        "raw_embed_chunks_per_s",
        "ingest_chunks_per_s",
        "ingest_vs_raw",
        "query_p50_ms",
        "query_p95_ms",
        "answer_extractive_p95_ms",
        "peak_rss_mb",
        "peer_ingest_s",
        "peer_ingest_chunks_per_s",
        "peer_query_p50_ms",
        "peer_query_p95_ms",
        "ingest_speedup_vs_peer",
        "query_speedup_vs_peer",
        "peer_same_embedder_ingest_s",
        "peer_same_embedder_query_p95_ms",
        "ingest_speedup_vs_peer_same_embedder",
        "query_speedup_vs_peer_same_embedder",
        "cold_start_s",
    ):
        assert data[key] > 0, key
    assert data["query_p50_ms"] <= data["query_p95_ms"]
    assert data["peer_query_p50_ms"] <= data["peer_query_p95_ms"]
    table = format_table(data)
    assert "peer_chunks" not in table  # paired with `chunks` on one row
    assert data["cpu"]["model"] in table
    assert all(key in table for key in ("ingest_s", "hit_at_5", "query_p95_ms"))
    assert set(data["targets"]) == set(TARGETS)
    for key, check in data["targets"].items():
        op, bound = check["target"].split()
        assert check["value"] == data[key]
        assert check["met"] == (
            data[key] <= float(bound) if op == "<=" else data[key] >= float(bound)
        )
        assert key in table.split("targets")[1]


@pytest.mark.model
def test_bench_without_peer_or_limit(tmp_path: object) -> None:
    result = CliRunner().invoke(
        main,
        [
            "--index-dir",
            f"{tmp_path}/unused",
            "bench",
            "--no-peer",
            "--no-cold-start",
            "--raw-sample",
            "2",
            "--corpus",
            str(FIXTURES / "records.csv"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "raw_sample" in result.output and "peer" not in result.output
    assert "cold_start_s" not in result.output


@pytest.mark.model
def test_bench_scores_hit_at_5_on_the_bundled_seeds(tmp_path: object) -> None:
    # The bundled ICLR 2026 seeds (the default corpus) hold the papers the eval set's gold
    # snippets name: gold resolves, so both sides are scored.
    result = CliRunner().invoke(
        main,
        [
            "--index-dir",
            f"{tmp_path}/unused",
            "bench",
            "--corpus",
            str(BUNDLED_CORPUS),
            "--limit",
            "60",
            "--raw-sample",
            "64",
            "--no-cold-start",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["raw_sample"] <= 64
    assert data["hit_questions"] > 0
    assert 0 <= data["hit_at_5"] <= 1
    assert 0 <= data["peer_hit_at_5"] <= 1

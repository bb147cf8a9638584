"""`rag bench` runs end to end on a tiny corpus (figures are printed, never asserted as
speed targets: timing belongs in the benchmark, not in unit tests)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rag.bench import percentile
from rag.cli import main

from .conftest import FIXTURES


def test_percentile_nearest_rank() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2
    assert percentile([5, 1, 3], 95) == 5
    assert percentile([7], 50) == 7


def test_bench_reports_every_figure(tmp_path: object) -> None:
    result = CliRunner().invoke(
        main,
        [
            "--index-dir",
            f"{tmp_path}/unused",
            "bench",
            "--json",
            "--corpus",
            str(FIXTURES / "records.csv"),
            "--corpus",
            str(FIXTURES / "copilot.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["abstracts"] == 4 and data["chunks"] >= 4
    for key in (
        "raw_embed_chunks_per_s",
        "ingest_chunks_per_s",
        "ingest_vs_raw",
        "query_p50_ms",
        "query_p95_ms",
        "answer_extractive_p95_ms",
        "peak_rss_mb",
    ):
        assert data[key] > 0, key
    assert data["query_p50_ms"] <= data["query_p95_ms"]

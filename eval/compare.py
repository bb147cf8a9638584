"""Variants side by side on one index: compare.md (one table) and compare.png (one plot).

Each variant (retriever x answer mode) is a full `evaluate` run into its own subfolder
(results.jsonl, metrics.json, report.md), so any cell of the table can be traced to the
answers behind it. The LLM mode is only compared when an endpoint is configured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.report import blank_figure, save
from eval.run import Variant

RETRIEVERS = ("dense", "bm25", "hybrid")
COLUMNS = (
    "hit@1",
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
)
PLOTTED = (
    "hit@1",
    "mrr",
    "recall@10",
    "citation_recall",
    "answer_contains",
    "abstention_recall",
    "false_abstention_rate",
)


def variants(
    retrievers: Sequence[str], modes: Sequence[str], top_k: int | None = None
) -> list[Variant]:
    """Every mode x retriever pair: (["dense", "bm25"], ["extractive"]) -> 2 variants."""
    return [Variant(mode, retriever, top_k) for mode in modes for retriever in retrievers]


def write_comparison(out: Path, runs: dict[str, dict[str, Any]]) -> None:
    """Write compare.json (the overall metrics), compare.md and compare.png."""
    out.mkdir(parents=True, exist_ok=True)
    overall = {name: m["overall"] for name, m in runs.items()}
    (out / "compare.json").write_text(json.dumps(overall, indent=2) + "\n", encoding="utf-8")
    (out / "compare.md").write_text(table(overall) + "\n", encoding="utf-8")
    plot(overall, out / "compare.png")


def table(overall: dict[str, dict[str, Any]]) -> str:
    """One row per variant: the overall metrics and the median total latency."""
    head = "| variant | " + " | ".join(COLUMNS) + " | p50 ms |"
    lines = [head, "|---" * (len(COLUMNS) + 2) + "|"]
    for name, m in overall.items():
        cells = ["–" if m.get(c) is None else f"{m[c]:.3f}" for c in COLUMNS]
        p50 = m["latency_ms"].get("total", {}).get("p50")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {_ms(p50)} |")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def plot(overall: dict[str, dict[str, Any]], path: Path) -> None:
    """Grouped bars: one group per metric, one bar per variant."""
    fig, ax = blank_figure(10, 4.5)
    width = 0.8 / max(1, len(overall))
    for i, (name, m) in enumerate(overall.items()):
        xs = [j for j, c in enumerate(PLOTTED) if m.get(c) is not None]
        bars = ax.bar([j + i * width for j in xs], [m[PLOTTED[j]] for j in xs], width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=6, rotation=90, padding=2)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(PLOTTED))], PLOTTED)
    ax.set_ylim(0, 1.3)
    save(fig, ax, path, "Variants compared (overall)", ncols=min(3, len(overall)))

"""Results + metrics -> report.md with PNG plots beside it (matplotlib's Agg canvas).

The report holds the summary table (overall and per kind, each value with the number of
questions behind it), the key metrics per group (the questions' style tags) and per
language, latency per stage, five plots (metrics per kind, recall@k curves, the
risk-coverage curve with the system's operating point, a latency histogram, the top
hit's similarity for answerable vs unanswerable questions with the abstention
threshold), a similarity-only abstention sweep for calibrating that threshold,
unresolved gold, and the misses of each kind with what the system returned.
Figures are drawn on an explicit Agg canvas, not through pyplot: no window, no display,
and no global backend switched under the rest of the process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from eval.metrics import (
    GROUP_METRICS,
    JUDGE_METRICS,
    SCORE_METRICS,
    abstention,
    question_scores,
)

if TYPE_CHECKING:  # run.py writes reports, so report.py may not import it at run time
    from eval.result import Result

SUMMARY_ROWS = (*SCORE_METRICS, *GROUP_METRICS, *JUDGE_METRICS)
BAR_METRICS = (
    "hit@1",
    "hit@10",
    "mrr",
    "recall@10",
    "citation_precision",
    "citation_recall",
    "answer_contains",
    "abstention_recall",
    "false_abstention_rate",
)
GROUP_COLUMNS = (
    "hit@1",
    "hit@5",
    "answer_contains",
    "citation_precision",
    "abstention_recall",
    "false_abstention_rate",
    "in_scope_citations",
    "count_error",
    "count_right",
    "set_precision",
    "set_recall",
    "table_support",
    "related_precision@5",
    "related_recall@5",
)
RISK_ROWS = 8  # curve points listed under the risk-coverage plot
SWEEP = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
MISSES_SHOWN = 15
_N_KEY = {
    "abstention_precision": "abstained",
    "abstention_recall": "unanswerable",
    "false_abstention_rate": "answerable",
}


def write_report(out: Path, results: Sequence[Result], metrics: dict[str, Any]) -> Path:
    """Write report.md and its PNGs into `out`; return the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    threshold = metrics["run"].get("abstention", {}).get("threshold")
    plot_per_kind(metrics, out / "per_kind.png")
    plot_recall_curves(metrics, out / "recall_at_k.png")
    plot_latency(results, out / "latency.png")
    plot_abstention_scores(results, threshold, out / "abstention_scores.png")
    risk = metrics.get("risk_coverage") or {}
    plot_risk_coverage(risk.get("curve") or [], risk.get("actual"), out / "risk_coverage.png")
    sections = [
        _header(metrics),
        "## Summary\n\n" + summary_table(metrics) + "\n\n![metrics per kind](per_kind.png)",
        _groups_section(metrics),
        _breakdown_section("Per language", "language", metrics.get("per_language") or {}, 2),
        "## Retrieval depth\n\nMean recall@k over questions with gold (for one gold paper, "
        "recall@k = hit@k).\n\n![recall@k](recall_at_k.png)",
        _risk_section(risk),
        _abstention_section(results, metrics),
        "## Latency (ms)\n\n" + latency_table(metrics) + "\n\n![latency](latency.png)",
        _gold_section(metrics),
        _misses_section(results),
        "Metric definitions: eval/README.md.",
    ]
    path = out / "report.md"
    path.write_text("\n\n".join(s for s in sections if s) + "\n", encoding="utf-8")
    return path


# -- tables -------------------------------------------------------------------------------


def _header(metrics: dict[str, Any]) -> str:
    run, overall = metrics["run"], metrics["overall"]
    corpora = ", ".join(run.get("corpora") or []) or "none"
    return (
        f"# Evaluation of `{Path(run['questions_file']).name}`\n\n"
        f"{overall['questions']} questions ({overall['scored']} scored) · "
        f"{run['mode']} answers · {run['retriever']} retrieval · top-k {run['top_k']} "
        f"(ranking depth {run['ranking_depth']}) · {run['papers']} papers "
        f"({run['chunks']} chunks) in `{run['index']}` · distractor corpora: {corpora} · "
        f"{run['seconds']} s · {run['date']}"
    ) + _mixed_modes(metrics)


def _mixed_modes(metrics: dict[str, Any]) -> str:
    modes = metrics.get("answer_modes") or {}
    if len(modes) < 2:
        return ""
    counts = ", ".join(f"{n} {mode}" for mode, n in modes.items())
    return f"\n\n**Answers came in more than one mode ({counts})**: see `notices` in results.jsonl."


def summary_table(metrics: dict[str, Any]) -> str:
    """Metric rows x (all, kinds...) columns; each cell 'value (n)', '–' where none apply."""
    groups = {"all": metrics["overall"], **metrics["per_kind"]}
    lines = ["| metric | " + " | ".join(groups) + " |", "|---" * (len(groups) + 1) + "|"]
    for name in SUMMARY_ROWS:
        cells = [_cell(g.get(name), g["n"].get(_N_KEY.get(name, name), 0)) for g in groups.values()]
        if any(c != "–" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| questions (scored) | "
        + " | ".join(f"{g['questions']} ({g['scored']})" for g in groups.values())
        + " |"
    )
    return "\n".join(lines)


def _cell(value: float | None, n: int) -> str:
    return "–" if value is None else f"{value:.3f} ({n})"


def breakdown_table(parts: Mapping[str, Mapping[str, Any]], label: str = "group") -> str:
    """One row per group (or language): questions (scored), then the key metrics, each
    'value (n)'; columns no row has are left out."""
    columns = [c for c in GROUP_COLUMNS if any(p.get(c) is not None for p in parts.values())]
    lines = [
        f"| {label} | questions (scored) | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 2) + "|",
    ]
    for name, p in parts.items():
        cells = [_cell(p.get(c), p["n"].get(_N_KEY.get(c, c), 0)) for c in columns]
        lines.append(f"| {name} | {p['questions']} ({p['scored']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _breakdown_section(
    title: str, label: str, parts: Mapping[str, Mapping[str, Any]], minimum: int = 1
) -> str:
    if len(parts) < max(1, minimum):
        return ""
    return (
        f"## {title}\n\nEvery metric per {label} is in metrics.json (`per_{label}`); "
        "the key ones:\n\n" + breakdown_table(parts, label)
    )


def _groups_section(metrics: dict[str, Any]) -> str:
    groups = metrics.get("per_group") or {}
    if groups == metrics.get("per_kind"):  # no question has a group of its own
        return ""
    return _breakdown_section("Per group", "group", groups)


def _risk_section(risk: Mapping[str, Any]) -> str:
    curve, actual = risk.get("curve") or [], risk.get("actual") or {}
    source = risk.get("confidence_source", "none")
    text = (
        "## Risk and coverage\n\nAnswering only the questions whose confidence "
        f"(here: `{source}`) reaches a threshold: the share of all questions answered "
        "(coverage) against the share of those answered correctly (a gold paper cited; "
        "any answer to an answerable question without gold; never an answer to an "
        "unanswerable one). The star is what the system actually did. Where the curve "
        "covers questions the system abstained on (mostly right of the star) they count as "
        "wrong, as there is no answer to check: there the curve is a lower bound.\n\n"
        "![risk-coverage](risk_coverage.png)"
    )
    if actual.get("questions"):
        text += (
            f"\n\nActual: answered {actual['answered']} of {actual['questions']} "
            f"(coverage {_fmt(actual['coverage'])}), {actual['correct']} correct "
            f"(accuracy {_fmt(actual['accuracy'])})."
        )
    if curve:
        rows = [
            "| confidence ≥ | coverage | accuracy | abstention recall | false abstention |",
            "|---|---|---|---|---|",
        ]
        for p in _spread(curve, RISK_ROWS):
            rows.append(
                f"| {p['threshold']:.3f} | {_fmt(p['coverage'])} | {_fmt(p['accuracy'])} "
                f"| {_fmt(p['abstention_recall'])} | {_fmt(p['false_abstention_rate'])} |"
            )
        text += "\n\n" + "\n".join(rows)
    return text


def _spread(items: Sequence[Any], count: int) -> list[Any]:
    """About `count` items evenly spread over the list, always with the first and last."""
    if len(items) <= count:
        return list(items)
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def latency_table(metrics: dict[str, Any]) -> str:
    """Stage rows with p50 and p95 over all questions."""
    lines = ["| stage | p50 | p95 |", "|---|---|---|"]
    for stage, p in metrics["overall"]["latency_ms"].items():
        lines.append(f"| {stage} | {p['p50']:.1f} | {p['p95']:.1f} |")
    return "\n".join(lines)


def _abstention_section(results: Sequence[Result], metrics: dict[str, Any]) -> str:
    pairs = [(r.abstention_score, r.question.answerable) for r in results if r.outcome().scored]
    known = [(s, ok) for s, ok in pairs if s is not None]
    threshold = metrics["run"].get("abstention", {}).get("threshold")
    text = (
        f"## Abstention\n\nThreshold: {threshold if threshold is not None else 'unknown'} "
        "(fitted by `rag eval calibrate`). The plot shows each answer's confidence "
        "(rag/answering/answerable.py) for answerable and unanswerable questions, the threshold "
        "as a dashed line; questions a detail check refused have none.\n\n"
        "![abstention scores](abstention_scores.png)"
    )
    if not known:
        return text + "\n\n(No answer carried a confidence.)"
    rows = ["| abstain below | precision | recall | false abstention |", "|---|---|---|---|"]
    for t in SWEEP:
        a = abstention((s < t, ok) for s, ok in known)
        rows.append(
            f"| {t:.2f} | {_fmt(a['abstention_precision'])} | {_fmt(a['abstention_recall'])} "
            f"| {_fmt(a['false_abstention_rate'])} |"
        )
    return text + "\n\nSimilarity alone as the rule (for calibration):\n\n" + "\n".join(rows)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _gold_section(metrics: dict[str, Any]) -> str:
    problems = metrics.get("gold_problems") or []
    if not problems:
        return ""
    lines = [f"- {p['id']}: `{p['entry']}` {p['reason']}" for p in problems]
    return "## Unresolved gold (these questions are not scored)\n\n" + "\n".join(lines)


# -- misses -------------------------------------------------------------------------------


def misses(results: Sequence[Result]) -> dict[str, list[tuple[float, Result, str]]]:
    """Per kind, the questions the system got wrong, worst first, with what went wrong."""
    found: dict[str, list[tuple[float, Result, str]]] = {}
    for r in results:
        problem = _problem(r)
        if problem:
            found.setdefault(r.question.kind, []).append((problem[0], r, problem[1]))
    return {kind: sorted(items, key=lambda x: x[0]) for kind, items in found.items()}


def _problem(r: Result) -> tuple[float, str] | None:
    """(badness order key, description) of a miss; None when the answer is right."""
    o = r.outcome()
    if not o.scored:
        return None
    if not o.answerable:
        return (
            (-(r.abstention_score or 0.0), "answered instead of abstaining")
            if not o.abstained
            else None
        )
    s = question_scores(o)
    wrong = []
    if s["mrr"] is not None and s["hit@1"] == 0.0:
        rank = round(1 / s["mrr"]) if s["mrr"] else None
        wrong.append(f"gold at rank {rank}" if rank else "gold not in the top 10")
    if s["recall@10"] is not None and s["recall@10"] < 1.0:
        wrong.append(f"recall@10 {s['recall@10']:.2f}")
    if s["answer_contains"] == 0.0:
        wrong.append("answer lacks " + ", ".join(repr(e) for e in o.answer_contains))
    if o.abstained:
        wrong.append("abstained")
    if s["in_scope_citations"] is not None and s["in_scope_citations"] < 1.0:
        wrong.append(f"in-scope citations {s['in_scope_citations']:.2f}")
    key = min(
        v
        for v in (s["mrr"], s["recall@10"], s["answer_contains"], s["in_scope_citations"], 1.0)
        if v is not None
    )
    return (key, "; ".join(wrong)) if wrong else None


def _misses_section(results: Sequence[Result]) -> str:
    parts = ["## Misses, worst first"]
    for kind, items in misses(results).items():
        parts.append(f"### {kind} ({len(items)})")
        lines = []
        for _, r, what in items[:MISSES_SHOWN]:
            top = r.ranking[0]["title"] if r.ranking else "nothing"
            said = " ".join(r.answer["answer"].split())[:160]
            lines.append(
                f"- **{r.question.id}** {r.question.question}  \n  {what}. Top hit: "
                f"*{top}*. Answer: “{said}”"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) if len(parts) > 1 else "## Misses\n\nNone."


# -- plots --------------------------------------------------------------------------------


def plot_per_kind(metrics: dict[str, Any], path: Path) -> None:
    """Grouped bars: one group per metric, one bar per kind (only where it applies)."""
    groups = {"all": metrics["overall"], **metrics["per_kind"]}
    fig, ax = blank_figure(11, 4.5)
    width = 0.8 / len(groups)
    for i, (name, group) in enumerate(groups.items()):
        xs = [j for j, m in enumerate(BAR_METRICS) if group.get(m) is not None]
        bars = ax.bar(
            [x + i * width for x in xs], [group[BAR_METRICS[x]] for x in xs], width, label=name
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=6, rotation=90, padding=2)  # 0.00 vs absent
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(BAR_METRICS))], BAR_METRICS)
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylim(0, 1.3)
    save(fig, ax, path, "Metrics per question kind", ncols=len(groups), loc="upper center")


def plot_recall_curves(metrics: dict[str, Any], path: Path) -> None:
    """Mean recall@k for k = 1..10, overall and per kind."""
    curves = metrics["recall_at_k"]
    fig, ax = blank_figure(6, 4)
    for name, values in curves.items():
        if name != "k" and any(v is not None for v in values):
            ax.plot(curves["k"], values, marker="o", label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("mean recall@k")
    ax.set_ylim(0, 1.05)
    save(fig, ax, path, "Recall@k")


def plot_latency(results: Sequence[Result], path: Path) -> None:
    """Histogram of per-question latency: total, retrieval and answering."""
    fig, ax = blank_figure(6, 4)
    stages = {
        stage: [r.answer["timings_ms"][stage] for r in results if stage in r.answer["timings_ms"]]
        for stage in ("total", "retrieve", "answer")
    }
    top = max((max(v) for v in stages.values() if v), default=1.0)
    for stage, values in stages.items():
        if values:  # the same bins for every stage, so the shapes compare
            ax.hist(values, bins=30, range=(0, top), histtype="step", linewidth=1.5, label=stage)
    ax.set_xlabel("ms per question")
    ax.set_ylabel("questions")
    save(fig, ax, path, "Latency")


def plot_abstention_scores(results: Sequence[Result], threshold: float | None, path: Path) -> None:
    """Each answer's confidence, answerable vs unanswerable, with the threshold line."""
    fig, ax = blank_figure(6, 4)
    scored = [r for r in results if r.outcome().scored and r.abstention_score is not None]
    for answerable, label in ((True, "answerable"), (False, "unanswerable")):
        values = [r.abstention_score or 0.0 for r in scored if r.question.answerable is answerable]
        if values:
            ax.hist(values, bins=20, range=(0, 1), alpha=0.6, label=f"{label} ({len(values)})")
    if threshold is not None:
        ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold}")
    ax.set_xlabel("answer confidence")
    ax.set_ylabel("questions")
    save(fig, ax, path, "Abstention scores")


def plot_risk_coverage(
    curve: Sequence[Mapping[str, Any]],
    actual: Mapping[str, Any] | None,
    path: Path,
    title: str = "Risk and coverage",
) -> None:
    """Accuracy among the answered questions against coverage, one point per threshold of
    `eval.metrics.risk_coverage`, with the actual operating point (`operating_point`)
    marked by a star; either may be empty."""
    fig, ax = blank_figure(6, 4)
    if curve:
        ax.plot(
            [p["coverage"] for p in curve],
            [p["accuracy"] for p in curve],
            marker=".",
            markersize=3,
            label="answer when confidence ≥ threshold",
        )
    if actual and actual.get("coverage") is not None and actual.get("accuracy") is not None:
        ax.plot(
            [actual["coverage"]],
            [actual["accuracy"]],
            marker="*",
            markersize=14,
            linestyle="none",
            color="crimson",
            label=f"actual ({actual['coverage']:.2f}, {actual['accuracy']:.2f})",
        )
    ax.set_xlabel("coverage (share of questions answered)")
    ax.set_ylabel("accuracy among answered")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.05)
    save(fig, ax, path, title, loc="lower left")


def blank_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure with one axes, on its own Agg canvas (inches: 6 x 4 -> 660 x 440 px at 110 dpi)."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def save(fig: Figure, ax: Axes, path: Path, title: str, **legend: Any) -> None:
    """Title, legend (or a note that there is nothing to plot), and write the PNG."""
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", **legend)
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", color="grey")
    fig.tight_layout()
    fig.savefig(path, dpi=110)

"""`rag eval`: run | compare | check a question set (registered by rag/cli.py; see eval/README.md).

The index evaluated is the global `rag --index-dir` (or `--chroma-url`) when given on the
command line, else `OUT/index`: never the user's everyday index from `.env`. The heavy
stages, and rag.cli itself, are imported inside the commands: `rag --help` stays fast,
and rag.cli can import this module while it is itself being imported (also when it runs
as `python -m rag.cli`, where a top-level `from rag.cli import ...` would be circular).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from rag.config import BUNDLED_CORPUS, Settings

if TYPE_CHECKING:
    from eval.judge import Judge
    from eval.questions import Question, ResolvedGold
    from rag.assistant import Assistant


class ManyPaths(click.Option):
    """An option that takes every value up to the next option: `--with-corpus a.json b/`.

    click options take one value each; this wraps the parser's handler for the option so
    it also consumes the following non-option words (the option may still be repeated).
    """

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is not None:
                option.process = _greedy(option.process)


def _greedy(process: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def take_all(value: Any, state: Any) -> None:
        process(value, state)
        while state.rargs and not state.rargs[0].startswith("-"):
            process(state.rargs.pop(0), state)

    return take_all


def corpus_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--with-corpus PATH...`: distractor abstracts added to the evaluated index."""
    return click.option(
        "--with-corpus",
        "corpora",
        cls=ManyPaths,
        multiple=True,
        metavar="PATH...",
        help="Files, folders or globs of abstracts to add to the index as distractors "
        "(e.g. ../shared/corpora/paperlists). The seeds are always in it.",
    )(func)


def questions_argument(func: Callable[..., Any]) -> Callable[..., Any]:
    """The QUESTIONS.jsonl argument."""
    return click.argument(
        "questions_file", metavar="QUESTIONS", type=click.Path(exists=True, dir_okay=False)
    )(func)


def write_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--write PATH` (the parameter `model_path`): where a fitting command writes."""
    return click.option("--write", "model_path", type=click.Path(dir_okay=False), help=help_text)


@click.group("eval")
def eval_group() -> None:
    """Measure how far the assistant can be trusted, on question sets with gold papers."""


@eval_group.command("run")
@questions_argument
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--mode", type=click.Choice(["extractive", "llm"]), help="Default: as `rag ask`.")
@click.option("--retriever", type=click.Choice(["dense", "bm25", "hybrid"]))
@click.option("--top-k", type=click.IntRange(1, 50), help="Sources per answer (RAG_TOP_K).")
@corpus_option
@click.option("--judge", is_flag=True, help="Score faithfulness and relevance with an LLM.")
@click.option("--judge-model", help="Model for --judge (default: RAG_LLM_MODEL).")
@click.pass_context
def run_cmd(
    ctx: click.Context,
    questions_file: str,
    out: str,
    mode: str | None,
    retriever: str | None,
    top_k: int | None,
    corpora: tuple[str, ...],
    judge: bool,
    judge_model: str | None,
) -> None:
    """Answer every question of QUESTIONS as `rag ask` does; write results, metrics, report."""
    from eval.run import Variant, evaluate

    settings = eval_settings(ctx, Path(out))
    questions = _load(questions_file)
    _need_endpoint(settings, [mode] if mode else [], judge)
    assistant, gold, about = _prepare(settings, questions, questions_file, corpora)
    grader = _judge(settings, judge_model) if judge else None
    with _friendly_errors(), _bar("Answering", "question", len(questions)) as bar:
        metrics = evaluate(
            assistant,
            questions,
            gold,
            Variant(mode, retriever, top_k),
            Path(out),
            about,
            grader,
            bar.update,
        )
    from eval.report import summary_table

    click.echo(summary_table(metrics))
    click.echo(f"\nWrote {out}/results.jsonl, metrics.json and report.md.")


def _labelled_rows(
    settings: Settings,
    questions_files: Sequence[str],
    corpora: Sequence[str],
    rows: list[dict[str, Any]],
    collect: Callable[[Assistant, list[Question], ResolvedGold, str], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The rows a calibration fits on: `rows` (from earlier runs) plus what `collect`
    takes from each questions file asked over the seeds (+ corpora) index."""
    index_name = "+".join(["seeds", *(Path(c).name for c in corpora)])
    for path in questions_files:
        questions = _load(path)
        assistant, gold, _ = _prepare(settings, questions, path, corpora)
        with _friendly_errors():
            collected = collect(assistant, questions, gold, index_name)
        for row in collected:  # which file a row came from: folds of cross-validation
            row.setdefault("file", Path(path).name)
        rows += collected
    return rows


@eval_group.command("calibrate")
@click.argument("questions_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@corpus_option
@click.option(
    "--rows",
    "extra_rows",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="rows.jsonl of an earlier calibration (e.g. on the 22k index) to fit on too.",
)
@click.option(
    "--max-false-abstention",
    type=click.FloatRange(0, 1),
    default=0.02,
    show_default=True,
    help="Share of the answerable questions the threshold may refuse.",
)
@write_option(
    "Where to write the model (default: RAG_ANSWERABILITY_FILE, else the shipped "
    "rag/data/answerability.json)."
)
@click.pass_context
def calibrate_cmd(
    ctx: click.Context,
    questions_files: tuple[str, ...],
    out: str,
    corpora: tuple[str, ...],
    extra_rows: tuple[str, ...],
    max_false_abstention: float,
    model_path: str | None,
) -> None:
    """Fit the answerability model on labelled QUESTIONS_FILES (see eval/calibrate.py)."""
    from eval import calibrate
    from rag.answering.answerable import DEFAULT_MODEL

    settings = eval_settings(ctx, Path(out))
    rows = _labelled_rows(
        settings,
        questions_files,
        corpora,
        [row for path in extra_rows for row in calibrate.read_rows(Path(path))],
        lambda assistant, questions, gold, index: calibrate.evidence_rows(
            assistant, questions, gold, index, distractors=bool(corpora)
        ),
    )
    about = {
        "questions": _recorded(questions_files),
        "indexes": sorted({r["index"] for r in rows}),
        "max_false_abstention": max_false_abstention,
        "command": "rag eval calibrate " + " ".join(_recorded(questions_files)),
    }
    try:
        model, report = calibrate.calibrate(rows, max_false_abstention, about)
    except ValueError as exc:
        _fail(str(exc))
    target = Path(model_path or settings.answerability_file or DEFAULT_MODEL)
    calibrate.write(Path(out), rows, model, report, target)
    click.echo(json.dumps({"threshold": model.threshold, "at_threshold": report}, indent=2))
    click.echo(f"Wrote {target}, and {out}/rows.jsonl, calibration.json, risk_coverage.png.")


@eval_group.command("calibrate-count")
@click.argument("questions_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@corpus_option
@click.option(
    "--rows",
    "extra_rows",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="rows.jsonl of an earlier count calibration (e.g. on the 22k index) to fit on too.",
)
@write_option(
    "Where to write the cut (default: RAG_MATCH_FILE, else the shipped rag/data/match.json)."
)
@click.pass_context
def calibrate_count_cmd(
    ctx: click.Context,
    questions_files: tuple[str, ...],
    out: str,
    corpora: tuple[str, ...],
    extra_rows: tuple[str, ...],
    model_path: str | None,
) -> None:
    """Fit the relevance cut of count questions on labelled QUESTIONS_FILES (eval/matchfit.py)."""
    from eval import matchfit
    from rag.aggregate.matching import DEFAULT_MODEL

    settings = eval_settings(ctx, Path(out))
    rows = _labelled_rows(
        settings,
        questions_files,
        corpora,
        [row for path in extra_rows for row in matchfit.read_rows(Path(path))],
        lambda assistant, questions, gold, index: matchfit.candidate_rows(
            assistant, questions, gold, index, distractors=bool(corpora)
        ),
    )
    about = {
        "files": _recorded(questions_files),
        "indexes": sorted({r["index"] for r in rows}),
        "command": "rag eval calibrate-count " + " ".join(_recorded(questions_files)),
    }
    try:
        model = matchfit.fit(rows, about=about)
    except ValueError as exc:
        _fail(str(exc))
    target = Path(model_path or settings.match_file or DEFAULT_MODEL)
    figures = matchfit.write(Path(out), rows, model, target)
    click.echo(json.dumps({"threshold": model.threshold, "at_threshold": figures}, indent=2))
    click.echo(f"Wrote {target}, and {out}/rows.jsonl, calibration.json.")


@eval_group.command("fit-sentences")
@click.argument("questions_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@write_option(
    "Where to write the weights (default: OUT/sentence.json; rag/data/sentence.json "
    "is what the answerer reads: install them only after `rag eval run` shows they help)."
)
@click.pass_context
def fit_sentences_cmd(
    ctx: click.Context, questions_files: tuple[str, ...], out: str, model_path: str | None
) -> None:
    """Fit the offline answerer's sentence weights on QUESTIONS_FILES (eval/sentencefit.py)."""
    from eval import sentencefit
    from rag.answering.extractive import sentence_weights

    settings = eval_settings(ctx, Path(out))
    rows = _labelled_rows(
        settings,
        questions_files,
        (),
        [],
        lambda assistant, questions, gold, index: sentencefit.sentence_rows(
            assistant, questions, gold
        ),
    )
    try:
        weights = sentencefit.fit(rows)
    except ValueError as exc:
        _fail(str(exc))
    about = {
        "files": _recorded(questions_files),
        "questions": len({r["id"] for r in rows}),
        "sentences": len(rows),
        "top_sentence_holds_answer": {
            "before": sentencefit.top_hit_rate(rows, sentence_weights()),
            "fitted": sentencefit.top_hit_rate(rows, weights),
        },
        "command": "rag eval fit-sentences " + " ".join(_recorded(questions_files)),
    }
    Path(out).mkdir(parents=True, exist_ok=True)
    target = Path(model_path or Path(out) / "sentence.json")
    sentencefit.write(weights, about, target)
    Path(out, "rows.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    click.echo(json.dumps({"weights": weights, **about}, indent=2))
    click.echo(f"Wrote {target}, and {out}/rows.jsonl.")


@eval_group.command("fit-intent")
@click.argument(
    "labels_file",
    type=click.Path(dir_okay=False, exists=True),
    default="eval/questions/intent.jsonl",
)
@write_option("Where to write the model (default: the shipped rag/data/intent.json).")
def fit_intent_cmd(labels_file: str, model_path: str | None) -> None:
    """Fit the question-intent model on LABELS_FILE's dev questions; score its test ones."""
    from eval import intent
    from rag.question.intent import DEFAULT_MODEL

    try:
        model, about = intent.fit(intent.read_labels(Path(labels_file)), labels_file)
    except ValueError as exc:
        _fail(str(exc))
    target = Path(model_path or DEFAULT_MODEL)
    intent.write(model, target)
    click.echo(json.dumps(about, indent=2, ensure_ascii=False))
    click.echo(f"Wrote {target}.")


@eval_group.command("fit-followup")
@click.argument("questions_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@write_option(
    "Where to write the model (default: RAG_FOLLOWUP_FILE, else the shipped "
    "rag/data/followup.json)."
)
@click.pass_context
def fit_followup_cmd(
    ctx: click.Context, questions_files: tuple[str, ...], out: str, model_path: str | None
) -> None:
    """Fit the follow-up model on QUESTIONS_FILES' consecutive questions (eval/followupfit.py)."""
    from eval import followupfit
    from rag.question.followup import DEFAULT_MODEL

    settings = eval_settings(ctx, Path(out))
    rows = _labelled_rows(
        settings,
        questions_files,
        (),
        [],
        lambda assistant, questions, gold, index: followupfit.followup_rows(
            assistant, questions, index
        ),
    )
    about = {
        "files": _recorded(questions_files),
        "command": "rag eval fit-followup " + " ".join(_recorded(questions_files)),
    }
    try:
        model = followupfit.fit(rows, about=about)
    except ValueError as exc:
        _fail(str(exc))
    target = Path(model_path or settings.followup_file or DEFAULT_MODEL)
    followupfit.write(model, rows, target, Path(out))
    click.echo(json.dumps(model.to_json(), indent=2, ensure_ascii=False))
    click.echo(f"Wrote {target}, and {out}/rows.jsonl.")


@eval_group.command("acronyms")
@click.argument("corpora", nargs=-1, type=click.Path(exists=True))
@write_option(
    "Where to write it (default: RAG_ACRONYMS_FILE, else the shipped rag/data/acronyms.json)."
)
@click.pass_context
def acronyms_cmd(ctx: click.Context, corpora: tuple[str, ...], model_path: str | None) -> None:
    """Build the acronym glossary from CORPORA's abstracts (default: ../shared's
    paperlists and the bundled seeds; eval/acronyms.py)."""
    from eval import acronyms
    from eval.scale import SHARED_BASE
    from rag.acronyms import DEFAULT_FILE
    from rag.config import BUNDLED_CORPUS
    from rag.corpus.load import expand_paths
    from rag.corpus.papers import FieldMap
    from rag.ingest import read_papers
    from rag.types import IngestSummary, Paper

    settings = ctx.find_root().obj["settings"]
    paths: list[str | Path] = [*corpora] or [
        p for p in (SHARED_BASE, Path(BUNDLED_CORPUS)) if p.exists()
    ]
    items = read_papers(expand_paths(paths), FieldMap(), IngestSummary())
    built = acronyms.build(
        (p for p in items if isinstance(p, Paper)),
        about={"corpora": [str(p) for p in corpora] or ["../shared/corpora/paperlists", "seeds"]},
    )
    path = acronyms.write(built, Path(model_path or settings.acronyms_file or DEFAULT_FILE))
    click.echo(json.dumps(built["about"], ensure_ascii=False))
    click.echo(f"Wrote {path}.")


@eval_group.command("compare")
@questions_argument
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option(
    "--retriever",
    "retrievers",
    type=click.Choice(["dense", "bm25", "hybrid"]),
    multiple=True,
    help="Retrievers to compare (repeatable; default: all three).",
)
@click.option(
    "--mode",
    "modes",
    type=click.Choice(["extractive", "llm"]),
    multiple=True,
    help="Answer modes (repeatable; default: extractive, plus llm when an endpoint is set).",
)
@click.option("--top-k", type=click.IntRange(1, 50), help="Sources per answer (RAG_TOP_K).")
@corpus_option
@click.pass_context
def compare_cmd(
    ctx: click.Context,
    questions_file: str,
    out: str,
    retrievers: tuple[str, ...],
    modes: tuple[str, ...],
    top_k: int | None,
    corpora: tuple[str, ...],
) -> None:
    """Run the retriever (and mode) variants on one index; write compare.md and compare.png."""
    from eval.compare import RETRIEVERS, table, variants, write_comparison
    from eval.run import evaluate

    settings = eval_settings(ctx, Path(out))
    questions = _load(questions_file)
    modes = modes or (("extractive", "llm") if settings.base_url else ("extractive",))
    _need_endpoint(settings, modes, judge=False)
    assistant, gold, about = _prepare(settings, questions, questions_file, corpora)
    runs: dict[str, dict[str, Any]] = {}
    for variant in variants(retrievers or RETRIEVERS, modes, top_k):
        name = variant.name(settings)
        with _friendly_errors(), _bar(name, "question", len(questions)) as bar:
            runs[name] = evaluate(
                assistant, questions, gold, variant, Path(out) / name, about, step=bar.update
            )
    write_comparison(Path(out), runs)
    click.echo(table({name: m["overall"] for name, m in runs.items()}))
    click.echo(f"\nWrote {out}/compare.md and compare.png (each variant in its own folder).")


@eval_group.command("check")
@questions_argument
@corpus_option
def check_cmd(questions_file: str, corpora: tuple[str, ...]) -> None:
    """Check QUESTIONS: the format, and that each gold snippet names exactly one paper among
    the seeds (and any --with-corpus abstracts). Reads the files; embeds nothing."""
    from collections import Counter

    from eval.questions import abstracts_in_files, resolve_gold

    questions = _load(questions_file)
    with _friendly_errors():
        abstracts = abstracts_in_files([BUNDLED_CORPUS, *corpora])
    resolved = resolve_gold(questions, abstracts)
    kinds = Counter(q.kind for q in questions)
    click.echo(
        f"{len(questions)} questions ({', '.join(f'{n} {k}' for k, n in kinds.items())}); "
        f"gold checked against {len(abstracts)} papers"
    )
    for problem in resolved.problems:
        click.echo(f"  {problem}")
    if resolved.problems:
        raise SystemExit(1)
    click.echo("Every gold entry names exactly one paper.")


# -- shared steps ---------------------------------------------------------------------


def eval_settings(ctx: click.Context, out: Path) -> Settings:
    """The settings, pointed at the index to evaluate (see the module docstring)."""
    obj = ctx.find_root().obj or {}
    params = ctx.find_root().params
    try:
        settings = obj.get("settings") or Settings()  # type: ignore[call-arg]
    except Exception as exc:  # pydantic names the bad variable
        _fail(f"invalid settings: {exc}")
    index_dir = params.get("index_dir")
    return settings.model_copy(
        update={
            "index_dir": Path(index_dir) if index_dir else out / "index",
            "chroma_url": params.get("chroma_url") or None,
        }
    )


def _load(path: str) -> list[Question]:
    from eval.questions import QuestionError, load_questions

    try:
        return load_questions(path)
    except QuestionError as exc:
        _fail(str(exc))


def _need_endpoint(settings: Settings, modes: Sequence[str], judge: bool) -> None:
    if settings.base_url:
        return
    if "llm" in modes:
        _fail("--mode llm needs an endpoint: set OPENAI_BASE_URL (see .env.example)")
    if judge:
        _fail("--judge needs an endpoint: set OPENAI_BASE_URL (see .env.example)")


def _judge(settings: Settings, model: str | None) -> Judge:
    from eval.judge import Judge

    return Judge(settings, model)


def _prepare(
    settings: Settings, questions: list[Question], questions_file: str, corpora: Sequence[str]
) -> tuple[Assistant, ResolvedGold, dict[str, Any]]:
    """Open and update the index (seeds + corpora), then resolve the gold papers."""
    from eval.run import gold_of, open_index

    click.echo(f"Index: {settings.chroma_url or settings.index_dir}", err=True)
    with _friendly_errors(), _bar("Embedding papers", "paper") as bar:
        assistant, summary = open_index(settings, corpora, progress=_ingest_progress(bar))
    click.echo(
        f"Index holds {summary.total_papers} papers ({summary.chunks_embedded} chunks embedded "
        f"now, {summary.seconds:.1f} s)",
        err=True,
    )
    gold = gold_of(assistant, questions)
    for problem in gold.problems:
        click.echo(f"! gold {problem}: question not scored", err=True)
    about = {
        "questions_file": questions_file,
        "corpora": list(corpora),
        "ingest": {
            "chunks_embedded": summary.chunks_embedded,
            "papers_new": summary.papers_new,
            "seconds": summary.seconds,
            "skipped": len(summary.skipped),
        },
    }
    return assistant, gold, about


def _fail(message: str) -> NoReturn:
    """Stop with one line and exit status 2, as every `rag` command does."""
    from rag.cli import UserError

    raise UserError(message) from None


def _recorded(paths: Sequence[str]) -> list[str]:
    """The question files as a fitted model records them: relative to the working folder
    when inside it, so a model fitted in one checkout names the same files in another."""
    here = Path.cwd().resolve()
    out = []
    for path in paths:
        full = Path(path).resolve()
        out.append(str(full.relative_to(here)) if full.is_relative_to(here) else path)
    return out


@contextmanager
def _friendly_errors() -> Iterator[None]:
    from rag.cli import friendly_errors

    with friendly_errors():
        yield


@contextmanager
def _bar(label: str, unit: str, total: int | None = None) -> Iterator[Any]:
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, disable=None, leave=False)
    started = time.perf_counter()
    try:
        yield bar
    finally:
        bar.close()
        if total:
            click.echo(f"{label}: {time.perf_counter() - started:.1f} s", err=True)


def _ingest_progress(bar: Any) -> Callable[[int, int], None]:
    def progress(done: int, total: int) -> None:
        bar.total, bar.n = total, done
        bar.refresh()

    return progress


@click.command("bench")
@click.option("--corpus", "corpus", multiple=True, help="Files/folders (default: bundled).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Use only the first N papers (after dedupe, in file order).",
)
@click.option(
    "--raw-sample",
    type=click.IntRange(min=1),
    default=2048,
    show_default=True,
    help="Texts embedded to measure the model alone (evenly spaced among those ingested).",
)
@click.option(
    "--peer/--no-peer",
    default=True,
    show_default=True,
    help="Also measure plain llama-index (VectorStoreIndex + Chroma) on the same papers.",
)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Question set for hit@5 (default: eval/questions/iclr2026.jsonl).",
)
@click.option(
    "--cold-start/--no-cold-start",
    default=True,
    show_default=True,
    help="Also time the first answer of new `rag ask` processes (cold_start_s).",
)
@click.option(
    "--backend-quality",
    "quality_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Instead: score hit@5 of every embedding backend and write the record "
    "(rag/data/backend_quality.json) that admits reduced-precision ones.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--scale",
    type=click.IntRange(min=1),
    default=None,
    help="Instead: grow a temporary index of synthetic papers made from real ones up to N "
    "papers and report the cost curve (eval/scale.py); --corpus names the real papers "
    "(default ../shared/corpora/paperlists, else the seeds).",
)
@click.option(
    "--sizes",
    default=None,
    metavar="N,N,...",
    help="With --scale: the sizes measured below N (default 22000,100000).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=None,
    help="With --scale: real papers embedded once, the synthetic papers' parents "
    "(default: one per 45 synthetic papers, at least 4096, at most every real paper).",
)
@click.option(
    "--noise",
    type=click.FloatRange(min=0),
    default=0.025,
    show_default=True,
    help="With --scale: Gaussian noise per dimension added to the parents' vectors.",
)
@click.option(
    "--mix",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="With --scale: real abstracts each synthetic one is made of (runs of sentences "
    "from topical neighbours); 1: one parent's sentences with 30%% replaced (near-copies).",
)
@click.option(
    "--vectors",
    "made_by",
    type=click.Choice(["mean", "model"]),
    default="mean",
    show_default=True,
    help="With --scale: a synthetic paper's vectors: the mean of its sources' plus noise, "
    "or the real model's embedding of its text (slow: every chunk through the model).",
)
@click.option("--seed", type=int, default=25, show_default=True, help="With --scale.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="With --scale: folder for scale.json and scale.png (default: a new temp folder).",
)
@click.option("--keep", is_flag=True, help="With --scale: keep the temporary index.")
@click.option(
    "--server",
    "serve",
    is_flag=True,
    help="With --scale: also serve the last size with `chroma run` on loopback and measure a "
    "new app instance against it (RAG_CHROMA_URL): first answer, cold start, latency, RSS.",
)
@click.pass_context
def bench_cmd(
    ctx: click.Context,
    corpus: tuple[str, ...],
    limit: int | None,
    raw_sample: int,
    peer: bool,
    questions_file: str | None,
    cold_start: bool,
    quality_out: str | None,
    as_json: bool,
    scale: int | None,
    sizes: str | None,
    sample: int | None,
    noise: float,
    mix: int,
    made_by: str,
    seed: int,
    out: str | None,
    keep: bool,
    serve: bool,
) -> None:
    """Measure ingest and query speed on a temporary index (and plain llama-index's)."""
    from eval.bench import (
        DEFAULT_QUESTIONS,
        backend_quality,
        default_corpus,
        format_table,
        run_bench,
    )
    from rag.cli import friendly_errors

    if scale is not None:
        from eval import scale as scaling

        try:
            wanted = scaling.parse_sizes(sizes)
        except ValueError:
            _fail(f"--sizes takes numbers separated by commas, not {sizes!r}")
        job = scaling.ScaleJob(
            sizes=scaling.scale_sizes(scale, wanted),
            base=[Path(c) for c in corpus] or scaling.default_base(),
            sample=sample,
            noise=noise,
            seed=seed,
            mix=mix,
            vectors=made_by,
            questions_file=Path(questions_file) if questions_file else DEFAULT_QUESTIONS,
            cold_start=cold_start,
            keep=keep,
            server=serve,
        )
        folder = Path(out) if out else Path(tempfile.mkdtemp(prefix="rag-scale-"))
        click.echo(f"Scale bench output: {folder}", err=True)
        with friendly_errors():
            try:
                outcome = scaling.bench_scale(
                    job, ctx.find_root().obj["settings"], folder, lambda m: click.echo(m, err=True)
                )
            except ValueError as exc:
                _fail(str(exc))
        click.echo(json.dumps(outcome, indent=2) if as_json else scaling.format_scale(outcome))
        return

    if quality_out:
        with friendly_errors():
            record = backend_quality(
                list(corpus) or default_corpus(),
                ctx.find_root().obj["settings"],
                limit=limit,
                questions_file=Path(questions_file) if questions_file else DEFAULT_QUESTIONS,
            )
        Path(quality_out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        click.echo(json.dumps(record, indent=2))
        return

    with friendly_errors():
        result = run_bench(
            list(corpus) or default_corpus(),
            ctx.find_root().obj["settings"],
            limit=limit,
            raw_sample=raw_sample,
            peer=peer,
            questions_file=Path(questions_file) if questions_file else DEFAULT_QUESTIONS,
            cold_start=cold_start,
        )
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(format_table(result))

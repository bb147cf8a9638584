"""`rag`: ingest | search | ask | chat | stats | topics | related (and eval, app where installed).

Output for people goes to stdout; progress and notices to stderr, so `--json` output is
always one clean JSON object on stdout. Expected failures (bad paths, an unreachable
server, a locked index) print one line naming the cause and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from rag.config import BUNDLED_CORPUS, Settings
from rag.types import Answer, Hit, IngestSummary


class UserError(click.ClickException):
    """An expected failure, shown as one line."""

    exit_code = 2


@contextmanager
def friendly_errors() -> Iterator[None]:
    """Turn the library's expected errors into one-line messages."""
    from rag.errors import RagError

    try:
        yield
    except (RagError, ValueError) as exc:
        raise UserError(str(exc)) from None


def _settings(ctx: click.Context) -> Settings:
    return ctx.obj["settings"]


def _assistant(ctx: click.Context, warm: bool = False) -> Any:
    """The assistant; `warm`: load the model in the background meanwhile (questions)."""
    if "assistant" not in ctx.obj:
        from rag.assistant import Assistant

        click.echo("Loading the index and embedding model…", err=True)
        with friendly_errors():
            ctx.obj["assistant"] = Assistant(_settings(ctx))
        if warm:
            ctx.obj["assistant"].warm_up(background=True)
    return ctx.obj["assistant"]


def _ready(ctx: click.Context) -> Any:
    """The assistant of a question command, over the bundled ICLR 2026 abstracts when the
    index is still empty (built once, as `make run` and the app do), so the first `rag ask`
    on a fresh clone answers instead of failing on an empty index."""
    assistant = _assistant(ctx, warm=True)
    with (
        friendly_errors(),
        _progress_bar("Indexing the bundled ICLR 2026 abstracts", unit="paper") as bar,
    ):
        if assistant.ensure_default_corpus(bar) is not None:
            ctx.obj["wrote"] = True
    return assistant


def _finish(ctx: click.Context) -> None:
    """End a question command that wrote nothing at once when run as `rag` (`run`): the
    interpreter's teardown (the model's and Chroma's finalizers) costs ~0.35 s of every
    `rag ask` on 2 cores, and reading an index leaves nothing to flush but the output."""
    if ctx.obj.get("fast_exit") and not ctx.obj.get("wrote"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


@click.group()
@click.option("--index-dir", type=click.Path(file_okay=False), help="Overrides RAG_INDEX_DIR.")
@click.option("--chroma-url", help="Overrides RAG_CHROMA_URL (use a Chroma server).")
@click.pass_context
def main(ctx: click.Context, index_dir: str | None, chroma_url: str | None) -> None:
    """Ask questions over ML paper abstracts; every answer cites the abstracts it rests on."""
    overrides: dict[str, Any] = {}
    if index_dir:
        overrides["index_dir"] = index_dir
    if chroma_url:
        overrides["chroma_url"] = chroma_url
    try:
        settings = Settings(**overrides)
    except Exception as exc:  # pydantic's message names the bad variable
        raise UserError(f"invalid settings: {exc}") from None
    ctx.obj = {**(ctx.obj or {}), "settings": settings}


# -- ingest ---------------------------------------------------------------------


@main.command("ingest")
@click.argument("paths", nargs=-1)
@click.option("--prune", is_flag=True, help="Drop papers whose sources are gone.")
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="ATTR=KEY",
    help="Read ATTR from column/key KEY, e.g. --field abstract=summary.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def ingest_cmd(
    ctx: click.Context, paths: tuple[str, ...], prune: bool, fields: tuple[str, ...], as_json: bool
) -> None:
    """Ingest abstracts from files, folders or globs (default: the bundled ICLR 2026 list)."""
    from rag.corpus.papers import FieldMap

    with friendly_errors():
        field_map = FieldMap.with_overrides(dict(_pair(f) for f in fields))
    assistant = _assistant(ctx)
    if assistant.settings.generate_titles and not assistant.has_endpoint():
        click.echo(
            "RAG_GENERATE_TITLES is on but no endpoint is set (OPENAI_BASE_URL): untitled "
            "papers keep their offline labels",
            err=True,
        )
    with (
        friendly_errors(),
        _progress_bar("Embedding papers", unit="paper") as progress,
        _progress_bar("Writing titles", unit="paper") as title_progress,
    ):
        summary = assistant.ingest(
            list(paths) or [str(BUNDLED_CORPUS)], field_map, prune, progress, title_progress
        )
    if as_json:
        click.echo(json.dumps(summary.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(format_summary(summary))
    if summary.records == 0 and summary.papers_unchanged == 0:
        raise UserError(
            "nothing could be ingested: "
            + ("; ".join(str(s) for s in summary.skipped[:3]) or "no records found")
        )


def _pair(text: str) -> tuple[str, str]:
    attr, sep, key = text.partition("=")
    if not sep or not attr or not key:
        raise UserError(f"--field expects ATTR=KEY, got {text!r}")
    return attr.strip(), key.strip()


@contextmanager
def _progress_bar(label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar on a terminal; one line per batch otherwise (logs, CI, pipes)."""
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, disable=None)
        if bar.disable:
            click.echo(f"{label}: {done}/{total}", err=True)
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


def format_summary(s: IngestSummary) -> str:
    """The human-readable ingest summary."""
    lines = [
        f"Ingested {s.files} file(s), {s.records} record(s) in {s.seconds:.1f} s",
        f"  papers: {s.papers_new} new, {s.papers_updated} updated, {s.papers_unchanged} "
        f"unchanged, {s.papers_pruned} pruned, {s.duplicates_merged} duplicate record(s) merged",
        f"  chunks: {s.chunks_embedded} embedded, {s.chunks_deleted} deleted",
        f"  index now holds {s.total_papers} papers in {s.total_chunks} chunks",
    ]
    if s.titles_generated or s.titles_rejected or s.titles_failed:
        lines.append(
            f"  titles: {s.titles_generated} generated by the endpoint, {s.titles_rejected} "
            f"replies were no usable title, {s.titles_failed} failed (asked again next ingest)"
        )
    if s.skipped:
        lines.append(f"  skipped {len(s.skipped)}:")
        lines.extend(f"    {skip}" for skip in s.skipped[:20])
        if len(s.skipped) > 20:
            lines.append(f"    … and {len(s.skipped) - 20} more (use --json for all)")
    return "\n".join(lines)


# -- search / ask ---------------------------------------------------------------------


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Shared retrieval options: top-k, retriever and metadata filters."""
    options = [
        click.option("--top-k", type=int, help="Papers to retrieve (RAG_TOP_K)."),
        click.option("--retriever", type=click.Choice(["hybrid", "dense", "bm25"])),
        click.option("--venue"),
        click.option("--year", type=int),
        click.option("--status"),
        click.option("--area"),
        click.option("--keyword"),
        click.option("--author", help="Papers this author wrote (a full or a last name)."),
        click.option("--year-min", type=int, help="Papers from this year on."),
        click.option("--year-max", type=int, help="Papers up to this year."),
        click.option(
            "--no-scope",
            is_flag=True,
            help="Ignore the scope the question names ('ICLR 2026 ...'); flags still apply.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _filters(opts: dict[str, Any]) -> Any:
    from rag.types import Filters

    return Filters(
        venue=opts.get("venue"),
        year=opts.get("year"),
        status=opts.get("status"),
        area=opts.get("area"),
        keyword=opts.get("keyword"),
        year_min=opts.get("year_min"),
        year_max=opts.get("year_max"),
        author=opts.get("author"),
    )


def _ignored(opts: dict[str, Any]) -> tuple[str, ...]:
    """`--no-scope`: every field a question could name."""
    from rag.types import Filters

    return tuple(Filters.__dataclass_fields__) if opts.get("no_scope") else ()


@main.command("search")
@click.argument("query")
@filter_options
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def search_cmd(ctx: click.Context, query: str, as_json: bool, **opts: Any) -> None:
    """Print the papers ranked for QUERY, with scores (builds the index if empty)."""
    assistant = _ready(ctx)
    with friendly_errors():
        hits, applied = assistant.search_scoped(
            query, opts["top_k"], _filters(opts), opts["retriever"], _ignored(opts)
        )
    if as_json:
        rows = [{**_hit_dict(h), "applied_filters": applied.to_dict()} for h in hits]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        _finish(ctx)
        return
    if applied.active:
        click.echo(click.style(f"Scope: {applied.describe()}", dim=True), err=True)
    if not hits and applied.active:
        click.echo(f"No {applied.describe()} papers match.")
    for rank, hit in enumerate(hits, start=1):
        sim = f"{hit.dense_similarity:.3f}" if hit.dense_similarity is not None else "  -  "
        bm25 = f"{hit.bm25_score:.2f}" if hit.bm25_score is not None else "-"
        click.echo(f"{rank:>2}. {hit.score:.4f}  cos {sim}  bm25 {bm25:>6}  {hit.paper.label}")
        click.echo(f"    {hit.paper.paper_id}  {hit.paper.abstract[:110]}…")
    _finish(ctx)


def _hit_dict(hit: Hit) -> dict[str, Any]:
    return {
        "paper_id": hit.paper.paper_id,
        "title": hit.paper.label,
        "score": hit.score,
        "dense_similarity": hit.dense_similarity,
        "bm25_score": hit.bm25_score,
        "venue": hit.paper.venue,
        "year": hit.paper.year,
        "site": hit.paper.site,
        "versions": [v.paper_id for v in hit.versions],
    }


@main.command("ask")
@click.argument("question")
@filter_options
@click.option(
    "--mode",
    type=click.Choice(["llm", "extractive"]),
    help="Default: llm when an endpoint is configured, else extractive.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def ask_cmd(
    ctx: click.Context, question: str, as_json: bool, mode: str | None, **opts: Any
) -> None:
    """Answer QUESTION from the indexed abstracts, with [n] citations (builds the index if
    empty)."""
    assistant = _ready(ctx)
    stream = None if as_json else _echo_token
    with friendly_errors():
        answer = assistant.ask(
            question,
            top_k=opts["top_k"],
            filters=_filters(opts),
            mode=mode,
            retriever=opts["retriever"],
            ignore_scope=_ignored(opts),
            on_token=stream,
            on_reset=_echo_reset if stream else None,
        )
    if as_json:
        click.echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
    else:
        print_answer(answer, streamed=stream is not None)
    _finish(ctx)


def answer_json(answer: Answer) -> dict[str, Any]:
    """The `--json` object (contract keys first)."""
    data = answer.to_dict()
    keys = [
        "question",
        "answer",
        "abstained",
        "citations",
        "sources",
        "mode",
        "notices",
        "timings_ms",
    ]
    return {**{k: data[k] for k in keys}, **{k: v for k, v in data.items() if k not in keys}}


def _echo_reset() -> None:
    click.echo(
        click.style("\n[stream interrupted; the partial answer above is void]", fg="yellow"),
        err=True,
    )


def _echo_token(token: str) -> None:
    click.echo(token, nl=False)
    sys.stdout.flush()


def print_answer(answer: Answer, streamed: bool = False) -> None:
    """Print an answer and its sources for a terminal."""
    if streamed and answer.mode == "llm" and not answer.abstained:
        click.echo("\n")  # tokens were printed as they came; show the checked text below
        if answer.notices:
            click.echo(click.style("Checked answer:", bold=True))
            click.echo(answer.answer)
    else:
        if streamed:
            click.echo("")
        if streamed and answer.draft:  # the streamed text above is the rejected draft
            click.echo(
                click.style(
                    "\n[the model's answer above did not hold up against the sources; "
                    "the answer is the quoted one below]",
                    fg="yellow",
                ),
                err=True,
            )
            click.echo(click.style("Answer:", bold=True))
        click.echo(answer.answer)
    if answer.table:
        click.echo("\n" + format_table(answer))
    for notice in answer.notices:
        if notice.startswith("scope: "):  # the scope applied: a plain line, not a warning
            hint = "; --no-scope to search everything" if "read from" in notice else ""
            click.echo(click.style(f"Scope: {notice[7:]}{hint}", dim=True), err=True)
            continue
        click.echo(click.style(f"! {notice}", fg="yellow"), err=True)
    click.echo("\nSources:")
    for s in answer.sources:
        mark = "*" if s.cited else " "
        where = f"{s.venue or ''} {s.year or ''}".strip()
        label = f"{s.title} ({s.label_note})" if s.label_note else s.title
        click.echo(f" {mark}[{s.n}] {label} — {where} {s.site or s.source}".rstrip())
    total = answer.timings_ms.get("total", 0.0)
    click.echo(click.style(f"\n{answer.mode}, {total:.0f} ms", dim=True), err=True)


def format_table(answer: Answer, width: int | None = None) -> str:
    """A comparison table for a terminal: a grid whose cells wrap to fit `width`
    (default: the terminal's), one row per paper; an empty cell shows as '—'."""
    import shutil
    import textwrap

    rows = answer.table or []
    columns = list(dict.fromkeys(c for row in rows for c in row.cells))
    titles = {s.n: s.title for s in answer.sources}
    width = width or max(60, min(160, shutil.get_terminal_size((100, 24)).columns))
    first = min(24, max(12, width // 6))
    rest = max(12, (width - first - 3 * len(columns) - 4) // max(1, len(columns)))
    widths = [first, *([rest] * len(columns))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(texts: list[str]) -> list[str]:
        wrapped = [textwrap.wrap(t, w) or [""] for t, w in zip(texts, widths, strict=True)]
        height = max(len(w) for w in wrapped)
        return [
            "| "
            + " | ".join(
                (w[i] if i < len(w) else "").ljust(size)
                for w, size in zip(wrapped, widths, strict=True)
            )
            + " |"
            for i in range(height)
        ]

    out = [rule, *line(["paper", *columns]), rule.replace("-", "=")]
    for row in rows:
        label = f"[{row.n}] {titles.get(row.n, '')}"
        out += [*line([label, *(row.cells.get(c) or "—" for c in columns)]), rule]
    return "\n".join(out)


@main.command("chat")
@click.option("--mode", type=click.Choice(["llm", "extractive"]))
@click.pass_context
def chat_cmd(ctx: click.Context, mode: str | None) -> None:
    """Chat in the terminal (follow-up questions keep context). Builds the index if empty."""
    assistant = _ready(ctx)
    assistant.prefetch()
    stats = assistant.stats()
    click.echo(f"{stats['papers']} papers indexed. Ask a question; /clear resets, /quit exits.")
    conversation = assistant.conversation()
    while True:
        try:
            question = click.prompt("\n?", prompt_suffix=" ").strip()
        except (EOFError, click.Abort):
            break
        if question in ("/quit", "/exit"):
            break
        if question == "/clear":
            conversation.clear()
            continue
        if question:
            stream = _echo_token if assistant.has_endpoint and mode != "extractive" else None
            answer = conversation.ask(
                question, mode=mode, on_token=stream, on_reset=_echo_reset if stream else None
            )
            print_answer(answer, streamed=stream is not None)


@main.command("stats")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def stats_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show what the index holds."""
    with friendly_errors():
        stats = _assistant(ctx).stats()
    if as_json:
        click.echo(json.dumps(stats, indent=2))
    else:
        for key, value in stats.items():
            click.echo(f"{key}: {value}")


# -- the whole index: topics, related papers -------------------------------------------


def scope_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--venue, --year, --status: the papers a whole-index command looks at."""
    for option in reversed(
        [
            click.option("--venue", help="Only this venue's papers (aliases: NeurIPS = NIPS)."),
            click.option("--year", type=int, help="Only this year's papers."),
            click.option("--status", help="Only papers with this status (Oral, accepted, ...)."),
        ]
    ):
        func = option(func)
    return func


@main.command("topics")
@scope_options
@click.option("-k", "--topics", "k", type=int, help="How many topics (RAG_TOPICS_K; 0 = auto).")
@click.option(
    "--papers",
    "n_papers",
    type=int,
    default=5,
    show_default=True,
    help="Papers listed per topic, most central first (0 = all).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def topics_cmd(
    ctx: click.Context, k: int | None, n_papers: int, as_json: bool, **opts: Any
) -> None:
    """Cluster the indexed papers into topics named by their distinctive terms."""
    import time

    started = time.perf_counter()
    with friendly_errors():
        found = _assistant(ctx).topics(_filters(opts), k or None)
    shown = n_papers or None
    if as_json:
        click.echo(json.dumps(found.to_dict(shown), ensure_ascii=False, indent=2))
    else:
        scope = f" ({_filters(opts).describe()})" if _filters(opts).active else ""
        click.echo(f"{len(found.topics)} topics among {found.n_papers:,} papers{scope}\n")
        for topic in found.topics:
            click.echo(f"{topic.topic + 1:>3}. {topic.label}  · {topic.size:,} papers")
            click.echo(click.style(f"     {', '.join(topic.terms)}", dim=True))
            for paper in topic.papers[:shown]:
                click.echo(f"     - {paper.title}  [{paper.paper_id}]")
    how = "read from the cache" if found.cached else f"built in {found.seconds:.1f} s"
    elapsed = time.perf_counter() - started
    click.echo(click.style(f"{found.method}; {how}; {elapsed:.1f} s in all", dim=True), err=True)


@main.command("related")
@click.argument("paper_id")
@scope_options
@click.option("--top-k", type=int, default=10, show_default=True, help="Papers to list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def related_cmd(ctx: click.Context, paper_id: str, top_k: int, as_json: bool, **opts: Any) -> None:
    """List the indexed papers nearest to PAPER_ID (ids: `rag search`, `rag topics`)."""
    with friendly_errors():
        found = _assistant(ctx).related(paper_id, top_k, _filters(opts))
    if as_json:
        click.echo(json.dumps(found.to_dict(), ensure_ascii=False, indent=2))
        return
    click.echo(f"Papers like {found.title} [{found.paper_id}]:")
    if not found.related:
        click.echo("  none in this scope")
    for rank, paper in enumerate(found.related, start=1):
        where = " ".join(str(x) for x in (paper.venue, paper.year) if x)
        click.echo(f"{rank:>3}. {paper.score:.3f}  {paper.title}  [{paper.paper_id}] {where}")


def _register_plugins() -> None:
    """Add the commands other packages register under the `rag.commands` entry points
    (`rag eval`, `rag bench` from eval/, `rag app` from ui/): the core never imports
    them, and works without them."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="rag.commands"):
        try:
            command = entry.load()
        except ModuleNotFoundError:  # that package is not installed: skip its command
            continue
        main.add_command(command, entry.name)


_register_plugins()


def run() -> None:
    """The `rag` command (a question command that wrote nothing skips the teardown)."""
    main(obj={"fast_exit": True})


if __name__ == "__main__":
    run()

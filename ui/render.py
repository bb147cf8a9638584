"""Answers -> what the page shows: linked citations, highlighted abstracts, Markdown export.

Pure functions over `rag.types` records, testable without Streamlit. Abstracts and titles
are untrusted data: everything that goes into HTML passes through `escape_html`, which
also neutralises Markdown syntax ($ math, * emphasis, [links]) so an abstract shows its
own characters. What the citation highlight deliberately leaves out: it picks whole
sentences, never phrases.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from pylatexenc.latex2text import LatexNodes2Text

from rag.answering.citations import CITATION, parse_group
from rag.question import language
from rag.retrieval.related import RelatedPaper
from rag.text import overlap, split_sentences
from rag.types import Answer, Filters, Source, SourceRef

# Characters HTML, or Markdown (with GFM and math), would act on, as entities: '$x$' stays
# text. One pass, so the '#' of an entity made here is never escaped again ('&#x27;').
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}
_MD_ENTITIES = {c: f"&#{ord(c)};" for c in "\\`*_[]$~|#:"}
_ENTITIES = {**_MD_ENTITIES, **_HTML_ENTITIES}
_SAFE_URL = re.compile(r"^https?://[^\s\"'<>]+$", re.I)
# "it works. [1] Next" -> "it works [1]. Next": a citation after the full stop belongs
# to the sentence before it, not to the next one (which is where splitting would put it).
_CITE_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d+(?:\s*[-–,]\s*\d+)*\])+)")


def escape_html(text: str) -> str:
    """Make untrusted text inert in HTML and Markdown: '<b>$x$</b>' -> '&lt;b&gt;&#36;x&#36;...'.

    LaTeX's escaped percent ('7.7\\%') is shown as '7.7%', as Markdown shows it in answers.
    """
    return "".join(_ENTITIES.get(c, c) for c in text.replace("\\%", "%"))


# The authors' own Markdown: **bold** and *emphasis* (not 'a * b * c', not '$a*b$').
_EMPHASIS = re.compile(
    r"\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*|(?<![*\w$])\*(?=[^\s*])([^*\n$]+?)(?<=\S)\*(?![*\w])"
)
# An inline math span of an abstract: '$O(1/\varepsilon^2)$', '$k$' (not '$50 and $60').
_INLINE_MATH = re.compile(r"\$([^$\n]{1,200})\$")
_LATEX_SIGNS = re.compile(r"[\\^_{}]")
_LATEX = LatexNodes2Text(math_mode="text", strict_latex_spaces=True)
# pylatexenc logs a warning for each macro it shows as written ('\\frac{a}{b}' with the
# wrong arity): the span is shown as well as it can be, nothing for the app's log.
logging.getLogger("pylatexenc").setLevel(logging.ERROR)


def prose_html(text: str) -> str:
    """Abstract text as escaped HTML, keeping the authors' own **bold** as <b> and
    *emphasis* as <i> (OpenReview abstracts are Markdown): 'we propose **BoRA**' -> 'we
    propose <b>BoRA</b>'; inline math as Unicode text (`math_html`)."""
    parts: list[str] = []
    cursor = 0
    for match in _EMPHASIS.finditer(text):
        parts.append(math_html(text[cursor : match.start()]))
        bold, emphasis = match.group(1), match.group(2)
        tag = "b" if bold is not None else "i"
        parts.append(f"<{tag}>{math_html(bold if bold is not None else emphasis)}</{tag}>")
        cursor = match.end()
    parts.append(math_html(text[cursor:]))
    return "".join(parts)


def math_html(text: str) -> str:
    """Escaped HTML with each inline LaTeX span shown as Unicode text, its source in the
    tooltip: '$O(1/\\varepsilon^2)$' -> 'O(1/ε^2)' (a span with no LaTeX sign and more
    than three characters, '$50 and $', stays as written)."""
    parts: list[str] = []
    cursor = 0
    for match in _INLINE_MATH.finditer(text):
        body = match.group(1)
        if not (_LATEX_SIGNS.search(body) or len(body.strip()) <= 3):
            continue
        try:
            shown = " ".join(_LATEX.latex_to_text(body).split())
        except Exception:  # pylatexenc is lenient; a span it cannot read stays as written
            continue
        if "%s" in shown or not shown:  # a macro it could not fill ('\\frac{1}'): as written
            continue
        parts.append(escape_html(text[cursor : match.start()]))
        parts.append(
            f'<span class="rag-math" title="{escape_html(match.group(0))}">'
            f"{escape_html(shown)}</span>"
        )
        cursor = match.end()
    parts.append(escape_html(text[cursor:]))
    return "".join(parts)


def escape_markdown(text: str) -> str:
    """Show text literally in st.markdown: '$5 ~ 3 <b>' -> '\\$5 \\~ 3 &lt;b>'."""
    return re.sub(r"([\\`*_\[\]$~|#])", r"\\\1", text).replace("<", "&lt;")


def safe_url(url: str | None) -> str | None:
    """Return the URL when it is a plain http(s) link (never javascript: or data:)."""
    return url if url and _SAFE_URL.match(url.strip()) else None


_DERIVED = (
    ' <span class="rag-derived" title="The record has no title: this label was derived '
    'from the abstract">derived label</span>'
)
_GENERATED = (
    ' <span class="rag-derived" title="The record has no title: the endpoint model wrote '
    'this one from the abstract">generated title</span>'
)


def _label_mark(source: Source) -> str:
    """The mark after a source's label: none for a real title."""
    if not source.title_is_derived:
        return ""
    return _GENERATED if source.title_generated else _DERIVED


def anchor(turn: int, n: int) -> str:
    """The HTML id of source n of a turn: 'src-2-1'."""
    return f"src-{turn}-{n}"


# Inline math as abstracts write it: '$O(\\epsilon^{-2})$', one line, braces balanced.
_MATH = re.compile(r"\$(?=\S)([^$\n]{1,200}?)(?<=\S)\$")


def _literal(text: str) -> str:
    return text.replace("$", "\\$").replace("~", "\\~").replace("<", "&lt;")


def _math(match: re.Match[str]) -> str:
    """A math span kept for KaTeX ('$9.8\\times$' shows as 9.8x), unless its braces do not
    balance; '<' and '>' as KaTeX's commands, never HTML."""
    body = match.group(1)
    if body.replace(".", "").replace(",", "").isdigit():
        return body  # '$10$' is 10
    if body.count("{") != body.count("}"):
        return _literal(match.group(0))
    return "$" + body.replace("<", "\\lt ").replace(">", "\\gt ") + "$"


def answer_markdown(answer: Answer, turn: int) -> str:
    """The answer as Markdown, each [n] a link to its source card; abstract text kept
    literal but for its inline math, which Streamlit renders ('$\\widetilde{O}(n)$')."""
    parts: list[str] = []
    cursor = 0
    for match in _MATH.finditer(answer.answer):
        parts += [_literal(answer.answer[cursor : match.start()]), _math(match)]
        cursor = match.end()
    text = "".join([*parts, _literal(answer.answer[cursor:])])

    def link(match: re.Match[str]) -> str:
        numbers = parse_group(match.group(1))
        return "".join(f"[\\[{n}\\]](#{anchor(turn, n)})" for n in numbers)

    return CITATION.sub(link, text)


def cited_sources(answer: Answer) -> list[Source]:
    """Sources the answer cites, in citation order."""
    by_n = {s.n: s for s in answer.sources}
    return [by_n[n] for n in answer.citations if n in by_n]


def uncited_sources(answer: Answer) -> list[Source]:
    """Retrieved papers the answer does not cite ("also relevant")."""
    cited = set(answer.citations)
    return [s for s in answer.sources if s.n not in cited]


def citing_sentences(text: str, n: int) -> list[str]:
    """Sentences of an answer that cite source n, citations removed."""
    text = _CITE_AFTER_STOP.sub(r"\2\1", text)
    found: list[str] = []
    for line in text.splitlines():
        for sentence in split_sentences(line.strip().lstrip("-*• ")):
            numbers = [k for m in CITATION.finditer(sentence) for k in parse_group(m.group(1))]
            if n in numbers:
                found.append(CITATION.sub("", sentence).strip())
    return found


def supporting_sentences(answer: Answer, source: Source) -> list[str]:
    """The abstract sentences behind a citation: the extractive picks, else best overlap."""
    if source.highlights:
        return list(source.highlights)
    sentences = split_sentences(source.text)
    picked: list[str] = []
    for claim in citing_sentences(answer.answer, source.n):
        scored = [(overlap(claim, s), s) for s in sentences]
        score, best = max(scored, default=(0.0, ""))
        if score > 0 and best not in picked:
            picked.append(best)
    return picked


def highlight_html(text: str, sentences: Iterable[str]) -> str:
    """The abstract as escaped HTML with each supporting sentence in <mark>."""
    spans: list[tuple[int, int]] = []
    for sentence in sentences:
        start = text.find(sentence)
        if sentence and start >= 0:
            spans.append((start, start + len(sentence)))
    parts: list[str] = []
    cursor = 0
    for start, end in sorted(spans):
        if start < cursor:  # overlapping picks: the earlier mark already covers it
            continue
        parts.append(prose_html(text[cursor:start]))
        parts.append(f"<mark>{prose_html(text[start:end])}</mark>")
        cursor = end
    parts.append(prose_html(text[cursor:]))
    return "".join(parts)


def venue_year(source: Source) -> str:
    """'ICLR 2026', 'ICLR', '' ..."""
    return " ".join(str(x) for x in (source.venue, source.year) if x)


def source_header_html(source: Source, turn: int) -> str:
    """The card heading: anchor, [n] badge, title (or marked derived label), venue, link."""
    title = escape_html(source.title)
    derived = _label_mark(source)
    meta = [escape_html(venue_year(source))] if venue_year(source) else []
    url = safe_url(source.site)
    if url:
        meta.append(_link(url))
    elif source.source:
        ref = SourceRef.parse(source.source)
        unit = "record" if ref.file.lower().endswith(".json") else "line"
        where = f"{ref.file}, {unit} {ref.position}" if ref.position else source.source
        meta.append(f'from <span class="rag-file">{escape_html(where)}</span>')
    if source.versions:
        meta.append("also " + ", ".join(escape_html(v) for v in source.versions))
    return (
        f'<div class="rag-src-head" id="{anchor(turn, source.n)}">'
        f'<span class="rag-badge">{source.n}</span> <b>{title}</b>{derived}'
        f'<div class="rag-meta">{" · ".join(meta)}</div></div>'
    )


def quote_html(sentences: Sequence[str]) -> str:
    """The supporting sentences as an escaped, highlighted quote."""
    body = " … ".join(f"<mark>{prose_html(s)}</mark>" for s in sentences)
    return f'<div class="rag-quote">{body}</div>'


def abstract_html(answer: Answer, source: Source) -> str:
    """The whole abstract, escaped, with the supporting sentences highlighted."""
    marked = highlight_html(source.text, supporting_sentences(answer, source))
    return f'<div class="rag-abstract">{marked}</div>'


def _link(url: str) -> str:
    """'https://openreview.net/forum?id=x' -> a new-tab link named 'OpenReview ↗'."""
    host = urlparse(url).hostname or "link"
    name = "OpenReview" if host.endswith("openreview.net") else host.removeprefix("www.")
    href = html.escape(url, quote=True)
    return f'<a href="{href}" target="_blank" rel="noopener">{escape_html(name)} ↗</a>'


def related_html(source: Source) -> str:
    """One uncited paper: label, venue/year, link, and its first sentence."""
    label = f"<b>{escape_html(source.title)}</b>" + _label_mark(source)
    where = escape_html(venue_year(source))
    url = safe_url(source.site)
    link = f" · {_link(url)}" if url else ""
    first = split_sentences(source.text)[:1]
    snippet = prose_html(first[0]) if first else ""
    return (
        f'<div class="rag-related"><span class="rag-badge rag-badge-muted">{source.n}</span> '
        f'{label} <span class="rag-meta">{where}{link}</span>'
        f'<div class="rag-snippet">{snippet}</div></div>'
    )


def related_paper_html(paper: RelatedPaper) -> str:
    """One related paper: its similarity, label (derived marked), venue/year and link."""
    label = f"<b>{escape_html(paper.title)}</b>" + (_DERIVED if paper.title_is_derived else "")
    where = escape_html(" ".join(str(x) for x in (paper.venue, paper.year) if x))
    url = safe_url(paper.site)
    link = f" · {_link(url)}" if url else ""
    return (
        f'<div class="rag-related"><span class="rag-score">{paper.score:.2f}</span> '
        f'{label} <span class="rag-meta">{where}{link}</span></div>'
    )


def reference_line(source: Source) -> str:
    """'[1] Title (derived label). ICLR 2026. https://...' for Markdown export."""
    label = source.title + (f" ({source.label_note})" if source.label_note else "")
    parts = [f"[{source.n}] {label}"]
    if venue_year(source):
        parts.append(venue_year(source))
    parts.append(safe_url(source.site) or source.source)
    return ". ".join(p for p in parts if p)


def table_columns(answer: Answer) -> list[str]:
    """A comparison table's columns, in the order its rows give them."""
    return list(dict.fromkeys(c for row in answer.table or [] for c in row.cells))


def table_html(answer: Answer, turn: int) -> str:
    """The comparison table: one row per paper (its [n] badge links to its card), every
    cell escaped; an empty cell shows as '—'."""
    columns = table_columns(answer)
    by_n = {s.n: s for s in answer.sources}
    head = "".join(f"<th>{escape_html(c.capitalize())}</th>" for c in ["paper", *columns])
    body = []
    for row in answer.table or []:
        source = by_n.get(row.n)
        title = escape_html(source.title) if source else ""
        paper = f'<a class="rag-badge" href="#{anchor(turn, row.n)}">{row.n}</a> {title}'
        cells = "".join(f"<td>{escape_html(row.cells.get(c) or '—')}</td>" for c in columns)
        body.append(f'<tr><td class="rag-table-paper">{paper}</td>{cells}</tr>')
    return (
        f'<table class="rag-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def table_markdown(answer: Answer) -> str:
    """The comparison table as a GitHub Markdown table ('|' in a cell escaped)."""
    columns = table_columns(answer)
    by_n = {s.n: s for s in answer.sources}

    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|") or "—"

    lines = [
        "| paper | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for row in answer.table or []:
        title = by_n[row.n].title if row.n in by_n else ""
        cells = [cell(row.cells.get(c, "")) for c in columns]
        lines.append(f"| [{row.n}] {cell(title)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def answer_with_references(answer: Answer) -> str:
    """One answer as Markdown with its table, if any, and its reference list (what the
    copy button holds)."""
    lines = [answer.answer.strip()]
    if answer.table:
        lines += ["", table_markdown(answer)]
    refs = cited_sources(answer) if not answer.abstained else []
    if refs:
        lines += ["", "References:", *(f"- {reference_line(s)}" for s in refs)]
    return "\n".join(lines)


def conversation_markdown(turns: Sequence[tuple[str, Answer]], title: str) -> str:
    """The whole conversation as a Markdown document, references per answer."""
    out = [f"# {title}", ""]
    for i, (question, answer) in enumerate(turns, start=1):
        out += [f"## {i}. {question.strip()}", "", answer_with_references(answer), ""]
        if answer.notices:
            out += [*(f"> Note: {n}" for n in answer.notices), ""]
        mode = "offline extractive" if answer.mode == "extractive" else "endpoint model"
        out += [f"*Answered by the {mode}.*", ""]
    return "\n".join(out).rstrip() + "\n"


# -- the scope of an answer, as chips ---------------------------------------------------

YEAR_FIELDS = ("year", "year_min", "year_max")  # one chip: '2026', 'since 2016', '2016-2018'
CHIP_ORDER = ("venue", "year", "status", "area", "keyword", "author")
Origin = Literal["question", "sidebar", "context"]
ORIGIN_HELP = {
    "question": "Read from the question. Remove it to search again without it.",
    "sidebar": "Set in the sidebar: change it there.",
    "context": "Carried over from the previous question: ask afresh to drop it.",
}
SCOPE_LABEL = '<span class="rag-scope-label">Searched within</span>'


@dataclass(frozen=True, slots=True)
class Chip:
    """One filter of an answer's scope: `field` is the read-scope name to ignore."""

    field: str  # venue | year (with its range) | status | area | keyword | author
    label: str  # 'ICLR', '2026', 'since 2016', 'Oral'
    origin: Origin

    @property
    def removable(self) -> bool:
        """Only a filter read from this very question is dropped by asking again."""
        return self.origin == "question"


def chip_field(name: str) -> str:
    """The chip a Filters field shows in: 'year_min' -> 'year', 'venue' -> 'venue'."""
    return "year" if name in YEAR_FIELDS else name


def scope_chips(
    applied: dict[str, Any],
    sidebar: Collection[str] = (),
    named: Collection[str] | None = None,
) -> list[Chip]:
    """An answer's applied filters as chips, with where each came from.

    `sidebar`: the fields the sidebar set for that question; `named`: the fields read
    from the question itself (None: unknown, so every non-sidebar field counts as read).
    The rest was carried over from the previous turn. {'venue': 'ICLR', 'year_min': 2016}
    -> [Chip('venue', 'ICLR', ...), Chip('year', 'since 2016', ...)].
    """
    picked = {chip_field(name) for name in sidebar}
    read = None if named is None else {chip_field(name) for name in named}
    chips: list[Chip] = []
    for field in CHIP_ORDER:
        names = YEAR_FIELDS if field == "year" else (field,)
        values = {n: applied[n] for n in names if applied.get(n) is not None}
        if not values:
            continue
        label = Filters(**values).describe()
        origin: Origin = "question"
        if field in picked:
            origin = "sidebar"
        elif read is not None and field not in read:
            origin = "context"
        chips.append(Chip(field, label, origin))
    return chips


def page_notices(answer: Answer) -> list[str]:
    """The notices the page shows: the 'scope: ...' line goes, the chips say it."""
    if not answer.applied_filters:
        return list(answer.notices)
    return [n for n in answer.notices if getattr(n, "code", "") != "scope"]


def answer_details(answer: Answer) -> list[str]:
    """The small print of an answer: ['confidence 0.82', 'asked in Chinese'] (English unsaid)."""
    parts = []
    if answer.confidence is not None:
        parts.append(f"confidence {answer.confidence:.2f}")
    if answer.language and answer.language.lower() != "en":
        parts.append(f"asked in {language.name(answer.language.lower())}")
    return parts


def chip_html(chip: Chip) -> str:
    """A filter that is not removed here, as a muted pill naming where it came from."""
    where = "sidebar" if chip.origin == "sidebar" else "previous question"
    title = html.escape(ORIGIN_HELP[chip.origin], quote=True)
    return (
        f'<span class="rag-chip" title="{title}">{escape_html(chip.label)}'
        f'<span class="rag-chip-from">{where}</span></span>'
    )

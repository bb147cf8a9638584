"""Questions about many papers -> Answers: counts (with groups) and comparison tables.

A count ('how many ICLR 2026 papers study speculative decoding?') answers with the number,
the papers (the first `count_cited` cited in the text, each with the sentence of its
abstract that holds most of the topic, every member in `sources`, most probable first),
the groups when asked ('per year' -> `count_by`), and a notice saying how the set was
decided (rag/aggregate/matching.py). A comparison ('compare GTO and the n-draft paper',
'compare the papers on bilevel optimization') answers with a table, one row per paper,
its cells quoted from the abstracts (rag/aggregate/tables.py). Both are made the same way
with or without an LLM endpoint: what they state is the abstracts' own words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from rag.aggregate import tables
from rag.aggregate.matching import Matches
from rag.answering.answer import make_sources
from rag.answering.extractive import states_contribution
from rag.question.reading import Query
from rag.store.index import Facet
from rag.text import split_sentences
from rag.types import Answer, Hit, Notice, Paper, Source, TableRow

Coverage = Callable[[str, str], float]


def count_answer(
    query: Query, matches: Matches, cite: int, coverage: Coverage, fitted_on: int, scope: str
) -> Answer:
    """The count, its papers and how they were chosen."""
    members = matches.members
    # A count of none shows the closest papers below the cut, uncited: the cut may have
    # missed a topic described in other words than the abstracts use.
    given = members or matches.nearest
    hits = [Hit(c.paper, round(c.probability, 4)) for c in given]
    sources = make_sources(hits)
    shown = sources[:cite] if members else []
    for source in shown:
        source.cited = True
        source.highlights = _best_sentence((matches.topic, *matches.alternatives), source, coverage)
    where = f" among {scope}" if scope else ""
    n = len(members)
    papers, verb = ("paper", "matches") if n == 1 else ("papers", "match")
    head = f"**{n} {papers}**{where} {verb} “{matches.topic}”"
    lines = [head + (":" if n else ".")]
    lines += [_member_line(s) for s in shown]
    count_by = _grouped(query, [c.paper for c in members], lines)
    notices = [
        Notice(
            "count_cut",
            f"counted paper by paper over the {matches.in_scope:,} papers in scope "
            f"({matches.weighed:,} weighed on their evidence): a paper counts when P(about "
            f"'{matches.topic}') >= {matches.threshold:.2f}, a cut fitted on {fitted_on} "
            "labelled count questions",
        )
    ]
    if not n and sources:
        closest = "; ".join(f"**{s.title}** (P {s.score:.2f})" for s in sources)
        lines.append(f"Closest, below the cut of {matches.threshold:.2f}: {closest}.")
        notices.append(
            Notice(
                "count_nearest",
                "no paper passed the cut; "
                + ("the closest is" if len(sources) == 1 else f"the {len(sources)} closest are")
                + " listed as sources, neither counted nor cited",
            )
        )
    if n > len(shown):
        lines.append(f"- … and {n - len(shown)} more, every one listed in the sources.")
        notices.append(
            Notice(
                "count_listed",
                f"the first {len(shown)} of {n} papers are cited; all are in the sources",
            )
        )
    return _counted(query, lines, sources, shown, notices, n, count_by)


def _grouped(
    query: Query, papers: Sequence[Paper | Facet], lines: list[str]
) -> dict[str, dict[str, int]] | None:
    """The groups a count asks for ('per year'), also written as the answer's second
    line; None when it asks for none."""
    if not query.group_by:
        return None
    groups = group_counts(papers, query.group_by)
    listed = ", ".join(f"{k}: {v}" for k, v in groups.items()) or "none"
    lines.insert(1, f"By {query.group_by}: {listed}.")
    return {query.group_by: groups}


def _counted(
    query: Query,
    lines: list[str],
    sources: list[Source],
    cited: list[Source],
    notices: list[Notice],
    n: int,
    count_by: dict[str, dict[str, int]] | None,
) -> Answer:
    """A count's answer: its lines, the cited papers among its sources, the number."""
    answer = _quoted(query, "\n".join(lines), sources, cited, notices)
    answer.count, answer.count_by = n, count_by
    return answer


def _quoted(
    query: Query, text: str, sources: list[Source], cited: list[Source], notices: list[Notice]
) -> Answer:
    """An answer made of the records' and abstracts' own words, citing `cited`."""
    return Answer(
        query.question,
        text,
        abstained=False,
        citations=[s.n for s in cited],
        sources=sources,
        mode="extractive",
        notices=notices,
    )


def scope_answer(
    query: Query, listed: Sequence[Paper], total: int, facets: Sequence[Facet], scope: str
) -> Answer:
    """'how many iclr 2026 papers are there', 'list the aistats 2021 papers', 'how many
    papers per year': the papers of a scope as such, no topic weighed. The count is every
    paper in scope; `listed` (the newest first) are cited, each with the sentence stating
    its contribution; `facets` (one per paper in scope) give the groups asked for; `scope`
    names the papers in scope ('the ICLR 2026 papers', `Filters.papers`)."""
    sources = make_sources([Hit(p, 1.0) for p in listed])
    for source in sources:
        source.cited = True
        sentences = split_sentences(source.text)
        said = [s for s in sentences if states_contribution(s)] or sentences[:1]
        source.highlights = said[:1]
    where = f"among {scope}" if scope else "in the index"
    head = f"**{total:,} {'paper' if total == 1 else 'papers'}** {where}"
    lines = [head + (":" if sources else ".")]
    lines += [_member_line(s) for s in sources]
    count_by = _grouped(query, facets, lines)
    if total > len(sources):
        lines.append(f"- … and {total - len(sources)} more.")
    notice = Notice(
        "scope_listed",
        f"the question names no topic: every paper {where} counted"
        + (f", the {len(sources)} newest listed" if total > len(sources) else ""),
    )
    return _counted(query, lines, sources, sources, [notice], total, count_by)


def count_of_previous(query: Query, previous: Answer) -> Answer | None:
    """'how many of them?' after an answer: the papers that answer cites, counted and
    listed with the same citations; None when it cites none."""
    cited = [s for s in previous.sources if s.cited]
    if not cited:
        return None
    n = len(cited)
    lines = [f"**{n} {'paper' if n == 1 else 'papers'}** in the previous answer:"]
    lines += [f"- **{s.title}** [{s.n}]" for s in cited]
    answer = Answer(
        query.question,
        "\n".join(lines),
        abstained=False,
        citations=[s.n for s in cited],
        sources=[replace(s) for s in previous.sources],
        mode="extractive",
        notices=[Notice("count_previous", "counted the papers the previous answer cites")],
    )
    answer.count = n
    answer.query = previous.query
    answer.applied_filters = dict(previous.applied_filters)
    answer.intent, answer.language = "count", query.language
    return answer


def group_counts(papers: Sequence[Paper | Facet], field: str) -> dict[str, int]:
    """Papers per value of a field, in the field's order: years ascending, others by
    size: ([2017, 2018, 2017], 'year') -> {'2017': 2, '2018': 1}; unknown -> 'unknown'."""
    counted = Counter(str(getattr(p, field) or "unknown") for p in papers)
    if field == "year":
        return dict(sorted(counted.items()))
    return dict(counted.most_common())


def table_answer(
    query: Query, hits: Sequence[Hit], columns: Sequence[str], notices: Sequence[Notice] = ()
) -> Answer:
    """One quoted row per paper; the text names the papers, the table compares them."""
    sources = make_sources(list(hits))
    rows = []
    for source in sources:
        row = tables.cells(source.text, columns)
        source.cited = True
        source.highlights = [p for cell in row.values() for p in tables.parts(cell)][:3]
        rows.append(TableRow(source.n, row))
    named = "; ".join(f"**{s.title}** [{s.n}]" for s in sources)
    listed = ", ".join(columns[:-1]) + (" and " if len(columns) > 1 else "") + columns[-1]
    text = f"Comparing {len(sources)} papers on {listed} (quoted from each abstract): {named}."
    quoted = Notice("table_quoted", "every cell is quoted from the abstract of the paper it cites")
    answer = _quoted(query, text, sources, sources, [*notices, quoted])
    answer.table = rows
    return answer


QUOTE_CHARS = 200  # a count's member line quotes at most this much of its sentence


def record_answer(query: Query, hits: Sequence[Hit], field: str) -> Answer:
    """'which conference is it from', 'what year', 'is it an oral?' of the papers in focus:
    each paper's venue, year and status as its record gives them (the abstract says none
    of it), the field asked said to be missing where the record lacks it."""
    sources = make_sources(list(hits))
    lines = []
    for source, hit in zip(sources, hits, strict=True):
        paper = hit.paper
        where = " ".join(str(v) for v in (paper.venue, paper.year) if v) or "venue not recorded"
        if field == "year" and paper.year is None:
            where += ", year not recorded"
        status = paper.status or ("status not recorded" if field == "status" else "")
        lines.append(f"**{source.title}** [{source.n}]: {', '.join(filter(None, (where, status)))}")
        source.cited = True
    text = lines[0] if len(lines) == 1 else "\n".join(f"- {line}" for line in lines)
    record = Notice("from_record", "from the papers' records (venue, year, status)")
    return _quoted(query, text, sources, sources, [record])


def _member_line(source: Source) -> str:
    """'- **GTO: Group Tree Optimization** [1]: “... draft tree ...”': a member of a count,
    with the sentence that makes it count (cut at a word past QUOTE_CHARS)."""
    line = f"- **{source.title}** [{source.n}]"
    if not source.highlights:
        return line
    quote = source.highlights[0]
    if len(quote) > QUOTE_CHARS:
        quote = quote[:QUOTE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return f"{line}: “{quote}”"


def _best_sentence(topics: Sequence[str], source: Source, coverage: Coverage) -> list[str]:
    """The sentence of an abstract that holds most of one of the topics (the card's quote
    and the count's line); of those alike, one that states the paper's contribution ('we
    propose ...'), not the background sentence before it."""
    sentences = split_sentences(source.text)
    if not sentences:
        return []

    def held(s: str) -> float:
        return max(coverage(t, s) for t in topics)

    return [max(sentences, key=lambda s: (held(s), states_contribution(s)))]

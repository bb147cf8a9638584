"""Typed records passed between the stages: files -> papers -> chunks -> hits -> answers.

Framework objects (llama-index nodes, Chroma results, OpenAI responses) never leave the
module that owns them; everything crossing a stage boundary is one of these records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


def normalise_text(text: str) -> str:
    """Collapse whitespace and case-fold: the key under which abstracts are deduplicated."""
    return " ".join(text.split()).casefold()


def content_hash(text: str) -> str:
    """Return a short stable hash of the normalised text ('We study X.' -> '3f1a...')."""
    return hashlib.sha1(normalise_text(text).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SourceRef:
    """Where a record was read: a file and a 1-based position (line, or array index + 1).
    Stored in `Paper.sources` as 'path:position'; `parse` and `str` are the one way in and
    out: SourceRef.parse('data/x.json:3') -> SourceRef('data/x.json', 3)."""

    file: str
    position: int

    @classmethod
    def parse(cls, text: str) -> SourceRef:
        """'path:position' -> SourceRef (a path without a position gets 0)."""
        file, sep, position = text.rpartition(":")
        if not sep or not position.isdigit():
            return cls(text, 0)
        return cls(file, int(position))

    def __str__(self) -> str:
        return f"{self.file}:{self.position}"


def chunk_id(paper_id: str, index: int) -> str:
    """The id of a paper's chunk: ('abc', 2) -> 'abc#2'; deterministic, so re-ingest
    overwrites instead of duplicating."""
    return f"{paper_id}#{index}"


def split_chunk_id(chunk: str) -> tuple[str, int]:
    """'abc#2' -> ('abc', 2): the paper id and the chunk's index."""
    paper_id, _, index = chunk.rpartition("#")
    return paper_id, int(index)


class Notice(str):
    """A notice on an answer: its text (what `--json` prints, a plain string), with a
    stable `code` and `level` that the app and scripts key on instead of the wording.

    Notice("scope", "scope: ICLR 2026", "info") == "scope: ICLR 2026", .code == "scope".
    """

    CODES: ClassVar[dict[str, str]] = {
        "abstained": "warning",  # the answer abstained, and why
        "scope": "info",  # the scope the search was limited to
        "corrected": "info",  # a typo searched as the index spells it
        "expanded": "info",  # searched by a long form or field term (an acronym, a plain word)
        "no_endpoint": "info",  # llm asked for, none configured: answered extractively
        "llm_failed": "warning",  # the endpoint failed: the extractive answer instead
        "llm_rejected": "warning",  # the model's answer failed the check: the offline one
        "structured_unavailable": "info",  # no structured answer: free text was asked for
        "context_trimmed": "info",  # sources left out to fit the context window
        "citations_removed": "warning",  # the model cited sources that do not exist
        "unsupported": "warning",  # sentences whose cited sources do not support them
        "no_citation": "warning",  # the model cited nothing
        "condense_failed": "warning",  # a follow-up could not be rewritten by the LLM
        "condense_rejected": "info",  # the LLM's rewrite found nothing: the offline one did
        "read_as_follow_up": "info",  # found nothing alone: answered with the last turn's
        "translated": "info",  # a question in another language, searched in English
        "translate_failed": "warning",  # the LLM could not translate it: glossed offline
        "untranslated": "warning",  # offline, no dictionary for its language
        "quotes_english": "info",  # the offline answer to it quotes English abstracts
        "count_cut": "info",  # how a count's set was decided (the fitted relevance cut)
        "count_listed": "info",  # a large set: the first papers cited, every one in sources
        "count_nearest": "info",  # a count of none lists the closest papers, uncited
        "count_previous": "info",  # "how many of them?": the previous answer's papers counted
        "papers_none": "info",  # 'which papers study X': none passed X's count cut
        "table_quoted": "info",  # the comparison table's cells are quoted, not written
        "table_fallback": "warning",  # no paper passed the cut: the closest ones compared
        "scope_listed": "info",  # 'how many iclr 2026 papers are there': the scope counted
        "about_shown": "info",  # 'summarize them', 'compare them': the papers shown, no search
        "from_record": "info",  # 'which conference is it from': the records', not the abstracts'
        "author_unlisted": "info",  # 'papers by deepmind': no record lists such an author
    }

    code: str
    level: str

    def __new__(cls, code: str, text: str, level: str | None = None) -> Notice:
        if code not in cls.CODES:
            raise ValueError(f"unknown notice code {code!r}")
        notice = super().__new__(cls, text)
        notice.code, notice.level = code, level or cls.CODES[code]
        return notice

    def __reduce__(self) -> tuple[Any, ...]:
        return (Notice, (self.code, str(self), self.level))

    def to_dict(self) -> dict[str, str]:
        """{"code": ..., "text": ..., "level": ...}"""
        return {"code": self.code, "text": str(self), "level": self.level}


@dataclass(frozen=True, slots=True)
class Filters:
    """The scope of a search; None means any. Text fields match case-insensitively and
    through aliases (NeurIPS = NIPS; status "accepted" = any accepted status), the same
    way on both retrievers (see `rag.retrieval.retrieve.Scope`)."""

    venue: str | None = None
    year: int | None = None
    status: str | None = None
    area: str | None = None
    keyword: str | None = None
    year_min: int | None = None  # "since 2020" -> 2020
    year_max: int | None = None  # "before 2015" -> 2014
    author: str | None = None  # "papers by yoshua bengio": a full name, or a last name alone

    @property
    def active(self) -> bool:
        """Tell whether any filter is set."""
        return any(v is not None for v in self.to_dict().values())

    def to_dict(self) -> dict[str, Any]:
        """The set fields only: Filters(venue='ICLR') -> {'venue': 'ICLR'}."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def over(self, other: Filters) -> Filters:
        """These filters, with every field `other` leaves unset taken from it (flags
        over what the question said). A year given here also replaces a year range."""
        mine = self.to_dict()
        if "year" in mine:
            mine.setdefault("year_min", None)
            mine.setdefault("year_max", None)
        elif "year_min" in mine or "year_max" in mine:
            mine.setdefault("year", None)
        return Filters(**{**other.to_dict(), **mine})

    def without(self, names: Iterable[str]) -> Filters:
        """These filters less the named fields ('year' also drops a year range)."""
        drop = set(names)
        if "year" in drop:
            drop |= {"year_min", "year_max"}
        return Filters(**{k: v for k, v in self.to_dict().items() if k not in drop})

    def describe(self) -> str:
        """A short human label: 'ICLR 2026, Oral', 'NIPS since 2015'."""
        years = ""
        if self.year is not None:
            years = str(self.year)
        elif self.year_min is not None and self.year_max is not None:
            years = f"{self.year_min}-{self.year_max}"
        elif self.year_min is not None:
            years = f"since {self.year_min}"
        elif self.year_max is not None:
            years = f"up to {self.year_max}"
        head = " ".join(x for x in (self.venue, years) if x)
        rest = [x for x in (self.status, self.area) if x]
        if self.keyword:
            rest.append(f"keyword '{self.keyword}'")
        if self.author:
            rest.append(f"by {self.author}")
        return ", ".join(x for x in (head, *rest) if x)

    def papers(self) -> str:
        """How an answer names the papers in scope: 'the ICLR 2026 papers', 'the papers by
        bengio', 'the ICLR 2018 papers by bengio'; '' when nothing is filtered."""
        if not self.active:
            return ""
        rest = Filters(**{**self.to_dict(), "author": None}).describe()
        by = f" by {self.author}" if self.author else ""
        return f"the {rest} papers{by}" if rest else f"the papers{by}"


@dataclass(frozen=True, slots=True)
class Skip:
    """A record (or whole file) that was not ingested, and why."""

    file: str
    position: int  # 1-based line (text, JSONL, CSV) or array index + 1 (JSON); 0 = whole file
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.position}" if self.position else self.file
        return f"{where}: {self.reason}"


@dataclass(slots=True)
class Paper:
    """One abstract with whatever metadata its source gave."""

    paper_id: str
    abstract: str
    title: str | None = None  # a real title from the source, never invented
    label: str = ""  # display label: the title, else one derived from the abstract
    venue: str | None = None
    year: int | None = None
    status: str | None = None
    area: str | None = None
    keywords: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    site: str | None = None
    tldr: str | None = None
    sources: list[str] = field(default_factory=list)  # "path:position", every place it was seen
    # A short title the endpoint wrote for an untitled paper (rag/corpus/titles.py): its label then,
    # never its `title`, never embedded, and not part of `content_hash`. "" = its reply was
    # no usable title (not asked again); None = never asked.
    generated_title: str | None = None

    @property
    def content_hash(self) -> str:
        """Hash of the normalised abstract (and title): changes when the record changes."""
        return content_hash(f"{self.title or ''}\n{self.abstract}")

    @property
    def label_is_derived(self) -> bool:
        """Tell whether `label` was derived from the abstract (offline, or written by the
        endpoint) rather than a real title."""
        return not self.title


@dataclass(frozen=True, slots=True)
class Chunk:
    """A token-bounded piece of one abstract, with its place in it."""

    chunk_id: str  # "<paper_id>#<index>"
    paper_id: str
    index: int
    n_chunks: int
    text: str  # the abstract's own text: shown as evidence
    char_start: int
    char_end: int
    n_tokens: int


@dataclass(slots=True)
class Hit:
    """A paper found by retrieval, with the chunks that matched."""

    paper: Paper
    score: float  # fused score (higher is better)
    dense_similarity: float | None = None  # best cosine similarity of its chunks, if dense ran
    bm25_score: float | None = None
    chunk_indexes: list[int] = field(default_factory=list)
    versions: list[Paper] = field(default_factory=list)  # the same paper elsewhere, folded in


@dataclass(slots=True)
class Source:
    """A numbered source as shown to the answerer and the user: `[n]` cites `sources[n-1]`."""

    n: int
    paper_id: str
    title: str  # the real title, or the derived label (see `title_is_derived`)
    title_is_derived: bool
    source: str  # where the abstract came from ("000_xxx.txt:3"); all places in `all_sources`
    score: float
    text: str  # the evidence text given to the answerer (the abstract's own words)
    venue: str | None = None
    year: int | None = None
    site: str | None = None
    all_sources: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # where its folded versions appeared
    cited: bool = False
    highlights: list[str] = field(default_factory=list)  # sentences that support the answer
    title_generated: bool = False  # the derived label is a title the endpoint wrote

    @property
    def label_note(self) -> str:
        """How `title` was made, for display: '' (the real title), 'generated title' (the
        endpoint wrote it) or 'derived label' (offline, from the abstract)."""
        if not self.title_is_derived:
            return ""
        return "generated title" if self.title_generated else "derived label"


@dataclass(slots=True)
class TableRow:
    """One row of a comparison table: source `n` and its cells, column -> quoted text."""

    n: int
    cells: dict[str, str]


@dataclass(slots=True)
class Answer:
    """What `rag ask --json` prints, and what the UI and eval consume."""

    question: str
    answer: str
    abstained: bool
    citations: list[int]
    sources: list[Source]
    mode: str  # "llm" | "extractive"
    notices: list[Notice] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    query: str = ""  # the standalone query actually retrieved (differs for follow-ups)
    flagged: list[str] = field(default_factory=list)  # answer sentences the checker doubts
    # What the question stage read (rag/question/reading.py) and what the answerability decision
    # concluded (rag/answering/answerable.py):
    applied_filters: dict[str, Any] = field(default_factory=dict)  # {"venue": "ICLR", ...}
    intent: str = ""  # definition | figure | papers | comparison | yes_no | count | lookup
    language: str = "en"  # ISO 639-1 code of the question's language
    confidence: float | None = None  # answerability in 0..1 (higher: better supported)
    follow_up: bool = False  # read as a follow-up of the previous turn
    evidence: dict[str, float] = field(default_factory=dict)  # what `confidence` is made of
    # Questions about many papers (rag/aggregate/matching.py, rag/aggregate/conference.py):
    count: int | None = None  # a count question: how many papers match
    count_by: dict[str, dict[str, int]] | None = None  # {"year": {"2017": 3, ...}} if asked
    table: list[TableRow] | None = None  # a comparison: one row per compared source
    # With an endpoint: how the answer was generated and judged (rag.answering.citations.judge):
    # {"path": "free", "kept": false, "reasons": [...], "unsupported_share": 0.5,
    # "draft_coverage": 0.2}; `draft`: the model's checked text when it did not hold up
    # and the offline answer is shown instead.
    generation: dict[str, Any] | None = None
    draft: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form (the `--json` contract): `notices` as strings, and
        `notice_codes` beside them."""
        data = asdict(self)
        data["notices"] = [str(n) for n in self.notices]
        data["notice_codes"] = [getattr(n, "code", "") for n in self.notices]
        return data


@dataclass(slots=True)
class IngestSummary:
    """What `rag ingest --json` prints."""

    files: int = 0
    records: int = 0
    papers_new: int = 0
    papers_updated: int = 0
    papers_unchanged: int = 0
    papers_pruned: int = 0
    duplicates_merged: int = 0
    chunks_embedded: int = 0
    chunks_deleted: int = 0
    skipped: list[Skip] = field(default_factory=list)
    seconds: float = 0.0
    total_papers: int = 0
    total_chunks: int = 0
    titles_generated: int = 0  # untitled papers the endpoint titled (RAG_GENERATE_TITLES)
    titles_rejected: int = 0  # replies that were no usable title: offline label kept
    titles_failed: int = 0  # the endpoint failed: asked again by the next ingest

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form (the `--json` contract)."""
        data = asdict(self)
        data["skipped"] = [
            {"file": s.file, "position": s.position, "reason": s.reason} for s in self.skipped
        ]
        return data

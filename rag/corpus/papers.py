"""Raw records -> Papers: field mapping, cleaning, stable ids, display labels, dedupe.

Ids are stable across re-ingest: an OpenReview id as-is, another external id namespaced
by its file ("nips2017/3768": bare numbers repeat across venues), else a hash of the
normalised abstract ("a-3f1a9c..."). A record without a title gets a derived display
label kept apart from titles (rag/corpus/labels.py: the method it introduces, "GN-IVO: Group-
Normalized Implicit Value Optimization", else its contribution's key phrase).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rag.corpus.labels import derive_label
from rag.corpus.load import Record, venue_year
from rag.text import split_sentences
from rag.types import Paper, Skip, SourceRef, content_hash

# Field names tried in order, per paper attribute; `--field abstract=summary` puts a
# user's name first.
DEFAULT_FIELDS: dict[str, tuple[str, ...]] = {
    "id": ("id", "paper_id", "openreview_id", "forum", "paperId", "arxiv_id"),
    "title": ("title", "paper_title", "name"),
    "abstract": ("abstract", "summary", "paper_abstract", "text"),
    "authors": ("author", "authors"),
    "keywords": ("keywords", "keyword", "tags"),
    "area": ("primary_area", "area", "topic"),
    "status": ("status", "decision"),
    "site": ("site", "url", "link", "forum_url", "pdf"),
    "venue": ("venue", "conference"),
    "year": ("year",),
    "tldr": ("tldr", "TLDR"),
}

MIN_ABSTRACT_WORDS = 8  # "Abstract Unavailable", "Preface to COLT 2015", "withdrawn"
MAX_ABSTRACT_CHARS = 20_000  # ~3x the longest real abstract; longer text is cut, not dropped
# Two abstracts sharing half the sentences of the shorter (and two at least) are versions
# of one paper: the ICLR submission and its ICML version, an arXiv revision (../shared's
# real abstracts: 36 pairs share half, 31 one paper at two venues, 5 one abstract text on
# two 1990s records; docs/architecture.md).
VERSION_SHARE = 0.5
VERSION_SENTENCE_WORDS = 6
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TAGS = re.compile(r"</?[a-zA-Z][^<>]{0,200}>")
_OPENREVIEW_ID = re.compile(r"^[A-Za-z0-9_\-]{8,16}$")


@dataclass
class FieldMap:
    """Which record keys feed which paper attribute."""

    names: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_FIELDS))

    @classmethod
    def with_overrides(cls, overrides: Mapping[str, str]) -> FieldMap:
        """Put user-given names first: {'abstract': 'summary'}."""
        names = dict(DEFAULT_FIELDS)
        for attr, key in overrides.items():
            if attr not in names:
                raise ValueError(f"unknown field {attr!r}; known: {', '.join(names)}")
            names[attr] = (key, *names[attr])
        return cls(names)

    def get(self, fields: Mapping[str, Any], attr: str) -> Any:
        """Return the first present, non-empty value for `attr`."""
        for key in self.names[attr]:
            value = fields.get(key)
            if value not in (None, "", []):
                return value
        return None


def clean_text(value: Any) -> str:
    """Make one clean line of text: entities decoded, tags and control characters dropped."""
    text = html.unescape(str(value))
    if "<" in text:  # each regex only where it can match: ~0.1 s less per 2,000 papers
        text = _TAGS.sub(" ", text)
    if not text.isprintable():  # every control character is unprintable
        text = _CONTROL.sub(" ", text)
    return " ".join(text.split())  # runs of whitespace -> one space, as `\s+` matches them


def split_list(value: Any) -> tuple[str, ...]:
    """'a;b; c' or ['a', 'b'] -> ('a', 'b', 'c')."""
    items = value if isinstance(value, list) else str(value).split(";")  # not ",": "Smith, J."
    return tuple(t for t in (clean_text(i) for i in items) if t)


def paper_from_record(record: Record, fields: FieldMap) -> Paper | Skip:
    """Build a Paper from a record, or say precisely why it cannot be one."""
    data = record.fields
    raw_abstract = fields.get(data, "abstract")
    if raw_abstract is None:
        return Skip(record.file, record.position, "no abstract field")
    if not isinstance(raw_abstract, str):
        kind = type(raw_abstract).__name__
        return Skip(record.file, record.position, f"abstract is a {kind}, not text")
    abstract = clean_text(raw_abstract)[:MAX_ABSTRACT_CHARS]
    if len(abstract.split()) < MIN_ABSTRACT_WORDS:
        return Skip(record.file, record.position, f"placeholder abstract: {abstract[:40]!r}")
    title = _optional_text(fields.get(data, "title"))
    venue_text = _optional_text(fields.get(data, "venue"))  # "ICLR 2026 Poster"
    venue, venue_year_ = venue_year(venue_text) if venue_text else (None, None)
    external = fields.get(data, "id")
    openreview = "openreview.net" in str(fields.get(data, "site") or "") or (
        external is not None and data.get("forum") == external
    )
    paper = Paper(
        paper_id=_paper_id(external, openreview, record, abstract),
        abstract=abstract,
        title=title,
        label=title or derive_label(abstract),
        venue=venue or venue_text or record.venue,
        year=_year(fields.get(data, "year")) or venue_year_ or record.year,
        status=_optional_text(fields.get(data, "status")),
        area=_optional_text(fields.get(data, "area")),
        keywords=split_list(fields.get(data, "keywords") or ""),
        authors=split_list(fields.get(data, "authors") or ""),
        site=_optional_text(fields.get(data, "site")),
        tldr=_optional_text(fields.get(data, "tldr")),
        sources=[str(SourceRef(record.file, record.position))],
    )
    return paper


def _optional_text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    return clean_text(value) or None


def _year(value: Any) -> int | None:
    match = re.search(r"(19|20)\d\d", str(value)) if value is not None else None
    return int(match.group(0)) if match else None


def _paper_id(external: Any, openreview: bool, record: Record, abstract: str) -> str:
    if external is None or isinstance(external, dict | list) or not str(external).strip():
        return f"a-{content_hash(abstract)}"
    ext = clean_text(external).replace(" ", "_")
    # OpenReview ids ("B12Js_yRb") are global; bare numbers and hex hashes ("3768",
    # "5cf0682208") repeat across venues, so they are namespaced by their file.
    hex_or_number = re.fullmatch(r"[0-9a-f]+", ext) is not None
    if _OPENREVIEW_ID.match(ext) and (openreview or not hex_or_number):
        return ext
    namespace = (record.collection or "").lower().replace(" ", "_") or "x"
    return f"{namespace}/{ext}"


# -- dedupe ---------------------------------------------------------------------------


def dedupe(
    items: Iterable[Paper | Skip], merged: list[int] | None = None
) -> Iterator[Paper | Skip]:
    """Merge papers seen twice (same id or same abstract) into the first, keeping all sources.

    A repeated id with a different abstract is a conflict: the later record is skipped.
    Papers are yielded once all input is read, so merged sources are complete.
    """
    papers: list[Paper] = []
    by_id: dict[str, Paper] = {}
    by_hash: dict[str, Paper] = {}
    for item in items:
        if isinstance(item, Skip):
            yield item
            continue
        key = content_hash(item.abstract)
        first = by_id.get(item.paper_id) or by_hash.get(key)
        if first is None:
            papers.append(item)
            by_id[item.paper_id] = by_hash[key] = item
            continue
        if content_hash(first.abstract) != key:
            where = first.sources[0]
            ref = SourceRef.parse(item.sources[0])
            yield Skip(
                ref.file,
                ref.position,
                f"duplicate id {item.paper_id!r} with a different "
                f"abstract (first seen at {where}); kept the first",
            )
            continue
        _merge_into(first, item)
        by_id[first.paper_id] = first
        if merged is not None:
            merged.append(1)
    yield from papers


def sentence_keys(abstract: str) -> frozenset[str]:
    """The abstract's sentences of VERSION_SENTENCE_WORDS words or more, lower-cased with
    spaces collapsed: what `same_paper` compares."""
    keys = (" ".join(s.lower().split()) for s in split_sentences(abstract))
    return frozenset(k for k in keys if k.count(" ") + 1 >= VERSION_SENTENCE_WORDS)


def same_paper(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two abstracts' `sentence_keys` make them versions of one paper."""
    shared = len(a & b)
    return shared >= 2 and shared >= VERSION_SHARE * min(len(a), len(b))


def _merge_into(first: Paper, other: Paper) -> None:
    for source in other.sources:
        if source not in first.sources:
            first.sources.append(source)
    if first.paper_id.startswith("a-") and not other.paper_id.startswith("a-"):
        first.paper_id = other.paper_id  # an external id beats a hash
    for attr in ("title", "venue", "year", "status", "area", "site", "tldr"):
        if getattr(first, attr) is None and getattr(other, attr) is not None:
            setattr(first, attr, getattr(other, attr))
    if first.title and first.label != first.title:
        first.label = first.title


__all__ = [
    "DEFAULT_FIELDS",
    "FieldMap",
    "clean_text",
    "dedupe",
    "derive_label",
    "paper_from_record",
    "same_paper",
    "sentence_keys",
]

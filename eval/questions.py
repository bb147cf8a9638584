"""Question sets: JSONL lines -> checked `Question`s, and gold snippets -> paper ids.

The format is in eval/questions/README.md: only `id` and `question` are required. Gold
papers are named by a verbatim snippet of their abstract (or `id:<paper id>`), so a set
survives re-ingest and id changes; `resolve_gold` turns them into the ids of the index
being evaluated and reports every snippet that matches no paper or more than one. A
question whose gold does not resolve is answered but not scored: scoring it against a
partial gold set would be wrong in either direction.

Besides gold, a question may carry its style tag (`group`, default its `kind`), its
language (`language`, ISO 639-1, default "en"), the scope it names (`scope`: venue, year,
status), `follow_up_of`: the id of an earlier question it follows in one conversation,
and its `split` (`dev`, the default, or `test`: see eval/questions/README.md).

Deliberately left out: any fuzzy matching. A snippet that does not match verbatim is a
defect in the question set, reported as such.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.metrics import Scope
from rag.corpus.load import expand_paths
from rag.corpus.papers import FieldMap
from rag.errors import RagError
from rag.ingest import read_papers
from rag.types import IngestSummary, Paper, normalise_text

KINDS = ("lookup", "factual", "multi", "unanswerable", "count", "comparison", "related")
ID_PREFIX = "id:"
_KEYS = {
    "id",
    "question",
    "kind",
    "gold",
    "answer_contains",
    "answerable",
    "group",
    "follow_up_of",
    "scope",
    "language",
    "paper",
    "split",
    "count_tolerance",
}
SPLITS = ("dev", "test")
_SCOPE_KEYS = ("venue", "year", "status")
_LANGUAGE = re.compile(r"[a-z]{2}")


class QuestionError(RagError, ValueError):
    """A question set that cannot be read; the message names the file and line(s)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a set, with its defaults filled in."""

    id: str
    question: str
    kind: str = "lookup"
    gold: tuple[str, ...] = ()  # snippets or "id:<paper id>"
    answer_contains: tuple[str, ...] = ()
    answerable: bool = True
    line: int = 0  # 1-based line in the file, for messages
    group: str = ""  # style tag ("short", "typo", ...); parse_question fills in the kind
    follow_up_of: str | None = None  # id of the earlier question this one follows
    scope: Scope | None = None  # the venue / year / status the question names
    language: str = "en"  # ISO 639-1
    paper: str | None = None  # a `related` question's paper: a snippet or "id:<paper id>"
    split: str = "dev"  # dev: tune on it freely; test: written before the change it measures
    count_tolerance: int = 0  # a count within this many of the gold size is right
    gold_given: bool = True  # False: the line has no `gold` key (answered, never scored on it)

    @property
    def group_name(self) -> str:
        """The group the question is reported in: its `group`, else its kind."""
        return self.group or self.kind


@dataclass(frozen=True, slots=True)
class GoldProblem:
    """A gold entry that names no paper, or more than one."""

    question_id: str
    entry: str
    reason: str

    def __str__(self) -> str:
        return f"{self.question_id}: {self.entry!r} {self.reason}"


@dataclass(slots=True)
class ResolvedGold:
    """Gold paper ids per question id; None where the question is not scored on gold."""

    ids: dict[str, frozenset[str] | None]
    problems: list[GoldProblem]
    papers: dict[str, str] = field(default_factory=dict)  # related question id -> its paper


def load_questions(path: str | Path) -> list[Question]:
    """Read and check a JSONL question set; every problem is reported as FILE:LINE."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionError(f"cannot read {path}: {exc}") from None
    questions: list[Question] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            question = parse_question(line, number)
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}")
            continue
        if question.id in seen:
            errors.append(f"{path}:{number}: id {question.id!r} repeats line {seen[question.id]}")
            continue
        seen[question.id] = number
        questions.append(question)
    errors.extend(_follow_up_errors(path, questions, lines))
    if errors:
        more = f"\n… and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise QuestionError("\n".join(errors[:10]) + more)
    if not questions:
        raise QuestionError(f"{path}: no questions")
    return questions


def parse_question(line: str, number: int = 0) -> Question:
    """One JSONL line -> Question, or ValueError saying what is wrong with it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}")
    qid = _text(data, "id")
    kind = data.get("kind", "lookup")
    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(KINDS)}, got {kind!r}")
    answerable = data.get("answerable", kind != "unanswerable")
    if not isinstance(answerable, bool):
        raise ValueError("`answerable` must be true or false")
    if kind == "unanswerable" and answerable:
        raise ValueError("an `unanswerable` question cannot have `answerable: true`")
    tolerance = data.get("count_tolerance", 0)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise ValueError("`count_tolerance` must be a whole number >= 0")
    if tolerance and kind != "count":
        raise ValueError("`count_tolerance` is for `count` questions only")
    paper = _optional_text(data, "paper")
    if (kind == "related") != (paper is not None):
        raise ValueError("`paper` is required for a `related` question and only for one")
    return Question(
        id=qid,
        question=_text(data, "question"),
        kind=kind,
        gold=_strings(data, "gold"),
        gold_given="gold" in data,
        answer_contains=_strings(data, "answer_contains"),
        answerable=answerable,
        line=number,
        group=_optional_text(data, "group") or kind,
        follow_up_of=_optional_text(data, "follow_up_of"),
        scope=_scope(data),
        language=_language(data),
        paper=paper,
        split=_split(data),
        count_tolerance=tolerance,
    )


def _follow_up_errors(path: Path, questions: Sequence[Question], lines: Sequence[str]) -> list[str]:
    """`follow_up_of` must name a question on an earlier line of the same file."""
    lines_of = {q.id: q.line for q in questions}
    mentioned = _ids_on_lines(lines)  # also ids of lines that failed to parse
    errors = []
    for q in questions:
        parent = q.follow_up_of
        if parent is None:
            continue
        where = lines_of.get(parent) or mentioned.get(parent)
        if parent == q.id:
            problem = "names the question itself"
        elif where is None:
            problem = "names no question in this file"
        elif where > q.line:
            problem = f"names a later question (line {where}): it must come before"
        else:
            continue
        errors.append(f"{path}:{q.line}: `follow_up_of` {parent!r} {problem}")
    return errors


def _ids_on_lines(lines: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            found.setdefault(data["id"].strip(), number)
    return found


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    if key not in data:
        return None
    return _text(data, key)


def _scope(data: dict[str, Any]) -> Scope | None:
    if "scope" not in data:
        return None
    value = data["scope"]
    if not isinstance(value, dict) or not value:
        raise ValueError("`scope` must be an object with any of venue, year, status")
    unknown = sorted(set(value) - set(_SCOPE_KEYS))
    if unknown:
        raise ValueError(f"unknown `scope` key(s) {', '.join(unknown)}; known: venue, year, status")
    for key in ("venue", "status"):
        if key in value and not (isinstance(value[key], str) and value[key].strip()):
            raise ValueError(f"`scope.{key}` must be a non-empty string")
    year = value.get("year")
    if "year" in value and (not isinstance(year, int) or isinstance(year, bool)):
        raise ValueError(f"`scope.year` must be an integer, got {year!r}")
    venue, status = value.get("venue"), value.get("status")
    return Scope(
        venue=venue.strip() if venue else None,
        year=year,
        status=status.strip() if status else None,
    )


def _split(data: dict[str, Any]) -> str:
    value = data.get("split", "dev")
    if value not in SPLITS:
        raise ValueError(f"`split` must be one of {', '.join(SPLITS)}, got {value!r}")
    return str(value)


def _language(data: dict[str, Any]) -> str:
    value = data.get("language", "en")
    if not isinstance(value, str) or not _LANGUAGE.fullmatch(value.strip().lower()):
        raise ValueError(f"`language` must be a two-letter ISO 639-1 code, got {value!r}")
    return value.strip().lower()


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{key}` must be a non-empty string")
    return value.strip()


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"`{key}` must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def resolve_gold(questions: Iterable[Question], abstracts: Mapping[str, str]) -> ResolvedGold:
    """Match gold entries to paper ids (abstracts: paper id -> abstract).

    A snippet matches a paper when it is a substring of the abstract after both are
    whitespace-collapsed and case-folded; it must match exactly one paper. E.g. with
    abstracts {"p1": "We  propose X.", "p2": "We study Y."}, gold ["propose x"] -> {"p1"}
    and gold ["we"] -> not scored, "matches 2 papers".
    """
    normalised = {pid: normalise_text(text) for pid, text in abstracts.items()}
    resolved: dict[str, frozenset[str] | None] = {}
    problems: list[GoldProblem] = []
    papers: dict[str, str] = {}
    for q in questions:
        if q.paper is not None:
            found = _matches(q.paper, normalised)
            if len(found) == 1:
                papers[q.id] = found[0]
            else:
                problems.append(GoldProblem(q.id, q.paper, f"(its `paper`) {_reason(found)}"))
        if not q.gold:  # a count's empty gold is a set: 'none'; no `gold` key is no gold
            resolved[q.id] = frozenset() if q.kind == "count" and q.gold_given else None
            continue
        ids: set[str] = set()
        complete = True
        for entry in q.gold:
            matches = _matches(entry, normalised)
            if len(matches) == 1:
                ids.update(matches)
                continue
            complete = False
            problems.append(GoldProblem(q.id, entry, _reason(matches)))
        resolved[q.id] = frozenset(ids) if complete else None
    return ResolvedGold(resolved, problems, papers)


def _reason(matches: Sequence[str]) -> str:
    if not matches:
        return "matches no paper in the index"
    return f"matches {len(matches)} papers ({', '.join(sorted(matches)[:3])}…)"


def _matches(entry: str, normalised: Mapping[str, str]) -> list[str]:
    if entry.startswith(ID_PREFIX):
        pid = entry[len(ID_PREFIX) :].strip()
        return [pid] if pid in normalised else []
    snippet = normalise_text(entry)
    return [pid for pid, text in normalised.items() if snippet in text]


def abstracts_in_files(paths: Iterable[str | Path]) -> dict[str, str]:
    """Paper id -> abstract for the papers in files, deduplicated as ingest does (no index)."""
    found = read_papers(expand_paths(paths), FieldMap(), IngestSummary())
    return {p.paper_id: p.abstract for p in found if isinstance(p, Paper)}

"""Files -> raw records: one small reader per format, all streaming where the format allows.

Formats, chosen by extension:
  .txt / .list / .md   the plain list format: a header line naming the collection
                       ("ICLR 2026 Papers"), then one abstract per non-empty line
  .json                an array of records (Paper Copilot paperlists, OpenReview dumps),
                       or an object holding such an array
  .jsonl / .ndjson     one record object per line
  .csv / .tsv          a header row, then one record per row

A reader yields `Record`s (a dict plus its file and position) or `Skip`s; turning a
record into a `Paper` (field names, ids, labels) is `papers.py`'s job. Bad bytes never
raise past this module: a file that cannot be read becomes one `Skip` for the whole file.
"""

from __future__ import annotations

import codecs
import csv
import glob
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import RagError
from rag.types import Skip

LIST_SUFFIXES = {".txt", ".list", ".md"}
JSON_SUFFIXES = {".json"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
CSV_SUFFIXES = {".csv", ".tsv"}
SUPPORTED = LIST_SUFFIXES | JSON_SUFFIXES | JSONL_SUFFIXES | CSV_SUFFIXES

# "ICLR 2026 Papers" / "ICLR 2026 论文列表" / "iclr2018.json" -> ("ICLR", 2026)
_VENUE_YEAR = re.compile(r"\b([A-Za-z][A-Za-z\-]{1,15}?)[\s_\-]*((?:19|20)\d\d)\b")
_MAX_FIELD_CHARS = 10 * 1024 * 1024  # csv's default limit (128 KB) is below a long abstract


@dataclass(frozen=True, slots=True)
class Record:
    """A raw record from a file, before it becomes a Paper."""

    file: str
    position: int
    fields: dict[str, Any]
    collection: str | None = None  # the list header, or the file stem
    venue: str | None = None
    year: int | None = None


class InputError(RagError):
    """A path that cannot be ingested at all (missing, unsupported)."""


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files, folders (recursively) and globs into a sorted list of supported files."""
    found: list[Path] = []
    for raw in paths:
        text = str(raw)
        matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))] or [Path(text)]
        for path in matches:
            if path.is_dir():
                found.extend(p for p in sorted(path.rglob("*")) if _is_supported(p))
            elif path.is_file():
                found.append(path)
            else:
                raise InputError(f"{text}: no such file or folder")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return unique


def _is_supported(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in SUPPORTED and not path.name.startswith(".")


def venue_year(text: str) -> tuple[str | None, int | None]:
    """Find a venue and year in a header or file name: 'ICLR 2026 Papers' -> ('ICLR', 2026)."""
    match = _VENUE_YEAR.search(text.replace("_", " "))
    if not match:
        return None, None
    return match.group(1).upper(), int(match.group(2))


def decode(data: bytes, file: str) -> str:
    """Decode file bytes: BOM-marked UTF-8/16/32, else UTF-8, else Latin-1; reject binary."""
    for bom, encoding in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise InputError(f"{file}: invalid {encoding} text ({exc.reason})") from exc
    if b"\x00" in data[:8192]:
        raise InputError(f"{file}: looks like a binary file (NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
        if sum(1 for c in text[:8192] if ord(c) < 32 and c not in "\r\n\t") > 16:
            raise InputError(f"{file}: looks like a binary file, not text") from None
        return text


def read_records(path: Path) -> Iterator[Record | Skip]:
    """Yield the records of one file (or a single Skip naming why the file was rejected)."""
    file = str(path)
    suffix = path.suffix.lower()
    try:
        text = decode(path.read_bytes(), file)
    except OSError as exc:
        yield Skip(file, 0, f"cannot read file: {exc.strerror or exc}")
        return
    except InputError as exc:
        yield Skip(file, 0, str(exc).removeprefix(f"{file}: "))
        return
    if suffix in LIST_SUFFIXES:
        yield from read_list(text, file)
    elif suffix in JSON_SUFFIXES:
        yield from read_json(text, file)
    elif suffix in JSONL_SUFFIXES:
        yield from read_jsonl(text, file)
    elif suffix in CSV_SUFFIXES:
        yield from read_csv(text, file, delimiter="\t" if suffix == ".tsv" else ",")
    else:
        yield Skip(file, 0, f"unsupported file type {suffix!r} (use one of {sorted(SUPPORTED)})")


def read_list(text: str, file: str) -> Iterator[Record | Skip]:
    """Plain list: line 1 names the collection, then one abstract per non-empty line."""
    lines = text.splitlines()
    if not lines:
        yield Skip(file, 0, "empty file")
        return
    header = lines[0].strip()
    venue, year = venue_year(header)
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            fields = {"abstract": line}
            yield Record(file, number, fields, header or None, venue, year)


def _file_context(file: str) -> tuple[str, str | None, int | None]:
    stem = Path(file).stem
    venue, year = venue_year(stem)
    return stem, venue, year


def read_json(text: str, file: str) -> Iterator[Record | Skip]:
    """JSON: an array of records, or an object whose (first) list value holds them."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        yield Skip(file, 0, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")
        return
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        data = lists[0] if lists else [data]  # {"papers": [...]} or one record
    if not isinstance(data, list):
        yield Skip(file, 0, f"expected a JSON array of records, found {type(data).__name__}")
        return
    stem, venue, year = _file_context(file)
    for index, item in enumerate(data, start=1):
        yield _record_or_skip(item, file, index, stem, venue, year)


def read_jsonl(text: str, file: str) -> Iterator[Record | Skip]:
    """JSON Lines: one object per non-empty line."""
    stem, venue, year = _file_context(file)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Skip(file, number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        yield _record_or_skip(item, file, number, stem, venue, year)


def read_csv(text: str, file: str, delimiter: str = ",") -> Iterator[Record | Skip]:
    """CSV/TSV with a header row; the position is the row's line number."""
    csv.field_size_limit(_MAX_FIELD_CHARS)
    stem, venue, year = _file_context(file)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for row in reader:
            extra = row.pop(None, None)
            if extra:
                yield Skip(file, reader.line_num, f"row has {len(extra)} more cells than header")
                continue
            yield Record(file, reader.line_num, dict(row), stem, venue, year)
    except csv.Error as exc:
        yield Skip(file, reader.line_num, f"malformed CSV: {exc}")


def _record_or_skip(
    item: Any, file: str, position: int, stem: str, venue: str | None, year: int | None
) -> Record | Skip:
    if not isinstance(item, dict):
        return Skip(file, position, f"expected an object, found {type(item).__name__}")
    return Record(file, position, _flatten_openreview(item), stem, venue, year)


def _flatten_openreview(item: dict[str, Any]) -> dict[str, Any]:
    """OpenReview notes keep fields under `content`, API v2 as {"value": ...}: lift them."""
    content = item.get("content")
    if not isinstance(content, dict):
        return item
    flat = {k: v for k, v in item.items() if k != "content"}
    for key, value in content.items():
        if isinstance(value, dict) and "value" in value:
            value = value["value"]
        flat.setdefault(key, value)
    return flat

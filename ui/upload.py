"""An uploaded file -> the index: save it under its own name, ingest it, summarise the result.

The file is kept under `<index_dir>/uploads/<content hash>/` with its original
(sanitised) name, which keeps the suffix the reader is chosen by and the name a venue/year
is read from ("iclr2018.json" -> ICLR 2018). It is kept, not deleted, because it is the
papers' recorded source: `rag ingest --prune` drops papers whose source file is gone.
Every expected failure (unsupported type, binary bytes,
invalid JSON, a locked index) comes back as a readable `UploadResult`, never raised.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rag import errors
from rag.assistant import Assistant
from rag.corpus.load import SUPPORTED
from rag.types import IngestSummary, Skip

UPLOAD_TYPES = sorted(s.lstrip(".") for s in SUPPORTED)  # for st.file_uploader(type=...)
MAX_SKIPS_SHOWN = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._\- ]+")


@dataclass
class UploadResult:
    """What happened to one uploaded file."""

    name: str
    ok: bool
    message: str
    summary: IngestSummary | None = None
    skipped: list[str] = field(default_factory=list)  # "line 3: no abstract", ...


def safe_name(name: str) -> str:
    """A file name safe to write: 'a/../b c?.json' -> 'b c_.json'."""
    base = Path(name.replace("\\", "/")).name
    cleaned = _UNSAFE.sub("_", base).strip(" .") or "upload"
    return cleaned[-120:]


def ingest_upload(
    assistant: Assistant,
    name: str,
    data: bytes,
    progress: Callable[[int, int], None] | None = None,
) -> UploadResult:
    """Save the bytes under the index's uploads folder keeping the name, ingest, report."""
    filename = safe_name(name)
    suffix = Path(filename).suffix.lower()
    if suffix not in SUPPORTED:
        kinds = ", ".join(sorted(SUPPORTED))
        return UploadResult(name, False, f"{name}: unsupported file type (use one of {kinds})")
    digest = hashlib.sha1(data).hexdigest()[:12]
    folder = Path(assistant.settings.index_dir) / "uploads" / digest
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / filename
        path.write_bytes(data)
        summary = assistant.ingest([path], progress=progress)
    except errors.EXPECTED as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return UploadResult(name, False, f"{name}: {exc}")
    result = summarise(name, summary)
    if not result.ok:
        shutil.rmtree(folder, ignore_errors=True)  # nothing stored refers to it
    return result


def summarise(name: str, summary: IngestSummary) -> UploadResult:
    """Turn an ingest summary into a verdict and one line a person can read."""
    skipped = [describe_skip(s) for s in summary.skipped]
    if summary.records == 0 and summary.papers_unchanged == 0:
        reason = "; ".join(skipped[:3]) or "no records found"
        return UploadResult(
            name, False, f"Nothing could be ingested from {name}: {reason}", summary, skipped
        )
    message = (
        f"{name}: {summary.papers_new} new, {summary.papers_updated} updated, "
        f"{summary.papers_unchanged} unchanged, {len(summary.skipped)} skipped "
        f"({_count(summary.chunks_embedded, 'chunk')} embedded in {summary.seconds:.1f} s)"
    )
    return UploadResult(name, True, message, summary, skipped)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def describe_skip(skip: Skip) -> str:
    """'line 3: no abstract', or the reason alone for a whole-file skip."""
    return f"record {skip.position}: {skip.reason}" if skip.position else skip.reason

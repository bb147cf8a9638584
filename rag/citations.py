"""Check an answer's citations against its sources, after generation.

- `[n]` markers that match no source are removed and reported.
- Sentences with no citation, or whose cited sources share too few of the sentence's
  content words (< 25%: e.g. 1 of 6), are flagged as unsupported.
Grouped forms are understood: [1, 3], [1-2], [1][2].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.text import content_words, split_sentences

CITATION = re.compile(r"\[(\d+(?:\s*[-–,]\s*\d+)*)\]")
MIN_SUPPORT = 0.25


@dataclass
class CheckedAnswer:
    """The answer text with invalid citations removed, and what the check found."""

    text: str
    citations: list[int]  # valid numbers used, in order of first use
    invalid: list[int] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)


def parse_group(group: str) -> list[int]:
    """'1, 3-4' -> [1, 3, 4]."""
    numbers: list[int] = []
    for part in re.split(r"\s*,\s*", group):
        if re.search(r"[-–]", part):
            lo, hi = (int(x) for x in re.split(r"\s*[-–]\s*", part))
            numbers.extend(range(lo, min(hi, lo + 50) + 1))
        elif part:
            numbers.append(int(part))
    return numbers


def cited_numbers(text: str) -> list[int]:
    """All citation numbers in order of first use: 'a [2]. b [1, 2].' -> [2, 1]."""
    seen: dict[int, None] = {}
    for match in CITATION.finditer(text):
        for n in parse_group(match.group(1)):
            seen.setdefault(n, None)
    return list(seen)


def check(answer: str, sources: dict[int, str]) -> CheckedAnswer:
    """Remove citations to unknown sources and flag unsupported sentences."""
    invalid: dict[int, None] = {}

    def keep_valid(match: re.Match[str]) -> str:
        numbers = parse_group(match.group(1))
        valid = [n for n in numbers if n in sources]
        for n in numbers:
            if n not in sources:
                invalid.setdefault(n, None)
        return "".join(f"[{n}]" for n in dict.fromkeys(valid))

    text = CITATION.sub(keep_valid, answer)
    text = re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    unsupported = [s for s in _claims(text) if not _supported(s, sources)]
    return CheckedAnswer(text, cited_numbers(text), list(invalid), unsupported)


def _claims(text: str) -> list[str]:
    """Sentences and bullet items that make a claim (headers and lead-ins excluded)."""
    claims: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*• ").strip()
        if not line or line.endswith(":"):
            continue
        claims.extend(s for s in split_sentences(line) if len(content_words(s)) >= 3)
    return claims


def _supported(sentence: str, sources: dict[int, str]) -> bool:
    numbers = [n for m in CITATION.finditer(sentence) for n in parse_group(m.group(1))]
    if not numbers:
        return False
    words = content_words(CITATION.sub("", sentence))
    if not words:
        return True
    evidence = frozenset().union(*(content_words(sources[n]) for n in numbers if n in sources))
    return len(words & evidence) / len(words) >= MIN_SUPPORT

"""Acronyms an index never writes: what real abstracts spell them out as.

An abstract that writes 'Monte Carlo tree search (MCTS)' teaches the index that 'mcts' is
MCTS (`Retriever.aliases`). A question may name an acronym that no stored abstract holds
at all: 'how many papers use mcts' over abstracts that only write 'Monte Carlo tree
search' matches nothing as typed, in BM25, in a count's coverage or in the answerability
check. The glossary gives such a word its long form: every acronym that at least
`MIN_PAPERS` real abstracts spell out the same way (rag/data/acronyms.json, written by
`rag eval acronyms` from ../shared's ~22k abstracts, or RAG_ACRONYMS_FILE). It is read
only for a word no stored abstract holds, so an index's own usage always wins, and a
question is told when a word was read through it (the "expanded" notice).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag.config import DATA_DIR, load_fitted

DEFAULT_FILE = DATA_DIR / "acronyms.json"


@dataclass(frozen=True, slots=True)
class Entry:
    """One acronym: as abstracts write it, its long form, and in how many abstracts."""

    written: str  # 'MCTS'
    long: str  # 'monte carlo tree search'
    papers: int  # abstracts that spell it out so


@dataclass(frozen=True)
class Glossary:
    """Acronym (casefolded) -> its entry."""

    entries: Mapping[str, Entry]
    about: Mapping[str, Any]

    def get(self, word: str) -> Entry | None:
        """The entry of an acronym however typed ('mcts', 'MCTS'); None if unknown."""
        return self.entries.get(word.casefold())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Glossary:
        entries = {
            key: Entry(str(row["written"]), str(row["long"]), int(row["papers"]))
            for key, row in data["acronyms"].items()
        }
        return cls(entries, dict(data.get("about", {})))


@lru_cache(maxsize=4)
def load(path: Path | None = None) -> Glossary:
    """The glossary file (default: the one shipped in rag/data)."""
    return load_fitted(path or DEFAULT_FILE, "acronym glossary", Glossary.from_json)


class Spellings(Mapping[str, str]):
    """How acronyms typed in lower case are written: the index's own table first, then
    the glossary's for a word the index holds nowhere (`held` says whether it does).
    Iterating gives the index's own acronyms only."""

    def __init__(self, own: Mapping[str, str], glossary: Glossary, held: Any) -> None:
        self.own = own
        self.glossary = glossary
        self.held = held  # word -> bool

    def __getitem__(self, word: str) -> str:
        found = self.own.get(word)
        if found is not None:
            return found
        entry = self.glossary.get(word)
        if entry is None or self.held(word):
            raise KeyError(word)
        return entry.written

    def __iter__(self) -> Iterator[str]:
        return iter(self.own)

    def __len__(self) -> int:
        return len(self.own)

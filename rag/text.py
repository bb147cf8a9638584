"""Small text helpers shared by the answerers and the citation checker.

Sentence splitting is deliberately simple (abstracts are well-formed prose): split after
., ! or ? followed by a space and a capital, digit or $, except after common
abbreviations ("e.g.", "et al.", "Fig."). Content words are lower-cased, stemmed
(Snowball, as BM25 uses) and stripped of English stop words.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

# After ., ! or ? (or after a citation that follows one: "... works. [2] Next").
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(*\"“])|(?<=\])\s+(?=[A-Z])")
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|etc|vs|Fig|Eq|cf|resp|approx|w\.r\.t)\.$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d+(?:\.\d+)?")
STOP = frozenset(
    """a an and are as at be by can do does did for from has have how i in into is it its
    of on or our paper papers show shows that the their them these they this those to was
    we were what which while who whom why will with work works study studies approach
    method methods propose proposes proposed any there about find found use used using
    such than then so not no also both each other between more most over under via
    been being would could should may might me my you your where when all some one two
    new existing based""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def split_sentences(text: str) -> list[str]:
    """'We do X. It works, e.g. on Y. Done.' -> ['We do X.', 'It works, e.g. on Y.', 'Done.']"""
    pieces = _SPLIT.split(text.strip())
    sentences: list[str] = []
    for piece in pieces:
        if sentences and _ABBREV.search(sentences[-1]):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return [s for s in sentences if s]


_ACRONYM_PLURAL = re.compile(r"\b([A-Z]{2,})s\b")  # "LLMs" -> "LLM"
# British -ise spellings: "optimisation" must meet "optimization" after stemming.
_BRITISH = re.compile(r"\b(\w{3,})is(e|ed|es|ing|ation|ations|er|ers)\b")


def normalise_terms(text: str) -> str:
    """Spell terms one way before tokenising: 'LLMs optimised' -> 'LLM optimized'."""
    return _BRITISH.sub(r"\1iz\2", _ACRONYM_PLURAL.sub(r"\1", text))


@lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words: 'Speculative decoding for LLMs' -> {specul, decod, llm}."""
    words = [w.lower() for w in _WORD.findall(normalise_terms(text))]
    kept = [w for w in words if w not in STOP and len(w) > 1]
    return frozenset(_stemmer().stemWords(kept))


def overlap(query: str, text: str) -> float:
    """Share of the query's content words that occur in the text (0..1)."""
    q = content_words(query)
    if not q:
        return 0.0
    return len(q & content_words(text)) / len(q)

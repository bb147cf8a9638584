"""Plain words -> the field's terms, searched beside them.

People describe ML work in everyday words the abstracts do not use: 'a chatbot that
makes things up' is a language model's hallucination there. rag/data/glossary-plain.tsv
lists such phrases with the field's term for each; where a question says one, the term
is searched beside it ('a chatbot (language model) that makes things up (hallucination)'),
so BM25, the dense query and the answerability evidence all see the word the abstracts
write. The question's own words stay: an abstract that says 'chatbot' still matches.

A term is added only where some stored abstract holds its words and the question does not
already: nothing is searched that the index cannot match.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rag.config import DATA_DIR, alternatives, data_rows
from rag.text import stems, words

GLOSSARY = DATA_DIR / "glossary-plain.tsv"
FIELD_TOPICS = 4  # the most field-term rewrites of one topic a count weighs
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")  # a word of the casefolded text ("can't")

Table = dict[tuple[str, ...], tuple[str, ...]]  # a phrase's stems -> its field terms
# What a method does without, as people ask it ('which one doesn't need a critic',
# 'optimization without gradients') and as the field writes it ('critic-free',
# 'gradient-free', 'training-free', 'model-free': 235 of ../shared's abstracts say
# 'model-free'): the '-free' form is searched beside it where an abstract writes it.
_WITHOUT = re.compile(
    r"\b(?:(?:do|does|did)(?: not|n't|nt)|never|no longer) (?:need|require|use|rely on)s?"
    r"(?: a| an| any| the)? ([a-z]+)|\bwithout(?: a| an| any| the)? ([a-z]+)"
)


@dataclass(frozen=True, slots=True)
class Expansion:
    """One plain phrase of a question and the field terms searched beside it."""

    phrase: str  # as typed
    terms: tuple[str, ...]


def _key(phrase: str) -> tuple[str, ...]:
    """A phrase as the stems of its words, apostrophes straightened: 'Chatbots' -> ('chatbot',)."""
    return tuple(stems(_TOKEN.findall(phrase.casefold().replace("’", "'"))))


@lru_cache(maxsize=4)
def load(path: Path = GLOSSARY) -> Table:
    """The glossary: phrase stems -> field terms. ValueError naming the file and line of a
    line of another shape, or of a phrase listed twice (the same stems)."""
    table: Table = {}
    for n, (phrase, terms, *_) in data_rows(path, ("plain phrase", "field term", "note"), 1):
        key = _key(phrase)
        if not key:
            raise ValueError(f"{path}:{n}: the phrase {phrase!r} has no word")
        if key in table:
            raise ValueError(f"{path}:{n}: {phrase!r} is listed twice (as the same stems)")
        table[key] = alternatives(terms)
    return table


def words_for(word: str, table: Table | None = None) -> tuple[str, ...]:
    """The one-word field terms the glossary gives for one typed word: 'params' ->
    ('parameters',), 'envs' -> ('environment',); () for a word it does not list."""
    table = load() if table is None else table
    return tuple(t for t in table.get(_key(word), ()) if " " not in t.strip())


def expand(
    text: str, holds: Callable[[str], bool], table: Table | None = None
) -> tuple[str, tuple[Expansion, ...]]:
    """The text with each plain phrase's field terms after it, in parentheses, and what
    was added. A term is added where `holds` (some stored abstract holds the word) is true
    of each of its words and the text lacks one of them; the longest phrase at a place
    wins. 'let a chatbot write code' -> 'let a chatbot (language model) write code (code
    generation)'."""
    table = load() if table is None else table
    longest = max((len(k) for k in table), default=0)
    folded = text.casefold().replace("’", "'")
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(folded)]
    keys = stems([folded[a:b] for a, b in spans])
    have = set(stems(words(text)))
    inserts: list[tuple[int, str]] = []
    found: list[Expansion] = []
    i = 0
    while i < len(keys):
        for size in range(min(longest, len(keys) - i), 0, -1):
            terms = table.get(tuple(keys[i : i + size]))
            if terms is None:
                continue
            fresh = tuple(t for t in terms if _searchable(t, holds, have))
            if fresh:
                end = spans[i + size - 1][1]
                inserts.append((end, f" ({', '.join(fresh)})"))
                found.append(Expansion(text[spans[i][0] : end], fresh))
                have |= {s for t in fresh for s in stems(words(t))}
            i += size - 1
            break
        i += 1
    for match in _WITHOUT.finditer(folded):
        word = match.group(1) or match.group(2)
        forms = [f"{w}-free" for w in dict.fromkeys((word.removesuffix("s"), word))]
        term = next((f for f in forms if holds(f) and f not in folded), None)
        if term:
            inserts.append((match.end(), f" ({term})"))
            found.append(Expansion(text[match.start() : match.end()], (term,)))
    for at, added in sorted(inserts, reverse=True):
        text = text[:at] + added + text[at:]
    return text, tuple(found)


def _searchable(term: str, holds: Callable[[str], bool], have: set[str]) -> bool:
    """Tell whether a field term adds a word to the text that the index holds, and the
    index holds each of its words (a hyphenated one by its parts)."""
    parts = [w for w in words(term) if "-" not in w]
    return bool(parts) and all(holds(w) for w in parts) and not set(stems(parts)) <= have


def field_topics(
    topic: str, holds: Callable[[str], bool], table: Table | None = None
) -> tuple[str, ...]:
    """The topic with each plain phrase in it replaced by a field term, one rewrite per
    choice of terms (at most `FIELD_TOPICS`): 'faster text generation' -> ('efficient
    inference', 'speculative decoding'); 'chatbots that make things up' -> ('language
    model that make hallucination',). What a count weighs beside the topic as typed, as
    it weighs each side of an 'or': a paper about speculative decoding is about faster
    text generation, though it never says so. () where the topic has no plain phrase."""
    _, found = expand(topic, holds, table)
    rewrites = []
    for terms in itertools.product(*(e.terms for e in found)):
        rewrite = topic
        for expansion, term in zip(found, terms, strict=True):
            rewrite = rewrite.replace(expansion.phrase, term, 1)
        rewrites.append(rewrite)
    return tuple(dict.fromkeys(r for r in rewrites if r != topic))[:FIELD_TOPICS]

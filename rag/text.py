"""Small text helpers shared by the answerers and the citation checker.

Sentence splitting is deliberately simple (abstracts are well-formed prose): split after
., ! or ? followed by a space and a capital, digit or $, except after common
abbreviations ("e.g.", "et al.", "Fig."). Content words are lower-cased, stemmed
(Snowball, as BM25 uses) and stripped of English stop words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar, overload

import Stemmer
from rapidfuzz.distance import OSA

from rag.frequency import zipf_frequency
from rag.lexicon import CLAUSE_ENDS, EXAMPLE_OPENERS, STOP

V = TypeVar("V")

# After ., ! or ? (or after a citation that follows one: "... works. [2] Next").
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9$\\(*\"“])|(?<=\])\s+(?=[A-Z])")
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|etc|vs|Fig|Eq|cf|resp|approx|w\.r\.t)\.$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d+(?:\.\d+)?")


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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Where `split_sentences` cuts, as (start, end) offsets in `text` itself (the
    whitespace between two sentences belongs to neither): 'A b. C d.' -> [(0, 4), (5, 9)]."""
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip())
    for gap in (*_SPLIT.finditer(text), None):
        end = len(text.rstrip()) if gap is None else gap.start()
        if end <= start:
            continue
        if spans and _ABBREV.search(text[spans[-1][0] : spans[-1][1]]):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
        if gap is not None:
            start = gap.end()
    return spans


_ACRONYM_PLURAL = re.compile(r"\b([A-Z]{2,})s\b")  # "LLMs" -> "LLM"
# The same plural typed in lower case, where Snowball keeps the 's' (no vowel before it
# but the last letter): "llms", "gnns" -> "llm", "gnn"; "gpus", "sdes" -> "gpu", "sde".
# (English words of that shape but these stop words are rare and cut the same way on
# every side.)
_TYPED_PLURAL = re.compile(r"\b(?!(?:this|thus|plus)\b)([b-df-hj-np-tv-xz]{2,}[aeiouy]?)s\b")
# An acronym ending in a capital S is also written without it: a question typing it in
# lower case reads as a plural ("jtfs" -> "jtf", as "gpus" -> "gpu"), so "JTFS" must hold
# "JTF" too.
_CAPITAL_S = re.compile(r"\b([A-Z]{2,})S\b")
# A name coined on an acronym holds it as a word too: "ActiveDPO" -> "ActiveDPO DPO",
# "NeuCLIP" -> "NeuCLIP CLIP", "ConNAS" -> "ConNAS NAS" (BM25 and content words see DPO).
_COINED = re.compile(r"\b([A-Z]?[a-z]+)([A-Z]{3,})\b")
# A name with its version run on ('Qwen3-8B', 'ResNet50', 'Qwen2.5-7B', 'CIFAR10') is the
# name alone too, as a typed 'qwen' reads; a hyphen already splits 'LLaMA-3'.
_VERSIONED = re.compile(r"\b(?=[a-z]*[A-Z])([A-Za-z]{3,})(\d[\w-]*(?:\.\d[\w-]*)*)")
# British -ise spellings: "optimisation" must meet "optimization" after stemming.
_BRITISH = re.compile(r"\b(\w{3,})is(e|ed|es|ing|ation|ations|er|ers)\b")
# A prefix written with or without its hyphen: "bi-level" must meet "bilevel" and
# "overparameterized" "over-parameterized", so the hyphenated form is also written joined.
_PREFIXED = re.compile(
    r"\b(bi|tri|multi|pre|post|over|under|non|re|co|semi|sub|super|inter|intra|meta|"
    r"hyper|anti|mid|out)-([a-z]{3,})\b",
    re.I,
)


# Inline LaTeX around a name's pieces: "F${}^2$SA-$p$" is typed "F2SA-p", "90\%" "90%".
_LATEX_GLUE = re.compile(r"\$?\{\}\^|[${}]|\\(?=[%&#_])")
TERMS_VERSION = 9  # bump when `normalise_terms` changes: saved BM25 state is then rebuilt


def plain(text: str) -> str:
    """Drop the LaTeX glue inside names: 'F${}^2$SA-$p$' -> 'F2SA-p', '7.4\\%' -> '7.4%'."""
    return _LATEX_GLUE.sub("", text) if any(c in text for c in "${\\") else text


_OPENERS = "|".join(re.escape(o) for o in EXAMPLE_OPENERS)
_EXAMPLES = re.compile(
    rf"\b(?:{_OPENERS})\W[^;:()]*?(?=[;:()]|,\s+(?:{'|'.join(sorted(CLAUSE_ENDS))})\b|$)",
    re.IGNORECASE,
)


def without_examples(sentence: str) -> str:
    """A sentence less its example clauses: 'used in applications such as medical diagnosis
    and autonomous driving, but fragile' -> 'used in applications , but fragile'. What a
    paper lists as an example is not what it is about."""
    return _EXAMPLES.sub("", sentence)


def mentions(text: str, term: str) -> bool:
    """Tell whether a text names a term as a word, case, a plural and LaTeX glue aside:
    'F2SA-p' in 'F${}^2$SA-$p$', 'LLM' in 'LLMs', 'DCT' in 'DCT-based', 'DPO' in the
    name 'ActiveDPO'; 'DeMo' not in 'demonstrate', 'CLIP' not in 'clipping'."""
    return bool(_term_pattern(term).search(plain(text)))


@lru_cache(maxsize=4096)
def _term_pattern(term: str) -> re.Pattern[str]:
    """A number may carry a unit ('32' in '32B'), an acronym sit in a longer one ('MDP'
    in 'CMDPs', 'SGD' in 'SGDM'); any other term is a whole word ('DeMo' in 'demonstrate'
    is not), a version number aside ('Qwen' in 'Qwen3-8B')."""
    term = term.strip()
    body = re.escape(term)
    if re.fullmatch(r"\d+(?:\.\d+)?", term):
        return re.compile(rf"(?<![\d.]){body}(?!\d|\.\d)")  # '3' is not in '3.4'
    if re.fullmatch(r"[A-Z][A-Z0-9]+", term):
        # also the end of a name coined on it: 'DPO' in 'ActiveDPO', 'CLIP' in 'NeuCLIP'
        return re.compile(rf"(?<![a-z]){body}(?:s)?(?![a-z])|(?<=[a-z]){body}(?![\w-])")
    return re.compile(rf"(?<![\w]){body}(?:e?s)?(?![^\W\d])", re.I)


def singular_acronyms(text: str) -> str:
    """'LLMs on gpus' -> 'LLM on gpu': an acronym's plural as its singular, however typed."""
    return _TYPED_PLURAL.sub(r"\1", _ACRONYM_PLURAL.sub(r"\1", text))


def normalise_terms(text: str) -> str:
    """Spell terms one way before tokenising: 'LLMs optimised' -> 'LLM optimized', a
    name coined on an acronym also as the acronym: 'ActiveDPO' -> 'ActiveDPO DPO', an
    acronym ending in S also without it ('JTFS' -> 'JTFS JTF', as a typed 'jtfs' reads
    'jtf'), a name with its version run on also without it ('Qwen3-8B' -> 'Qwen3-8B
    Qwen'), and a prefix's hyphen also without it: 'bi-level' -> 'bi-level bilevel'."""
    text = _VERSIONED.sub(r"\1\2 \1", plain(text))
    text = singular_acronyms(_CAPITAL_S.sub(r"\1S \1", text))
    text = _PREFIXED.sub(r"\1-\2 \1\2", text)
    return _BRITISH.sub(r"\1iz\2", _COINED.sub(r"\1\2 \2", text))


def words(text: str) -> list[str]:
    """Lower-cased content words, a hyphenated one also in its parts: 'Qwen3-8B' ->
    qwen3-8b, qwen3, 8b, qwen (so 'qwen3' and 'qwen' meet 'Qwen3-8B' and 'text-to-video'
    meets 'video'):
    what `content_words` stems and `surface_words` keeps."""
    found = []
    for word in _WORD.findall(normalise_terms(text)):
        word = word.lower().strip("-")
        found.append(word)
        if "-" in word:
            found.extend(p for p in word.split("-") if p)
    return [w for w in found if w not in STOP and len(w) > 1]


def stems(listed: list[str]) -> list[str]:
    """Snowball stems of words (`content_words` is the set of `stems(words(text))`)."""
    return _stemmer().stemWords(listed)


@lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words: 'Speculative decoding for LLMs' -> {specul, decod, llm}."""
    return frozenset(_stemmer().stemWords(words(text)))


def overlap(query: str, text: str) -> float:
    """Share of the query's content words that occur in the text (0..1)."""
    q = content_words(query)
    if not q:
        return 0.0
    return len(q & content_words(text)) / len(q)


def stem(word: str) -> str:
    """A word's Snowball stem, an acronym's plural 's' dropped first: 'GPUs' -> 'gpu',
    'queries' -> 'queri', 'realizations' -> 'realiz'."""
    return _stemmer().stemWord(singular_acronyms(word).lower())


def forms_of(text: str, word: str) -> list[str]:
    """The words of a text, as written, that share `word`'s stem, longest first: forms_of
    ('eight A100 GPUs; one GPU-hour', 'GPU') -> ['GPUs', 'GPU']. A hyphenated word is
    also read by its parts."""
    wanted = stem(word)
    found: dict[str, None] = {}
    for token in re.findall(r"[A-Za-z][\w\-]*", text):
        for part in (token, *token.split("-")):
            if part and stem(part) == wanted:
                found[part] = None
    return sorted(found, key=len, reverse=True)


@lru_cache(maxsize=8192)
def stems_by_word(text: str) -> dict[str, str]:
    """Content words with their stems: 'Speculatve decoding' -> {'speculatv': 'speculatve',
    'decod': 'decoding'} (stem -> the word as written, lower-cased)."""
    kept = words(text)
    return dict(zip(_stemmer().stemWords(kept), kept, strict=True))


@lru_cache(maxsize=8192)
def surface_words(text: str) -> frozenset[str]:
    """The lower-cased content words of a text, as written (for typo-tolerant matching)."""
    return frozenset(words(text))


def is_english_word(word: str) -> bool:
    """Tell whether a word is known to English at all (wordfreq's lists): 'splatting' is,
    'unlearing' is not. Only an unknown word may be a typo of a word of the index."""
    return zipf_frequency(word, "en") > 0


def one_edit_apart(a: str, b: str) -> bool:
    """'unlearing' ~ 'unlearning', 'speculatve' ~ 'speculative', 'tranformer' ~ 'transformer'
    (one letter added, dropped, changed, or two neighbours swapped: rapidfuzz's optimal
    string alignment distance is at most 1)."""
    return OSA.distance(a, b, score_cutoff=1) <= 1


def near_word(word: str, words: Iterable[str]) -> str | None:
    """A word of `words` one edit from `word`, when `word` may be a typo (5+ letters, not
    an English word: 'unlearing' -> 'unlearning', but 'splatting' is never 'splitting')."""
    if len(word) < 5 or not word.isalpha() or is_english_word(word):
        return None
    return next((w for w in words if len(w) >= 5 and one_edit_apart(word, w)), None)


_PARENTHESISED = re.compile(r"\(\s*([A-Z][A-Za-z0-9\-]{1,9})\s*\)")
_RUN_BEFORE = re.compile(r"(?:[A-Za-z][\w\-]*\s+){1,8}$")  # words, then the parenthesis


def spelled_out(text: str) -> dict[str, str]:
    """Acronyms a text spells out: '... the discrete cosine transform (DCT) ...' ->
    {'DCT': 'discrete cosine transform'}. The long form is the shortest run of words
    before the parenthesis whose initials (hyphenated parts too) spell the acronym."""
    found: dict[str, str] = {}
    if "(" not in text:
        return found
    text = plain(text)
    for match in _PARENTHESISED.finditer(text):
        acronym = match.group(1)
        if acronym.endswith("s") and acronym[:-1].isupper():
            acronym = acronym[:-1]  # '(LLMs)' -> 'LLM'
        letters = [c.lower() for c in acronym if c.isalpha() and c.isupper()]
        if len(letters) < 2 or acronym in found:
            continue
        run_before = _RUN_BEFORE.search(text[max(0, match.start() - 120) : match.start()])
        words = run_before.group().split() if run_before else []
        for start in range(len(words) - 1, -1, -1):
            run = words[start:]
            initials = [p[0].lower() for w in run for p in w.split("-") if p]
            if initials == letters or [w[0].lower() for w in run] == letters:
                found[acronym] = " ".join(run)
                break
    return found


# --- tokens and phrases: what the question reader matches instead of word regexes ----------

_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word (a \b-delimited run) or one punctuation mark
SLOTS = ("<year>", "<n>", "<d>", "<w>", "<end>")  # see `Phrases`
_STOPS = frozenset("?.!,")  # what ends a clause, for the <end> slot


@dataclass(frozen=True, slots=True)
class Token:
    """A word or a punctuation mark of a text, where it stands in it."""

    text: str  # as written
    key: str  # casefolded: what phrases are matched on
    start: int
    end: int

    @property
    def is_word(self) -> bool:
        return self.text[0].isalnum() or self.text[0] == "_"


@lru_cache(maxsize=8192)
def tokens(text: str) -> tuple[Token, ...]:
    """'Is GTO's speedup 2x?' -> Is, GTO, ', s, speedup, 2x, ? (with their offsets). Words
    are split where a regex's \\b would split them: 'open-source' is open, -, source."""
    return tuple(
        Token(m.group(), m.group().casefold(), m.start(), m.end()) for m in _TOKEN.finditer(text)
    )


_RUN = re.compile(r"[\w-]+")  # a maximal run of word characters and hyphens


def hyphen_words(text: str) -> list[str]:
    """The words of a text with their inner hyphens, as written: 'DeMo-like (i) decouples
    all-reduce' -> ['DeMo-like', 'i', 'decouples', 'all-reduce'] (the runs of word
    characters and hyphens)."""
    return _RUN.findall(text)


def is_year(text: str) -> bool:
    """'2026' and '1987' are years a question may name; '1500', '2077' and '26' are not."""
    return len(text) == 4 and text.isdecimal() and 1980 <= int(text) <= 2049


def _fills(slot: str, tokens_: tuple[Token, ...], i: int) -> bool:
    """Tell whether a slot takes the token at `i` (<end> takes none; see `Phrases`)."""
    if slot == "<end>":
        return i == len(tokens_) or tokens_[i].text in _STOPS
    if i >= len(tokens_):
        return False
    text = tokens_[i].text
    if slot == "<year>":
        return is_year(text)
    if slot == "<n>":
        return text.isdecimal()
    if slot == "<d>":
        return len(text) == 1 and text.isdecimal()
    return tokens_[i].is_word  # <w>


@dataclass(frozen=True, slots=True)
class PhraseMatch(Generic[V]):
    """Where a phrase of a `Phrases` was found."""

    phrase: str  # as listed
    value: V
    first: int  # token index of its first token
    stop: int  # token index after its last token
    start: int  # character offsets in the text
    end: int
    slots: tuple[str, ...]  # the tokens its slots took, as written ('[<n>]' in '[3]' -> ('3',))


_LEAF = "\0"  # a trie key no token has: the phrase ending there


class Phrases(Generic[V]):
    """A list of phrases matched a token at a time, case aside: one matcher for the word
    lists of rag/lexicon.py, in place of a regex alternation per rule. A phrase is written
    as text ('what about', "what's", 'open-source', 'vs.') and tokenised as texts are, so
    it matches where its words stand side by side; a slot stands for a kind of token:
    <year> a year (1980-2049), <n> a number, <d> one digit, <w> any word, and <end> the
    end of the text or of a clause (before ? . ! or ,), taking no token. Where phrases
    overlap, the leftmost wins, then the longest."""

    @overload
    def __init__(self, phrases: Mapping[str, V]) -> None: ...
    @overload
    def __init__(self: Phrases[str], phrases: Iterable[str]) -> None: ...
    def __init__(self, phrases: Mapping[str, V] | Iterable[str]) -> None:
        items: Iterable[tuple[str, Any]] = (
            phrases.items() if isinstance(phrases, Mapping) else ((p, p) for p in phrases)
        )
        self._trie: dict[str, Any] = {}
        for phrase, value in items:
            node = self._trie
            for key in _phrase_keys(phrase):
                node = node.setdefault(key, {})
            node.setdefault(_LEAF, (phrase, value))

    def search(self, text: str, start: int = 0) -> PhraseMatch[V] | None:
        """The leftmost-longest match at or after token index `start`, or None."""
        toks = tokens(text)
        for i in range(start, len(toks)):
            found = self._at(toks, i)
            if found:
                return found
        return None

    def match(self, text: str) -> PhraseMatch[V] | None:
        """The longest match that starts at the text's first token, or None."""
        return self._at(tokens(text), 0)

    def finditer(self, text: str) -> Iterator[PhraseMatch[V]]:
        """Every match, left to right, none overlapping."""
        toks = tokens(text)
        i = 0
        while i < len(toks):
            found = self._at(toks, i)
            if found:
                yield found
                i = max(found.stop, i + 1)
            else:
                i += 1

    def _at(self, toks: tuple[Token, ...], i: int) -> PhraseMatch[V] | None:
        best: tuple[int, Any, tuple[int, ...]] | None = None
        stack: list[tuple[dict[str, Any], int, tuple[int, ...]]] = [(self._trie, i, ())]
        while stack:
            node, j, filled = stack.pop()
            if _LEAF in node and j > i and (best is None or j > best[0]):
                best = (j, node[_LEAF], filled)
            if j < len(toks) and toks[j].key in node:
                stack.append((node[toks[j].key], j + 1, filled))
            for slot in SLOTS:
                if slot in node and _fills(slot, toks, j):
                    step = 0 if slot == "<end>" else 1
                    stack.append((node[slot], j + step, filled + ((j,) if step else ())))
        if best is None:
            return None
        stop, (phrase, value), filled = best
        return PhraseMatch(
            phrase,
            value,
            i,
            stop,
            toks[i].start,
            toks[stop - 1].end,
            tuple(toks[k].text for k in filled),
        )


def _phrase_keys(phrase: str) -> list[str]:
    """A phrase's tokens as trie keys, its slots kept whole: '[<n>]' -> ['[', '<n>', ']']."""
    keys: list[str] = []
    for token in tokens(phrase):
        keys.append(token.key)
        if len(keys) >= 3 and keys[-3] == "<" and keys[-1] == ">" and f"<{keys[-2]}>" in SLOTS:
            keys[-3:] = [f"<{keys[-2]}>"]
    return keys

"""Question -> `Query`: what is searched, in which scope, asking for what.

Every rule that reads a question lives here (its word lists: rag/lexicon.py):
  - the scope the question names, recognised against the index's own values
    ('which ICLR 2026 papers ...' -> venue ICLR, year 2026; 'NeurIPS orals since 2016'
    -> venue NIPS, status Oral, year >= 2016) and cut out of the retrieval text;
  - the intent ('what is X?' -> definition, 'how much faster ...' -> figure, 'which
    papers ...' -> papers, 'compare ...' -> comparison, 'does X ...?' -> yes_no, 'how
    many papers ...' -> count, else lookup), from a model fitted on labelled questions
    (rag/question/intent.py), and what a good answer sentence holds;
  - the distinctive terms: names ('AltGDA', 'F2SA-p', 'KV'), quoted phrases, numbers;
  - whether it refers back to an earlier turn ('it', 'the second one', 'what about ...').
Its words and phrases are lists in rag/lexicon.py, matched a token at a time by one
matcher, rag.text.Phrases (slots for a year, a number, a clause end); the regexes left are
the general ones: a name, a number, a quoted phrase.
It reads; it never searches. The language comes from rag/question/language.py; a question in
another language is put into English by rag/question/translate.py and that English is read here.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from rag.frequency import is_everyday
from rag.lexicon import (
    AGGREGATE_FRAME,
    AMBIGUOUS_VENUES,
    AREA_LEADS,
    AREA_TAILS,
    ARTICLES,
    ASKS_AUTHORS,
    ASKS_CODE,
    ASKS_RECORD,
    COLUMN_DETERMINERS,
    COLUMN_LEADS,
    COLUMN_WORDS,
    COMPARE_LEADS,
    COMPARE_SEPARATORS,
    COUNT_CLASSIFIERS,
    COUNT_MODIFIERS,
    COUNTING_WORDS,
    DANGLING,
    DEFINITION_LEADS,
    DETAIL_WORDS,
    ENTITY_NOUNS,
    ENTITY_REACH,
    FIGURE_NOUNS,
    FINDING_NOUNS,
    FINDING_VERBS,
    FRAME,
    GENERIC_IT,
    GROUPINGS,
    HOW_VERBS,
    INSTANCE_LEADS,
    KNOWN_VENUES,
    LEAD_INS,
    MAIN_WORDS,
    METHOD_NOUNS,
    NAME_SUFFIXES,
    NOT_A_COUNTED_WORD,
    NOT_COUNTED,
    ORDINAL_REFS,
    OVERVIEW,
    OVERVIEW_LEADS,
    PLURAL_NOUNS,
    PREPOSITIONS,
    PROBLEM_NOUNS,
    RANKING_WORDS,
    REFERS_BACK,
    REJECTED,
    SCOPE_LISTING,
    SCOPE_PAPER_NOUNS,
    SET_DETERMINERS,
    SET_NOUNS,
    SINGULAR_NOUNS,
    STATUS_ALONE,
    STATUS_FOLLOWERS,
    STATUS_WORDS,
    STOP,
    SUBJECT_TAILS,
    VENUE_ALIASES,
    VERSUS,
    WHAT_ABOUT,
    WHICH,
    YEAR_PHRASES,
    phrases_of,
)
from rag.question import language
from rag.question.intent import intent_of
from rag.text import Phrases, Token, content_words, hyphen_words, is_year, mentions, tokens
from rag.types import Filters, Notice

# --- what is matched (the words and phrases: rag/lexicon.py) --------------------------------

_DEFINITION = Phrases(DEFINITION_LEADS)  # 'what is X', 'explain X': before the subject
_GROUP_BY = Phrases(GROUPINGS)  # 'per year', 'by venue', 'orals vs posters' -> the field
DEFAULT_COLUMNS = ("problem", "method", "key result")
_COMPARE_LEADS = Phrases(COMPARE_LEADS)
_COLUMN_LEADS = Phrases(COLUMN_LEADS)
_ASKS_AUTHORS = Phrases(ASKS_AUTHORS)
_ASKS_CODE = Phrases(ASKS_CODE)
_ASKS_RECORD = Phrases(ASKS_RECORD)
# Referring back to an earlier turn. A short question alone is never a follow-up.
_REFERS_BACK = Phrases(REFERS_BACK)
_WHAT_ABOUT = Phrases(WHAT_ABOUT)
_GENERIC_IT = Phrases(GENERIC_IT)
_ORDINAL_REF = Phrases(ORDINAL_REFS)
_YEARS = {kind: Phrases(phrases) for kind, phrases in YEAR_PHRASES.items()}
_DANGLING = Phrases(DANGLING)
_HOW_MANY = Phrases(["how many"])
_OVERVIEW = Phrases(OVERVIEW)  # 'summarize them', 'tl;dr', 'tell me more'

# A name: capitals or digits inside a word ('AltGDA', 'F2SA-p', 'KV', 'GPT-4', 'LLMs').
NAME = re.compile(r"\b[A-Za-z]*(?:[A-Z][A-Za-z]*[A-Z0-9]|[a-z][A-Z]|\d[A-Za-z])[\w\-.]*")
_COUNTING_STEMS = content_words(COUNTING_WORDS)
_SCOPE_LISTING_STEMS = content_words(" ".join(SCOPE_LISTING))
_QUOTED = re.compile(r"[\"“”']([^\"“”']{3,60})[\"“”']")
# A number standing alone: not the 3 of 'EAGLE-3' nor of '3d', '7B' or '300M'.
# A number, its thousands grouped or not ('10,000' is one number, not '10' and '000').
_NUMBER = re.compile(
    r"(?<![\w.\-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:%|x\b|[KMB]\b)?(?!\w|\.\d)"
)
_WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
_ROUNDED = re.compile(r"(\d+(?:\.\d+)?)([kKM])")  # '10k', '1.5M'
_UNITS = {"k": 1_000, "K": 1_000, "M": 1_000_000}
# A dimension ('2d', '3D'): an adjective many papers use ('3D parallelism', '3D
# rotations'), not a name that picks the paper holding it.
_DIMENSION = re.compile(r"\d[dD]")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The scope values an index holds, as stored: what a question may name."""

    venues: frozenset[str] = frozenset()
    years: frozenset[int] = frozenset()
    statuses: frozenset[str] = frozenset()
    areas: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Query:
    """One question, read: the unit every later stage works from."""

    question: str  # as typed
    text: str  # what is searched: the question less the scope it named
    read_scope: Filters = field(default_factory=Filters)  # the scope read from the question
    scope_spans: tuple[str, ...] = ()  # the words the scope was read from ("ICLR 2026")
    intent: str = "lookup"  # definition | figure | papers | comparison | yes_no | count | lookup
    # what an answer sentence must hold: "number", "entity", "problem" (the gap), "method"
    # (how it works), "finding" (what it found) or None
    wants: str | None = None
    plural: bool = False  # asks for several papers
    terms: tuple[str, ...] = ()  # distinctive terms: names, quoted phrases, numbers
    language: str = "en"  # ISO 639-1, of the question as typed
    translated: str = ""  # the English question read and searched, when it was in another
    translation: str = ""  # how it was put into English: "llm" | "dictionary" | "cognates" | "none"
    notices: tuple[Notice, ...] = ()  # what reading it found worth telling (a failed call)
    refers_back: bool = False  # leans on an earlier turn ("how does it work?")
    ordinal: int | None = None  # "the second one" -> 2, "[3]" -> 3, "the last" -> -1
    subject: str = ""  # what a definition asks about: 'explain X' -> 'X'
    corrections: dict[str, str] = field(default_factory=dict)  # typo -> the index's word
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # 'DCT' -> spelled out
    implied: tuple[str, ...] = ()  # acronyms of what the question spells out ('dct')
    group_by: str | None = None  # a count per 'year' | 'venue' | 'status' | 'area'
    topic: str = ""  # what a count or comparison is about: 'how many papers on X' -> 'X'
    compared: tuple[str, ...] = ()  # 'compare X and Y' -> ('X', 'Y'); () for a set
    columns: tuple[str, ...] = ()  # a comparison's columns: ('problem', 'method', ...)
    detail: str = ""  # a follow-up's own words when `text` is its standalone query
    # the sentences the answer before quoted: a follow-up's answer adds to them
    shown: frozenset[str] = frozenset()
    # 'which papers study calibration?': the retrieved papers the count's cut finds about
    # its topic (rag/aggregate/matching.py); None where not weighed
    members: frozenset[str] | None = None

    @property
    def english(self) -> str:
        """The question in English: as typed, or its translation."""
        return self.translated or self.question

    def spellings(self, term: str) -> tuple[str, ...]:
        """A term and how the abstracts spell it out: 'DCT', 'discrete cosine transform';
        '10,000', '10000', '10k', '10K'."""
        return (term, *self.aliases.get(term, ()), *number_spellings(term))

    @property
    def keywords(self) -> str:
        """The text less its framing words, for BM25, plus the acronyms of what it spells
        out: 'what is BoGrape used for?' -> 'BoGrape'; 'which papers use the discrete
        cosine transform?' -> 'discrete cosine transform dct'; the whole text when nothing
        else is left."""
        # The long forms are not added: among 22k abstracts they pulled lookup hit@1 from
        # 0.88 to 0.84 (iclr2026.jsonl); the acronym of a spelled-out phrase is neutral.
        unsaid = [t for t in self.named if not mentions(self.text, t)]  # 'DCT' for 'discrete ...'
        return " ".join([keywords_of(self.text), *unsaid])

    @property
    def named(self) -> tuple[str, ...]:
        """The terms the question names, and the acronyms of what it spells out."""
        return (*self.terms, *self.implied)

    def own(self, terms: Sequence[str]) -> list[str]:
        """Of `terms`, those the question's own words name: a follow-up's paper is already
        chosen, so a term it carries from the previous question ('POMDP' before 'what
        dataset did they use') asks nothing of it; every term of any other question."""
        return [t for t in terms if not self.detail or mentions(self.detail, t)]

    @property
    def changes_topic(self) -> bool:
        """'what about vision models?', 'and for diffusion?': a follow-up after something
        new, not about the papers just shown."""
        return _WHAT_ABOUT.match(self.english) is not None

    @property
    def asks_authors(self) -> bool:
        """Tell whether authors or affiliations are asked for."""
        return _ASKS_AUTHORS.search(self.english) is not None

    @property
    def asks_for_one(self) -> bool:
        """'which paper speeds up dynamic programming on GPUs?': papers asked for, in the
        singular (the intent model reads 'which paper' and 'which papers' alike)."""
        words = _words(self.english)
        return (
            self.intent == "papers" and bool(SINGULAR_NOUNS & words) and not (PLURAL_NOUNS & words)
        )

    @property
    def asks_code(self) -> bool:
        """Tell whether a code link is asked for."""
        return _ASKS_CODE.search(self.english) is not None

    @property
    def lists_scope(self) -> bool:
        """'how many iclr 2026 papers are there', 'list the aistats 2021 papers', 'how many
        papers per year': the papers of a scope (or of the whole index) asked for as such,
        with no topic: nothing is left of the question but its scope and words that ask
        for a list or a count (lexicon SCOPE_LISTING)."""
        if self.intent not in ("count", "papers", "lookup") or self.refers_back:
            return False
        return not (content_words(self.text) - _SCOPE_LISTING_STEMS)

    @property
    def asks_record(self) -> str | None:
        """The field of a paper's record asked for ('which conference is it from' ->
        'venue', 'what year' -> 'year', 'is it an oral?' -> 'status'), or None."""
        found = _ASKS_RECORD.search(self.english)
        return found.value if found else None

    @property
    def asks_count_of_things(self) -> bool:
        """'how many layers ...': a spelled-out count ('three') answers it."""
        return self.wants == "number" and _HOW_MANY.search(self.english) is not None

    @property
    def counts_without_topic(self) -> bool:
        """'how many of them?', 'how many are there', 'how many in total': a count that
        names nothing to count, so in a conversation it counts the previous answer's
        papers; not one that names what it counts in the paper's own words ('how many
        approaches do they propose': a detail of the paper in focus)."""
        if _HOW_MANY.search(self.english) is None or self.counted:
            return False
        return content_words(self.english) <= _COUNTING_STEMS

    @property
    def counted(self) -> str:
        """What a 'how many' question counts, the head of its noun phrase: 'how many GPUs
        did DeMo use?' -> 'GPUs', 'how many uncertainty scenarios can it run' ->
        'scenarios', 'how many A100 GPT-2 runs' -> 'A100' (a term right after the first
        word starts the rest); '' for a ratio ('how many times faster') or a question that
        counts nothing."""
        if not self.asks_count_of_things:
            return ""
        words = _counted_words(self.english)
        if not words or words[0].casefold() in NOT_COUNTED:
            return ""
        # the head is the first plural: 'new rotation representations' ->
        # 'representations', 'continuous RL tasks' -> 'tasks', 'gpu hours' -> 'hours'
        return next((w for w in words if _plural(w)), words[:2][-1])


def _counted_words(text: str) -> list[str]:
    """'how many more A100 GPUs did ...' -> ['A100', 'GPUs']: up to two words after 'how
    many' (and a 'more' / 'different' ..., or 'kinds of' / 'types of' ...), before a verb,
    a preposition or a mark."""
    for match in _HOW_MANY.finditer(text):
        rest = text[match.end :]
        if not rest[:1].isspace():
            continue
        pieces = rest.split()
        if len(pieces) > 2 and pieces[0].casefold() in COUNT_CLASSIFIERS and pieces[1] == "of":
            pieces = pieces[2:]  # 'how many kinds of tasks' counts tasks
        if len(pieces) > 1 and pieces[0].casefold() in COUNT_MODIFIERS:
            kept = _leading_words(pieces[1:]) or _leading_words(pieces)
        else:
            kept = _leading_words(pieces)
        if kept:
            return kept
    return []


def _plural(word: str) -> bool:
    """'tasks', 'GPUs', 'LLMs'; not 'class', 'corpus', 'analysis', 'physics', 'RL'."""
    return word[-1:] == "s" and not word.casefold().endswith(("ss", "us", "is", "ics"))


def _leading_words(pieces: list[str]) -> list[str]:
    """The first one to three of whitespace-separated pieces that are words (a letter
    first, then letters, digits or hyphens), not verbs, prepositions or conjunctions; a
    mark ends them."""
    kept: list[str] = []
    for piece in pieces[:3]:
        runs = hyphen_words(piece)
        word = runs[0] if runs and piece.startswith(runs[0]) else ""
        if not (word[:1].isascii() and word[:1].isalpha()):
            break
        if word.split("-")[0].casefold() in NOT_A_COUNTED_WORD:
            break
        kept.append(word)
        if word != piece:
            break
    return kept


def read(question: str, vocabulary: Vocabulary | None = None) -> Query:
    """Read a question: 'which ICLR 2026 papers use DCT?' -> Query(text='which papers use
    DCT?', read_scope=Filters(venue='ICLR', year=2026), intent='papers', terms=('DCT',))."""
    question = " ".join(question.split())
    group_by, ungrouped = grouping_of(question)
    scope, spans, text = read_scope(ungrouped, vocabulary or Vocabulary())
    rest = overview_rest(text)  # 'give me an overview of the rlhf papers' -> 'rlhf papers'
    if rest:
        text = rest
    intent = intent_of(text)  # fitted on labelled questions (rag/question/intent.py)
    compared: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    topic = ""
    if intent == "count":
        topic = topic_of(text)
    elif intent == "comparison":
        compared, columns, topic = comparison_of(text)
    plural = intent in ("papers", "count", "comparison") or bool(PLURAL_NOUNS & _words(text))
    wants = None
    subject = subject_of(text) if intent == "definition" else ""
    if intent == "lookup" and _a_name_alone(text):  # 'neuclip': what it is
        intent, subject = "definition", text.strip(" ?.!")
    if intent == "figure":
        wants = "number"
    elif not plural and _asks_gap(text, subject):
        wants, intent, subject = "problem", "lookup", ""
    elif (
        not plural
        and intent != "definition"
        and (_asks_for(text, ENTITY_NOUNS) or _asks_which_thing(text))
    ):
        wants = "entity"
    refers = refers_back(question)
    if rest is not None and intent not in ("count", "comparison"):
        wants = "overview"
    elif wants is None and not plural and intent in ("definition", "lookup"):
        wants = _asks_described(text)
        if wants and (refers or _names_nothing(subject)):  # 'how does it work', 'the fix?'
            intent, subject = "lookup", ""
    terms = distinctive_terms(text)
    if subject and " " not in subject and len(subject) > 2 and subject.casefold() not in STOP:
        terms = tuple(dict.fromkeys((*terms, subject)))  # 'what is altgda' -> altgda
    return Query(
        question=question,
        text=text,
        read_scope=scope,
        scope_spans=spans,
        intent=intent,
        wants=wants,
        plural=plural,
        terms=terms,
        language=language_of(question),
        refers_back=refers,
        ordinal=ordinal_of(question),
        subject=subject,
        group_by=group_by if intent == "count" else None,
        topic=topic,
        compared=compared,
        columns=columns,
    )


def searched_text(question: str) -> str:
    """The question as its intent is read: scope words and a grouping cut ('which ICLR
    2026 papers use DCT per year?' -> 'which papers use DCT?')."""
    _, ungrouped = grouping_of(" ".join(question.split()))
    return read_scope(ungrouped, Vocabulary())[2]


def grouping_of(question: str) -> tuple[str | None, str]:
    """'how many papers on GANs per year' -> ('year', 'how many papers on GANs'); 'orals
    vs posters' is a grouping, not a scope of orals."""
    match = _GROUP_BY.search(question)
    if not match:
        return None, question
    rest = question[: match.start] + question[match.end :]
    return match.value, " ".join(rest.split())


def topic_of(text: str) -> str:
    """What a count or a comparison is about: 'how many papers are about RL for LLM
    reasoning?' -> 'RL LLM reasoning'."""
    kept = [w for w in keywords_of(text).split() if w.casefold() not in AGGREGATE_FRAME]
    return " ".join(kept) or keywords_of(text)


_GLOSS = re.compile(r"\s*\([^()]*\)")  # a gloss the reading added: '(code generation)'


def alternatives_of(text: str) -> tuple[str, ...]:
    """The topics a count asks of with 'or', each on its own ('a paper is about A or B'
    when it is about either): 'papers on fourier, cosine or wavelet type transforms' ->
    ('fourier transforms', 'cosine transforms', 'wavelet transforms'); 'memory or
    communication cost of training' -> ('memory cost training', 'communication cost
    training'); () without exactly one 'or' between topic words. The item after the 'or'
    runs over the topic words that follow it; those before it are split at commas, the
    first as long as the others (one word without a comma: 'recommending people or
    content'), and single words before a longer item share its last word, the head noun
    ('approximation or competitive ratios': 'approximation ratios'; 'evolutionary or
    genetic search'), unless the item is 'other' ones: 'signsgd or other sign-based
    optimizers' -> ('signsgd', 'sign-based optimizers')."""
    words = _GLOSS.sub(" ", text).rstrip("?.! ").split()  # less 'code (code generation)'
    keys = [w.strip(",;").casefold() for w in words]
    if keys.count("or") != 1:
        return ()
    kept = {w.casefold() for w in topic_of(text).split()}
    at = end = start = keys.index("or")
    instance = at + 1 < len(keys) and keys[at + 1] in INSTANCE_LEADS  # 'or other ...'
    end += instance
    while end + 1 < len(keys) and keys[end + 1] in kept:
        end += 1
    while start > 0 and keys[start - 1] in kept:
        start -= 1
    right = keys[at + 1 + instance : end + 1]
    if not right or start == at:
        return ()
    groups: list[list[str]] = [[]]
    for word, key in zip(words[start:at], keys[start:at], strict=True):
        groups[-1].append(key)
        if word.endswith(","):
            groups.append([])
    groups = [g for g in groups if g]
    size = len(groups[-1]) if len(groups) > 1 else 1
    prefix = keys[: start + len(groups[0]) - size]
    items = [groups[0][-size:], *groups[1:], right]
    if len(right) > 1 and not instance and all(len(i) == 1 for i in items[:-1]):
        items = [[*i, right[-1]] for i in items[:-1]] + [right]
    found = [topic_of(" ".join([*prefix, *i, *keys[end + 1 :]])) for i in items]
    return tuple(dict.fromkeys(found)) if len(set(found)) > 1 else ()


def comparison_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(the things compared, the columns asked, the topic of a set): 'compare GTO and
    the n-draft paper' -> (('GTO', 'the n-draft paper'), DEFAULT_COLUMNS, ''); 'compare
    the papers on bilevel optimization: method and results' -> ((), ('method', 'key
    result'), 'bilevel optimization')."""
    body, _, asked = text.partition(":")
    words = body.split()
    lead = _compare_lead(words)
    if lead:  # 'compare the datasets of X and Y'
        cols, words = lead
        asked = f"{asked} {' '.join(cols)} "
        words = ["compare", *words]
    body = " ".join(words)
    trail = next(
        (
            m
            for m in _COLUMN_LEADS.finditer(body)
            if body[m.start - 1 : m.start].isspace() and body[m.end : m.end + 1].isspace()
        ),
        None,
    )
    if trail and body[trail.end :].strip():  # 'compare X and Y in terms of speed'
        asked, body = f"{asked} {body[trail.end :].strip()}", body[: trail.start].strip()
    columns = _columns_in(asked) or DEFAULT_COLUMNS
    pair = _compared_pair(body.split())
    if pair and not _names_a_set(pair[0]):
        return pair, columns, ""
    return (), columns, topic_of(body)


def _compare_lead(words: list[str]) -> tuple[list[str], list[str]] | None:
    """'compare the datasets of X and Y' -> (['datasets'], ['X', 'and', 'Y']): the columns
    named before an 'of' (up to six words) and what follows it; None when none are."""
    i = 1 if words[:1] and words[0].casefold() == "please" else 0
    if len(words) < i + 2 or words[i].casefold() != "compare":
        return None
    i += 1
    if words[i].casefold() in COLUMN_DETERMINERS:
        i += 1
    for k in range(i, min(i + 7, len(words))):
        if words[k].casefold() == "of" and k + 1 < len(words):
            cols = words[i:k]
            return (cols, words[k + 1 :]) if cols and _columns_in(" ".join(cols)) else None
        if hyphen_words(words[k]) != [words[k]]:
            return None
    return None


def _compared_pair(words: list[str]) -> tuple[str, str] | None:
    """'compare GTO and DeMo?' -> ('GTO', 'DeMo'); 'GTO vs DeMo' -> ('GTO', 'DeMo')."""
    lead = _COMPARE_LEADS.match(" ".join(words))
    found = None
    if lead:
        start = len(lead.phrase.split())
        if " ".join(words[:start]).casefold() == lead.phrase:  # whole words: not 'compare,'
            found = _split_at(words, start, COMPARE_SEPARATORS)
    found = found or _split_at(words, 0, VERSUS)
    if not found:
        return None
    a, b = found
    k = 1 if len(a) > 1 and a[0].casefold() == "please" else 0
    if len(a) > k + 1 and a[k].casefold() == "compare":  # 'compare X vs Y'
        a = a[k + 1 :]
    return " ".join(a), _clean_end(" ".join(b))


def _split_at(
    words: list[str], start: int, separators: frozenset[str]
) -> tuple[list[str], list[str]] | None:
    """The words from `start` cut at the first separator with words on both sides."""
    for j in range(start + 1, len(words) - 1):
        if words[j].casefold() in separators:
            return words[start:j], words[j + 1 :]
    return None


def _clean_end(text: str) -> str:
    """'DeMo?' -> 'DeMo': the marks that end a question, and the space before them."""
    return text.rstrip("?.!").rstrip() or text


def _names_a_set(text: str) -> bool:
    """'the papers', 'all these methods', 'the speculative decoding papers': a set of
    papers, not one thing (a determiner, then up to three words, then a paper noun)."""
    toks = tokens(text.strip())
    if not toks:
        return False
    if toks[0].key in SET_NOUNS and toks[0].key.startswith("paper"):
        return True
    if toks[0].key not in SET_DETERMINERS:
        return False
    skipped = 0
    for token in toks[1:]:
        if token.text == "-":
            continue
        if not token.is_word:
            return False
        if token.key in SET_NOUNS:
            return True
        skipped += 1
        if skipped > 3:
            return False
    return False


def _columns_in(text: str) -> tuple[str, ...]:
    """The table columns a text asks for: 'method and results' -> ('method', 'key result')."""
    words = _words(text)
    return tuple(name for name, asking in COLUMN_WORDS.items() if asking & words)


def _asks_gap(text: str, subject: str) -> bool:
    """'which problem does DeMo solve', 'what's the motivation for BoRA', 'what is the main
    limitation of SAM': the gap a paper closes is asked for. A definition (its `subject`
    read) asks it when the subject's first or second word is one of PROBLEM_NOUNS with a
    preposition after it: 'the wahba problem' is a thing to define."""
    if not subject:
        return _asks_for(text, PROBLEM_NOUNS)
    words = subject.casefold().split()
    return any(
        w in PROBLEM_NOUNS and i + 1 < len(words) and words[i + 1] in PREPOSITIONS
        for i, w in enumerate(words[:2])
    )


# The words a question that asks a paper to describe itself may hold beside one of its own
# ('how does neuclip work', 'what's the main finding'), as stems.
_DESCRIBED_STEMS = content_words(
    " ".join(METHOD_NOUNS | FINDING_NOUNS | MAIN_WORDS | FINDING_VERBS | {"work", "works"})
)


def _asks_which_thing(text: str) -> bool:
    """'which instruments did they try it on', 'what llm does it use': 'which' or 'what',
    one or two words naming a kind of thing (no paper: 'which paper uses DPO' asks of the
    collection), then a verb that asks what the paper did with it: a thing to be named,
    whatever its kind (lexicon's ENTITY_NOUNS lists the kinds asked without such a verb)."""
    if asks_bare_kind(text):
        return True
    said = _said(text)
    if len(said) < 3 or said[0] not in WHICH:
        return False
    for width in (1, 2):
        kind = said[1 : 1 + width]
        if len(said) <= 1 + width or said[1 + width] not in HOW_VERBS | {"has", "have", "had"}:
            continue
        return all(content_words(w) and w not in SET_NOUNS | SCOPE_PAPER_NOUNS for w in kind)
    return False


def asks_bare_kind(text: str) -> bool:
    """'which instruments?', 'what loss function': 'which' or 'what' and one or two words
    naming a kind of thing (no method or acronym), nothing else. Alone it asks of nothing;
    in a conversation, for a thing of that kind in the paper in focus
    (rag/question/followup.py)."""
    said = _said(text)
    return (
        len(said) in (2, 3)
        and said[0] in WHICH
        and all(content_words(w) and w not in SET_NOUNS | SCOPE_PAPER_NOUNS for w in said[1:])
        and all(map(is_everyday, said[1:]))  # 'what lora' asks what LoRA is
    )


def _asks_described(text: str) -> str | None:
    """What a question asks one paper to describe rather than name or number: 'method' for
    how it works ('how does it work', 'so what's their fix', 'the key idea?'), 'finding'
    for what it found ('what's the main finding', 'what do they prove', 'why does it
    work'); None otherwise,
    and for a question with more than one word of its own, whose words the answer's
    sentences are chosen by."""
    if len(content_words(text) - _DESCRIBED_STEMS) > 1:
        return None  # 'how do they model the non-stationarity' asks of its own words
    if _asks_for(text, FINDING_NOUNS):
        return "finding"
    said = _said(text)
    if RANKING_WORDS.intersection(said):  # 'which one is fastest': by what each found
        return "finding"
    if _asks_for(text, METHOD_NOUNS):
        return "method"
    if len(said) > 1 and said[0] == "how" and said[1] in HOW_VERBS:
        return "method"
    if len(said) > 1 and said[0] == "why" and said[1] in HOW_VERBS:
        return "finding"  # 'why does it work': what the paper found explains it
    asks_done = len(said) > 2 and said[0] in WHICH and said[1] in ("do", "does", "did")
    if asks_done and any(word in FINDING_VERBS for word in said[2:5]):
        return "finding"
    return None


def overview_rest(text: str) -> str | None:
    """What a request for the gist of papers is about: 'summarize the rlhf papers' -> 'rlhf
    papers', 'rlhf papers summary' -> 'rlhf papers', 'tl;dr' and 'tell me more' -> ''
    (the papers just shown); None when no overview is asked (lexicon's OVERVIEW): 'llms
    that summarize documents' asks for papers on summarizing."""
    found = _OVERVIEW.search(text)
    if found is None:
        return None
    before, after = text[: found.start], text[found.end :]
    if all(w.casefold() in OVERVIEW_LEADS for w in hyphen_words(before)):
        words = hyphen_words(after)
        while words and words[0].casefold() in _OVERVIEW_OF:
            words = words[1:]  # 'of', 'about', 'on'
        while words and words[-1].casefold() in OVERVIEW_LEADS:
            words = words[:-1]  # 'please'
        return (
            after[after.find(words[0]) : after.rfind(words[-1]) + len(words[-1])] if words else ""
        )
    if not after.strip(" ?.!,"):
        return before.strip(" ,")
    return None


_OVERVIEW_OF = PREPOSITIONS | {"about", "everything"}


def _said(text: str) -> list[str]:
    """The words of a question, folded, from the first after its lead-ins ('so', 'ok')."""
    said = [t.key for t in tokens(text) if t.key[:1].isalpha()]
    while said and said[0] in LEAD_INS:
        said = said[1:]
    return said


def _names_nothing(subject: str) -> bool:
    """Tell whether a definition's subject names nothing beyond what is asked of a paper:
    'main finding', 'their key idea', 'explanation'."""
    return content_words(subject) <= _DESCRIBED_STEMS


def _asks_for(text: str, nouns: frozenset[str]) -> bool:
    """'which datasets did it use', 'what kind of benchmark ...': 'which' or 'what', then
    one of `nouns` within a few words of it (lexicon's ENTITY_NOUNS: a thing to be named;
    PROBLEM_NOUNS: the gap a paper closes), in one clause; or nothing but such nouns
    ('datasets?', 'limitations', as a follow-up is typed)."""
    toks = tokens(text)
    said = [t.key for t in toks if t.key[:1].isalpha()]
    if said and all(key in nouns for key in said):
        return True
    for i, token in enumerate(toks):
        if token.key not in WHICH:
            continue
        for later in toks[i + 1 :]:
            if later.text == "?" or later.start - token.end > ENTITY_REACH:
                break
            if later.key in nouns:
                return True
    return False


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in hyphen_words(text))


_KEYWORD_BREAKS = str.maketrans(dict.fromkeys("?!.,;:()\"'", " "))


def keywords_of(text: str) -> str:
    """'which papers use DCT?' -> 'DCT' (see FRAME)."""
    kept = [w for w in text.translate(_KEYWORD_BREAKS).split() if w.casefold() not in FRAME]
    return " ".join(kept) or text


_DETAIL_KINDS = (
    ENTITY_NOUNS | FIGURE_NOUNS | PROBLEM_NOUNS | DETAIL_WORDS | METHOD_NOUNS | FINDING_NOUNS
)


def _a_name_alone(text: str) -> bool:
    """Tell whether a question is one name and nothing else, as typed into a search box:
    'neuclip', 'GTO?', 'TI-DPO' (a word English rarely writes, or one written as a name);
    not 'clip' nor 'demo', which English writes, unless typed as a name ('DeMo')."""
    words = text.strip(" ?.!").split()
    if len(words) != 1:
        return False
    word = words[0]
    if word.casefold() in _DETAIL_KINDS:  # 'datasets?' asks the paper in focus
        return False
    parts = [part for part in word.casefold().split("-") if part]
    return bool(NAME.fullmatch(word)) or not any(map(is_everyday, parts))


def subject_of(text: str) -> str:
    """'What is AltGDA?' -> 'AltGDA'; 'explain the F2SA-p method' -> 'F2SA-p'."""
    match = _DEFINITION.match(text)
    rest = text[match.end :] if match else text
    rest = rest.rstrip("?.!").strip()
    first, _, after = rest.partition(" ")
    if first.casefold() in ARTICLES and after:
        rest = after.lstrip()
    for tail in SUBJECT_TAILS:
        cut = len(rest) - len(tail)
        if cut > 0 and rest[cut - 1].isspace() and rest[cut:].casefold() == tail:
            rest = rest[:cut]
            break
    return rest.strip()


def distinctive_terms(text: str) -> tuple[str, ...]:
    """Names, quoted phrases and numbers: 'how fast is F2SA-p vs "exact penalty"?' ->
    ('F2SA-p', 'exact penalty'). A plural 's' ('LLMs') and a descriptive suffix
    ('DCT-based') are dropped, so the name itself is what must occur in an abstract."""
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(text)]
    for name in NAME.findall(text):
        core = name.rstrip(".-")
        head, _, suffix = core.rpartition("-")
        if head and suffix in NAME_SUFFIXES:
            core = head
        if core.endswith("s") and core[:-1].isupper() and len(core) > 2:
            core = core[:-1]
        if core.casefold() not in FRAME and not _DIMENSION.fullmatch(core):  # 'What' in capitals
            found.append(core)
    found += [n for n in _NUMBER.findall(text) if not is_year(n)]
    return tuple(dict.fromkeys(t for t in found if t))


def number_spellings(term: str) -> tuple[str, ...]:
    """The other ways abstracts write a round number: '10,000' -> ('10000', '10k',
    '10K'); '10k' -> ('10000', '10,000', '10K'); () for anything else."""
    if _WHOLE.fullmatch(term):
        value = int(term.replace(",", ""))
    elif (rounded := _ROUNDED.fullmatch(term)) is not None:
        exact = float(rounded.group(1)) * _UNITS[rounded.group(2)]
        if not exact.is_integer():
            return ()
        value = int(exact)
    else:
        return ()
    forms = [str(value), f"{value:,}"]
    for unit, size in (("k", 1_000), ("K", 1_000), ("M", 1_000_000)):
        if size <= value < size * 1_000 and value % size == 0:
            forms.append(f"{value // size}{unit}")
    return tuple(f for f in dict.fromkeys(forms) if f != term)


def _lower_words(text: str) -> list[str]:
    """The words of a text typed in lower case, 3 to 16 letters or digits, a letter
    first: 'dpo variants for Qwen-based kv-cache' -> ['dpo', 'variants', 'for', 'based',
    'kv-cache'] (a hyphenated word whole when it is all lower case, else its parts)."""
    found: list[str] = []
    for word in hyphen_words(text):
        parts = [word] if _lower(word) and len(word) <= 16 else word.split("-")
        found += [p for p in parts if _lower(p) and 3 <= len(p) <= 16]
    return found


def _lower(word: str) -> bool:
    return word[:1].isalpha() and all(c in _LOWER_CHARS for c in word) and not word.endswith("-")


_LOWER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def with_acronyms(query: Query, spellings: Mapping[str, str]) -> Query:
    """Terms for acronyms typed in lower case: 'dpo variants' over an index whose abstracts
    define DPO -> terms ('DPO',), as if typed 'DPO variants'. Only words rare in English
    ('dpo', 'lora', 'grpo'; not 'demo', 'map' or 'clip') and only acronyms the abstracts
    spell out ("Direct Preference Optimization (DPO)")."""
    have = {t.casefold() for t in query.terms}
    found = [
        spellings[word]
        for word in dict.fromkeys(_lower_words(query.text))
        if word in spellings and word not in have and not is_everyday(word)
    ]
    return replace(query, terms=(*query.terms, *found)) if found else query


def _name_tokens(text: str) -> list[str]:
    """Words written as names, a capital after their first letter: 'DeMo', 'GTO', 'LoRA',
    'DeMo-like' (with the parts after it), 'LoRA' of 'pre-LoRA'; not 'Demo-Driven'."""
    found: list[str] = []
    for word in hyphen_words(text):
        parts = word.split("-")
        for i, part in enumerate(parts):
            if _written_as_name(part):
                tail = list(itertools.takewhile(_ascii_alnum, parts[i + 1 :]))
                found.append("-".join([part, *tail]))
                break
    return found


def _ascii_alnum(part: str) -> bool:
    return part.isascii() and part.isalnum()


def _written_as_name(part: str) -> bool:
    return _ascii_alnum(part) and part[0].isalpha() and any(c.isupper() for c in part[1:])


def named_by_best_hit(query: Query, best: str, others: Iterable[str] = ()) -> Query:
    """A word typed in lower case that the best hit writes as a name, and none of the
    `others` (the rest of the hits) does, is read as that name: 'demo optimizer' over a
    best hit that writes 'DeMo' -> terms ('DeMo',), as if typed 'DeMo optimizer'. Common
    words ('demo', 'clip') are only read so here, where the retrieval has already put
    the one paper naming them first (`with_acronyms` keeps to words rare in English, as
    it decides before any search); a name other hits write too ('GPU', 'RLHF') names no
    paper in particular and stays a word. Written means with its capitals: a
    'Demo-Driven' benchmark does not write 'DeMo'. Without it (measured 2026-12-07 over
    natural, dev3, dev6, dev12, zh, zh-heldout, test, test3, test6, test7) 15 answers
    change and no refusal: 'jtfs', 'otlp', 'what does mret optimize for' and 'how big were
    the demo models' are answered as lists of papers ('Relevant findings') instead of
    from the one paper they name; the other way, 'demo optimizer' would quote DeMo's
    contribution sentence instead of its results."""
    names: dict[str, str] = {}
    for token in _name_tokens(best):
        names.setdefault(token.casefold(), token)
    have = {t.casefold() for t in query.terms}
    typed = [
        names[word]
        for word in dict.fromkeys(_lower_words(query.text))
        if word in names and word not in have and word not in STOP
    ]
    rest = [set(hyphen_words(text)) for text in others]
    found = [name for name in typed if not any(name in words for words in rest)]
    return replace(query, terms=(*query.terms, *found)) if found else query


# 'papers by yoshua bengio', 'work written by Hinton on ...': the words after 'by' that may
# name an author, looked up in the index's records (`Assistant.plan`).
_BY_AUTHOR = re.compile(
    r"\b(?:papers?|works?|articles?|publications?|anything|stuff|written|authored|"
    r"co-?authored)\s+(by\s+((?:[^\W\d_][\w.'\-]*\s*){1,4}))",
    re.I,
)


def author_candidates(text: str) -> list[tuple[str, str]]:
    """The names a 'papers by ...' may give, longest first, each with the words to cut
    from the text when it names an author: 'papers by yoshua bengio on gflownets' ->
    [('yoshua bengio on gflownets', 'by yoshua bengio on gflownets'), ..., ('yoshua',
    'by yoshua')]; [] when the question asks for no one's papers."""
    found = _BY_AUTHOR.search(text)
    if found is None:
        return []
    words = found.group(2).split()
    return [(" ".join(words[:n]), "by " + " ".join(words[:n])) for n in range(len(words), 0, -1)]


def refers_back(question: str) -> bool:
    """Tell whether a question leans on an earlier turn: 'how does it work?', 'the second
    one?', 'what about vision?'. Length alone never decides: 'dct llm compression' is new."""
    if _WHAT_ABOUT.match(question):
        return True
    generic = [(m.first, m.stop) for m in _GENERIC_IT.finditer(question)]
    return any(
        not any(a < m.stop and m.first < b for a, b in generic)
        for m in _REFERS_BACK.finditer(question)
    )


def ordinal_of(question: str) -> int | None:
    """'the second one' -> 2, '[3]' -> 3, 'the last paper' -> -1; None when none is named."""
    match = _ORDINAL_REF.search(question)
    if not match:
        return None
    return match.value if match.value is not None else int(match.slots[0])


def language_of(question: str) -> str:
    """'GTO 是什么方法？' -> 'zh', 'kv cache compression' -> 'en' (rag/question/language.py)."""
    return language.detect(question)


# --- scope ------------------------------------------------------------------------------


def venue_key(name: str) -> str:
    """The key venues are compared under: 'NeurIPS' -> 'nips', 'ICLR' -> 'iclr'."""
    key = " ".join(name.casefold().split())
    return VENUE_ALIASES.get(key, key)


def status_matches(stored: str, wanted: str) -> bool:
    """'Oral' matches 'oral'; 'Poster' matches 'accepted'; 'Reject' does not."""
    stored_key, wanted_key = stored.casefold().strip(), wanted.casefold().strip()
    wanted_key = STATUS_WORDS.get(wanted_key, wanted_key)
    if wanted_key == "workshop":
        return "workshop" in stored_key
    if wanted_key == "accepted":
        return stored_key not in REJECTED and "workshop" not in stored_key
    return stored_key == wanted_key


def read_scope(question: str, vocabulary: Vocabulary) -> tuple[Filters, tuple[str, ...], str]:
    """The venue, years and status a question names, the words they were read from, and
    the question without them. Only values the index holds (or venues it could hold) are
    read: 'ICLR 2026' on an index without 2026 papers is still read, so the caller can say
    'this index holds no ICLR 2026 papers' instead of searching everything."""
    spans: list[tuple[int, int]] = []
    venue = _read_venue(question, vocabulary, spans)
    year, year_min, year_max = _read_years(question, venue is not None, spans)
    status = _read_status(question, venue is not None, spans)
    area = _read_area(question, vocabulary, spans)
    scope = Filters(
        venue=venue, year=year, year_min=year_min, year_max=year_max, status=status, area=area
    )
    text = _cut(question, spans) if scope.active else question
    words = tuple(question[a:b] for a, b in sorted(spans))
    return scope, words, text


def _venue_names(vocabulary: Vocabulary) -> dict[str, str]:
    """Typed form (casefolded) -> the stored spelling to filter on."""
    stored = {venue_key(v): v for v in vocabulary.venues}
    names = dict(stored)
    for alias, key in VENUE_ALIASES.items():
        names.setdefault(alias, stored.get(key, "NeurIPS" if key == "nips" else alias))
    for known in KNOWN_VENUES:
        names.setdefault(known, stored.get(known, known.upper()))
    return names


@lru_cache(maxsize=64)
def _venue_phrases(venues: frozenset[str]) -> Phrases[str]:
    """The venues a question may name (typed form -> stored spelling), as phrases."""
    return Phrases(_venue_names(Vocabulary(venues=venues)))


def _read_venue(question: str, vocabulary: Vocabulary, spans: list[tuple[int, int]]) -> str | None:
    toks = tokens(question)
    for match in _venue_phrases(vocabulary.venues).finditer(question):
        if _hyphen_beside(toks, match.first, match.stop):  # 'ICLR-style' names no venue
            continue
        end = match.end
        if match.stop + 1 < len(toks) and _possessive(toks, match.stop):  # "ICLR's"
            end = toks[match.stop + 1].end
        if match.phrase in AMBIGUOUS_VENUES and _year_after(question, end) is None:
            continue
        spans.append((match.start, end))
        return match.value
    return None


def _hyphen_beside(toks: tuple[Token, ...], first: int, stop: int) -> bool:
    """Tell whether a hyphen is glued to either side of tokens first..stop."""
    before = first > 0 and toks[first - 1].text == "-" and toks[first - 1].end == toks[first].start
    after = stop < len(toks) and toks[stop].text == "-" and toks[stop].start == toks[stop - 1].end
    return before or after


def _possessive(toks: tuple[Token, ...], i: int) -> bool:
    """An apostrophe and an 's' glued on at token i: "ICLR's", "ICLR’s"."""
    mark, s = toks[i], toks[i + 1]
    glued = mark.start == toks[i - 1].end and s.start == mark.end
    return glued and mark.text in "'’" and s.text == "s"


def _year_after(question: str, at: int) -> tuple[int, int] | None:
    """The year right after offset `at` (spaces aside): ' 2026', "'18", '’18' -> (the year,
    where it ends); None when none follows."""
    toks = [t for t in tokens(question) if t.start >= at]
    if not toks or question[at : toks[0].start].strip():
        return None
    if toks[0].text in "'’" and len(toks) > 1 and toks[1].start == toks[0].end:
        toks = toks[1:]
    digits = toks[0].text
    if is_year(digits):
        return int(digits), toks[0].end
    if len(digits) == 2 and digits.isdecimal():
        return 2000 + int(digits), toks[0].end
    return None


def _read_years(
    question: str, has_venue: bool, spans: list[tuple[int, int]]
) -> tuple[int | None, int | None, int | None]:
    """'2026' next to a venue, 'in/from 2018', 'since 2020', 'before 2015', '2016-2018'."""
    for kind, phrases in _YEARS.items():  # a range first, then a first or last year, a year
        match = phrases.search(question)
        if not match:
            continue
        years = [int(y) for y in match.slots]
        if kind == "range":
            spans.append((match.start, match.end))
            low, high = sorted(years)
            return None, low, high
        if kind == "min":
            spans.append((match.start, match.end))
            return None, years[0] + match.value, None
        if kind == "max":
            spans.append((match.start, match.end))
            return None, None, years[0] + match.value
        if has_venue or any(t.key in SCOPE_PAPER_NOUNS for t in tokens(question)):
            spans.append((match.start, match.end))
            return years[0], None, None  # 'papers in 2017', not 'the world cup in 2014'
    if has_venue:  # 'ICLR 2026', "ICLR'18", 'ICLR 2016 or later'
        venue_end = max(b for _, b in spans)
        after = _year_after(question, venue_end)
        if after:
            spans.append((venue_end, after[1]))
            return after[0], None, None
    return None, None, None


def _read_status(question: str, has_venue: bool, spans: list[tuple[int, int]]) -> str | None:
    """'orals', 'spotlight papers', 'accepted at', 'NeurIPS oral ...'; not 'oral cancer'."""
    toks = tokens(question)
    for i, token in enumerate(toks):
        if token.key not in STATUS_WORDS:
            continue
        after = toks[i + 1] if i + 1 < len(toks) else None
        followed = after is not None and after.start > token.end and after.key in STATUS_FOLLOWERS
        after_venue = has_venue and 0 <= token.start - max(b for _, b in spans) <= 2
        if token.key in STATUS_ALONE or followed or after_venue:
            spans.append((token.start, token.end))
            return STATUS_WORDS[token.key].capitalize()
    return None


@lru_cache(maxsize=64)
def _area_phrases(areas: frozenset[str]) -> Phrases[str]:
    """'in the reinforcement learning area', 'primary area: optimization' -> the area."""
    return Phrases({p: area for area in areas for p in phrases_of(AREA_LEADS, area, AREA_TAILS)})


def _read_area(question: str, vocabulary: Vocabulary, spans: list[tuple[int, int]]) -> str | None:
    """An area only when named as one: 'in the reinforcement learning area / track'; the
    longest area named wins."""
    found = list(_area_phrases(vocabulary.areas).finditer(question))
    if not found:
        return None
    match = max(found, key=lambda m: len(m.value))
    spans.append((match.start, match.end))
    return match.value


def _cut(question: str, spans: Iterable[tuple[int, int]]) -> str:
    """The question without the scope words: 'which ICLR 2026 papers use DCT?' -> 'which
    papers use DCT?'. A dangling 'at' / 'in' / 'from' left behind goes too."""
    text = question
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    toks = tokens(text)
    for match in reversed(list(_DANGLING.finditer(text))):  # a word left before the end
        after = toks[match.stop] if match.stop < len(toks) else None
        if (after is None or after.text in "?.!") and text[match.end : match.end + 1].isspace():
            text = text[: match.start] + " " + text[after.start if after else len(text) :]
    text = " ".join(text.split())
    for mark in "?.!,":
        text = text.replace(f" {mark}", mark)
    return text.strip() or question

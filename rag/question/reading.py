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
It reads; it never searches. The language comes from rag/question/language.py; a question in
another language is put into English by rag/question/translate.py and that English is read here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from rag.lexicon import (
    AGGREGATE_FRAME,
    AMBIGUOUS_VENUES,
    COLUMN_WORDS,
    FRAME,
    GROUP_LEADS,
    GROUP_NOUNS,
    KNOWN_VENUES,
    NAMED_KINDS,
    NOT_COUNTED,
    ORDINALS,
    PLURAL_NOUNS,
    REJECTED,
    STATUS_WORDS,
    STOP,
    VENUE_ALIASES,
)
from rag.question import language
from rag.question.intent import intent_of
from rag.text import content_words, mentions
from rag.types import Filters, Notice

# --- patterns (the words they use: rag/lexicon.py) -----------------------------------------

_PAPER_NOUN = r"(?:papers?|works?|submissions?|articles?|presentations?|talks?|track)"

# 'what is X', 'explain X': the words before the subject a definition asks about.
_DEFINITION = re.compile(
    r"^\s*(?:so\s+|and\s+|ok\s+)?(?:what(?:'s| is| are| was)|whats|what does|define|"
    r"definition of|explain|describe|tell me about|how does|how do|meaning of|"
    r"what do you know about|who is|what kind of \w+ is)\b",
    re.I,
)
_ENTITY = re.compile(
    r"\b(which|what)\b[^?]{0,40}?\b(datasets?|benchmarks?|models?|architectures?|"
    r"environments?|tasks?|baselines?|languages?|metrics?|algorithms?|procedures?|"
    r"optimi[sz]ers?|settings?|methods?|domains?|games?|problems?)\b",
    re.I,
)
# A count asked per group: 'per year', 'by venue', 'each primary area', 'year by year',
# 'orals vs posters' -> the field (the words: rag/lexicon.py's GROUP_LEADS, GROUP_NOUNS).
_GROUP_BY = re.compile(
    rf"\b(?:{'|'.join(GROUP_LEADS)})\s+(?:primary\s+|topic\s+)?({'|'.join(GROUP_NOUNS)})\b"
    r"|\b(?:a|over the)\s+(years?)\b|\b(year) by year\b|\b(orals?|spotlights?|posters?)\s+"
    r"(?:vs\.?|versus|and|or|against)\s+(?:orals?|spotlights?|posters?)\b",
    re.I,
)
DEFAULT_COLUMNS = ("problem", "method", "key result")
# 'compare X and Y' / 'X vs Y' / 'X with Y': the two things compared.
_COMPARED = re.compile(
    r"^\s*(?:please\s+)?(?:compare|comparison of|comparison between|difference between|"
    r"differences between|contrast)\s+(?P<a>.+?)\s+(?:and|with|vs\.?|versus|to|against)\s+"
    r"(?P<b>.+?)\s*[?.!]*$|^\s*(?P<c>.+?)\s+(?:vs\.?|versus)\s+(?P<d>.+?)\s*[?.!]*$",
    re.I,
)
_SET_WORDS = re.compile(
    r"^(?:the|all|these|those)\s+(?:\w+[\s-]+){0,3}?(?:papers?|works?|methods?|approaches)\b"
    r"|^(?:the\s+)?papers?\b",
    re.I,
)

# Details an abstract record never or rarely holds.
ASKS_AUTHORS = re.compile(
    r"\b(who (wrote|authored|are the authors)|authors?|affiliat\w+|written by|which "
    r"(university|universities|company|companies|lab|labs|institution|institutions|group))\b",
    re.I,
)
ASKS_CODE = re.compile(
    r"\b(github|code (link|repository|url|base)|source code|repo(sitory)?|codebase|"
    r"(released|open[- ]sourced?|public|available) code|code (is |been )?(released|available|"
    r"public|open[- ]sourced?)|where (is|can i (find|get)) (the |their )?code|"
    r"(release|publish)(d|es)? (the |their )?code)\b",
    re.I,
)

# Referring back to an earlier turn. A short question alone is never a follow-up.
_REFERS_BACK = re.compile(
    r"\b(it|its|it's|they|them|their|theirs|(this|that|these|those|the|said) (paper|papers|"
    r"method|methods|approach|approaches|model|models|work|works|one|ones|study|algorithm|"
    r"framework|technique|authors?|results?|first|second|third|fourth|fifth|last|latter|"
    r"former|above|same)|the (first|second|third|fourth|fifth|last|latter|former)|"
    r"the above|above|same|(number|paper|source) \d)\b|\[\d+\]|\btell me more\b",
    re.I,
)
_WHAT_ABOUT = re.compile(
    r"^\s*(and |but |ok |so )?(what|how) about\b|^\s*and (for|in|on|with)\b", re.I
)
# Pronouns that do not point back: "is it possible", "it is known that", "they say".
_GENERIC_IT = re.compile(
    r"\b(is it (possible|true|known|feasible)|it is (known|possible|common))\b", re.I
)
_ORDINAL_REF = re.compile(
    r"\bthe (first|second|third|fourth|fifth|last|latter)\b(?: (?:one|paper|method|work|source))?"
    r"|\[(\d+)\]|\b(?:paper|source|number) (\d)\b",
    re.I,
)

# A name: capitals or digits inside a word ('AltGDA', 'F2SA-p', 'KV', 'GPT-4', 'LLMs').
NAME = re.compile(r"\b[A-Za-z]*(?:[A-Z][A-Za-z]*[A-Z0-9]|[a-z][A-Z]|\d[A-Za-z])[\w\-.]*")
# 'how many [more] GPUs did ...': the counted noun phrase, up to two words before a verb.
_COUNTED = re.compile(
    r"\bhow many\s+(?:(?:more|extra|additional|different|distinct|separate)\s+)?"
    r"((?:(?!(?:do|does|did|is|are|was|were|can|could|has|have|had|will|would|should|in|"
    r"on|for|of|to|with|by|at|from|per|it|they|the|a|an)\b)[A-Za-z][\w\-]*\s*){1,2})",
    re.I,
)
# 'which dating platform did MRet use', 'what GPU does DeMo train on': the thing asked to
# be named, the head of the noun phrase before a verb (not 'which papers ...').
_NAMED = re.compile(
    r"\b(?:which|what)\s+(?:[a-z][\w\-]*\s+){0,2}?([a-z][\w\-]*)\s+"
    r"(?:do|does|did|is|are|was|were|has|have|had|can|could|will|would)\b",
    re.I,
)
_COUNTING_STEMS = content_words("how many total count counted number altogether overall")
_QUOTED = re.compile(r"[\"“”']([^\"“”']{3,60})[\"“”']")
_NUMBER = re.compile(r"(?<![\w.\-])\d+(?:\.\d+)?(?:%|x\b)?")  # not the 3 of 'EAGLE-3'
_YEAR = r"(?:19[89]\d|20[0-4]\d)"


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
    wants: str | None = None  # what an answer sentence must hold: "number", "entity" or None
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

    @property
    def english(self) -> str:
        """The question in English: as typed, or its translation."""
        return self.translated or self.question

    def spellings(self, term: str) -> tuple[str, ...]:
        """A term and how the abstracts spell it out: 'DCT', 'discrete cosine transform'."""
        return (term, *self.aliases.get(term, ()))

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

    @property
    def changes_topic(self) -> bool:
        """'what about vision models?', 'and for diffusion?': a follow-up after something
        new, not about the papers just shown."""
        return bool(_WHAT_ABOUT.search(self.english))

    @property
    def asks_authors(self) -> bool:
        """Tell whether authors or affiliations are asked for."""
        return bool(ASKS_AUTHORS.search(self.english))

    @property
    def asks_code(self) -> bool:
        """Tell whether a code link is asked for."""
        return bool(ASKS_CODE.search(self.english))

    @property
    def asks_count_of_things(self) -> bool:
        """'how many layers ...': a spelled-out count ('three') answers it."""
        return self.wants == "number" and bool(re.search(r"\bhow many\b", self.english, re.I))

    @property
    def name_asked(self) -> str:
        """What a 'which X ...' question of one paper asks to be named: 'which dating
        platform did MRet use?' -> 'platform', 'what GPU does DeMo train on?' -> 'GPU';
        '' for papers asked for, a count, or a kind of thing without proper names."""
        if self.plural or self.wants == "number" or self.intent == "definition":
            return ""
        if self.translation in ("dictionary", "cognates"):  # a gloss keeps words, not order
            after = re.search(r"\bwhich\b(.*)", self.english, re.I)
            words = re.findall(r"[A-Za-z]+", after.group(1)) if after else []
            return next((w for w in words if w.casefold() in NAMED_KINDS), "")
        match = _NAMED.search(self.english)
        return match.group(1) if match and match.group(1).casefold() in NAMED_KINDS else ""

    @property
    def counts_without_topic(self) -> bool:
        """'how many of them?', 'how many are there', 'how many in total': a count that
        names nothing to count, so in a conversation it counts the previous answer's
        papers."""
        if not re.search(r"\bhow many\b", self.english, re.I):
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
        match = _COUNTED.search(self.english)
        if not match:
            return ""
        words = match.group(1).split()
        if words[0].casefold() in NOT_COUNTED:
            return ""
        named = {t.casefold() for t in self.terms}
        if len(words) > 1 and words[1].casefold() in named:
            return words[0]
        return words[-1]


def read(question: str, vocabulary: Vocabulary | None = None) -> Query:
    """Read a question: 'which ICLR 2026 papers use DCT?' -> Query(text='which papers use
    DCT?', read_scope=Filters(venue='ICLR', year=2026), intent='papers', terms=('DCT',))."""
    question = " ".join(question.split())
    group_by, ungrouped = grouping_of(question)
    scope, spans, text = read_scope(ungrouped, vocabulary or Vocabulary())
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
    if intent == "figure":
        wants = "number"
    elif _ENTITY.search(text) and not plural and intent != "definition":
        wants = "entity"
    refers = refers_back(question)
    subject = subject_of(text) if intent == "definition" else ""
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
        ordinal=ordinal_of(question) if refers else None,
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
    noun, _, _, statuses = match.groups()  # a group noun, 'years', 'year', 'orals'
    name = GROUP_NOUNS[noun.casefold()] if noun else "status" if statuses else "year"
    rest = question[: match.start()] + question[match.end() :]
    return name, " ".join(rest.split())


def topic_of(text: str) -> str:
    """What a count or a comparison is about: 'how many papers are about RL for LLM
    reasoning?' -> 'RL LLM reasoning'."""
    kept = [w for w in keywords_of(text).split() if w.casefold() not in AGGREGATE_FRAME]
    return " ".join(kept) or keywords_of(text)


def comparison_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(the things compared, the columns asked, the topic of a set): 'compare GTO and
    the n-draft paper' -> (('GTO', 'the n-draft paper'), DEFAULT_COLUMNS, ''); 'compare
    the papers on bilevel optimization: method and results' -> ((), ('method', 'key
    result'), 'bilevel optimization')."""
    body, _, asked = text.partition(":")
    body = body.strip()
    lead = re.match(
        r"^\s*(?:please\s+)?compare\s+(?:the\s+|their\s+)?(?P<cols>(?:[\w-]+\s+){0,6}?)of\s+",
        body,
        re.I,
    )
    if lead and lead.group("cols") and _columns_in(lead.group("cols")):
        asked = f"{asked} {lead.group('cols')}"  # 'compare the datasets of X and Y'
        body = "compare " + body[lead.end() :]
    trail = re.search(r"\s+(?:in terms of|on their|by their|regarding)\s+(?P<cols>.+)$", body, re.I)
    if trail:
        asked, body = f"{asked} {trail.group('cols')}", body[: trail.start()]
    columns = _columns_in(asked) or DEFAULT_COLUMNS
    match = _COMPARED.match(body)
    if match:
        a, b = (match.group("a"), match.group("b")) if match.group("a") else match.group("c", "d")
        a = re.sub(r"^\s*(?:please\s+)?compare\s+", "", a, flags=re.I)
        if not _SET_WORDS.match(a.strip()):
            return (a.strip(), b.strip()), columns, ""
    return (), columns, topic_of(body)


def _columns_in(text: str) -> tuple[str, ...]:
    """The table columns a text asks for: 'method and results' -> ('method', 'key result')."""
    words = _words(text)
    return tuple(name for name, asking in COLUMN_WORDS.items() if asking & words)


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[\w-]+", text.casefold()))


def keywords_of(text: str) -> str:
    """'which papers use DCT?' -> 'DCT' (see FRAME)."""
    kept = [w for w in re.findall(r"[^\s?!.,;:()\"']+", text) if w.casefold() not in FRAME]
    return " ".join(kept) or text


def subject_of(text: str) -> str:
    """'What is AltGDA?' -> 'AltGDA'; 'explain the F2SA-p method' -> 'F2SA-p'."""
    match = _DEFINITION.search(text)
    rest = text[match.end() :] if match else text
    rest = re.sub(r"[?.!]+$", "", rest).strip()
    rest = re.sub(r"^(?:a|an|the)\s+", "", rest, flags=re.I)
    rest = re.sub(
        r"\s+(?:do|does|work|mean|stand for|method|approach|algorithm|about)$", "", rest, flags=re.I
    )
    return rest.strip()


def distinctive_terms(text: str) -> tuple[str, ...]:
    """Names, quoted phrases and numbers: 'how fast is F2SA-p vs "exact penalty"?' ->
    ('F2SA-p', 'exact penalty'). A plural 's' ('LLMs') and a descriptive suffix
    ('DCT-based') are dropped, so the name itself is what must occur in an abstract."""
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(text)]
    for name in NAME.findall(text):
        core = re.sub(r"-(based|style|like|type|driven|free|aware|guided)$", "", name.rstrip(".-"))
        if core.endswith("s") and core[:-1].isupper() and len(core) > 2:
            core = core[:-1]
        if core.casefold() not in FRAME:  # 'What', 'Which' typed in capitals
            found.append(core)
    found += [n for n in _NUMBER.findall(text) if not re.fullmatch(_YEAR, n)]
    return tuple(dict.fromkeys(t for t in found if t))


_LOWER_WORD = re.compile(r"\b[a-z][a-z0-9\-]{2,15}\b")
RARE_ZIPF = 3.0  # below this wordfreq frequency a word is no everyday English ('dpo' 2.2)


def with_acronyms(query: Query, spellings: Mapping[str, str]) -> Query:
    """Terms for acronyms typed in lower case: 'dpo variants' over an index whose abstracts
    define DPO -> terms ('DPO',), as if typed 'DPO variants'. Only words rare in English
    ('dpo', 'lora', 'grpo'; not 'demo', 'map' or 'clip') and only acronyms the abstracts
    spell out ("Direct Preference Optimization (DPO)")."""
    from wordfreq import zipf_frequency

    have = {t.casefold() for t in query.terms}
    found = [
        spellings[word]
        for word in dict.fromkeys(_LOWER_WORD.findall(query.text))
        if word in spellings and word not in have and zipf_frequency(word, "en") < RARE_ZIPF
    ]
    return replace(query, terms=(*query.terms, *found)) if found else query


# A word written as a name: a capital after its first letter ('DeMo', 'GTO', 'LoRA').
_NAME_TOKEN = re.compile(r"\b[A-Za-z][a-z0-9]*[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*\b")


def named_by_best_hit(query: Query, best: str, others: Iterable[str] = ()) -> Query:
    """A word typed in lower case that the best hit writes as a name, and none of the
    `others` (the rest of the hits) does, is read as that name: 'demo optimizer' over a
    best hit that writes 'DeMo' -> terms ('DeMo',), as if typed 'DeMo optimizer'. Common
    words ('demo', 'clip') are only read so here, where the retrieval has already put
    the one paper naming them first (`with_acronyms` keeps to words rare in English, as
    it decides before any search); a name other hits write too ('GPU', 'RLHF') names no
    paper in particular and stays a word. Written means with its capitals: a
    'Demo-Driven' benchmark does not write 'DeMo'."""
    names: dict[str, str] = {}
    for token in _NAME_TOKEN.findall(best):
        names.setdefault(token.casefold(), token)
    have = {t.casefold() for t in query.terms}
    typed = [
        names[word]
        for word in dict.fromkeys(_LOWER_WORD.findall(query.text))
        if word in names and word not in have and word not in STOP
    ]
    rest = list(others)
    found = [name for name in typed if not any(_writes(text, name) for text in rest)]
    return replace(query, terms=(*query.terms, *found)) if found else query


def _writes(text: str, name: str) -> bool:
    """Tell whether a text writes a name as it is spelled, a whole word: 'DeMo' in 'DeMo
    (i) decouples', not in 'demo' or 'Demo-Driven' or 'DeMo-like'."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def refers_back(question: str) -> bool:
    """Tell whether a question leans on an earlier turn: 'how does it work?', 'the second
    one?', 'what about vision?'. Length alone never decides: 'dct llm compression' is new."""
    if _WHAT_ABOUT.search(question):
        return True
    cleaned = _GENERIC_IT.sub(" ", question)
    return bool(_REFERS_BACK.search(cleaned))


def ordinal_of(question: str) -> int | None:
    """'the second one' -> 2, '[3]' -> 3, 'the last paper' -> -1; None when none is named."""
    match = _ORDINAL_REF.search(question)
    if not match:
        return None
    word, bracket, number = match.groups()
    if word:
        return ORDINALS[word.lower()]
    return int(bracket or number)


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


def _read_venue(question: str, vocabulary: Vocabulary, spans: list[tuple[int, int]]) -> str | None:
    names = _venue_names(vocabulary)
    pattern = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    for match in re.finditer(rf"(?<![\w-])({pattern})(?![\w-])(?:['’]?s)?", question, re.I):
        typed = match.group(1).casefold()
        near_year = re.match(rf"\s*['’]?(?:{_YEAR}|\d\d)\b", question[match.end() :])
        if typed in AMBIGUOUS_VENUES and not near_year:
            continue
        spans.append(match.span())
        return names[typed]
    return None


def _read_years(
    question: str, has_venue: bool, spans: list[tuple[int, int]]
) -> tuple[int | None, int | None, int | None]:
    """'2026' next to a venue, 'in/from 2018', 'since 2020', 'before 2015', '2016-2018'."""
    ranges = [
        (rf"\b(?:between|from)\s+({_YEAR})\s+(?:and|to)\s+({_YEAR})\b", "range"),
        (rf"\b({_YEAR})\s*(?:-|–|to)\s*({_YEAR})\b", "range"),
        (rf"\b(?:since|after|starting(?: from| in)?)\s+({_YEAR})\b", "min"),
        (
            rf"\b(?:from|in)\s+({_YEAR})\s+(?:onwards?\b|(?:and|or) later\b|on(?=\s*[?.!,]|$))",
            "min",
        ),
        (rf"\b({_YEAR})\s+(?:and|or) later\b", "min"),
        (rf"\b(?:before|until|up to|prior to)\s+({_YEAR})\b", "max"),
        (rf"\b(?:in|of|from|during)\s+({_YEAR})\b", "year"),
    ]
    for pattern, kind in ranges:
        match = re.search(pattern, question, re.I)
        if not match:
            continue
        spans.append(match.span())
        first = int(match.group(1))
        if kind == "range":
            low, high = sorted((first, int(match.group(2))))
            return None, low, high
        if kind == "min":
            after = match.group(0).lower().startswith("after")
            return None, first + after, None
        if kind == "max":
            before = match.group(0).lower().startswith(("before", "prior"))
            return None, None, first - before
        if has_venue or re.search(rf"\b{_PAPER_NOUN}\b", question, re.I):
            return first, None, None  # 'papers in 2017', not 'the world cup in 2014'
        spans.pop()
        continue
    if has_venue:  # 'ICLR 2026', "ICLR'18", 'ICLR 2016 or later'
        venue_end = max(b for _, b in spans)
        match = re.match(rf"\s*['’]?({_YEAR}|\d\d)\b", question[venue_end:])
        if match:
            year = int(match.group(1))
            year += 2000 if year < 100 else 0
            spans.append((venue_end, venue_end + match.end()))
            return year, None, None
    return None, None, None


def _read_status(question: str, has_venue: bool, spans: list[tuple[int, int]]) -> str | None:
    """'orals', 'spotlight papers', 'accepted at', 'NeurIPS oral ...'; not 'oral cancer'."""
    words = "|".join(STATUS_WORDS)
    for match in re.finditer(rf"\b({words})\b", question, re.I):
        word = match.group(1).lower()
        followed = re.match(
            rf"\s+(?:{_PAPER_NOUN}|at|to|in|on|for|about)\b", question[match.end() :], re.I
        )
        after_venue = has_venue and 0 <= match.start() - max(b for _, b in spans) <= 2
        if word in ("orals", "spotlights", "posters") or followed or after_venue:
            spans.append(match.span())
            return STATUS_WORDS[word].capitalize()
    return None


def _read_area(question: str, vocabulary: Vocabulary, spans: list[tuple[int, int]]) -> str | None:
    """An area only when named as one: 'in the reinforcement learning area / track'."""
    for area in sorted(vocabulary.areas, key=len, reverse=True):
        pattern = rf"\b(?:in the|area:?|primary area:?)\s+{re.escape(area)}(?:\s+(?:area|track))?\b"
        match = re.search(pattern, question, re.I)
        if match:
            spans.append(match.span())
            return area
    return None


def _cut(question: str, spans: Iterable[tuple[int, int]]) -> str:
    """The question without the scope words: 'which ICLR 2026 papers use DCT?' -> 'which
    papers use DCT?'. A dangling 'at' / 'in' / 'from' left behind goes too."""
    text = question
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    text = re.sub(r"\b(at|in|from|of|on|for|accepted to)\s+(?=[?.!]|$)", " ", text, flags=re.I)
    text = re.sub(r"\s+([?.!,])", r"\1", " ".join(text.split()))
    return text.strip() or question

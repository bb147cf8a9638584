"""Question -> `Query`: what is searched, in which scope, asking for what.

Every rule that reads a question lives here, with its word lists:
  - the scope the question names, recognised against the index's own values
    ('which ICLR 2026 papers ...' -> venue ICLR, year 2026; 'NeurIPS orals since 2016'
    -> venue NIPS, status Oral, year >= 2016) and cut out of the retrieval text;
  - the intent ('what is X?' -> definition, 'how much faster ...' -> figure, 'which
    papers ...' -> papers, 'compare ...' -> comparison, 'does X ...?' -> yes_no, 'how
    many papers ...' -> count, else lookup) and what a good answer sentence holds;
  - the distinctive terms: names ('AltGDA', 'F2SA-p', 'KV'), quoted phrases, numbers;
  - whether it refers back to an earlier turn ('it', 'the second one', 'what about ...').
It reads; it never searches. The language comes from rag/question/language.py; a question in
another language is put into English by rag/question/translate.py and that English is read here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from rag.question import language
from rag.text import STOP, mentions
from rag.types import Filters, Notice

# --- word lists ---------------------------------------------------------------------------

# How a venue may be typed -> the key it is compared under. Catalog spellings pass through
# the same map, so a question's "NeurIPS" finds papers stored as "NIPS" and back.
VENUE_ALIASES = {"neurips": "nips", "neur ips": "nips", "nips": "nips"}
# Venues a question may name although the index holds none of their papers (so "which
# CVPR papers ..." is told that there are none, instead of searching everything).
KNOWN_VENUES = (
    "iclr icml aistats uai corl colm colt acl emnlp naacl cvpr iccv eccv aaai ijcai kdd automl"
).split()
# Venue names that are also common words in questions: scope only next to a year.
AMBIGUOUS_VENUES = frozenset({"automl", "colt"})
# Status words as typed -> the catalog statuses they stand for ("accepted": every status
# that is not one of REJECTED).
STATUS_WORDS = {
    "oral": "oral",
    "orals": "oral",
    "spotlight": "spotlight",
    "spotlights": "spotlight",
    "poster": "poster",
    "posters": "poster",
    "accepted": "accepted",
    "rejected": "reject",
    "withdrawn": "withdraw",
    "workshop": "workshop",
}
REJECTED = frozenset({"reject", "rejected", "withdraw", "withdrawn", "desk reject", "active"})
_PAPER_NOUN = r"(?:papers?|works?|submissions?|articles?|presentations?|talks?|track)"

_QUESTION_WORDS = frozenset(
    """what which who how why where when does do did is are was were can could should
    would will has have had any list show find give tell explain describe compare""".split()
)

# Intent, tried in this order (the first that matches wins): "by how much does X reduce
# memory compared with Y" asks for a figure, "compare X and Y" for a comparison.
_COUNT = re.compile(
    rf"\bhow many\s+(?:\w+\s+){{0,2}}{_PAPER_NOUN}\b|\bnumber of {_PAPER_NOUN}", re.I
)
_COMPARISON = re.compile(
    r"^\s*(?:please\s+)?compare\b|\bcompar(?:e|ison of|ison between)\s+(?:the\s+)?\w+"
    r"(?:\s+\w+){0,4}\s+(?:and|with|vs\.?|versus)\b|\b(?:versus|vs\.?)\s|"
    r"\bdiffer(?:ence|ences)? (?:between|of)\b|\bhow do(?:es)? .{3,60} compare\b",
    re.I,
)
_FIGURE = re.compile(
    r"\b(how (much|many|fast|large|long|big|often|well|far)|by how|up to what|to what extent|"
    r"what ([\w-]+ ){0,3}(fraction|percentage|speed-?up|accuracy|rates?|factor|improvement|"
    r"reduction|gain|number|sizes?|scale|score|ratio|overhead|complexity|bound|error|regret|"
    r"perplexity|latency|throughput|memory|cost|time)|speed-?ups?|percent)\b",
    re.I,
)
_DEFINITION = re.compile(
    r"^\s*(?:so\s+|and\s+|ok\s+)?(?:what(?:'s| is| are| was)|whats|what does|define|"
    r"definition of|explain|describe|tell me about|how does|how do|meaning of|"
    r"what do you know about|who is|what kind of \w+ is)\b",
    re.I,
)
_YES_NO = re.compile(
    r"^\s*(?:is|are|does|do|did|can|could|was|were|has|have|will|would|should)\b(?!\s+there\b)",
    re.I,
)
_PAPERS = re.compile(
    rf"\b(which|what|any|list|find|show|recommend|suggest|some|all|other)\b[^?]{{0,40}}?"
    rf"\b{_PAPER_NOUN}\b|^\s*{_PAPER_NOUN}\s+(?:on|about|that|using|for|with)\b|"
    r"\bis there (?:a|any) (?:paper|work|study|method)\b|\bpapers\b",
    re.I,
)
_ENTITY = re.compile(
    r"\b(which|what)\b[^?]{0,40}?\b(datasets?|benchmarks?|models?|architectures?|"
    r"environments?|tasks?|baselines?|languages?|metrics?|algorithms?|procedures?|"
    r"optimi[sz]ers?|settings?|methods?|domains?|games?|problems?)\b",
    re.I,
)
# A count asked per group: 'per year', 'by venue', 'orals vs posters' -> the field.
_GROUP_BY = (
    ("year", re.compile(r"\b(?:per|by|each|every|a|over the)\s+years?\b|\byear by year\b", re.I)),
    ("venue", re.compile(r"\b(?:per|by|each|every)\s+(?:venue|conference)s?\b", re.I)),
    (
        "status",
        re.compile(
            r"\b(?:per|by|each)\s+(?:status|decision)\b|\b(?:orals?|spotlights?|posters?)\s+"
            r"(?:vs\.?|versus|and|or|against)\s+(?:orals?|spotlights?|posters?)\b",
            re.I,
        ),
    ),
    ("area", re.compile(r"\b(?:per|by|each)\s+(?:primary\s+)?(?:area|track|topic area)s?\b", re.I)),
)
# Words that frame a count or a comparison, not its topic: 'how many papers are about X'
# and 'compare the papers on X' search X.
_AGGREGATE_FRAME = frozenset(
    """how many number count counts total compare compared comparison comparing versus vs
    vs. between difference differences table about regarding concerning deal deals
    tackle tackles involve involves build builds improve improves frame variant variants
    extension extensions alternative alternatives kind kinds type types""".split()
)
# The columns a comparison table may have, and the words in a question that ask for one.
COLUMNS = {
    "problem": re.compile(r"\b(problems?|tasks?|goals?|motivations?|challenges?|setting)\b", re.I),
    "method": re.compile(
        r"\b(methods?|approach(?:es)?|techniques?|ideas?|algorithms?|how)\b", re.I
    ),
    "key result": re.compile(
        r"\b(results?|findings?|performance|speed-?ups?|accuracy|gains?|numbers?|figures?)\b", re.I
    ),
    "data": re.compile(r"\b(data(?:sets?)?|benchmarks?|experiments?|evaluations?)\b", re.I),
}
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

_PLURAL = re.compile(
    r"\b(papers|works|studies|methods|approaches|articles|submissions|variants)\b", re.I
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
# Words that frame a question rather than name its topic: left out of the BM25 query
# ('what is BoGrape used for' searches 'BoGrape'), kept for the dense one.
FRAME = frozenset(
    """what whats which who whom how why where when does do did is are was were can could
    should would will explain describe define definition meaning tell me about any some
    paper papers work works study studies studied approach approaches method methods
    propose proposes proposed use used uses using find show list give there i looking look
    need want get know mean means stand so also other ones one kind type types iclr
    neurips nips icml a an the of for on in to and or with by that this these those it its
    they them their we our you your has have had been being be please thanks anything
    something exist exists existing""".split()
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
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1, "latter": -1}
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
# Kinds of thing known by a proper name, which a 'which ...' answer must then give ('a
# major online dating platform' does not say which). Other nouns are often answered by a
# description ('what kernel does BoGrape use?' -> 'shortest-path graph kernels').
_NAMED_KINDS = frozenset(
    "platform platforms company companies dataset datasets benchmark benchmarks corpus "
    "corpora gpu gpus tpu tpus chip chips accelerator accelerators hardware cluster "
    "university universities institution institutions lab labs organization "
    "organizations organisation country countries city cities website websites app apps "
    "library libraries toolkit toolkits simulator simulators robot robots game games".split()
)
# Not a thing counted in the abstract's own words: ratios, shares, score points.
_NOT_COUNTED = frozenset("times fold percent percentage points point more less".split())
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
    translation: str = ""  # how it was put into English: "llm" | "dictionary" | "none"
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
        if self.translation == "dictionary":  # a gloss keeps the words, not their order
            after = re.search(r"\bwhich\b(.*)", self.english, re.I)
            words = re.findall(r"[A-Za-z]+", after.group(1)) if after else []
            return next((w for w in words if w.casefold() in _NAMED_KINDS), "")
        match = _NAMED.search(self.english)
        return match.group(1) if match and match.group(1).casefold() in _NAMED_KINDS else ""

    @property
    def counted(self) -> str:
        """What a 'how many' question counts, the head of its noun phrase: 'how many GPUs
        did DeMo use?' -> 'GPUs', 'how many uncertainty scenarios can it run' ->
        'scenarios', 'how many A100 GN-IVO training?' -> 'A100' (a second term starts the
        rest); '' for a ratio ('how many times faster') or a question that counts nothing."""
        if not self.asks_count_of_things:
            return ""
        match = _COUNTED.search(self.english)
        if not match:
            return ""
        words = match.group(1).split()
        if words[0].casefold() in _NOT_COUNTED:
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
    intent = intent_of(text)
    compared: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    topic = ""
    if intent == "count":
        topic = topic_of(text)
    elif intent == "comparison":
        compared, columns, topic = comparison_of(text)
    plural = intent in ("papers", "count", "comparison") or bool(_PLURAL.search(text))
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


def grouping_of(question: str) -> tuple[str | None, str]:
    """'how many papers on GANs per year' -> ('year', 'how many papers on GANs'); 'orals
    vs posters' is a grouping, not a scope of orals."""
    for name, pattern in _GROUP_BY:
        match = pattern.search(question)
        if match:
            rest = question[: match.start()] + question[match.end() :]
            return name, " ".join(rest.split())
    return None, question


def topic_of(text: str) -> str:
    """What a count or a comparison is about: 'how many papers are about RL for LLM
    reasoning?' -> 'RL LLM reasoning'."""
    kept = [w for w in keywords_of(text).split() if w.casefold() not in _AGGREGATE_FRAME]
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
    if lead and lead.group("cols") and any(p.search(lead.group("cols")) for p in COLUMNS.values()):
        asked = f"{asked} {lead.group('cols')}"  # 'compare the datasets of X and Y'
        body = "compare " + body[lead.end() :]
    trail = re.search(r"\s+(?:in terms of|on their|by their|regarding)\s+(?P<cols>.+)$", body, re.I)
    if trail:
        asked, body = f"{asked} {trail.group('cols')}", body[: trail.start()]
    columns = tuple(name for name, pattern in COLUMNS.items() if pattern.search(asked))
    columns = columns or DEFAULT_COLUMNS
    match = _COMPARED.match(body)
    if match:
        a, b = (match.group("a"), match.group("b")) if match.group("a") else match.group("c", "d")
        a = re.sub(r"^\s*(?:please\s+)?compare\s+", "", a, flags=re.I)
        if not _SET_WORDS.match(a.strip()):
            return (a.strip(), b.strip()), columns, ""
    return (), columns, topic_of(body)


def keywords_of(text: str) -> str:
    """'which papers use DCT?' -> 'DCT' (see FRAME)."""
    kept = [w for w in re.findall(r"[^\s?!.,;:()\"']+", text) if w.casefold() not in FRAME]
    return " ".join(kept) or text


def intent_of(text: str) -> str:
    """'how many papers ...' -> count, 'compare A and B' -> comparison, 'how much faster'
    -> figure, 'which papers' -> papers, 'what is X' -> definition, 'does X ...' -> yes_no."""
    if _COUNT.search(text):
        return "count"
    if _FIGURE.search(text):
        return "figure"
    if _COMPARISON.search(text):
        return "comparison"
    if _PAPERS.search(text):
        return "papers"
    if _DEFINITION.search(text):
        return "definition"
    if _YES_NO.search(text):
        return "yes_no"
    return "lookup"


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
        if core.casefold() not in _QUESTION_WORDS:
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

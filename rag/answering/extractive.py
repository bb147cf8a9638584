"""The offline answerer: pick and cite the abstract sentences that answer the question.

What a question asks for (its `Query`, rag/question/reading.py) decides what a good answer is:
  - a definition ("what is X?") leads with the sentence that introduces X ("We propose
    X, a ..."), then what X achieves;
  - a figure ("how much / how many / what speedup ...") wants a sentence with a number;
  - "which dataset / benchmark / model ..." wants a named thing the question does not
    already contain ("MT-Bench", "Qwen3-8B");
  - "what problem does X solve" wants the sentence naming the gap ("However, ...");
  - "which papers ..." (and comparisons, counts) gets one line per paper, its key finding;
  - a yes/no question starts with the deciding sentence (the closest one), not with
    the abstract's order;
  - anything else: the closest sentence, plus the contribution when it only sets the scene.
Each candidate sentence is scored by embedding similarity to the question, shared content
words, and whether it holds what is wanted. Nothing is generated: every word shown is
the abstract's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from rag.config import DATA_DIR, load_fitted
from rag.lexicon import COUNTED_KIN
from rag.question.plain import words_for
from rag.question.reading import NAME, Query, topic_of
from rag.text import forms_of, mentions, overlap, plain, split_sentences, stem
from rag.types import Hit, Source

# How far below the best source's cosine another source still answers. None for a question
# about one thing: only a paper at least as close joins the best (0.06 before cited a
# second, unrelated paper; at 0 citation precision rose on every dev set, natural 0.885 ->
# 0.902, dev2 0.775 -> 0.810, among 22k iclr2026 0.468 -> 0.527, recall within one question).
MARGIN_SINGULAR = 0.0
MARGIN_PLURAL = 0.15  # when the question asks for several papers
# ... and, for a question about one thing, at least this share of the best source's fused
# score: 'kd for object detection' cited the two-layer KAN paper beside DTO-KD for a cosine
# a hair above DTO-KD's at under half its score. At 0.5 (the one value tried, 2026-12-06)
# citation precision dev4 0.791 -> 0.802, dev5 0.841 -> 0.859, dev8 0.867 -> 0.883,
# natural 0.926 -> 0.931, iclr2026 0.776 -> 0.780, no dev citation recall lost.
MIN_SCORE_SHARE = 0.5
MAX_SOURCES = {False: 2, True: 5}
# A follow-up's sentence is chosen inside the paper in focus, where the searched words are
# in every sentence and only its own words tell them apart ('which applications do they
# demonstrate it on' -> 'We demonstrate the approach in two canonical SP applications').
# Its own words weigh FOLLOW_UP_DETAIL times the search's in the cosine (English only: an
# offline gloss of another language embeds poorly) and its shared words FOLLOW_UP_OVERLAP
# instead of sentence.json's overlap. From 1 and 0.3 (2026-12-06, seeds): follow-up detail
# dev6 0.775 -> 0.825, dev2, dev3, natural, zh unchanged.
FOLLOW_UP_DETAIL = 3.0
FOLLOW_UP_OVERLAP = 0.6
# What a sentence giving a number of the thing a count asks for ('how many tasks' -> 'five
# continuous RL tasks') adds to its evidence: the cap of `sentence_features`' evidence, so
# it leads however many other figures a sentence holds.
COUNTED_EVIDENCE = 3

# A reported figure: "7.4%", "2.5x", "300M", "1/4", "billions of", a magnitude written in
# words ("one to three orders of magnitude", "an order of magnitude", "twofold", "ten-fold";
# not "k-fold"), or a bare count word ("three", a figure only where a count is asked);
# not "(i)", "$n$" or the "2D" / "3D" of a dimension.
_COUNT_WORDS = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty"
_FIGURE = re.compile(
    r"(?<![\w$^_{\-])\d+(?:[.,/]\d+)*\s*(?:%|\\%|x\b|×|[KMB]\b)?(?![a-z])|\b(?:hundreds|thousands|"
    rf"millions|billions|dozens) of\b|\b(?:an?|one|{_COUNT_WORDS}|several|\d+)(?:\s*(?:to|-|–)\s*"
    rf"(?:{_COUNT_WORDS}|\d+))?\s+orders? of magnitude\b|\b(?:{_COUNT_WORDS}|hundred|thousand)"
    rf"-?fold\b|\b(?:{_COUNT_WORDS})\b",
    re.I,
)
_BARE_COUNT = re.compile(rf"(?:{_COUNT_WORDS})", re.I)
_MATH = re.compile(r"\$[^$]*\$")
# A link: its digits are no figure ('https://anonymous.4open.science/r/BoRA').
_LINK = re.compile(r"\\url\{[^}]*\}|https?://\S+|\bwww\.\S+")
# A quantity written in math mode: "$25\\%$", "$9.8\times$", "$10^6$" (not "$O(n^2)$").
_MATH_FIGURE = re.compile(r"\d+(?:\.\d+)?\s*(?:\\+%|\\times|×)|(?<![\w^{])\d+\^\{?\d+\}?")
_ASYMPTOTIC = re.compile(r"\\mathcal\{O\}|\bO\(|\\tilde|\\widetilde|\\Omega|\\Theta|\^\{?-?\d")
_ASKS_RATE = re.compile(
    r"\b(rates?|bounds?|complexity|regret|order|converge\w*|scal\w+|approximation|factors?)\b", re.I
)
_ENUMERATOR = re.compile(r"\(\s*(?:\d{1,2}|[ivx]{1,4}|[a-h])\s*\)")  # "(1)", "(ii)", "(a)"
# Sentences that say what a paper does or finds, as opposed to background.
_CONTRIBUTION = re.compile(
    r"\b(we (propose|introduce|present|develop|show|prove|demonstrate|derive|establish|design)"
    r"|our (method|approach|algorithm|framework|results?|experiments?|analysis)"
    r"|this (paper|work) (proposes|introduces|presents|shows)|achiev\w*|outperform\w*)\b",
    re.I,
)

# A sentence naming the gap a paper closes ('However, ...', 'a central challenge'): what a
# 'what problem does X solve' question wants, and a comparison's problem column
# (rag/aggregate/tables.py).
GAP = re.compile(
    r"\b(however|challeng\w*|problems?|limit\w*|suffer\w*|remains?|bottleneck|difficult\w*|"
    r"hinder\w*|gap|costly|expensive|unclear|poorly understood|vulnerab\w*|struggle\w*|"
    r"obstacle|fail\w*|lack\w*|overlook\w*|yet)\b",
    re.I,
)

# A sentence saying how a method works ('learns step-level values ... through a
# group-normalized distributional matching objective', 'works by computing ...'): what a
# 'how does it work' question wants (Query.wants 'method'), the more such words the better.
_HOW = re.compile(
    r"\b(via|through|by (?:\w+ing)|based on|key (?:ideas?|insights?|innovations?|components?)|"
    r"works by|leverag\w*|rel(?:y|ies) on|consists? of|buil(?:t|ds?) on|instead of|"
    r"in place of|replac\w*|specifically|mechanism|module|we (?:present|design|develop)|"
    r"(?:propos|introduc|reformulat|formulat|decompos|mitigat)\w*)\b",
    re.I,
)
# A sentence stating what was found ('We resolve this paradox by identifying ...', 'our
# results highlight ...', 'we prove that ...'): what 'what's the main finding' wants.
_FOUND = re.compile(
    r"\b(we (?:\w+ly )?(?:show|find|prove|demonstrate|observe|reveal|identify|establish|derive|"
    r"resolve)|"
    r"(?:results?|findings?|analysis|experiments?) (?:show|indicate|suggest|reveal|highlight|"
    r"demonstrate|confirm)\w*|reveal\w*|suggest\w*|identif\w*|resolv\w*|highlight\w*|"
    r"explain\w*|theorem|guarantee\w*|outperform\w*|surpass\w*)\b",
    re.I,
)
# A sentence reporting results ('Extensive experiments ... demonstrate that X outperforms')
# or opening on what others did ('Conventional solutions often require ...', 'Prior work
# typically projects ...'): no answer to how the paper's method works.
_RESULTS = re.compile(r"\b(experiments?|outperform\w*|state-of-the-art|benchmarks?)\b", re.I)
_OTHERS = re.compile(
    r"^\W*(?:\w+\W+){0,4}?(prior|previous|existing|conventional|traditional)\b", re.I
)

# Where the authors first speak of their own work ('We introduce GTO', 'In this paper,
# ...'): what comes before sets the scene ('Speculative decoding accelerates ...').
_AUTHORS = re.compile(r"\b(we|our|this (?:paper|work))\b", re.I)
# What a question asks a paper to describe (Query.wants): its words say little of which
# sentences answer it ('how does it work'), what the sentences say of themselves does.
DESCRIBED = ("method", "finding")

Vectors = Callable[[list[str]], np.ndarray]
# A sentence that spells a term out: "... descent-ascent (TERM) ...", "TERM, a ...",
# "TERM (Decoupled Momentum)", "TERM: a ...", "TERM is a ...".
_DEFINES = re.compile(
    r"\(\s*TERM\s*\)|TERM\s*(?:\((?!\s*(?:\d{1,2}|[ivx]{1,4}|[a-h])\s*\))|,\s*(?:a|an|the|which)\b|"
    r":\s|\s(?:is|are) (?:a|an)\b)"
)


# A sentence that introduces a method: "We propose X, ...", "X, a ...", "we call X".
_PROPOSING = r"propos\w*|introduc\w*|present\w*|develop\w*|design\w*"
_PROPOSES = re.compile(rf"\b({_PROPOSING})\b", re.I)  # what the authors put forward
_INTRODUCES = re.compile(
    rf"\b({_PROPOSING}|call(ed)?|nam(e|ed)|dub(bed)?|term(ed)?|coin\w*|devis\w*|stud(y|ies)|"
    r"refer(red)? to as)\b",
    re.I,
)


def evidence(query: Query, sentence: str) -> int:
    """Count what a sentence offers of the kind asked for: figures, names the question does
    not already mention ('MT-Bench', 'Qwen3-8B'), or words that name a gap."""
    if query.wants == "number":
        in_words = query.asks_count_of_things  # 'how many layers': 'three' answers it
        prose = _ENUMERATOR.sub(" ", _MATH.sub(" ", _LINK.sub(" ", sentence)))
        found = [m for m in _FIGURE.findall(prose) if in_words or not _BARE_COUNT.fullmatch(m)]
        maths = _MATH.findall(sentence)
        found += [f for m in maths for f in _MATH_FIGURE.findall(m)]
        if _ASKS_RATE.search(query.english):  # a rate or bound is written in math
            found += [m for m in maths if _ASYMPTOTIC.search(m)]
        # a number of what a count asks for outweighs any other figure: 'how many extra
        # parameters' -> '$b^2r$ additional parameters', not the sentence with most digits
        counted = query.counted
        counting = counted and counts(sentence, counted, strict=True)
        return len(found) + (COUNTED_EVIDENCE if counting else 0)
    if query.wants == "problem":  # the gap, not the remedy ('To address these, we propose')
        return max(0, min(3, len(GAP.findall(sentence))) - bool(_CONTRIBUTION.search(sentence)))
    if query.wants == "entity":
        asked = query.english.casefold()
        return len({n for n in NAME.findall(sentence) if n.casefold() not in asked})
    if query.wants == "method":  # how, not the gap it closes, how well it does, nor others
        if _OTHERS.search(sentence):
            return 0
        said = len(_HOW.findall(sentence))
        return max(0, min(3, said) - bool(GAP.search(sentence)) - bool(_RESULTS.search(sentence)))
    if query.wants == "finding":
        return found_in(sentence)
    return 0


def found_in(sentence: str) -> int:
    """How much a sentence states of what was found, 0-3: 'we prove that ...', 'results
    show ...', a figure, which is often the finding ('+3.4 pp over GRPO')."""
    return min(3, len(_FOUND.findall(sentence)) + reports_figure(sentence))


def gist(sentences: list[str]) -> list[int]:
    """What a paper is, in the sentences of its abstract to quote for an overview
    ('summarize them', 'tl;dr'), in order: the first that states its contribution ('We
    propose ...', else the first where the authors speak of their work, else the first),
    then the one after it that states the most of what was found (the later on a tie: an
    abstract ends on its results), if any."""
    if not sentences:
        return []
    own = [j for j, s in enumerate(sentences) if _AUTHORS.search(s)] or [0]
    lead = next(
        (j for j in own if _PROPOSES.search(sentences[j])),
        next((j for j in own if _INTRODUCES.search(sentences[j])), own[0]),
    )  # 'we propose AuxDPO', not 'we study the local behavior of two-stage RLHF' before it
    found = [(found_in(s), j) for j, s in enumerate(sentences) if j > lead]
    best = max(found, default=(0, lead))
    return [lead, best[1]] if best[0] > 0 else [lead]


def reports_figure(text: str, counts: bool = False) -> bool:
    """Tell whether a text reports a figure: '7.4%', '2.5x', '$O(1/n)$'; with `counts`,
    also a spelled-out count ('three datasets'). Enumerators like '(1)' are not figures."""
    for match in _FIGURE.finditer(_ENUMERATOR.sub(" ", _LINK.sub(" ", text))):
        if counts or not _BARE_COUNT.fullmatch(match.group()):
            return True
    return bool(_MATH.search(text))


def counts(text: str, thing: str, strict: bool = False) -> bool:
    """Tell whether a text gives a number of `thing` (what a count question counts): a
    figure at most three words before or after it, with no 'per' / 'each' between ('eight
    A100 GPUs', '47 different types of tasks', '$b^2r$ additional parameters', 'sample
    complexity of $O(1/n)$'; not '85x less data per GPU', which is a rate, nor 'deep
    layers and gains 3%'): after the noun only linking words may come between. With
    `strict` (choosing the sentence that answers, not deciding to refuse), math without a
    digit or a variable is no number: 'scenarios $\\times$ transitions' gives none, though
    it keeps 'how many scenarios' from being refused over an abstract that counts its
    scenarios as 'over $10^6$ uncertainty realizations'."""
    prose = _ENUMERATOR.sub(" ", _LINK.sub(" ", text))
    if strict:
        prose = _MATH.sub(_quantity_or_space, prose)
    number = rf"(?:{_FIGURE.pattern}|\$[^$]*\$)"
    before = r"(?:[\s,\-]+(?!(?:per|each|every)\b)[\w\-().]+){0,3}?[\s,\-]+"
    after = rf"(?:[\s,:=(\-]+{_COUNT_LINK}\b){{0,3}}[\s,:=(\-]+"  # 'samples: 64', 'complexity of'
    noun = _noun(text, thing)
    if noun is None:
        return False
    return bool(re.search(rf"{number}{before}{noun}|{noun}{after}{number}", prose, re.I))


def _quantity_or_space(math: re.Match[str]) -> str:
    """A math segment that may state a quantity ('$b^2r$', '$10^6$', '$n$'), else a space
    ('$\\times$', '$\\rightarrow$': only commands)."""
    symbols = _LATEX_COMMAND.sub("", math.group()[1:-1])
    return math.group() if re.search(r"[A-Za-z0-9]", symbols) else " "


_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_COUNT_LINK = r"(?:of|is|are|was|were|complexity|count|number|size|totals?|about|only|up|to)"


# A name beside a noun: a capitalised word or one with digits ('Netflix', 'A100', 'MT-Bench').
def _noun(text: str, thing: str) -> str | None:
    """A pattern for the words of a text that are forms of `thing` (its Snowball stem:
    'GPUs' for 'GPU', 'realizations' for 'realization') or of its kin ('tasks' for
    'environments': lexicon COUNTED_KIN); None when the text has none."""
    forms = [f for word in _kin(thing) for f in forms_of(text, word)]
    return rf"\b(?:{'|'.join(map(re.escape, dict.fromkeys(forms)))})\b" if forms else None


@lru_cache(maxsize=1024)
def _kin(thing: str) -> tuple[str, ...]:
    """`thing`, the word the plain glossary gives for it ('params' -> 'parameters', 'envs'
    -> 'environment'), and the nouns a number of either may be given in ('environments' ->
    'tasks', ...)."""
    typed = [thing, *words_for(thing)]
    wanted = {stem(t) for t in typed}
    kin = [w for group in COUNTED_KIN if wanted & {stem(g) for g in group} for w in group]
    return tuple(dict.fromkeys([*typed, *kin]))


def candidates(hits: list[Hit], query: Query) -> list[int]:
    """Indexes of the hits to answer from: those that name the question's terms when any
    does ('does DeMo need all-reduce?' is answered from papers naming DeMo), else those
    whose similarity is close enough to the best one's (and, asked about one thing, whose
    fused score is at least MIN_SCORE_SHARE of its)."""
    named = [i for i, h in enumerate(hits) if query.named and _names(h, query)]
    if named:  # a question that names a method is answered from the papers naming it
        return named[: MAX_SOURCES[query.plural and query.intent != "definition"]]
    if query.members:  # 'which papers study X': the retrieved papers the count would count
        about = [i for i, h in enumerate(hits) if h.paper.paper_id in query.members]
        return about[: MAX_SOURCES[True]]
    best = hits[0].dense_similarity or 0.0
    margin = MARGIN_PLURAL if query.plural else MARGIN_SINGULAR
    floor = 0.0 if query.plural else MIN_SCORE_SHARE * (hits[0].score or 0.0)
    keep = [
        i
        for i, h in enumerate(hits)
        if i == 0 or ((h.dense_similarity or 0.0) >= best - margin and (h.score or 0.0) >= floor)
    ]
    if query.members is not None:  # the count's cut took none: 'which iclr 2026 papers
        # are about autonomous driving' quotes the closest paper and those that name every
        # word of the topic (CSAM's 'applications such as ... autonomous driving'), not
        # four others as close by cosine
        topic = topic_of(query.text)
        keep = [i for i in keep if i == 0 or overlap(topic, _text_of(hits[i])) == 1.0]
    return keep[: MAX_SOURCES[query.plural]]


def _text_of(hit: Hit) -> str:
    return f"{hit.paper.label} {hit.paper.abstract}"


def _names(hit: Hit, query: Query) -> bool:
    text = _text_of(hit)
    return any(mentions(text, n) for t in query.named for n in query.spellings(t))


def sentence_scores(
    query: Query, query_vector: np.ndarray, sentences: list[str], vectors: Vectors
) -> list[float]:
    """How well each sentence answers the query (cosine + shared words + what is wanted)."""
    similarity = vectors(sentences) @ query_vector
    return [_score(query, s, float(sim)) for s, sim in zip(sentences, similarity, strict=True)]


def pick_sentences(
    query: Query, query_vector: np.ndarray, sources: list[Source], vectors: Vectors
) -> list[tuple[Source, list[str]]]:
    """Per source, the sentences to quote (one or two)."""
    picked: list[tuple[Source, list[str]]] = []
    for source in sources:
        sentences = split_sentences(source.text)
        if not sentences:
            continue
        scores = sentence_scores(query, query_vector, sentences, vectors)
        order = sorted(range(len(sentences)), key=lambda j: -scores[j])
        chosen = _choose(query, sentences, order, not picked, source.title)
        picked.append((source, [sentences[j] for j in chosen]))
    return picked


def _long_form(title: str) -> tuple[str, str]:
    """'DeMo: Decoupled Momentum Optimization' -> ('demo', 'Decoupled Momentum Optimization'):
    what a label says a name stands for (rag/corpus/labels.py), which the abstract may write
    without the name ('We propose Decoupled Momentum Optimization, ...'); ('', '') if none."""
    name, colon, rest = title.partition(": ")
    if not colon or " " in name or len(rest.split()) < 2:
        return "", ""
    return name.casefold(), rest


def _choose(
    query: Query, sentences: list[str], order: list[int], first: bool, title: str = ""
) -> list[int]:
    """The sentences of one source (titled `title`), in the order they are shown."""
    if query.wants == "overview":  # 'summarize them': what each paper does and finds
        return gist(sentences)
    if query.intent == "definition" and first:
        intro = _introducing(query, sentences, title)
        if intro is not None:
            rest = [j for j in order if j != intro][:1]
            return [intro, *rest]
    if query.plural and query.wants is None:  # one line per paper: its key finding
        return [order[0]]
    if query.wants in DESCRIBED:  # 'how does it work': the sentences that say so, the
        # abstract's first first (its words say little of which); then the best scored;
        # the scene set before the authors first speak of their work last
        said = {j: evidence(query, sentences[j]) for j in order}
        rank = {j: j if said[j] else len(sentences) + at for at, j in enumerate(order)}
        own = next((j for j, s in enumerate(sentences) if _AUTHORS.search(s)), 0)
        return sorted(order, key=lambda j: (j < own, -said[j], rank[j]))[:2]
    chosen = [order[0], *(j for j in _complement(query, sentences, order) if j != order[0])]
    if query.intent == "yes_no":
        return chosen  # the deciding sentence first
    if query.wants:  # the sentence holding the figure (or the name) leads
        return sorted(set(chosen), key=lambda j: (-evidence(query, sentences[j]), j))
    return sorted(set(chosen))


def _introducing(query: Query, sentences: list[str], title: str = "") -> int | None:
    """The sentence that introduces what is asked about: one that spells it out
    ('... descent-ascent (AltGDA) ...', 'X, a ...'), else one that proposes it ('We
    propose X'), else the first that names it. The subject's longest phrase that any
    sentence holds decides ('gated linear attention for ICL' -> 'gated linear attention').
    A name the paper's label (`title`) spells out is looked for as its long form first:
    'We propose Decoupled Momentum Optimization, ...' introduces DeMo."""
    plain_sentences = [plain(s) for s in sentences]
    phrases = _phrases(query)
    name, long_form = _long_form(title)
    spelled = [long_form] if name and any(p.casefold() == name for p in phrases) else []
    for phrase in [*spelled, *phrases]:
        with_term = [j for j, s in enumerate(plain_sentences) if mentions(s, phrase)]
        if not with_term:
            continue
        for pattern in (_DEFINES, _INTRODUCES, _CONTRIBUTION):
            for j in with_term:
                if pattern.search(_around(plain_sentences[j], phrase.casefold())):
                    return j
        return with_term[0]
    return None


def _phrases(query: Query) -> list[str]:
    """What a definition may name: the subject's word runs, longest first, then terms."""
    words = query.subject.split()
    runs = [
        " ".join(words[i : i + n])
        for n in range(len(words), 1, -1)
        for i in range(len(words) - n + 1)
    ]
    spelled = [n for t in query.named for n in query.spellings(t)]
    return list(dict.fromkeys([*runs, *spelled]))


def _around(sentence: str, term: str) -> str:
    """The sentence with the term marked as 'TERM', for the definition patterns."""
    at = sentence.casefold().find(term)
    if at < 0:
        return ""
    return f"{sentence[:at]} TERM {sentence[at + len(term) :]}"


SENTENCE_FEATURES = ("similarity", "overlap", "named", "evidence", "contribution")
SENTENCE_MODEL = DATA_DIR / "sentence.json"


def sentence_features(query: Query, sentence: str, similarity: float) -> dict[str, float]:
    """What a sentence offers a question: its cosine to the question, the share of the
    question's content words it holds, the share of the question's terms it names, the
    figures or names of the kind asked (at most 3), and whether it states a contribution."""
    terms = query.own(query.named)
    named = sum(1 for t in terms if any(mentions(sentence, n) for n in query.spellings(t))) / len(
        terms or "x"
    )
    return {
        "similarity": similarity,
        "overlap": overlap(query.detail or query.text, sentence),
        "named": named,
        "evidence": float(min(3, evidence(query, sentence))),
        "contribution": 1.0 if _CONTRIBUTION.search(sentence) else 0.0,
    }


@lru_cache(maxsize=1)
def sentence_weights() -> dict[str, float]:
    """The weights of `sentence_features` (rag/data/sentence.json, fitted by `rag eval
    fit-sentences` on the dev questions' answer_contains; similarity's weight is 1)."""
    return load_fitted(
        SENTENCE_MODEL,
        "sentence model",
        lambda data: {name: float(data["weights"][name]) for name in SENTENCE_FEATURES},
    )


def _score(query: Query, sentence: str, similarity: float) -> float:
    weights = sentence_weights()
    if query.detail:
        weights = {**weights, "overlap": FOLLOW_UP_OVERLAP}
    features = sentence_features(query, sentence, similarity)
    return sum(weights[name] * value for name, value in features.items())


def _complement(query: Query, sentences: list[str], order: list[int]) -> list[int]:
    """A second sentence when another one holds more of the wanted answer, or when the
    best one only sets the scene and another states the contribution: one the answer
    before has not shown (`Query.shown`), else the best sentence it has not shown: a
    follow-up's answer used to repeat the contribution just quoted ('what mitigates the
    minority accuracy drop' after the imbalanced-classification paper's lead sentence).
    Quoting it again for a definition ('what is the method called?') lost a dev follow-up
    read as one (docs/evaluation.md, session 26)."""
    best = sentences[order[0]]
    if query.wants:
        have = evidence(query, best)
        counts = {j: evidence(query, sentences[j]) for j in order}
        richest = max(order, key=lambda j: counts[j])  # ties: the better-scored one
        if counts[richest] > have:
            return [richest]
    if states_contribution(best):
        return []
    stated = [j for j in order if states_contribution(sentences[j])]
    if not stated or sentences[stated[0]] not in query.shown:
        return stated[:1]
    unshown = [j for j in order[1:] if sentences[j] not in query.shown]
    return ([j for j in unshown if j in stated] or unshown)[:1]


def states_contribution(sentence: str) -> bool:
    """Tell whether a sentence states what the paper contributes ('we propose ...'); one
    that asks ('Can we derandomize O2NC to achieve the same guarantees?') only sets the
    question the paper answers."""
    return _CONTRIBUTION.search(sentence) is not None and not sentence.rstrip().endswith("?")


def compose(picked: list[tuple[Source, list[str]]], named: bool = False) -> str:
    """One cited line per source; a bullet list when there are several. A paper's title
    leads its line; a derived label only when the question asks which paper (`named`:
    'which one weighs individual tokens' -> '**TI-DPO: Token-Importance Guided ...**: ...'),
    as the quoted sentences may never say the paper's name."""
    lines = []
    for source, sentences in picked:
        body = " ".join(f"{sentence} [{source.n}]" for sentence in sentences)
        titled = source.title and (named or not source.title_is_derived)
        lines.append(f"**{source.title}**: {body}" if titled else body)
    if len(lines) == 1:
        return lines[0]
    return "Relevant findings:\n" + "\n".join(f"- {line}" for line in lines)

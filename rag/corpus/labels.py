"""An untitled abstract -> a display label that reads like a title (offline, no model).

In order of preference:
1. The method it introduces, with its long form or what it is:
   'We present Group-Normalized Implicit Value Optimization (GN-IVO), a ...' ->
   'GN-IVO: Group-Normalized Implicit Value Optimization'; 'we propose SPRIG, an
   edit-based genetic algorithm that ...' -> 'SPRIG: an edit-based genetic algorithm';
   'our method, BoGrape, is ...' -> 'BoGrape'.
2. The key phrase of its contribution sentence ("we propose / introduce / develop ...",
   then "this paper studies / we revisit ...", then "we show that ..."): 'In this paper,
   we develop a statistical theory for high-dimensional imbalanced linear classification,
   showing ...' -> 'Statistical theory for high-dimensional imbalanced linear classification';
   led by the name the abstract then uses for it, spelled by its words' starts: 'We
   propose Decoupled Momentum Optimization, ...' + 'DeMo ...' -> 'DeMo: Decoupled
   Momentum Optimization'.
3. Its most repeated multi-word term ('Entropic barriers').
Never its first words: "Model merging methods combine models with ..." names nothing.
Labels are derived again whenever a paper is read (rag/store/index.py), so a better rule
shows in an existing index without re-ingest.
"""

from __future__ import annotations

import re
from collections import Counter

from rag.lexicon import KIND_NOUNS, METHOD_KINDS, PREPOSITIONS, STOP
from rag.text import is_english_word, split_sentences

LABELS_VERSION = 5  # bump when a rule changes: saved catalogs then derive their labels again
MAX_WORDS = 12  # a label longer than this is cut before its last preposition
_TRIGGER = re.compile(
    r"\b(?:called|named|dubbed|termed|coined(?: as)?|we (?:\w+ly )?(?:further )?"
    r"(?:propose|introduce|present|develop)|us to (?:propose|introduce|develop))\b",
    re.I,
)
# A name set off as the method's: 'We demonstrate that our method, BoGrape, is ...'.
_OURS_NAMED = re.compile(
    r"\bour (?:method|approach|algorithm|framework|model|system),\s+([A-Za-z][\w\-+]{1,24}),"
)
_PAREN_ACRONYM = re.compile(r"\(([A-Za-z0-9][A-Za-z0-9\-+.]{1,24})\)")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-+]{1,24}")
_COMMON = {"LLM", "LLMs", "GPU", "GPUs", "NAS", "RL", "AI", "ML", "NLP", "CNN", "GNN", "GNNs"}
_WHO = r"(?:we|this (?:paper|work)|our (?:paper|work)|us to)"
_INTRODUCE = re.compile(
    rf"\b(?:{_WHO}\s*(?:\w+ly\s+)?(?:further\s+|then\s+|also\s+)?"
    r"(?:propose|introduce|present|develop|design|devise|suggest|give|formulate)s?|"
    r"by (?:proposing|introducing|developing|designing|providing)|to develop)\b\s+",
    re.I,
)
_STUDY = re.compile(
    rf"\b(?:{_WHO}\s*(?:\w+ly\s+)?(?:study|studie|investigate|analy[sz]e|revisit|explore|"
    r"examine|establish|derive|characteri[sz]e|identify|refine|provide|consider|tackle)s?|"
    r"by (?:identifying|analy[sz]ing|studying|establishing|deriving))\b\s+",
    re.I,
)
_LISTED = re.compile(r",\s+and\s+(?:an?|the)\s", re.I)  # '..., and a blending loss'
_FINDING = re.compile(r"\bwe (?:\w+ly )?(?:show|prove|find|demonstrate|argue) that\s+", re.I)
_FLUFF = re.compile(
    r"^(?:(?:a|an|the|two|three|several|first|new|novel|simple|elegant|principled|powerful|"
    r"conceptually|computationally|efficient|yet|and|effective|generic|of|class|family|set|"
    r"topic|notion|problem|"
    r"question|task)(?=[\s,])[\s,]*)+",
    re.I,
)
# Where a key phrase ends: a clause, an infinitive or a means ("by caching ...").
_CUT = re.compile(
    r",|;|:|\.(?:\s|$)|\s[—–-]\s|—|\s(?:that|which|who|where|whereby|while|when|to|by|"
    r"thereby|allowing|enabling|showing|providing|yielding|leading|so)\b",
    re.I,
)
_CLAUSE_CUT = re.compile(r",|;|:|\.(?:\s|$)|\s[—–]\s|—|\s(?:to|by|while|when|so|thereby)\b", re.I)
_EXTEND_CUT = re.compile(r",|;|:|\.(?:\s|$)|\s[—–]\s|—|\s(?:by|while|when|so|thereby)\b", re.I)
# A tail that counts parts instead of naming them: '... framework based on two key ideas'.
_COUNTED_TAIL = re.compile(
    r"\s(?:based on|built on|built around|consisting of|with|via|through)\s+"
    r"(?:two|three|four|five|several|a few|multiple|\d+)\b.*$",
    re.I,
)
# A finding's verdict, not its subject: 'image synthesis is nevertheless possible using
# CLIP alone' -> 'image synthesis using CLIP alone'.
_VERDICT = re.compile(
    r"\s(?:is|are)\s+(?:(?:\w+ly|nevertheless|still|also|indeed|even)\s+)*"
    r"(?:possible|feasible|achievable)\b",
    re.I,
)
_LEADING_ASIDE = re.compile(r"^\s*\([^()]{1,30}\)\s*|^(?:an?|the)\s+\([^()]{1,30}\)\s*", re.I)
_SIMPLE_MATH = re.compile(r"\$([A-Za-z0-9_+\-()\\ ]{1,14})\$")
_GREEK = {"epsilon": "ε", "varepsilon": "ε", "delta": "δ", "alpha": "α", "beta": "β", "gamma": "γ",
          "eta": "η", "lambda": "λ", "mu": "μ", "sigma": "σ", "tau": "τ", "infty": "∞"}  # fmt: skip
_GREEK_NAME = re.compile(r"\\([a-z]+)")


def _greek(match: re.Match[str]) -> str:
    """'\\epsilon' -> 'ε'; another command stays as written."""
    return _GREEK.get(match.group(1), match.group(0))


_LINKING = frozenset({"of", "for", "and", "the", "a", "an", "in", "with"})  # skipped by initials
_ANAPHORA = re.compile(r"\s(?:our|this|these|those|its|their|such|it|them)\b", re.I)
_OPENS = PREPOSITIONS - {"of", "the", "a", "an", "and", "or", "as", "based"}  # a phrase's start
_EMPHASIS = re.compile(r"\*+|\\emph\{([^}]*)\}|\\textit\{([^}]*)\}|[{}]")
_BROKEN = re.compile(r"\b([a-z]+)- ([a-z]+)\b")  # 'opti- mizer': a line-end hyphen


def paper_label(title: str | None, generated: str | None, abstract: str) -> str:
    """What a paper is shown as: its real title, else the title the endpoint wrote for it
    (rag/corpus/titles.py), else the label derived here."""
    return title or generated or derive_label(abstract)


def derive_label(abstract: str) -> str:
    """A title-like label for an untitled abstract (see the module docstring).

    'We present Group-Normalized Value Optimization (GN-VO), a method.' ->
    'GN-VO: Group-Normalized Value Optimization'
    """
    name = method_name(abstract)
    if name:
        return _with_long_form(name, abstract)
    phrase = _contribution(abstract, (_INTRODUCE, _STUDY)) or _contribution(abstract, (_FINDING,))
    if phrase:
        short = _abbreviation(phrase, abstract)
        return f"{short}: {phrase}" if short else phrase
    return repeated_term(abstract) or _first_phrase(abstract)


def _abbreviation(phrase: str, abstract: str) -> str | None:
    """A name the abstract uses at least twice for the phrase it proposes, spelled by the
    starts of the phrase's first words: 'DeMo' of 'Decoupled Momentum Optimization', the
    abstract writing 'We propose Decoupled Momentum Optimization, ...' then 'DeMo ...'."""
    words = [w for w in re.split(r"[\s\-]+", phrase.casefold()) if w not in _LINKING]
    uses = Counter(t.strip("-+") for t in _TOKEN.findall(abstract))
    for name, used in uses.items():
        if used < 2 or name[:1].casefold() != words[0][:1] or name in phrase or not _is_name(name):
            continue
        parts = [p.casefold() for p in re.findall(r"[A-Z][a-z]*|[0-9]+", name)]
        spelled = all(w.startswith(p) for p, w in zip(parts, words, strict=False))
        if 2 <= len(parts) <= len(words) and spelled:
            return name
    return None


# -- 1. the method's name --------------------------------------------------------------------


def method_name(abstract: str) -> str | None:
    """The name of the method an abstract introduces: 'GN-IVO', 'FlashWidget'.

    A name counts only if the abstract does not use it before introducing it ('Singular
    Value Decomposition (SVD) ... we propose' is not SVD); among several, the one the
    abstract repeats most wins.
    """
    found = [
        name
        for trigger in _TRIGGER.finditer(abstract)
        for name in _candidates(
            re.split(r"(?<=[.;:])\s", abstract[trigger.end() : trigger.end() + 110])[0]
        )
        if abstract.find(name) >= trigger.start()
    ]
    found += [
        m.group(1)
        for m in _OURS_NAMED.finditer(abstract)
        if _is_name(m.group(1)) and abstract.find(m.group(1)) >= m.start()
    ]
    return min(found, key=lambda n: (-abstract.count(n), abstract.find(n), n), default=None)


def _is_name(token: str) -> bool:
    """'NeuCLIP', 'GN-IVO', 'FlashWidget' are names; 'Token-Importance', 'LLMs' are not."""
    letters = [c for c in token if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    camel = re.search(r"[a-z][A-Z]", token) is not None  # "FlashWidget", "AutoEP"
    return (
        upper >= 2 and (camel or upper / len(letters) >= 0.3) and token.strip("-+.") not in _COMMON
    )


def _candidates(window: str) -> list[str]:
    # "(GTO)" after "Group Tree Optimization" names a method; "(OT)" after "optimal
    # transport" only abbreviates a common term.
    names = [
        m.group(1)
        for m in _PAREN_ACRONYM.finditer(window)
        if window[: m.start()].rstrip().split(" ")[-1][:1].isupper()
    ]
    names += [
        m.group(0)
        for m in _TOKEN.finditer(window)
        if m.start() == 0 or window[m.start() - 1] not in "${}^_\\("  # not LaTeX, not "(OT)"
    ]
    return [n.strip("-+.") for n in names if _is_name(n.strip("-+."))]


def _with_long_form(name: str, abstract: str) -> str:
    """'GN-IVO' -> 'GN-IVO: Group-Normalized Implicit Value Optimization' (the words
    before '(GN-IVO)', or inside the parenthesis after it), else 'SPRIG: an edit-based
    genetic algorithm' (what follows 'SPRIG, '), else the name alone."""
    clean = _plain(abstract)
    escaped = re.escape(name)
    after = re.search(rf"\b{escaped}\s*\(([A-Z][^()]{{3,80}})\)", clean)
    if after and len(after.group(1).split()) >= 2:
        return f"{name}: {after.group(1).strip()}"
    quoted = re.search(rf"[\"“]([^\"”]{{3,80}})[\"”]\s*\(\s*{escaped}\s*\)", clean)
    if quoted:
        return f"{name}: {quoted.group(1).strip()}"
    before = re.search(rf"((?:[\w\-\"“”]+\s+){{1,10}})\(\s*{escaped}\s*\)", clean)
    if before:
        long_form = _long_form(before.group(1).replace('"', " ").split(), name)
        if long_form:
            return f"{name}: {long_form}"
    apposition = re.search(rf"\b{escaped}\*?\"?,\s+(an?\s+.{{5,200}})", clean)
    if apposition:
        phrase = _phrase(apposition.group(1), keep_article=True)
        if phrase and len(phrase.split()) >= 3:
            return f"{name}: {phrase}"
    return name


def _long_form(words: list[str], name: str) -> str | None:
    """The words an acronym stands for, from those before it: capitalised words (and the
    small words between them), or lower-case ones whose initials spell it."""
    picked: list[str] = []
    for word in reversed(words):
        if word[:1].isupper() or (picked and word.lower() in {"for", "of", "and", "with", "in"}):
            picked.insert(0, word)
        else:
            break
    while picked and not picked[0][:1].isupper():
        picked.pop(0)
    if len(picked) >= 2:
        return " ".join(picked)
    letters = re.sub(r"[^a-z]", "", name.lower())
    initials = [w for w in words[-len(letters) :] if w.isalpha() or "-" in w]
    if len(letters) >= 2 and "".join(w[0].lower() for w in initials) == letters:
        text = " ".join(initials)
        return text[:1].upper() + text[1:]
    return None


# -- 2. the contribution's key phrase --------------------------------------------------------


def _contribution(abstract: str, rules: tuple[re.Pattern[str], ...]) -> str | None:
    """The key phrase of the first sentence where one of `rules` (in order) finds a good one.
    Several things introduced in one breath ('we introduce X, a Y, and a Z') are the
    components of the contribution, not the contribution."""
    for sentence in split_sentences(_plain(abstract)):
        for rule in rules:
            for match in rule.finditer(sentence):
                if _LISTED.search(sentence[match.end() :]):
                    continue
                phrase = _phrase(sentence[match.end() :], finding=rule is _FINDING)
                if phrase:
                    return phrase
    return None


def _phrase(text: str, keep_article: bool = False, finding: bool = False) -> str | None:
    """The key phrase a contribution starts with, title-like; None when it is too weak
    ('our method', 'a framework') or holds math."""
    body = _FLUFF.sub("", _LEADING_ASIDE.sub("", text)).lstrip()
    if not body or _ANAPHORA.match(" " + body):
        return None
    head = (_CLAUSE_CUT if finding else _CUT).split(body, maxsplit=1)[0]
    if not finding and _is_generic(head.split(), 2 if keep_article else 3):
        # 'an optimization framework that leverages resurgence theory': keep the clause
        head = _EXTEND_CUT.split(body, maxsplit=1)[0]
    head = _ANAPHORA.split(head.split("$")[0], maxsplit=1)[0]  # no math in a label
    head = _COUNTED_TAIL.sub("", _VERDICT.sub("", head) if finding else head)
    words = _shorten(head.split())
    if len(words) < 2 or "$" in head or "\\" in head or _is_generic(words):
        return None
    if all(w.lower() in STOP or w.lower() in METHOD_KINDS for w in words):
        return None
    if words[-1].lower() in KIND_NOUNS:  # 'a restarted variant' of what?
        return None
    phrase = re.sub(r"\bnovel\s+", "", " ".join(words))
    if keep_article:
        article = "an" if phrase[:1].lower() in "aeiou" else "a"
        return f"{article} {phrase}"
    return phrase[:1].upper() + phrase[1:]


def _is_generic(words: list[str], most: int = 2) -> bool:
    """'framework', 'optimization framework': a kind of thing, not what it is (up to
    `most` words; a key phrase of three, 'unified regularization approach', keeps the
    clause after it: what the approach does)."""
    return bool(words) and words[-1].lower() in METHOD_KINDS and len(words) <= most


def _shorten(words: list[str]) -> list[str]:
    """At most MAX_WORDS words, cut before the last preposition that opens a phrase
    running past them, and no dangling small word at the end."""
    if len(words) > MAX_WORDS:
        cuts = [i for i, w in enumerate(words[: MAX_WORDS + 1]) if w.lower() in _OPENS and i >= 4]
        words = words[: cuts[-1]] if cuts else words[:MAX_WORDS]
    while words and words[-1].lower() in PREPOSITIONS:
        words = words[:-1]
    return words


def _plain(text: str) -> str:
    """Emphasis marks out ('**doubly optimistic**', '\\emph{x}'), simple math as text
    ('$n$-draft' -> 'n-draft', '$\\epsilon$' -> 'ε'), line-end hyphens joined ('opti- mizer'
    -> 'optimizer', where that is a word)."""
    text = _SIMPLE_MATH.sub(lambda m: _GREEK_NAME.sub(_greek, m.group(1)), text)
    text = _EMPHASIS.sub(lambda m: m.group(1) or m.group(2) or "", text)

    def join(match: re.Match[str]) -> str:
        word = match.group(1) + match.group(2)
        return word if is_english_word(word) else match.group(0)

    return _BROKEN.sub(join, text)


# -- 3. a repeated term ------------------------------------------------------------------------


def repeated_term(abstract: str) -> str | None:
    """The abstract's most repeated term of two or three words, none of them small or
    math: '... entropic barriers ... These entropic barriers ...' -> 'Entropic barriers'."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for sentence in split_sentences(_plain(abstract)):
        words = [w.strip(".,;:()\"'").lower() for w in sentence.split()]
        for n in (3, 2):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if any(not w.isalpha() and "-" not in w for w in gram):
                    continue
                if any(w in STOP for w in gram):  # (STOP holds the prepositions)
                    continue
                term = " ".join(gram)
                counts[term] += 1
                first.setdefault(term, len(first))
    repeated = [t for t, c in counts.items() if c >= 2]
    if not repeated:
        return None
    best = max(repeated, key=lambda t: (counts[t], len(t.split()), -first[t]))
    return best[:1].upper() + best[1:]


def _first_phrase(abstract: str) -> str:
    """The first run of content words (two or more): the last resort."""
    words = [w.strip(".,;:()\"'") for w in abstract.split()[:40]]
    run: list[str] = []
    for word in words:
        if word.isalpha() and word.lower() not in STOP:
            run.append(word)
        elif len(run) >= 2:
            break
        else:
            run = []
    text = " ".join(run[:6]) or " ".join(words[:6])
    return text[:1].upper() + text[1:]

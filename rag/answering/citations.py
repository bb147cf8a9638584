"""Check an answer's citations against its sources, after generation, and judge it.

- `[n]` markers that match no source are removed and reported.
- Sentences with no citation, whose cited sources share too few of the sentence's
  content words (< 25%: e.g. 1 of 6), or that state a figure (a number of two or more
  digits: "7.4%", "2023") or a name ("Berkeley", "GPT-4") that none of their cited
  sources states, are flagged as unsupported.
- `judge` decides whether a model's checked answer holds: it must cite a source, keep
  its unsupported claims to a share, cite a paper the offline answer rests on, and give
  a figure when a figure was asked for. An answer that fails is not shown as the answer.
Grouped forms are understood: [1, 3], [1-2], [1][2].
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from rag.lexicon import SENTENCE_OPENERS
from rag.text import content_words, split_sentences

CITATION = re.compile(r"\[(\d+(?:\s*[-–,]\s*\d+)*)\]")
MIN_SUPPORT = 0.25
# Stray tags small models emit ("</script>", "</ref>", "<draft>"): never part of an answer.
MARKUP = re.compile(r"</?[A-Za-z][\w-]*\s*/?>")
# A figure a claim states: two or more digits, decimals and separators ("7.4", "2,048",
# "2023"); one digit is left alone ("2 components" for "two components").
_FIGURE = re.compile(r"(?<![\w.])(?:\d[\d,]*\d(?:\.\d+)?|\d\.\d+)(?![\w])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")  # any number, for "a figure was given"
# A name a claim states: a capitalised or mixed-case word that does not open its
# sentence ("Berkeley", "GPT-4", "LLaMA"); words of every sentence ("The", "We") aside.
_NAME = re.compile(r"(?<=[\s(\"'])([A-Z][\w\-]*[A-Za-z0-9])")


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

    text = CITATION.sub(keep_valid, MARKUP.sub("", answer))
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
    cited = "\n".join(sources[n] for n in numbers if n in sources)
    return supported(CITATION.sub("", sentence), cited)


def supported(claim: str, evidence: str) -> bool:
    """Whether `evidence` supports `claim`: it states every figure and name the claim
    states, and holds at least MIN_SUPPORT of the claim's content words."""
    if unstated(claim, evidence):
        return False
    words = content_words(claim)
    if not words:
        return True
    return len(words & content_words(evidence)) / len(words) >= MIN_SUPPORT


def unstated(claim: str, evidence: str) -> list[str]:
    """The figures and names of `claim` that `evidence` never states: 'a team at
    Berkeley found 12.5%' against an abstract with neither -> ['12.5', 'Berkeley']."""
    claim = CITATION.sub("", claim)
    have_figures = {f.replace(",", "") for f in _FIGURE.findall(evidence)}
    folded = evidence.casefold()
    missing = [f for f in _FIGURE.findall(claim) if f.replace(",", "") not in have_figures]
    missing += [
        name
        for name in dict.fromkeys(_NAME.findall(" " + claim))
        if name not in SENTENCE_OPENERS and name.casefold() not in folded
    ]
    return missing


@dataclass
class Verdict:
    """Whether a model's checked answer holds up against its sources, and why not."""

    kept: bool
    reasons: list[str] = field(default_factory=list)
    unsupported_share: float = 0.0
    draft_coverage: float = 1.0  # the share of the offline answer's content words kept
    new_words: float = 1.0  # the share of the answer's content words the offline one lacks


def judge(
    checked: CheckedAnswer,
    sources: dict[int, str],
    max_unsupported: float,
    anchors: Collection[int] = (),
    wants_figure: bool = False,
    lexical: bool = True,
    draft: str = "",
    min_draft_coverage: float = 0.0,
    min_new_words: float = 0.0,
) -> Verdict:
    """Keep the model's answer only where it holds: it cites a source; at most
    `max_unsupported` of its claims are unsupported; when the offline answer cites
    `anchors` (the papers the question stage found answering), it cites one of them; a
    question that asks for a figure gets one its cited sources state. `lexical`: the
    answer is in the sources' language (English), so its words can be checked against
    theirs; an answer written in another language is held to its citations only.
    `draft`: the offline answer the model was asked to improve; an answer keeping less
    than `min_draft_coverage` of its content words replaced the evidence instead, and one
    with less than `min_new_words` of words the draft lacks only cuts the draft down (it
    adds nothing, and what it drops is what the quoted answer was chosen for)."""
    claims = _claims(checked.text)
    share = len(checked.unsupported) / len(claims) if claims else (0.0 if not lexical else 1.0)
    reasons = []
    if not checked.citations:
        reasons.append("it cites no source")
    elif anchors and not set(checked.citations) & set(anchors):
        shown = ", ".join(f"[{n}]" for n in sorted(anchors))
        reasons.append(f"it cites none of the sources that answer the question ({shown})")
    if lexical and not claims:
        reasons.append("it makes no claim")
    elif lexical and share > max_unsupported:
        reasons.append(f"{len(checked.unsupported)} of {len(claims)} claims lack support")
    kept = draft_coverage(checked.text, draft)
    if lexical and draft and kept < min_draft_coverage:
        reasons.append(f"it keeps {kept:.0%} of what the quoted answer says")
    added = new_words(checked.text, draft)
    same = _plain(checked.text) == _plain(draft)  # the quoted answer itself: nothing lost
    if lexical and draft and added < min_new_words and not same:
        reasons.append(f"it only repeats parts of the quoted answer ({added:.0%} new words)")
    if wants_figure and checked.citations:
        cited = " ".join(sources[n] for n in checked.citations if n in sources)
        stated = set(_NUMBER.findall(cited.replace(",", "")))
        given = set(_NUMBER.findall(CITATION.sub("", checked.text).replace(",", "")))
        if not given & stated:
            reasons.append("it gives none of the figures its sources state")
    return Verdict(not reasons, reasons, round(share, 3), round(kept, 3), round(added, 3))


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def new_words(answer: str, draft: str) -> float:
    """The share of the answer's content words the draft lacks (1.0 without a draft)."""
    given = content_words(CITATION.sub("", answer))
    if not draft or not given:
        return 1.0 if not draft else 0.0
    return len(given - content_words(CITATION.sub("", draft))) / len(given)


def draft_coverage(answer: str, draft: str) -> float:
    """The share of the draft's content words the answer keeps (1.0 without a draft)."""
    wanted = content_words(CITATION.sub("", draft))
    if not wanted:
        return 1.0
    return len(wanted & content_words(CITATION.sub("", answer))) / len(wanted)

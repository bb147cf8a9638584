"""Papers -> a comparison table: one row per paper, one cell per column, quoted.

Every cell is the abstract's own words: the sentence that best fills the column, or,
when that sentence is long, its opening clause and the clause that holds the column's
cue joined by " … " (each part a verbatim span). Columns (rag/lexicon.py `COLUMN_WORDS`):
  - problem: the sentence naming the gap ('However, ...', 'a central challenge'), early;
  - method: the sentence that introduces the method ('We propose X, ...');
  - key result: a sentence with a figure and a result word ('outperforms ... by 12.6%');
  - data: the sentence naming datasets or benchmarks ('on ImageNet-1K and COCO').
A column no sentence fills is left empty (shown as '—'), never written. Nothing is
generated, with or without an LLM endpoint: `supported` checks a cell against its
abstract, and a test checks it for every comparison question of the eval set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answering.extractive import GAP
from rag.question.reading import NAME
from rag.text import split_sentences
from rag.types import normalise_text

ELISION = " … "
MAX_WORDS = 42  # a longer sentence is cut to its opening clauses (and its figure's clause)
OPENING = 28  # words of opening clauses kept from a long sentence

_CUES = {
    "problem": GAP,
    "method": re.compile(
        r"\b(we (?:propose|introduce|present|develop|design|devise|build)|this (?:paper|work) "
        r"(?:proposes|introduces|presents|develops)|(?:coined|dubbed|termed) as)\b",
        re.I,
    ),
    "key result": re.compile(
        r"\b(outperform\w*|achiev\w*|improv\w*|speed-?ups?|reduc\w*|higher|lower|faster|"
        r"match\w*|surpass\w*|better|gains?|converges?|state-of-the-art|up to|bound\w*)\b",
        re.I,
    ),
    "data": re.compile(
        r"\b(datasets?|benchmarks?|experiments? (?:on|across|with)|evaluat\w* on|"
        r"evaluations? on|tasks? (?:including|such as|from)|suite|case stud\w*)\b",
        re.I,
    ),
}


# What a paper does, when it proposes nothing by name: 'we study', 'we show', 'we prove'.
_METHOD_WEAK = re.compile(
    r"\b(we (?:study|analy[sz]e|establish|derive|give|formulate|reformulate|revisit|identify|"
    r"prove|show|reduce|build on|train|use|adopt|implement|transfer|suggest|characteri[sz]e|"
    r"explore|investigate|extend|resolve|solve|address|apply|refine)|"
    r"our (?:method|approach|algorithm|framework)|allows us to|"
    r"this (?:paper|work) (?:studies|explores|investigates|revisits))\b",
    re.I,
)
_MATH = re.compile(r"\$[^$]*\$")
# A reported quantity: '7.4\\%', '85×', '9.8$\\times$', '+3.4 pp', '100 ms', 'two orders of'.
_QUANTITY = re.compile(
    r"\d+(?:\.\d+)?\s*(?:\\?%|×|x\b|\\times|-fold|\s*pp\b|\s*percentage points|\s*ms\b)"
    r"|\b(?:one|two|three|\d+) orders? of magnitude\b",
    re.I,
)


def _figure(sentence: str) -> float:
    """2 for a reported quantity ('7.4%', '85×'), 1 for another number in prose, else 0."""
    if _QUANTITY.search(sentence):
        return 2.0
    return 1.0 if re.search(r"\d", _MATH.sub(" ", sentence)) else 0.0


def cells(abstract: str, columns: Sequence[str]) -> dict[str, str]:
    """One quoted cell per column: ('We propose X. X is 2x faster.', ['method', 'key
    result']) -> {'method': 'We propose X.', 'key result': 'X is 2x faster.'}."""
    sentences = split_sentences(abstract)
    used: set[int] = set()
    row: dict[str, str] = {}
    for column in columns:
        ranked = sorted(
            range(len(sentences)), key=lambda j: -_score(column, sentences[j], j, len(sentences))
        )
        fresh = [j for j in ranked if j not in used and _score(column, sentences[j], j, 0) > 0]
        pick = (
            fresh[0] if fresh else next((j for j in ranked if _fills(column, sentences[j])), None)
        )
        if pick is None:
            row[column] = ""
            continue
        used.add(pick)
        row[column] = _trim(sentences[pick], column)
    return row


def _fills(column: str, sentence: str) -> bool:
    cue = _CUES.get(column)
    return bool(cue and cue.search(sentence)) or (
        column == "method" and bool(_METHOD_WEAK.search(sentence))
    )


def _score(column: str, sentence: str, at: int, total: int) -> float:
    """How well a sentence fills a column; 0 when it holds nothing of it. `total` > 0
    adds a preference for the column's usual place (problems early, results late)."""
    cue = _CUES.get(column)
    hits = len(cue.findall(sentence)) if cue else 0
    if column == "key result":
        figure = _figure(sentence)
        score = figure + min(hits, 3) * (1.0 if figure else 0.5)
    elif column == "data":
        names = len(NAME.findall(sentence))
        score = min(hits, 2) * 1.0 + (min(names, 4) * 0.5 if hits else 0.0)
    elif column == "method":
        score = 3.0 if hits else 1.5 if _METHOD_WEAK.search(sentence) else 0.0
    else:
        score = min(hits, 3) * 1.0
        if _CUES["method"].search(sentence):
            score -= 1.0  # the gap, not the remedy
    if score <= 0 or not total:
        return max(score, 0.0)
    place = at / max(total - 1, 1)  # 0: the first sentence, 1: the last
    if column == "problem":
        return score + 1.0 - place
    if column == "key result":
        return score + place
    return score - 0.1 * place


def _trim(sentence: str, column: str) -> str:
    """A long sentence -> its opening clauses (up to OPENING words), then, when the part
    that fills the column comes later (a result's figure), ' … ' and that clause."""
    if len(sentence.split()) <= MAX_WORDS:
        return sentence
    clauses = [c for c in re.split(r"(?<=[,;:])\s+", sentence) if c.strip()]
    opening: list[str] = []
    for clause in clauses:
        if opening and len(" ".join([*opening, clause]).split()) > OPENING:
            break
        opening.append(clause)
    if len(opening) == len(clauses):  # one long clause: its first words
        return " ".join(sentence.split()[:MAX_WORDS]).rstrip(",;:") + ELISION.rstrip()
    rest = clauses[len(opening) :]
    wanted = _figure if column == "key result" else (lambda c: float(_fills(column, c)))
    head = " ".join(opening).rstrip(",;:")
    if any(wanted(c) for c in opening) or not any(wanted(c) for c in rest):
        return head + ELISION.rstrip()
    best = max(rest, key=wanted)
    return f"{head}{ELISION}{best.rstrip(',;:')}"


def parts(cell: str) -> list[str]:
    """The verbatim spans of a cell: 'A … B' -> ['A', 'B']; a trailing '…' is dropped."""
    return [p.strip() for p in cell.split("…") if p.strip()]


def supported(cell: str, abstract: str) -> bool:
    """Tell whether every span of a cell is in the abstract (whitespace and case folded):
    an empty cell quotes nothing and is supported."""
    text = normalise_text(abstract)
    return all(normalise_text(p) in text for p in parts(cell))

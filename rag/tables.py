"""Papers -> a comparison table: one row per paper, one cell per column, quoted.

Every cell is the abstract's own words: the sentence that best fills the column, or,
when that sentence is long, its opening clause and the clause that holds the column's
cue joined by " … " (each part a verbatim span). Columns (rag/question.py `COLUMNS`):
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

from rag.extractive import reports_figure
from rag.question import NAME
from rag.text import split_sentences
from rag.types import normalise_text

ELISION = " … "
MAX_WORDS = 42  # a longer sentence is cut to its opening clause and its cue clause

_CUES = {
    "problem": re.compile(
        r"\b(however|challeng\w*|problems?|limit\w*|suffer\w*|remains?|bottleneck|difficult\w*|"
        r"hinder\w*|gap|costly|expensive|unclear|poorly understood|vulnerab\w*|struggle\w*|"
        r"obstacle|fail\w*|lack\w*|overlook\w*|yet)\b",
        re.I,
    ),
    "method": re.compile(
        r"\b(we (?:propose|introduce|present|develop|design|devise|build|give|derive|study|"
        r"analy[sz]e|establish|revisit|formulate|reformulate|identify)|this (?:paper|work) "
        r"(?:proposes|introduces|presents|studies|develops)|our (?:method|approach|algorithm|"
        r"framework)|called|termed|coined|dubbed)\b",
        re.I,
    ),
    "key result": re.compile(
        r"\b(outperform\w*|achiev\w*|improv\w*|speed-?ups?|reduc\w*|higher|lower|faster|"
        r"match\w*|surpass\w*|better|gains?|converges?|state-of-the-art|up to|bound\w*)\b",
        re.I,
    ),
    "data": re.compile(
        r"\b(datasets?|benchmarks?|experiments? (?:on|across|with)|evaluat\w* on|"
        r"evaluations? on|tasks?|suite|environment|case stud\w*)\b",
        re.I,
    ),
}


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
        pick = fresh[0] if fresh else next((j for j in ranked if _fills(column, sentences[j])), None)
        if pick is None:
            row[column] = ""
            continue
        used.add(pick)
        row[column] = _trim(sentences[pick], _CUES.get(column))
    return row


def _fills(column: str, sentence: str) -> bool:
    cue = _CUES.get(column)
    return bool(cue and cue.search(sentence))


def _score(column: str, sentence: str, at: int, total: int) -> float:
    """How well a sentence fills a column; 0 when it holds nothing of it. `total` > 0
    adds a preference for the column's usual place (problems early, results late)."""
    cue = _CUES.get(column)
    hits = len(cue.findall(sentence)) if cue else 0
    if column == "key result":
        figure = reports_figure(sentence)
        score = (2.0 if figure else 0.0) + min(hits, 3) * (1.0 if figure else 0.5)
    elif column == "data":
        names = len(NAME.findall(sentence))
        score = min(hits, 2) * 1.0 + (min(names, 4) * 0.5 if hits else 0.0)
    elif column == "method":
        score = 3.0 if hits else 0.0
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


def _trim(sentence: str, cue: re.Pattern[str] | None) -> str:
    """A long sentence -> its opening clause … the clause holding the cue."""
    if len(sentence.split()) <= MAX_WORDS:
        return sentence
    clauses = [c.strip() for c in re.split(r"(?<=[,;:])\s+|\s+(?=\()", sentence) if c.strip()]
    if len(clauses) < 2:
        return " ".join(sentence.split()[:MAX_WORDS]).rstrip(",;:") + ELISION.rstrip()
    first = clauses[0].rstrip(",;:")
    rest = clauses[1:]
    best = next((c for c in rest if cue is not None and cue.search(c)), rest[-1])
    return f"{first}{ELISION}{best.rstrip(',;:')}"


def parts(cell: str) -> list[str]:
    """The verbatim spans of a cell: 'A … B' -> ['A', 'B']; a trailing '…' is dropped."""
    return [p.strip() for p in cell.split("…") if p.strip()]


def supported(cell: str, abstract: str) -> bool:
    """Tell whether every span of a cell is in the abstract (whitespace and case folded):
    an empty cell quotes nothing and is supported."""
    text = normalise_text(abstract)
    return all(normalise_text(p) in text for p in parts(cell))

"""The offline answerer: pick and cite the abstract sentences that answer the question.

What a question asks for decides what a good sentence is:
  - "how much / how many / what speedup ..." wants a number;
  - "which dataset / benchmark / model ..." wants a named thing the question does not
    already contain ("MT-Bench", "Qwen3-8B");
  - "which papers ..." (plural) wants several papers, a singular question one or two.
Each candidate sentence is scored by embedding similarity to the question, shared content
words, and whether it holds what is wanted; per source the best sentence is kept, plus the
sentence with the wanted answer (or with the paper's contribution) when the best one only
sets the scene. Nothing is generated: every word shown is the abstract's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rag.text import overlap, split_sentences
from rag.types import Hit, Source

MARGIN_SINGULAR = 0.06  # cosine below the best source that still counts as an answer...
MARGIN_PLURAL = 0.15  # ...when the question asks for several papers
MAX_SOURCES = {False: 2, True: 5}

_NUMBER_Q = re.compile(
    r"\b(how (much|many|fast|large|long|big|often)|by how|up to what|what ([\w-]+ ){0,3}"
    r"(fraction|percentage|speed-?up|accuracy|rates?|factor|improvement|reduction|gain|"
    r"number|sizes?|scale|score|ratio|overhead|complexity|bound|error|regret|perplexity|"
    r"latency|throughput|memory|cost|time))\b",
    re.I,
)
_ENTITY_Q = re.compile(
    r"\b(which|what)\b[^?]{0,40}?\b(datasets?|benchmarks?|models?|architectures?|"
    r"environments?|tasks?|baselines?|languages?|metrics?|algorithms?|procedures?|"
    r"optimi[sz]ers?|settings?|methods?|domains?|games?|problems?)\b",
    re.I,
)
_PLURAL_Q = re.compile(r"\b(papers|works|studies|methods|approaches|articles)\b", re.I)
# A reported figure: "7.4%", "2.5x", "300M", "1/4", "billions of" (not "(i)" or "$n$").
_FIGURE = re.compile(
    r"(?<![\w$^_{\-])\d+(?:[.,/]\d+)*\s*(?:%|\\%|x\b|×|[KMB]\b)?|\b(?:hundreds|thousands|"
    r"millions|billions|dozens) of\b|\b(?:two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|twenty)\b",
    re.I,
)
_MATH = re.compile(r"\$[^$]*\$")
_ENUMERATOR = re.compile(r"\(\s*(?:\d{1,2}|[ivx]{1,4}|[a-h])\s*\)")  # "(1)", "(ii)", "(a)"
_NAME = re.compile(r"\b[A-Za-z]*(?:[A-Z][A-Za-z]*[A-Z0-9]|[a-z][A-Z]|\d[A-Za-z])[\w\-.]*")
# Sentences that say what a paper does or finds, as opposed to background.
_CONTRIBUTION = re.compile(
    r"\b(we (propose|introduce|present|develop|show|prove|demonstrate|derive|establish|design)"
    r"|our (method|approach|algorithm|framework|results?|experiments?|analysis)"
    r"|this (paper|work) (proposes|introduces|presents|shows)|achiev\w*|outperform\w*)\b",
    re.I,
)

Vectors = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Intent:
    """What a question asks for."""

    wants: str | None  # "number", "entity" or None
    plural: bool

    @classmethod
    def of(cls, question: str) -> Intent:
        """'How much faster is X?' -> Intent('number', False)."""
        plural = bool(_PLURAL_Q.search(question))  # "which papers ..." asks for papers
        wants = None
        if _NUMBER_Q.search(question):
            wants = "number"
        elif _ENTITY_Q.search(question) and not plural:
            wants = "entity"
        return cls(wants, plural)

    def evidence(self, sentence: str, question: str) -> int:
        """Count what a sentence offers of the kind asked for: figures, or names the
        question does not already mention ('MT-Bench', 'Qwen3-8B')."""
        if self.wants == "number":
            return len(_FIGURE.findall(_MATH.sub(" ", sentence)))
        if self.wants == "entity":
            asked = question.casefold()
            return len({n for n in _NAME.findall(sentence) if n.casefold() not in asked})
        return 0


def reports_figure(text: str, counts: bool = False) -> bool:
    """Tell whether a text reports a figure: '7.4%', '2.5x', '$O(1/n)$'; with `counts`,
    also a spelled-out count ('three datasets'). Enumerators like '(1)' are not figures."""
    for match in _FIGURE.finditer(_ENUMERATOR.sub(" ", text)):
        if counts or match.group()[:1].isdigit():
            return True
    return bool(_MATH.search(text))


def missing_names(question: str, text: str) -> list[str]:
    """Names in the question ('MATH-500', 'AlpacaEval') that the text never mentions.

    A descriptive suffix is dropped first ('DCT-based' -> 'DCT'), and a plural 's'
    ('GPUs' -> 'GPU'), so only the name itself must occur.
    """
    haystack = text.casefold()
    missing = []
    for name in dict.fromkeys(_NAME.findall(question)):
        core = re.sub(r"-[a-z]+$", "", name)
        core = core[:-1] if core.endswith("s") and core[:-1].isupper() else core
        if core.casefold() not in haystack:
            missing.append(core)
    return missing


def candidates(hits: list[Hit], intent: Intent) -> list[int]:
    """Indexes of the hits close enough to the best to answer from."""
    best = hits[0].dense_similarity or 0.0
    margin = MARGIN_PLURAL if intent.plural else MARGIN_SINGULAR
    keep = [i for i, h in enumerate(hits) if i == 0 or (h.dense_similarity or 0.0) >= best - margin]
    return keep[: MAX_SOURCES[intent.plural]]


def pick_sentences(
    question: str, query_vector: np.ndarray, sources: list[Source], vectors: Vectors
) -> list[tuple[Source, list[str]]]:
    """Per source, the sentences to quote (one or two, in abstract order)."""
    intent = Intent.of(question)
    picked: list[tuple[Source, list[str]]] = []
    for source in sources:
        sentences = split_sentences(source.text)
        if not sentences:
            continue
        similarity = vectors(sentences) @ query_vector
        scores = [
            _score(question, intent, s, float(sim))
            for s, sim in zip(sentences, similarity, strict=True)
        ]
        order = sorted(range(len(sentences)), key=lambda j: -scores[j])
        chosen = [order[0], *_complement(question, intent, sentences, order)]
        picked.append((source, [sentences[j] for j in sorted(set(chosen))]))
    return picked


def _score(question: str, intent: Intent, sentence: str, similarity: float) -> float:
    return (
        similarity
        + 0.3 * overlap(question, sentence)
        + 0.05 * min(3, intent.evidence(sentence, question))
        + (0.05 if _CONTRIBUTION.search(sentence) else 0.0)
    )


def _complement(question: str, intent: Intent, sentences: list[str], order: list[int]) -> list[int]:
    """A second sentence when another one holds more of the wanted answer, or when the
    best one only sets the scene and another states the contribution."""
    best = sentences[order[0]]
    if intent.wants:
        have = intent.evidence(best, question)
        counts = {j: intent.evidence(sentences[j], question) for j in order}
        richest = max(order, key=lambda j: counts[j])  # ties: the better-scored one
        if counts[richest] > have:
            return [richest]
    if not _CONTRIBUTION.search(best):
        return [j for j in order if _CONTRIBUTION.search(sentences[j])][:1]
    return []


def compose(picked: list[tuple[Source, list[str]]]) -> str:
    """One cited line per source; a bullet list when there are several."""
    lines = []
    for source, sentences in picked:
        body = " ".join(f"{sentence} [{source.n}]" for sentence in sentences)
        lines.append(body if source.title_is_derived else f"**{source.title}**: {body}")
    if len(lines) == 1:
        return lines[0]
    return "Relevant findings:\n" + "\n".join(f"- {line}" for line in lines)

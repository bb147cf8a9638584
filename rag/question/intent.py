"""Question text -> intent, by a logistic model fitted on labelled questions.

The intents: what a good answer is.
    lookup      the paper, or the sentence, that answers ('dct gradient projection llm')
    definition  what a named thing is or does ('what is GTO', 'explain F2SA-p')
    figure      a number ('how much faster', 'AltGDA convergence rate', 'UniBiO oracle complexity')
    papers      a list of papers ('which papers use CLIP', 'any work on unlearning')
    comparison  a table of two or more ('compare SPO and GVPO', 'dpo vs rlhf')
    yes_no      yes or no, with the sentence that says so ('does GN-IVO need a critic?')
    count       how many papers ('how many ICLR 2026 papers on DPO')

The features are the words a question is made of, not rules: each word, the first word
and the first two (pairs of neighbouring words everywhere scored lower in 5-fold
cross-validation: 0.849-0.859 against 0.847-0.874 without, C 1-100), the word after each
'how' ('how much' asks a figure, 'how neurons encode ...' a manner), whether a paper noun
follows 'how many', whether a word names what a figure measures (rag/lexicon.py's
FIGURE_NOUNS), and a number or a name as a kind. The weights are fitted by `rag eval
fit-intent` (eval/intent.py, scikit-learn's LogisticRegression) on
eval/questions/intent.jsonl, and saved in
rag/data/intent.json with the accuracy they reached on the held-out test questions.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rag.config import DATA_DIR, load_fitted
from rag.lexicon import FIGURE_NOUNS, PAPER_NOUNS

INTENTS = ("lookup", "definition", "figure", "papers", "comparison", "yes_no", "count")
_TOKEN = re.compile(r"[A-Za-z0-9$^\\][\w$^\\{}.\-]*|\?")
DEFAULT_MODEL = DATA_DIR / "intent.json"


def features(text: str) -> list[str]:
    """The question's features: 'how many papers on DPO?' -> ['w=how', 'w=many', ...,
    's=how many', 's1=how', 'len=1', 'asks', 'many+paper']."""
    tokens = [_kind(t.rstrip(".")) for t in _TOKEN.findall(text)]
    words = [t for t in tokens if t != "?"]
    found = [f"w={w}" for w in words]
    found += [f"s={' '.join(words[:2])}", f"s1={words[0] if words else ''}"]
    found.append(f"len={min(len(words), 8) // 3}")  # 0-2, 3-5, 6+: short topics are lookups
    if "?" in tokens:
        found.append("asks")
    if FIGURE_NOUNS.intersection(words):
        found.append("measure")  # 'speedup', 'regret', 'faster': what a figure measures
    for i, (a, b) in enumerate(itertools.pairwise(words)):
        if a == "how":  # 'how much' asks a figure wherever it stands; 'how neurons ...' none
            found.append(f"how+{b}")
        if (a, b) == ("how", "many") and PAPER_NOUNS & set(words[i + 2 : i + 6]):
            found.append("many+paper")  # 'how many [ICLR 2026] papers', not 'how many GPUs'
    return found


def _kind(token: str) -> str:
    """A number, or a name typed with capitals or digits inside, stands for its kind too."""
    if re.fullmatch(r"\d+(?:\.\d+)?%?", token):
        return "<num>"
    if re.search(r"[A-Z].*[A-Z0-9]|\d[A-Za-z]|[a-z][A-Z]", token):
        return "<name>"
    return token.casefold()


@dataclass(frozen=True, slots=True)
class Model:
    """A fitted multinomial logistic model over `features`."""

    classes: tuple[str, ...]
    bias: tuple[float, ...]
    weights: dict[str, tuple[float, ...]] = field(default_factory=dict)
    about: dict[str, Any] = field(default_factory=dict)  # how it was fitted and scored

    def probabilities(self, text: str) -> dict[str, float]:
        """Each intent's probability for a question."""
        scores = list(self.bias)
        for name in features(text):
            for i, w in enumerate(self.weights.get(name, ())):
                scores[i] += w
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def predict(self, text: str) -> str:
        """The most probable intent."""
        probabilities = self.probabilities(text)
        return max(probabilities, key=lambda c: probabilities[c])

    def to_json(self) -> dict[str, Any]:
        return {
            "classes": list(self.classes),
            "bias": list(self.bias),
            "weights": {k: list(v) for k, v in sorted(self.weights.items())},
            "about": self.about,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        return cls(
            classes=tuple(data["classes"]),
            bias=tuple(data["bias"]),
            weights={k: tuple(v) for k, v in data["weights"].items()},
            about=data.get("about", {}),
        )


@lru_cache(maxsize=4)
def load_model(path: Path | None = None) -> Model:
    """The fitted model (default: the one shipped in rag/data)."""
    return load_fitted(path or DEFAULT_MODEL, "intent model", Model.from_json)


def intent_of(text: str) -> str:
    """'how many papers on DPO' -> 'count', 'what is GTO' -> 'definition', 'gto speedup
    over eagle-3' -> 'figure', 'dct gradient projection' -> 'lookup'."""
    return load_model().predict(text)

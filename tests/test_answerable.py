"""The answerability decision: the fitted model, its threshold, and the detail checks."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from rag import logistic
from rag.answering import answerable
from rag.answering.answerable import FEATURES, Evidence, Model, decide, fit, pick_threshold
from rag.question.reading import read
from rag.types import Hit, Paper


def _row(strength: float) -> dict[str, float]:
    return {name: strength for name in FEATURES} | {"terms_missing": 1 - strength}


def test_fit_separates_answerable_from_not_and_keeps_false_abstention_in_bounds() -> None:
    rng = random.Random(7)
    rows, labels = [], []
    for _ in range(200):
        good = rng.random() < 0.7
        rows.append(_row(min(1.0, max(0.0, rng.gauss(0.7 if good else 0.3, 0.12)))))
        labels.append(good)
    model = fit(rows, labels, max_false_abstention=0.02)
    confidence = np.array([model.confidence(r) for r in rows])
    answerable_mask = np.array(labels)
    refused_good = (confidence[answerable_mask] < model.threshold).mean()
    refused_bad = (confidence[~answerable_mask] < model.threshold).mean()
    assert refused_good <= 0.02
    assert refused_bad > 0.5  # the two overlap a little; most bad ones are still refused
    assert model.weights["sentence"] > 0 and model.weights["terms_missing"] < 0


def test_pick_threshold_refuses_at_most_the_allowed_share() -> None:
    confidence = np.array([0.1, 0.6, 0.9, 0.2])
    answerable_mask = np.array([False, True, True, True])
    assert pick_threshold(confidence, answerable_mask, 0.0) == pytest.approx(0.2 - 1e-6)
    assert pick_threshold(confidence, answerable_mask, 0.34) == pytest.approx(0.6 - 1e-6)


def test_model_round_trips_through_json_and_rejects_unknown_features() -> None:
    model = fit([_row(0.2), _row(0.8), _row(0.3), _row(0.9)], [False, True, False, True])
    again = Model.from_json(json.loads(json.dumps(model.to_json())), FEATURES, "answerability")
    assert again.confidence(_row(0.5)) == pytest.approx(model.confidence(_row(0.5)))
    data = model.to_json() | {"weights": {"shoe_size": 1.0}}
    with pytest.raises(ValueError, match="shoe_size"):
        Model.from_json(data, FEATURES, "answerability")


def test_logistic_weights_minimise_the_penalised_log_loss() -> None:
    """The fit is at the optimum of the objective it documents: summed log-loss plus l2/2
    times the squared weights, the bias unshrunk (its gradient is zero there)."""
    rng = np.random.default_rng(3)
    z = rng.normal(size=(200, 3))
    y = (z @ np.array([1.5, -2.0, 0.0]) + 0.3 + rng.normal(size=200) > 0).astype(float)
    for l2 in (0.1, 1.0, 10.0):
        w = logistic.logistic_weights(z, y, l2)
        zb = np.hstack([z, np.ones((len(z), 1))])
        p = 1.0 / (1.0 + np.exp(-(zb @ w)))
        gradient = zb.T @ (p - y) + l2 * np.append(w[:-1], 0.0)
        assert np.abs(gradient).max() < 1e-3, (l2, gradient)
    strong, weak = logistic.logistic_weights(z, y, 0.01), logistic.logistic_weights(z, y, 100)
    assert np.abs(weak[:-1]).sum() < np.abs(strong[:-1]).sum()  # a larger l2 shrinks


def test_the_shipped_model_is_fitted() -> None:
    model = answerable.load_model()
    assert model.about.get("rows", 0) > 100 and 0 < model.threshold < 1
    assert any(w != 0 for w in model.weights.values())


def _hit(abstract: str, authors: tuple[str, ...] = ()) -> Hit:
    return Hit(Paper("p", abstract, label="X", authors=authors), 1.0, 0.5, 3.0)


@pytest.mark.parametrize(
    ("question", "abstract", "why"),
    [
        ("who wrote the GTO paper?", "We propose GTO.", "author"),
        ("where is the code for GTO?", "We propose GTO.", "code link"),
        ("does GTO have released code", "We propose GTO.", "code link"),
        ("how much faster is GTO?", "We propose GTO, which is faster.", "no figures"),
        ("how much does GTO gain on MMLU?", "GTO gains 7.4% on GSM8K.", "MMLU"),
        # a rate of the thing is no count of it
        (
            "how many GPUs did DeMo use for training?",
            "DeMo models show DeMo transmits up to 85x less data per GPU than AdamW-DDP.",
            "no number of GPUs",
        ),
        (
            "how many layers does GTO use?",
            "GTO stacks deep layers and gains 3% on MMLU.",
            "of layers",
        ),
    ],
)
def test_details_the_record_lacks_are_refused(question: str, abstract: str, why: str) -> None:
    assert why in (answerable.missing_detail(read(question), _hit(abstract)) or "")


def test_details_the_record_holds_pass() -> None:
    assert answerable.missing_detail(read("who wrote it?"), _hit("A.", ("Ada",))) is None
    hit = _hit("GTO gains 7.4% on GSM8K; code: https://x.org")
    assert answerable.missing_detail(read("how much does GTO gain on GSM8K?"), hit) is None
    assert answerable.missing_detail(read("where is the GTO code?"), hit) is None


def test_a_follow_up_is_held_only_to_the_terms_its_own_words_name() -> None:
    # 'what dataset did they use' after a question about a POMDP method: searched with the
    # previous question's POMDP, which the chosen paper spells 'partially observable'
    hit = _hit("Guided Policy Optimization for partially observable RL, tested on MuJoCo.")
    standalone = replace(
        read("GPO POMDP policy what datasets did they use"), detail="what datasets did they use"
    )
    assert standalone.terms and standalone.wants
    assert answerable.missing_detail(standalone, hit) is None
    # a term the follow-up itself names is still checked
    own = replace(standalone, detail="what datasets did they use besides D4RL")
    assert "D4RL" in (answerable.missing_detail(replace(own, terms=("D4RL",)), hit) or "")


@pytest.mark.parametrize(
    ("question", "abstract"),
    [
        ("how many GPUs did DeMo use?", "We train DeMo on eight NVIDIA A100 GPUs."),
        ("how many tasks was SPRIG evaluated on", "SPRIG is evaluated on 47 different tasks."),
        ("how many parameters does BoRA add?", "BoRA needs only $b^2r$ additional parameters."),
        ("how many layers does the KAN have", "We study a two-layer KAN."),
        ("how many samples does GTO need", "GTO has sample complexity $O(1/n)$."),
        ("how many times faster is GTO", "GTO is 2.5x faster."),  # a ratio: no noun to count
    ],
)
def test_counts_the_record_gives_pass(question: str, abstract: str) -> None:
    assert answerable.missing_detail(read(question), _hit(abstract)) is None


def test_what_a_count_question_counts() -> None:
    assert read("how many GPUs did DeMo use for training?").counted == "GPUs"
    assert read("how many uncertainty scenarios can it run at once").counted == "scenarios"
    assert read("how many times faster is GTO?").counted == ""
    assert read("how many ICLR 2026 papers use CLIP?").counted == ""  # a count of papers
    assert read("how many kinds of tasks did they evaluate on").counted == "tasks"
    assert read("how many types of attacks").counted == "attacks"  # what is sorted is counted
    # the head of a longer noun phrase is its first plural, not its second word
    assert read("how many continuous control tasks in the experiments").counted == "tasks"
    assert read("how many new rotation representations does it propose").counted == (
        "representations"
    )
    assert read("how many continuous RL tasks are used").counted == "tasks"
    assert read("how many physics tasks").counted == "tasks"  # 'physics' is no plural
    assert read("how many LLMs and datasets were used").counted == "LLMs"


def test_a_count_written_as_a_word_answers_a_longer_noun_phrase() -> None:
    abstract = "Experiment results on five continuous RL tasks show gains. We propose a method."
    question = read("how many continuous control tasks in the experiments")
    assert answerable.missing_detail(question, _hit(abstract)) is None


def test_low_confidence_and_missing_details_are_refused() -> None:
    """One decision, with or without an LLM (the model is not asked what is refused)."""
    model = Model(
        {n: 1.0 for n in FEATURES},
        -5.0,
        dict.fromkeys(FEATURES, 0.0),
        dict.fromkeys(FEATURES, 1.0),
        threshold=0.5,
    )
    weak = Evidence(_row(0.1))
    assert not decide(weak, model).answer  # below the threshold
    assert decide(Evidence(_row(0.9)), model).answer
    detail = Evidence(_row(0.9), "the records hold no author or affiliation information")
    refused = decide(detail, model)
    assert not refused.answer and refused.why == detail.missing_detail


def test_unheld_is_the_rarest_missing_word_over_the_first_five_hits_together() -> None:
    def rarest_missing(question: str, text: str) -> float:
        words = [w for w in question.lower().split() if w not in text.lower()]
        return 1.0 if "diffusion" in words else 0.5 if words else 0.0

    hits = [_hit(f"Paper {n} on language models and sampling.") for n in range(7)]
    query = read("papers on diffusion-based language models")

    def unheld(found_in: int) -> float:
        mine = list(hits)
        mine[found_in] = _hit("A diffusion sampler.")
        evidence = answerable.gather(
            query, mine, 0.5, lambda q, t: 0.5, lambda q: 1.0, rarest_missing
        )
        return evidence.features["unheld"]

    assert unheld(found_in=4) < 1.0  # the fifth hit holds 'diffusion' ('diffusion-based' split)
    assert unheld(found_in=5) == 1.0  # only the sixth does: not among the first five


def test_the_best_threshold_sits_halfway_below_the_best_cut() -> None:
    # probabilities 0.9, 0.7, 0.2: 'at least 0.7' scores best, so the cut sits at 0.45;
    # a tie keeps the higher cut
    score = {0.9: 0.5, 0.7: 0.8, 0.2: 0.8}
    assert logistic.best_threshold([0.2, 0.9, 0.7, 0.7], score.__getitem__) == pytest.approx(0.45)
    assert logistic.best_threshold([0.3], lambda cut: 1.0) == pytest.approx(0.15)


def test_dense_z_and_lead_place_the_paper_among_the_questions_cosines() -> None:
    """`dense_z`: the paper's cosine in standard deviations above the question's mean
    cosine over the stored chunks; `dense_lead`: how far it leads the other first hits."""
    hits = [
        Hit(Paper(f"p{n}", "An abstract.", label="X"), 1.0, cosine, 3.0)
        for n, cosine in enumerate([0.30, 0.45, 0.20])
    ]
    query = read("training llms over slow internet links")

    def features(at: int, spread: tuple[float, float]) -> dict[str, float]:
        evidence = answerable.gather(
            query,
            hits,
            0.5,
            lambda q, t: 0.5,
            lambda q: 1.0,
            lambda q, t: 0.0,
            at,
            spread=spread,
        )
        return evidence.features

    first = features(0, (0.10, 0.05))
    assert first["dense_z"] == pytest.approx(4.0)
    assert first["dense_lead"] == pytest.approx(-0.15)  # BM25 put it ahead of a closer one
    assert features(1, (0.10, 0.05))["dense_lead"] == pytest.approx(0.15)
    assert features(0, (0.0, 0.0))["dense_z"] == answerable.Z_LIMIT  # no spread: clipped


def test_a_grouped_number_is_found_as_the_abstract_rounds_it() -> None:
    abstract = "EAMET achieves about 90% editing efficacy when editing 10k facts."
    question = read("how much editing efficacy when editing 10,000 facts?")
    assert answerable.missing_detail(question, _hit(abstract)) is None
    elsewhere = read("how much editing efficacy when editing 20,000 facts?")
    assert answerable.missing_detail(elsewhere, _hit(abstract)) is not None

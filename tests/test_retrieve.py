"""Retrieval on the real seeds: paraphrased questions find their paper; fusion and filters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.answering.answer import make_sources
from rag.assistant import Assistant
from rag.corpus.papers import same_paper, sentence_keys
from rag.retrieval.retrieve import BM25Index, Filters, _relative, _rrf
from tests.conftest import make_settings
from tests.fakes import HashEmbedder

# Each question avoids the paper's own name and rare terms; the snippet identifies the gold.
PARAPHRASES = [
    (
        "How can a small drafting model be trained so that the large model accepts more of the "
        "tokens it proposes?",
        "existing training objectives optimize only a single greedy draft",
    ),
    (
        "Making low-rank fine-tuning adapters more expressive without adding many parameters",
        "Increasing the dimension $r$ can raise the rank of LoRA",
    ),
    (
        "Updating many facts stored in a language model's weights at once",
        "Model editing techniques are essential for efficiently updating knowledge",
    ),
    (
        "Optimising the general system instructions given to a chatbot rather than task prompts",
        "much less attention has been given to optimizing the general instructions",
    ),
    (
        "Searching network architectures under hard limits on device latency",
        "Recent work has extended NAS to hardware-aware settings",
    ),
    (
        "Actor-critic reinforcement learning that stays reliable when the environment "
        "differs from training",
        "Distributionally robust RL (DR-RL) algorithms have been proposed",
    ),
    (
        "Recommending matches on dating apps so that fewer users quit",
        "On two-sided matching platforms such as online dating and recruiting",
    ),
    (
        "Balancing imitation of the teacher against the task loss when compressing a network",
        "the trade-off between optimizing for the primary task loss and mimicking the teacher",
    ),
    (
        "Using quaternions and SU(2) to estimate 3D orientation",
        "This paper revisits the topic of rotation estimation",
    ),
    (
        "How does the noise added for privacy interact with adaptive optimizers like signSGD?",
        "providing the first SDE-based analysis of private optimizers",
    ),
    (
        "Cutting the bandwidth of gradient synchronisation in data-parallel training",
        "full-precision gradient all-reduce imposes a severe communication bottleneck",
    ),
    (
        "Running dynamic programming recursions in parallel on graphics cards",
        "reformulates broad classes of forward DP recursions as batched min--plus",
    ),
    (
        "Estimating the partition function of the contrastive loss for image-text pretraining "
        "without huge batches",
        "Accurately estimating the normalization term",
    ),
]


def gold_id(assistant: Assistant, snippet: str) -> str:
    [pid] = [
        pid
        for pid, sp in assistant.retriever.catalog.papers.items()
        if snippet in sp.paper.abstract
    ]
    return pid


@pytest.mark.parametrize("question,snippet", PARAPHRASES, ids=[f"q{i}" for i in range(13)])
def test_paraphrased_question_finds_its_paper(
    seeded: Assistant, question: str, snippet: str
) -> None:
    hits = seeded.search(question, top_k=3)
    assert gold_id(seeded, snippet) in [h.paper.paper_id for h in hits]


def test_most_paraphrases_rank_their_paper_first(seeded: Assistant) -> None:
    first = [
        seeded.search(q, top_k=1)[0].paper.paper_id == gold_id(seeded, s) for q, s in PARAPHRASES
    ]
    assert sum(first) >= len(PARAPHRASES) - 1, first


def test_hybrid_is_at_least_as_good_as_either_retriever(seeded: Assistant) -> None:
    def hits_at_3(mode: str) -> int:
        return sum(
            gold_id(seeded, snippet)
            in [h.paper.paper_id for h in seeded.search(q, top_k=3, retriever=mode)]
            for q, snippet in PARAPHRASES
        )

    hybrid, dense, bm25 = hits_at_3("hybrid"), hits_at_3("dense"), hits_at_3("bm25")
    assert hybrid >= max(dense, bm25) - 1
    assert hybrid == len(PARAPHRASES)


def test_hits_are_distinct_papers_with_capped_chunks(seeded: Assistant) -> None:
    hits = seeded.search("reinforcement learning for language model reasoning", top_k=8)
    ids = [h.paper.paper_id.removeprefix("papers/") for h in hits]
    assert len(ids) == len(set(ids)) == 8
    assert all(1 <= len(h.chunk_indexes) <= seeded.settings.per_paper_cap for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.dense_similarity is not None for h in hits)


def test_filters_restrict_results(seeded: Assistant) -> None:
    assert seeded.search("speculative decoding", filters=Filters(year=2019)) == []
    hits = seeded.search("speculative decoding", filters=Filters(venue="iclr", year=2026))
    assert hits and all(h.paper.year == 2026 for h in hits)


def test_bm25_matches_acronym_plurals_and_stems() -> None:
    bm25 = BM25Index(["fine-tuning LLM adapters", "graph neural networks", "speculative decoder"])
    assert bm25.scores("LLMs")[0] > 0
    assert bm25.scores("decoding speculatively")[2] > 0
    assert not bm25.scores("zebra").any()


def test_relative_fusion_keeps_a_clear_lexical_winner_first() -> None:
    # BM25 finds paper a far ahead of b; dense slightly prefers b. Ranks alone (RRF) call it
    # a tie broken by the dense vote; normalised scores keep a's margin.
    dense = [("b#0", 0.52), ("a#0", 0.50), ("c#0", 0.30)]
    sparse = [("a#0", 30.0), ("b#0", 8.0), ("c#1", 7.0)]
    chunk, paper = _relative([(0.3, dense), (1.0, sparse)])
    assert sorted(paper, key=paper.__getitem__, reverse=True) == ["a", "b", "c"]
    assert paper["a"] == pytest.approx((0.3 * (0.20 / 0.22) + 1.0) / 1.3)
    assert min(paper.values()) >= 0.0 and max(paper.values()) <= 1.0
    assert chunk["c#0"] == 0.0 and chunk["c#1"] == 0.0  # each retriever's weakest gets 0


def test_relative_fusion_of_one_candidate_and_rrf_ranks() -> None:
    _, paper = _relative([(1.0, [("x#0", 3.0)])])
    assert paper == {"x": 1.0}
    fused = _rrf([(1.0, [("a#0", 9.0), ("b#0", 1.0)]), (0.5, [("b#0", 0.9)])], k=60)
    assert fused["a#0"] == pytest.approx(1 / 61)
    assert fused["b#0"] == pytest.approx(1 / 62 + 0.5 / 61)


@pytest.mark.parametrize("fusion", ["relative", "rrf"])
def test_both_fusions_find_the_paraphrased_papers(seeded: Assistant, fusion: str) -> None:
    retriever = seeded.retriever
    original = retriever.settings
    retriever.settings = original.model_copy(update={"fusion": fusion})
    try:
        found = sum(
            gold_id(seeded, snippet) in [h.paper.paper_id for h in seeded.search(q, top_k=3)]
            for q, snippet in PARAPHRASES
        )
    finally:
        retriever.settings = original
    assert found == len(PARAPHRASES)


SUBMISSION = (
    "We study exploration in deep reinforcement learning with counts over hashed states. "
    "A simple generalization of classic count-based exploration reaches near "
    "state-of-the-art results on high-dimensional continuous control benchmarks. "
    "Hashing states to codes lets us count occurrences with hash tables. "
    "We find that domain-dependent learned hash codes further improve these results."
)
# The camera-ready version: its first sentence rewritten, the others kept.
CAMERA_READY = SUBMISSION.replace(
    "We study exploration in deep reinforcement learning with counts over hashed states.",
    "Count-based exploration is thought to fail in high-dimensional state spaces.",
)
OTHER = (
    "Exploration bonuses in deep reinforcement learning often come from prediction errors "
    "of a learned dynamics model. We instead reward novelty measured by random network "
    "distillation on visited states and report strong results on hard Atari games."
)


def test_two_versions_of_one_paper_share_half_their_sentences() -> None:
    ready, submitted = sentence_keys(CAMERA_READY), sentence_keys(SUBMISSION)
    assert same_paper(ready, submitted)
    assert not same_paper(ready, sentence_keys(OTHER))
    # one sentence in common is not enough, even out of two
    two = "A first sentence of the paper with some words. The second sentence here differs a lot."
    one_shared = "A first sentence of the paper with some words. Nothing else is the same in this."
    assert not same_paper(sentence_keys(two), sentence_keys(one_shared))


@pytest.mark.parametrize("fold", [True, False])
def test_versions_of_a_paper_fold_into_one_source(
    tmp_path: Path, fake_embedder: HashEmbedder, fold: bool
) -> None:
    records = [
        {"id": "v1", "title": "Exploration", "abstract": SUBMISSION, "venue": "ICLR", "year": 2017},
        {
            "id": "v2",
            "title": "Exploration",
            "abstract": CAMERA_READY,
            "venue": "NeurIPS",
            "year": 2017,
        },
        {"id": "o1", "title": "Novelty", "abstract": OTHER, "venue": "ICLR", "year": 2019},
    ]
    corpus = tmp_path / "papers.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    settings = make_settings(tmp_path / "index", fold_versions=fold)
    assistant = Assistant(settings, fake_embedder)
    assistant.ingest([corpus])
    hits = assistant.retriever.search("count-based exploration with hashed states", top_k=3)
    ids = [h.paper.paper_id.removeprefix("papers/") for h in hits]
    if fold:
        assert sorted(ids) == ["o1", ids[0]] and ids[0] in ("v1", "v2")
        (other_version,) = hits[0].versions
        assert {ids[0], other_version.paper_id.removeprefix("papers/")} == {"v1", "v2"}
        source = make_sources(hits)[0]
        assert source.versions == [f"{other_version.venue} 2017"]
    else:
        assert sorted(ids) == ["o1", "v1", "v2"]
        assert all(not h.versions for h in hits)


def test_cosine_spread_is_the_mean_and_deviation_over_every_stored_chunk(
    seeded: Assistant,
) -> None:
    """The spread comes from the vectors' mean and covariance, not a pass per question:
    it equals the figures of one product with every stored vector."""
    retriever = seeded.retriever
    _, _, matrix = retriever.stored_vectors()
    for question in ("training llms over slow internet links", "best pizza in naples"):
        vector = seeded.embedder.embed_query(question)
        cosines = matrix.astype(np.float64) @ vector
        mean, deviation = retriever.cosine_spread(vector)
        assert mean == pytest.approx(float(cosines.mean()), abs=1e-6)
        assert deviation == pytest.approx(float(cosines.std(ddof=1)), rel=1e-4)


def test_a_paper_matching_its_informal_question_stands_out_of_the_spread(
    seeded: Assistant,
) -> None:
    """An informal question's paper (DeMo, for "cut gradient sync traffic ...") stands
    further above the question's cosines to the other chunks than any paper does for a
    question no seed paper covers."""

    def best_z(question: str) -> float:
        hits = seeded.search(question, top_k=5)
        vector = seeded.embedder.embed_query(question)
        mean, deviation = seeded.retriever.cosine_spread(vector)
        return max(((h.dense_similarity or 0.0) - mean) / deviation for h in hits)

    assert best_z("cut gradient sync traffic when training across datacenters") > best_z(
        "teaching robots to fold laundry"
    )

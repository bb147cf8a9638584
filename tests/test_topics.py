"""Topics and related papers: the clustering and labelling on fixture data, then the real
Chroma store of the seeds (every paper in one topic, the cache, the scope), the related
papers (never the paper itself, an unknown id is a RagError) and both `--json` shapes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rag.aggregate.topics import (
    add_map,
    build,
    cache_kind,
    merge_terms,
    n_topics,
    sample_per_topic,
    spell,
)
from rag.assistant import Assistant
from rag.cli import main
from rag.corpus.labels import LABELS_VERSION
from rag.errors import RagError
from rag.retrieval.related import UnknownPaper
from rag.store.index import Catalog, StoredPaper, mean_per_paper, paper_from_metadata
from rag.types import Filters, Paper
from tests.fakes import HashEmbedder

from .conftest import make_settings

SUBJECTS = {
    "bandit": [
        "We study multi-armed bandit problems with contextual bandits.",
        "Our regret bounds for the bandit algorithm are tight.",
        "Thompson sampling for contextual bandits has low regret.",
        "Lower regret bounds hold for every bandit instance.",
    ],
    "speech": [
        "We present a speech recognition system for noisy audio.",
        "Acoustic models for speech recognition are trained on audio.",
        "Each speaker is recognised from short audio clips.",
        "The speech recognition error drops on noisy speech.",
    ],
    "privacy": [
        "We give differentially private algorithms for counting queries.",
        "The differential privacy guarantee covers every record.",
        "A privacy budget is split across queries under differential privacy.",
        "Differentially private training adds calibrated noise.",
    ],
}
GENERIC = "Experiments show that the proposed method improves results on standard benchmarks."


def _fixture(per_subject: int = 12) -> tuple[list[str], np.ndarray, list[str]]:
    """Three subjects: vectors near one of three axes, texts about that subject."""
    rng = np.random.default_rng(1)
    ids, rows, texts = [], [], []
    for axis, (name, sentences) in enumerate(SUBJECTS.items()):
        for i in range(per_subject):
            vector = np.zeros(16)
            vector[axis] = 1.0
            vector += rng.normal(0, 0.05, 16)
            rows.append(vector / np.linalg.norm(vector))
            ids.append(f"{name}-{i}")
            picked = [sentences[i % 4], sentences[(i + 1) % 4]]
            texts.append(" ".join([*picked, GENERIC]))
    return ids, np.asarray(rows, dtype=np.float32), texts


# -- clustering and labelling on fixture data ---------------------------------------------


def test_three_subjects_make_three_topics_named_by_their_terms() -> None:
    ids, vectors, texts = _fixture()
    payload = build(ids, vectors, texts, k=3)
    topics = payload["topics"]
    assert [len(t["ids"]) for t in topics] == [12, 12, 12]
    for topic in topics:  # each topic holds one subject, whole
        subjects = {pid.split("-")[0] for pid in topic["ids"]}
        assert len(subjects) == 1
        subject = subjects.pop()
        assert subject in topic["label"].lower(), topic["label"]
        assert topic["sims"] == sorted(topic["sims"], reverse=True)  # most central first
    labels = {t["label"] for t in topics}
    assert any(label.startswith("Speech recognition") for label in labels), labels
    assert any("differential privacy" in label.lower() for label in labels), labels
    assert not any("benchmarks" in t["terms"] for t in topics)  # in every topic: no term


def test_map_places_every_drawn_paper_inside_the_unit_square() -> None:
    ids, vectors, texts = _fixture()
    payload = add_map(build(ids, vectors, texts, k=3), ids, vectors, points=100)
    drawn = payload["map"]
    assert sorted(drawn["ids"]) == sorted(ids)
    assert max(map(abs, drawn["x"] + drawn["y"])) <= 1.0 + 1e-9


def test_sample_per_topic_keeps_each_topics_share() -> None:
    assign = np.array([0] * 900 + [1] * 90 + [2] * 10)
    drawn = sample_per_topic(assign, 100)
    counts = np.bincount(assign[drawn])
    assert counts.tolist() == [90, 9, 3]  # in proportion, at least 3 each
    assert (drawn == np.sort(drawn)).all()


def test_terms_merge_into_phrases_and_drop_acronyms_of_kept_terms() -> None:
    ranked = [("monte", 3.0), ("carlo", 2.9), ("monte carlo", 2.5), ("mcmc", 2.0)]
    assert merge_terms(ranked) == ["monte carlo", "mcmc"]
    assert merge_terms([("reinforcement learning", 3), ("rl", 2), ("policies", 1.5)]) == [
        "reinforcement learning",
        "policies",
    ]
    joined = merge_terms([("markov chain monte", 2), ("chain monte carlo", 2)])
    assert joined == ["markov chain monte carlo"]
    assert merge_terms([("gaussian process", 3), ("process regression", 2)]) == ["gaussian process"]
    assert merge_terms([("image", 3), ("images", 2)]) == ["image"]


def test_terms_are_spelled_as_the_texts_spell_them() -> None:
    texts = ["Large language models (LLMs) and LLMs again.", "Monte Carlo runs. LLMs."]
    assert spell(["llms", "monte carlo", "runs"], texts) == ["LLMs", "Monte Carlo", "runs"]


def test_default_number_of_topics_grows_with_the_cube_root() -> None:
    assert [n_topics(n) for n in (3, 10, 52, 22_137)] == [1, 3, 5, 37]


def test_cache_kind_changes_with_the_request() -> None:
    assert cache_kind({}, None, 3000) == cache_kind({}, None, 3000)
    assert cache_kind({"venue": "ICLR"}, None, 3000) != cache_kind({}, None, 3000)
    assert cache_kind({}, 8, 3000) != cache_kind({}, None, 3000)


def test_mean_per_paper_averages_chunks_to_unit_vectors() -> None:
    matrix = np.array([[1, 0], [0, 1], [0, 2]], dtype=np.float32)
    ids, vectors = mean_per_paper(["a#0", "a#1", "b#0"], matrix)
    assert ids == ["a", "b"]
    assert np.allclose(vectors, [[0.70710677, 0.70710677], [0, 1]])
    assert mean_per_paper(["a#0", "b#0"], matrix[:2], papers={"b"})[0] == ["b"]


# -- labels are derived when read --------------------------------------------------------


def test_a_stored_label_from_older_code_is_derived_again() -> None:
    abstract = (
        "Prompts matter. We propose SPRIG, an edit-based genetic algorithm that builds prompts."
    )
    meta = {"paper_id": "x", "label": "Prompts matter. We propose …"}
    assert paper_from_metadata(meta, abstract).label == "SPRIG: an edit-based genetic algorithm"
    old = Catalog(papers={"x": StoredPaper(Paper("x", abstract, label="Prompts matter …"), "h")})
    assert old.labels == 0  # a catalog saved before labels had a version
    old.relabel()
    assert old.papers["x"].paper.label.startswith("SPRIG: ")
    assert old.labels == LABELS_VERSION
    titled = {"paper_id": "y", "title": "A Real Title", "label": "A Real Title"}
    assert paper_from_metadata(titled, abstract).label == "A Real Title"


# -- the real store of the seeds ---------------------------------------------------------


@pytest.fixture
def private(hashed_index: Path, tmp_path: Path, fake_embedder: HashEmbedder) -> Assistant:
    """An assistant over a private copy of the seeds (the topics cache writes into it)."""
    index = tmp_path / "index"
    shutil.copytree(hashed_index, index)
    return Assistant(make_settings(index), fake_embedder)


def test_seed_topics_hold_every_paper_once_and_are_cached(
    private: Assistant, fake_embedder: HashEmbedder
) -> None:
    found = private.topics()
    members = [p.paper_id for t in found.topics for p in t.papers]
    assert sorted(members) == sorted(private.papers())  # every paper, once
    assert len(found.topics) == 5 and found.n_papers == 52 and not found.cached
    assert [t.size for t in found.topics] == sorted((t.size for t in found.topics), reverse=True)
    assert all(t.label and len(t.terms) >= 3 for t in found.topics)
    assert not found.mapped
    again = Assistant(private.settings, fake_embedder).topics(with_map=True)  # a new process
    assert again.cached and again.mapped
    assert [t.label for t in again.topics] == [t.label for t in found.topics]
    assert len(again.mapped_papers()) == 52
    third = Assistant(private.settings, fake_embedder).topics(with_map=True)
    assert third.cached and third.mapped


def test_topics_inside_a_scope_the_index_lacks_are_none(fake_seeded: Assistant) -> None:
    assert fake_seeded.topics(Filters(venue="NeurIPS")).topics == []
    assert fake_seeded.topics(Filters(venue="iclr", year=2026)).n_papers == 52


def test_related_papers_never_include_the_paper_and_rank_by_similarity(
    seeded: Assistant,
) -> None:
    """Real: the nearest paper is the model's judgement (hash vectors put another first)."""
    papers = seeded.papers()
    gto = next(pid for pid, p in papers.items() if p.label.startswith("GTO"))
    found = seeded.related(gto, top_k=5)
    ids = [r.paper_id for r in found.related]
    assert len(ids) == 5 and gto not in ids and len(set(ids)) == 5
    scores = [r.score for r in found.related]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    # the speculative sampling paper is the one nearest to a speculative decoding paper
    assert "speculative" in papers[ids[0]].abstract.lower()
    assert seeded.related(gto, filters=Filters(venue="NeurIPS")).related == []


def test_an_unknown_paper_id_is_an_expected_error_naming_close_ids(fake_seeded: Assistant) -> None:
    known = next(iter(fake_seeded.papers()))
    with pytest.raises(UnknownPaper) as caught:
        fake_seeded.related(known[:-1])
    assert isinstance(caught.value, RagError)
    assert repr(known) in str(caught.value)


# -- the CLI's --json shapes ----------------------------------------------------------------


def test_topics_json_shape(private: Assistant, hash_embedded: None) -> None:
    index = str(private.settings.index_dir)  # `rag topics` opens it with a HashEmbedder
    result = CliRunner().invoke(main, ["--index-dir", index, "topics", "--json", "--papers", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert next(iter(data)) == "topics"
    for topic in data["topics"]:
        assert list(topic)[:3] == ["label", "size", "papers"]
        assert isinstance(topic["label"], str) and topic["size"] >= len(topic["papers"])
        assert len(topic["papers"]) <= 3
        assert all({"paper_id", "title"} <= set(p) for p in topic["papers"])
    assert sum(t["size"] for t in data["topics"]) == 52
    scoped = CliRunner().invoke(main, ["--index-dir", index, "topics", "--venue", "NIPS", "--json"])
    assert json.loads(scoped.stdout)["topics"] == []


def test_related_json_shape_and_unknown_id(fake_seeded: Assistant, hash_embedded: None) -> None:
    index = str(fake_seeded.settings.index_dir)  # `rag related` opens it with a HashEmbedder
    paper_id = next(iter(fake_seeded.papers()))
    result = CliRunner().invoke(main, ["--index-dir", index, "related", paper_id, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["paper_id", "title", "related"]
    assert data["paper_id"] == paper_id and len(data["related"]) == 10
    assert all({"paper_id", "title", "score"} <= set(r) for r in data["related"])
    assert paper_id not in {r["paper_id"] for r in data["related"]}
    missing = CliRunner().invoke(main, ["--index-dir", index, "related", "no-such-paper"])
    assert missing.exit_code == 2
    assert "no paper 'no-such-paper'" in missing.output and "Traceback" not in missing.output

"""`rag bench --scale`: the synthetic papers and vectors, and the JSON contract end to end.

Sizes count every paper in the index: the 52 bundled seeds plus size - 52 synthetic
papers, so a row's `papers` equals its size. Figures are never asserted as speed targets.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eval import scale
from eval.scale import Generator, ScaleJob, SyntheticEmbedder, noisy, scale_sizes
from rag.cli import main
from rag.config import BUNDLED_CORPUS
from rag.corpus.papers import FieldMap
from rag.ingest import read_papers
from rag.text import split_sentences
from rag.types import IngestSummary, Paper

from .conftest import make_settings
from .fakes import HashEmbedder


def test_sizes_keep_those_below_the_scale_once() -> None:
    assert scale_sizes(1_000_000) == [22_000, 100_000, 1_000_000]
    assert scale_sizes(50_000) == [22_000, 50_000]
    assert scale_sizes(400, [200, 400, 200, 900]) == [200, 400]
    assert scale.parse_sizes("5000, 10000") == [5000, 10000]
    assert scale.parse_sizes(None) is None


def _vectors(n: int, seed: int = 0) -> list[np.ndarray]:
    """Two random unit chunk vectors a parent."""
    rng = np.random.default_rng(seed)
    out = rng.normal(size=(n, 2, 64)).astype(np.float32)
    out /= np.linalg.norm(out, axis=2, keepdims=True)
    return list(out)


def _generator(seed: int = 7, mix: int = scale.MIX) -> Generator:
    base = scale.seed_papers()
    generator = Generator.of(base, sample=20, seed=seed, reserved=base, mix=mix)
    generator.link(_vectors(len(generator.parents)))
    return generator


@pytest.mark.parametrize("mix", [1, 3])
def test_synthetic_papers_are_deterministic_recombinations_of_real_sentences(mix: int) -> None:
    first = list(_generator(mix=mix).records(0, 60))
    assert first == list(_generator(mix=mix).records(0, 60))  # seeded
    assert first != list(_generator(seed=8, mix=mix).records(0, 60))
    base = scale.seed_papers()
    real = {s for p in base for s in split_sentences(p.abstract)}
    abstracts = {p.abstract for p in base}
    for record in first:
        sentences = split_sentences(record["abstract"])
        assert set(sentences) <= real  # every sentence is a real abstract's
        assert record["abstract"] not in abstracts  # never a copy of a real one
        assert record["id"].startswith(scale.SYN_PREFIX)
    assert len({r["abstract"] for r in first}) == len(first)  # dedupe merges none
    assert len({r["title"] for r in first}) == len(first)


def test_every_synthetic_paper_is_ingested(tmp_path: Path) -> None:
    # short sentences ("Code is here.") can make a placeholder-length abstract, which the
    # loader would skip: it is drawn again, never written
    long = "We study a problem with many more words than the loader needs."
    base = [
        Paper("p1", f"{long} Code is here.", title="Learning to do one thing well"),
        Paper("p2", f"Data is there. {long.replace('We', 'They')}", title="Two tasks at once"),
    ]
    generator = Generator.of(base, sample=2, seed=3, swap=1.0, mix=1)
    path = tmp_path / "papers.jsonl"
    assert scale.write_records(generator.records(0, 8), path) == 8
    items = list(read_papers([path], FieldMap(), IngestSummary()))
    assert all(isinstance(i, Paper) for i in items) and len(items) == 8


def test_a_mixed_paper_is_runs_of_its_sources_sentences_not_a_copy_of_one() -> None:
    generator = _generator(mix=3)
    assert generator.neighbours is not None
    sentences = [split_sentences(p.abstract) for p in generator.parents]
    shares = []
    for record in generator.records(0, 200):
        sources = generator.sources_of[record["title"]]
        parent, others = sources[0], sources[1:]
        assert len(set(sources)) == 3 and set(others) <= set(generator.neighbours[parent])
        written = split_sentences(record["abstract"])
        assert len(written) >= 3
        # every sentence is one of its sources', and every source gives one (or more)
        owners = [{s for s in sources if w in sentences[s]} for w in written]
        assert all(owners)
        assert all(any(s in o for o in owners) for s in sources)
        shares.append(sum(w in sentences[parent] for w in written) / len(written))
    # a third of the parent's sentences on average, never most of them (the near-copies
    # of --mix 1 keep ~70%); seeds sharing sentences with each other can lift a share
    assert 0.25 < float(np.mean(shares)) < 0.5


def test_neighbours_are_the_nearest_other_parents(monkeypatch: pytest.MonkeyPatch) -> None:
    base = scale.seed_papers()
    generator = Generator.of(base, sample=6, seed=1)
    # parents 0-2 point one way, 3-5 the other: each one's neighbours are its own group
    a, b = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]
    near = [np.stack([a + 0.01 * i * b]) for i in range(3)]
    far = [np.stack([b + 0.01 * i * a]) for i in range(3)]
    generator.link(near + far)
    assert generator.neighbours is not None
    assert generator.neighbours.shape == (6, 5)  # at most the other parents
    monkeypatch.setattr(scale, "NEIGHBOURS", 2)
    generator.link(near + far)
    assert [set(row) for row in generator.neighbours] == [
        {1, 2},
        {0, 2},
        {0, 1},
        {4, 5},
        {3, 5},
        {3, 4},
    ]
    with pytest.raises(ValueError, match="link"):
        next(Generator.of(base, sample=6, seed=1).records(0, 1))
    small = Generator.of(base, sample=6, seed=1)
    small.link(near + far)
    small.neighbours = small.neighbours[:, :0]  # no neighbours: falls back to --mix 1's swap
    assert next(small.records(0, 1))["abstract"]


def test_synthetic_vectors_stay_near_their_parent() -> None:
    rng = np.random.default_rng(0)
    parents = rng.normal(size=(500, 384)).astype(np.float32)
    parents /= np.linalg.norm(parents, axis=1, keepdims=True)
    made = noisy(parents, 0.025, rng)
    cosines = np.einsum("ij,ij->i", made, parents)
    assert np.allclose(np.linalg.norm(made, axis=1), 1, atol=1e-5)
    assert 0.87 < cosines.mean() < 0.93  # 1 / sqrt(1 + 384 * 0.025^2) = 0.898
    assert np.allclose(noisy(parents, 0.0, rng), parents, atol=1e-6)


def test_the_embedder_answers_synthetic_texts_and_sends_the_rest_to_the_model() -> None:
    generator = _generator()
    records = list(generator.records(0, 5))
    real = HashEmbedder()
    vectors = [np.eye(64, dtype=np.float32)[i : i + 2] for i in range(len(generator.parents))]
    wrapper = SyntheticEmbedder(real, generator.sources_of, vectors, sigma=0.01)
    texts = [f"{r['title']}. {r['abstract'][:80]}" for r in records] + ["No title here."]
    got = wrapper.embed(texts)
    assert wrapper.name == real.name and real.calls == 1 and wrapper.model_texts == 1
    assert wrapper.synthetic_texts == 5 and wrapper.mean_cosine is not None
    assert wrapper.mean_cosine > 0.9
    for row, record in zip(got, records, strict=False):
        sources = generator.sources_of[record["title"]]
        # the unit mean of three orthogonal first-chunk vectors: 1/sqrt(3) to each
        for source in sources:
            assert abs(float(row @ vectors[source][0]) - 3**-0.5) < 0.05
        assert float(row @ wrapper.base_vector(sources, 0)) > 0.99
    assert np.allclose(got[-1], real.embed_query("No title here."))


def test_with_vectors_from_the_model_every_text_goes_through_it() -> None:
    generator = _generator()
    records = list(generator.records(0, 5))
    real = HashEmbedder()
    vectors = [np.eye(64, dtype=np.float32)[i : i + 2] for i in range(len(generator.parents))]
    wrapper = SyntheticEmbedder(real, generator.sources_of, vectors, made_by="model")
    texts = [f"{r['title']}. {r['abstract'][:80]}" for r in records]
    got = wrapper.embed(texts)
    assert wrapper.model_texts == 5 and wrapper.synthetic_texts == 0
    assert wrapper.mean_cosine is None
    assert np.allclose(got, real.embed(texts))


def _fake_job(sizes: list[int], server: bool = False) -> ScaleJob:
    """A scale job over the seeds with the hashing embedder, no cold starts."""
    return ScaleJob(
        sizes=sizes,
        base=[Path(BUNDLED_CORPUS)],
        sample=30,
        questions_file=scale.Path(__file__).parents[1] / "eval" / "questions" / "iclr2026.jsonl",
        cold_start=False,
        embedder=HashEmbedder(),
        probe_embedder="tests.fakes:HashEmbedder",
        server=server,
    )


def test_run_scale_grows_one_index_with_a_fake_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_ANN_MIN_ROWS", "0")  # the probe searches through the ANN index
    job = _fake_job([100, 160])
    result = scale.bench_scale(job, make_settings(tmp_path / "unused"), tmp_path / "out", print)
    _check_contract(result, [100, 160])
    assert result["model_texts"] > 0  # the seeds went through the (fake) model
    assert all(r["dense_search"] == "ann" for r in result["scale"])
    assert all(0.9 <= r["ann_recall_at_10"] <= 1 for r in result["scale"])
    assert all(r["cold_start_s"] is None for r in result["scale"])
    assert (tmp_path / "out" / "scale.png").stat().st_size > 0
    assert json.loads((tmp_path / "out" / "scale.json").read_text())["scale"] == result["scale"]
    assert result["index"] is None and not (tmp_path / "unused").exists()


@pytest.mark.slow
def test_the_server_row_measures_an_instance_against_chroma_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_ANN_MIN_ROWS", "0")  # past it: the server's HNSW index searches
    job = _fake_job([120], server=True)
    result = scale.run_scale(job, make_settings(tmp_path / "unused"), tmp_path / "work", print)
    served, local = result["server"], result["scale"][-1]
    assert served["papers"] == 120 and served["dense_search"] == "server"
    assert served["first_answer_s"] > 0 and served["cold_start_s"] is None
    assert 0 < served["query_p50_ms"] <= served["query_p95_ms"]
    assert served["hit_at_5"] == local["hit_at_5"]  # the same papers found either way
    assert served["dense_recall_at_10"] >= 0.9
    assert served["rss_gb"] > 0 and served["server_rss_gb"] > 0
    assert served["instance_disk_gb"] > 0  # its catalog and BM25 snapshots
    assert "against chroma run: papers 120" in scale.format_scale({**result, "out": "x"})


def _check_contract(result: dict, sizes: list[int]) -> None:
    rows = result["scale"]
    assert [r["papers"] for r in rows] == sizes  # the seeds plus size - 52 synthetic papers
    for row in rows:
        assert set(row) == set(scale.ROW_KEYS)
        assert row["hit_at_5"] is not None and 0 <= row["hit_at_5"] <= 1
        assert 0 < row["query_p50_ms"] <= row["query_p95_ms"]
        assert row["query_p95_again_ms"] > 0
        assert row["rss_gb"] > 0 and row["disk_gb"] > 0 and row["snapshot_s"] > 0
        assert row["ingest_step_s"] > 0
        assert row["dense_search"] in ("exact", "ann")
        assert (row["ann_recall_at_10"] is None) == (row["dense_search"] == "exact")
    assert rows[-1]["ingest_s"] >= rows[0]["ingest_s"]
    assert result["hit_questions"] > 0
    assert result["machine"]["cpu"]["cores"] >= 1
    assert 0.5 < result["noise"]["mean_cosine_to_parent"] <= 1


@pytest.mark.model
@pytest.mark.slow
def test_bench_scale_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "--index-dir",
            f"{tmp_path}/unused",
            "bench",
            "--scale",
            "400",
            "--sizes",
            "200,400",
            "--corpus",
            str(BUNDLED_CORPUS),
            "--sample",
            "40",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    _check_contract(data, [200, 400])
    assert all(r["cold_start_s"] > 0 for r in data["scale"])
    assert data["embed_model"].startswith("local:all-MiniLM-L6-v2")
    # only the seeds' chunks (and the parents, outside the wrapper) met the real model
    assert data["model_texts"] < 200
    assert (out / "scale.png").is_file()

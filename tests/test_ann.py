"""The dense search past RAG_ANN_MIN_ROWS (faiss IVF-SQ8) and the memory-mapped vectors.

Invariants, not speeds (those are `rag bench --scale`'s): the ANN index finds what the
exact search finds on clustered vectors, keeps to a scope's rows, survives a save and a
damaged file; a retriever that searches through it ranks the seeds as the exact one does
(candidates are rescored exactly); the vectors snapshot is a mapped .npy keyed by stamp.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eval.scale import seed_papers
from rag.config import Settings
from rag.retrieval import ann as ann_module
from rag.retrieval.ann import AnnIndex, cells_for
from rag.retrieval.retrieve import BM25Index, Filters, Retriever, names_written
from rag.store import snapshot as snapshots
from rag.store.index import Store
from tests.fakes import HashEmbedder

from .conftest import make_settings


def clustered(rows: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 50 centres, as embeddings of papers on shared topics cluster."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, 32)).astype(np.float32)
    matrix = centres[rng.integers(0, 50, rows)] + 0.3 * rng.standard_normal((rows, 32))
    matrix = matrix.astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def exact_top(matrix: np.ndarray, vector: np.ndarray, k: int) -> set[int]:
    return {int(i) for i in np.argsort(-(matrix @ vector))[:k]}


def test_cells_grow_as_the_square_root_within_bounds() -> None:
    assert cells_for(100) == 16 and cells_for(1_400_000) == 1183 and cells_for(10**9) == 4096


def test_the_ann_index_finds_the_exact_neighbours_and_keeps_to_the_mask() -> None:
    matrix = clustered(4000)
    index = AnnIndex.build(matrix, nprobe=8)
    assert index.rows == 4000
    queries = clustered(20, seed=1)
    recall = np.mean(
        [len(exact_top(matrix, q, 10) & set(index.search(q, 10)[0].tolist())) / 10 for q in queries]
    )
    assert recall >= 0.9
    for q in queries:  # the scores from the 8-bit codes are near the exact inner products
        rows, scores = index.search(q, 10)
        assert np.all(np.diff(scores) <= 0)
        assert np.abs(scores - matrix[rows] @ q).max() < 0.01
    mask = np.zeros(4000, dtype=bool)
    mask[::7] = True
    for q in queries:
        found, _ = index.search(q, 20, mask)
        assert len(found) and mask[found].all()


def test_a_saved_index_loads_back_and_a_damaged_or_other_one_does_not(tmp_path: Path) -> None:
    matrix = clustered(1000)
    index = AnnIndex.build(matrix, nprobe=4)
    path = tmp_path / "ann.faiss"
    assert index.save(path)
    loaded = AnnIndex.load(path, 1000, nprobe=4)
    assert loaded is not None
    q = matrix[3]
    assert loaded.search(q, 10)[0].tolist() == index.search(q, 10)[0].tolist()
    assert AnnIndex.load(path, 999, nprobe=4) is None  # built for another catalog
    path.write_bytes(path.read_bytes()[:100])
    assert AnnIndex.load(path, 1000, nprobe=4) is None
    (tmp_path / "a-file").write_text("not a folder")
    assert not index.save(tmp_path / "a-file" / "ann.faiss")


QUESTIONS = [
    ("Which papers improve speculative decoding?", Filters()),
    ("low-rank adapters for fine-tuning", Filters()),
    ("graph neural networks", Filters(venue="ICLR")),
]


def ranked(retriever: Retriever) -> list[list[tuple[str, float, float | None]]]:
    return [
        [(h.paper.paper_id, h.score, h.dense_similarity) for h in retriever.search(q, 6, f, mode)]
        for q, f in QUESTIONS
        for mode in ("dense", "hybrid")
    ]


def assert_near(got: list[list[tuple[str, float, float | None]]], want: list[Any]) -> None:
    """The same papers in the same order with the same exact cosine, and fused scores
    within 0.02 (through the ANN index the dense scores come from its 8-bit codes)."""
    assert [[(p, sim) for p, _, sim in one] for one in got] == [
        [(p, sim) for p, _, sim in one] for one in want
    ]
    scores = [
        (a[1], b[1]) for x, y in zip(got, want, strict=True) for a, b in zip(x, y, strict=True)
    ]
    assert max(abs(a - b) for a, b in scores) < 0.02


def open_retriever(settings: Settings) -> Retriever:
    """A retriever over an index of hash-embedded seeds, as a fresh process opens it."""
    embedder = HashEmbedder()
    return Retriever(Store(settings, embedder.name), embedder, settings)


def copy_index(hashed_index: Path, to: Path, **overrides: object) -> Settings:
    shutil.copytree(hashed_index, to)
    settings = make_settings(to, **overrides)
    shutil.rmtree(snapshots.folder(settings), ignore_errors=True)
    return settings


def test_a_retriever_through_the_ann_index_ranks_as_the_exact_one(
    tmp_path: Path, hashed_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashEmbedder()
    exact_settings = copy_index(hashed_index, tmp_path / "exact")
    exact = open_retriever(exact_settings)
    settings = copy_index(hashed_index, tmp_path / "ann", ann_min_rows=0)
    through_ann = open_retriever(settings)
    assert_near(ranked(through_ann), ranked(exact))
    stamp = through_ann.catalog.stamp
    saved = snapshots.stamped_path(settings, "ann", stamp, ".faiss")
    assert saved is not None and saved.is_file()
    assert not list(snapshots.folder(exact_settings).glob("ann-*"))  # below the threshold

    def refuse(*args: object, **kwargs: object) -> AnnIndex:
        raise AssertionError("the saved ANN index was not used")

    monkeypatch.setattr(ann_module.AnnIndex, "build", classmethod(refuse))
    again = open_retriever(settings)
    assert_near(ranked(again), ranked(exact))
    vector = embedder.embed_query("speculative decoding")
    near, exact_rows = again.dense_rows(vector, 10), again.dense_rows(vector, 10, exact=True)
    assert {r for r, _ in near} == {r for r, _ in exact_rows}  # near ties may swap
    assert max(abs(a - b) for (_, a), (_, b) in zip(near, exact_rows, strict=True)) < 0.01


def test_the_vectors_snapshot_is_a_mapped_npy_that_replaces_the_pickled_one(
    tmp_path: Path, hashed_index: Path
) -> None:
    settings = copy_index(hashed_index, tmp_path / "index")
    first = open_retriever(settings)
    expected = ranked(first)
    stamp = first.catalog.stamp
    path = snapshots.stamped_path(settings, "vectors", stamp, ".npy")
    assert path is not None and path.is_file()
    older = snapshots.folder(settings) / "vectors.snap"  # what rag wrote before 2026-12
    older.write_bytes(b"RAG-SNAPSHOT\n{}\n")
    (snapshots.folder(settings) / "vectors-oldstamp.npy").write_bytes(b"x")
    loaded = open_retriever(settings)
    _, _, matrix = loaded.stored_vectors()
    assert isinstance(matrix, np.memmap) and not matrix.flags.writeable
    assert ranked(loaded) == expected
    path.write_bytes(path.read_bytes()[:-64])  # truncated: ignored, rebuilt, replaced
    assert snapshots.read_array(settings, "vectors", stamp, len(matrix)) is None
    rebuilt = open_retriever(settings)
    assert ranked(rebuilt) == expected
    assert snapshots.read_array(settings, "vectors", stamp, len(matrix)) is not None
    assert [p.name for p in snapshots.folder(settings).glob("vectors*")] == [path.name]


def test_bm25_loads_its_arrays_mapped_and_refuses_missing_or_other_ones(
    tmp_path: Path, hashed_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = copy_index(hashed_index, tmp_path / "index")
    first = open_retriever(settings)
    expected = ranked(first)
    stamp = first.catalog.stamp
    names = sorted(p.name for p in snapshots.folder(settings).glob("bm25-*"))
    assert names == sorted(f"bm25-{n}-{stamp}.npy" for n in ("data", "indices", "indptr"))
    forbid_bm25_build(monkeypatch)
    loaded = open_retriever(settings)
    assert ranked(loaded) == expected
    state = loaded._state()
    assert all(isinstance(a, np.memmap) for a in state.bm25.arrays().values())
    saved = snapshots.read(settings, "retrieval", stamp)
    assert "arrays" not in saved["bm25"]  # the arrays live in the .npy files alone
    arrays = state.bm25.arrays()
    with pytest.raises(ValueError):
        BM25Index.from_state(saved["bm25"], state.bm25.size)  # no arrays at all
    with pytest.raises(ValueError):
        BM25Index.from_state(
            saved["bm25"], state.bm25.size, {**arrays, "indptr": arrays["indptr"][:-1]}
        )


def forbid_bm25_build(monkeypatch: pytest.MonkeyPatch) -> None:
    import bm25s

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("BM25 was rebuilt, not loaded")

    monkeypatch.setattr(bm25s.BM25, "index", refuse)


def old_written_as(abstracts: list[str], word: str) -> str | None:
    """`Retriever._written_as` as a regex over every abstract, stem test aside: the word
    as a whole run of word characters and hyphens, as the head of one ('ImageNet' of
    'ImageNet-1K'), or as the letters before a version number ('Qwen' of 'Qwen3-8B')."""
    from collections import Counter

    from rag.retrieval.retrieve import WRITTEN_AS_NAME

    run_end = r"(?=-|(?![\w-]))"
    body = re.escape(word)
    forms = [rf"(?<![\w-]){body}s?{run_end}"]
    if len(word) >= 3 and word.isalpha():
        forms.append(rf"(?<![\w-]){body}(?=\d\w*{run_end})")
    pattern = re.compile("|".join(forms), re.I)
    uses = Counter(
        m.group().removesuffix("s") if m.group()[:-1].casefold() == word else m.group()
        for text in abstracts
        for m in pattern.finditer(text)
    )
    if not uses:
        return None
    written, times = uses.most_common(1)[0]
    return (
        written if written != written.lower() and times >= WRITTEN_AS_NAME * uses.total() else None
    )


def test_the_names_table_reads_every_word_as_the_per_word_scan_did() -> None:
    abstracts = [p.abstract for p in seed_papers()] + [
        "CLIP, CLIPs and NeuCLIP; LLMS, LLMs and an LLM.",
        "We clip gradients (CLIP-style) with Models, models and MODELS.",
    ]
    words = {w.lower() for text in abstracts for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", text)}
    table = names_written(abstracts)
    assert {w: table.get(w) for w in words} == {w: old_written_as(abstracts, w) for w in words}
    assert table["llm"] == "LLM" and table["nash"] == "Nash"
    assert (table["imagenet"], table["qwen"], table["llama"]) == ("ImageNet", "Qwen", "LLaMA")
    assert "second" not in table  # 'Second-order' opens a sentence; 'second-order' elsewhere


def test_the_name_and_acronym_tables_load_with_bm25_instead_of_a_pass_over_the_abstracts(
    tmp_path: Path, hashed_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = copy_index(hashed_index, tmp_path / "index")
    first = open_retriever(settings)
    first.search("warm-up")
    question = "which papers use clip or lora or the discrete cosine transform for llms"
    expected = (
        first.written_names(question),
        first.acronym_spellings(),
        first.aliases(("DCT", "LoRA")),
        first.abbreviations(question),
    )
    import rag.retrieval.retrieve as retrieve

    def refuse(*args: object) -> None:
        raise AssertionError("a pass over every abstract")

    monkeypatch.setattr(retrieve, "names_written", refuse)
    monkeypatch.setattr(retrieve, "spelled_out", refuse)
    loaded = open_retriever(settings)
    loaded.search("warm-up")
    got = (
        loaded.written_names(question),
        loaded.acronym_spellings(),
        loaded.aliases(("DCT", "LoRA")),
        loaded.abbreviations(question),
    )
    assert got == expected and expected[1]


def test_a_large_top_k_from_a_sampled_floor_is_the_full_partitions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rag.retrieval import retrieve

    rng = np.random.default_rng(7)
    cases = [
        rng.random(300_000, dtype=np.float32),  # dense scores, no ties
        np.round(rng.random(300_000), 2).astype(np.float32),  # many ties
        np.where(rng.random(300_000) < 0.03, rng.random(300_000), 0).astype(np.float32),  # BM25
        np.zeros(300_000, dtype=np.float32),  # nothing matched
    ]
    masks = [None, rng.random(300_000) < 0.5, rng.random(300_000) < 0.001]
    sampled = []
    for scores in cases:
        for mask in masks:
            for depth in (1, 50, 400):
                rows = retrieve._above_sampled_floor(
                    scores if mask is None else np.where(mask, scores, -np.inf), depth
                )
                sampled.append(rows is not None)
                fast = retrieve._best_rows(scores, depth, mask)
                with monkeypatch.context() as patch:
                    patch.setattr(retrieve, "SAMPLED_ROWS", 10**12)  # every row partitioned
                    assert fast == retrieve._best_rows(scores, depth, mask)
    assert sum(sampled) >= 12  # the sampled path ran (not only the fallback)

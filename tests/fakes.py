"""Test doubles at the two model seams: an `Embedder` and a `Chat`.

`HashEmbedder` gives every text a deterministic unit vector from its words (texts that
share words point the same way), so ingest, storage and fusion can be tested without
loading a model. `ScriptedChat` answers from a queue of replies (or raises the queued
errors) and records every call, like simonw/llm's MockModel. Tests where retrieval or
answer quality is the point keep the real all-MiniLM-L6-v2; HTTP behaviour is tested
against the scripted OpenAI server (`openai_server.py`) and a real llama.cpp server.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag.config import Settings
from rag.llm import LLMError, OnReset, OnToken, Reply

DIM = 64


class HashEmbedder:
    """Deterministic bag-of-words vectors: the same text always gets the same vector."""

    name = "test:hash-64"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIM))

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    @staticmethod
    def _vector(text: str) -> np.ndarray:
        vector = np.zeros(DIM, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            bucket = int(hashlib.sha1(word.encode()).hexdigest()[:8], 16) % DIM
            vector[bucket] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector


# What the app's test hook names (ui/resources.py): RAG_UI_EMBEDDER=tests.fakes:hash_embedder
HASH_EMBEDDER_HOOK = f"{__name__}:hash_embedder"


def hash_embedder(settings: Settings, family: str | None = None) -> HashEmbedder:
    """The `make_embedder` the app uses under the test hook: a `HashEmbedder`."""
    return HashEmbedder()


Script = str | Exception | Callable[[list[dict[str, str]]], str]


@dataclass
class ScriptedChat:
    """A `Chat` that replies from a script and remembers what it was asked."""

    replies: list[Script] = field(default_factory=list)
    calls: list[list[dict[str, str]]] = field(default_factory=list)

    def complete(
        self,
        messages: list[dict[str, str]],
        on_token: OnToken | None = None,
        deadline_s: float | None = None,
        max_tokens: int | None = None,
        on_reset: OnReset | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        self.calls.append(messages)
        if not self.replies:
            raise LLMError("the script has no reply left")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        text = reply(messages) if callable(reply) else reply
        for token in re.findall(r"\S+\s*", text):
            if on_token:
                on_token(token)
        return Reply(text, attempts=1)

    def health(self, timeout_s: float = 3.0) -> tuple[bool, str]:
        return True, "scripted"

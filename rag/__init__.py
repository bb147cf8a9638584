"""Cited answers over ML paper abstracts.

The stages, in the order data flows through them: `corpus` (files -> papers -> chunks),
`embedding` (chunks -> vectors), `store` (the Chroma index), `question` (what a question
asks), `retrieval` (ranked papers), `answering` (the cited answer), `aggregate` (counts,
tables, topics); `ingest` and `assistant` run them, `cli` and `llamaindex` expose them.

The public API, imported on first use (so `import rag.config` stays light):

    from rag import Assistant, Settings
    answer = Assistant(Settings()).ask("what is GTO?")   # an Answer
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rag.assistant import Assistant
    from rag.config import Settings
    from rag.types import Answer

__all__ = ["Answer", "Assistant", "Settings"]
_HOME = {"Assistant": "rag.assistant", "Settings": "rag.config", "Answer": "rag.types"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOME[name]), name)

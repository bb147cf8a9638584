"""Short titles written by the endpoint model for papers that have none (one call each).

Only the building block: `generate_title` asks once, under a short deadline, and returns a
cleaned one-line title or None (the offline label then stays). Storing it in the index
metadata and the `RAG_GENERATE_TITLES` switch are not wired in yet.
"""

from __future__ import annotations

import re

from rag.llm import Chat, LLMError
from rag.prompts import TITLE, TITLE_SYSTEM

TITLE_DEADLINE_S = 15.0
TITLE_MAX_TOKENS = 40
MAX_TITLE_WORDS = 16
MAX_TITLE_CHARS = 140
_ABSTRACT_CHARS = 2_000  # the start of the abstract says what the paper contributes
_PREFIX = re.compile(r"^\s*(title\s*:\s*)", re.IGNORECASE)


def generate_title(chat: Chat, abstract: str, deadline_s: float = TITLE_DEADLINE_S) -> str | None:
    """The model's short title for `abstract`, or None when the call fails or the reply is
    not a usable title (empty, or longer than a title)."""
    messages = [
        {"role": "system", "content": TITLE_SYSTEM},
        {"role": "user", "content": TITLE.format(abstract=abstract[:_ABSTRACT_CHARS])},
    ]
    try:
        reply = chat.complete(messages, deadline_s=deadline_s, max_tokens=TITLE_MAX_TOKENS)
    except LLMError:
        return None
    return clean_title(reply.text)


def clean_title(text: str) -> str | None:
    """'Title: "Fast Drafts for Speculative Decoding."\\n...' -> 'Fast Drafts for Speculative
    Decoding'; None when nothing title-like is left."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    title = _PREFIX.sub("", lines[0]).strip().strip("\"'*`“”").strip().rstrip(".")
    title = re.sub(r"\s+", " ", title)
    if not title or len(title) > MAX_TITLE_CHARS or len(title.split()) > MAX_TITLE_WORDS:
        return None
    return title

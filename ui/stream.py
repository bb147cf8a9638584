"""Run a question in a worker thread and hand its tokens to the page as they come.

`Conversation.ask` calls `on_token` from the thread that runs it, so the page's script
thread would be blocked while the endpoint streams. Here the ask runs in a daemon thread
and the script thread reads a queue: `Token`s first (LLM answers only; extractive answers
have none), then exactly one `Done` or `Failed`. No Streamlit in this module.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rag.assistant import Conversation
from rag.types import Answer


@dataclass(frozen=True, slots=True)
class Token:
    """A piece of the answer as the endpoint streams it."""

    text: str


@dataclass(frozen=True, slots=True)
class Done:
    """The finished, citation-checked answer."""

    answer: Answer


@dataclass(frozen=True, slots=True)
class Failed:
    """The question could not be answered; `error` says why."""

    error: BaseException


Event = Token | Done | Failed


def ask_events(conversation: Conversation, question: str, **options: Any) -> Iterator[Event]:
    """Ask in a worker thread; yield its tokens, then Done or Failed."""
    events: queue.Queue[Event] = queue.Queue()

    def work() -> None:
        try:
            answer = conversation.ask(
                question, on_token=lambda text: events.put(Token(text)), **options
            )
        except Exception as exc:  # reported to the page as a message, not a traceback
            events.put(Failed(exc))
        else:
            events.put(Done(answer))

    threading.Thread(target=work, name="rag-ask", daemon=True).start()
    while True:
        event = events.get()
        yield event
        if not isinstance(event, Token):
            return

"""The library API the CLI, the UI and eval share: ingest, search, ask, converse.

`Assistant` owns one store, one embedder, one retriever and one answerer per process
(the UI caches it; it is safe for concurrent questions). `Conversation` keeps one user's
turns: with an LLM a follow-up is condensed into a standalone query; without one, a
follow-up that leans on the previous turn ("what dataset did it use?") is searched
together with that turn's query.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag import prompts
from rag.answer import Answerer
from rag.config import BUNDLED_CORPUS, Settings
from rag.embed import Embedder, make_embedder
from rag.index import Store, adopt_layout
from rag.ingest import Progress, ingest
from rag.llm import ChatClient, LLMError, OnReset, OnToken
from rag.papers import FieldMap
from rag.retrieve import Filters, Retriever
from rag.types import Answer, Hit, IngestSummary


class Assistant:
    """Everything needed to answer questions over one index."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        if embedder is None:  # an existing index is opened the way it was built
            settings = adopt_layout(settings)
        self.settings = settings
        self.embedder = embedder or make_embedder(settings)
        self.store = Store(settings, self.embedder.name)
        self.retriever = Retriever(self.store, self.embedder, settings)
        self.client = ChatClient(settings) if settings.base_url else None
        self.answerer = Answerer(
            settings,
            self.embedder,
            self.client,
            coverage=lambda q, t: self.retriever.terms.coverage(q, t),
        )

    # -- ingest ------------------------------------------------------------------

    def ingest(
        self,
        paths: Iterable[str | Path],
        fields: FieldMap | None = None,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestSummary:
        """Ingest files into the index and refresh retrieval."""
        summary, catalog = ingest(
            paths, self.store, self.embedder, self.settings, fields, prune, progress
        )
        self.retriever.refresh(catalog)
        return summary

    def ensure_default_corpus(self, progress: Progress | None = None) -> IngestSummary | None:
        """Build the index of the bundled ICLR 2026 abstracts if the index is empty."""
        if self.store.count():
            return None
        return self.ingest([BUNDLED_CORPUS], progress=progress)

    # -- ask ---------------------------------------------------------------------

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        retriever: str | None = None,
    ) -> list[Hit]:
        """Ranked papers for a query."""
        return self.retriever.search(query, top_k, filters, retriever)

    def ask(
        self,
        question: str,
        *,
        top_k: int | None = None,
        filters: Filters | None = None,
        mode: str | None = None,
        retriever: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
        query: str | None = None,
    ) -> Answer:
        """Retrieve and answer one question (`query` overrides what is searched)."""
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        started = time.perf_counter()
        timings: dict[str, float] = {}
        hits = self.retriever.search(query or question, top_k, filters, retriever, timings)
        timings["retrieve"] = round(sum(timings.values()), 2)
        t0 = time.perf_counter()
        answer = self.answerer.answer(question, hits, mode, on_token, on_reset)
        timings["answer"] = round((time.perf_counter() - t0) * 1000, 2)
        answer.timings_ms = {
            **timings,
            **answer.timings_ms,
            "total": round((time.perf_counter() - started) * 1000, 2),
        }
        answer.query = query or question
        return answer

    def conversation(self) -> Conversation:
        """Start a conversation (one per user or browser session)."""
        return Conversation(self)

    def stats(self) -> dict[str, Any]:
        """Index statistics for the UI and `rag stats`."""
        catalog = self.retriever.catalog
        papers = [sp.paper for sp in catalog.papers.values()]
        return {
            "papers": len(papers),
            "chunks": catalog.n_chunks,
            "embedding_model": self.embedder.name,
            "location": self.store.location,
            "venues": sorted({p.venue for p in papers if p.venue}),
            "years": sorted({p.year for p in papers if p.year}),
            "statuses": sorted({p.status for p in papers if p.status}),
            "areas": sorted({p.area for p in papers if p.area}),
        }

    def endpoint_health(self) -> tuple[bool, str]:
        """(ok, description) of the LLM endpoint; (False, ...) when none is configured."""
        if self.client is None:
            return False, "no endpoint configured (offline extractive answers)"
        return self.client.health()


_FOLLOW_UP = re.compile(
    r"\b(it|its|they|them|their|(this|that|these|those|the) (paper|papers|method|methods|"
    r"approach|model|work|one|ones|first|second|third|last|latter|former|authors?|results?)"
    r"|the above|same)\b",
    re.I,
)


@dataclass
class Turn:
    """One question and its answer."""

    question: str
    answer: Answer


@dataclass
class Conversation:
    """One user's chat: questions answered in the context of the previous turns."""

    assistant: Assistant
    turns: list[Turn] = field(default_factory=list)

    def ask(self, question: str, **options: Any) -> Answer:
        """Answer a question, treating it as a follow-up when it leans on earlier turns."""
        notices: list[str] = []
        query = self.standalone_query(question, options.get("mode"), notices)
        answer = self.assistant.ask(question, query=query, **options)
        answer.notices = notices + answer.notices
        self.turns.append(Turn(question, answer))
        return answer

    def standalone_query(
        self, question: str, mode: str | None = None, notices: list[str] | None = None
    ) -> str:
        """The query to search for `question`, given the conversation so far."""
        if not self.turns or not _is_follow_up(question):
            return question
        previous = self.turns[-1].answer.query or self.turns[-1].question
        client = self.assistant.client
        use_llm = (mode or self.assistant.settings.answer_mode) == "llm" and client is not None
        if use_llm:
            assert client is not None
            try:
                return self._condense(client, question)
            except LLMError as exc:
                if notices is not None:
                    notices.append(
                        f"could not condense the follow-up ({exc}); "
                        "searched it together with the previous question"
                    )
        return f"{previous} {question}"

    def _condense(self, client: ChatClient, question: str) -> str:
        history = "\n".join(
            f"User: {t.question}\nAssistant: {t.answer.answer[:600]}" for t in self.turns[-3:]
        )
        prompt = prompts.CONDENSE.format(history=history, question=question)
        reply = client.complete(
            [
                {"role": "system", "content": prompts.CONDENSE_SYSTEM},
                {"role": "user", "content": prompt},
            ],
            deadline_s=min(20.0, self.assistant.settings.llm_deadline_s),
            max_tokens=96,
        )
        lines = reply.text.strip().splitlines()
        query = lines[0].strip().strip('"').strip() if lines else ""
        return query or question

    def clear(self) -> None:
        """Forget the turns."""
        self.turns.clear()


def _is_follow_up(question: str) -> bool:
    return bool(_FOLLOW_UP.search(question)) or len(question.split()) <= 4


__all__ = ["Assistant", "Conversation", "Filters", "Settings"]

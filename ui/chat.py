"""The chat column: past turns, the streamed new answer, sources panels and abstentions.

Each answer is followed by its sources panel: one card per cited paper (the supporting
sentence quoted, the full abstract a click away with that sentence highlighted), then the
retrieved but uncited papers apart as "also relevant". `[n]` in the answer links to card n.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from rag.assistant import Conversation
from rag.embed import EmbeddingError
from rag.index import StoreError
from rag.ingest import IngestLocked
from rag.llm import LLMError
from rag.load import InputError
from rag.types import Answer
from ui import render
from ui.stream import Done, Failed, Token, ask_events

EXPECTED = (StoreError, IngestLocked, InputError, EmbeddingError, LLMError, ValueError, OSError)
BENIGN_NOTICES = ("no LLM endpoint configured",)
FAILURE_HINT = "Try again, or switch to offline extractive answers in the sidebar."


def show_turn(turn: int, question: str, answer: Answer) -> None:
    """A past question and its answer."""
    with st.chat_message("user"):
        st.markdown(render.escape_markdown(question))
    with st.chat_message("assistant"):
        show_answer(turn, answer)


def show_answer(turn: int, answer: Answer) -> None:
    """An answer (or abstention), its notices, and its sources."""
    if answer.abstained:
        show_abstention(answer)
        return
    st.markdown(render.answer_markdown(answer, turn))
    show_notices(answer)
    _footer(answer)
    sources_panel(turn, answer)


def show_abstention(answer: Answer) -> None:
    """Say plainly that the abstracts do not answer, and list the closest papers."""
    st.warning(
        "**Not found in the indexed abstracts.** None of the retrieved abstracts answers "
        "this question, so no answer is given.",
        icon=":material/search_off:",
    )
    show_notices(answer)
    closest = answer.sources[:3]
    if closest:
        st.markdown("**Closest papers**")
        st.markdown("".join(render.related_html(s) for s in closest), unsafe_allow_html=True)


def show_notices(answer: Answer) -> None:
    """Library notices (a fallback or a doubtful citation is a warning), and doubted sentences."""
    for notice in answer.notices:
        text = render.escape_markdown(notice)
        if notice.startswith(BENIGN_NOTICES) or "left out to fit" in notice:
            st.info(text, icon=":material/info:")
        else:
            st.warning(text, icon=":material/warning:")
    if answer.flagged:
        doubted = "\n".join(f"- {render.escape_markdown(s)}" for s in answer.flagged)
        st.caption(f"Sentences with little support in the abstracts they cite:\n{doubted}")


def _footer(answer: Answer) -> None:
    mode = "Endpoint model" if answer.mode == "llm" else "Offline extractive"
    parts = [mode, f"{answer.timings_ms.get('total', 0.0) / 1000:.1f} s"]
    if answer.query and answer.query != answer.question:
        parts.append(f"searched as “{render.escape_markdown(answer.query)}”")
    copy, caption = st.columns([1, 5], vertical_alignment="center")
    with copy.popover("Copy", icon=":material/content_copy:"):
        st.caption("Markdown with references — use the copy button at the top right.")
        st.code(render.answer_with_references(answer), language="markdown", wrap_lines=True)
    caption.caption(" · ".join(parts))


def sources_panel(turn: int, answer: Answer) -> None:
    """Cited papers as cards, then the uncited ones apart."""
    cited = render.cited_sources(answer)
    if cited:
        st.markdown(f"**Sources** · {len(cited)} cited")
    for source in cited:
        with st.container(border=True):
            st.markdown(render.source_header_html(source, turn), unsafe_allow_html=True)
            support = render.supporting_sentences(answer, source)
            if support:
                st.markdown(render.quote_html(support), unsafe_allow_html=True)
            with st.expander("Full abstract", key=f"abstract-{turn}-{source.n}"):
                st.markdown(render.abstract_html(answer, source), unsafe_allow_html=True)
    related = render.uncited_sources(answer)
    if related:
        with st.expander(f"Also relevant · {len(related)} more retrieved, not cited"):
            st.markdown("".join(render.related_html(s) for s in related), unsafe_allow_html=True)


def ask_live(conversation: Conversation, question: str, **options: Any) -> None:
    """Ask, streaming tokens into the page, then draw the checked answer in their place."""
    turn = len(conversation.turns)
    with st.chat_message("user"):
        st.markdown(render.escape_markdown(question))
    with st.chat_message("assistant"):
        slot = st.empty()
        slot.caption("Searching the abstracts…")
        text = ""
        for event in ask_events(conversation, question, **options):
            if isinstance(event, Token):
                text += event.text
                slot.markdown(render.escape_markdown(text) + " ▌")
            elif isinstance(event, Done):
                with slot.container():
                    show_answer(turn, event.answer)
            elif isinstance(event, Failed):
                slot.error(f"Could not answer: {describe(event.error)}. {FAILURE_HINT}")


def describe(error: BaseException) -> str:
    """A one-line, traceback-free description: the library's own message for its errors."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, EXPECTED) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

"""The "Related papers" action of a source card, and the list of nearest papers it opens.

The list comes from `Assistant.related` (the cosine of paper vectors, never the paper
itself), fetched only for the cards whose action was clicked, once per paper and session.
"""

from __future__ import annotations

import streamlit as st

from rag.assistant import Assistant
from rag.retrieval.related import Related
from rag.types import Source
from ui import render

OPEN = "related_open"  # session state: the (turn, n) cards whose related list is open
FOUND = "related_found"  # session state: paper id -> its Related, fetched once


def related_action(assistant: Assistant, turn: int, source: Source) -> None:
    """A 'Related papers' toggle under a source card; open, the nearest papers below it."""
    opened: set[tuple[int, int]] = st.session_state.setdefault(OPEN, set())
    card = (turn, source.n)
    st.button(
        "Hide related papers" if card in opened else "Related papers",
        key=f"related-{turn}-{source.n}",
        icon=":material/hub:",
        type="tertiary",
        on_click=_toggle,
        args=(card,),
        help="The indexed papers nearest to this one",
    )
    if card in opened:
        related_list(assistant, source.paper_id)


def _toggle(card: tuple[int, int]) -> None:
    opened: set[tuple[int, int]] = st.session_state.setdefault(OPEN, set())
    opened.symmetric_difference_update({card})


def related_list(assistant: Assistant, paper_id: str, top_k: int = 5) -> None:
    """The papers nearest to one, as lines with their similarity."""
    found = nearest(assistant, paper_id, top_k)
    if not found.related:
        st.caption("No related papers in this index.")
        return
    lines = "".join(render.related_paper_html(r) for r in found.related)
    st.markdown(
        f'<div class="rag-related-list" data-paper="{render.escape_html(paper_id)}">{lines}</div>',
        unsafe_allow_html=True,
    )


def nearest(assistant: Assistant, paper_id: str, top_k: int) -> Related:
    """`Assistant.related`, remembered per paper for this session."""
    found: dict[tuple[str, int], Related] = st.session_state.setdefault(FOUND, {})
    key = (paper_id, top_k)
    if key not in found:
        found[key] = assistant.related(paper_id, top_k)
    return found[key]

"""The chat column: past turns, the streamed new answer, sources panels and abstentions.

Each answer is followed by its sources panel: one card per cited paper (the supporting
sentence quoted, the full abstract a click away with that sentence highlighted), then the
retrieved but uncited papers apart as "also relevant". `[n]` in the answer links to card n.

Under each answer its scope shows as chips ('ICLR', '2026'). A chip read from the question
has a remove button: it asks the question again, as a new turn, with that field of the
read scope ignored (and the fields removed before). Sidebar filters are changed in the
sidebar; a follow-up's scope carried over from the previous turn is shown, not removable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from rag import errors
from rag.assistant import Conversation
from rag.types import Answer
from ui import render, resources
from ui.related import related_action
from ui.stream import Done, Failed, Token, ask_events

EXPECTED = errors.EXPECTED
FAILURE_HINT = "Try again, or switch to offline extractive answers in the sidebar."
SCOPES = "scopes"  # session state: id(answer) -> (answer, Scope)
REASK = "reask"  # session state: the Reask a chip's remove button asked for


@dataclass(frozen=True, slots=True)
class Scope:
    """How a turn's scope came about, recorded when it was asked."""

    sidebar: tuple[str, ...] = ()  # fields the sidebar set
    named: tuple[str, ...] | None = None  # fields read from the question (None: unknown)
    ignored: tuple[str, ...] = ()  # read-scope fields removed with the chips
    removed: tuple[str, ...] = ()  # their labels, as the chips showed them
    about: str = ""  # the topic whose papers were ranked first (asked from the Topics tab)


@dataclass(frozen=True, slots=True)
class Reask:
    """Ask `question` again, ignoring `ignored` of what it names."""

    question: str
    ignored: tuple[str, ...]
    removed: tuple[str, ...]


def show_turn(turn: int, question: str, answer: Answer) -> None:
    """A past question and its answer."""
    scope = scope_of(answer)
    with st.chat_message("user"):
        show_question(question, scope)
    with st.chat_message("assistant"):
        show_answer(turn, question, answer, scope)


def show_question(question: str, scope: Scope) -> None:
    """The question as typed; a re-asked one says what it was asked without."""
    st.markdown(render.escape_markdown(question))
    if scope.about:
        st.caption(
            f":material/hub: About the papers of the topic {render.escape_markdown(scope.about)}"
        )
    if scope.removed:
        without = ", ".join(render.escape_markdown(label) for label in scope.removed)
        st.caption(f":material/refresh: Asked again without {without}")


def show_answer(turn: int, question: str, answer: Answer, scope: Scope | None = None) -> None:
    """An answer (or abstention), its scope, its notices, and its sources."""
    scope = scope or scope_of(answer)
    if answer.abstained:
        show_abstention(turn, question, answer, scope)
        show_draft(answer)
        return
    if answer.draft:  # said before the body: the streamed text was replaced by this one
        st.caption(
            ":material/rule: The model's answer did not hold up against the abstracts; "
            "this is the quoted answer. Its draft is below."
        )
    st.markdown(render.answer_markdown(answer, turn))
    if answer.table:
        st.markdown(render.table_html(answer, turn), unsafe_allow_html=True)
    scope_chips(turn, question, answer, scope)
    show_notices(answer)
    show_draft(answer)
    _footer(answer)
    sources_panel(turn, answer)


def show_draft(answer: Answer) -> None:
    """The model's rejected draft, one click away, marked as such."""
    if not answer.draft:
        return
    reasons = "; ".join((answer.generation or {}).get("reasons", []))
    with st.expander("The model's draft (did not hold up)", icon=":material/draft:"):
        if reasons:
            st.caption(f"Not shown as the answer: {render.escape_markdown(reasons)}.")
        st.markdown(render.escape_markdown(answer.draft))


def show_abstention(turn: int, question: str, answer: Answer, scope: Scope) -> None:
    """Say plainly that the abstracts do not answer, and list the closest papers."""
    if not answer.sources and answer.applied_filters:  # the scope holds no paper at all
        why = "No indexed paper falls in the scope of this question, so nothing was searched."
        if any(chip.removable for chip in _chips(answer, scope)):
            why += " Remove a filter below to search more widely."
    else:
        why = "None of the retrieved abstracts answers this question, so no answer is given."
    st.warning(f"**Not found in the indexed abstracts.** {why}", icon=":material/search_off:")
    scope_chips(turn, question, answer, scope)
    show_notices(answer)
    details = [d for d in render.answer_details(answer) if not d.startswith("confidence")]
    if details:  # the confidence of a refusal is in its notice already
        st.caption(" · ".join(details))
    closest = answer.sources[:3]
    if closest:
        st.markdown("**Closest papers**")
        st.markdown("".join(render.related_html(s) for s in closest), unsafe_allow_html=True)


def show_notices(answer: Answer) -> None:
    """Library notices (a fallback or a doubtful citation is a warning), and doubted sentences."""
    for notice in render.page_notices(answer):
        text = render.escape_markdown(notice)
        if getattr(notice, "level", "warning") == "info":
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
    parts += [render.escape_markdown(d) for d in render.answer_details(answer)]
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
            assistant = resources.current_assistant()
            if assistant is not None:
                related_action(assistant, turn, source)
    related = render.uncited_sources(answer)
    if related:
        with st.expander(f"Also relevant · {len(related)} more retrieved, not cited"):
            st.markdown("".join(render.related_html(s) for s in related), unsafe_allow_html=True)


def scope_chips(turn: int, question: str, answer: Answer, scope: Scope) -> None:
    """The answer's scope as a row of chips; one read from the question has a remove button."""
    chips = _chips(answer, scope)
    if not chips:
        return
    with st.container(
        horizontal=True, gap="small", vertical_alignment="center", key=f"scope-{turn}"
    ):
        st.markdown(render.SCOPE_LABEL, unsafe_allow_html=True, width="content")
        for chip in chips:
            if not chip.removable:
                st.markdown(render.chip_html(chip), unsafe_allow_html=True, width="content")
                continue
            st.button(
                chip.label,
                key=f"chip-{turn}-{chip.field}",
                help=render.ORIGIN_HELP["question"],
                icon=":material/close:",
                icon_position="right",
                on_click=st.session_state.__setitem__,
                args=(
                    REASK,
                    Reask(
                        question,
                        (*scope.ignored, chip.field),
                        (*scope.removed, chip.label),
                    ),
                ),
            )


def _chips(answer: Answer, scope: Scope) -> list[render.Chip]:
    return render.scope_chips(answer.applied_filters, scope.sidebar, scope.named)


def pop_reask() -> Reask | None:
    """The re-ask a chip's remove button asked for in this run, if any."""
    reask = st.session_state.pop(REASK, None)
    return reask if isinstance(reask, Reask) else None


def scope_of(answer: Answer) -> Scope:
    """How an answer's scope came about (recorded by `ask_live`; unknown: all read)."""
    entry = st.session_state.get(SCOPES, {}).get(id(answer))
    if entry is not None and entry[0] is answer:
        return entry[1]
    return Scope()


def _remember(conversation: Conversation, answer: Answer, scope: Scope) -> None:
    """Record a new answer's scope; forget those of turns no longer in the conversation."""
    kept = {id(t.answer) for t in conversation.turns}
    scopes = {k: v for k, v in st.session_state.get(SCOPES, {}).items() if k in kept}
    scopes[id(answer)] = (answer, scope)
    st.session_state[SCOPES] = scopes


def ask_live(
    conversation: Conversation,
    question: str,
    *,
    reask: Reask | None = None,
    about: str = "",
    **options: Any,
) -> None:
    """Ask, streaming tokens into the page, then draw the checked answer in their place.

    `options` go to `Conversation.ask` (mode, top_k, filters, prefer); a `reask` asks
    again with the read-scope fields it names ignored; `about` names the topic whose
    papers `prefer` ranks first.
    """
    turn = len(conversation.turns)
    ignored = reask.ignored if reask else ()
    if ignored:
        options["ignore_scope"] = ignored
    filters = options.get("filters")
    scope = Scope(
        sidebar=tuple(filters.to_dict()) if filters is not None else (),
        named=_named(conversation, question, ignored),
        ignored=ignored,
        removed=reask.removed if reask else (),
        about=about,
    )
    with st.chat_message("user"):
        show_question(question, scope)
    with st.chat_message("assistant"):
        slot = st.empty()
        slot.caption("Searching the abstracts…")
        text = ""
        for event in ask_events(conversation, question, **options):
            if isinstance(event, Token):
                text += event.text
                slot.markdown(render.escape_markdown(text) + " ▌")
            elif isinstance(event, Done):
                _remember(conversation, event.answer, scope)
                with slot.container():
                    show_answer(turn, question, event.answer, scope)
            elif isinstance(event, Failed):
                slot.error(f"Could not answer: {describe(event.error)}. {FAILURE_HINT}")


def _named(conversation: Conversation, question: str, ignored: Iterable[str]) -> tuple[str, ...]:
    """The scope fields the question itself names, less those removed."""
    assistant = conversation.assistant
    if not assistant.settings.read_scope:
        return ()
    return tuple(assistant.read(question).read_scope.without(ignored).to_dict())


def describe(error: BaseException) -> str:
    """A one-line, traceback-free description: the library's own message for its errors."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, EXPECTED) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

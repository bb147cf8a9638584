"""The Streamlit chat app: `rag app` (or `make run`) opens it on 127.0.0.1:8501.

Layout only: settings from the environment / .env (`RAG_INDEX_DIR` names the index), the
assistant loaded once per process, a conversation per browser session, the sidebar, then
two tabs: the chat, and the index's topics on a map (drawn only while its tab is open).
Page pieces live in `ui/chat.py`, `ui/sidebar.py`, `ui/topics.py`; HTML and Markdown in
`ui/render.py`. Expected failures show as messages in the page, never as tracebacks.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from pydantic import ValidationError

from rag.assistant import Assistant, Conversation
from rag.config import Settings
from ui import chat, resources, sidebar, topics
from ui.chat import describe

STYLE = Path(__file__).with_name("style.css")
EXAMPLES = (
    "Which papers study speculative decoding, and what speedups do they report?",
    "Does alternating gradient descent-ascent converge faster than simultaneous updates?",
    "How can CLIP's compositional reasoning be improved?",
)


def main() -> None:
    """Draw the page for one run of the script."""
    st.set_page_config(page_title="Ask the abstracts · ICLR 2026", page_icon="📄")
    st.set_option("client.toolbarMode", "viewer")  # no "Deploy" button for readers
    st.html(f"<style>{STYLE.read_text(encoding='utf-8')}</style>")
    assistant, key = open_index()
    stats = assistant.stats()
    conversation = resources.conversation(assistant)
    with st.sidebar:
        tools = st.container()
        options = sidebar.answer_options(assistant, key, stats)
        index_box = st.container()
        sidebar.upload_section(assistant)
        stats = assistant.stats()  # an upload may have just changed it
        with index_box:
            sidebar.index_stats(stats)
    st.title("Ask the abstracts")
    st.caption(
        f"Answers from {stats['papers']:,} paper abstracts, every claim cited "
        "`[n]` to the abstract it rests on. Follow-up questions keep the context."
    )
    empty = stats["papers"] == 0
    if empty:
        st.warning("The index is empty: add abstracts with **Add abstracts** in the sidebar.")
    typed = st.chat_input(
        "Ask about the papers, e.g. which methods speed up LLM decoding?",
        disabled=empty,
        key="question",
    )
    suggested = st.session_state.pop("suggested", None)
    focus = topics.pop_focus()  # a question asked from the Topics tab, about its papers
    question = typed or suggested
    if typed:
        focus = None
    if question and question.strip():
        st.session_state[topics.VIEW] = topics.ASK_TAB  # the answer shows in the chat
    ask_tab, topics_tab = st.tabs(
        [topics.ASK_TAB, topics.TOPICS_TAB], key=topics.VIEW, on_change="rerun"
    )
    with ask_tab:
        chat_column(conversation, options, question, empty, focus)
    if topics_tab.open and not empty:
        with topics_tab:
            topics.topics_tab(assistant, options.filters)
    with tools:
        sidebar.conversation_tools(conversation)


def chat_column(
    conversation: Conversation,
    options: sidebar.Options,
    question: str | None,
    empty: bool,
    focus: topics.Focus | None,
) -> None:
    """The past turns, suggestions for an empty chat, then the new question's answer."""
    reask = chat.pop_reask()  # a scope chip removed: the same question, less that filter
    for i, turn in enumerate(conversation.turns):
        chat.show_turn(i, turn.question, turn.answer)
    if not conversation.turns and not question and not empty:
        suggestions()
    if question and question.strip():
        reask = None  # a typed question wins over a chip clicked in the same run
    elif reask:
        question = reask.question
    if question and question.strip():
        chat.ask_live(
            conversation,
            question.strip(),
            reask=reask,
            about=focus.about if focus else "",
            mode=options.mode,
            top_k=options.top_k,
            filters=options.filters,
            **({"prefer": focus.paper_ids} if focus else {}),
        )


def open_index() -> tuple[Assistant, str]:
    """Load settings and the assistant; build the bundled index on first start."""
    try:
        settings = Settings()  # type: ignore[call-arg]  # fields come from env / .env
    except ValidationError as exc:
        st.error(f"Invalid settings in the environment or .env: {settings_problems(exc)}")
        st.stop()
    key = resources.settings_key(settings)
    try:
        with st.spinner("Loading the embedding model and the index…"):
            assistant = resources.load_assistant(key, settings)
        if not assistant.count():
            bar = st.progress(0.0, text="Indexing the bundled ICLR 2026 abstracts…")

            def progress(done: int, total: int) -> None:
                bar.progress(
                    min(done / max(total, 1), 1.0), text=f"Embedding papers {done}/{total}"
                )

            summary = resources.ensure_corpus(assistant, key, progress)
            bar.empty()
            if summary:
                st.toast(
                    f"Indexed {summary.total_papers} ICLR 2026 abstracts.",
                    icon=":material/check_circle:",
                )
    except Exception as exc:  # a locked, unreadable or mismatched index: say which
        st.error(f"Cannot open the index: {describe(exc)}")
        st.stop()
    return assistant, key


def settings_problems(error: ValidationError) -> str:
    """'RAG_TOP_K: Input should be greater than or equal to 1; ...'."""
    problems = []
    for problem in error.errors():
        name = "_".join(str(part) for part in problem["loc"]).upper()
        name = name if name.startswith(("RAG_", "OPENAI_")) else f"RAG_{name}"
        problems.append(f"{name}: {problem['msg']}")
    return "; ".join(problems)


def suggestions() -> None:
    """Example questions for an empty chat."""
    st.markdown("**Try asking**")
    for i, example in enumerate(EXAMPLES):
        st.button(
            example,
            key=f"example-{i}",
            on_click=st.session_state.__setitem__,
            args=("suggested", example),
            type="tertiary",
            icon=":material/arrow_forward:",
        )


main()

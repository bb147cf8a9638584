"""The sidebar: answer mode and endpoint health, retrieval options, index, upload, chat tools.

Filters offer only values the index holds (`Assistant.stats()`), so a filter can never
name something absent. The conversation tools are drawn last (into a slot reserved at the
top) so the export holds the answer given in this very run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import streamlit as st

from rag.assistant import Assistant, Conversation
from rag.retrieval.retrieve import Filters
from ui import render
from ui.resources import endpoint_health
from ui.upload import MAX_SKIPS_SHOWN, UPLOAD_TYPES, UploadResult, ingest_upload

ANY = "Any"
MODES = {"llm": "Endpoint model", "extractive": "Offline extractive"}


@dataclass(frozen=True)
class Options:
    """What the sidebar asks of the next question."""

    mode: str
    top_k: int
    filters: Filters


def answer_options(assistant: Assistant, key: str, stats: dict[str, Any]) -> Options:
    """Mode with the endpoint's health, then top-k and metadata filters."""
    st.subheader("Answers")
    settings = assistant.settings
    default = 0 if settings.answer_mode == "llm" else 1
    mode = st.radio(
        "Answer mode",
        list(MODES),
        index=default,
        format_func=lambda m: f"{MODES[m]} ({settings.llm_model})" if m == "llm" else MODES[m],
        key="mode",
    )
    ok, detail = endpoint_health(key, assistant)
    detail = render.escape_markdown(detail)
    if not assistant.has_endpoint:
        st.caption(
            ":gray[:material/cloud_off:] No endpoint configured (set `OPENAI_BASE_URL`): "
            "answers are extractive."
        )
    elif ok:
        st.caption(f":green[:material/check_circle:] Endpoint {detail}")
    else:
        st.caption(f":red[:material/error:] Endpoint {detail}: falls back to offline answers.")
    st.subheader("Retrieval")
    top_k = st.slider("Papers to retrieve (top-k)", 1, 20, settings.top_k, key="top_k")
    return Options(mode or "extractive", int(top_k), _filters(stats))


def _filters(stats: dict[str, Any]) -> Filters:
    venue = _choice("Venue", stats["venues"], "venue")
    year = _choice("Year", stats["years"], "year")
    area = _choice("Area", stats["areas"], "area")
    return Filters(venue=venue, year=int(year) if year else None, area=area)


def _choice(label: str, values: list[Any], key: str) -> Any:
    if not values:
        st.caption(f"{label}: none recorded in this index")
        return None
    picked = st.selectbox(label, [ANY, *values], key=f"filter_{key}")
    return None if picked == ANY else picked


def index_stats(stats: dict[str, Any]) -> None:
    """Papers, chunks and the embedding model of the index."""
    st.subheader("Index")
    papers, chunks = st.columns(2)
    papers.metric("Papers", f"{stats['papers']:,}")
    chunks.metric("Chunks", f"{stats['chunks']:,}")
    model = str(stats["embedding_model"]).removeprefix("local:")
    st.caption(f"Embedding model: `{model}`  \nIndex: `{stats['location']}`")


def upload_section(assistant: Assistant) -> None:
    """Upload a paper list / Paper Copilot JSON / JSONL / CSV and ingest it."""
    st.subheader("Add abstracts")
    upload = st.file_uploader(
        "Paper list (.txt), Paper Copilot JSON, JSONL or CSV",
        type=UPLOAD_TYPES,
        key="upload",
    )
    if st.button("Ingest file", disabled=upload is None, key="ingest", width="stretch"):
        assert upload is not None
        bar = st.progress(0.0, text="Reading the file…")

        def progress(done: int, total: int) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=f"Embedding papers {done}/{total}")

        st.session_state["upload_result"] = ingest_upload(
            assistant, upload.name, upload.getvalue(), progress
        )
        bar.empty()
    result = st.session_state.get("upload_result")
    if isinstance(result, UploadResult):
        _show_upload(result)


def _show_upload(result: UploadResult) -> None:
    if result.ok:
        st.success(result.message)
    else:
        st.error(result.message)
    if result.skipped and result.ok:
        with st.expander(f"Skipped records ({len(result.skipped)})"):
            lines = result.skipped[:MAX_SKIPS_SHOWN]
            more = len(result.skipped) - len(lines)
            st.markdown("\n".join(f"- {render.escape_markdown(s)}" for s in lines))
            if more > 0:
                st.caption(f"… and {more} more")


def conversation_tools(conversation: Conversation) -> None:
    """Clear the chat and export it as Markdown with its references."""
    st.subheader("Conversation")
    turns = [(t.question, t.answer) for t in conversation.turns]
    document = render.conversation_markdown(turns, "Questions on ML paper abstracts")
    clear, export = st.columns(2)
    clear.button(
        "Clear chat",
        on_click=conversation.clear,
        disabled=not turns,
        key="clear",
        width="stretch",
    )
    export.download_button(
        "Export .md",
        data=document,
        file_name=f"conversation-{datetime.now():%Y%m%d-%H%M}.md",
        mime="text/markdown",
        on_click="ignore",
        disabled=not turns,
        key="export",
        width="stretch",
    )

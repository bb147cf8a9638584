"""The Topics tab: the index's topics on a 2-D map and in a list, a topic's papers, and a
question about them.

Choosing a point on the map (or a topic in the list) selects its topic: its terms, its
papers (most central first) and an "Ask about these papers" button, which switches to the
chat with a question that names the topic and ranks its papers first. A clicked paper is
shown on top with the papers nearest to it. The topics come from `Assistant.topics`
(cached per index version: the first view of 22k papers takes a while, later ones none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from rag.aggregate.topics import Topic, TopicSet
from rag.assistant import Assistant
from rag.types import Filters
from ui import render
from ui.related import related_list

TOPIC = "topic"  # session state: the selected topic's number (the selectbox's key)
PAPER = "topic_paper"  # session state: the paper clicked on the map
FOCUS = "focus"  # session state: the papers the next suggested question is about
VIEW = "view"  # session state: the open tab
ASK_TAB, TOPICS_TAB = "Ask", "Topics"
PREFERRED = 100  # a topic's most central papers ranked first for its question
SHOWN = 200  # papers listed per topic


@dataclass(frozen=True, slots=True)
class Focus:
    """What a question from the Topics tab is about: papers ranked first, and a caption."""

    paper_ids: tuple[str, ...]
    about: str


def topics_tab(assistant: Assistant, filters: Filters) -> None:
    """Draw the tab: a caption, the map beside the list, then the chosen topic."""
    scope = Filters(venue=filters.venue, year=filters.year, status=filters.status)
    with st.spinner("Finding the topics (the first time for this index takes a while)…"):
        found = assistant.topics(scope, with_map=True)
    if not found.topics:
        st.info("No papers in this scope: change the filters in the sidebar.")
        return
    where = f" ({scope.describe()}, from the sidebar)" if scope.active else ""
    st.caption(
        f"{len(found.topics)} topics among {found.n_papers:,} papers{where}. "
        f"{found.method}. Click a point to open its topic."
    )
    if st.session_state.get(TOPIC) not in range(len(found.topics)):
        st.session_state[TOPIC] = 0
    topic_map(found)
    topic_list(found)
    show_topic(assistant, found.topics[int(st.session_state[TOPIC])])


def map_frame(found: TopicSet) -> pd.DataFrame:
    """One row per paper drawn on the map: x, y, topic, its label, the paper's title."""
    rows = [
        {
            "x": p.x,
            "y": p.y,
            "topic": t.topic,
            "label": t.label,
            "title": p.title,
            "paper_id": p.paper_id,
        }
        for t, p in found.mapped_papers()
    ]
    return pd.DataFrame(rows, columns=["x", "y", "topic", "label", "title", "paper_id"])


def topic_map(found: TopicSet) -> None:
    """The papers as points coloured by topic, each topic named at its centre."""
    frame = map_frame(found)
    selected = int(st.session_state[TOPIC])
    pick = alt.selection_point(name="pick", fields=["paper_id", "topic"], on="click")
    axis = alt.Axis(title=None, labels=False, ticks=False, grid=False, domain=False)
    colour = alt.Color("topic:N", legend=None, scale=alt.Scale(scheme="tableau20"))
    points = (
        alt.Chart(frame)
        .mark_circle(size=point_size(len(frame)))
        .encode(
            x=alt.X("x:Q", axis=axis),
            y=alt.Y("y:Q", axis=axis),
            color=colour,
            opacity=alt.condition(alt.datum.topic == selected, alt.value(0.95), alt.value(0.45)),
            tooltip=[alt.Tooltip("title:N", title="Paper"), alt.Tooltip("label:N", title="Topic")],
        )
        .add_params(pick)
    )
    centres = frame.groupby(["topic", "label"], as_index=False)[["x", "y"]].median()
    centres["name"] = [short_label(label) for label in centres["label"]]
    names = (
        alt.Chart(centres)
        .mark_text(fontSize=11, fontWeight="bold", stroke="white", strokeWidth=3)
        .encode(x="x:Q", y="y:Q", text="name:N")
    )
    names_fill = names.mark_text(fontSize=11, fontWeight="bold", color="#31333f")
    chart = (points + names + names_fill).properties(height=440)
    st.altair_chart(chart, key="topic-map", on_select=_on_pick, selection_mode="pick")


def point_size(points: int) -> int:
    """Bigger points when there are few: 52 papers -> 90, 3,000 -> 16."""
    return max(16, min(90, round(48_000 / max(points, 1))))


def short_label(label: str) -> str:
    """A topic's first term, for the map: 'Monte Carlo, sampling, MCMC' -> 'Monte Carlo'."""
    return label.split(", ")[0][:28]


def _on_pick() -> None:
    """A point clicked: open its topic, remember the paper."""
    event: Any = st.session_state.get("topic-map")
    chosen = (getattr(event, "selection", None) or {}).get("pick") or []
    if chosen:
        st.session_state[TOPIC] = int(chosen[0]["topic"])
        st.session_state[PAPER] = chosen[0].get("paper_id")


def topic_list(found: TopicSet) -> None:
    """The topic picker, and every topic by size."""
    st.selectbox(
        "Topic",
        options=list(range(len(found.topics))),
        format_func=lambda n: f"{found.topics[n].label} · {found.topics[n].size:,} papers",
        key=TOPIC,
        on_change=st.session_state.pop,
        args=(PAPER, None),
    )
    with st.expander(f"All {len(found.topics)} topics by size"):
        frame = pd.DataFrame(
            {"Topic": [t.label for t in found.topics], "Papers": [t.size for t in found.topics]}
        )
        most = int(frame["Papers"].max())
        st.dataframe(
            frame,
            hide_index=True,
            height=min(400, 38 + 35 * len(frame)),
            column_config={
                "Topic": st.column_config.TextColumn(width="large"),
                "Papers": st.column_config.ProgressColumn(format="%d", min_value=0, max_value=most),
            },
            key="topic-table",
        )


def show_topic(assistant: Assistant, topic: Topic) -> None:
    """A topic: its terms, the ask button, the clicked paper with its neighbours, its papers."""
    st.subheader(topic.label)
    terms = " ".join(f'<span class="rag-chip">{render.escape_html(t)}</span>' for t in topic.terms)
    st.markdown(f'<div class="rag-terms">{terms}</div>', unsafe_allow_html=True)
    ask = topic_question(topic)
    st.button(
        f"Ask about these {topic.size:,} papers",
        icon=":material/forum:",
        key="ask-topic",
        on_click=_ask,
        args=(ask, Focus(tuple(p.paper_id for p in topic.papers[:PREFERRED]), topic.label)),
        help=f"Asks “{ask}” with this topic's papers ranked first.",
    )
    clicked = st.session_state.get(PAPER)
    picked = next((p for p in topic.papers if p.paper_id == clicked), None)
    if picked is not None:
        with st.container(border=True):
            st.markdown(
                f"**{render.escape_markdown(picked.title)}** · `{picked.paper_id}`"
                + (" · derived label" if picked.title_is_derived else "")
            )
            related_list(assistant, picked.paper_id)
    rows = topic.papers[:SHOWN]
    more = f" (the first {SHOWN} listed)" if topic.size > SHOWN else ""
    st.caption(f"{topic.size:,} papers, the most typical first{more}")
    st.dataframe(
        pd.DataFrame(
            {
                "Paper": [p.title for p in rows],
                "Id": [p.paper_id for p in rows],
                "Typicality": [p.similarity for p in rows],
            }
        ),
        hide_index=True,
        column_config={
            "Paper": st.column_config.TextColumn(width="large"),
            "Id": st.column_config.TextColumn(width="small"),
            "Typicality": st.column_config.NumberColumn(format="%.2f", width="small"),
        },
        key="topic-papers",
    )


def topic_question(topic: Topic) -> str:
    """The question the ask button asks: 'What do the papers on X, Y and Z find?'."""
    terms = topic.terms[:3]
    named = ", ".join(terms[:-1]) + f" and {terms[-1]}" if len(terms) > 1 else topic.label
    return f"What do the papers on {named} propose and find?"


def _ask(question: str, focus: Focus) -> None:
    """Switch to the chat with the question asked, about the focused papers."""
    st.session_state["suggested"] = question
    st.session_state[FOCUS] = focus
    st.session_state[VIEW] = ASK_TAB


def pop_focus() -> Focus | None:
    """The papers a suggested question from this tab is about, if it came from here."""
    focus = st.session_state.pop(FOCUS, None)
    return focus if isinstance(focus, Focus) else None

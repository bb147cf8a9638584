"""The app's Topics tab and the Related papers action, driven in-process with AppTest over
a private copy of the hash-embedded seeds (the `app` fixture of tests/test_ui_apptest.py)."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from tests.test_ui_apptest import QUESTION, app, ask, captions, markdown

__all__ = ["app"]  # the fixture, shared


def _open_topics(at: AppTest) -> AppTest:
    at.session_state["view"] = "Topics"
    at.run()
    assert not at.exception, at.exception
    return at


def test_topics_tab_draws_the_map_and_asks_about_a_chosen_topic(
    app: Callable[..., AppTest],
) -> None:
    at = _open_topics(app())
    assert [t.label for t in at.tabs] == ["Ask", "Topics"]
    assert at.get("vega_lite_chart"), "the map is drawn"
    assert "5 topics among 52 papers" in captions(at)
    picker = at.selectbox(key="topic")
    assert len(picker.options) == 5
    picker.select(2).run()
    assert not at.exception, at.exception
    label = at.main.subheader[0].value
    assert picker.format_func(2).startswith(label)
    assert 'class="rag-terms"' in markdown(at)
    at.button(key="ask-topic").click().run()
    assert not at.exception, at.exception
    assert at.session_state["view"] == "Ask"  # the answer shows in the chat
    assert f"About the papers of the topic {label}" in captions(at)
    assert 'id="src-0-1"' in markdown(at)  # a cited answer, its sources from the topic


def test_related_papers_open_under_a_source_card(app: Callable[..., AppTest]) -> None:
    at = ask(app(), QUESTION)
    card = next(b for b in at.button if b.key == "related-0-1")
    assert card.label == "Related papers"
    card.click().run()
    assert not at.exception, at.exception
    found = at.session_state["related_found"]
    (related,) = found.values()
    assert related.related and related.paper_id not in {r.paper_id for r in related.related}
    assert 'class="rag-related-list"' in markdown(at)
    assert next(b for b in at.button if b.key == "related-0-1").label == "Hide related papers"

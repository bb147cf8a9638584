"""The page's pure parts: escaping, citation links, highlights, export, uploads, streaming."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, cast

from rag.assistant import Assistant
from rag.types import Answer, Notice, Source
from ui import render
from ui.stream import Done, Failed, Token, ask_events
from ui.upload import UPLOAD_TYPES, ingest_upload, safe_name

ABSTRACT = (
    "Speculative decoding speeds up LLM inference. We train draft trees with a new reward. "
    "It yields a 7.7% speedup over EAGLE-3 on MT-Bench."
)


def _source(n: int = 1, **kw: Any) -> Source:
    fields: dict[str, Any] = dict(
        n=n,
        paper_id=f"p{n}",
        title="GTO",
        title_is_derived=True,
        source="002_x.txt:11",
        score=0.03,
        text=ABSTRACT,
        venue="ICLR",
        year=2026,
    )
    return Source(**{**fields, **kw})


def _answer(text: str, sources: list[Source], citations: list[int], **kw: Any) -> Answer:
    return Answer("q?", text, False, citations, sources, kw.pop("mode", "llm"), **kw)


def test_untrusted_text_is_inert_in_html_and_markdown() -> None:
    hostile = "<script>alert(1)</script> costs $5 and $x_1$ [click](javascript:alert(1)) ~a~ **b**"
    out = render.escape_html(hostile)
    assert "<" not in out and ">" not in out and "$" not in out and "[" not in out
    assert "*" not in out and "~" not in out
    assert html.unescape(out) == hostile  # every character comes back as itself
    assert html.unescape(render.escape_html('Makhoul\'s "N"-point & #1')) == (
        'Makhoul\'s "N"-point & #1'  # an entity's own '#' is not escaped again
    )
    assert render.safe_url("javascript:alert(1)") is None
    assert render.safe_url("https://openreview.net/forum?id=x") is not None


def test_citations_link_to_their_source_cards() -> None:
    answer = _answer(
        "Drafts help [1][3]. Costs $5 [2, 3].", [_source(i) for i in (1, 2, 3)], [1, 3, 2]
    )
    md = render.answer_markdown(answer, turn=4)
    assert "[\\[1\\]](#src-4-1)[\\[3\\]](#src-4-3)" in md
    assert "[\\[2\\]](#src-4-2)[\\[3\\]](#src-4-3)" in md
    assert "\\$5" in md
    card = render.source_header_html(_source(3), turn=4)
    assert 'id="src-4-3"' in card and "derived label" in card
    assert "also" not in card
    folded = render.source_header_html(_source(3, versions=["ICML 2017", "<i>x</i>"]), turn=4)
    assert "also ICML 2017, &lt;i&gt;x&lt;/i&gt;" in folded


def test_the_authors_bold_shows_as_bold_and_nothing_else_is_markup() -> None:
    text = "In this paper, we propose **Block LoRA (BoRA)**, which costs **$5** <b>x</b>."
    html_out = render.quote_html([text])
    assert "<b>Block LoRA (BoRA)</b>" in html_out and "**" not in html_out
    assert "&lt;b&gt;x&lt;/b&gt;" in html_out and "$" not in html_out  # still inert
    marked = render.highlight_html(text + " Next.", [text])
    assert "<mark>In this paper, we propose <b>Block LoRA (BoRA)</b>" in marked
    assert render.prose_html("a ** b ** c") == render.escape_html("a ** b ** c")
    assert render.prose_html("at a speed *linear* in it") == "at a speed <i>linear</i> in it"
    for literal in ("a * b * c", "2*3*4", "$a*b$ or $c*d$"):
        assert "<i>" not in render.prose_html(literal)


def test_an_abstracts_inline_math_shows_as_unicode_with_its_latex_in_the_tooltip() -> None:
    text = r"converges at $O(1/\varepsilon^2)$ for top-$k$, at $50 and $60 a run, <i>"
    html_out = render.quote_html([text])
    assert '<span class="rag-math" title="&#36;O(1/&#92;varepsilon^2)&#36;">O(1/ε^2)</span>' in (
        html_out
    )
    assert 'top-<span class="rag-math" title="&#36;k&#36;">k</span>' in html_out
    assert "at &#36;50 and &#36;60 a run" in html_out  # no LaTeX in it: as written
    assert "%s" not in render.prose_html(r"a $\frac{1}$ b")  # a macro it cannot fill
    assert "&lt;i&gt;" in html_out and "\\" not in html_out and "$" not in html_out
    marked = render.highlight_html(text + " Next.", [text])  # found in the raw text
    assert marked.startswith("<mark>converges at <span") and "Next." in marked


def test_a_label_says_how_it_was_made() -> None:
    titled = _source(title="Fast Drafts", title_is_derived=False)
    generated = _source(title="GTO: Group Tree Optimization", title_generated=True)
    assert "rag-derived" not in render.source_header_html(titled, turn=1)
    card = render.source_header_html(generated, turn=1)
    assert "generated title" in card and "derived label" not in card
    assert render.reference_line(generated).startswith(
        "[1] GTO: Group Tree Optimization (generated title). ICLR 2026"
    )
    assert render.reference_line(titled).startswith("[1] Fast Drafts. ICLR 2026")
    assert "(derived label)" in render.reference_line(_source())


def test_llm_citation_highlights_the_best_overlapping_sentence() -> None:
    source = _source()
    answer = _answer("GTO reports a 7.7% speedup over EAGLE-3. [1] Another claim.", [source], [1])
    support = render.supporting_sentences(answer, source)
    assert support == ["It yields a 7.7% speedup over EAGLE-3 on MT-Bench."]
    html = render.abstract_html(answer, source)
    assert "<mark>It yields a 7.7% speedup over EAGLE-3 on MT-Bench.</mark>" in html


def test_extractive_highlights_are_used_as_given() -> None:
    source = _source(highlights=["We train draft trees with a new reward."])
    answer = _answer(
        "We train draft trees with a new reward. [1]", [source], [1], mode="extractive"
    )
    assert render.supporting_sentences(answer, source) == source.highlights


def test_cited_and_uncited_sources_are_apart() -> None:
    sources = [_source(1), _source(2), _source(3)]
    answer = _answer("x [3] y [1]", sources, [3, 1])
    assert [s.n for s in render.cited_sources(answer)] == [3, 1]
    assert [s.n for s in render.uncited_sources(answer)] == [2]


def test_export_holds_questions_answers_and_references() -> None:
    site = "https://openreview.net/forum?id=abc"
    cited = _source(1, title="Group Tree Optimization", title_is_derived=False, site=site)
    answer = _answer(
        "GTO is faster [1].",
        [cited, _source(2)],
        [1],
        notices=[Notice("llm_failed", "LLM endpoint failed")],
    )
    abstained = Answer("bread?", "The answer is not found.", True, [], [_source(1)], "extractive")
    doc = render.conversation_markdown([("Who is fast?", answer), ("bread?", abstained)], "Chat")
    assert doc.startswith("# Chat")
    assert "## 1. Who is fast?" in doc and "## 2. bread?" in doc
    assert f"- [1] Group Tree Optimization. ICLR 2026. {site}" in doc
    assert "[2]" not in doc.split("## 2.")[0].split("References:")[1]  # uncited: not listed
    assert "> Note: LLM endpoint failed" in doc


def test_upload_rejects_unsupported_types_without_touching_the_index() -> None:
    no_index = cast(Assistant, object())  # any use of it would raise
    result = ingest_upload(no_index, "slides.pdf", b"%PDF-1.7")
    assert not result.ok and "unsupported file type" in result.message
    assert {"txt", "json", "jsonl", "csv"} <= set(UPLOAD_TYPES)
    assert safe_name("../../etc/pa ss?.json") == "pa ss_.json"
    assert Path(safe_name("")).name == "upload"


class _Conversation:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def ask(self, question: str, on_token: Any = None, **options: Any) -> Answer:
        if self.error:
            raise self.error
        for word in ("Fast ", "[1]."):
            on_token(word)
        return _answer("Fast [1].", [_source()], [1])


def test_stream_yields_tokens_then_the_answer() -> None:
    events = list(ask_events(_Conversation(), "q?"))  # type: ignore[arg-type]
    assert events[:2] == [Token("Fast "), Token("[1].")]
    assert isinstance(events[-1], Done) and events[-1].answer.citations == [1]


def test_stream_reports_a_failure_as_an_event() -> None:
    events = list(ask_events(_Conversation(ValueError("the question is empty")), ""))  # type: ignore[arg-type]
    assert len(events) == 1 and isinstance(events[0], Failed)
    assert str(events[0].error) == "the question is empty"


def test_scope_chips_label_each_filter_and_say_where_it_came_from() -> None:
    applied = {"venue": "ICLR", "year_min": 2016, "status": "Oral", "area": "RL"}
    chips = render.scope_chips(applied, sidebar=("area",), named=("venue", "year_min"))
    assert [(c.field, c.label, c.origin) for c in chips] == [
        ("venue", "ICLR", "question"),
        ("year", "since 2016", "question"),  # a year range is one chip, removed as 'year'
        ("status", "Oral", "context"),  # neither typed nor picked: from the previous turn
        ("area", "RL", "sidebar"),
    ]
    assert [c.removable for c in chips] == [True, True, False, False]
    assert [c.label for c in render.scope_chips({"year_min": 2016, "year_max": 2018})] == [
        "2016-2018"
    ]
    assert all(c.removable for c in render.scope_chips({"venue": "ICLR", "year": 2026}))
    assert render.scope_chips({}) == []
    pill = render.chip_html(render.Chip("venue", "<b>X</b>", "sidebar"))
    assert "&lt;b&gt;" in pill and "sidebar" in pill


def test_scope_notice_gives_way_to_the_chips_other_notices_stay() -> None:
    scope = Notice("scope", "scope: NeurIPS (read from the question)")
    notices = [scope, Notice("abstained", "abstained: no NeurIPS papers")]
    scoped = _answer("", [], [], notices=notices, applied_filters={"venue": "NeurIPS"})
    assert render.page_notices(scoped) == ["abstained: no NeurIPS papers"]
    unscoped = _answer("", [], [], notices=[Notice("scope", "scope: x")])
    assert render.page_notices(unscoped) == ["scope: x"]  # no chips, so the notice stays
    # the app keys on the code, not the wording
    reworded = Notice("scope", "searched inside NeurIPS")
    assert (
        render.page_notices(
            _answer("", [], [], notices=[reworded], applied_filters={"venue": "NeurIPS"})
        )
        == []
    )


def test_answer_details_show_confidence_and_a_language_other_than_english() -> None:
    assert render.answer_details(_answer("x", [], [], confidence=0.8166)) == ["confidence 0.82"]
    assert render.answer_details(_answer("x", [], [], language="zh")) == ["asked in Chinese"]
    assert render.answer_details(_answer("x", [], [], language="xx")) == ["asked in xx"]
    assert render.answer_details(_answer("x", [], [])) == []


def test_an_answers_inline_math_is_kept_for_katex_and_the_rest_stays_literal() -> None:
    answer = _answer(
        r"It reaches $\widetilde{O}(\epsilon^{-2})$ with $10$ runs, $9.8\times$ faster "
        r"at p$<$0.05, for $5 [1]. A $\{ broken$ span.",
        [_source(1)],
        [1],
    )
    md = render.answer_markdown(answer, turn=0)
    assert r"$\widetilde{O}(\epsilon^{-2})$" in md  # rendered by st.markdown
    assert "with 10 runs" in md and r"$9.8\times$" in md
    assert r"p$\lt $0.05" in md  # never an HTML '<'
    assert r"for \$5" in md and r"A \$\{ broken\$ span" in md  # unbalanced: literal

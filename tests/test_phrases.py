"""The token matcher the question reader uses for its word and phrase lists (rag.text)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.lexicon import phrases_of
from rag.question.reading import Vocabulary, read, refers_back
from rag.text import Phrases, hyphen_words, is_year, tokens


def test_tokens_split_where_a_word_boundary_does_and_keep_offsets() -> None:
    text = "Is GTO's open-source code 2x faster?"
    found = tokens(text)
    assert [t.text for t in found] == [
        "Is", "GTO", "'", "s", "open", "-", "source", "code", "2x", "faster", "?"
    ]  # fmt: skip
    assert all(text[t.start : t.end] == t.text for t in found)
    assert found[0].key == "is" and found[0].is_word and not found[2].is_word


@given(st.text(alphabet="ab1 -_'?.,é", max_size=30))
def test_tokens_are_the_text_less_its_spaces(text: str) -> None:
    assert "".join(t.text for t in tokens(text)) == "".join(text.split())


def test_hyphen_words_are_the_runs_of_word_characters_and_hyphens() -> None:
    text = "DeMo-like (i) decouples all-reduce; Qwen3-8B, -x_y- and café?"
    assert hyphen_words(text) == [
        "DeMo-like", "i", "decouples", "all-reduce", "Qwen3-8B", "-x_y-", "and", "café"
    ]  # fmt: skip
    assert hyphen_words("  ?! ") == []


def test_a_phrase_matches_its_words_side_by_side_case_aside() -> None:
    phrases = Phrases(["what about", "source code"])
    assert phrases.search("So WHAT ABOUT vision?") is not None
    assert phrases.search("what is it about") is None
    match = phrases.search("where is the source code?")
    assert match is not None and match.phrase == "source code"
    assert "where is the source code?"[match.start : match.end] == "source code"


def test_a_phrase_with_a_mark_matches_only_as_written() -> None:
    phrases = Phrases(["open-source", "what's"])
    assert phrases.search("is it open-source") is not None
    assert phrases.search("is it open source") is None
    assert phrases.search("what's GTO") is not None
    assert phrases.search("whats GTO") is None


def test_the_leftmost_match_wins_then_the_longest() -> None:
    phrases = Phrases({"the first": 1, "the first one": 2, "first one": 3})
    match = phrases.search("take the first one please")
    assert match is not None and match.value == 2
    assert [m.value for m in phrases.finditer("first one, the first")] == [3, 1]


def test_match_only_at_the_start() -> None:
    phrases = Phrases(["what about"])
    assert phrases.match("what about RL?") is not None
    assert phrases.match("and so what about RL?") is None


@pytest.mark.parametrize(
    ("phrase", "text", "slots"),
    [
        ("since <year>", "papers since 2016", ("2016",)),
        ("since <year>", "papers since 2077", None),  # not a year a paper has
        ("since <year>", "papers since 16", None),
        ("[<n>]", "as [12] says", ("12",)),
        ("paper <d>", "paper 2 again", ("2",)),
        ("paper <d>", "paper 12 again", None),
        ("what kind of <w> is", "what kind of model is GTO", ("model",)),
        ("<year> - <year>", "from 2016-2018", ("2016", "2018")),
    ],
)
def test_slots_take_a_kind_of_token(phrase: str, text: str, slots: tuple[str, ...] | None) -> None:
    match = Phrases([phrase]).search(text)
    assert (match.slots if match else None) == slots


def test_an_end_slot_needs_a_clause_end_and_takes_none_of_it() -> None:
    phrases = Phrases(["from <year> on <end>"])
    for text in ("papers from 2019 on", "papers from 2019 on?", "from 2019 on, about RL"):
        match = phrases.search(text)
        assert match is not None and text[match.start : match.end] == "from 2019 on"
    assert phrases.search("papers from 2019 on bandits") is None


def test_phrases_of_makes_every_combination_and_leaves_empty_slots_out() -> None:
    assert phrases_of("|the", "first|last") == ("first", "last", "the first", "the last")


@pytest.mark.parametrize(
    ("text", "year"),
    [("1980", True), ("2049", True), ("1979", False), ("2050", False), ("26", False)],
)
def test_is_year(text: str, year: bool) -> None:
    assert is_year(text) is year


# The reader's rules, as the matcher now reads them.

VOCABULARY = Vocabulary(venues=frozenset({"ICLR", "NeurIPS"}), years=frozenset(range(2013, 2027)))


@pytest.mark.parametrize(
    ("question", "low", "high"),
    [
        ("papers on gans between 2016 and 2018", 2016, 2018),
        ("papers on gans from 2018 to 2016", 2016, 2018),
        ("papers on vae 2016–2018", 2016, 2018),
        ("papers after 2020 on diffusion", 2021, None),
        ("papers from 2019 onwards on transformers", 2019, None),
        ("papers prior to 2015 about kernels", None, 2014),
        ("papers up to 2021 on diffusion", None, 2021),
    ],
)
def test_a_year_range_is_read_with_its_bounds(
    question: str, low: int | None, high: int | None
) -> None:
    scope = read(question, VOCABULARY).read_scope
    assert (scope.year_min, scope.year_max, scope.year) == (low, high, None)


def test_a_venue_glued_to_a_hyphen_or_a_year_word_is_read_as_written() -> None:
    assert read("ICLR-style reviews of gans", VOCABULARY).read_scope.venue is None
    assert read("iclr's 2018 gans", VOCABULARY).read_scope.year == 2018
    assert read("colt papers on bandits", VOCABULARY).read_scope.venue is None  # no year beside
    assert read("colt 2020 papers on bandits", VOCABULARY).read_scope.venue == "COLT"


def test_a_cut_scope_takes_the_word_it_leaves_dangling() -> None:
    assert read("which gans papers at ICLR 2024?", VOCABULARY).text == "which gans papers?"
    assert read("gans papers from ICLR", VOCABULARY).text == "gans papers"
    assert read("papers at ICLR on gans", VOCABULARY).text == "papers at on gans"  # only at the end


def test_a_generic_it_is_no_reference_but_a_second_pronoun_is() -> None:
    assert not refers_back("is it possible to prune attention heads?")
    assert refers_back("is it possible to prune their attention heads?")

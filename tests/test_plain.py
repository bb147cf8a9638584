"""Plain words -> the field's terms (rag/question/plain.py, rag/data/glossary-plain.tsv)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.assistant import Assistant
from rag.question import plain


def _everything(word: str) -> bool:
    return True


def test_the_shipped_glossary_loads_and_every_phrase_has_a_term() -> None:
    table = plain.load()
    assert len(table) > 200
    assert table[("chatbot",)] == ("language model",)
    assert all(terms for terms in table.values())


def test_a_plain_phrase_gets_its_field_term_beside_it() -> None:
    text, found = plain.expand("let a chatbot write code for me", _everything)
    assert text == "let a chatbot (language model) write code (code generation) for me"
    assert [(e.phrase, e.terms) for e in found] == [
        ("chatbot", ("language model",)),
        ("write code", ("code generation",)),
    ]


def test_phrases_match_on_stems_and_the_longest_wins() -> None:
    # 'Chatbots' is 'chatbot'; 'making things up' is one phrase, 'things' no other
    text, found = plain.expand("Chatbots making things up", _everything)
    assert text == "Chatbots (language model) making things up (hallucination)"
    assert [e.phrase for e in found] == ["Chatbots", "making things up"]
    # curly apostrophes read as straight ones
    assert plain.expand("an agent that can’t see everything", _everything)[1]


def test_a_term_is_added_only_where_the_index_holds_it_and_the_text_lacks_it() -> None:
    held = {"language", "model"}
    text, _ = plain.expand("chatbots making things up", lambda w: w in held)
    assert text == "chatbots (language model) making things up"  # no 'hallucination' stored
    assert plain.expand("a chatbot language model", _everything) == (
        "a chatbot language model",
        (),
    )
    # of several senses, each the index holds is searched
    text, _ = plain.expand("deepfake detection of fake images", _everything)
    assert text == "deepfake detection of fake images (synthetic images)"  # 'deepfake' is there


def test_what_a_method_does_without_is_searched_as_the_fields_free_form() -> None:
    held = {"critic-free", "gradient-free"}
    text, found = plain.expand("which one doesn't need a critic", lambda w: w in held)
    assert text == "which one doesn't need a critic (critic-free)"
    assert [(e.phrase, e.terms) for e in found] == [("doesn't need a critic", ("critic-free",))]
    assert plain.expand("optimizing without gradients", lambda w: w in held)[0] == (
        "optimizing without gradients (gradient-free)"
    )
    # only where an abstract writes it, and not twice
    assert plain.expand("methods without labels", lambda w: w in held)[1] == ()
    assert plain.expand("a critic-free rl without a critic", lambda w: w in held)[1] == ()


def test_a_bad_glossary_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    shape = tmp_path / "glossary-plain.tsv"
    shape.write_text("# terms\nchatbot\tlanguage model\nno term here\n")
    with pytest.raises(ValueError, match=r"glossary-plain.tsv:3: expected plain phrase"):
        plain.load(shape)
    twice = tmp_path / "twice.tsv"
    twice.write_text("chatbot\tlanguage model\nChatbots\tLLM\n")
    with pytest.raises(ValueError, match=r"twice.tsv:2: 'Chatbots' is listed twice"):
        plain.load(twice)


def test_the_assistant_searches_the_field_terms_and_says_so(fake_seeded: Assistant) -> None:
    question = "let a chatbot write the math model for a hospital waiting line problem"
    read_q, _ = fake_seeded.plan(question)
    assert "waiting line (queueing, queue)" in read_q.text
    assert "chatbot (language model)" in read_q.text
    assert any(
        n.code == "expanded" and "'waiting line' also as 'queueing, queue'" in n
        for n in read_q.notices
    )
    # no seed abstract writes 'sycophancy': nothing is searched for it
    assert not fake_seeded.holds_word("sycophancy")
    read_s, _ = fake_seeded.plan("chatbots agreeing with the user")
    assert read_s.text == "chatbots (language model) agreeing with the user"
    answer = fake_seeded.ask(question)
    assert any(n.code == "expanded" for n in answer.notices)
    assert answer.query == read_q.text


def test_a_topic_in_plain_words_is_rewritten_in_the_field_terms() -> None:
    assert plain.field_topics("faster text generation", _everything) == (
        "efficient inference",
        "speculative decoding",
    )
    # every plain phrase of the topic at once, the other words kept
    assert plain.field_topics("chatbots making things up in court", _everything) == (
        "language model hallucination in court",
    )
    assert plain.field_topics("speculative decoding", _everything) == ()
    # a term no stored abstract holds is not a rewrite
    assert plain.field_topics("faster text generation", lambda w: w != "efficient") == (
        "speculative decoding",
    )


def test_a_count_in_plain_words_counts_the_papers_written_in_the_field_terms(
    fake_seeded: Assistant,
) -> None:
    answer = fake_seeded.ask("how many papers are about faster text generation")
    counted = {s.title for s in answer.sources if s.cited}
    assert {
        "GTO: Group Tree Optimization",
        "Algorithm for optimal n-draft speculative sampling",
    } <= counted
    quoted = " ".join(h for s in answer.sources if s.cited for h in s.highlights)
    assert "Speculative decoding accelerates" in quoted

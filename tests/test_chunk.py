"""Chunking invariants: no text lost, offsets exact, every chunk fits the embedding model."""

from __future__ import annotations

import functools
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.config import BUNDLED_CORPUS, Settings
from rag.corpus.chunk import Chunker, count_tokens, stitch
from rag.corpus.load import expand_paths
from rag.corpus.papers import FieldMap
from rag.embedding.embed import model_path
from rag.ingest import read_papers
from rag.types import IngestSummary, Paper


def seed_papers() -> list[Paper]:
    items = read_papers(expand_paths([BUNDLED_CORPUS]), FieldMap(), IngestSummary())
    return [p for p in items if isinstance(p, Paper)]


@functools.cache
def model_tokenizer() -> Any:
    """The bundled all-MiniLM-L6-v2's own tokenizer.json (no weights loaded), untruncated
    and unpadded: it counts the word pieces the model reads, [CLS]/[SEP] included."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path("all-MiniLM-L6-v2") / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def model_token_count(text: str) -> int:
    return len(model_tokenizer().encode(text).ids)


def test_seed_chunks_cover_the_abstract_and_fit_the_model() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
    for paper in seed_papers():
        chunks = chunker.split(paper)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert all(c.n_chunks == len(chunks) and c.paper_id == paper.paper_id for c in chunks)
        for chunk in chunks:
            assert paper.abstract[chunk.char_start : chunk.char_end] == chunk.text
            assert chunk.n_tokens == count_tokens(chunk.text) <= settings.chunk_tokens
            # all-MiniLM-L6-v2 truncates at 256 word pieces (incl. [CLS]/[SEP]).
            assert model_token_count(chunk.text) <= 256
        rebuilt = stitch([(c.char_start, c.char_end, c.text) for c in chunks])
        assert rebuilt == paper.abstract


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=8, max_size=200))
def test_no_text_is_lost_for_arbitrary_input(words: list[str]) -> None:
    text = " ".join(w.strip() or "x" for w in words)
    paper = Paper(paper_id="p", abstract=text)
    chunks = Chunker(48, 8).split(paper)
    assert stitch([(c.char_start, c.char_end, c.text) for c in chunks]) == text
    assert chunks[0].char_start == 0 and chunks[-1].char_end == len(text)


def test_chunks_end_at_sentences_and_repeat_the_last_one_that_fits_the_overlap() -> None:
    sentences = [f"Sentence {n} says something about topic {n} in a few words." for n in range(12)]
    text = " ".join(sentences)
    chunks = Chunker(60, 16).split(Paper(paper_id="p", abstract=text))
    assert len(chunks) > 2
    for before, after in itertools.pairwise(chunks):
        assert before.text.rstrip().endswith(".")  # no sentence is cut while one fits
        last_sentence = before.text.rstrip().rsplit(". ", 1)[-1]
        assert after.text.lstrip().startswith(last_sentence)  # ~14 tokens: within 16
    assert all(c.n_tokens == count_tokens(c.text) <= 60 for c in chunks)


def test_no_overlap_when_the_last_sentence_is_longer_than_it() -> None:
    long = "This sentence is deliberately long so that it exceeds the overlap by far."
    text = " ".join([long] * 6)
    chunks = Chunker(40, 8).split(Paper(paper_id="p", abstract=text))
    assert all(before.char_end == after.char_start for before, after in itertools.pairwise(chunks))
    assert stitch([(c.char_start, c.char_end, c.text) for c in chunks]) == text


def test_a_sentence_longer_than_a_chunk_is_cut_at_commas_then_words_then_inside_a_word() -> None:
    clauses = ", ".join(f"clause number {n} of a long list" for n in range(30)) + "."
    word = "x" * 400  # one unbroken 'word' of many tokens
    text = f"Short opening. {clauses} {word} Done."
    chunks = Chunker(32, 8).split(Paper(paper_id="p", abstract=text))
    assert all(c.n_tokens == count_tokens(c.text) <= 32 for c in chunks)
    assert any(c.text.rstrip().endswith(",") for c in chunks)  # cut after a clause
    assert sum(word[:50] in c.text for c in chunks) >= 1 and not any(word in c.text for c in chunks)
    assert stitch([(c.char_start, c.char_end, c.text) for c in chunks]) == text


def test_cjk_text_is_cut_at_its_own_stops_and_commas() -> None:
    text = "我们提出了一种新的方法，用于提高大型语言模型的推理速度。" * 30
    chunks = Chunker(200, 32).split(Paper(paper_id="p", abstract=text))
    assert len(chunks) > 1
    assert all(c.text[-1] in "。，" for c in chunks)  # not in the middle of a clause
    assert all(c.n_tokens == count_tokens(c.text) <= 200 for c in chunks)
    assert stitch([(c.char_start, c.char_end, c.text) for c in chunks]) == text

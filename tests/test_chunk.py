"""Chunking invariants: no text lost, offsets exact, every chunk fits the embedding model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunk import Chunker, count_tokens, stitch
from rag.config import BUNDLED_CORPUS, Settings
from rag.embed import LocalEmbedder
from rag.ingest import read_papers
from rag.load import expand_paths
from rag.papers import FieldMap
from rag.types import IngestSummary, Paper


def seed_papers() -> list[Paper]:
    items = read_papers(expand_paths([BUNDLED_CORPUS]), FieldMap(), IngestSummary())
    return [p for p in items if isinstance(p, Paper)]


def test_seed_chunks_cover_the_abstract_and_fit_the_model(embedder: LocalEmbedder) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
    tokenizer = embedder.model.tokenizer
    for paper in seed_papers():
        chunks = chunker.split(paper)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert all(c.n_chunks == len(chunks) and c.paper_id == paper.paper_id for c in chunks)
        for chunk in chunks:
            assert paper.abstract[chunk.char_start : chunk.char_end] == chunk.text
            assert chunk.n_tokens == count_tokens(chunk.text) <= settings.chunk_tokens
            # all-MiniLM-L6-v2 truncates at 256 word pieces (incl. [CLS]/[SEP]).
            assert len(tokenizer(chunk.text)["input_ids"]) <= 256
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

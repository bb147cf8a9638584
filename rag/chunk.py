"""Papers -> chunks: token-aware splitting so the embedding model sees every chunk whole.

Counts are tiktoken (cl100k_base, shipped with llama-index-core, so nothing downloads).
A typical 250-token abstract becomes two ~150-token chunks overlapping by 32 tokens.
Each chunk keeps its character offsets in the abstract, so evidence is shown in the
abstract's own words and whole abstracts can be stitched back from their chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from rag.types import Chunk, Paper, chunk_id


@lru_cache(maxsize=1)
def tokenizer() -> Callable[[str], list[int]]:
    """Return the tiktoken cl100k_base encoder (from llama-index's offline cache)."""
    from llama_index.core.utils import get_tokenizer  # imported on use: ~2 s of start-up

    return get_tokenizer()


def count_tokens(text: str) -> int:
    """Count tiktoken tokens: 'speculative decoding' -> 3."""
    return len(tokenizer()(text))


class Chunker:
    """Split abstracts into overlapping token-bounded chunks with offsets."""

    def __init__(self, chunk_tokens: int = 200, overlap: int = 32) -> None:
        from llama_index.core.node_parser import SentenceSplitter

        self.chunk_tokens = chunk_tokens
        self.splitter = SentenceSplitter(
            chunk_size=chunk_tokens,
            chunk_overlap=min(overlap, chunk_tokens // 2),
            tokenizer=tokenizer(),
        )

    def split(self, paper: Paper) -> list[Chunk]:
        """Split one paper; the union of the chunks covers the whole abstract."""
        text = paper.abstract
        tokens = count_tokens(text)
        if tokens <= self.chunk_tokens:  # most abstracts: one chunk, no splitter, one count
            return [
                Chunk(chunk_id(paper.paper_id, 0), paper.paper_id, 0, 1, text, 0, len(text), tokens)
            ]
        spans = _locate(text, self.splitter.split_text(text) or [text])
        return [
            Chunk(
                chunk_id=chunk_id(paper.paper_id, i),
                paper_id=paper.paper_id,
                index=i,
                n_chunks=len(spans),
                text=text[start:end],
                char_start=start,
                char_end=end,
                n_tokens=count_tokens(text[start:end]),
            )
            for i, (start, end) in enumerate(spans)
        ]


def _locate(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Find each piece's span; the splitter may trim whitespace, never reorder text."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for piece in pieces:
        start = text.find(piece, max(0, cursor - len(piece)))
        if start < 0:  # defensive: fall back to a contiguous span after the last one
            start = cursor
        end = min(len(text), start + len(piece))
        spans.append((start, end))
        cursor = end
    # Close gaps so no character of the abstract is lost between chunks.
    fixed = [(0 if i == 0 else s, e) for i, (s, e) in enumerate(spans)]
    fixed[-1] = (fixed[-1][0], len(text))
    for i in range(1, len(fixed)):
        if fixed[i][0] > fixed[i - 1][1]:
            fixed[i] = (fixed[i - 1][1], fixed[i][1])
    return fixed


def stitch(chunks: list[tuple[int, int, str]]) -> str:
    """Rebuild an abstract from (char_start, char_end, text) of all its chunks."""
    out = ""
    for start, end, text in sorted(chunks):
        if end > len(out):
            out += text[max(0, len(out) - start) :]
    return out

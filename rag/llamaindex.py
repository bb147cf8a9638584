"""llama-index entry points: our retrieval and answers as llama-index components.

    from rag.assistant import Assistant
    from rag.config import Settings
    from rag.llamaindex import HybridRetriever, AssistantQueryEngine

    assistant = Assistant(Settings())
    nodes = HybridRetriever(assistant, top_k=5).retrieve("which ICLR 2026 papers use DCT?")
    response = AssistantQueryEngine(assistant).query("what is GTO?")
    print(response, [n.node.metadata["n"] for n in response.source_nodes])

`HybridRetriever` is a `BaseRetriever`: dense + BM25 fused per paper, inside the scope the
query names (one `NodeWithScore` per paper, the abstract as its text). `AssistantQueryEngine`
is a `CustomQueryEngine` over `Assistant.ask`: the cited answer (LLM or extractive, with
abstention) as the response, every source as a node in `[n]` order, and the answer's
citations, notices and applied filters in `metadata`. Both compose with llama-index's own
pipelines (e.g. a `RouterQueryEngine`, or our retriever under a `RetrieverQueryEngine`
with your own synthesizer). Nothing here sets llama-index's global LLM or embedding model.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import Field
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.assistant import Assistant
from rag.types import Filters, Hit, Source


class HybridRetriever(BaseRetriever):
    """Our hybrid retrieval as a llama-index retriever."""

    def __init__(
        self, assistant: Assistant, top_k: int | None = None, filters: Filters | None = None
    ) -> None:
        super().__init__()
        self._assistant = assistant
        self._top_k = top_k
        self._filters = filters

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits, applied = self._assistant.search_scoped(
            query_bundle.query_str, self._top_k, self._filters
        )
        return [_hit_node(hit, applied) for hit in hits]


class AssistantQueryEngine(CustomQueryEngine):
    """`Assistant.ask` as a llama-index query engine (cited answers, abstention)."""

    assistant: Any  # an Assistant (pydantic cannot validate it; typed in `custom_query`)
    options: dict[str, Any] = Field(default_factory=dict)  # for `Assistant.ask`: top_k, ...

    def custom_query(self, query_str: str) -> Response:
        """Answer one query."""
        assistant: Assistant = self.assistant
        answer = assistant.ask(query_str, **self.options)
        return Response(
            response=answer.answer,
            source_nodes=[_source_node(s) for s in answer.sources],
            metadata={
                "abstained": answer.abstained,
                "citations": answer.citations,
                "mode": answer.mode,
                "notices": [str(n) for n in answer.notices],
                "applied_filters": answer.applied_filters,
                "confidence": answer.confidence,
            },
        )


def _hit_node(hit: Hit, applied: Filters) -> NodeWithScore:
    paper = hit.paper
    metadata = {
        "paper_id": paper.paper_id,
        "label": paper.label,
        "venue": paper.venue,
        "year": paper.year,
        "dense_similarity": hit.dense_similarity,
        "bm25_score": hit.bm25_score,
        "applied_filters": applied.to_dict(),
    }
    node = TextNode(id_=paper.paper_id, text=paper.abstract, metadata=metadata)
    return NodeWithScore(node=node, score=hit.score)


def _source_node(source: Source) -> NodeWithScore:
    metadata = {
        "n": source.n,
        "paper_id": source.paper_id,
        "label": source.title,
        "cited": source.cited,
        "venue": source.venue,
        "year": source.year,
        "highlights": source.highlights,
    }
    node = TextNode(id_=f"{source.paper_id}#source", text=source.text, metadata=metadata)
    return NodeWithScore(node=node, score=source.score)

"""The llama-index entry points: our retriever and assistant inside llama-index pipelines."""

from __future__ import annotations

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import QueryBundle

from rag.assistant import Assistant
from rag.llamaindex import AssistantQueryEngine, HybridRetriever


def test_hybrid_retriever_is_a_llama_index_retriever(fake_seeded: Assistant) -> None:
    nodes = HybridRetriever(fake_seeded, top_k=4).retrieve("which ICLR 2026 papers use DCT?")
    assert 1 <= len(nodes) <= 4
    ours, _ = fake_seeded.search_scoped("which ICLR 2026 papers use DCT?", 4)
    assert [n.node.metadata["paper_id"] for n in nodes] == [h.paper.paper_id for h in ours]
    assert nodes[0].node.metadata["applied_filters"] == {"venue": "ICLR", "year": 2026}
    assert "DCT" in nodes[0].node.get_content() or "DCT" in nodes[1].node.get_content()
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_query_engine_answers_with_citations_that_resolve(fake_seeded: Assistant) -> None:
    response = AssistantQueryEngine(assistant=fake_seeded).query("what is GTO?")
    assert "Group Tree Optimization" in str(response)
    assert response.metadata is not None and not response.metadata["abstained"]
    by_n = {n.node.metadata["n"]: n for n in response.source_nodes}
    for cited in response.metadata["citations"]:
        assert f"[{cited}]" in str(response) and by_n[cited].node.metadata["cited"]


def test_query_engine_abstains_as_the_assistant_does(fake_seeded: Assistant) -> None:
    response = AssistantQueryEngine(assistant=fake_seeded).query("what is mamba?")
    assert response.metadata is not None and response.metadata["abstained"]
    assert "not found in the indexed abstracts" in str(response)


def test_our_retriever_composes_with_a_llama_index_query_engine(fake_seeded: Assistant) -> None:
    # llama-index's own synthesizer, writing with its offline MockLLM (it echoes text)
    synthesizer = get_response_synthesizer(response_mode="compact", llm=MockLLM(max_tokens=16))
    engine = RetrieverQueryEngine(HybridRetriever(fake_seeded, top_k=3), synthesizer)
    response = engine.query(QueryBundle("speculative decoding draft model"))
    labels = [n.node.metadata["label"] for n in response.source_nodes]
    assert labels and labels[0].startswith("GTO")  # "GTO: Group Tree Optimization"

"""An embeddings endpoint that fails mid-ingest leaves a consistent, resumable index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rag.assistant import Assistant
from rag.config import Settings
from rag.embedding.embed import EmbeddingError, EndpointEmbedder
from tests.openai_server import OpenAIServer

from .test_ingest import synthetic_corpus


def test_failure_mid_ingest_then_resume(
    tmp_path: Path, settings_factory: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = synthetic_corpus(tmp_path / "corpus.txt", 30)
    with OpenAIServer() as server:
        settings = settings_factory(
            embed_base_url=server.base_url,
            embed_model="test-embed",
            embed_batch_size=4,
            ingest_batch=8,  # many small write batches
            llm_retries=1,
            llm_backoff_s=0.01,
            embed_api_key="sk-embed-PLANTED",
        )
        server.embeddings_fail_after = 5
        assistant = Assistant(settings, EndpointEmbedder(settings))
        with pytest.raises(EmbeddingError, match="HTTP 500") as failure:
            assistant.ingest([corpus])
        assert "PLANTED" not in str(failure.value)

        catalog = assistant.store.load_catalog()
        assert assistant.store.count() == catalog.n_chunks  # nothing half-written
        assert all(sp.complete for sp in catalog.papers.values())
        assert 0 < len(catalog.papers) < 30

        server.embeddings_fail_after = None
        resumed = assistant.ingest([corpus])
        assert resumed.total_papers == 30 and resumed.papers_new == 30 - len(catalog.papers)
        assert resumed.chunks_embedded == resumed.total_chunks - catalog.n_chunks
        assert assistant.store.count() == resumed.total_chunks
    assert assistant.store.embed_model == "api:test-embed|per-paper"  # the default layout

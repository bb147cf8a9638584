"""Settings: one object, RAG_ variables and .env; `.env.example` lists every setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import Settings, alternatives, data_rows, env_example

ROOT = Path(__file__).resolve().parents[1]


def test_env_example_lists_every_setting_and_no_secret() -> None:
    text = (ROOT / ".env.example").read_text("utf-8")
    assert text == env_example()
    for line in text.splitlines():
        if line.startswith("OPENAI_API_KEY") or line.startswith("RAG_EMBED_API_KEY"):
            assert line.endswith("=")


def test_env_and_dotenv_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("RAG_TOP_K=9\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAG_RETRIEVER", "bm25")
    settings = Settings()
    assert (settings.top_k, settings.retriever) == (9, "bm25")
    assert settings.base_url == "http://127.0.0.1:9/v1" and settings.answer_mode == "llm"


def test_bad_values_are_rejected_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_RETRIEVER", "magic")
    with pytest.raises(ValueError, match="retriever"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_gitignore_keeps_env_out() -> None:
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


def test_data_rows_read_tab_separated_files_and_name_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "terms.tsv"
    path.write_text("# a comment\n\nchatbot\tlanguage model\nsim\tsimulation | simulator\t# d1\n")
    rows = list(data_rows(path, ("phrase", "term", "note"), optional=1))
    assert rows == [
        (3, ["chatbot", "language model"]),
        (4, ["sim", "simulation | simulator", "# d1"]),
    ]
    assert alternatives(rows[1][1][1]) == ("simulation", "simulator")
    path.write_text("chatbot\tlanguage model\nno tab here\n")
    with pytest.raises(ValueError, match=r"terms.tsv:2: expected phrase, term"):
        list(data_rows(path, ("phrase", "term")))
    path.write_text("a\tb\tc\n")  # a column too many
    with pytest.raises(ValueError, match=r"terms.tsv:1: expected phrase, term"):
        list(data_rows(path, ("phrase", "term")))

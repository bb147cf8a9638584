"""The acronym glossary: built from abstracts, read only for words no stored abstract holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eval import acronyms as building
from rag import acronyms
from rag.assistant import Assistant
from rag.cli import main
from rag.types import Paper


def _papers(*abstracts: str) -> list[Paper]:
    return [Paper(f"p{i}", text) for i, text in enumerate(abstracts)]


def test_the_glossary_keeps_acronyms_spelled_out_alike_in_enough_abstracts() -> None:
    built = building.build(
        _papers(
            "We use Monte-Carlo tree search (MCTS) to plan.",
            "Planning with Monte Carlo tree search (MCTS) is slow.",
            "A Monte Carlo Tree Searches (MCTS) variant.",
            "Knowledge distillation (KD) compresses models.",  # one abstract: left out
            "We study the asynchronous advantage actor-critic (A3C) and actor-critic (A3C).",
            "Direct preference optimization (DPO) is popular.",
            "Dynamic pricing optimization (DPO) is another thing.",  # split 1:1: left out
        )
    )
    acronyms = built["acronyms"]
    assert set(acronyms) == {"mcts"}
    # hyphens, case and plural make one form, shown as written most often (ties: first)
    assert acronyms["mcts"] == {"written": "MCTS", "long": "monte-carlo tree search", "papers": 3}
    assert built["about"]["abstracts"] == 7 and built["about"]["acronyms"] == 1


def test_a_written_glossary_loads_back(tmp_path: Path) -> None:
    built = building.build(
        _papers("Graph neural networks (GNNs) ...", "A graph neural network (GNN)")
    )
    path = building.write(built, tmp_path / "g.json")
    assert json.loads(path.read_text())["acronyms"]["gnn"]["papers"] == 2
    loaded = acronyms.load(path)
    entry = loaded.get("gnn")
    assert entry is not None and entry.written == "GNN" and loaded.get("GNN") == entry
    assert loaded.get("mcts") is None
    with pytest.raises(ValueError, match="acronym glossary"):
        acronyms.load(tmp_path / "missing.json")


def test_spellings_prefer_the_index_and_skip_words_it_holds() -> None:
    table = acronyms.Glossary(
        {
            "mcts": acronyms.Entry("MCTS", "monte carlo tree search", 18),
            "gnn": acronyms.Entry("GNN", "graph neural networks", 60),
            "dpo": acronyms.Entry("DPO", "dynamic pricing optimization", 2),
        },
        {},
    )
    spellings = acronyms.Spellings({"dpo": "DPO"}, table, lambda w: w == "gnn")
    assert spellings["dpo"] == "DPO" and "mcts" in spellings
    assert "gnn" not in spellings  # the index holds the word: it is read as the index does
    assert "nope" not in spellings and list(spellings) == ["dpo"] and len(spellings) == 1


def test_the_shipped_glossary_is_the_one_the_command_writes(tmp_path: Path) -> None:
    shipped = json.loads(acronyms.DEFAULT_FILE.read_text(encoding="utf-8"))
    assert shipped["acronyms"]["mcts"]["long"] == "monte-carlo tree search"
    assert shipped["about"]["acronyms"] == len(shipped["acronyms"]) > 500
    seeds = Path(__file__).parents[1] / "rag" / "data" / "iclr2026"
    target = tmp_path / "seeds.json"
    result = CliRunner().invoke(main, ["eval", "acronyms", str(seeds), "--write", str(target)])
    assert result.exit_code == 0, result.output
    from_seeds = json.loads(target.read_text())["acronyms"]
    assert from_seeds and all(k in shipped["acronyms"] for k in from_seeds)


def test_an_acronym_no_abstract_writes_is_searched_by_its_long_form(
    fake_seeded: Assistant,
) -> None:
    # the seeds write 'Monte Carlo tree search' once and never 'MCTS'
    assert not fake_seeded.holds_word("mcts")
    read_q, _ = fake_seeded.plan("how many iclr 2026 papers use mcts")
    assert read_q.terms == ("MCTS",)
    assert "monte-carlo tree search (MCTS)" in read_q.text
    assert read_q.topic == "monte-carlo tree search"
    assert read_q.aliases["MCTS"] == ("monte-carlo tree search",)
    assert [n.code for n in read_q.notices] == ["expanded"]
    answer = fake_seeded.ask("how many iclr 2026 papers use mcts")
    assert any(n.code == "expanded" for n in answer.notices)
    assert any("Monte Carlo tree search" in s.text for s in answer.sources if s.cited)
    # a follow-up's standalone query holds the long form already: not spelled out twice
    standalone = "how many iclr 2026 papers use monte-carlo tree search (MCTS) which of them"
    read_f, _ = fake_seeded.plan("which of them", query=standalone)
    assert read_f.text.count("monte-carlo tree search") == 1
    # an acronym the seeds define (DPO) is read as they do: nothing expanded
    read_dpo, _ = fake_seeded.plan("how many dpo variants")
    assert read_dpo.terms == ("DPO",) and not read_dpo.notices
    assert "dynamic" not in read_dpo.text


def test_an_acronym_the_index_spells_out_two_ways_names_nothing_by_itself(
    fake_seeded: Assistant,
) -> None:
    # the seeds write 'DP' for differential privacy and for dynamic programming
    assert set(fake_seeded.retriever.aliases(["dp"])["dp"]) == {
        "differential privacy",
        "dynamic programming",
    }
    read_q, _ = fake_seeded.plan("which paper speeds up dynamic programming on GPUs?")
    assert "dp" not in read_q.implied and "dp" not in read_q.aliases
    answer = fake_seeded.ask("which paper speeds up dynamic programming on GPUs?")
    assert not any("Differential Privacy" in s.text for s in answer.sources if s.cited)
    # one the index spells out one way is still implied by its long form
    read_dct, _ = fake_seeded.plan("which papers use the discrete cosine transform")
    assert read_dct.implied == ("dct",)

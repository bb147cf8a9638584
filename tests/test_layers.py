"""The import layout: no cycles between modules (import-linter checks the layer contracts
in `make lint`; see [tool.importlinter] in pyproject.toml)."""

from __future__ import annotations

import grimp


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = grimp.build_graph("rag", "eval", "ui")
    cycles = sorted(
        {
            tuple(sorted((a, b)))
            for a in graph.modules
            for b in graph.find_modules_directly_imported_by(a)
            if graph.find_shortest_chain(importer=b, imported=a)
        }
    )
    assert cycles == []


def test_the_core_never_imports_eval_or_ui() -> None:
    graph = grimp.build_graph("rag", "eval", "ui")
    for layer in ("eval", "ui"):
        assert not graph.chain_exists(importer="rag", imported=layer, as_packages=True)

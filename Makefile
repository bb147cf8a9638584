# The few commands a newcomer needs. `make run` and `make test` do all the set-up.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run chat install test lint format bench clean

run: install  ## Open the chat app on 127.0.0.1:8501 (builds the bundled ICLR 2026 index if missing).
	$(VENV)/bin/rag app

chat: run

install: $(STAMP)

# torch is installed first from the CPU wheel on disk: an unpinned torch pulls CUDA (GBs).
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev,bench]"
	touch $(STAMP)

lint: install  ## ruff (lint + format check), mypy and the import contracts (import-linter).
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: install lint  ## Lint, type-check and run the whole test suite.
	$(PY) -m pytest -q -ra

bench: install  ## Ingest/query speed and hit@5 on the bundled corpus, beside plain llama-index.
	$(VENV)/bin/rag bench

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf .rag .pytest_cache .mypy_cache .ruff_cache

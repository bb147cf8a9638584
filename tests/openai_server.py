"""A small OpenAI-compatible server on 127.0.0.1 for tests, scriptable one request at a time.

    with OpenAIServer() as server:
        server.script(status(500), reply("AltGDA converges at O(1/T) [1]."))
        assistant = assistant_factory(base_url=server.base_url)
        ...
        assert len(server.chat_requests) == 2

Endpoints: GET /v1/models, POST /v1/chat/completions (JSON, or SSE `data: {...}` chunks
ending with `data: [DONE]` when the body says `"stream": true`) and POST /v1/embeddings.
Every request is recorded (`server.requests`). Each chat request takes the next queued
`Behaviour`, or `server.default` when the queue is empty. Every sleep is capped at
`MAX_SLEEP_S` and cut short when the server stops, so a test can never hang on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MAX_SLEEP_S = 10.0
MODEL = "test-model"
SOURCE_BLOCK = re.compile(r'<source n="(\d+)" label="[^"\n]*">\n(.*?)\n</source>', re.S)


@dataclass(frozen=True)
class Request:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None
    at: float  # time.monotonic() on arrival

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def content(self, role: str) -> str:
        """The content of the first message with this role ('' if none)."""
        return next((m["content"] for m in self.messages if m.get("role") == role), "")

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


Text = str | Callable[[Request], str]


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one chat request."""

    kind: str = "reply"  # reply | status | hang | stall | close | malformed
    text: Text = "Nothing to add [1]."
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0  # hang: before the headers; stall: after `after` chunks
    after: int = 2  # stream chunks sent before a stall or close
    keepalive: float = 0.0  # during a stall, send an SSE comment this often (0: silence)


def reply(text: Text) -> Behaviour:
    """Answer with this text (or with what the function returns for the request)."""
    return Behaviour(text=text)


def empty() -> Behaviour:
    """Answer 200 with an empty message."""
    return Behaviour(text="")


def status(code: int, retry_after: float | None = None, message: str = "") -> Behaviour:
    """Answer with an HTTP error and an OpenAI-style error body."""
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Behaviour("status", text=message or f"error {code}", status=code, headers=headers)


def hang(seconds: float, text: Text = "Too late [1].") -> Behaviour:
    """Send nothing for `seconds`, then answer (normally to a client that has gone)."""
    return Behaviour("hang", text=text, seconds=seconds)


def stall(
    seconds: float, after: int = 2, keepalive: float = 0.0, text: Text = "One two three [1]."
) -> Behaviour:
    """Stream `after` chunks, send no content for `seconds`, then finish the stream.

    With `keepalive`, SSE comments keep the connection busy during the stall, so only a
    whole-answer deadline (not a per-read timeout) can end it.
    """
    return Behaviour("stall", text=text, seconds=seconds, after=after, keepalive=keepalive)


def close(after: int = 2, text: Text = "One two three [1].") -> Behaviour:
    """Stream `after` chunks, then drop the connection without ending the body."""
    return Behaviour("close", text=text, after=after)


def malformed() -> Behaviour:
    """Answer 200 with garbage: broken SSE lines and invalid JSON."""
    return Behaviour("malformed")


def tokens(text: str) -> list[str]:
    """How a reply is cut into stream chunks: each word with the space after it."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def sources_in(request: Request) -> dict[int, str]:
    """The source blocks of a chat request's user message: {n: text}."""
    return {int(n): text for n, text in SOURCE_BLOCK.findall(request.content("user"))}


def cite_sources(request: Request, count: int = 2) -> str:
    """A well-behaved answer: the first sentence of the first `count` sources, each cited."""
    sentences = []
    for n, text in list(sources_in(request).items())[:count]:
        first = re.split(r"(?<=[.!?])\s+", text.strip())[0].rstrip(".!? ")
        sentences.append(f"{first} [{n}].")
    return " ".join(sentences) or "The answer is not found in the indexed abstracts."


class OpenAIServer:
    """The server, run in a daemon thread; use as a context manager."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self.default = default or reply(cite_sources)
        self.requests: list[Request] = []
        self._queue: deque[Behaviour] = deque()
        self.embeddings_fail_after: int | None = None  # answer 500 to later embedding calls
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours, one per coming chat request."""
        with self._lock:
            self._queue.extend(behaviours)

    def _serve(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)  # so that stop() returns at once

    def start(self) -> OpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes every hang and stall
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def sleep(self, seconds: float) -> None:
        self._stopping.wait(min(seconds, MAX_SLEEP_S))

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def embeddings_failing(self) -> bool:
        """Tell whether this embeddings request is past `embeddings_fail_after`."""
        with self._lock:
            done = sum(1 for r in self.requests if r.path.endswith("/embeddings"))
        return self.embeddings_fail_after is not None and done > self.embeddings_fail_after

    def next_behaviour(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams, so a dropped connection is detectable
    owner: OpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "tests"}
            self._json(200, {"object": "list", "data": [model]})
        else:
            self._json(404, _error("not found", 404))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = self._record(body)
        if self.path.endswith("/chat/completions"):
            try:
                self._chat(request, self.owner.next_behaviour())
            except OSError:  # the client gave up (timeout, watchdog): nothing to do
                self.close_connection = True
        elif self.path.endswith("/embeddings") and self.owner.embeddings_failing():
            self._json(500, _error("embedding backend crashed", 500))
        elif self.path.endswith("/embeddings"):
            inputs = body.get("input", []) if isinstance(body, dict) else []
            inputs = [inputs] if isinstance(inputs, str) else inputs
            data = [
                {"object": "embedding", "index": i, "embedding": _vector(str(x))}
                for i, x in enumerate(inputs)
            ]
            self._json(200, {"object": "list", "data": data, "model": MODEL, "usage": _usage()})
        else:
            self._json(404, _error("not found", 404))

    def _record(self, body: Any) -> Request:
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, self.path, headers, body, time.monotonic())
        self.owner.record(request)
        return request

    def _chat(self, request: Request, behaviour: Behaviour) -> None:
        kind = behaviour.kind
        if kind == "status":
            message = behaviour.text if isinstance(behaviour.text, str) else "error"
            self._json(behaviour.status, _error(message, behaviour.status), behaviour.headers)
            return
        if kind == "hang":
            self.owner.sleep(behaviour.seconds)
        text = behaviour.text(request) if callable(behaviour.text) else behaviour.text
        if not request.stream:
            if kind == "malformed":
                self._send(200, b'{"choices": [{"message": ', "application/json")
            else:
                self._json(200, _completion(text))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if kind == "malformed":
            self._chunk(b"this is not an event\n\n: a comment\n\n")
            self._chunk(b'data: {"choices": [{"delta": {"content": "Brok\n\n')
            self._event("[DONE]")
            self._chunk(b"")
            return
        self._event(_chunk_json({"role": "assistant", "content": ""}))
        for i, piece in enumerate(tokens(text)):
            if i == behaviour.after and kind == "close":
                return  # no terminating chunk: the body is cut off mid-stream
            if i == behaviour.after and kind == "stall":
                self._stall(behaviour)
            self._event(_chunk_json({"content": piece}))
        self._event(_chunk_json({}, finish="stop"))
        self._event("[DONE]")
        self._chunk(b"")

    def _stall(self, behaviour: Behaviour) -> None:
        if not behaviour.keepalive:
            self.owner.sleep(behaviour.seconds)
            return
        end = time.monotonic() + min(behaviour.seconds, MAX_SLEEP_S)
        while not self.owner.stopping and time.monotonic() < end:
            self.owner.sleep(min(behaviour.keepalive, end - time.monotonic()))
            self._chunk(b": keep-alive\n\n")

    def _event(self, data: str) -> None:
        self._chunk(f"data: {data}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, code: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(code, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self, code: int, data: bytes, kind: str, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


def _completion(text: str) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{**choice, "finish_reason": "stop"}],
        "usage": _usage(),
    }


def _chunk_json(delta: dict[str, str], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0}
    return json.dumps({**chunk, "model": MODEL, "choices": [choice]})


def _error(message: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "test_error", "code": code}}


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _vector(text: str, dims: int = 8) -> list[float]:
    """A deterministic unit-ish vector for a text (enough for protocol tests)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 127.5 for b in digest[:dims]]

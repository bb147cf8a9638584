"""The OpenAI-compatible chat client: the one seam tests replace (with a real HTTP server).

Works with OpenAI, vLLM, Ollama and llama.cpp's server through the `openai` package.
Faults are bounded: connection errors, timeouts, 429 and 5xx are retried with
exponential backoff (honouring Retry-After), 4xx like 401 are not, and the whole attempt,
retries and streaming included, lives under one deadline. A watchdog closes a stream that
stalls past the deadline, so a hung endpoint never holds a question longer than that.
The API key is never put into an error message or log line.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from rag.config import Settings
from rag.errors import RagError

if TYPE_CHECKING:
    import openai  # imported on use: ~1 s of every `rag ask` start, needed with an endpoint only

OnToken = Callable[[str], None]
OnReset = Callable[[], None]  # tokens streamed so far are void (a retry or a fallback follows)


class LLMError(RagError, RuntimeError):
    """The endpoint did not produce an answer; `retryable` says if trying again could help."""

    def __init__(
        self,
        message: str,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after  # seconds the server asked us to wait (429)
        self.status = status  # the HTTP status the endpoint answered, if it answered one


@dataclass(frozen=True, slots=True)
class Reply:
    """A finished completion."""

    text: str
    attempts: int


class Chat(Protocol):
    """What the answerer and conversations need from a chat model: the one seam tests
    replace (`tests/fakes.py` has a scripted one; `ChatClient` is the real one)."""

    def complete(
        self,
        messages: list[dict[str, str]],
        on_token: OnToken | None = None,
        deadline_s: float | None = None,
        max_tokens: int | None = None,
        on_reset: OnReset | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        """The reply to `messages`; LLMError when the model cannot give one.
        `response_format` asks for structured output (passed as the endpoint takes it)."""
        ...

    def health(self, timeout_s: float = 3.0) -> tuple[bool, str]:
        """(ok, short description) of the endpoint."""
        ...


class ChatClient:
    """Chat completions with retries, one deadline, and optional token streaming."""

    def __init__(self, settings: Settings, sleep: Callable[[float], None] = time.sleep) -> None:
        """`sleep` waits out a retry's delay (the tests record the delays instead)."""
        import openai

        self.settings = settings
        self.sleep = sleep
        key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
        self.client = openai.OpenAI(
            base_url=settings.base_url,
            api_key=key,
            max_retries=0,
            timeout=httpx.Timeout(
                settings.llm_deadline_s, connect=min(5.0, settings.llm_deadline_s)
            ),
        )

    def complete(
        self,
        messages: list[dict[str, str]],
        on_token: OnToken | None = None,
        deadline_s: float | None = None,
        max_tokens: int | None = None,
        on_reset: OnReset | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Reply:
        """Return the model's reply, streaming tokens to `on_token` when given.

        When an attempt fails after streaming some tokens, `on_reset` is called before
        the retry or the error, so a display can drop the partial text.
        """
        deadline = time.monotonic() + (deadline_s or self.settings.llm_deadline_s)
        attempts = 0
        while True:
            attempts += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                raise LLMError("endpoint deadline passed", retryable=False)
            streamed: list[str] = []
            relay = None if on_token is None else _tee(on_token, streamed)
            try:
                text = self._once(messages, relay, remaining, max_tokens, response_format)
            except LLMError as exc:
                if streamed and on_reset is not None:
                    on_reset()
                delay = exc.retry_after or self.settings.llm_backoff_s * 2 ** (attempts - 1)
                out_of_time = time.monotonic() + delay >= deadline
                if not exc.retryable or attempts > self.settings.llm_retries or out_of_time:
                    raise LLMError(
                        f"{exc} (after {attempts} attempt(s))", exc.retryable, status=exc.status
                    ) from None
                self.sleep(delay)
                continue
            return Reply(text, attempts)

    def _once(
        self,
        messages: list[dict[str, str]],
        on_token: OnToken | None,
        remaining: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None = None,
    ) -> str:
        import openai

        request: dict[str, Any] = dict(
            model=self.settings.llm_model,
            messages=messages,
            temperature=self.settings.temperature,
            max_tokens=max_tokens or self.settings.max_answer_tokens,
            timeout=httpx.Timeout(remaining, connect=min(5.0, remaining)),
        )
        if response_format is not None:
            request["response_format"] = response_format
        try:
            if on_token is None:
                response = self.client.chat.completions.create(**request)
                return _message_text(response)
            return self._stream(request, on_token, remaining)
        except openai.APIStatusError as exc:
            raise _status_error(exc) from None
        except openai.APITimeoutError:
            raise LLMError("endpoint timed out", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise LLMError(f"cannot reach endpoint: {_cause(exc)}", retryable=True) from None
        except (openai.APIError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(
                f"malformed reply from endpoint: {type(exc).__name__}", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise LLMError(f"stream interrupted: {type(exc).__name__}", retryable=True) from None

    def _stream(self, request: dict[str, Any], on_token: OnToken, remaining: float) -> str:
        stream = self.client.chat.completions.create(stream=True, **request)
        expired = threading.Event()

        def close() -> None:
            expired.set()
            _shutdown_socket(stream.response)  # wakes a read blocked on a silent socket
            stream.response.close()

        watchdog = threading.Timer(remaining, close)
        watchdog.daemon = True
        watchdog.start()
        parts: list[str] = []
        try:
            for event in stream:
                if not event.choices:
                    continue
                delta = event.choices[0].delta.content or ""
                if delta:
                    parts.append(delta)
                    on_token(delta)
        except Exception:
            if expired.is_set():
                raise LLMError("endpoint stalled past the deadline", retryable=False) from None
            raise
        finally:
            watchdog.cancel()
        if expired.is_set():
            raise LLMError("endpoint stalled past the deadline", retryable=False)
        return "".join(parts)

    def health(self, timeout_s: float = 3.0) -> tuple[bool, str]:
        """Check the endpoint with a cheap models listing: (ok, short description)."""
        import openai

        try:
            models = self.client.with_options(timeout=timeout_s).models.list()
            names = [m.id for m in models.data][:3]
            return True, f"reachable ({', '.join(names) or 'no models listed'})"
        except openai.APIStatusError as exc:
            return False, str(_status_error(exc))
        except Exception as exc:
            return False, f"unreachable ({type(exc).__name__})"


def _tee(on_token: OnToken, seen: list[str]) -> OnToken:
    def relay(token: str) -> None:
        seen.append(token)
        on_token(token)

    return relay


def _shutdown_socket(response: httpx.Response) -> None:
    network = response.extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _message_text(response: Any) -> str:
    if isinstance(response, str):  # some servers answer 200 with a bare string
        raise ValueError("reply is not a chat completion")
    return response.choices[0].message.content or ""


def _status_error(exc: openai.APIStatusError) -> LLMError:
    status = exc.status_code
    header = exc.response.headers.get("retry-after") if exc.response is not None else None
    retry_after = None
    if header and header.strip().replace(".", "", 1).isdigit():
        retry_after = min(float(header), 30.0)
    retryable = status == 429 or status >= 500
    return LLMError(f"endpoint answered HTTP {status}", retryable, retry_after, status)


def _cause(exc: Exception) -> str:
    cause = exc.__cause__ or exc.__context__
    return type(cause).__name__ if cause else "connection error"

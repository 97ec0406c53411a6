"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests, benchmarks and dry runs.

It answers ``POST .../chat/completions`` (OpenAI style ``/v1/chat/completions`` and Azure style
``/openai/deployments/{name}/chat/completions``) the way azure-ai-evaluation's judge prompts expect: a JSON
object ``{"score": N, "reason": "..."}`` as the message content. What it answers is decided by a ``rule``:
a function of the request (model, system and user message) returning a :class:`FakeAnswer`. Every request is
counted and recorded, so a test can assert how many judge calls a run made.

    with FakeJudgeServer(rule) as judge:
        backend = LocalBackend(judge_endpoint=judge.base_url, judge_model="m", ...)
        ...
        judge.calls  # number of chat-completions requests served

Standard library only; never used by the real backends.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeAnswer", "FakeJudgeServer", "JudgeRequest", "score_answer"]


@dataclass(frozen=True)
class JudgeRequest:
    """What the fake judge saw: the path, the body's model, the system and user messages, the headers."""

    path: str
    model: str
    system: str
    user: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> str:
        """The data block of the user message (after the rubric and its examples): the row's own inputs."""
        text = self.user
        for marker in ("\n# Data\n", "INPUT\n=====\n"):
            at = text.rfind(marker)
            if at >= 0:
                return text[at + len(marker) :]
        return text

    @property
    def kind(self) -> str:
        """Which judge prompt sent this: ``retrieval``, ``groundedness``, ``relevance``, ``response_completeness``
        or ``unknown`` (read from the labels of the data block)."""
        data = self.data
        if "CONVERSATION_HISTORY:" in data:
            return "relevance"
        if "Ground Truth:" in data:
            return "response_completeness"
        if "CONTEXT:" in data and "RESPONSE:" in data:
            return "groundedness"
        if "QUERY:" in data and "CONTEXT:" in data:
            return "retrieval"
        return "unknown"


@dataclass(frozen=True)
class FakeAnswer:
    """How to answer one request: HTTP status, message content (or a raw body), headers, delay in seconds."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw_body: bytes | None = None  # sent as is instead of a chat-completions envelope


def score_answer(score: float | None, reason: str = "fake judge") -> FakeAnswer:
    """A well-formed judge answer; ``score=None`` gives a JSON object without a score."""
    payload: dict[str, Any] = {"reason": reason}
    if score is not None:
        payload["score"] = score
    return FakeAnswer(content=json.dumps(payload))


Rule = Callable[[JudgeRequest], FakeAnswer]


def _default_rule(request: JudgeRequest) -> FakeAnswer:
    return score_answer(4)


class FakeJudgeServer:
    """A real HTTP server on ``127.0.0.1:<free port>`` in a daemon thread; a context manager."""

    def __init__(self, rule: Rule | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.rule: Rule = rule or _default_rule
        self.requests: list[JudgeRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> FakeJudgeServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="fake-judge", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- inspection ------------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (an Azure-style ``azure_endpoint``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (an OpenAI-style ``base_url``)."""
        return f"{self.root}/v1"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    # --- HTTP ------------------------------------------------------------------------------------------------
    def _record(self, request: JudgeRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                if not path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                request = _request(path, body, {k.lower(): v for k, v in self.headers.items()})
                server._record(request)
                answer = server.rule(request)
                if answer.delay:
                    time.sleep(answer.delay)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self._send(answer.status, _payload(answer, request), answer.headers)

        return Handler


def _request(path: str, body: dict[str, Any], headers: dict[str, str]) -> JudgeRequest:
    messages = body.get("messages") or []
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    return JudgeRequest(
        path=path, model=str(body.get("model", "")), system=system, user=user, body=body, headers=headers
    )


def _payload(answer: FakeAnswer, request: JudgeRequest) -> bytes:
    """The response body: the answer's raw bytes, an OpenAI-style error, or a chat completion."""
    if answer.raw_body is not None:
        return answer.raw_body
    if answer.status >= 400:
        return json.dumps({"error": {"message": answer.content or "fake error", "type": None}}).encode()
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer.content or ""}}
    usage = {"prompt_tokens": len(request.user) // 4, "completion_tokens": 8, "total_tokens": 0}
    completion = {"id": "chatcmpl-fake", "object": "chat.completion", "model": request.model}
    return json.dumps({**completion, "choices": [choice], "usage": usage}).encode()

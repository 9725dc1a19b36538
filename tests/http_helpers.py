"""What the tests' local HTTP servers share: serving one on a thread, answering with JSON, and
keeping the requests a server got."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any, TypeVar

S = TypeVar("S", bound=HTTPServer)
T = TypeVar("T")


@contextmanager
def serving(server: S, *, daemon: bool = False) -> Iterator[S]:
    """Serve ``server`` on a thread for a ``with`` block; on the way out wake any request it
    holds (its ``release`` event, if it has one), then stop and close it."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=daemon
    )
    thread.start()
    try:
        yield server
    finally:
        release = getattr(server, "release", None)
        if release is not None:
            release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    """Answer the handler's request with ``body`` as JSON."""
    send_bytes(handler, status, json.dumps(body).encode())


def send_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """Answer with ``data`` labelled as JSON (it may be anything: a garbage answer, say)."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def chat_completion(
    model: str,
    message: dict[str, Any],
    *,
    number: int | str = "test",
    reason: str | None = None,
    prompt_tokens: int = 1,
    completion_tokens: int = 1,
) -> dict[str, Any]:
    """An OpenAI chat-completion body answering with ``message``, as the test servers send it:
    ``reason`` defaults to ``tool_calls`` when the message has calls, else ``stop``."""
    if reason is None:
        reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class QuietHandler(BaseHTTPRequestHandler):
    """The base of the tests' request handlers: no access log on the test's output, and the
    request's JSON body read in one call."""

    def log_message(self, *args: Any) -> None:
        pass

    def read_json(self) -> Any:
        """The request's body, parsed as JSON."""
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))


class RecordingServer(ThreadingHTTPServer):
    """A test's server on 127.0.0.1 (``port`` 0: a free one) that keeps the JSON body of every
    request in ``requests``; ``lock`` guards them and whatever else the server counts."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0):
        super().__init__(("127.0.0.1", port), handler)
        self.requests: list[Any] = []
        self.lock = threading.Lock()


class RecordingHandler(QuietHandler):
    """A handler of a :class:`RecordingServer`."""

    server: RecordingServer

    def read_recorded(self, then: Callable[[], T]) -> tuple[Any, T]:
        """The request's JSON body, recorded, and ``then()``, called under the same lock (what
        the server decides for this request, in the order the requests were recorded)."""
        body = self.read_json()
        with self.server.lock:
            self.server.requests.append(body)
            return body, then()

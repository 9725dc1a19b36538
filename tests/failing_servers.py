"""Endpoints on 127.0.0.1 that fail the way real OpenAI-compatible servers fail.

- ``killed_url()``: a port nobody listens on (a server that was killed: connection refused);
- ``frozen_url()``: a socket that accepts connections and never answers (a hung server; the
  client's timeout ends the wait);
- ``garbage_url()``: an HTTP server that answers every request 200 with a body that is not JSON
  (a proxy error page, a half-written reply).

A slow server, a misnamed model (a real 404) and HTTP 5xx come from the real vLLM server and its
FaultProxy (tests/vllm_helpers.py) or from the customer server (tests/tau_helpers.py).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from http_helpers import send_bytes, serving

GARBAGE = b'{"choices": [ this is not json'


def killed_url() -> str:
    """The base URL of a server that is not running (the port was just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@contextmanager
def frozen_url() -> Iterator[str]:
    """A base URL whose server takes connections (the kernel's backlog) but never replies."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


class _Garbage(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        send_bytes(self, 200, GARBAGE)


@contextmanager
def garbage_url() -> Iterator[str]:
    """A base URL whose server answers 200 with a body that is not JSON."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    server.daemon_threads = True
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"

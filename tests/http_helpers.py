"""What the tests' local HTTP servers share: serving one on a thread, and answering with JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, TypeVar

S = TypeVar("S", bound=HTTPServer)


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

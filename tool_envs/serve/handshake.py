"""Connections that have not sent a whole request yet: closed after a timeout, and bounded.

uvicorn times out an idle keep-alive connection, but a new connection that sends nothing, or half
a request, stays open for as long as its client likes, each holding a file descriptor before the
server has read a header, let alone checked a token. Here every connection must send its first
request's head (request line and headers) within ``timeout`` seconds, and at most ``limit``
connections may be slow: still without their head a second after they were accepted. While
``limit`` slow ones wait, a new connection is answered ``503`` (once its request head is read,
so the client reads the answer) and closed, and so is one that turns slow. A burst of clients
that send their heads at once is never refused for this, however many arrive together: the
server accepts a whole listen queue before it reads any of them, so counting every connection
not read yet refused thousands of fast clients (4,096 sessions opened at once held 256). Those
in their first second are bounded by the open-file limit instead (:class:`.limits.OpenFiles`).
A WebSocket session or an HTTP request whose head has arrived is past this stage (the app checks
its token at once), so long sessions are never cut.

This is the one place that touches uvicorn's protocol classes: :func:`guarded_protocol` wraps
``uvicorn.protocols.http.auto.AutoHTTPProtocol`` (httptools, or h11) and leaves parsing to it.
The server's answers also carry ``Connection: close`` (:func:`one_request_per_connection`), so a
connection never waits for a second request head outside this bound.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tool_envs.serve.limits import OpenFiles

_HEAD_END = b"\r\n\r\n"
SLOW_AFTER = 1.0  # seconds without a request head after which a connection is slow
_REFUSED_LINGER = 1.0  # seconds a refused connection may take to send its head before it closes
_MAX_LINGERING = 16  # refused connections waiting for their head at once (each holds a file)


@dataclass
class HandshakeLimits:
    """The bound of one server, and its counters (changed on the event loop only).

    Attributes:
        timeout: Seconds a connection may take to send its first request head.
        limit: Slow connections (``slow_after`` seconds without their head) waiting at once;
            while this many wait, new ones are refused, and so is one that turns slow.
        slow_after: Seconds without a head after which a connection is slow.
        pending: Connections waiting for their head now, slow or not.
        slow: Those of ``pending`` that are slow.
        timed_out: Connections closed because their head did not come in time.
        refused: Connections refused because ``limit`` slow ones were waiting.
        lingering: Refused connections waiting for their head to be answered (at most
            ``_MAX_LINGERING``; past that a refusal is answered and closed at once).
    """

    timeout: float
    limit: int
    slow_after: float = SLOW_AFTER
    pending: int = 0
    slow: int = 0
    lingering: int = 0
    timed_out: int = 0
    refused: int = 0

    def refusal(self) -> bytes:
        """The 503 a refused connection gets: what was full, and the flag that sets it."""
        text = (
            f"{self.limit} slow connections are still sending their first request "
            f"(--max-handshakes {self.limit}); try again, or raise --max-handshakes\n"
        ).encode()
        return (
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\ncontent-length: " + str(len(text)).encode() + b"\r\n\r\n" + text
        )


def guarded_protocol(
    limits: HandshakeLimits, files: OpenFiles | None = None
) -> type[asyncio.Protocol]:
    """An HTTP protocol class for ``uvicorn.Config(http=...)``: uvicorn's own, behind the
    handshake timeout and bound of ``limits``, and (``files``) refusing a connection the
    server's open-file limit has no room for."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class GuardedHTTPProtocol(asyncio.Protocol):
        def __init__(self, *args: Any, **kwargs: Any):
            self._inner = AutoHTTPProtocol(*args, **kwargs)
            self._inner_made = False  # uvicorn's protocol saw the connection: it must see the end
            self._transport: asyncio.Transport | None = None
            self._timer: asyncio.TimerHandle | None = None
            self._waiting = False
            self._slow = False  # waiting past ``slow_after``, counted in ``limits.slow``
            self._refused = False
            self._answer = b""  # the 503 a refused connection gets after its head
            self._lingering = False  # refused, waiting for its head (counted in ``limits``)
            self._tail = b""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._transport = transport  # type: ignore[assignment]
            if files is not None and not files.admit():
                self._refuse(files.refusal())
                return
            if limits.slow >= limits.limit:
                limits.refused += 1
                self._refuse(limits.refusal())
                return
            limits.pending += 1
            self._waiting = True
            loop = asyncio.get_running_loop()
            if limits.timeout > limits.slow_after:
                self._timer = loop.call_later(limits.slow_after, self._turn_slow)
            else:
                self._timer = loop.call_later(limits.timeout, self._expire)
            self._inner_made = True
            self._inner.connection_made(transport)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                seen = self._tail + data
                self._tail = seen[-(len(_HEAD_END) - 1) :]
                if _HEAD_END in seen:
                    self._answer_refusal()  # the head is read: closing sends no reset
                return
            if self._waiting:
                seen = self._tail + data
                if _HEAD_END in seen:
                    self._passed()
                else:
                    self._tail = seen[-(len(_HEAD_END) - 1) :]
            self._inner.data_received(data)
            # An upgrade hands the transport to the WebSocket protocol: past the handshake.
            if self._waiting and self._transport.get_protocol() is not self:  # type: ignore[union-attr]
                self._passed()

        def eof_received(self) -> bool | None:
            if self._refused:
                return False  # asyncio closes the transport
            return self._inner.eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_lingering()
            self._passed()
            if self._inner_made:
                self._inner.connection_lost(exc)

        def pause_writing(self) -> None:
            if not self._refused:
                self._inner.pause_writing()

        def resume_writing(self) -> None:
            if not self._refused:
                self._inner.resume_writing()

        def _refuse(self, answer: bytes) -> None:
            """Answer 503 once the request head is read (or after a second without one), then
            close. A 503 sent before the request reaches a WebSocket client that has not sent
            it yet, and a socket closed with the request unread sends a reset that can destroy
            the 503: either way the client saw a broken connection, not a busy server."""
            self._refused = True
            self._answer = answer
            if limits.lingering >= _MAX_LINGERING:  # a flood: each would hold a descriptor
                self._answer_refusal()
                return
            limits.lingering += 1
            self._lingering = True
            self._timer = asyncio.get_running_loop().call_later(
                _REFUSED_LINGER, self._answer_refusal
            )

        def _answer_refusal(self) -> None:
            self._stop_lingering()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._answer and self._transport is not None:
                self._transport.write(self._answer)
                self._answer = b""
                self._transport.close()

        def _stop_lingering(self) -> None:
            if self._lingering:
                self._lingering = False
                limits.lingering -= 1

        def _passed(self) -> None:
            """The head arrived, or the connection ended: it no longer counts."""
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._waiting:
                self._waiting = False
                limits.pending -= 1
            if self._slow:
                self._slow = False
                limits.slow -= 1

        def _turn_slow(self) -> None:
            """``slow_after`` without a head: counted against ``limit``, or refused past it. (A
            head sent at once has been read by now: the loop reads every ready socket at each
            of its turns.)"""
            self._timer = None
            if not self._waiting or self._transport is None:
                return
            if limits.slow >= limits.limit:
                self._passed()
                limits.refused += 1
                self._refuse(limits.refusal())
                return
            self._slow = True
            limits.slow += 1
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(limits.timeout - limits.slow_after, self._expire)

        def _expire(self) -> None:
            self._timer = None
            if self._waiting and self._transport is not None:
                limits.timed_out += 1
                self._transport.close()

    return GuardedHTTPProtocol


def one_request_per_connection(app: Any) -> Any:
    """ASGI middleware: every HTTP answer says ``Connection: close``, so the server closes the
    connection after it instead of waiting, unbounded, for the next request's head."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def closing_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, closing_send)

    return wrapped

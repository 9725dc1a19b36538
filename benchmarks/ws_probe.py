"""A lean WebSocket client for load probes: websockets' sans-I/O protocol on a bare asyncio
transport, one frame asked and answered at a time.

``env_scale.py`` plays thousands of sessions from one process on the same 2 cores as the
server it measures, so the client's own CPU per frame decides how far the machine can go.
websockets' asyncio client spends most of its time in machinery a probe does not need (a send
lock, a stream reader, drain): at 3,072 sessions it took 60% of a core against 2 servers. This
client speaks the same protocol (the handshake, masking, pings and the close are websockets').
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri


class ProbeSocket(asyncio.Protocol):
    """One connection; :func:`connect` opens it, :meth:`ask` sends a text frame and returns
    the next text frame's bytes, :meth:`close` ends it."""

    def __init__(self, uri: str):
        self._ws = ClientProtocol(parse_uri(uri))
        self._loop = asyncio.get_running_loop()
        self._opened: asyncio.Future[None] = self._loop.create_future()
        self._answer: asyncio.Future[bytes] | None = None
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: Any) -> None:
        self._transport = transport
        self._ws.send_request(self._ws.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        self._ws.receive_data(data)
        for event in self._ws.events_received():
            if isinstance(event, Response):
                if self._ws.handshake_exc is not None:
                    self._fail(self._ws.handshake_exc)
                elif not self._opened.done():
                    self._opened.set_result(None)
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                answer, self._answer = self._answer, None
                if answer is not None and not answer.done():
                    answer.set_result(bytes(event.data))
        self._flush()  # pongs and the close handshake
        if self._ws.state is State.CLOSED:
            self._fail(ConnectionError("the server closed the connection"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("the connection was lost"))

    async def ask(self, text: str) -> bytes:
        """Send ``text``; the server's next text frame."""
        if self._ws.state is not State.OPEN:
            raise ConnectionError("the connection is not open")
        self._answer = self._loop.create_future()
        self._ws.send_text(text.encode())
        self._flush()
        return await self._answer

    def close(self) -> None:
        if self._ws.state is State.OPEN:
            self._ws.send_close()
            self._flush()
        if self._transport is not None:
            self._transport.close()

    def _flush(self) -> None:
        chunks = self._ws.data_to_send()
        if chunks and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(chunks))

    def _fail(self, exc: BaseException) -> None:
        for waiter in (self._opened, self._answer):
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)


async def connect(url: str, timeout: float) -> ProbeSocket:
    """An open :class:`ProbeSocket` to ``ws://host:port/path``, within ``timeout`` seconds."""
    uri = parse_uri(url)
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        _, socket = await loop.create_connection(lambda: ProbeSocket(url), uri.host, uri.port)
        try:
            await socket._opened
        except BaseException:
            socket.close()
            raise
    return socket

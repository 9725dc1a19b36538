"""A synchronous bridge to MCP servers, shared by every env in the process.

The official SDK is async. Gymnasium envs are sync, and several may run at once in threads, so:

- ONE background thread runs ONE asyncio loop for the whole process (:func:`_loop`);
- each server is an :class:`MCPServerConnection` that owns one long-lived task on that loop; the
  task enters the transport (``stdio_client`` or ``streamable_http_client``) and the
  ``ClientSession``, waits until asked to stop, then exits them (anyio requires the task that
  entered a context manager to exit it);
- sync callers submit coroutines with ``asyncio.run_coroutine_threadsafe(...).result(timeout)``;
  one session serves concurrent calls from many threads;
- :func:`get_connection` keeps one connection per server spec for the life of the process, so
  servers (about 1 s to start) stay up across episodes and envs. :func:`close_all` runs at exit
  and stops every connection's server, shared or not, waiting for each to be gone.

Nothing outlives its owner: a server that does not finish starting (or never answers
``initialize``) is stopped, and its process reaped, before the connect error is raised; a server
that lets a call time out and then does not answer a ping either is taken as wedged, stopped,
and started afresh by the next call. Stopping means stopped: :meth:`MCPServerConnection.close`
(and so ``MCPEnv.stop_servers()`` and :func:`close_all`, which runs at exit) returns once the
server's whole process group is gone, wedged servers being stopped in the background included:
after the SDK's own shutdown (stdin closed, a grace period, SIGTERM, SIGKILL) the group is
terminated, waited for and killed if anything of it is left. On Linux a stdio server also dies,
with its children, when the process that started it is killed (:mod:`tool_envs.mcp.process`).

Failures (all :class:`MCPCallError`, a ValueError, so the env's toolset shows the message to the
model as ``Error: ...``):

    MCPCallError
    ├── MCPTimeoutError     the call took longer than its timeout; the session stays usable
    ├── MCPConnectionError  the server could not be started, or died (transient: the NEXT call
    │                       starts a fresh server)
    ├── MCPToolError        the tool answered with ``is_error=True``
    └── MCPProtocolError    the server rejected the request (unknown tool, bad params, ...)
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from tool_envs.errors import MCPCallError as MCPCallError
from tool_envs.errors import MCPConnectionError as MCPConnectionError
from tool_envs.errors import MCPProtocolError as MCPProtocolError
from tool_envs.errors import MCPTimeoutError as MCPTimeoutError
from tool_envs.errors import MCPToolError as MCPToolError
from tool_envs.mcp.config import HttpServerSpec, ServerSpec, spec_key
from tool_envs.mcp.process import Launch, ProcessGroup, supervised

_CONNECTION_LOST = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    EOFError,
)


# --------------------------------------------------------------------------- the loop thread

_loop_lock = threading.Lock()
_loop_state: dict[str, Any] = {"loop": None, "thread": None}


def _loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop, started on first use in a daemon thread."""
    with _loop_lock:
        loop, thread = _loop_state["loop"], _loop_state["thread"]
        if loop is None or thread is None or not thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="tool-envs-mcp", daemon=True)
            thread.start()
            _loop_state.update(loop=loop, thread=thread)
        return loop


def _submit(coro: Any) -> concurrent.futures.Future[Any]:
    return asyncio.run_coroutine_threadsafe(coro, _loop())


# --------------------------------------------------------------------------- one server


# How long a server gets to stop (stdin closed, 2 s grace, then a kill: the SDK's own sequence).
_STOP_TIMEOUT_S = 10.0
# How long a server that let a call time out gets to answer a ping before it counts as wedged
# (at most; a shorter call timeout makes it shorter, at least 1 s).
_PING_TIMEOUT_S = 5.0


@dataclass
class _Live:
    """One running session: the task that owns it, how to stop it and when it is gone."""

    generation: int
    session: ClientSession
    stop: asyncio.Event
    task: concurrent.futures.Future[Any]
    finished: threading.Event
    errlog: IO[str] | None = None
    group: ProcessGroup | None = None  # a stdio server's process group (Linux)
    dead: bool = False
    started_at: float = field(default_factory=time.monotonic)


class MCPServerConnection:
    """A long-lived client session to one MCP server, usable from any thread.

    The server starts on first use (:meth:`list_tools` or :meth:`call_tool`). If it dies, the call
    that noticed fails with :class:`MCPConnectionError` and the next call starts a fresh one.
    :meth:`restart` forces a fresh server (fresh state); :meth:`close` stops it (a later call
    starts it again). ``starts`` counts the sessions started so far.
    """

    def __init__(self, name: str, spec: ServerSpec, *, connect_timeout_s: float = 60.0):
        self.name = name
        self.spec = spec
        self.connect_timeout_s = connect_timeout_s
        self.starts = 0
        self._lock = threading.Lock()
        self._live: _Live | None = None
        # Sessions marked dead whose servers may still be stopping: close() waits for them too.
        self._stopping: list[_Live] = []
        self._stopping_lock = threading.Lock()
        self._tools: list[mcp_types.Tool] | None = None
        _every_connection.add(self)

    def __repr__(self) -> str:
        state = "up" if self._live is not None and not self._live.dead else "down"
        return f"MCPServerConnection({self.name!r}, {self.spec.transport}, {state})"

    # ----------------------------------------------------------------------- public API

    def list_tools(
        self, *, refresh: bool = False, connect_timeout_s: float | None = None
    ) -> list[mcp_types.Tool]:
        """The server's tools (all pages), listed once and cached for later calls.

        ``connect_timeout_s`` bounds starting the server and each listing request (default: the
        connection's own ``connect_timeout_s``).
        """
        if self._tools is None or refresh:
            timeout = connect_timeout_s or self.connect_timeout_s
            live = self._ensure(timeout)
            tools: list[mcp_types.Tool] = []
            cursor: str | None = None
            while True:
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                result = self._run(live, live.session.list_tools(params=params), timeout, "list")
                tools.extend(result.tools)
                cursor = result.next_cursor
                if not cursor:
                    break
            self._tools = tools
        return list(self._tools)

    def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        timeout: float | None = 30.0,
        *,
        connect_timeout_s: float | None = None,
    ) -> mcp_types.CallToolResult:
        """Call ``tool`` and return its result; raises :class:`MCPCallError` on failure.

        ``is_error`` results are returned, not raised (see :func:`result_text`); ``timeout`` is
        in seconds (None: wait as long as it takes); ``connect_timeout_s`` bounds starting the
        server first if it is down (default: the connection's own).
        """
        live = self._ensure(connect_timeout_s or self.connect_timeout_s)
        # The deadline is kept here (the future's wait, then a cancel, which leaves the session
        # usable) rather than passed to the SDK, whose per-request timeout costs ~0.2 ms a call.
        coro = live.session.call_tool(tool, arguments or {})
        return self._run(live, coro, timeout, tool)

    def restart(self) -> None:
        """Stop the running server (if any) and wait until it is gone, together with any server
        still stopping after a crash or a wedge; the next call starts a fresh one."""
        lives = self._take_lives()
        for live in lives:
            self._request_stop(live)
        for live in lives:
            self._await_stop(live)

    def close(self) -> None:
        """Stop the server and release its process or HTTP session (see :meth:`restart`)."""
        self.restart()

    @property
    def alive(self) -> bool:
        """A session is up (as far as we know: a crash is noticed on the next request)."""
        live = self._live
        return live is not None and not live.dead

    # ----------------------------------------------------------------------- internals

    def _run(self, live: _Live, coro: Any, timeout: float | None, what: str) -> Any:
        future = _submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            message = self._timeout_message(what, timeout)
            if not self._answers_ping(live, min(_PING_TIMEOUT_S, max(1.0, timeout or 0.0))):
                self._mark_dead(live)
                message += "; it did not answer a ping either, so it is restarted on the next call"
            raise MCPTimeoutError(message) from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise MCPTimeoutError(self._timeout_message(what, timeout)) from None
            if exc.code == CONNECTION_CLOSED:
                self._mark_dead(live)
                raise MCPConnectionError(self._died_message(live, what)) from None
            raise MCPProtocolError(f"server '{self.name}' rejected {what!r}: {exc}") from None
        except _CONNECTION_LOST:
            self._mark_dead(live)
            raise MCPConnectionError(self._died_message(live, what)) from None

    def _answers_ping(self, live: _Live, timeout: float) -> bool:
        """Whether a server that let a request time out still answers (a busy tool) or not (a
        wedged server, which would make every later call time out too)."""
        if live.dead:
            return False
        future = _submit(live.session.send_ping())
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return False
        except BaseException:
            return False
        return True

    def _timeout_message(self, what: str, timeout: float | None) -> str:
        return f"server '{self.name}' did not answer {what!r} within {timeout:g} s (timed out)"

    def _died_message(self, live: _Live, what: str) -> str:
        return (
            f"server '{self.name}' closed the connection during {what!r} (the server stopped or "
            "crashed); it is restarted on the next call"
        )

    def _mark_dead(self, live: _Live) -> None:
        """Stop a session in the background; :meth:`close` waits for what is left of it.

        The server crashed or is wedged (it answers no ping, so it would not read its stdin
        closing either): its group is sent SIGTERM at once rather than after the SDK's grace
        period, and the SDK's shutdown then escalates to SIGKILL if it has to.
        """
        with self._lock:
            live.dead = True
            if self._live is live:
                self._live = None
        with self._stopping_lock:
            self._stopping.append(live)
        if live.group is not None:
            live.group.signal(signal.SIGTERM)
        self._request_stop(live)
        live.task.add_done_callback(lambda _: self._stopped_in_background(live))

    def _stopped_in_background(self, live: _Live) -> None:
        _close_quietly(live.errlog)
        if live.group is None or not live.group.members():
            with self._stopping_lock, contextlib.suppress(ValueError):
                self._stopping.remove(live)

    def _take_lives(self) -> list[_Live]:
        with self._lock:
            live, self._live = self._live, None
        with self._stopping_lock:
            stopping, self._stopping = self._stopping, []
        return [each for each in (live, *stopping) if each is not None]

    def _ensure(self, connect_timeout_s: float) -> _Live:
        live = self._live
        if live is not None and not live.dead:
            return live
        with self._lock:
            if self._live is None or self._live.dead:
                self._live = self._start(connect_timeout_s)
            return self._live

    def _start(self, connect_timeout_s: float) -> _Live:
        """Start a session (caller holds the lock); raises MCPConnectionError on failure.

        A server that does not finish starting in time is stopped before the error is raised,
        and waited for: cancelling its task only asks for the stop, and a process that exits
        right after the error would otherwise leave the server running, orphaned.
        """
        self.starts += 1
        ready: concurrent.futures.Future[tuple[ClientSession, asyncio.Event]] = (
            concurrent.futures.Future()
        )
        finished = threading.Event()
        errlog, launch = None, None
        if not isinstance(self.spec, HttpServerSpec):
            try:
                launch = supervised(self.spec.command, list(self.spec.args), self.spec.env)
            except OSError as exc:
                raise MCPConnectionError(self._cannot_start(exc, None)) from None
            errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        task = _submit(self._serve(ready, errlog, finished, launch))
        try:
            session, stop = ready.result(connect_timeout_s)
        except concurrent.futures.TimeoutError:
            task.cancel()
            finished.wait(_STOP_TIMEOUT_S)
            _stop_launched(launch)
            message = (
                f"server '{self.name}' did not finish starting within {connect_timeout_s:g} s "
                f"(it was stopped){_with_output(errlog)}"
            )
            _close_quietly(errlog)
            raise MCPConnectionError(message) from None
        except BaseException as exc:
            finished.wait(_STOP_TIMEOUT_S)
            _stop_launched(launch)
            message = self._cannot_start(exc, errlog)
            _close_quietly(errlog)
            raise MCPConnectionError(message) from None
        group = launch.group() if launch is not None else None
        if launch is not None:
            launch.discard()
        return _Live(self.starts, session, stop, task, finished, errlog, group)

    def _cannot_start(self, exc: BaseException, errlog: IO[str] | None) -> str:
        return (
            f"cannot start MCP server '{self.name}' ({_describe_spec(self.spec)}): "
            f"{_leaf_message(exc)}{_with_output(errlog)}"
        )

    async def _serve(
        self,
        ready: concurrent.futures.Future[tuple[ClientSession, asyncio.Event]],
        errlog: IO[str] | None,
        finished: threading.Event,
        launch: Launch | None,
    ) -> None:
        """The session's own task: enter the transport and session, wait, exit them."""
        try:
            await self._session_until_stopped(ready, errlog, launch)
        finally:
            finished.set()

    async def _session_until_stopped(
        self,
        ready: concurrent.futures.Future[tuple[ClientSession, asyncio.Event]],
        errlog: IO[str] | None,
        launch: Launch | None,
    ) -> None:
        stop = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                if isinstance(self.spec, HttpServerSpec):
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client

                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            headers=dict(self.spec.headers),
                            timeout=httpx2.Timeout(30.0, read=300.0),
                        )
                    )
                    streams = await stack.enter_async_context(
                        streamable_http_client(self.spec.url, http_client=http)
                    )
                else:
                    parameters = StdioServerParameters(
                        command=launch.command if launch else self.spec.command,
                        args=launch.args if launch else list(self.spec.args),
                        env=self.spec.env,
                        cwd=self.spec.cwd,
                    )
                    streams = await stack.enter_async_context(stdio_client(parameters, errlog))
                read, write = streams[0], streams[1]
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                ready.set_result((session, stop))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            # After start-up, errors while exiting a dead session's transport are expected.

    @staticmethod
    def _request_stop(live: _Live) -> None:
        """Ask the session's task to exit its session and transport (the SDK's shutdown)."""
        with contextlib.suppress(RuntimeError):  # loop already closed at interpreter exit
            _loop().call_soon_threadsafe(live.stop.set)

    @staticmethod
    def _await_stop(live: _Live) -> None:
        """Wait for the task to finish, then make sure nothing of the server's group is left:
        terminate, wait, kill (a server the SDK could not stop, or one stopping too slowly)."""
        if threading.current_thread() is not _loop_state["thread"]:
            try:
                live.task.result(timeout=_STOP_TIMEOUT_S)
            except concurrent.futures.TimeoutError:
                live.task.cancel()
                live.finished.wait(_STOP_TIMEOUT_S)
            except BaseException:
                pass
            if live.group is not None:
                live.group.stop()
        _close_quietly(live.errlog)


# --------------------------------------------------------------------------- results


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text the model sees: text blocks joined; other blocks described; structured content
    as JSON when there is no text."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            parts.append(f"[image: {block.mime_type}]")
        elif isinstance(block, mcp_types.AudioContent):
            parts.append(f"[audio: {block.mime_type}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource: {resource.uri}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


# --------------------------------------------------------------------------- process registry

_registry_lock = threading.Lock()
_registry: dict[str, MCPServerConnection] = {}
# Every connection, shared or private (an env's fresh_state servers), so exit stops them all. A
# running session's task refers to its connection, so a live server keeps its entry here.
_every_connection: weakref.WeakSet[MCPServerConnection] = weakref.WeakSet()


def get_connection(name: str, spec: ServerSpec) -> MCPServerConnection:
    """The process-wide connection for ``spec`` (one server process per distinct spec).

    Envs and episodes that configure the same server share its process; ``name`` only labels
    messages (the first name a spec was seen under).
    """
    key = spec_key(spec)
    with _registry_lock:
        connection = _registry.get(key)
        if connection is None:
            connection = _registry[key] = MCPServerConnection(name, spec)
        return connection


_shared_dir: dict[str, str] = {}


def shared_state_dir() -> str:
    """The process's folder for ``{episode_dir}`` in shared servers' configs (made on first use,
    deleted at exit after the servers are stopped)."""
    with _registry_lock:
        if "path" not in _shared_dir:
            _shared_dir["path"] = tempfile.mkdtemp(prefix="tool-envs-mcp-shared-")
        return _shared_dir["path"]


def close_all() -> None:
    """Stop every server this process started, shared or not, and wait until all are gone
    (runs at interpreter exit). All are asked to stop first, so their grace periods overlap."""
    with _registry_lock:
        connections = {id(c): c for c in [*_registry.values(), *list(_every_connection)]}
        _registry.clear()
    lives = [live for connection in connections.values() for live in connection._take_lives()]
    for live in lives:
        MCPServerConnection._request_stop(live)
    for live in lives:
        with contextlib.suppress(Exception):
            MCPServerConnection._await_stop(live)
    folder = _shared_dir.pop("path", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _forget_after_fork() -> None:
    """A forked child has neither the loop thread nor the sessions: start from scratch."""
    _registry.clear()
    _every_connection.clear()
    _shared_dir.clear()  # the parent's folder: the parent deletes it
    _loop_state.update(loop=None, thread=None)
    global _loop_lock, _registry_lock
    _loop_lock = threading.Lock()
    _registry_lock = threading.Lock()


atexit.register(close_all)
os.register_at_fork(after_in_child=_forget_after_fork)


# --------------------------------------------------------------------------- helpers


def _leaf_message(exc: BaseException) -> str:
    """Start-up errors arrive wrapped in (nested) ExceptionGroups; find the first real one."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup (a backport on Python 3.10)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        text = "the server closed the connection before initialising (did it crash?)"
    return text if isinstance(exc, (OSError, MCPError)) else f"{type(exc).__name__}: {text}"


def _tail(errlog: IO[str] | None, chars: int = 400) -> str:
    """The end of a server's stderr, read without moving the offset the server writes at."""
    if errlog is None or errlog.closed:
        return ""
    try:
        fd = errlog.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, 4 * chars, max(0, size - 4 * chars))
    except (OSError, ValueError):
        return ""
    return " ".join(data.decode("utf-8", "replace").split())[-chars:]


def _with_output(errlog: IO[str] | None) -> str:
    tail = _tail(errlog)
    return f"; its output: {tail}" if tail else ""


def _stop_launched(launch: Launch | None) -> None:
    """After a failed start: stop what the supervisor started, if anything is left of it."""
    if launch is not None:
        group = launch.group()
        if group is not None:
            group.stop()
        launch.discard()


def _close_quietly(errlog: IO[str] | None) -> None:
    if errlog is not None:
        with contextlib.suppress(Exception):
            errlog.close()


def _describe_spec(spec: ServerSpec) -> str:
    if isinstance(spec, HttpServerSpec):
        return f"url {spec.url}"
    return "command " + " ".join([spec.command, *spec.args])

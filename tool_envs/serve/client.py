"""A served env as a ``gymnasium.Env`` like any other: :class:`RemoteEnv`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import os
import random
import threading
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import gymnasium as gym
from gymnasium.error import InvalidAction, ResetNeeded

from tool_envs.core.chat_env import StepResult, env_keys, void_step
from tool_envs.core.messages import Message, copy_json
from tool_envs.core.outcome import void_info
from tool_envs.core.spaces import AssistantTurn, ChatMessages
from tool_envs.errors import (
    EnvConfigError,
    MissingDependencyError,
    RemoteEnvError,
    TaskRowError,
)
from tool_envs.serve import protocol
from tool_envs.serve.pool import EnvServerPool, as_pool, websocket_url

TOKEN_VARIABLE = "TOOL_ENVS_SERVE_TOKEN"
T = TypeVar("T")

# Errors a server-side env raised that mean the same here: the caller's mistake.
_LOCAL_ERRORS: dict[str, type[Exception]] = {
    "TaskRowError": TaskRowError,
    "EnvConfigError": EnvConfigError,
    "ResetNeeded": ResetNeeded,
    "InvalidAction": InvalidAction,
}


class _ServerGone(Exception):
    """The session's connection broke or the server did not answer in time."""


class _ServerFull(Exception):
    """The server answered CAPACITY_REACHED."""

    def __init__(self, url: str | None, active: Any, limit: Any):
        self.url, self.active, self.limit = url, active, limit
        super().__init__(f"full, {active}/{limit} sessions (--max-sessions {limit})")


class RemoteEnv(gym.Env[list[Message], Any]):
    """An env that runs on ``tool-envs serve`` servers (or any OpenEnv server of a tool_envs env).

    ``reset``, ``step``, ``messages``, ``tools`` and every ``info`` key behave as the env's own
    (see :class:`~tool_envs.core.ToolEnv`): the engines, ``gymnasium.utils`` and user code use it
    unchanged. One session (one server-side env) is held from the first ``reset`` to ``close``
    and reused across episodes; a reset after the session broke opens a new one on the least
    loaded live server. The connections of every RemoteEnv of a process share one event-loop
    thread (:class:`_SessionLoop`): a session costs no thread of its own.

    **Faults.** A server that is down or hangs mid-episode never raises out of ``step``: the turn
    ends the episode ``truncated`` and void, ``reward_info["void_cause"] == "env_server"``, like
    any infrastructure failure (:mod:`tool_envs.core.outcome`). ``reset`` tries each live server
    once and raises :class:`~tool_envs.errors.EnvServerUnavailableError`, naming the URLs,
    when none can take the session. A server that answers the handshake ``503`` (busy: at its
    open-file limit, or ``--max-handshakes`` connections still handshaking) is alive: the
    session goes to another server, and the busy ones are asked again, with backoff, for up to
    ``busy_timeout`` seconds; a busy server is never marked dead, so its held sessions' episodes
    are never voided for it. Caller mistakes raise what the env raises in-process
    (``TaskRowError``, ``EnvConfigError``, ``ResetNeeded``, ``InvalidAction``).

    Args:
        servers: A server URL, several (episodes go to the least loaded), or a shared
            :class:`~tool_envs.serve.pool.EnvServerPool`.
        token: Bearer token; default ``$TOOL_ENVS_SERVE_TOKEN``.
        timeout: Seconds to wait for a step's answer before the server counts as hung (the
            episode is void); the engines pass their ``step_timeout``.
        reset_timeout: The same for a reset, which may start servers or sandboxes (an
            in-process reset is not timed at all).
        connect_timeout: Seconds for the WebSocket handshake before a server counts as dead.
        busy_timeout: Seconds ``reset`` keeps asking servers that answered ``503`` (busy) before
            it gives up; 0 gives up after one round.
        max_message_bytes: Largest answer accepted.
        max_turns: Steps after which an episode ends ``truncated`` here, as gymnasium's
            ``TimeLimit`` ends it (the engines pass their ``max_turns``); None: the served env's
            own limit only.

    ``reset_future`` and ``step_future`` start a reset or a step and return a
    ``concurrent.futures.Future`` of its result, for callers on an event loop (the async engine
    awaits them with ``asyncio.wrap_future``): a step that waits on the server then holds no
    thread at all.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        servers: str | Sequence[str] | EnvServerPool,
        *,
        token: str | None = None,
        timeout: float | None = 600.0,
        reset_timeout: float | None = 600.0,
        connect_timeout: float = 10.0,
        busy_timeout: float = 30.0,
        max_message_bytes: int = 64 * 2**20,
        max_turns: int | None = None,
    ):
        try:
            from websockets.asyncio.client import connect
        except ImportError as exc:
            raise MissingDependencyError("websockets", "serve", "RemoteEnv") from exc
        self._connect_function = connect
        self.pool = as_pool(servers)
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE)
        self.timeout = timeout
        self.reset_timeout = reset_timeout
        self.connect_timeout = connect_timeout
        self.busy_timeout = busy_timeout
        self.max_message_bytes = max_message_bytes
        self.max_turns = max_turns
        self.observation_space = ChatMessages()
        self.action_space = AssistantTurn()
        self.url: str | None = None  # the server of the current session
        self._ws: Any = None
        self._messages: list[Message] = []
        self._tools: list[dict[str, Any]] = []
        self._last_info: dict[str, Any] = {}
        self._needs_reset = True
        self._turns = 0  # steps since the last reset

    # ------------------------------------------------------------------ the env API

    @property
    def messages(self) -> list[Message]:
        """The whole conversation so far (a copy)."""
        return copy_json(self._messages)

    @property
    def message_count(self) -> int:
        """How many messages the conversation has (cheaper than ``len(env.messages)``)."""
        return len(self._messages)

    def messages_since(self, start: int) -> list[Message]:
        """Copies of the messages from index ``start`` on (what a step added)."""
        return copy_json(self._messages[start:])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return copy_json(self._tools)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        return self.reset_future(seed=seed, options=options).result()

    def reset_future(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> concurrent.futures.Future[tuple[list[Message], dict[str, Any]]]:
        """:meth:`reset` without waiting for it: the reset runs on the connections' loop and the
        future holds its result (or its error). An event loop awaits it with
        ``asyncio.wrap_future`` and no thread waits on the network."""
        super().reset(seed=seed)
        self._needs_reset = True
        data: dict[str, Any] = {"seed": seed}
        if options is not None:
            data["options"] = options
        return asyncio.run_coroutine_threadsafe(self._reset(data), _SessionLoop.get())

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        return self.step_future(action).result()

    def step_future(self, action: Any) -> concurrent.futures.Future[StepResult]:
        """:meth:`step` without waiting for it (see :meth:`reset_future`); a step before reset
        or an action of the wrong type raises here, as :meth:`step` does."""
        if self._needs_reset:
            raise ResetNeeded(
                "step() was called before reset() or after the episode ended; call reset() first"
            )
        if isinstance(action, str):
            data: dict[str, Any] = {"text": action}
        elif isinstance(action, dict):
            data = {"message": action}
        else:
            raise InvalidAction(
                f"an action is the assistant's text (str) or message (dict), got "
                f"{type(action).__name__}"
            )
        return asyncio.run_coroutine_threadsafe(self._step(data), _SessionLoop.get())

    async def _reset(self, data: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        """The reset, on the connections' loop: a session on a live server, then its answer."""
        failures: dict[str, str] = {}
        full: set[str] = set()
        tried: set[str] = set()
        busy: set[str] = set()  # answered 503 this round: alive, asked again after a pause
        waits = 0
        give_up = time.monotonic() + self.busy_timeout
        while True:
            if self._ws is None and not await self._open_session(tried, failures, busy):
                pause = min(1.0, 0.05 * 2**waits) * random.uniform(0.5, 1.0)  # spread a herd
                if not busy or time.monotonic() + pause > give_up:
                    raise self.pool.unavailable(failures, full | busy)
                await asyncio.sleep(pause)
                waits += 1
                tried -= busy
                busy.clear()
                continue
            url = self.url
            try:
                answer = await self._exchange({"type": "reset", "data": data}, self.reset_timeout)
                break
            except _ServerFull as exc:
                failures[url or "?"] = str(exc)
                full.add(url or "?")
                self._drop_session()
            except _ServerGone as exc:
                failures[url or "?"] = str(exc)
                self._drop_session()
        observation = answer["observation"]
        self._messages = copy_json(observation["messages"])
        self._tools = observation["tools"] or []
        self._last_info = observation["info"]
        self._turns = 0
        self._needs_reset = False
        return observation["messages"], observation["info"]

    async def _step(self, data: dict[str, Any]) -> StepResult:
        """The step, on the connections' loop."""
        try:
            answer = await self._exchange({"type": "step", "data": data}, self.timeout)
        except (_ServerGone, _ServerFull) as exc:
            return self._void_turn(str(exc))
        observation = answer["observation"]
        if observation.get("assistant_message") is not None:
            self._messages.append(observation["assistant_message"])
        self._messages.extend(copy_json(observation["messages"]))
        terminated, truncated = bool(observation["terminated"]), bool(observation["truncated"])
        self._turns += 1
        if self.max_turns is not None and self._turns >= self.max_turns:
            truncated = True  # as gymnasium's TimeLimit would
        if terminated or truncated:
            self._needs_reset = True
        reward = float(answer.get("reward") or 0.0)
        self._last_info = observation["info"]
        return observation["messages"], reward, terminated, truncated, observation["info"]

    def own_task_splits(self) -> dict[str, list[Mapping[str, Any]]]:
        """The served env's own task splits, as ``env.unwrapped.own_task_splits()`` gives them
        in-process (each row naming the id the server made its env as): read from the server's
        task routes (``GET /<Name-vN>/splits``, then ``POST /<Name-vN>/tasks`` per split), so
        ``--tasks`` and ``tool-envs eval`` read a served env's tasks as a local one's. Asked of
        the session's server, else a live one.

        Raises:
            RemoteEnvError: the server has no task splits (501) or is not a server of this kind.
            EnvServerUnavailableError: no server answered.
        """
        name = str(self._ask("/metadata")["name"]).rsplit("/", 1)[-1]
        entries = self._ask(f"/{name}/splits")
        return {
            entry["name"]: self._ask(f"/{name}/tasks", {"split": entry["name"]})["tasks"]
            for entry in entries
        }

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """The served env's gold turns for ``task`` (``POST /<Name-vN>/gold_turns``), as
        ``env.unwrapped.gold_turns`` gives them in-process: the gold agent and gold exports play
        served envs as they play local ones. Asked of the session's server, else a live one.

        Raises:
            TaskRowError: the server refused the row.
            RemoteEnvError: the server cannot give gold turns (an OpenEnv server of another kind).
            EnvServerUnavailableError: no server answered.
        """
        from tool_envs.registration import registered_id

        name = registered_id(str(task.get("env_id", ""))).rsplit("/", 1)[-1]
        return self._ask(f"/{name}/gold_turns", {"task": dict(task)})["gold_turns"]

    def _ask(self, route: str, body: Mapping[str, Any] | None = None) -> Any:
        """The JSON answer of one HTTP route (GET without ``body``, POST with it) of the
        session's server, else of the least loaded live one; a server that cannot be reached is
        marked dead and the next one asked."""
        data = None if body is None else protocol.dumps(dict(body)).encode()
        failures: dict[str, str] = {}
        tried: set[str] = set()
        while True:
            url = self.url if self.url is not None and self.url not in tried else None
            if url is None:
                url = self.pool.acquire(skip=tried)
                if url is None:
                    raise self.pool.unavailable(failures)
                self.pool.release(url)  # a request, not a session
            tried.add(url)
            try:
                return self._http(f"{url}{route}", data)
            except OSError as exc:  # URLError, timeouts: this server cannot answer
                failures[url] = f"cannot connect ({exc})"
                self.pool.mark_dead(url, failures[url])

    def _http(self, url: str, body: bytes | None) -> Any:
        """One JSON request to an HTTP route of the server; 4xx answers raise what they mean."""
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        method = "GET" if body is None else "POST"
        request = urllib.request.Request(url, data=body, headers=headers, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # direct
        try:
            with opener.open(request, timeout=self.reset_timeout) as answer:
                return protocol.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = str(protocol.loads(exc.read()).get("detail"))
            except (ValueError, AttributeError):
                detail = exc.reason
            if exc.code == 400:
                raise TaskRowError(f"{url}: {detail}") from None
            if exc.code in (401, 403):
                raise RemoteEnvError(
                    f"{url} refused the bearer token", code=str(exc.code)
                ) from None
            raise RemoteEnvError(
                f"{method} {url} answered {exc.code} ({detail}); task splits and gold turns need "
                "a `tool-envs serve` server of this env",
                code=str(exc.code),
            ) from None

    def state(self) -> dict[str, Any]:
        """The server's view of the session (OpenEnv's ``state``): episode id, step count,
        the whole conversation and the tools."""
        if self._ws is None:
            raise ResetNeeded("no session is open; call reset() first")
        try:
            return _on_loop(self._exchange({"type": "state"}, self.timeout), None)
        except (_ServerGone, _ServerFull) as exc:
            self._drop_session()
            raise RemoteEnvError(str(exc), code="SESSION_ERROR") from exc

    def close(self) -> None:
        """Close the session: its env on the server is released at once."""
        ws = self._ws
        # On the connections' own loop (a callback of a step that outlived its time) nothing
        # waits: closing the connection below releases the server's env as well.
        if ws is not None and not _SessionLoop.running_here():
            # Already broken: the server released the env when the connection broke.
            with contextlib.suppress(Exception):
                _on_loop(ws.send(protocol.dumps({"type": "close"})), self.connect_timeout)
        self._drop_session()
        self._needs_reset = True

    # ------------------------------------------------------------------ the session

    async def _open_session(
        self, tried: set[str], failures: dict[str, str], busy: set[str]
    ) -> bool:
        """Connect to the least loaded live server not tried yet; False when none is left. A
        server that answers 503 is added to ``busy`` (not marked dead), one that refuses the
        token is skipped, any other failure marks it dead."""
        from websockets.exceptions import InvalidStatus

        while True:
            url = self.pool.acquire(skip=tried)
            if url is None:
                return False
            tried.add(url)
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
            try:
                self._ws = await self._connect_function(
                    websocket_url(url),
                    open_timeout=self.connect_timeout,
                    close_timeout=1.0,
                    max_size=self.max_message_bytes,
                    compression=None,
                    proxy=None,
                    additional_headers=headers,
                )  # open_timeout bounds it
            except Exception as exc:
                self.pool.release(url)
                status = exc.response.status_code if isinstance(exc, InvalidStatus) else None
                if status == 503:
                    body = exc.response.body or b""  # type: ignore[union-attr]
                    said = body.decode("utf-8", "replace").strip() or "no reason given"
                    failures[url] = f"busy for {self.busy_timeout:g} s (503: {said})"
                    busy.add(url)
                elif status in (401, 403):
                    failures[url] = f"refused the bearer token ({exc})"
                else:
                    why = f"cannot connect ({type(exc).__name__}: {exc})"
                    failures[url] = why
                    self.pool.mark_dead(url, why)
                continue
            self.url = url
            return True

    async def _exchange(self, message: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Send one frame and read its answer's ``data`` (on the connections' loop); error
        frames raise."""
        from websockets.exceptions import WebSocketException

        ws = self._ws

        async def exchange() -> Any:
            # A refused session (full server) gets an error frame, then the server closes: if
            # the close beat this send, the frame is still there to read.
            with contextlib.suppress(WebSocketException):
                await ws.send(protocol.dumps(message))
            return await asyncio.wait_for(ws.recv(), timeout)

        try:
            raw = await exchange()  # wait_for bounds it
        except (TimeoutError, asyncio.TimeoutError) as exc:
            url = self.url
            self._drop_session()
            what = message["type"]
            raise _ServerGone(f"{url} did not answer a {what} within {timeout} s") from exc
        except (WebSocketException, OSError) as exc:
            url = self.url
            self._drop_session()
            raise _ServerGone(f"{url} dropped the session ({type(exc).__name__}: {exc})") from exc
        reply = protocol.loads(raw)
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            code = str(error.get("code"))
            text = str(error.get("message"))
            if code == protocol.CAPACITY_REACHED:
                raise _ServerFull(self.url, error.get("active_sessions"), error.get("max_sessions"))
            if code == protocol.FACTORY_ERROR:
                raise RemoteEnvError(f"{self.url}: {text}", code=code)
            if error.get("exception") == "TaskRowError" and error.get("field") == "env_id":
                raise self._other_env(message, str(error.get("env_id")))
            local = _LOCAL_ERRORS.get(str(error.get("exception")))
            if local is not None:
                detail = text.split(": ", 1)[-1] if text.startswith(error["exception"]) else text
                raise local(detail)
            raise RemoteEnvError(
                f"{self.url} answered {code}: {text}", code=code, exception=error.get("exception")
            )
        return reply["data"]

    def _other_env(self, message: dict[str, Any], served: str) -> TaskRowError:
        """The error for a row of another env than the one this server serves."""
        options = (message.get("data") or {}).get("options") or {}
        row = options.get("task") if isinstance(options, dict) else None
        wanted = row.get("env_id") if isinstance(row, dict) else None
        return TaskRowError(
            f"{self.url} serves '{served}', not the row's '{wanted}': give '{wanted}' the URL of "
            f"a `tool-envs serve {wanted}` server in env_servers",
            field="env_id",
        )

    def _drop_session(self) -> None:
        ws, url = self._ws, self.url
        self._ws, self.url = None, None
        if url is not None:
            self.pool.release(url)
        if ws is not None:
            # A hung peer would hold close() for close_timeout: not waited for here.
            asyncio.run_coroutine_threadsafe(_close_quietly(ws), _SessionLoop.get())

    def _void_turn(self, detail: str) -> StepResult:
        self._needs_reset = True
        # As an in-process void turn: rolled back, so turn, stats and the env's own keys (its
        # progress, say) are the last answer's.
        last = copy.deepcopy(self._last_info)
        return void_step(
            last.get("turn", 0),
            last.get("stats", {}),
            void_info("env_server", detail),
            extra=env_keys(last),
        )


async def _close_quietly(ws: Any) -> None:
    with contextlib.suppress(Exception):  # the peer is gone; nothing is left to release
        await ws.close()


class _SessionLoop:
    """The one event loop, on one daemon thread, that carries the WebSocket connections of
    every :class:`RemoteEnv` of this process. A synchronous client holds a reader thread per
    connection: a trainer with 1,024 episodes in flight held 1,024 threads for them. Here
    ``reset`` and ``step`` hand their frame to this loop and wait for the answer, so
    connections cost no thread (the callers' own threads are the engines' bounded pools). A
    forked child starts its own loop."""

    _loop: asyncio.AbstractEventLoop | None = None
    _pid = 0
    _lock = threading.Lock()

    @classmethod
    def running_here(cls) -> bool:
        """Whether the caller runs on this loop's own thread (where waiting for it deadlocks)."""
        try:
            return asyncio.get_running_loop() is cls._loop
        except RuntimeError:
            return False

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="tool-envs-remote-envs", daemon=True
                ).start()
                cls._loop, cls._pid = loop, os.getpid()
            return cls._loop


def _on_loop(awaitable: Awaitable[T], timeout: float | None) -> T:
    """Await ``awaitable`` on the connections' loop and wait for its result (not from that
    loop's own thread)."""

    async def wait() -> T:
        return await awaitable

    return asyncio.run_coroutine_threadsafe(wait(), _SessionLoop.get()).result(timeout)

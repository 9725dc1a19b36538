"""``tool-envs serve``: any registered env behind OpenEnv's wire protocol (see :mod:`.protocol`).

One WebSocket connection on ``/ws`` is one session with its own env, made with
``gymnasium.make(env_id, **env_kwargs)`` when the connection opens and closed when it ends: a
``close`` frame, a disconnect, an idle timeout, or the server shutting down. An env whose steps
may wait (a sandbox, a simulated user's API, an MCP server: its ``steps_wait``) has its calls
run on the server's step threads (:mod:`.steps`: a thread per call in flight, at most
``step_threads``, none for an idle session), never on the event loop, so a slow step stalls no
other session and the loop keeps answering pings. An env whose steps never wait (Calculator, tau
domains with the scripted user) has them run on the event loop: threads buy pure-Python steps no
concurrency under the GIL, and the hand-off costs more than the step (see
``benchmarks/env_server.py``). ``inline_steps`` overrides what the env says.

What keeps a server standing:

* a warm start: before it listens, the server plays one short episode on its env through the
  sessions' code (:func:`prepare_served_env`), so no session's first reset or step builds or
  imports anything, and a cold server's first burst of sessions is served as a warm one;
* open files (:mod:`.limits`): the soft limit is raised to the hard one, and a connection that
  would leave fewer than a reserve of descriptors free is answered 503 at once (one log line),
  so the accept loop never meets ``EMFILE`` and held sessions never lack a file;
* ``max_sessions``: a full server answers a new connection with OpenEnv's ``CAPACITY_REACHED``
  error frame and closes it; the open sessions are untouched; with ``workers`` (:mod:`.workers`)
  it counts the sessions of every worker process;
* ``session_timeout``: a session that sends nothing for that long is closed and its env
  released (a client that vanished without closing its socket; WebSocket pings catch dead
  peers sooner);
* ``max_message_bytes``: a larger frame closes that connection with code 1009;
* every malformed, unknown or out-of-order frame gets an error frame and the session goes on;
  an exception in the env becomes an ``EXECUTION_ERROR`` naming the exception;
* a session holds only its own env: no frame names another session;
* binds 127.0.0.1 by default; another interface needs a bearer token (``token``), checked on
  every route but ``/health``; a token that does not match, whatever its bytes, is a 401
  (HTTP) or a 403 (the WebSocket handshake);
* ``handshake_timeout`` and ``max_handshakes``: a connection must send its first request head
  within ``handshake_timeout`` seconds, and at most ``max_handshakes`` may still be without it
  after a second (while that many wait, more are answered 503), so silent or half-sent
  connections hold nothing for long, before any token is checked, and a burst of clients is
  never refused for it (:mod:`.handshake`); every HTTP answer closes its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import gc
import hmac
import inspect
import ipaddress
import json
import logging
import signal
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from pydantic import ValidationError

from tool_envs.core.chat_env import ServableEnv, chat_env, servable_env
from tool_envs.errors import EnvConfigError, MissingDependencyError, TaskRowError, ToolEnvsError
from tool_envs.serve import protocol
from tool_envs.serve.handshake import HandshakeLimits, guarded_protocol, one_request_per_connection
from tool_envs.serve.limits import (
    OpenFiles,
    count_open_files,
    open_file_limit,
    raise_open_file_limit,
)
from tool_envs.serve.protocol import Action, Observation, ResetData
from tool_envs.serve.steps import StepThreads
from tool_envs.serve.workers import SharedSessions, run_workers

logger = logging.getLogger(__name__)

TOKEN_VARIABLE = "TOOL_ENVS_SERVE_TOKEN"
"""Environment variable with the bearer token (server and client), kept out of ``ps``."""


@dataclass(frozen=True)
class ServeConfig:
    """What ``tool-envs serve`` serves and how.

    Attributes:
        env_id: Registered env id, e.g. ``tool_envs/TauRetail-v0``.
        env_kwargs: ``gymnasium.make`` arguments of every session's env (e.g.
            ``{"user": "scripted"}``, ``{"max_episode_steps": 20}``). Clients cannot change them.
        host: Interface to bind; anything but a loopback address needs ``token``.
        port: TCP port; 0 picks a free one (the server prints its URL).
        max_sessions: Sessions (envs) at once; the next connection gets ``CAPACITY_REACHED``.
        session_timeout: Seconds a session may stay silent before it is closed.
        max_message_bytes: Largest frame accepted.
        token: Bearer token clients must send (``Authorization: Bearer <token>``).
        inline_steps: Run env calls on the event loop (True) or on the step threads (False).
            None, the default, asks the env (:attr:`~tool_envs.core.ToolEnv.steps_wait`): an env
            whose steps never wait (Calculator, tau with the scripted user) runs them inline,
            which costs less CPU a step; a step that waits (a sandbox run, an LLM user, an MCP
            call) would stall every session of the server, so those go to threads.
        step_threads: Threads the sessions' env calls run on, at most (when not inline): one
            per call in flight, none for an idle session; calls past it wait their turn, so
            raise it for envs whose steps wait long (an LLM user).
        workers: Processes serving behind the one port (``tool-envs serve`` only; see
            :mod:`.workers`); ``max_sessions`` and ``max_handshakes`` are the whole server's.
        handshake_timeout: Seconds a new connection may take to send its first request head
            (an HTTP request, or the WebSocket upgrade); slower ones are closed.
        max_handshakes: Slow connections (still without that head a second after they were
            accepted) held at once; while that many wait, the next gets a 503.
    """

    env_id: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0
    max_sessions: int = 64
    session_timeout: float = 600.0
    max_message_bytes: int = 16 * 2**20
    token: str | None = None
    inline_steps: bool | None = None
    step_threads: int = 128
    workers: int = 1
    handshake_timeout: float = 10.0
    max_handshakes: int = 256

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise EnvConfigError(f"--port must be 0-65535 (0: any free port), got {self.port}")
        if self.handshake_timeout <= 0:
            raise EnvConfigError(f"--handshake-timeout must be > 0 s, got {self.handshake_timeout}")
        if self.max_handshakes < 1:
            raise EnvConfigError(f"--max-handshakes must be >= 1, got {self.max_handshakes}")
        if self.token is not None and not _header_safe(self.token):
            raise EnvConfigError(
                "a bearer token is printable ASCII without spaces (it travels in an HTTP "
                "header); pick another --token / $" + TOKEN_VARIABLE
            )
        if self.workers < 1:
            raise EnvConfigError(
                f"--workers must be >= 1 (the command line takes 0: one per core), "
                f"got {self.workers}"
            )
        if self.step_threads < 1:
            raise EnvConfigError(f"--step-threads must be >= 1, got {self.step_threads}")
        if self.max_sessions < 1:
            raise EnvConfigError(f"--max-sessions must be >= 1, got {self.max_sessions}")
        if self.session_timeout <= 0:
            raise EnvConfigError(f"--session-timeout must be > 0 s, got {self.session_timeout}")
        if self.max_message_bytes < 1024:
            raise EnvConfigError(
                f"--max-message-bytes must be >= 1024, got {self.max_message_bytes}"
            )
        if not is_loopback(self.host) and not self.token:
            raise EnvConfigError(
                f"serving on {self.host!r} (not a loopback address) needs a bearer token: set "
                f"${TOKEN_VARIABLE} or pass --token, and give clients the same token"
            )
        import tool_envs
        from tool_envs.registration import resolve_env_id

        tool_envs.register_envs()
        resolve_env_id(self.env_id)  # imports a ``module:EnvId``'s module; names close ids


def _header_safe(token: str) -> bool:
    return bool(token) and all(33 <= ord(c) <= 126 for c in token)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _CapacityError(Exception):
    def __init__(self, active: int, limit: int):
        self.active, self.limit = active, limit
        super().__init__(
            f"Server at capacity: {active}/{limit} sessions active. Cannot accept new connections."
        )


class Session:
    """One client's env; its calls run on the server's step threads (``threads``), one at a
    time, or on the event loop (no threads given)."""

    def __init__(self, config: ServeConfig, threads: StepThreads | None = None):
        self.id = uuid.uuid4().hex
        self.config = config
        self.env: gym.Env | None = None
        self.episode_id: str | None = None
        self.steps = 0
        self._executor = threads
        self._running: Future[Any] | None = None  # the call on a step thread now, if any

    async def call(self, function: Any, *args: Any) -> Any:
        if self._executor is None:
            return function(*args)
        self._running = self._executor.submit(function, *args)
        return await asyncio.wrap_future(self._running)

    def make_env(self) -> None:
        # gymnasium's checker looks at each new env's first reset and step; the server's
        # warm-up episode was checked (prepare_served_env), and every session's env is the same.
        kwargs = {"disable_env_checker": True, **self.config.env_kwargs}
        self.env = gym.make(self.config.env_id, **kwargs)
        try:
            chat_env(self.env)  # a TypeError naming what it lacks: the session's factory error
        except TypeError:
            self.env.close()
            self.env = None
            raise

    def reset(self, data: ResetData) -> dict[str, Any]:
        env = self._env()
        observation, info = env.reset(seed=data.seed, options=data.options)
        self.episode_id = data.episode_id or uuid.uuid4().hex
        self.steps = 0
        return protocol.result(
            protocol.observation(observation, tools=chat_env(env).tools, info=info), None, False
        )

    def step(self, action: Action) -> dict[str, Any]:
        env = self._env()
        unwrapped = chat_env(env)
        before = unwrapped.message_count
        observation, reward, terminated, truncated, info = env.step(action.value)
        self.steps += 1
        recorded = unwrapped.messages_since(before)
        # The env's conversation grew by [assistant message, *observation], or not at all
        # (a void turn is rolled back).
        assistant = recorded[0] if len(recorded) > len(observation) else None
        return protocol.result(
            protocol.observation(
                observation,
                assistant_message=assistant,
                terminated=bool(terminated),
                truncated=bool(truncated),
                info=info,
            ),
            float(reward),
            bool(terminated or truncated),
        )

    def state(self) -> dict[str, Any]:
        unwrapped = chat_env(self._env())
        return protocol.State(
            episode_id=self.episode_id,
            step_count=self.steps,
            env_id=self.config.env_id,
            messages=unwrapped.messages,
            tools=unwrapped.tools,
        ).model_dump()

    def close(self) -> None:
        """Close the env: on a step thread, after any call of this session still running (a
        client that left mid-step), so two calls never touch the env at once."""

        def close_env() -> None:
            if self.env is not None:
                try:
                    self.env.close()
                except Exception:  # a broken env is discarded either way
                    logger.exception("closing the env of session %s failed", self.id)
                self.env = None

        threads = self._executor
        if threads is None:
            close_env()
            return

        def submit_close(_: object = None) -> None:
            try:
                threads.submit(close_env)
            except RuntimeError:  # the server is stopping: close it here
                close_env()

        running = self._running
        if running is not None and not running.done():
            running.add_done_callback(submit_close)
        else:
            submit_close()

    def _env(self) -> gym.Env:
        if self.env is None:
            raise RuntimeError("the session's env is closed")
        return self.env


class SessionManager:
    """The open sessions of one server, bounded by ``max_sessions``, and the step threads their
    env calls run on (none when ``inline``: ``config.inline_steps``, which
    :func:`prepare_served_env` settles when it is None)."""

    def __init__(self, config: ServeConfig, shared: SharedSessions | None = None, worker: int = 0):
        self.config = config
        self.sessions: dict[str, Session] = {}
        self.opened = 0
        self.threads = StepThreads(config.step_threads)
        self.shared, self.worker = shared, worker  # the count of all the server's workers
        self._lock = threading.Lock()

    @property
    def inline(self) -> bool:
        return bool(self.config.inline_steps)

    @property
    def active(self) -> int:
        """Sessions open in the whole server (every worker process of it)."""
        return len(self.sessions) if self.shared is None else self.shared.total()

    async def open(self) -> Session:
        limit = self.config.max_sessions
        with self._lock:
            if self.shared is not None:
                total = self.shared.take(self.worker, limit)
                if total is not None:
                    raise _CapacityError(total, limit)
            elif len(self.sessions) >= limit:
                raise _CapacityError(len(self.sessions), limit)
            session = Session(self.config, None if self.inline else self.threads)
            self.sessions[session.id] = session  # the slot is taken while the env is made
            self.opened += 1
        try:
            await session.call(session.make_env)
        except BaseException:
            self.close(session)
            raise
        return session

    def close(self, session: Session) -> None:
        with self._lock:
            closed = self.sessions.pop(session.id, None)
        if closed is not None and self.shared is not None:
            self.shared.give_back(self.worker)
        session.close()

    def close_all(self) -> None:
        for session in list(self.sessions.values()):
            self.close(session)

    def shutdown(self, timeout: float = 30.0) -> None:
        """Close every session and wait (up to ``timeout`` s) until their envs are closed."""
        self.close_all()
        self.threads.shutdown(timeout)


_ACTIONS = {"reset", "step", "state"}

GC_THRESHOLDS = (20_000, 20, 20)
"""The collector's thresholds in a server (Python's are 700, 10, 10). Thousands of open sessions
are hundreds of thousands of live objects, and each frame allocates a few hundred: at Python's
pace a young collection ran every few frames and a full one every few seconds, and the full
ones stalled every session of the process (``benchmarks/env_scale.py``, 2,048 sessions on one
process: p99 266 ms with Python's thresholds, 43 ms with higher ones). A full collection still
runs every ~8 million allocations, so a closed session's cycles are freed within seconds."""


def _exception_data(exc: BaseException, env_id: str) -> dict[str, Any]:
    """What a client needs to raise the same error: its class, the row field it names (a
    ``TaskRowError``'s), and the env this server serves."""
    data: dict[str, Any] = {"exception": type(exc).__name__, "env_id": env_id}
    if isinstance(getattr(exc, "field", None), str):
        data["field"] = exc.field  # type: ignore[attr-defined]
    return data


async def handle_frame(session: Session, raw: str) -> tuple[str | None, bool]:
    """The reply to one client frame, and whether the session should end."""
    try:
        message = protocol.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, or a number past int's limit
        return protocol.error_frame(protocol.INVALID_JSON, f"Invalid JSON: {exc}"), False
    if not isinstance(message, dict):
        return protocol.error_frame(
            protocol.VALIDATION_ERROR, f"a frame is a JSON object, got {type(message).__name__}"
        ), False
    kind = message.get("type")
    if kind == "close":
        return None, True
    if not isinstance(kind, str) or kind not in _ACTIONS:
        return protocol.error_frame(
            protocol.UNKNOWN_TYPE,
            f"Unknown message type: {kind!r}; expected one of {list(protocol.MESSAGE_TYPES)}",
        ), False
    extra = sorted(set(message) - {"type", "data"})
    if extra:
        return protocol.error_frame(
            protocol.VALIDATION_ERROR, f"unknown fields {extra} in a {kind!r} frame"
        ), False
    data = message.get("data", {})
    try:
        if kind == "reset":
            parsed = ResetData.model_validate(data if data is not None else {})
            return protocol.frame("observation", await session.call(session.reset, parsed)), False
        if kind == "step":
            action = protocol.parse_action(data)
            if session.env is not None and session.episode_id is None:
                return protocol.error_frame(
                    protocol.SESSION_ERROR,
                    "step before reset: send a 'reset' frame first",
                    exception="ResetNeeded",
                ), False
            return protocol.frame("observation", await session.call(session.step, action)), False
        return protocol.frame("state", await session.call(session.state)), False
    except ValidationError as exc:
        return protocol.error_frame(
            protocol.VALIDATION_ERROR,
            "Invalid message",
            errors=json.loads(exc.json(include_url=False, include_input=False)),
        ), False
    except Exception as exc:
        return protocol.error_frame(
            protocol.EXECUTION_ERROR,
            f"{type(exc).__name__}: {exc}",
            **_exception_data(exc, session.config.env_id),
        ), False


def build_app(config: ServeConfig, manager: SessionManager | None = None) -> Any:
    """The ASGI app serving ``config.env_id``: its sessions on ``/ws``, Starlette the rest."""
    try:
        from starlette.applications import Starlette
        from starlette.datastructures import Headers
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route
    except ImportError as exc:
        raise MissingDependencyError("starlette", "serve", "tool-envs serve") from exc

    import tool_envs

    manager = manager or SessionManager(config)
    env_name = config.env_id.rsplit("/", 1)[-1]
    tasks = _TaskSets(config)

    expected = config.token.encode() if config.token else b""

    def authorized(headers: Mapping[str, str]) -> bool:
        if not config.token:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        # Starlette decodes header bytes as latin-1: encoding back gives the bytes sent, and
        # bytes compare whatever they hold (str refuses non-ASCII).
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.encode("latin-1", "replace"), expected
        )

    def unauthorized() -> JSONResponse:
        return JSONResponse({"detail": "missing or wrong bearer token"}, status_code=401)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "healthy",
                "active_sessions": manager.active,
                "max_sessions": config.max_sessions,
            }
        )

    async def metadata(request: Request) -> JSONResponse:
        if not authorized(request.headers):
            return unauthorized()
        description = describe_env(config.env_id)
        return JSONResponse(
            protocol.Metadata(
                name=config.env_id, description=description, version=tool_envs.__version__
            ).model_dump()
        )

    async def schema(request: Request) -> JSONResponse:
        if not authorized(request.headers):
            return unauthorized()
        return JSONResponse(
            {
                "action": Action.model_json_schema(),
                "observation": Observation.model_json_schema(),
                "state": protocol.State.model_json_schema(),
            }
        )

    async def task_api(request: Request) -> JSONResponse:
        if not authorized(request.headers):
            return unauthorized()
        name, action = request.path_params["env_name"], request.path_params["action"]
        if name.lower() != env_name.lower():
            return _detail(404, f"unknown environment {name!r}; this server serves {env_name}")
        if action not in TASK_ROUTES:
            return _detail(404, f"unknown task route {action!r}; routes: {sorted(TASK_ROUTES)}")
        method, body_shape = TASK_ROUTES[action]
        if request.method not in (method, "HEAD" if method == "GET" else method):
            return _detail(
                405,
                f"{method} /{env_name}/{action} with a JSON body {body_shape} "
                f"(GET /{env_name}/splits lists the splits)",
                headers={"Allow": method},
            )
        body = {} if action == "splits" else await _json_body(request, config.max_message_bytes)
        if isinstance(body, JSONResponse):
            return body
        if action == "gold_turns":
            return await _gold_answer(tasks, body)
        try:
            splits = await asyncio.to_thread(tasks.splits)
        except Exception as exc:  # an env without task sets (OpenEnv's answer: 501)
            return _detail(501, f"{config.env_id} has no task splits ({type(exc).__name__}: {exc})")
        if action == "splits":
            return JSONResponse([_split_entry(split) for split in splits])
        split = body.get("split")
        rows = splits.get(split) if isinstance(split, str) else None
        if rows is None:
            given = "" if "split" not in body else f", got {split!r}"
            return _detail(400, f'the body needs "split": one of {sorted(splits)}{given}')
        if action == "num_tasks":
            return JSONResponse({"num_tasks": len(rows)})
        if action == "tasks":
            return JSONResponse({"tasks": rows, "env_name": env_name})
        index = body.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(rows):
            return _detail(
                400, f'"index" must be an integer 0-{len(rows) - 1} in {split!r}, got {index!r}'
            )
        return JSONResponse({"task": rows[index]})

    async def list_environments(request: Request) -> JSONResponse:
        if not authorized(request.headers):
            return unauthorized()
        return JSONResponse([env_name])

    async def session_socket(scope: dict[str, Any], receive: Any, send: Any) -> None:
        """One session, on the ASGI messages themselves: Starlette's WebSocket wrapper and
        middleware cost ~30 us of each frame's ~150 (``benchmarks/env_scale.py``)."""
        if (await receive())["type"] != "websocket.connect":
            return
        if not authorized(Headers(scope=scope)):
            await send(_close_frame(1008, "missing or wrong bearer token"))
            return
        await send({"type": "websocket.accept"})
        try:
            session = await manager.open()
        except _CapacityError as exc:
            await _send_last(
                send,
                protocol.error_frame(
                    protocol.CAPACITY_REACHED,
                    str(exc),
                    active_sessions=exc.active,
                    max_sessions=exc.limit,
                ),
            )
            return
        except Exception as exc:
            await _send_last(
                send,
                protocol.error_frame(
                    protocol.FACTORY_ERROR,
                    f"could not make {config.env_id}: {type(exc).__name__}: {exc}",
                    factory_name=config.env_id,
                ),
            )
            return
        idle = _IdleTimer(config.session_timeout)
        try:
            while True:
                message = await idle.receive(receive)
                if message is None:
                    await send(_close_frame(1001, "session idle past its timeout"))
                    break
                if message["type"] == "websocket.disconnect":
                    break
                raw = message.get("text")
                if raw is None:
                    raw_bytes = message.get("bytes") or b""
                    try:
                        raw = raw_bytes.decode()
                    except UnicodeDecodeError:
                        await send(
                            _text_frame(
                                protocol.error_frame(protocol.INVALID_JSON, "a frame is UTF-8 JSON")
                            )
                        )
                        continue
                try:
                    reply, end = await handle_frame(session, raw)
                except Exception as exc:  # a frame no rule above foresaw: answered, logged
                    logger.warning("a frame raised %s: %s", type(exc).__name__, exc)
                    reply, end = (
                        protocol.error_frame(
                            protocol.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}"
                        ),
                        False,
                    )
                if end:
                    with contextlib.suppress(Exception):
                        await send(_close_frame(1000, ""))
                    break
                await send(_text_frame(reply))  # type: ignore[arg-type]
        except (RuntimeError, OSError):  # uvicorn's ClientDisconnected is an OSError
            pass
        finally:
            idle.cancel()
            manager.close(session)

    routes = [
        Route("/health", health),
        Route("/metadata", metadata),
        Route("/schema", schema),
        Route("/list_environments", list_environments),
        Route("/{env_name}/{action}", task_api, methods=["GET", "HEAD", "POST", "PUT", "DELETE"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        yield
        manager.close_all()
        tasks.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.manager = manager
    return _SessionsFirst(session_socket, app)


class _SessionsFirst:
    """The ASGI app: WebSocket connections to ``/ws`` go straight to the session handler, the
    rest (HTTP routes, lifespan, other WebSocket paths, which Starlette refuses) to Starlette."""

    def __init__(self, sessions: Any, app: Any):
        self.sessions, self.app = sessions, app
        self.state = app.state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            await self.sessions(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _text_frame(text: str) -> dict[str, Any]:
    return {"type": "websocket.send", "text": text}


def _close_frame(code: int, reason: str) -> dict[str, Any]:
    return {"type": "websocket.close", "code": code, "reason": reason}


class _IdleTimer:
    """Ends a session whose client sent nothing for ``seconds``, with one timer per session
    that moves only when it fires (a frame just notes the time): arming and cancelling a
    timeout around every frame was ~3% of a server's CPU."""

    def __init__(self, seconds: float):
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._seconds = seconds
        self._last = self._loop.time()
        self._waiting = self._expired = False
        self._timer = self._loop.call_at(self._last + seconds, self._check)

    async def receive(self, receive: Any) -> dict[str, Any] | None:
        """The next ASGI message, or None once the client has been silent too long."""
        self._waiting = True
        try:
            message = await receive()
        except asyncio.CancelledError:
            if not self._expired:
                raise
            uncancel = getattr(self._task, "uncancel", None)  # 3.11+: the cancel is handled
            if uncancel is not None:
                uncancel()
            return None
        finally:
            self._waiting = False
        self._last = self._loop.time()
        return message

    def _check(self) -> None:
        now, due = self._loop.time(), self._last + self._seconds
        if not self._waiting:  # a frame of its own is being answered: not idle
            self._timer = self._loop.call_at(max(due, now + self._seconds), self._check)
            return
        if now < due:  # heard from since the timer was set
            self._timer = self._loop.call_at(due, self._check)
            return
        self._expired = True
        if self._task is not None:
            self._task.cancel()

    def cancel(self) -> None:
        self._timer.cancel()


async def _send_last(send: Any, text: str) -> None:
    with contextlib.suppress(Exception):
        await send(_text_frame(text))
        await send(_close_frame(1000, ""))


TASK_ROUTES: dict[str, tuple[str, str]] = {
    "splits": ("GET", "{}"),
    "tasks": ("POST", '{"split": "<name>"}'),
    "num_tasks": ("POST", '{"split": "<name>"}'),
    "task": ("POST", '{"split": "<name>", "index": <int>}'),
    "gold_turns": ("POST", '{"task": <task row>}'),
}
"""OpenEnv's task routes (``/<Name-vN>/<route>``) and ours (``gold_turns``): method, body."""


def _detail(status: int, detail: str, headers: Mapping[str, str] | None = None) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _json_body(request: Any, limit: int) -> Any:
    """The request's JSON object, or the 4xx answer saying why there is none."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return _detail(413, f"the body is over {limit} bytes (--max-message-bytes)")
        chunks.append(chunk)
    try:
        body = protocol.loads(b"".join(chunks) or b"{}")
    except (ValueError, RecursionError) as exc:
        return _detail(400, f"the body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _detail(400, f"the body is a JSON object, got {type(body).__name__}")
    return body


async def _gold_answer(tasks: _TaskSets, body: dict[str, Any]) -> Any:
    """``{"gold_turns": [...] | null}`` for the body's task row, or a 4xx naming the problem."""
    from starlette.responses import JSONResponse

    from tool_envs.data import validate_row

    if "task" not in body:
        return _detail(400, 'the body needs "task": a task row of this env')
    try:
        row = validate_row(body["task"])
    except (TaskRowError, TypeError, ValueError, AttributeError) as exc:
        return _detail(400, f"the task is not a valid row: {exc}")
    try:
        await asyncio.to_thread(tasks.probe)
    except TypeError as exc:  # not a ServableEnv: what it lacks
        return _detail(501, f"{tasks.config.env_id} cannot give gold turns ({exc})")
    try:
        turns = await asyncio.to_thread(tasks.gold_turns, row)
    except Exception as exc:  # the env cannot solve this row: the caller's row, not the server
        return _detail(422, f"gold_turns raised {type(exc).__name__}: {exc}")
    return JSONResponse({"gold_turns": None if turns is None else [str(t) for t in turns]})


def describe_env(env_id: str) -> str:
    """One line for ``/metadata``: ours from the registry, a user's from its class docstring."""
    import tool_envs

    ours = tool_envs.list_envs().get(env_id)
    if ours:
        return ours
    from gymnasium.envs.registration import load_env_creator

    entry_point = gym.spec(env_id).entry_point
    try:
        creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    except Exception:  # described without it; making the env names the import error
        creator = None
    doc = getattr(creator, "__dict__", {}).get("__doc__") if creator is not None else None
    if doc and doc.strip():
        return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())  # its first paragraph
    where = entry_point if isinstance(entry_point, str) else getattr(creator, "__qualname__", "")
    return f"{env_id} ({where})"


def _split_entry(name: str) -> dict[str, str]:
    return {"name": name, "type": name if name in {"train", "validation", "test"} else "validation"}


class _TaskSets:
    """What the task routes read from one probe env, made on first use and kept until the server
    stops: the env's own splits (read once) and gold turns (asked per task row), through
    :class:`~tool_envs.core.chat_env.ServableEnv` (an env lacking a read is a TypeError naming
    it, which the routes answer with 501)."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self._splits: dict[str, list[dict[str, Any]]] | None = None
        self._probe: gym.Env | None = None
        self._lock = threading.Lock()

    def probe(self) -> ServableEnv:
        """The probe env (made now if need be); a TypeError naming what it lacks to be served."""
        with self._lock:
            return self._servable()

    def _servable(self) -> ServableEnv:
        if self._probe is None:
            self._probe = gym.make(self.config.env_id, **dict(self.config.env_kwargs))
        return servable_env(self._probe)

    def splits(self) -> dict[str, list[dict[str, Any]]]:
        with self._lock:
            if self._splits is None:
                splits = self._servable().own_task_splits()
                self._splits = {
                    name: json.loads(protocol.dumps(list(rows))) for name, rows in splits.items()
                }
            return self._splits

    def gold_turns(self, row: dict[str, Any]) -> list[str] | None:
        with self._lock:
            return self._servable().gold_turns(row)

    def close(self) -> None:
        with self._lock:
            if self._probe is not None:
                self._probe.close()
                self._probe = None


class EnvServer:
    """A running server (uvicorn in a thread of this process); for tests and benchmarks.

    ``tool-envs serve`` runs the same app in its own process (:func:`serve`).
    """

    def __init__(self, config: ServeConfig):
        import uvicorn

        if config.workers != 1:
            raise EnvConfigError(
                f"EnvServer serves from this process; for {config.workers} worker processes "
                "run `tool-envs serve --workers`"
            )
        self.config = config
        self.manager = SessionManager(config)
        self.handshakes = HandshakeLimits(config.handshake_timeout, config.max_handshakes)
        self.files = OpenFiles()
        self.app = build_app(config, self.manager)
        self._socket = bind_socket(config.host, config.port)
        self.port = self._socket.getsockname()[1]
        self.url = f"http://{_url_host(config.host)}:{self.port}"
        self._server = uvicorn.Server(
            _uvicorn_config(self.app, config, self.handshakes, self.files)
        )
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def start(self) -> EnvServer:
        """Warm the env (:func:`prepare_served_env`), then serve; returns once listening."""
        try:
            prepared = prepare_served_env(self.config, servable=False)
        except BaseException:
            self._socket.close()
            raise
        self.files.per_session = prepared.files
        self.config = self.manager.config = prepared.config
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the env server for {self.config.env_id} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self.manager.shutdown()
        self._socket.close()

    def __enter__(self) -> EnvServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``OSError`` as ``socket.bind`` raises it: a Ray
    actor serves at another port when its own is taken)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)  # connections queue from here on, while uvicorn starts
    sock.set_inheritable(True)
    return sock


def _bind_failure(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use (another server?): pick another --port, or "
            "--port 0 for any free one"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine: pick another --host"
    if exc.errno == errno.EACCES:
        return f"port {port} needs privileges this user lacks: pick a --port above 1023"
    return f"cannot listen on {host}:{port} ({exc.strerror or exc}): check --host and --port"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _uvicorn_config(
    app: Any, config: ServeConfig, handshakes: HandshakeLimits, files: OpenFiles
) -> Any:
    import uvicorn

    return uvicorn.Config(
        one_request_per_connection(app),
        http=guarded_protocol(handshakes, files),
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=config.max_message_bytes,
        ws_per_message_deflate=False,  # loopback and LAN: compression costs more than it saves
        ws_ping_interval=20.0,
        ws_ping_timeout=20.0,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )


def serve(config: ServeConfig) -> None:
    """Serve until interrupted: SIGINT (Ctrl-C) or SIGTERM close every session's env and return.

    Raises:
        EnvConfigError: the port cannot be bound, or the env cannot be made with
            ``config.env_kwargs`` (one line naming the value and the fix).
    """
    try:
        import uvicorn  # noqa: F401 - missing: named now, not in a worker
    except ImportError as exc:
        raise MissingDependencyError("uvicorn", "serve", "tool-envs serve") from exc
    raise_open_file_limit()  # a connection and each of its env's files is a descriptor
    try:  # first: a taken port fails at once
        sock = bind_socket(config.host, config.port)
    except OSError as exc:
        raise EnvConfigError(_bind_failure(config.host, config.port, exc)) from None
    try:
        prepared = prepare_served_env(config)  # a bad --env-kwargs fails here, once
    except BaseException:
        sock.close()
        raise
    config, per_session = prepared.config, prepared.files
    # Everything imported so far (an env may pull in transformers and torch: 200k+ objects)
    # lives as long as the server: out of the collector's sight, a full collection scans only
    # what sessions made, instead of stalling every session for ~0.1 s.
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    port = sock.getsockname()[1]

    def announce() -> None:
        print(
            f"serving {config.env_id} on http://{_url_host(config.host)}:{port} "
            f"(ws /ws, max {config.max_sessions} sessions, {config.workers} worker process"
            f"{'es' if config.workers > 1 else ''}, steps "
            f"{'inline' if config.inline_steps else f'on up to {config.step_threads} threads'}, "
            f"open-file limit {open_file_limit()})",
            flush=True,
        )

    try:
        if config.workers == 1:
            _serve_on(sock, config, per_session, announce=announce)
        else:
            run_workers(
                config.workers,
                lambda shared, index: _serve_on(sock, config, per_session, shared, index),
                announce,
            )
    finally:
        sock.close()
    print(f"stopped serving {config.env_id}", flush=True)


def _serve_on(
    sock: socket.socket,
    config: ServeConfig,
    per_session: int,
    shared: SharedSessions | None = None,
    worker: int = 0,
    announce: Any = None,
) -> None:
    """Run the app on ``sock`` in this process until SIGINT or SIGTERM, then close every
    session's env; ``shared`` counts the sessions of all the server's worker processes."""
    import uvicorn

    manager = SessionManager(config, shared, worker)
    app = build_app(config, manager)
    handshakes = HandshakeLimits(
        config.handshake_timeout, max(1, config.max_handshakes // config.workers)
    )
    server = uvicorn.Server(
        _uvicorn_config(app, config, handshakes, OpenFiles(per_session=per_session))
    )
    if announce is not None:
        announce()
    try:
        with _stop_signals_end_quietly(server):
            server.run(sockets=[sock])
    finally:
        manager.shutdown()


@dataclass(frozen=True)
class PreparedEnv:
    """What the warm-up learned: ``config`` with ``inline_steps`` settled (the env's
    ``steps_wait`` when it was None), and ``files``, the descriptors the env held (what each
    session will hold besides its connection)."""

    config: ServeConfig
    files: int


def prepare_served_env(config: ServeConfig, *, servable: bool = True) -> PreparedEnv:
    """Make the env, play a short episode on it through the sessions' own code, and close it,
    before the server takes a connection (see :class:`PreparedEnv` for what it returns).

    Making it once names a constructor that refuses the arguments, and (``servable``) each read
    of :class:`~tool_envs.core.chat_env.ServableEnv` the env lacks; :class:`EnvServer` serves a
    chat env without them (its task routes answer 501). The episode (a reset, a turn that calls
    every tool taking arguments with none, a turn as a chat API sends it, a state) builds and
    imports what a session's first reset and step need: the task set, the tools' argument
    checks, the parsers, the protocol's models. Without it a cold server's first burst of
    sessions each built them at once under the GIL, and timed out.

    Raises:
        EnvConfigError: the env cannot be made with ``config.env_kwargs``, or cannot be served.
    """
    before = count_open_files()
    try:
        env = gym.make(config.env_id, **dict(config.env_kwargs))
    except (TypeError, ValueError, ToolEnvsError, gym.error.Error) as exc:
        given = json.dumps(dict(config.env_kwargs))
        raise EnvConfigError(
            f"cannot make {config.env_id} with --env-kwargs {given}: {exc}"
        ) from exc
    session = Session(config)  # inline
    session.env = env
    try:
        if servable:
            servable_env(env)
        chat_env(env)
    except TypeError as exc:
        session.close()
        if servable:
            raise EnvConfigError(f"cannot serve {config.env_id}: {exc}") from None
        return PreparedEnv(config, 0)  # its sessions will say what it lacks
    if config.inline_steps is None:
        waits = getattr(chat_env(env), "steps_wait", True)
        config = dataclasses.replace(config, inline_steps=not waits)
    try:
        with ThreadPoolExecutor(1, thread_name_prefix="tool-envs-warm-up") as thread:
            thread.submit(asyncio.run, _warm_up_episode(session)).result()
        after = count_open_files()
    finally:
        session.close()
    files = max(0, after - before) if after is not None and before is not None else 0
    return PreparedEnv(config, files)


async def _warm_up_episode(session: Session) -> None:
    """One episode's frames (see :func:`prepare_served_env`); a failure is logged, not raised:
    sessions will meet it and say what it is."""
    tools = [tool["function"] for tool in chat_env(session.env).tools]  # type: ignore[arg-type]
    # Calls with no arguments to tools that need some: every argument check is compiled and
    # fails, and no tool runs (a tool that takes none could write, or wait on a server).
    calls = [
        {"name": tool["name"], "arguments": {}}
        for tool in tools
        if tool.get("parameters", {}).get("required")
    ] or [{"name": "tool_envs_warm_up", "arguments": {}}]
    text = "\n".join(f"<tool_call>\n{json.dumps(call)}\n</tool_call>" for call in calls)
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"warm-{i}", "type": "function", "function": {**call, "arguments": "{}"}}
            for i, call in enumerate(calls)
        ],
    }
    frames = [
        {"type": "reset", "data": {"seed": 0}},
        {"type": "step", "data": {"text": text}},
        {"type": "step", "data": {"message": message}},
        {"type": "state"},
    ]
    for number, frame in enumerate(frames):
        reply, _ = await handle_frame(session, protocol.dumps(frame))
        answer = protocol.loads(reply or "{}")
        if number < 2 and answer.get("type") == "error":
            logger.warning(
                "the warm-up episode of %s failed at its %s: %s (sessions may meet the same)",
                session.config.env_id,
                frame["type"],
                answer.get("data", {}).get("message"),
            )
            return


@contextlib.contextmanager
def _stop_signals_end_quietly(server: Any) -> Any:
    """uvicorn stops on SIGINT / SIGTERM, then raises the signal again for the handler it
    found (Python's: ``KeyboardInterrupt``, or death by SIGTERM). The handler here ignores that
    echo, so a stop returns normally; a signal before uvicorn took over still interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if not server.should_exit:  # not uvicorn's echo: stop now
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)

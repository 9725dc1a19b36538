"""Start env servers as Ray actors, hand out their URLs, watch them, stop them.

Placement: each server asks for ``num_cpus`` and any custom ``resources`` (``{"sandbox": 1}``
pins it to nodes started with ``--resources '{"sandbox": 8}'``), and servers of one env are
spread over the nodes that fit (Ray's ``SPREAD``), at the normal CPU priority (not the
niceness Ray gives its workers: :data:`SERVER_PRIORITY`). Health: Ray restarts a dead server's actor
up to ``max_restarts`` times, at the same address when its node still has the port; the
trainer's pool voids the episodes the dead server held and readmits it once ``/health``
answers. The actors belong to this process's Ray job: if the process dies, Ray removes them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from tool_envs.errors import EnvConfigError, MissingDependencyError
from tool_envs.registration import registered_id
from tool_envs.serve.cluster.actor import EnvServerActor
from tool_envs.serve.cluster.errors import EnvServerLostError
from tool_envs.serve.cluster.versions import check_ray_version, cluster_ray_version
from tool_envs.serve.pool import EnvServerPool, ServerMoves
from tool_envs.serve.server import TOKEN_VARIABLE, ServeConfig, is_loopback

logger = logging.getLogger(__name__)

# Ray starts its workers at niceness 15 (its worker_niceness setting), which a worker's
# runtime_env can override, as Ray's own job supervisor does. An env server answers the
# trainer's requests and WebSocket pings: at niceness 15 beside busy processes at 0 (a
# trainer, vLLM) it went unscheduled past the 20 s keepalive and every session was dropped.
SERVER_PRIORITY = {"RAY_worker_niceness": "0"}

LOCAL_OBJECT_STORE_BYTES = 80 * 2**20
"""A local cluster started here moves no data through Ray: its object store stays small."""


@dataclass(frozen=True)
class ServerSpec:
    """How one env id is served on Ray.

    Attributes:
        env_id: Registered env id.
        servers: How many servers (actors).
        num_cpus: CPUs Ray reserves per server (its sessions' env steps run there).
        resources: Custom Ray resources per server, e.g. ``{"sandbox": 1}``.
        max_sessions: Sessions (envs) per server.
        env_kwargs: ``gymnasium.make`` arguments of the served env.
        max_restarts: Times Ray restarts a dead server before it is lost for good.
        session_timeout: Seconds a silent session is kept (``tool-envs serve``'s option).
        inline_steps: Run env steps on the server's event loop (True) or its step threads
            (False); None asks the env (``--inline-steps``, :class:`ServeConfig`).
        step_threads: Threads the server's env calls run on, at most (``--step-threads``).
        handshake_timeout: Seconds a connection may take to send its first request
            (``--handshake-timeout``).
        max_handshakes: Connections still sending it, at once (``--max-handshakes``).
    """

    env_id: str
    servers: int = 1
    num_cpus: float = 1.0
    resources: Mapping[str, float] = field(default_factory=dict)
    max_sessions: int = 64
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_restarts: int = 3
    session_timeout: float = 600.0
    inline_steps: bool | None = None
    step_threads: int = 128
    handshake_timeout: float = 10.0
    max_handshakes: int = 256

    def __post_init__(self) -> None:
        if self.servers < 1:
            raise EnvConfigError(f"{self.env_id}: servers must be >= 1, got {self.servers}")
        if self.num_cpus < 0 or self.max_restarts < 0:
            raise EnvConfigError(f"{self.env_id}: num_cpus and max_restarts must be >= 0")

    def serve_config(self, host: str, port: int, token: str | None) -> ServeConfig:
        """The config of one of its servers: every option it shares with :class:`ServeConfig`
        (so an option added to both reaches the servers), and where that server listens."""
        served = {f.name for f in fields(ServeConfig)}
        shared = {f.name: getattr(self, f.name) for f in fields(self) if f.name in served}
        shared["env_kwargs"] = dict(self.env_kwargs)
        return ServeConfig(**shared, host=host, port=port, token=token)


def parse_server_specs(value: Mapping[str, Any]) -> list[ServerSpec]:
    """``{env_id: N}`` or ``{env_id: {"servers": N, "num_cpus": 1, "resources": {...}, ...}}``
    (the recipes' ``ray_env_servers``) -> one :class:`ServerSpec` per env id."""
    names = {f for f in ServerSpec.__dataclass_fields__ if f != "env_id"}
    specs = []
    for env_id, options in value.items():
        if isinstance(options, int) and not isinstance(options, bool):
            options = {"servers": options}
        if not isinstance(options, Mapping) or set(options) - names:
            raise EnvConfigError(
                f"ray_env_servers[{env_id!r}] must be a server count or an object with keys "
                f"{sorted(names)}, got {options!r}"
            )
        specs.append(ServerSpec(env_id, **options))
    return specs


def check_ray_env_servers(
    ray_env_servers: Mapping[str, Any], env_servers: Mapping[str, Any]
) -> list[ServerSpec]:
    """The specs of ``ray_env_servers`` (:func:`parse_server_specs`), once no env id is also in
    ``env_servers``: an env is served one way, by URLs given or by servers started on Ray."""
    specs = parse_server_specs(ray_env_servers)
    both = {registered_id(s.env_id) for s in specs} & {registered_id(k) for k in env_servers}
    if both:
        raise EnvConfigError(
            f"{sorted(both)} in both env_servers and ray_env_servers: serve each env one way"
        )
    return specs


@contextlib.contextmanager
def started_on_ray(
    ray_env_servers: Mapping[str, Any], env_servers: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """``env_servers`` plus pools of the servers ``ray_env_servers`` starts on Ray for the block
    (:meth:`RayEnvServers.pools`, which follow a server Ray restarts at a new address; all
    stopped when the block ends, however it ends)."""
    specs = check_ray_env_servers(ray_env_servers, env_servers)
    if not specs:
        yield dict(env_servers)
        return
    with RayEnvServers(specs) as servers:
        servers.watch()  # its pools follow a server restarted at a new address
        print(f"env servers on Ray: {json.dumps(servers.urls)}", flush=True)
        yield {**env_servers, **servers.pools()}


@dataclass
class _Server:
    spec: ServerSpec
    index: int
    actor: Any
    url: str = ""
    pid: int = 0


class RayEnvServers:
    """Env servers on the Ray cluster at ``address`` (default ``$RAY_ADDRESS``; a Ray already
    initialised in this process is used as it is; else a local cluster is started and stopped).

    Use as a context manager, or call :meth:`start` and :meth:`stop`::

        with RayEnvServers([ServerSpec("tool_envs/CodeExec-v0", servers=4)]) as servers:
            config = RolloutConfig(env_servers=servers.pools())

    Args:
        specs: What to serve.
        address: Ray cluster address.
        host: Interface the servers bind; default: 127.0.0.1 when every node is this machine,
            else each node's address, with a bearer token (``token``, ``$TOOL_ENVS_SERVE_TOKEN``
            or a new one, put in this process's environment for its RemoteEnvs).
        token: Bearer token of the servers.
        local_cpus: CPUs of a local cluster started here (default: all of this machine's).
        startup_timeout: Seconds for every server to start (placement included).

    Attributes:
        urls: Env id -> its servers' URLs.
        moves: Where :meth:`check` found servers Ray restarted at a new address; the pools of
            :meth:`pools` follow them (pools made from :attr:`urls` alone do not).
        started_cluster: Whether :meth:`start` started a local cluster (stopped by :meth:`stop`).
        new_token: The bearer token made here when the servers need one and none was given
            (clients elsewhere must send it), else None.
    """

    def __init__(
        self,
        specs: list[ServerSpec],
        *,
        address: str | None = None,
        host: str | None = None,
        token: str | None = None,
        local_cpus: int | None = None,
        startup_timeout: float = 300.0,
    ):
        if not specs:
            raise EnvConfigError("RayEnvServers needs at least one ServerSpec")
        self.specs = list(specs)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.host = host
        self.token = token
        self.local_cpus = local_cpus
        self.startup_timeout = startup_timeout
        self.started_cluster = False
        self.new_token: str | None = None
        self._watching: threading.Event | None = None
        self._connected_here = False
        self._servers: list[_Server] = []
        self.moves = ServerMoves()
        self._pools: dict[str, EnvServerPool] = {}

    def pools(self) -> dict[str, EnvServerPool]:
        """Env id -> one pool of its servers that follows them when Ray restarts one at a new
        address (the engines' ``env_servers``); the same pools on every call, so everything
        given them shares their load counts."""
        for env_id, urls in self.urls.items():
            if env_id not in self._pools:
                self._pools[env_id] = EnvServerPool(urls, moves=self.moves)
        return dict(self._pools)

    @property
    def urls(self) -> dict[str, list[str]]:
        urls: dict[str, list[str]] = {}
        for server in self._servers:
            urls.setdefault(server.spec.env_id, []).append(server.url)
        return urls

    def start(self) -> RayEnvServers:
        """Connect (or start a local cluster), start every server, wait until all listen."""
        ray = _import_ray()
        self._connect(ray)
        try:
            self._check_resources(ray)
            host, token = self._bind_to(ray)
            ports = _free_ports(sum(s.servers for s in self.specs))
            for spec in self.specs:
                actor_class = ray.remote(EnvServerActor).options(
                    num_cpus=spec.num_cpus,
                    resources=dict(spec.resources),
                    max_restarts=spec.max_restarts,
                    max_task_retries=0,
                    scheduling_strategy="SPREAD",
                    runtime_env={"env_vars": SERVER_PRIORITY},
                )
                for index in range(spec.servers):
                    config = spec.serve_config(host, ports.pop(), token)
                    self._servers.append(_Server(spec, index, actor_class.remote(config)))
            self._wait_started(ray)
        except BaseException:
            self.stop()
            raise
        return self

    def check(self) -> list[str]:
        """Ask every server how it is; returns what changed ("... restarted at URL"), raises
        :class:`EnvServerLostError` for a server Ray gave up on. A server being restarted right
        now is reported once it is back."""
        ray = _import_ray()
        changes = []
        for server in self._servers:
            try:
                info = ray.get(server.actor.info.remote(), timeout=30)
            except ray.exceptions.ActorUnavailableError:
                continue  # Ray is restarting it
            except ray.exceptions.RayActorError as exc:
                raise EnvServerLostError(
                    server.spec.env_id, server.index, server.spec.max_restarts, str(exc)
                ) from exc
            except ray.exceptions.GetTimeoutError:
                continue
            if info["pid"] != server.pid:  # a new process: Ray restarted it
                server.pid = info["pid"]
                moved = "" if info["url"] == server.url else f" (was {server.url})"
                if moved:
                    self.moves.record(server.url, info["url"])  # our pools follow it
                server.url = info["url"]
                changes.append(f"{server.spec.env_id} server {server.index} restarted at "
                               f"{server.url}{moved}")  # fmt: skip
        return changes

    def watch(self, every: float = 5.0) -> None:
        """Call :meth:`check` every ``every`` seconds in a background thread until :meth:`stop`,
        so that the pools of :meth:`pools` follow a server Ray restarted at a new address; a server
        lost for good is logged (its episodes are void; the others go on)."""
        stop = self._watching = threading.Event()

        def loop() -> None:
            while not stop.wait(every):
                try:
                    for change in self.check():
                        logger.warning("%s", change)
                except EnvServerLostError as exc:
                    logger.error("%s", exc)
                    return
                except Exception:  # Ray shutting down under the watcher: stop watching
                    return

        threading.Thread(target=loop, name="ray-env-server-watch", daemon=True).start()

    def actors(self) -> list[Any]:
        """The servers' actor handles, in the order of :attr:`urls`."""
        return [server.actor for server in self._servers]

    def _on_every_actor(self, ray: Any, call: Callable[[Any], Any]) -> None:
        """``call(actor)`` on every server's actor, then wait (up to 30 s) for all of them; an
        actor that fails or is gone is passed over: stopping goes on with the others."""
        pending = []
        for server in self._servers:
            with contextlib.suppress(Exception):
                pending.append(call(server.actor))
        with contextlib.suppress(Exception):
            ray.wait(pending, num_returns=len(pending), timeout=30)

    def stop(self) -> None:
        """Stop every server (sessions closed), kill its actor, and shut Ray down where it was
        started or connected here; idempotent."""
        if self._watching is not None:
            self._watching.set()
        with contextlib.suppress(ImportError):
            import ray

            self._on_every_actor(ray, lambda actor: actor.stop.remote())
            # Exit each actor and wait until it has: when stop() returns, none is left (a bare
            # ray.kill only asks, and the actor could still answer a call after it).
            self._on_every_actor(ray, lambda actor: actor.__ray_terminate__.remote())
            for server in self._servers:  # one that did not exit in time
                with contextlib.suppress(Exception):
                    ray.kill(server.actor, no_restart=True)
            self._servers = []
            self._pools = {}
            if self._connected_here and ray.is_initialized():
                ray.shutdown()  # a local cluster started here stops with it
            self._connected_here = False

    def __enter__(self) -> RayEnvServers:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ start-up

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        quiet = {"log_to_driver": False, "logging_level": "warning"}
        if self.address:
            version = cluster_ray_version(self.address)
            if version is not None:
                check_ray_version(version, address=self.address)
            ray.init(address=self.address, **quiet)
        else:
            wanted: dict[str, float] = {}
            for spec in self.specs:
                for name, amount in spec.resources.items():
                    wanted[name] = wanted.get(name, 0) + amount * spec.servers
            ray.init(
                address="local",  # a new one: never a cluster some other run left here
                num_cpus=self.local_cpus,
                resources=wanted or None,
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                include_dashboard=False,
                **quiet,
            )
            self.started_cluster = True
        self._connected_here = True

    def _check_resources(self, ray: Any) -> None:
        """A server asking for a resource no node has would wait forever: say so now."""
        available = ray.cluster_resources()
        for spec in self.specs:
            wanted = {"CPU": spec.num_cpus, **spec.resources}
            missing = {k: v for k, v in wanted.items() if v and available.get(k, 0) < v}
            if missing:
                raise EnvConfigError(
                    f"no node of the Ray cluster can place a {spec.env_id} server: it asks for "
                    f"{missing}, the cluster has {_resources_text(available)}. Start a node "
                    "with them (ray start --resources '{\"NAME\": N}') or ask for less."
                )

    def _bind_to(self, ray: Any) -> tuple[str, str | None]:
        """(host, token) of the servers: loopback when every node is this machine."""
        host = self.host
        if host is None:
            nodes = [n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")]
            host = "127.0.0.1" if self.started_cluster or all(map(is_loopback, nodes)) else ""
        token = self.token or os.environ.get(TOKEN_VARIABLE) or None
        if host and is_loopback(host):
            return host, token
        if token is None:
            token = self.new_token = secrets.token_urlsafe(32)
            os.environ[TOKEN_VARIABLE] = token  # this process's RemoteEnvs send it
        return host, token

    def _wait_started(self, ray: Any) -> None:
        pending = [server.actor.info.remote() for server in self._servers]
        try:
            infos = ray.get(pending, timeout=self.startup_timeout)
        except ray.exceptions.GetTimeoutError as exc:
            raise EnvConfigError(
                f"the env servers did not all start within {self.startup_timeout} s on the Ray "
                f"cluster (busy nodes, or a node that fits their resources is still joining)"
            ) from exc
        except ray.exceptions.RayActorError as exc:
            failed = next(
                (s for s, ref in zip(self._servers, pending, strict=True) if _failed(ray, ref)),
                self._servers[0],
            )
            raise EnvServerLostError(
                failed.spec.env_id, failed.index, failed.spec.max_restarts, str(exc)
            ) from exc
        for server, info in zip(self._servers, infos, strict=True):
            server.url, server.pid = info["url"], info["pid"]


def _failed(ray: Any, ref: Any) -> bool:
    try:
        ray.get(ref, timeout=0)
    except ray.exceptions.GetTimeoutError:
        return False
    except Exception:
        return True
    return False


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "env servers on Ray") from exc
    return ray


def _free_ports(count: int) -> list[int]:
    """Ports free on this machine now; servers on other nodes that find one taken pick another."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _resources_text(available: Mapping[str, float]) -> str:
    shown = {k: v for k, v in available.items() if not k.startswith(("node:", "memory", "object"))}
    return str(shown)

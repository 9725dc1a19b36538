"""Which env server takes the next session: the least loaded live one.

Load is the number of sessions this process holds on each server. A server that refuses a
connection or does not finish the WebSocket handshake in time is marked dead: no session goes to
it, so a training run does not wait on a dead peer over and over. A dead server is readmitted
once its ``/health`` answers again (a server Ray restarted at the same address, or at the new
one recorded in the pool's :class:`ServerMoves`), checked at most once per ``recheck_after``
seconds, with a short timeout, by the session that would use it. A full server
(``CAPACITY_REACHED``) is skipped for that session only.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.request
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tool_envs.errors import EnvServerUnavailableError
from tool_envs.registration import registered_id

_TIE_BREAK = itertools.count()


class ServerMoves:
    """Where env servers restarted at a new address went: old URL -> new URL.

    Whoever restarts servers (:class:`~tool_envs.serve.cluster.RayEnvServers`) records each move
    here, and the pools given this object (``EnvServerPool(..., moves=...)``) swap the address
    when they next recheck the old one. An object passed explicitly, not a table of the process:
    only the pools of those servers follow, and two launchers in one process keep apart. A copy
    sent to another process (pickled with a pool) holds the moves recorded so far.
    """

    def __init__(self, moved: Mapping[str, str] | None = None):
        self._moved: dict[str, str] = dict(moved or {})
        self._lock = threading.Lock()

    def record(self, old: str, new: str) -> None:
        """The server at ``old`` now serves at ``new`` (Ray restarted it on another node or
        port)."""
        with self._lock:
            self._moved[normalise_url(old)] = normalise_url(new)

    def follow(self, url: str, known: Collection[str] = ()) -> str:
        """The address ``url``'s server has now: ``url`` itself when it did not move; a move to
        an address in ``known`` (one the asking pool already has) is not followed."""
        with self._lock:
            current = url
            while current in self._moved and self._moved[current] not in known:
                current = self._moved[current]
            return current

    def __reduce__(self) -> tuple[Any, ...]:
        with self._lock:
            return (ServerMoves, (dict(self._moved),))


def normalise_url(url: str) -> str:
    """``http://host:port`` for any of ``host:port``, ``ws://host:port/ws``, ``http://...``."""
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname or parts.port is None:
        raise ValueError(
            f"an env server URL looks like http://127.0.0.1:8000 (with a port), got {url!r}"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/ws"):
        path = path[: -len("/ws")]
    return urlunsplit((scheme, parts.netloc, path, "", ""))


def websocket_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, f"{parts.path}/ws", "", ""))


class EnvServerPool:
    """The servers of one env id and the sessions this process holds on each.

    Args:
        urls: One URL or several (``http://127.0.0.1:8000``; ``ws://`` and a ``/ws`` suffix are
            accepted).
        recheck_after: Seconds before a dead server's ``/health`` is asked again (None: never
            readmit a dead server).
        health_timeout: Seconds that health check may take.
        moves: Where servers restarted at a new address went (:class:`ServerMoves`, e.g.
            :attr:`RayEnvServers.moves <tool_envs.serve.cluster.RayEnvServers.moves>`); a dead
            server is looked for there when rechecked. None: servers never move.

    A pool sent to another process (pickled, e.g. in a ``RolloutConfig`` for a spawned rollout
    worker) arrives as a new pool of the same servers: no sessions held, none marked dead.
    """

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        recheck_after: float | None = 5.0,
        health_timeout: float = 1.0,
        moves: ServerMoves | None = None,
    ):
        listed = [urls] if isinstance(urls, str) else list(urls)
        if not listed:
            raise ValueError("an env server pool needs at least one URL")
        self.urls = list(dict.fromkeys(normalise_url(u) for u in listed))
        self.load = dict.fromkeys(self.urls, 0)
        self.dead: dict[str, str] = {}
        self.recheck_after = recheck_after
        self.health_timeout = health_timeout
        self.moves = moves
        self._dead_since: dict[str, float] = {}
        self._lock = threading.Lock()

    def acquire(self, skip: Iterable[str] = ()) -> str | None:
        """Take a session slot on the least loaded live server not in ``skip``; None when there
        is none. Ties go round the list, so envs with pools of their own spread too."""
        skip = set(skip)
        self._recheck_dead(skip)
        with self._lock:
            live = [u for u in self.urls if u not in self.dead and u not in skip]
            if not live:
                return None
            turn = next(_TIE_BREAK)
            least = min(self.load[u] for u in live)
            tied = [u for u in live if self.load[u] == least]
            url = tied[turn % len(tied)]
            self.load[url] += 1
            return url

    def release(self, url: str) -> None:
        with self._lock:
            self.load[url] = max(0, self.load[url] - 1)

    def mark_dead(self, url: str, why: str) -> None:
        with self._lock:
            self.dead[url] = why
            self._dead_since[url] = time.monotonic()

    def _recheck_dead(self, skip: set[str]) -> None:
        """Readmit the dead servers whose ``/health`` answers again (due ones only)."""
        if self.recheck_after is None:
            return
        now = time.monotonic()
        with self._lock:
            due = [
                u
                for u in self.dead
                if u not in skip and now - self._dead_since[u] >= self.recheck_after
            ]
            for url in due:  # one check per interval, whoever asks
                self._dead_since[url] = now
        for url in due:
            current = self._follow_move(url)
            if is_healthy(current, self.health_timeout):
                with self._lock:
                    self.dead.pop(current, None)

    def _follow_move(self, url: str) -> str:
        """The address ``url``'s server has now (itself when it did not move)."""
        if self.moves is None:
            return url
        current = self.moves.follow(url, known=self.urls)
        if current != url:
            with self._lock:
                self.urls[self.urls.index(url)] = current
                self.load[current] = self.load.pop(url)
                self.dead[current] = self.dead.pop(url)
                self._dead_since[current] = self._dead_since.pop(url)
        return current

    def unavailable(
        self, failures: dict[str, str], full: Iterable[str] = ()
    ) -> EnvServerUnavailableError:
        """The error for "no server could take the session", naming every URL (``full``: those
        that answered CAPACITY_REACHED)."""
        with self._lock:
            reasons = {u: failures.get(u) or self.dead.get(u) or "not tried" for u in self.urls}
        return EnvServerUnavailableError(reasons, full=full)

    def __reduce__(self) -> tuple[Any, ...]:
        options = {"recheck_after": self.recheck_after, "health_timeout": self.health_timeout}
        return (_new_pool, (list(self.urls), options, self.moves))


def _new_pool(urls: list[str], options: dict[str, Any], moves: ServerMoves | None) -> EnvServerPool:
    return EnvServerPool(urls, moves=moves, **options)


def as_pool(servers: str | Sequence[str] | EnvServerPool) -> EnvServerPool:
    """``servers`` as a pool: a pool as it is (shared by everyone given it), URLs in a new one."""
    return servers if isinstance(servers, EnvServerPool) else EnvServerPool(servers)


def is_healthy(url: str, timeout: float = 1.0) -> bool:
    """Whether ``url``'s ``/health`` (no token needed) answers ``healthy`` within ``timeout``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # as RemoteEnv: direct
    try:
        with opener.open(f"{url}/health", timeout=timeout) as answer:
            return json.loads(answer.read()).get("status") == "healthy"
    except (OSError, ValueError):
        return False


def check_env_servers(
    env_servers: Mapping[str, Any],
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    option: str = "env_servers",
) -> None:
    """Raise ValueError, naming ``option`` and the env id, unless every value of ``env_servers``
    is a URL, a non-empty list of URLs or an :class:`EnvServerPool`, and no served env is also
    given constructor arguments in ``env_kwargs`` (a served env's are its server's). Keys match
    with or without Gymnasium's ``module:`` prefix. The one check of the recipes'
    ``RolloutConfig`` and ``tool-envs eval --env-servers``."""
    served = {registered_id(key) for key in env_kwargs or {}}
    for env_id, urls in env_servers.items():
        listed = urls.urls if isinstance(urls, EnvServerPool) else urls
        listed = [listed] if isinstance(listed, str) else listed
        if (
            not isinstance(listed, Sequence)
            or not listed
            or not all(isinstance(u, str) and u for u in listed)
        ):
            raise ValueError(
                f"{option}[{env_id!r}] must be a URL or a non-empty list of URLs, got {urls!r}"
            )
        if registered_id(env_id) in served:
            raise ValueError(
                f"{env_id} is served ({option}), so its constructor arguments are the server's: "
                f"start it with `tool-envs serve {env_id} --env-kwargs '...'` instead of giving "
                "it env_kwargs here"
            )

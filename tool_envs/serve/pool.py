"""Which env server takes the next session: the least loaded live one.

Load is the number of sessions this process holds on each server. A server that refuses a
connection or does not finish the WebSocket handshake in time is marked dead: no session goes to
it, so a training run does not wait on a dead peer over and over. A dead server is readmitted
once its ``/health`` answers again (a server Ray restarted at the same address, or at the new
one :func:`server_moved` recorded), checked at most once per ``recheck_after`` seconds, with a
short timeout, by the session that would use it. A
full server (``CAPACITY_REACHED``) is skipped for that session only.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.request
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit, urlunsplit

from tool_envs.errors import EnvServerUnavailableError

_TIE_BREAK = itertools.count()
_MOVED: dict[str, str] = {}  # old URL -> new URL of servers restarted elsewhere (this process)


def server_moved(old: str, new: str) -> None:
    """Record that the server at ``old`` now serves at ``new`` (Ray restarted it on another node
    or port): every pool of this process swaps the address when it next rechecks ``old``."""
    _MOVED[normalise_url(old)] = normalise_url(new)


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
    """

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        recheck_after: float | None = 5.0,
        health_timeout: float = 1.0,
    ):
        listed = [urls] if isinstance(urls, str) else list(urls)
        if not listed:
            raise ValueError("an env server pool needs at least one URL")
        self.urls = list(dict.fromkeys(normalise_url(u) for u in listed))
        self.load = dict.fromkeys(self.urls, 0)
        self.dead: dict[str, str] = {}
        self.recheck_after = recheck_after
        self.health_timeout = health_timeout
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
        current = url
        while current in _MOVED and _MOVED[current] not in self.urls:
            current = _MOVED[current]
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


def is_healthy(url: str, timeout: float = 1.0) -> bool:
    """Whether ``url``'s ``/health`` (no token needed) answers ``healthy`` within ``timeout``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # as RemoteEnv: direct
    try:
        with opener.open(f"{url}/health", timeout=timeout) as answer:
            return json.loads(answer.read()).get("status") == "healthy"
    except (OSError, ValueError):
        return False

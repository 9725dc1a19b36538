"""Env servers on 127.0.0.1 for the serve tests: real ``tool-envs serve`` processes, a TCP
proxy that can cut or freeze the link, and what a server process holds (from /proc)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tool_envs.serve.process import EnvServerProcess

ROOT = Path(__file__).resolve().parents[1]


class ServerProcess(EnvServerProcess):
    """``tool-envs serve ENV_ID --port 0 ...`` of this checkout, in its own process: one
    process unless ``args`` give ``--workers`` (the tests stop, limit and count the process
    they started; ``serve`` itself forks a worker per core)."""

    def __init__(self, env_id: str, *args: str, env: dict[str, str] | None = None):
        if "--workers" not in args:
            args = ("--workers", "1", *args)
        super().__init__(env_id, args=args, cwd=ROOT, env={"PYTHONPATH": str(ROOT), **(env or {})})


def wait_for(condition, timeout: float = 10.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


def process_stats(pid: int) -> dict[str, int]:
    """Open fds, threads, resident KiB and child processes of ``pid`` (Linux /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return {
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": len(os.listdir(f"/proc/{pid}/task")),
        "rss_kib": rss,
        "children": len(child_pids(pid)),
    }


def child_pids(pid: int) -> list[int]:
    """Every live descendant of ``pid``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
                if fields[0] != "Z":
                    parents[int(entry)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found.extend(kids)
        frontier.extend(kids)
    return found


class TcpProxy:
    """Forwards TCP between a client and ``upstream`` (host, port); ``freeze()`` stops passing
    bytes both ways without closing anything: a partitioned network, as the vLLM tests'
    FaultProxy freezes HTTP (``"hang"``), one level down so WebSockets pass through it."""

    def __init__(self, upstream_url: str):
        host, port = upstream_url.split("://", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.frozen = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def freeze(self) -> None:
        self.frozen.set()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection(self.upstream)
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pipe, args=(a, b), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        source.settimeout(0.1)
        while not self._stop.is_set():
            if self.frozen.is_set():
                time.sleep(0.05)
                continue
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            while self.frozen.is_set() and not self._stop.is_set():
                time.sleep(0.05)  # held, never delivered while frozen
            with contextlib.suppress(OSError):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def http_call(url: str, method: str = "GET", body: object = None) -> tuple[int, Any, dict]:
    """Status, JSON answer and headers of one HTTP request to a server (``body`` sent as JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read()), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)

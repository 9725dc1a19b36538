"""``tool-envs serve --workers N``: one server from N processes behind one port.

One process reaches about one core (the GIL). Here the server's process binds the port, warms
the env (so the workers inherit a warm interpreter, its pages shared), then forks N workers that
accept on that one listening socket and each run the whole app; the kernel hands each new
connection to one of them. ``--max-sessions`` stays the server's whole capacity: the workers
count their sessions in shared memory (:class:`SharedSessions`), so any worker refuses the
session past the total and ``/health`` reports all of them. The first process only watches:
SIGINT or SIGTERM stops every worker (each closes its sessions' envs); a worker that dies is
started again, its sessions counted as gone; and each worker dies with it (Linux
``PR_SET_PDEATHSIG``), so a killed server leaves no worker listening.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class SharedSessions:
    """Sessions open in each worker of one server, in shared memory (one slot per worker)."""

    def __init__(self, workers: int, context: Any):
        self._counts = context.Array("i", workers)  # with a lock shared by the workers

    def take(self, worker: int, limit: int) -> int | None:
        """Count one more session for ``worker``; None, or the total when it is at ``limit``."""
        with self._counts.get_lock():
            total = sum(self._counts)
            if total >= limit:
                return total
            self._counts[worker] += 1
            return None

    def give_back(self, worker: int) -> None:
        with self._counts.get_lock():
            self._counts[worker] -= 1

    def forget(self, worker: int) -> None:
        """A worker died: its sessions are gone with it."""
        with self._counts.get_lock():
            self._counts[worker] = 0

    def total(self) -> int:
        with self._counts.get_lock():
            return sum(self._counts)


def run_workers(
    count: int, worker: Callable[[SharedSessions, int], None], announce: Callable[[], None]
) -> None:
    """Fork ``count`` processes running ``worker(shared, index)``, call ``announce()``, and
    watch them until SIGINT or SIGTERM (then stop them all and return)."""
    context = multiprocessing.get_context("fork")
    shared = SharedSessions(count, context)
    stopping: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    processes: dict[int, Any] = {}

    def start(index: int) -> None:
        process = context.Process(
            target=_worker_main,
            args=(worker, shared, index, os.getpid()),
            name=f"tool-envs-serve-worker-{index}",
        )
        process.start()
        processes[index] = process

    try:
        for index in range(count):
            start(index)
        announce()
        while not stopping:
            ended = wait([p.sentinel for p in processes.values()], timeout=0.2)
            for index, process in list(processes.items()):
                if process.sentinel in ended and not stopping:
                    logger.warning(
                        "worker %d (pid %d) ended with code %s; starting it again",
                        index,
                        process.pid,
                        process.exitcode,
                    )
                    process.join()
                    shared.forget(index)
                    start(index)
    finally:
        for process in processes.values():
            if process.is_alive():
                process.terminate()  # SIGTERM: the worker closes its sessions' envs
        for process in processes.values():
            process.join(timeout=35)
            if process.is_alive():
                process.kill()
                process.join()
        for sig, old in previous.items():
            signal.signal(sig, old)


def _worker_main(
    worker: Callable[[SharedSessions, int], None], shared: SharedSessions, index: int, parent: int
) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):  # not the watcher's handler: a signal stops it
        signal.signal(sig, signal.SIG_DFL)
    _die_with_parent(parent)
    worker(shared, index)


def _die_with_parent(parent: int) -> None:
    """Have the kernel send SIGTERM when the watching process dies (Linux); exit at once if it
    already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)

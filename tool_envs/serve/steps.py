"""The threads a server runs its sessions' env calls on: one per call in flight, not per session.

A session spends nearly all its life idle, waiting for its client's next turn. A thread per
session cost every session its stack and the scheduler's attention, and capped a server near the
machine's thread limit whatever ``--max-sessions`` said. :class:`StepThreads` runs each call
(make, reset, step, state, close) on a thread of a bounded pool: a thread is started when a call
finds none idle (up to ``max_threads``; calls past that wait their turn) and ends after
``idle_timeout`` seconds without work, so a server of idle sessions holds no thread for them.
A session's calls still run one at a time and in order: its socket reads the next frame only
after answering the last.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class StepThreads:
    """A pool of at most ``max_threads`` threads that end when idle for ``idle_timeout`` s."""

    def __init__(self, max_threads: int, idle_timeout: float = 5.0, name: str = "tool-envs-step"):
        if max_threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {max_threads}")
        self.max_threads = max_threads
        self.idle_timeout = idle_timeout
        self._name = name
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._calls = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._idle = 0  # threads waiting for a call no submit has claimed
        self._backlog = 0  # calls queued with no thread claimed for them (all busy)
        self._closed = False

    @property
    def threads(self) -> int:
        """Threads alive now (busy or idle)."""
        with self._lock:
            return len(self._threads)

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``function(*args)`` on a thread of the pool; its future."""
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the server's step threads are shut down")
            self._calls.put((future, function, args))
            if self._idle:
                self._idle -= 1  # an idle thread takes it
            elif len(self._threads) < self.max_threads:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.add(thread)
                thread.start()
            else:
                self._backlog += 1
        return future

    def shutdown(self, timeout: float | None = 30.0) -> None:
        """Refuse new calls, let the queued ones run, and wait up to ``timeout`` s for them."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
            for _ in threads:
                self._calls.put((None, None, ()))  # type: ignore[arg-type]  # one stop each
        for thread in threads:
            thread.join(timeout)

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                future, function, args = self._calls.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # no call claimed this thread: it ends
                        self._idle -= 1
                        self._threads.discard(me)
                        return
                continue  # a call claimed it and is on its way
            if future is None:  # shutdown: the calls queued before it have run
                with self._lock:
                    self._threads.discard(me)
                return
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as exc:
                    future.set_exception(exc)
            with self._lock:
                if self._backlog:
                    self._backlog -= 1  # take a queued call no thread was claimed for
                else:
                    self._idle += 1

"""A cache for values that are costly to build and shared by every env of a process.

``functools.cache`` and ``lru_cache`` hold no lock while they compute: threads that miss at
once each build the value and each keep their own copy. An env server makes every session's env
on its own thread, so a cold server's first burst built Calculator's task set (~57 ms of CPU)
once per session, all under the GIL, and sessions timed out waiting. :func:`built_once` builds
each value once; the other callers wait for it and get the same object.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _BuiltOnce(Generic[T]):
    """The callable :func:`built_once` returns: ``build``'s value per arguments, built once."""

    def __init__(self, build: Callable[..., T]):
        self._build = build
        self._values: dict[tuple[Hashable, ...], T] = {}
        self._building: dict[tuple[Hashable, ...], threading.Lock] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, build)

    def __call__(self, *args: Hashable) -> T:
        try:
            return self._values[args]  # built: no lock on the common path
        except KeyError:
            pass
        with self._lock:
            building = self._building.setdefault(args, threading.Lock())
        with building:  # one caller builds; the others wait here, then read its value
            if args not in self._values:
                self._values[args] = self._build(*args)
            with self._lock:
                self._building.pop(args, None)
            return self._values[args]

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else functools.partial(self, instance)

    def built(self, *args: Hashable) -> bool:
        """Whether the value for ``args`` is built (a server checks its warm-up with it)."""
        return args in self._values

    def cache_clear(self) -> None:
        """Forget every value (the next call builds again), as ``functools.cache`` does."""
        with self._lock:
            self._values.clear()


def built_once(build: Callable[..., T]) -> _BuiltOnce[T]:
    """``functools.cache`` (positional, hashable arguments) whose concurrent first calls build
    the value once and all return that one object."""
    return _BuiltOnce(build)

"""Retries and a request-rate limit around any search provider, as a wrapper, so no provider
carries its own retry loop and every one backs off the same way.

``ResilientProvider`` is itself a :class:`SearchProvider`: the env, the cache and the eval CLI use
it like the provider it wraps (same ``name``, same ``cache_params``, so cached answers are shared
with the bare provider). Only ``SearchError(retryable=True)`` is retried (429, 5xx, timeouts,
connection errors, see ``providers/_errors.py``); a bad key or a bad request fails at once.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import tenacity

from tool_envs.errors import EnvConfigError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult

T = TypeVar("T")

# tenacity 9.2 renamed wait_exponential_jitter's `initial` to `multiplier` (same meaning) and
# warns on the old name; older releases only know `initial`.
_MULTIPLIER = (
    "multiplier"
    if "multiplier" in inspect.signature(tenacity.wait_exponential_jitter).parameters
    else "initial"
)


class RateLimiter:
    """At most ``requests_per_minute`` calls per minute from this process, spaced evenly.

    Each caller takes the next free slot (``60 / requests_per_minute`` seconds after the previous
    one) under a lock and sleeps until it outside the lock, so threads queue in arrival order and
    never hold the lock while waiting. There is no burst allowance: even spacing is what paid
    APIs' per-minute limits tolerate best. Process-local: separate processes need a limit each.
    """

    def __init__(
        self,
        requests_per_minute: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if requests_per_minute <= 0:
            raise EnvConfigError(f"requests_per_minute must be > 0, got {requests_per_minute!r}")
        self.interval = 60.0 / requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._next_slot = float("-inf")
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait for this caller's slot; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.interval
        wait = slot - now
        if wait > 0:
            self._sleep(wait)
        return wait


class ResilientProvider(SearchProvider):
    """``provider`` with retries (exponential backoff with jitter, via ``tenacity``) and an
    optional per-minute rate limit. Safe to share between threads.

    Args:
        provider: the provider to wrap.
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` attempts).
        backoff_initial: seconds before the first retry; doubles each retry, plus up to
            ``backoff_initial`` of random jitter so parallel episodes do not retry in lockstep.
        backoff_max: the cap on one wait.
        requests_per_minute: space every attempt (retries included) so no more than this many
            reach the provider per minute; None: no limit.
        clock: time source, replaceable in tests and simulations.
        sleep: how to wait, replaceable in tests and simulations.

    ``stats`` counts, since construction: ``calls`` (search/open_page calls), ``attempts``
    (requests sent to the provider), ``retries``, ``failures`` (calls that raised) and
    ``throttled_s`` (seconds spent waiting for the rate limit).
    """

    def __init__(
        self,
        provider: SearchProvider,
        max_retries: int = 3,
        backoff_initial: float = 0.5,
        backoff_max: float = 8.0,
        requests_per_minute: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if max_retries < 0:
            raise EnvConfigError(f"max_retries must be >= 0, got {max_retries!r}")
        if backoff_initial < 0 or backoff_max < backoff_initial:
            raise EnvConfigError(
                "backoff needs 0 <= backoff_initial <= backoff_max, got "
                f"backoff_initial={backoff_initial!r}, backoff_max={backoff_max!r}"
            )
        self.provider = provider
        self.name = provider.name
        self.max_retries = max_retries
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.limiter = (
            RateLimiter(requests_per_minute, clock=clock, sleep=sleep)
            if requests_per_minute is not None
            else None
        )
        self._sleep = sleep
        self._lock = threading.Lock()
        self._stats: dict[str, float] = dict.fromkeys(
            ("calls", "attempts", "retries", "failures"), 0
        )
        self._stats["throttled_s"] = 0.0

    @property
    def stats(self) -> dict[str, float]:
        """A snapshot of the counters (a copy: safe to read while other threads search)."""
        with self._lock:
            return dict(self._stats)

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        return self._run(lambda: self.provider.search(query, max_results))

    def open_page(self, url: str) -> str | None:
        return self._run(lambda: self.provider.open_page(url))

    def cache_params(self) -> dict[str, Any]:
        return self.provider.cache_params()

    def close(self) -> None:
        self.provider.close()

    def _add(self, key: str, amount: float = 1) -> None:
        with self._lock:
            self._stats[key] += amount

    def _run(self, call: Callable[[], T]) -> T:
        """``call()`` under the retry policy; the last SearchError says how many attempts."""
        self._add("calls")
        attempts = 0

        def attempt() -> T:
            nonlocal attempts
            attempts += 1
            self._add("attempts")
            if self.limiter is not None:
                self._add("throttled_s", self.limiter.acquire())
            return call()

        # A fresh Retrying per call: its statistics are per call, so threads never share one.
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_retryable),
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=tenacity.wait_exponential_jitter(
                **{_MULTIPLIER: self.backoff_initial},
                max=self.backoff_max,
                jitter=self.backoff_initial,
            ),
            sleep=self._sleep,
            before_sleep=lambda _state: self._add("retries"),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except SearchError as exc:
            self._add("failures")
            if attempts == 1 and not exc.retryable:
                raise
            plural = "s" if attempts != 1 else ""
            raise SearchError(
                f"{exc.message} (gave up after {attempts} attempt{plural})",
                retryable=exc.retryable,
                status=exc.status,
            ) from exc
        except Exception:
            self._add("failures")
            raise


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, SearchError) and exc.retryable

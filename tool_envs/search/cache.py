"""A persistent search cache (sqlite), so the G generations of a GRPO group, repeated epochs and
re-runs stop paying for the same query, and a replay-only mode makes a run offline and exact.

Keys are the provider's name, its result-changing settings (``cache_params``), the operation and
its arguments. Only successful answers are stored. Each thread has its own connection and the
database runs in WAL mode, so concurrent episodes and processes can share one file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import tenacity

from tool_envs.search.base import SearchError, SearchProvider, SearchResult

CACHE_MODES = ("off", "read_write", "replay")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    operation TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


class SearchCache:
    """A key-value store of search answers in one sqlite file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        # Processes opening a new file at once race to switch it to WAL; sqlite answers the
        # loser "database is locked" at once, without waiting for its busy timeout.
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception(_locked),
            wait=tenacity.wait_random(0.01, 0.1),
            stop=tenacity.stop_after_delay(30),
            reraise=True,
        ):
            with attempt, self._connection() as db:
                if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @staticmethod
    def key(provider: str, params: dict[str, Any], operation: str, request: dict[str, Any]) -> str:
        text = json.dumps([provider, params, operation, request], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        row = (
            self._connection()
            .execute("SELECT response FROM entries WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else json.loads(row[0])

    def put(self, key: str, provider: str, operation: str, request: Any, response: Any) -> None:
        self._connection().execute(
            "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)",
            (key, provider, operation, json.dumps(request), json.dumps(response), time.time()),
        )

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


class CachedProvider(SearchProvider):
    """A provider behind the cache. ``mode``: ``read_write`` (look up, else ask and store),
    ``replay`` (look up only; a miss is an error, so nothing reaches the network) or ``off``."""

    def __init__(self, provider: SearchProvider, cache: SearchCache, mode: str = "read_write"):
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r} is not one of {CACHE_MODES}")
        self.provider = provider
        self.cache = cache
        self.mode = mode
        self.name = provider.name
        self.stats = {"hits": 0, "misses": 0}
        self._lock = threading.Lock()

    def cache_params(self) -> dict[str, Any]:
        return self.provider.cache_params()

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] += 1

    def _lookup(self, operation: str, request: dict[str, Any]) -> tuple[str, Any | None]:
        key = SearchCache.key(self.name, self.provider.cache_params(), operation, request)
        found = None if self.mode == "off" else self.cache.get(key)
        self._count("hits" if found is not None else "misses")
        if found is None and self.mode == "replay":
            raise SearchError(
                f"{operation} {request} is not in the replay cache ({self.cache.path}); "
                "replay mode never calls the provider"
            )
        return key, found

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        request = {"query": query, "max_results": max_results}
        key, found = self._lookup("search", request)
        if found is not None:
            return [SearchResult.from_json(item) for item in found]
        results = self.provider.search(query, max_results)
        if self.mode == "read_write":
            self.cache.put(key, self.name, "search", request, [r.to_json() for r in results])
        return results

    def open_page(self, url: str) -> str | None:
        key, found = self._lookup("open_page", {"url": url})
        if found is not None:
            return found
        text = self.provider.open_page(url)
        if text is not None and self.mode == "read_write":
            self.cache.put(key, self.name, "open_page", {"url": url}, text)
        return text

    def close(self) -> None:
        self.provider.close()
        self.cache.close()

"""What every search provider returns and raises, so the env, the cache and the retry layer can
treat Tavily, Serper, Bing, DuckDuckGo, a custom endpoint and the offline corpus alike."""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass
from typing import Any

from tool_envs.errors import SearchError as SearchError


@dataclass(frozen=True)
class SearchResult:
    """One hit. ``content`` is the page's full text when the provider gives it (for open_page)."""

    title: str
    url: str
    snippet: str
    content: str | None = None
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchResult:
        return cls(**data)


class SearchProvider(abc.ABC):
    """A search backend. Implementations raise :class:`SearchError` for every failure."""

    name: str

    @abc.abstractmethod
    def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to ``max_results`` hits for ``query``, best first."""

    def open_page(self, url: str) -> str | None:
        """Full text of ``url`` if this provider can fetch it, else None (the env then falls
        back to the ``content`` of a result it has already seen)."""
        return None

    def cache_params(self) -> dict[str, Any]:
        """Settings that change this provider's answers (search depth, endpoint, corpus id...):
        part of the cache key, so a cache never mixes answers of different settings."""
        return {}

    def close(self) -> None:
        """Release clients and sessions (nothing by default)."""
        return None

"""Google results through Serper (https://serper.dev): ``POST {base_url}/search`` with header
``X-API-KEY`` and body ``{"q": query, "num": n}``; hits are ``organic[{title, link, snippet}]``.

Serper has no page-text endpoint in its search API, so :meth:`open_page` is the base class's
None (the env falls back to text it has already seen)."""

from __future__ import annotations

from typing import Any

from tool_envs.search.base import SearchResult
from tool_envs.search.providers._errors import wants_results
from tool_envs.search.providers._httpx import (
    KeyedHTTPProvider,
    request_json,
    require,
)

SERVICE = "Serper"
DEFAULT_BASE_URL = "https://google.serper.dev"
MAX_RESULTS = 100  # Serper's largest `num`


class SerperProvider(KeyedHTTPProvider):
    """Web search through Serper.

    Args:
        api_key: the key; when None it is read from ``$api_key_env`` at first use.
        api_key_env: the environment variable that holds the key.
        base_url: the API root; tests point it at a local server.
        timeout: seconds to wait for one request.
    """

    name = "serper"
    service = SERVICE
    key_header = "X-API-KEY"

    def __init__(
        self,
        api_key: str | None = None,
        api_key_env: str = "SERPER_API_KEY",
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 30.0,
    ):
        super().__init__(api_key, api_key_env, base_url, timeout)

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        if not wants_results(query, max_results):
            return []
        body = {"q": query, "num": min(max_results, MAX_RESULTS)}
        data = request_json(
            self._client_now(), SERVICE, "POST", f"{self.base_url}/search", json=body
        )
        hits = data.get("organic", []) if isinstance(data, dict) else None
        require(isinstance(hits, list), SERVICE, "no 'organic' list")
        return [
            SearchResult(
                title=str(hit.get("title") or ""),
                url=str(hit.get("link") or ""),
                snippet=str(hit.get("snippet") or ""),
            )
            for hit in hits[:max_results]
            if isinstance(hit, dict)
        ]

    def cache_params(self) -> dict[str, Any]:
        return {"base_url": self.base_url}

"""Google results through Serper (https://serper.dev): ``POST {base_url}/search`` with header
``X-API-KEY`` and body ``{"q": query, "num": n}``; hits are ``organic[{title, link, snippet}]``.

Serper has no page-text endpoint in its search API, so :meth:`open_page` is the base class's
None (the env falls back to text it has already seen)."""

from __future__ import annotations

from typing import Any

from tool_envs.search.providers._httpx import KeyedHTTPProvider, request_json, require

SERVICE = "Serper"
DEFAULT_BASE_URL = "https://google.serper.dev"


class SerperProvider(KeyedHTTPProvider):
    """Web search through Serper; the arguments are :class:`KeyedHTTPProvider`'s (the key in
    ``$SERPER_API_KEY`` by default)."""

    name = "serper"
    service = SERVICE
    key_header = "X-API-KEY"
    key_env = "SERPER_API_KEY"
    default_base_url = DEFAULT_BASE_URL
    max_count = 100  # Serper's largest `num`
    result_fields = ("title", "link", "snippet")

    def _hits(self, query: str, count: int) -> list[Any]:
        body = {"q": query, "num": count}
        data = request_json(
            self._client_now(), SERVICE, "POST", f"{self.base_url}/search", json=body
        )
        hits = data.get("organic", []) if isinstance(data, dict) else None
        require(isinstance(hits, list), SERVICE, "no 'organic' list")
        return hits

    def cache_params(self) -> dict[str, Any]:
        return {"base_url": self.base_url}

"""Bing Web Search API v7: ``GET {base_url}/v7.0/search?q=...&count=n`` with header
``Ocp-Apim-Subscription-Key``; hits are ``webPages.value[{name, url, snippet}]`` (the whole
``webPages`` object is absent when nothing matched).

Microsoft retired the public Bing Search APIs in August 2025; the provider stays for
deployments and proxies that still speak this wire format (set ``base_url``)."""

from __future__ import annotations

from typing import Any

from tool_envs.search.providers._httpx import KeyedHTTPProvider, request_json, require

SERVICE = "Bing"
DEFAULT_BASE_URL = "https://api.bing.microsoft.com"


class BingProvider(KeyedHTTPProvider):
    """Web search through Bing Web Search v7.

    Args:
        api_key: the subscription key; when None it is read from ``$api_key_env`` at first use.
        api_key_env: the environment variable that holds the key.
        base_url: the API root (``/v7.0/search`` is appended); tests point it at a local server.
        market: Bing's ``mkt`` parameter (e.g. "en-US"); None lets Bing choose.
        timeout: seconds to wait for one request.
    """

    name = "bing"
    service = SERVICE
    key_header = "Ocp-Apim-Subscription-Key"
    key_env = "BING_API_KEY"
    default_base_url = DEFAULT_BASE_URL
    max_count = 50  # Bing's largest `count`
    result_fields = ("name", "url", "snippet")

    def __init__(
        self,
        api_key: str | None = None,
        api_key_env: str = key_env,
        base_url: str = default_base_url,
        market: str | None = None,
        timeout: float = 30.0,
    ):
        super().__init__(api_key, api_key_env, base_url, timeout)
        self.market = market

    def _hits(self, query: str, count: int) -> list[Any]:
        params: dict[str, Any] = {"q": query, "count": count}
        if self.market:
            params["mkt"] = self.market
        url = f"{self.base_url}/v7.0/search"
        data = request_json(self._client_now(), SERVICE, "GET", url, params=params)
        require(isinstance(data, dict), SERVICE, "the body is not a JSON object")
        pages = data.get("webPages") or {}
        hits = pages.get("value", []) if isinstance(pages, dict) else None
        require(isinstance(hits, list), SERVICE, "'webPages.value' is not a list")
        return hits

    def cache_params(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "market": self.market}

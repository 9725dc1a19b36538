"""Send one JSON request with ``httpx`` and turn every failure into a :class:`SearchError`, so the
plain-HTTP providers (Serper, Bing, custom endpoints) only describe their wire format."""

from __future__ import annotations

import abc
import json
import threading
from typing import Any

import httpx

from tool_envs.errors import EnvConfigError
from tool_envs.search.base import SearchProvider, SearchResult
from tool_envs.search.providers._errors import (
    bad_response_error,
    connection_error,
    error_for_status,
    timeout_error,
    wants_results,
)
from tool_envs.search.providers._keys import resolve_api_key


def request_json(client: httpx.Client, service: str, method: str, url: str, **kwargs: Any) -> Any:
    """``client.request(method, url, **kwargs)`` decoded as JSON, or a mapped SearchError."""
    try:
        response = client.request(method, url, **kwargs)
    except httpx.TimeoutException as exc:
        timeout = client.timeout.read or client.timeout.connect or 0.0
        raise timeout_error(service, timeout) from exc
    except httpx.TransportError as exc:  # connect/read/write/protocol/proxy failures
        raise connection_error(service, exc) from exc
    if response.status_code >= 400:
        raise error_for_status(service, response.status_code, error_detail(response))
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_response_error(service, "the body is not JSON") from exc


def error_detail(response: httpx.Response) -> str:
    """The human-readable part of an error body, whatever convention the service follows."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:200]
    return _find_message(body)[:200]


def _find_message(body: Any) -> str:
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return _find_message(body[0]) if body else ""
    if not isinstance(body, dict):
        return ""
    # Tavily {"detail": {"error"}}, Serper {"message"}, Azure {"error": {"message"}},
    # Bing {"errors": [{"message"}]}, FastAPI {"detail": "..."}.
    for key in ("message", "error", "errors", "detail"):
        if key in body:
            found = _find_message(body[key])
            if found:
                return found
    return ""


def require(condition: bool, service: str, what: str) -> None:
    """Raise a non-retryable SearchError unless a 200 body has the expected shape."""
    if not condition:
        raise bad_response_error(service, what)


class KeyedHTTPProvider(SearchProvider):
    """What Serper and Bing share: an API key sent in one header, on one ``httpx`` client made
    at first use (so building a provider never needs the key, and a warm cache works without it).

    Subclasses set ``service`` (for messages), ``key_header``, ``key_env``,
    ``default_base_url``, ``max_count`` and ``result_fields``, and write ``_hits``: the one
    request their wire format needs.

    Args:
        api_key: the key; when None it is read from ``$api_key_env`` at first use.
        api_key_env: the environment variable that holds the key (None: ``key_env``).
        base_url: the API root (None: ``default_base_url``); tests point it at a local server.
        timeout: seconds to wait for one request.
    """

    service: str
    key_header: str
    key_env: str
    """The environment variable read for the key when no ``api_key_env`` is given."""
    default_base_url: str
    max_count: int
    """The service's largest number of hits per request."""
    result_fields: tuple[str, str, str]
    """The keys of a hit's title, url and snippet."""

    def __init__(
        self,
        api_key: str | None = None,
        api_key_env: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
    ):
        if timeout <= 0:
            raise EnvConfigError(
                f"{type(self).__name__}: timeout must be > 0 seconds, got {timeout!r}"
            )
        self.api_key = api_key
        self.api_key_env = api_key_env or self.key_env
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.timeout = float(timeout)
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        if not wants_results(query, max_results):
            return []
        hits = self._hits(query, min(max_results, self.max_count))
        title, url, snippet = self.result_fields
        return [
            SearchResult(
                title=str(hit.get(title) or ""),
                url=str(hit.get(url) or ""),
                snippet=str(hit.get(snippet) or ""),
            )
            for hit in hits[:max_results]
            if isinstance(hit, dict)
        ]

    @abc.abstractmethod
    def _hits(self, query: str, count: int) -> list[Any]:
        """The service's hits for ``query`` (at most ``count``), the body's shape checked."""

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _client_now(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                key = resolve_api_key(self.api_key, self.api_key_env, self.service)
                self._client = httpx.Client(headers={self.key_header: key}, timeout=self.timeout)
            return self._client

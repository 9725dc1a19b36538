"""Any search service behind a JSON HTTP endpoint, described by a few settings instead of code.

The contract (every name below is a constructor argument):

Request
    ``POST url`` with the JSON body ``{query_param: query, max_results_param: n}`` (the default
    ``{"query": ..., "max_results": ...}``), or with ``method="GET"`` the same pairs as the query
    string. ``max_results_param=None`` leaves the count out (the answer is cut to ``n`` anyway).
    ``headers`` are sent as given, except that ``${NAME}`` in a value is replaced by the
    environment variable ``NAME`` at first use, so a config file can say
    ``{"Authorization": "Bearer ${MY_SEARCH_KEY}"}`` without holding the secret.

Response
    A 2xx JSON body. The list of hits sits at ``results_path``, a dotted path of keys (and list
    indices), e.g. ``"results"`` or ``"data.items"``; ``""`` means the body itself is the list.
    Each hit is a JSON object; ``field_map`` says where each :class:`SearchResult` field lives in
    it, again as dotted paths: ``title``, ``url``, ``snippet`` (default: same-named keys) and
    optionally ``content`` (full page text) and ``score``. A missing field reads as empty.

Errors
    Non-2xx statuses, timeouts and connection failures follow the same table as the built-in
    providers (``_errors``): 429/5xx/timeouts/connection errors are retryable, other 4xx not.
    A 2xx body without a list at ``results_path`` is a non-retryable malformed-response error.

Example, for a service answering ``{"data": {"hits": [{"name", "link", "text"}]}}``::

    HTTPProvider(
        "https://search.example.com/api",
        headers={"X-Key": "${EXAMPLE_KEY}"},
        query_param="q",
        results_path="data.hits",
        field_map={"title": "name", "url": "link", "snippet": "text"},
    )
"""

from __future__ import annotations

import os
import string
import threading
from collections.abc import Mapping
from typing import Any

import httpx

from tool_envs.errors import EnvConfigError
from tool_envs.search.base import SearchProvider, SearchResult
from tool_envs.search.providers._errors import wants_results
from tool_envs.search.providers._httpx import request_json, require

FIELDS = ("title", "url", "snippet", "content", "score")
DEFAULT_FIELD_MAP = {"title": "title", "url": "url", "snippet": "snippet"}
_MISSING = object()


class HTTPProvider(SearchProvider):
    """A custom JSON search endpoint; see the module docstring for the wire contract.

    Args:
        url: the endpoint's full URL.
        method: "POST" (JSON body) or "GET" (query string).
        headers: extra request headers; ``${NAME}`` in a value reads ``$NAME`` at first use.
        query_param: the name under which the query is sent.
        max_results_param: the name under which the wanted count is sent (None: not sent).
        results_path: dotted path to the list of hits in the response ("" = the body).
        field_map: SearchResult field -> dotted path inside one hit (merged over the defaults).
        timeout: seconds to wait for one request.
        service: how errors name the service to the model (default: the URL's host).
    """

    name = "http"

    def __init__(
        self,
        url: str,
        method: str = "POST",
        headers: Mapping[str, str] | None = None,
        query_param: str = "query",
        max_results_param: str | None = "max_results",
        results_path: str = "results",
        field_map: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        service: str | None = None,
    ):
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise EnvConfigError(f"HTTPProvider: url must be an http(s) URL, got {url!r}")
        method = method.upper()
        if method not in ("GET", "POST"):
            raise EnvConfigError(f"HTTPProvider: method must be 'GET' or 'POST', got {method!r}")
        unknown = sorted(set(field_map or {}) - set(FIELDS))
        if unknown:
            raise EnvConfigError(
                f"HTTPProvider: field_map has unknown fields {unknown}; the fields are {FIELDS}"
            )
        if timeout <= 0:
            raise EnvConfigError(f"HTTPProvider: timeout must be > 0 seconds, got {timeout!r}")
        self.url = url
        self.method = method
        self.headers = dict(headers or {})
        self.query_param = query_param
        self.max_results_param = max_results_param
        self.results_path = results_path
        self.field_map = {**DEFAULT_FIELD_MAP, **(field_map or {})}
        self.timeout = float(timeout)
        self.service = service or parsed.host
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        if not wants_results(query, max_results):
            return []
        payload: dict[str, Any] = {self.query_param: query}
        if self.max_results_param:
            payload[self.max_results_param] = max_results
        sent = {"json": payload} if self.method == "POST" else {"params": payload}
        data = request_json(self._client_now(), self.service, self.method, self.url, **sent)
        hits = dig(data, self.results_path)
        require(isinstance(hits, list), self.service, f"no list at {self.results_path!r}")
        return [self._result(hit) for hit in hits[:max_results] if isinstance(hit, dict)]

    def cache_params(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "method": self.method,
            "query_param": self.query_param,
            "max_results_param": self.max_results_param,
            "results_path": self.results_path,
            "field_map": dict(sorted(self.field_map.items())),
        }

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _result(self, hit: dict[str, Any]) -> SearchResult:
        values = {field: dig(hit, path) for field, path in self.field_map.items()}
        text = {f: "" if v is _MISSING or v is None else str(v) for f, v in values.items()}
        score = values.get("score", _MISSING)
        return SearchResult(
            title=text.get("title", ""),
            url=text.get("url", ""),
            snippet=text.get("snippet", ""),
            content=text.get("content") or None,
            score=float(score) if isinstance(score, (int, float)) else None,
        )

    def _client_now(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {name: _expand(name, value) for name, value in self.headers.items()}
                self._client = httpx.Client(headers=headers, timeout=self.timeout)
            return self._client


def dig(data: Any, path: str) -> Any:
    """``data`` at a dotted ``path`` of dict keys and list indices ("" = ``data``), or a
    sentinel when any step is missing."""
    for part in path.split(".") if path else []:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif (
            isinstance(data, list)
            and part.lstrip("-").isdigit()
            and -len(data) <= int(part) < len(data)
        ):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def _expand(name: str, value: str) -> str:
    try:
        return string.Template(value).substitute(os.environ)
    except KeyError as exc:
        raise EnvConfigError(
            f"HTTPProvider: header {name!r} uses ${{{exc.args[0]}}}, but the environment "
            f"variable {exc.args[0]} is not set"
        ) from None
    except ValueError as exc:
        raise EnvConfigError(
            f"HTTPProvider: header {name!r} is not a valid template: {exc}"
        ) from None

"""DuckDuckGo and friends through ``ddgs`` (no API key): ``DDGS().text(query, max_results=n)``
returns ``[{title, href, body}]``; ``DDGS().extract(url)`` fetches a page's text.

``ddgs`` raises ``RatelimitException`` and ``TimeoutException`` (both retryable here) and a plain
``DDGSException`` for everything else, including "No results found." when every engine came back
empty: that one is an empty answer, not a failure. The other plain failures are the engines'
network errors, so they are retryable too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from tool_envs.errors import EnvConfigError, MissingDependencyError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult
from tool_envs.search.providers._errors import wants_results

SERVICE = "DuckDuckGo (ddgs)"
NO_RESULTS = "No results found."


class DDGSLike(Protocol):
    """What the provider needs from a ``ddgs.DDGS`` (tests hand in an object like it)."""

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]: ...


class DDGSProvider(SearchProvider):
    """Keyless web search through the ``ddgs`` metasearch library.

    Args:
        client: a ``ddgs.DDGS`` or an object with the same ``text`` (and optionally ``extract``)
            method; built on first use when None, so importing never touches the network.
        timeout: seconds ``ddgs`` waits for its engines.
        region: ``ddgs`` region, e.g. "us-en" or "wt-wt".
        safesearch: "on", "moderate" or "off".
        backend: ``ddgs`` backend(s), e.g. "auto", "duckduckgo", "bing,brave".
    """

    name = "ddgs"

    def __init__(
        self,
        client: DDGSLike | None = None,
        timeout: int = 5,
        region: str = "us-en",
        safesearch: str = "moderate",
        backend: str = "auto",
    ):
        if safesearch not in ("on", "moderate", "off"):
            raise EnvConfigError(
                f"DDGSProvider: safesearch must be 'on', 'moderate' or 'off', got {safesearch!r}"
            )
        _import_ddgs()  # its exception classes are needed even with an injected client
        self.timeout = timeout
        self.region = region
        self.safesearch = safesearch
        self.backend = backend
        self._client = client
        self._lock = threading.Lock()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        if not wants_results(query, max_results):
            return []
        hits = self._call(
            lambda client: client.text(
                query,
                max_results=max_results,
                region=self.region,
                safesearch=self.safesearch,
                backend=self.backend,
            ),
            gave_up=lambda exc: [] if str(exc) == NO_RESULTS else None,
        )
        if not isinstance(hits, list):
            raise SearchError(f"search failed: {SERVICE} sent a malformed response (not a list)")
        return [
            SearchResult(
                title=str(hit.get("title") or ""),
                url=str(hit.get("href") or hit.get("url") or ""),
                snippet=str(hit.get("body") or ""),
            )
            for hit in hits[:max_results]
            if isinstance(hit, dict)
        ]

    def open_page(self, url: str) -> str | None:
        """The page's text through ``DDGS.extract`` (plain text); None if the client cannot."""
        client = self._client_now()
        if not hasattr(client, "extract"):
            return None
        # A plain DDGSException from extract is a failed fetch (an HTTP error status or a network
        # failure): no text, and the env falls back to what the search results already said.
        page = self._call(lambda c: c.extract(url, fmt="text_plain"), gave_up=lambda exc: {})
        content = page.get("content") if isinstance(page, dict) else None
        if isinstance(content, bytes):
            content = content.decode("utf-8", "replace")
        return content or None

    def cache_params(self) -> dict[str, Any]:
        return {"region": self.region, "safesearch": self.safesearch, "backend": self.backend}

    def _client_now(self) -> Any:
        with self._lock:
            if self._client is None:
                from ddgs import DDGS

                self._client = DDGS(timeout=self.timeout)
            return self._client

    def _call(self, send: Callable[[Any], Any], gave_up: Callable[[Exception], Any]) -> Any:
        """``send(client)``, with ddgs' errors mapped; ``gave_up(exc)`` turns a plain
        DDGSException into an answer (or returns None to make it a retryable SearchError)."""
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        client = self._client_now()
        try:
            return send(client)
        except RatelimitException as exc:
            raise SearchError(
                f"search failed: rate limited by {SERVICE}, try again later", retryable=True
            ) from exc
        except TimeoutException as exc:
            raise SearchError(
                f"search failed: {SERVICE} did not answer in time, try again later",
                retryable=True,
            ) from exc
        except DDGSException as exc:
            answer = gave_up(exc)
            if answer is not None:
                return answer
            raise SearchError(
                f"search failed: {SERVICE} engines failed ({exc}), try again later",
                retryable=True,
            ) from exc


def _import_ddgs() -> None:
    try:
        import ddgs  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("ddgs", "search", "DDGSProvider") from exc

"""Tavily through its official client, ``tavily-python``: ``POST /search`` for hits and
``POST /extract`` for a page's full text, with ``Authorization: Bearer <key>``.

The client raises its own exception per status (``InvalidAPIKeyError`` for 401,
``UsageLimitExceededError`` for 429, ``ForbiddenError`` for 403/432/433, ``BadRequestError`` for
400, ``requests.HTTPError`` for 5xx, ``tavily.errors.TimeoutError`` for timeouts and requests' own
``ConnectionError``); this module maps each to a :class:`SearchError` through the shared table in
``_errors``. ``ForbiddenError`` does not say which of 403/432/433 it was, so the session we hand the
client records the last status per thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal

from tool_envs.errors import EnvConfigError, MissingDependencyError
from tool_envs.search.base import SearchProvider, SearchResult
from tool_envs.search.providers._errors import (
    bad_response_error,
    connection_error,
    error_for_status,
    timeout_error,
    wants_results,
)
from tool_envs.search.providers._keys import resolve_api_key

if TYPE_CHECKING:
    from tavily import TavilyClient

SERVICE = "Tavily"
DEFAULT_BASE_URL = "https://api.tavily.com"
MAX_RESULTS = 20  # Tavily's documented upper bound for max_results
SEARCH_DEPTHS = ("basic", "advanced", "fast", "ultra-fast")
RAW_FORMATS = ("markdown", "text")

RawContent = bool | Literal["markdown", "text"]


class TavilyProvider(SearchProvider):
    """Web search through Tavily.

    Args:
        api_key: the key; when None it is read from ``$api_key_env`` at first use, so building
            the provider never needs one (a warm cache may answer every query).
        api_key_env: the environment variable that holds the key.
        base_url: the API root (``https://api.tavily.com`` when None); tests point it at a
            local server that speaks Tavily's wire protocol.
        search_depth: Tavily's ``search_depth`` ("basic" costs 1 credit, "advanced" 2).
        include_raw_content: ask for each hit's full page text (True, "markdown" or "text"); it
            lands in :attr:`SearchResult.content`, so the env can open pages without /extract.
        timeout: seconds to wait for one request.
    """

    name = "tavily"

    def __init__(
        self,
        api_key: str | None = None,
        api_key_env: str = "TAVILY_API_KEY",
        base_url: str | None = None,
        search_depth: str = "basic",
        include_raw_content: RawContent = False,
        timeout: float = 30.0,
    ):
        if search_depth not in SEARCH_DEPTHS:
            raise EnvConfigError(
                f"TavilyProvider: search_depth must be one of {SEARCH_DEPTHS}, got {search_depth!r}"
            )
        if not (isinstance(include_raw_content, bool) or include_raw_content in RAW_FORMATS):
            raise EnvConfigError(
                "TavilyProvider: include_raw_content must be True, False, 'markdown' or "
                f"'text', got {include_raw_content!r}"
            )
        if timeout <= 0:
            raise EnvConfigError(f"TavilyProvider: timeout must be > 0 seconds, got {timeout!r}")
        _import_tavily()  # fail now, with the pip extra, if the client is missing
        self.api_key = api_key
        self.api_key_env = api_key_env
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.search_depth = search_depth
        self.include_raw_content = include_raw_content
        self.timeout = float(timeout)
        self._client: TavilyClient | None = None
        self._lock = threading.Lock()
        self._status = threading.local()  # last HTTP status seen by this thread

    # -- SearchProvider ----------------------------------------------------------------------

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        if not wants_results(query, max_results):
            return []
        kwargs: dict[str, Any] = {
            "search_depth": self.search_depth,
            "max_results": min(max_results, MAX_RESULTS),
            "timeout": self.timeout,
        }
        if self.include_raw_content:
            kwargs["include_raw_content"] = self.include_raw_content
        body = self._call(lambda client: client.search(query, **kwargs))
        hits = body.get("results") if isinstance(body, dict) else None
        if not isinstance(hits, list):
            raise bad_response_error(SERVICE, "no 'results' list")
        return [self._result(hit) for hit in hits[:max_results] if isinstance(hit, dict)]

    def open_page(self, url: str) -> str | None:
        """The page's text from Tavily's /extract; None when Tavily could not extract it."""
        body = self._call(lambda client: client.extract(url, timeout=self.timeout))
        pages = body.get("results") if isinstance(body, dict) else None
        if not isinstance(pages, list):
            raise bad_response_error(SERVICE, "no 'results' list in the /extract answer")
        pages = [p for p in pages if isinstance(p, dict) and p.get("raw_content")]
        page = next((p for p in pages if p.get("url") == url), pages[0] if pages else None)
        return None if page is None else str(page["raw_content"])

    def cache_params(self) -> dict[str, Any]:
        return {
            "search_depth": self.search_depth,
            "include_raw_content": self.include_raw_content,
            "base_url": self.base_url,
        }

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.session.close()
                self._client = None

    # -- internals ---------------------------------------------------------------------------

    def _result(self, hit: dict[str, Any]) -> SearchResult:
        score = hit.get("score")
        raw = hit.get("raw_content") if self.include_raw_content else None
        return SearchResult(
            title=str(hit.get("title") or ""),
            url=str(hit.get("url") or ""),
            snippet=str(hit.get("content") or ""),
            content=str(raw) if raw else None,
            score=float(score) if isinstance(score, (int, float)) else None,
        )

    def _client_now(self) -> TavilyClient:
        """The client, built at first use (when the key must exist) and shared by threads."""
        with self._lock:
            if self._client is None:
                import requests
                from tavily import TavilyClient

                key = resolve_api_key(self.api_key, self.api_key_env, SERVICE)
                session = requests.Session()
                session.hooks["response"].append(self._record_status)
                self._client = TavilyClient(
                    api_key=key, api_base_url=self.base_url, session=session
                )
            return self._client

    def _record_status(self, response: Any, *args: Any, **kwargs: Any) -> None:
        self._status.code = response.status_code

    def _call(self, send: Any) -> Any:
        """Run ``send(client)`` and map whatever the client raises to a SearchError."""
        import requests
        from tavily import errors

        client = self._client_now()
        self._status.code = None
        try:
            return send(client)
        except errors.InvalidAPIKeyError as exc:
            raise error_for_status(SERVICE, 401, str(exc)) from exc
        except errors.UsageLimitExceededError as exc:  # also the keyless-limit subclass
            raise error_for_status(SERVICE, 429, str(exc)) from exc
        except errors.ForbiddenError as exc:  # 403, 432 or 433
            raise error_for_status(SERVICE, self._status.code or 403, str(exc)) from exc
        except errors.BadRequestError as exc:
            raise error_for_status(SERVICE, 400, str(exc)) from exc
        except errors.TimeoutError as exc:
            raise timeout_error(SERVICE, self.timeout) from exc
        except requests.HTTPError as exc:  # every other status, 5xx included
            status = exc.response.status_code if exc.response is not None else 500
            raise error_for_status(SERVICE, status, _reason(exc)) from exc
        except requests.JSONDecodeError as exc:  # a 200 whose body is not JSON
            raise bad_response_error(SERVICE, "the body is not JSON") from exc
        except requests.RequestException as exc:  # refused, reset, DNS, ...
            raise connection_error(SERVICE, exc) from exc


def _reason(exc: Any) -> str:
    response = exc.response
    if response is None:
        return ""
    try:
        body = response.json()
        detail = body.get("detail", {})
        return str(detail.get("error", "") if isinstance(detail, dict) else detail)
    except Exception:
        return response.reason or ""


def _import_tavily() -> None:
    try:
        import tavily  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("tavily-python", "search", "TavilyProvider") from exc

"""Search services on 127.0.0.1 that speak the real wire protocols, with fault injection.

- :func:`tavily_server`: Tavily's ``POST /search`` and ``POST /extract`` with bearer auth, so the
  real ``tavily-python`` client (``TavilyClient(api_base_url=server.base_url)``) talks to it;
- :func:`serper_server`: Serper's ``POST /search`` (``X-API-KEY``, ``{q, num}`` ->
  ``organic[{title, link, snippet}]``);
- :func:`bing_server`: Bing Web Search v7 ``GET /v7.0/search?q=&count=``
  (``Ocp-Apim-Subscription-Key`` -> ``webPages.value[{name, url, snippet}]``);
- :func:`json_server`: any JSON answer, for custom endpoints.

All answer from a small in-memory document list (``{"title", "url", "content"}`` dicts, ranked
by word overlap with the query) and record every request in ``server.requests``. Faults, in the
order a request meets them (each is an attribute, so a test may change it between calls):

- ``delay_s`` / ``delay_first``: sleep ``delay_s`` before answering the first ``delay_first``
  requests (None: all of them), to outlast a client's timeout;
- a wrong key: answered 401 (403 for Serper, as Serper does) in the service's error format;
- ``fail_first`` / ``fail_status``: answer the next ``fail_first`` requests with ``fail_status``.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from http_helpers import send_json, serving

TAVILY_KEY = "tvly-test-key"
SERPER_KEY = "serper-test-key"
BING_KEY = "bing-test-key"
SNIPPET_CHARS = 120

DOCUMENTS: list[dict[str, str]] = [
    {
        "title": "Eiffel Tower",
        "url": "https://example.org/eiffel-tower",
        "content": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was "
        "completed in 1889 and is 330 metres tall. It was designed by the company of engineer "
        "Gustave Eiffel for the 1889 World's Fair.",
    },
    {
        "title": "Statue of Liberty",
        "url": "https://example.org/statue-of-liberty",
        "content": "The Statue of Liberty stands on Liberty Island in New York Harbor. It was a "
        "gift from the people of France and was dedicated in 1886.",
    },
    {
        "title": "Paris",
        "url": "https://example.org/paris",
        "content": "Paris is the capital and largest city of France, on the river Seine. The "
        "Eiffel Tower and the Louvre are among its landmarks.",
    },
    {
        "title": "Mount Everest",
        "url": "https://example.org/everest",
        "content": "Mount Everest is Earth's highest mountain above sea level, 8,849 metres, in "
        "the Himalayas on the border of Nepal and China.",
    },
    {
        "title": "River Seine",
        "url": "https://example.org/seine",
        "content": "The Seine is a 777-kilometre river in northern France that flows through "
        "Paris into the English Channel.",
    },
]


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


Answer = Callable[[Recorded], tuple[int, Any]]
ErrorBody = Callable[[int, str], Any]


def rank(documents: list[dict[str, str]], query: str) -> list[tuple[float, dict[str, str]]]:
    """Documents sharing words with ``query``, best first, with a score in (0, 1]: the share of
    query words found in the text, plus the share found in the title (weighted like the text)."""
    words = set(re.findall(r"\w+", query.lower()))
    scored = []
    for index, doc in enumerate(documents):
        title = set(re.findall(r"\w+", doc["title"].lower()))
        text = set(re.findall(r"\w+", doc["content"].lower()))
        overlap = len(words & text) + len(words & title)
        if overlap:
            scored.append((overlap / (2 * len(words)), -index, doc))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [(round(score, 4), doc) for score, _, doc in scored]


class JSONServer(ThreadingHTTPServer):
    """A JSON-over-HTTP server in a thread; ``answer`` makes the reply to each good request."""

    daemon_threads = True

    def __init__(
        self,
        answer: Answer,
        *,
        authorized: Callable[[Recorded], bool] = lambda request: True,
        auth_status: int = 401,
        error_body: ErrorBody = lambda status, message: {"error": message},
        fail_first: int = 0,
        fail_status: int = 500,
        delay_s: float | Callable[[], float] = 0.0,
        delay_first: int | None = None,
    ):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.authorized = authorized
        self.auth_status = auth_status
        self.error_body = error_body
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.delay_s = delay_s
        self.delay_first = delay_first
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # set at shutdown: delayed handlers stop sleeping

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def paths(self) -> list[str]:
        """The paths of all requests so far, in arrival order."""
        with self.lock:
            return [r.path for r in self.requests]

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is part of the tests

    def reply(self, request: Recorded) -> tuple[int, Any]:
        seconds = self.delay_s() if callable(self.delay_s) else self.delay_s  # drawn per request
        with self.lock:
            self.requests.append(request)
            delay = seconds > 0 and (self.delay_first is None or self.delay_first > 0)
            if delay and self.delay_first is not None:
                self.delay_first -= 1
        if delay:
            self.release.wait(seconds)
        if not self.authorized(request):
            return self.auth_status, self.error_body(self.auth_status, "invalid API key")
        with self.lock:
            failing = self.fail_first > 0
            self.fail_first -= failing
        if failing:
            return self.fail_status, self.error_body(self.fail_status, "injected failure")
        return self.answer(request)


class _Handler(BaseHTTPRequestHandler):
    server: JSONServer

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            self._send(400, {"error": "body is not JSON"})
            return
        request = Recorded(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        status, answer = self.server.reply(request)
        self._send(status, answer)

    def _send(self, status: int, body: Any) -> None:
        send_json(self, status, body)


@contextmanager
def json_server(answer: Answer, **options: Any) -> Iterator[JSONServer]:
    """Run a :class:`JSONServer` for the duration of a ``with`` block."""
    server = JSONServer(answer, **options)
    with serving(server):
        yield server


def provider_server(
    answer: Answer, *, fail_status: int = 429, **options: Any
) -> AbstractContextManager[JSONServer]:
    """A search provider's API: ``answer``, its auth check and error shape in ``options``, and
    the faults every provider server takes (``fail_first``, ``fail_status``, ``delay_s``,
    ``delay_first``: :class:`JSONServer`'s; a provider's failure is a rate limit, 429, unless
    told)."""
    return json_server(answer, fail_status=fail_status, **options)


# -- Tavily ----------------------------------------------------------------------------------------

TAVILY_DEPTHS = {"basic", "advanced", "fast", "ultra-fast"}


def tavily_answer(documents: list[dict[str, str]]) -> Answer:
    """Tavily's /search and /extract over ``documents``, with Tavily's 400 checks."""

    def answer(request: Recorded) -> tuple[int, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST":
            return 405, {"detail": {"error": "Method Not Allowed"}}
        if request.path == "/search":
            return _tavily_search(documents, body)
        if request.path == "/extract":
            return _tavily_extract(documents, body)
        return 404, {"detail": {"error": f"no route {request.path}"}}

    return answer


def _tavily_search(documents: list[dict[str, str]], body: dict[str, Any]) -> tuple[int, Any]:
    query = body.get("query")
    max_results = body.get("max_results", 5)
    if not isinstance(query, str) or not query.strip():
        return 400, {"detail": {"error": "Query is missing."}}
    if not isinstance(max_results, int) or not 0 <= max_results <= 20:
        return 400, {"detail": {"error": "max_results must be between 0 and 20."}}
    if body.get("search_depth", "basic") not in TAVILY_DEPTHS:
        return 400, {"detail": {"error": "Invalid search depth."}}
    raw = bool(body.get("include_raw_content"))
    results = [
        {
            "title": doc["title"],
            "url": doc["url"],
            "content": doc["content"][:SNIPPET_CHARS],
            "score": score,
            "raw_content": doc["content"] if raw else None,
        }
        for score, doc in rank(documents, query)[:max_results]
    ]
    return 200, {
        "query": query,
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": results,
        "response_time": 0.01,
        "request_id": str(uuid.uuid4()),
    }


def _tavily_extract(documents: list[dict[str, str]], body: dict[str, Any]) -> tuple[int, Any]:
    urls = body.get("urls")
    urls = [urls] if isinstance(urls, str) else urls
    if not urls or not all(isinstance(u, str) for u in urls):
        return 400, {"detail": {"error": "urls is missing."}}
    by_url = {doc["url"]: doc for doc in documents}
    return 200, {
        "results": [
            {"url": u, "raw_content": by_url[u]["content"], "images": []}
            for u in urls
            if u in by_url
        ],
        "failed_results": [
            {"url": u, "error": "Failed to fetch url"} for u in urls if u not in by_url
        ],
        "response_time": 0.01,
        "request_id": str(uuid.uuid4()),
    }


def tavily_server(
    documents: list[dict[str, str]] | None = None, *, api_key: str = TAVILY_KEY, **faults: Any
) -> AbstractContextManager[JSONServer]:
    """A Tavily-compatible API over ``documents`` (default :data:`DOCUMENTS`); ``delay_s`` is
    each answer's latency, or a function drawing it per request."""
    return provider_server(
        tavily_answer(DOCUMENTS if documents is None else documents),
        authorized=lambda r: r.headers.get("authorization") == f"Bearer {api_key}",
        error_body=lambda status, message: {"detail": {"error": message}},
        **faults,
    )


# -- Serper ----------------------------------------------------------------------------------------


def serper_answer(documents: list[dict[str, str]]) -> Answer:
    def answer(request: Recorded) -> tuple[int, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST" or request.path != "/search":
            return 404, {"message": "Not found", "statusCode": 404}
        query, num = body.get("q"), body.get("num", 10)
        if not isinstance(query, str) or not query or not isinstance(num, int) or num > 100:
            return 400, {"message": "Query not allowed.", "statusCode": 400}
        organic = [
            {
                "title": doc["title"],
                "link": doc["url"],
                "snippet": doc["content"][:SNIPPET_CHARS],
                "position": position,
            }
            for position, (_, doc) in enumerate(rank(documents, query)[:num], start=1)
        ]
        return 200, {
            "searchParameters": {"q": query, "type": "search", "num": num, "engine": "google"},
            "organic": organic,
            "credits": 1,
        }

    return answer


def serper_server(
    documents: list[dict[str, str]] | None = None, *, api_key: str = SERPER_KEY, **faults: Any
) -> AbstractContextManager[JSONServer]:
    """A Serper-compatible API over ``documents`` (default :data:`DOCUMENTS`)."""
    return provider_server(
        serper_answer(DOCUMENTS if documents is None else documents),
        authorized=lambda r: r.headers.get("x-api-key") == api_key,
        auth_status=403,
        error_body=lambda status, message: {"message": message, "statusCode": status},
        **faults,
    )


# -- Bing ------------------------------------------------------------------------------------------


def bing_answer(documents: list[dict[str, str]]) -> Answer:
    def answer(request: Recorded) -> tuple[int, Any]:
        if request.method != "GET" or request.path != "/v7.0/search":
            return 404, {"error": {"code": "404", "message": "Resource not found"}}
        query = request.query.get("q", [""])[0]
        count = int(request.query.get("count", ["10"])[0])
        if not query or count > 50:
            return 400, {
                "_type": "ErrorResponse",
                "errors": [{"code": "InvalidRequest", "message": "Parameter has invalid value."}],
            }
        hits = rank(documents, query)[:count]
        body: dict[str, Any] = {"_type": "SearchResponse", "queryContext": {"originalQuery": query}}
        if hits:  # Bing leaves webPages out entirely when nothing matched
            body["webPages"] = {
                "totalEstimatedMatches": len(hits),
                "value": [
                    {
                        "id": f"https://api.bing.microsoft.com/api/v7/#WebPages.{i}",
                        "name": doc["title"],
                        "url": doc["url"],
                        "displayUrl": doc["url"],
                        "snippet": doc["content"][:SNIPPET_CHARS],
                    }
                    for i, (_, doc) in enumerate(hits)
                ],
            }
        return 200, body

    return answer


def bing_server(
    documents: list[dict[str, str]] | None = None, *, api_key: str = BING_KEY, **faults: Any
) -> AbstractContextManager[JSONServer]:
    """A Bing Web Search v7-compatible API over ``documents`` (default :data:`DOCUMENTS`)."""
    return provider_server(
        bing_answer(DOCUMENTS if documents is None else documents),
        authorized=lambda r: r.headers.get("ocp-apim-subscription-key") == api_key,
        error_body=lambda status, message: {"error": {"code": str(status), "message": message}},
        **faults,
    )

"""Search providers against local servers that speak each service's wire protocol, the retry and
rate-limit wrapper, and the provider registry.

Backoff values are tiny (backoff_initial=0.01) and the timeout test waits 0.2 s, so the whole file
runs in a few seconds; nothing here reaches the network.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from search_helpers import (
    BING_KEY,
    DOCUMENTS,
    SERPER_KEY,
    TAVILY_KEY,
    Recorded,
    bing_server,
    json_server,
    serper_server,
    tavily_server,
)
from thread_helpers import run_in_threads

from tool_envs.errors import EnvConfigError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult
from tool_envs.search.providers import PROVIDERS, build_provider, provider_class
from tool_envs.search.providers.bing import BingProvider
from tool_envs.search.providers.ddgs import DDGSProvider
from tool_envs.search.providers.http import HTTPProvider
from tool_envs.search.providers.serper import SerperProvider
from tool_envs.search.providers.tavily import TavilyProvider
from tool_envs.search.resilience import RateLimiter, ResilientProvider

FAST = {"backoff_initial": 0.01, "backoff_max": 0.05}  # keeps retry tests in milliseconds


def tavily(server: Any, **kwargs: Any) -> TavilyProvider:
    return TavilyProvider(api_key=TAVILY_KEY, base_url=server.base_url, **kwargs)


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# -- Tavily through the real tavily-python client -------------------------------------------------


def test_tavily_search_maps_results_and_sends_the_documented_request():
    with tavily_server() as server:
        provider = tavily(server)
        results = provider.search("Eiffel Tower in Paris", 2)
        provider.close()
    assert [r.title for r in results] == ["Eiffel Tower", "Paris"]
    top = results[0]
    assert top.url == "https://example.org/eiffel-tower"
    assert top.snippet.startswith("The Eiffel Tower is a wrought-iron lattice tower")
    assert top.content is None  # raw content was not asked for
    assert isinstance(top.score, float) and 0 < top.score <= 1
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["authorization"] == f"Bearer {TAVILY_KEY}"
    assert request.body["query"] == "Eiffel Tower in Paris"
    assert request.body["max_results"] == 2
    assert request.body["search_depth"] == "basic"
    assert "include_raw_content" not in request.body


def test_tavily_raw_content_becomes_result_content():
    with tavily_server() as server:
        results = tavily(server, include_raw_content=True, search_depth="advanced").search(
            "Mount Everest", 5
        )
    assert results[0].title == "Mount Everest"
    assert results[0].content == DOCUMENTS[3]["content"]
    assert server.requests[0].body["include_raw_content"] is True
    assert server.requests[0].body["search_depth"] == "advanced"


def test_tavily_max_results_is_clamped_to_the_api_limit():
    with tavily_server() as server:
        results = tavily(server).search("France", 50)  # Tavily answers 400 above 20
    assert len(results) == 4
    assert server.requests[0].body["max_results"] == 20


def test_tavily_open_page_uses_extract():
    with tavily_server() as server:
        provider = tavily(server)
        text = provider.open_page("https://example.org/seine")
        missing = provider.open_page("https://example.org/nowhere")
    assert text == DOCUMENTS[4]["content"]
    assert missing is None  # Tavily lists it under failed_results; the env falls back
    assert [r.path for r in server.requests] == ["/extract", "/extract"]
    assert server.requests[0].body["urls"] == "https://example.org/seine"
    assert server.requests[0].headers["authorization"] == f"Bearer {TAVILY_KEY}"


def test_tavily_bad_key_is_a_clear_non_retryable_error():
    with tavily_server() as server:
        provider = ResilientProvider(
            TavilyProvider(api_key="tvly-wrong", base_url=server.base_url), **FAST
        )
        with pytest.raises(SearchError) as caught:
            provider.search("Paris", 3)
    error = caught.value
    assert (error.retryable, error.status) == (False, 401)
    assert "Tavily rejected the API key (HTTP 401)" in error.message
    assert len(server.requests) == 1  # not retried
    assert provider.stats["attempts"] == 1 and provider.stats["failures"] == 1


@pytest.mark.parametrize(
    ("status", "retryable", "words"),
    [
        (400, False, "rejected the request (HTTP 400)"),
        (403, False, "HTTP 403"),
        (404, False, "rejected the request (HTTP 404)"),
        (429, True, "rate limited by Tavily (HTTP 429)"),
        (432, False, "usage limit is spent (HTTP 432)"),
        (433, False, "usage limit is spent (HTTP 433)"),
        (500, True, "server error (HTTP 500)"),
        (503, True, "server error (HTTP 503)"),
    ],
)
def test_tavily_status_mapping(status: int, retryable: bool, words: str):
    with (
        tavily_server(fail_first=1, fail_status=status) as server,
        pytest.raises(SearchError) as caught,
    ):
        tavily(server).search("Paris", 3)
    assert caught.value.status == status
    assert caught.value.retryable is retryable
    assert caught.value.message.startswith("search failed: ")
    assert words in caught.value.message


def test_tavily_429_is_retried_until_it_succeeds():
    with tavily_server(fail_first=2, fail_status=429) as server:
        provider = ResilientProvider(tavily(server), max_retries=3, **FAST)
        results = provider.search("Statue of Liberty", 1)
    assert results[0].title == "Statue of Liberty"
    assert len(server.requests) == 3
    assert provider.stats == {
        "calls": 1,
        "attempts": 3,
        "retries": 2,
        "failures": 0,
        "throttled_s": 0.0,
    }


def test_tavily_persistent_500_gives_up_after_max_retries_plus_one_attempts():
    with tavily_server(fail_first=100, fail_status=500) as server:
        provider = ResilientProvider(tavily(server), max_retries=2, **FAST)
        with pytest.raises(SearchError) as caught:
            provider.search("Paris", 3)
    assert len(server.requests) == 3
    assert caught.value.retryable and caught.value.status == 500
    assert caught.value.message.endswith("(gave up after 3 attempts)")
    assert provider.stats["attempts"] == 3 and provider.stats["retries"] == 2
    assert provider.stats["failures"] == 1


def test_tavily_timeout_is_retryable_and_a_retry_succeeds():
    # The slow answer comes far past the timeout, and the timeout leaves a loaded machine's
    # prompt answers room (0.2 s timed out healthy requests when the cores were busy).
    with tavily_server(delay_s=30.0, delay_first=1) as server:
        with pytest.raises(SearchError) as caught:
            tavily(server, timeout=2.0).search("Paris", 3)
        assert caught.value.retryable and caught.value.status is None
        assert "Tavily did not answer within 2 s" in caught.value.message

        server.delay_first = 1
        provider = ResilientProvider(tavily(server, timeout=2.0), max_retries=2, **FAST)
        results = provider.search("Paris", 3)
    assert results[0].title == "Paris"
    assert len(server.requests) == 3
    assert provider.stats["attempts"] == 2 and provider.stats["retries"] == 1


def test_tavily_connection_refused_is_retryable():
    provider = TavilyProvider(api_key=TAVILY_KEY, base_url=closed_port_url(), timeout=2)
    with pytest.raises(SearchError) as caught:
        provider.search("Paris", 3)
    assert caught.value.retryable
    assert "could not reach Tavily (ConnectionError)" in caught.value.message


def test_tavily_key_is_read_from_the_named_env_var_at_first_use(monkeypatch):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with tavily_server() as server:
        provider = TavilyProvider(base_url=server.base_url)  # building needs no key
        with pytest.raises(EnvConfigError, match="set the TAVILY_API_KEY environment variable"):
            provider.search("Paris", 3)
        assert server.requests == []

        monkeypatch.setenv("MY_TAVILY", TAVILY_KEY)
        other = TavilyProvider(api_key_env="MY_TAVILY", base_url=server.base_url)
        assert other.search("Paris", 1)[0].title == "Paris"


def test_tavily_rejects_bad_settings_and_empty_queries():
    with pytest.raises(EnvConfigError, match="search_depth must be one of"):
        TavilyProvider(api_key="k", search_depth="deep")
    with pytest.raises(EnvConfigError, match="include_raw_content"):
        TavilyProvider(api_key="k", include_raw_content="html")  # type: ignore[arg-type]
    provider = TavilyProvider(api_key="k", base_url=closed_port_url())
    with pytest.raises(SearchError, match="the query is empty") as caught:
        provider.search("   ", 3)
    assert not caught.value.retryable
    assert provider.search("Paris", 0) == []


def test_tavily_cache_params_name_what_changes_answers():
    provider = TavilyProvider(api_key="k", search_depth="advanced", include_raw_content="text")
    assert provider.cache_params() == {
        "search_depth": "advanced",
        "include_raw_content": "text",
        "base_url": "https://api.tavily.com",
    }
    assert "k" not in str(provider.cache_params().values())  # the key never enters a cache key


# -- ResilientProvider ---------------------------------------------------------------------------


class Scripted(SearchProvider):
    """A provider that raises the scripted errors first, then answers (a stand-in for the
    interface only: every wire-level path above uses the real clients)."""

    name = "scripted"

    def __init__(self, errors: list[BaseException]):
        self.errors = list(errors)
        self.calls: list[float] = []
        self.closed = False
        self.lock = threading.Lock()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        with self.lock:
            self.calls.append(time.monotonic())
            error = self.errors.pop(0) if self.errors else None
        if error is not None:
            raise error
        return [SearchResult(title=query, url="https://example.org", snippet="")]

    def cache_params(self) -> dict[str, Any]:
        return {"depth": 1}

    def close(self) -> None:
        self.closed = True


def test_backoff_is_exponential_with_jitter_and_capped():
    sleeps: list[float] = []
    errors = [SearchError("busy", retryable=True, status=503) for _ in range(3)]
    provider = ResilientProvider(
        Scripted(errors), max_retries=3, backoff_initial=0.5, backoff_max=1.0, sleep=sleeps.append
    )
    assert provider.search("q", 1)[0].title == "q"
    assert len(sleeps) == 3
    assert 0.5 <= sleeps[0] <= 1.0  # 0.5 * 2**0 plus up to 0.5 of jitter
    assert sleeps[1:] == [1.0, 1.0]  # 1.0 * 2**n plus jitter, capped at backoff_max


def test_non_retryable_errors_and_bugs_are_not_retried():
    bad = Scripted([SearchError("bad request", retryable=False, status=400)])
    provider = ResilientProvider(bad, **FAST)
    with pytest.raises(SearchError) as caught:
        provider.search("q", 1)
    assert caught.value.message == "bad request"  # a single attempt: the message is untouched
    assert provider.stats["attempts"] == 1

    buggy = ResilientProvider(Scripted([KeyError("bug")]), **FAST)
    with pytest.raises(KeyError):
        buggy.search("q", 1)
    assert buggy.stats["attempts"] == 1 and buggy.stats["failures"] == 1


def test_retry_then_non_retryable_error_reports_the_attempts():
    errors = [SearchError("busy", retryable=True), SearchError("bad key", status=401)]
    provider = ResilientProvider(Scripted(errors), **FAST)
    with pytest.raises(SearchError) as caught:
        provider.search("q", 1)
    assert caught.value.message == "bad key (gave up after 2 attempts)"
    assert (caught.value.retryable, caught.value.status) == (False, 401)


def test_wrapper_delegates_name_cache_params_and_close():
    inner = Scripted([])
    provider = ResilientProvider(inner)
    assert provider.name == "scripted"
    assert provider.cache_params() == {"depth": 1}
    assert provider.open_page("https://example.org") is None
    provider.close()
    assert inner.closed


def test_rate_limiter_spaces_calls_on_a_fake_clock():
    now = [100.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(600, clock=lambda: now[0], sleep=sleep)  # one call per 0.1 s
    waits = [limiter.acquire() for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.1, 0.1, 0.1])
    now[0] += 5.0  # idle for a while: the next call goes at once, no burst credit saved
    assert limiter.acquire() == 0.0
    assert limiter.acquire() == pytest.approx(0.1)

    # The wrapper spaces every attempt, retries included, and adds up the waiting.
    errors = [SearchError("busy", retryable=True)]
    provider = ResilientProvider(
        Scripted(errors),
        requests_per_minute=600,
        backoff_initial=0,
        clock=lambda: now[0],
        sleep=sleep,
    )
    provider.search("a", 1)  # fails, then retried 0.1 s later
    provider.search("b", 1)
    assert provider.stats["attempts"] == 3
    assert provider.stats["throttled_s"] == pytest.approx(0.2)


def test_rate_limit_spaces_concurrent_calls_in_real_time():
    inner = Scripted([])
    provider = ResilientProvider(inner, requests_per_minute=1200)  # 0.05 s apart
    threads = [threading.Thread(target=provider.search, args=(f"q{i}", 1)) for i in range(8)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The i-th call to start cannot start before the i-th slot, start + i * 0.05 (a thread
    # that oversleeps shortens the gap after it, so the gaps themselves are not bounded).
    starts = sorted(inner.calls)
    assert all(t - start >= i * 0.05 - 1e-3 for i, t in enumerate(starts))
    assert provider.stats["calls"] == 8 and provider.stats["attempts"] == 8


def test_concurrent_retries_share_one_wrapper_safely():
    with tavily_server(fail_first=6, fail_status=429) as server:
        provider = ResilientProvider(tavily(server), max_retries=6, **FAST)
        results: list[list[SearchResult]] = []
        lock = threading.Lock()

        def work(i: int) -> None:
            found = provider.search("Paris France", 2)
            with lock:
                results.append(found)

        run_in_threads(work, 8)
    assert len(results) == 8 and all(r[0].title == "Paris" for r in results)
    assert len(server.requests) == 14
    assert provider.stats["attempts"] == 14 and provider.stats["retries"] == 6


def test_wrapper_rejects_bad_settings():
    with pytest.raises(EnvConfigError, match="max_retries"):
        ResilientProvider(Scripted([]), max_retries=-1)
    with pytest.raises(EnvConfigError, match="backoff_initial"):
        ResilientProvider(Scripted([]), backoff_initial=2.0, backoff_max=1.0)
    with pytest.raises(EnvConfigError, match="requests_per_minute"):
        ResilientProvider(Scripted([]), requests_per_minute=0)


# -- Serper ---------------------------------------------------------------------------------------


def test_serper_search_maps_organic_results():
    with serper_server() as server:
        results = SerperProvider(api_key=SERPER_KEY, base_url=server.base_url).search(
            "river Seine", 2
        )
    assert [r.title for r in results] == ["River Seine", "Paris"]
    assert results[0].url == "https://example.org/seine"
    assert results[0].snippet.startswith("The Seine is a 777-kilometre river")
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["x-api-key"] == SERPER_KEY
    assert request.body == {"q": "river Seine", "num": 2}


_KEYED = {
    "serper": (serper_server, SerperProvider, SERPER_KEY),
    "bing": (bing_server, BingProvider, BING_KEY),
}


@pytest.mark.parametrize(
    ("provider", "fault", "status", "retryable", "detail"),
    [
        ("serper", {"api_key": "other"}, 403, False, "Serper"),
        ("serper", {"fail_first": 1, "fail_status": 429}, 429, True, "Serper"),
        ("serper", {"fail_first": 1, "fail_status": 500}, 500, True, "Serper"),
        # Bing's details come from its own error body
        ("bing", {"api_key": "other"}, 401, False, "invalid API key"),
        ("bing", {"fail_first": 1, "fail_status": 429}, 429, True, "injected failure"),
        ("bing", {"fail_first": 1, "fail_status": 503}, 503, True, "injected failure"),
    ],
)
def test_keyed_providers_map_statuses(
    provider: str, fault: dict[str, Any], status: int, retryable: bool, detail: str
):
    server_of, provider_class, key = _KEYED[provider]
    with server_of(**fault) as server, pytest.raises(SearchError) as caught:
        provider_class(api_key=key, base_url=server.base_url).search("Paris", 3)
    assert (caught.value.status, caught.value.retryable) == (status, retryable)
    assert detail in caught.value.message


def test_serper_timeout_and_missing_key(monkeypatch):
    with serper_server(delay_s=30.0, delay_first=1) as server:
        provider = SerperProvider(api_key=SERPER_KEY, base_url=server.base_url, timeout=2.0)
        with pytest.raises(SearchError, match=r"did not answer within 2 s") as caught:
            provider.search("Paris", 3)
        assert caught.value.retryable
        assert provider.search("Paris", 1)[0].title == "Paris"  # the same client recovers
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(EnvConfigError, match="SERPER_API_KEY"):
        SerperProvider().search("Paris", 3)


# -- Bing -----------------------------------------------------------------------------------------


def test_bing_search_maps_web_pages():
    with bing_server() as server:
        provider = BingProvider(api_key=BING_KEY, base_url=server.base_url, market="en-US")
        results = provider.search("highest mountain", 3)
        nothing = provider.search("zzzz qqqq", 3)
    assert [r.title for r in results] == ["Mount Everest"]
    assert results[0].url == "https://example.org/everest"
    assert nothing == []  # Bing omits webPages when nothing matched
    request = server.requests[0]
    assert (request.method, request.path) == ("GET", "/v7.0/search")
    assert request.query == {"q": ["highest mountain"], "count": ["3"], "mkt": ["en-US"]}
    assert request.headers["ocp-apim-subscription-key"] == BING_KEY
    assert provider.cache_params() == {"base_url": server.base_url, "market": "en-US"}


def test_bing_connection_refused_is_retryable():
    with pytest.raises(SearchError, match="could not reach Bing") as caught:
        BingProvider(api_key=BING_KEY, base_url=closed_port_url(), timeout=2).search("Paris", 3)
    assert caught.value.retryable


# -- custom HTTP endpoint -------------------------------------------------------------------------


def nested_answer(request: Recorded) -> tuple[int, Any]:
    """A made-up service: {"data": {"hits": [{"name", "link", "text", "meta": {"rank"}}]}}."""
    query = request.body["q"] if request.method == "POST" else request.query["q"][0]
    hits = [
        {"name": d["title"], "link": d["url"], "text": d["content"], "meta": {"rank": 1 / (i + 1)}}
        for i, d in enumerate(DOCUMENTS)
        if query.lower() in d["content"].lower()
    ]
    return 200, {"data": {"hits": hits}}


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_http_provider_follows_the_configured_contract(method: str, monkeypatch):
    monkeypatch.setenv("EXAMPLE_KEY", "secret-1")
    with json_server(nested_answer) as server:
        provider = build_provider(
            "http",
            url=f"{server.base_url}/api/search",
            method=method,
            headers={"Authorization": "Bearer ${EXAMPLE_KEY}"},
            query_param="q",
            max_results_param="n",
            results_path="data.hits",
            field_map={
                "title": "name",
                "url": "link",
                "snippet": "text",
                "content": "text",
                "score": "meta.rank",
            },
        )
        results = provider.search("France", 2)
    assert [r.title for r in results] == ["Eiffel Tower", "Statue of Liberty"]
    assert results[1] == SearchResult(
        title="Statue of Liberty",
        url="https://example.org/statue-of-liberty",
        snippet=DOCUMENTS[1]["content"],
        content=DOCUMENTS[1]["content"],
        score=0.5,
    )
    request = server.requests[0]
    assert request.headers["authorization"] == "Bearer secret-1"
    sent = request.body if method == "POST" else {k: v[0] for k, v in request.query.items()}
    assert sent == ({"q": "France", "n": 2} if method == "POST" else {"q": "France", "n": "2"})
    assert "secret-1" not in str(provider.cache_params())


def test_http_provider_errors():
    with json_server(nested_answer, fail_first=1, fail_status=503) as server:
        provider = HTTPProvider(f"{server.base_url}/s", query_param="q", results_path="data.hits")
        with pytest.raises(SearchError, match=r"HTTP 503") as caught:
            provider.search("Paris", 3)
        assert caught.value.retryable and "127.0.0.1" in caught.value.message
        wrong_path = HTTPProvider(f"{server.base_url}/s", query_param="q", results_path="hits")
        with pytest.raises(SearchError, match="no list at 'hits'") as caught:
            wrong_path.search("Paris", 3)
        assert not caught.value.retryable


def test_http_provider_config_errors(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(EnvConfigError, match="http"):
        HTTPProvider("ftp://example.org")
    with pytest.raises(EnvConfigError, match="method"):
        HTTPProvider("https://example.org", method="PUT")
    with pytest.raises(EnvConfigError, match=r"unknown fields \['body'\]"):
        HTTPProvider("https://example.org", field_map={"body": "x"})
    provider = HTTPProvider("https://example.org", headers={"X-Key": "${NOT_SET_ANYWHERE}"})
    with pytest.raises(EnvConfigError, match="NOT_SET_ANYWHERE is not set"):
        provider.search("Paris", 3)


# -- ddgs -----------------------------------------------------------------------------------------


class DDGSStub:
    """Answers like ``ddgs.DDGS`` (its text() and extract() shapes), raising scripted errors."""

    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append((query, kwargs))
        if self.error is not None:
            raise self.error
        hits = [{"title": d["title"], "href": d["url"], "body": d["content"]} for d in DOCUMENTS]
        return hits[: kwargs["max_results"]]

    def extract(self, url: str, fmt: str = "text_markdown") -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        return {"url": url, "content": b"page text"}


def test_ddgs_maps_results_from_an_injected_client():
    stub = DDGSStub()
    provider = DDGSProvider(client=stub, region="wt-wt")
    results = provider.search("landmarks", 2)
    assert [(r.title, r.url) for r in results] == [
        ("Eiffel Tower", "https://example.org/eiffel-tower"),
        ("Statue of Liberty", "https://example.org/statue-of-liberty"),
    ]
    assert results[0].snippet == DOCUMENTS[0]["content"]
    assert stub.calls == [
        (
            "landmarks",
            {"max_results": 2, "region": "wt-wt", "safesearch": "moderate", "backend": "auto"},
        )
    ]
    assert provider.open_page("https://example.org/x") == "page text"


def test_ddgs_errors_are_mapped():
    from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

    assert DDGSProvider(client=DDGSStub(DDGSException("No results found."))).search("q", 3) == []
    for error, words in [
        (RatelimitException("202 Ratelimit"), "rate limited"),
        (TimeoutException("timed out"), "did not answer in time"),
        (DDGSException("engine broke"), r"engines failed \(engine broke\)"),
    ]:
        with pytest.raises(SearchError, match=words) as caught:
            DDGSProvider(client=DDGSStub(error)).search("q", 3)
        assert caught.value.retryable
    failed_fetch = DDGSException("Failed to fetch https://example.org/x: HTTP 404")
    assert DDGSProvider(client=DDGSStub(failed_fetch)).open_page("https://example.org/x") is None


@pytest.mark.skip(reason="live DuckDuckGo search: the test suite never reaches the network")
def test_ddgs_live():
    assert DDGSProvider().search("python programming language", 3)


# -- the registry ---------------------------------------------------------------------------------


def test_build_provider_builds_each_registered_web_provider():
    built = {
        "tavily": build_provider("tavily", api_key="k"),
        "serper": build_provider("serper", api_key="k"),
        "bing": build_provider("bing", api_key="k"),
        "ddgs": build_provider("ddgs"),
        "http": build_provider("http", url="https://example.org/search"),
    }
    for name, provider in built.items():
        assert provider.name == name
        assert isinstance(provider, SearchProvider)
    assert PROVIDERS["corpus"] == "tool_envs.search.corpus:CorpusProvider"
    assert provider_class(f"{__name__}:Scripted") is Scripted


def test_build_provider_imports_the_corpus_provider_lazily():
    pytest.importorskip("bm25s", reason="the offline corpus needs the 'search' extra")
    documents = [{"id": "d1", "title": "Seine", "text": "The Seine flows through Paris."}]
    provider = build_provider("corpus", documents=documents)
    assert provider.name == "corpus"
    assert provider.search("Seine Paris", 1)[0].title == "Seine"


def test_build_provider_errors_name_what_is_accepted():
    with pytest.raises(EnvConfigError, match=r"unknown search provider 'tavly'.*'tavily'"):
        build_provider("tavly")
    with pytest.raises(EnvConfigError) as caught:
        build_provider("tavily", depth="advanced")
    message = str(caught.value)
    assert "unexpected keyword argument 'depth'" in message and "'search_depth'" in message
    with pytest.raises(EnvConfigError, match="missing a required argument: 'url'"):
        build_provider("http")
    with pytest.raises(EnvConfigError, match="not a SearchProvider subclass"):
        build_provider("tool_envs.search.base:SearchResult")

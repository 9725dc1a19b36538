"""One table from HTTP statuses and transport failures to :class:`SearchError`, shared by every
HTTP provider, so the model reads the same words whichever service failed and the retry layer
sees the same ``retryable`` flags.

========================  =========  ==========================================================
failure                   retryable  why
========================  =========  ==========================================================
400, 404, other 4xx       no         the request itself is wrong; sending it again changes nothing
401                       no         bad or missing API key: a person has to fix the key
403                       no         forbidden / quota spent (Bing's "out of quota" is a 403)
408, 425, 429             yes        the service asks us to slow down or try again
432, 433                  no         Tavily: the plan's or pay-as-you-go usage limit is spent
5xx                       yes        the service failed; it usually recovers
timeout                   yes        slow service or network
connection error          yes        refused / reset / DNS hiccup
response not JSON         no         a wrong endpoint answers the same way every time
========================  =========  ==========================================================
"""

from __future__ import annotations

from tool_envs.search.base import SearchError

_RETRYABLE_4XX = {408, 425, 429}


def error_for_status(service: str, status: int, detail: str = "") -> SearchError:
    """The :class:`SearchError` for an HTTP error ``status`` from ``service`` ("Tavily", ...)."""
    detail = detail.strip()
    suffix = f": {detail}" if detail else ""
    if status == 401:
        message = f"{service} rejected the API key (HTTP 401){suffix}; the key must be fixed"
    elif status == 403:
        message = f"{service} refused the request (HTTP 403, forbidden or quota spent){suffix}"
    elif status in (432, 433):
        message = f"the {service} plan's usage limit is spent (HTTP {status}){suffix}"
    elif status == 429:
        message = f"rate limited by {service} (HTTP 429){suffix}, try again later"
    elif status in _RETRYABLE_4XX:
        message = f"{service} asked to try again (HTTP {status}){suffix}, try again later"
    elif status >= 500:
        message = f"{service} had a server error (HTTP {status}){suffix}, try again later"
    else:
        message = f"{service} rejected the request (HTTP {status}){suffix}"
    retryable = status >= 500 or status in _RETRYABLE_4XX
    return SearchError(f"search failed: {message}", retryable=retryable, status=status)


def timeout_error(service: str, timeout: float) -> SearchError:
    """A request that got no answer within ``timeout`` seconds (retryable)."""
    return SearchError(
        f"search failed: {service} did not answer within {timeout:g} s, try again later",
        retryable=True,
    )


def connection_error(service: str, exc: BaseException) -> SearchError:
    """The service could not be reached at all (retryable: refused, reset, DNS...)."""
    return SearchError(
        f"search failed: could not reach {service} ({type(exc).__name__}), try again later",
        retryable=True,
    )


def bad_response_error(service: str, what: str) -> SearchError:
    """A 200 answer that does not have the documented shape (not retryable)."""
    return SearchError(f"search failed: {service} sent a malformed response ({what})")


def wants_results(query: str, max_results: int) -> bool:
    """False when nothing is asked for; a SearchError for an empty query (never sent)."""
    if not query.strip():
        raise SearchError("search failed: the query is empty; write what to search for")
    return max_results >= 1

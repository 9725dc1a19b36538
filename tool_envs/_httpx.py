"""The HTTP client module our vLLM code uses: ``httpx2`` where it is installed, else ``httpx``.

openai >= 3 ships ``httpx2``, the maintained continuation of httpx with the same API; older
environments (Python 3.10, where httpx2 does not install) have only ``httpx``. One import site
keeps the choice in one place, server-sent events included: httpx2 reads them itself, httpx
with the ``httpx-sse`` package.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

try:
    import httpx2 as httpx

    _HAS_SSE = True
except ImportError:  # pragma: no cover - environments with the original httpx only
    import httpx  # type: ignore[no-redef]

    _HAS_SSE = False

__all__ = ["aiter_sse", "httpx", "is_event_stream"]


def is_event_stream(response: Any) -> bool:
    """True when the response is a stream of server-sent events."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    return content_type.strip().lower() == "text/event-stream"


def aiter_sse(response: Any) -> AsyncIterator[Any]:
    """The server-sent events of a streamed response (each has ``.data``), as they arrive."""
    if _HAS_SSE:
        return aiter(httpx.EventSource(response))
    from httpx_sse import EventSource  # pragma: no cover - Python 3.10 (see pyproject.toml)

    return EventSource(response).aiter_sse()  # pragma: no cover

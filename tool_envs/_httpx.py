"""The HTTP client module our vLLM code uses: ``httpx2`` where it is installed, else ``httpx``.

openai >= 3 ships ``httpx2``, the maintained continuation of httpx with the same API; older
environments have only ``httpx``. One import site keeps the choice in one place.
"""

try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - environments with the original httpx only
    import httpx  # type: ignore[no-redef]

__all__ = ["httpx"]

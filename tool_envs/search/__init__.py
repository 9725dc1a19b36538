"""Web search: ``tool_envs/WebSearch-v0``, providers, a persistent cache, an offline corpus."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "CachedProvider": "tool_envs.search.cache",
    "SearchCache": "tool_envs.search.cache",
    "CorpusError": "tool_envs.search.corpus",
    "CorpusProvider": "tool_envs.search.corpus",
    "WebSearchEnv": "tool_envs.search.env",
    "load_search_qa": "tool_envs.search.loaders",
    "build_provider": "tool_envs.search.providers",
    "default_corpus": "tool_envs.search.qa",
    "default_splits": "tool_envs.search.qa",
    "generate_splits": "tool_envs.search.qa",
    "ResilientProvider": "tool_envs.search.resilience",
    "SearchError": "tool_envs.search.base",
    "SearchProvider": "tool_envs.search.base",
    "SearchResult": "tool_envs.search.base",
}

if TYPE_CHECKING:
    from tool_envs.search.base import SearchError as SearchError
    from tool_envs.search.base import SearchProvider as SearchProvider
    from tool_envs.search.base import SearchResult as SearchResult
    from tool_envs.search.cache import CachedProvider as CachedProvider
    from tool_envs.search.cache import SearchCache as SearchCache
    from tool_envs.search.corpus import CorpusError as CorpusError
    from tool_envs.search.corpus import CorpusProvider as CorpusProvider
    from tool_envs.search.env import WebSearchEnv as WebSearchEnv
    from tool_envs.search.loaders import load_search_qa as load_search_qa
    from tool_envs.search.providers import build_provider as build_provider
    from tool_envs.search.qa import default_corpus as default_corpus
    from tool_envs.search.qa import default_splits as default_splits
    from tool_envs.search.qa import generate_splits as generate_splits
    from tool_envs.search.resilience import ResilientProvider as ResilientProvider

__all__ = sorted(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""``tool_envs/WebSearch-v0``: answer a question by searching, then give the final answer.

The provider stack is built once per env: the provider (offline corpus by default, or Tavily,
Serper, Bing, DuckDuckGo, a custom endpoint), behind the retry and rate-limit layer for remote
providers, behind the persistent cache when ``cache=`` names a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from tool_envs.core import options
from tool_envs.core.answers import EndsOnAnswer
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.pickling import state_without
from tool_envs.core.tools import Toolset, tool
from tool_envs.errors import EnvConfigError, MissingDependencyError, TaskRowError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult
from tool_envs.search.cache import CACHE_MODES, CachedProvider, SearchCache
from tool_envs.search.scoring import METRICS, score

ANSWER_FORMATS = ("tag", "reply")
NUDGE = "Search with the tools, or give your final answer as <answer>...</answer>."


class WebSearchEnv(EndsOnAnswer, ToolEnv):
    """Answer a question with ``search(query, max_results)`` and ``open_page(url)``.

    The episode ends with the final answer: with ``answer_format="tag"`` (default) the first
    turn without tool calls that holds ``<answer>...</answer>`` (a turn with neither gets a
    reminder and the episode goes on); with ``"reply"`` any turn without tool calls, whole. The
    reward is ``metric`` (``"em"``: normalised exact match, ``"f1"``: token F1) against
    ``reward_spec["answers"]``; with ``must_search_first`` an answer given before any successful
    search earns 0. Every search failure (bad key, rate limit, timeout, replay-cache miss) is an
    ``Error: ...`` observation. ``info["search_history"]`` lists the searches so far.

    Args:
        tasks: Task rows or a source for :func:`tool_envs.data.load_tasks`; default: the
            generated fictional-entity QA set (``datasets/search_qa``), train split.
        parser: As for every ToolEnv.
        render_mode: As for every ToolEnv.
        provider: ``"corpus"`` (default; offline BM25 over the generated corpus, or over
            ``provider_kwargs`` documents / path), ``"tavily"``, ``"serper"``, ``"bing"``,
            ``"ddgs"``, ``"http"``, or a :class:`SearchProvider`. With the default corpus, a
            task row may bring its own documents in ``extra_info["documents"]``.
        provider_kwargs: Arguments of the named provider (api key env var, base URL, ...).
        cache: Path of the sqlite cache file; None for no cache.
        cache_mode: ``"read_write"`` (default), ``"replay"`` (offline: misses are errors) or
            ``"off"``.
        max_retries: Retry setting for remote providers.
        requests_per_minute: Rate-limit setting for remote providers.
        metric: ``"em"`` or ``"f1"``.
        must_search_first: See above.
        max_results_limit: Upper bound on ``max_results`` per search.
        snippet_chars: How much of a snippet the agent sees.
        page_chars: How much of a page the agent sees.
    """

    nudge = NUDGE

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
        provider: str | SearchProvider = "corpus",
        provider_kwargs: Mapping[str, Any] | None = None,
        cache: str | None = None,
        cache_mode: str = "read_write",
        max_retries: int = 3,
        requests_per_minute: float | None = None,
        answer_format: str = "tag",
        metric: str = "em",
        must_search_first: bool = False,
        max_results_limit: int = 10,
        snippet_chars: int = 300,
        page_chars: int = 4000,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        for name, value, allowed in (
            ("answer_format", answer_format, ANSWER_FORMATS),
            ("metric", metric, METRICS),
            ("cache_mode", cache_mode, CACHE_MODES),
        ):
            if value not in allowed:
                raise EnvConfigError(f"{name}={value!r} is not one of {allowed}")
        if isinstance(provider, str):
            from tool_envs.search.providers import PROVIDERS

            if provider not in PROVIDERS:
                raise EnvConfigError(f"provider={provider!r} is not one of {sorted(PROVIDERS)}")
        elif not isinstance(provider, SearchProvider):
            raise EnvConfigError(
                f"provider={provider!r} is not valid: expected a provider name or a SearchProvider"
            )
        if cache is not None and not isinstance(cache, (str, os.PathLike)):
            raise EnvConfigError(f"cache={cache!r} is not valid: expected a file path or None")
        self.answer_format = answer_format
        self.metric = metric
        self.must_search_first = options.flag("must_search_first", must_search_first)
        self.max_results_limit = options.integer("max_results_limit", max_results_limit, minimum=1)
        self.snippet_chars = options.integer("snippet_chars", snippet_chars, minimum=1)
        self.page_chars = options.integer("page_chars", page_chars, minimum=1)
        max_retries = options.integer("max_retries", max_retries, minimum=0)
        requests_per_minute = options.number(
            "requests_per_minute", requests_per_minute, above=0, optional=True
        )
        self._provider_spec = (provider, options.mapping("provider_kwargs", provider_kwargs))
        self._cache_spec = (cache, cache_mode, max_retries, requests_per_minute)
        self._provider: SearchProvider | None = None
        self._cache: SearchCache | None = None
        self._row_corpus: SearchProvider | None = None
        self._tools = Toolset.from_object(self)
        self._history: list[dict[str, Any]] = []
        self._pages: dict[str, str] = {}
        self._answer: str | None = None

    # ----------------------------------------------------------------------- tools

    @tool
    def search(self, query: str, max_results: int = 5) -> str:
        """Search the web and get the best results (title, URL and snippet of each).

        Args:
            query: What to search for; short keyword queries work best.
            max_results: How many results to return (1-10).
        """
        count = max(1, min(int(max_results), self.max_results_limit))
        entry: dict[str, Any] = {"query": query, "max_results": count}
        self._history.append(entry)
        try:
            results = self._episode_provider().search(query, count)
        except SearchError as exc:
            entry["error"] = exc.message
            raise ValueError(exc.message) from exc
        entry["urls"] = [result.url for result in results]
        for result in results:
            if result.content:
                self._pages[result.url] = result.content
        return self._format(results, query)

    @tool
    def open_page(self, url: str) -> str:
        """Read the full text of a page from your search results.

        Args:
            url: The URL, exactly as a search result gave it.
        """
        text = self._pages.get(url)
        if text is None:
            try:
                text = self._episode_provider().open_page(url)
            except SearchError as exc:
                raise ValueError(exc.message) from exc
        if text is None:
            raise ValueError(f"no page text for {url!r}; open a URL from your search results")
        if len(text) > self.page_chars:
            return text[: self.page_chars] + f"\n[... page truncated at {self.page_chars} chars]"
        return text

    def _format(self, results: list[SearchResult], query: str) -> str:
        if not results:
            return f"No results for {query!r}."
        blocks = []
        for number, result in enumerate(results, 1):
            snippet = " ".join(result.snippet.split())
            if len(snippet) > self.snippet_chars:
                snippet = snippet[: self.snippet_chars].rstrip() + " ..."
            blocks.append(f"[{number}] {result.title}\nURL: {result.url}\n{snippet}")
        return "\n\n".join(blocks)

    # ----------------------------------------------------------------------- provider stack

    @property
    def provider(self) -> SearchProvider:
        """The provider stack, built on first use (so ``gymnasium.make`` stays cheap)."""
        if self._provider is None:
            try:
                self._provider = self._build_provider()
            except ImportError as exc:
                name = self._provider_spec[0]
                raise MissingDependencyError(
                    exc.name or "a search package", "search", f"the {name!s} search provider"
                ) from exc
        return self._provider

    def _episode_provider(self) -> SearchProvider:
        """This episode's provider: the env's stack, or a corpus the task row brings."""
        return self._row_corpus if self._row_corpus is not None else self.provider

    def _row_corpus_for(self, task: dict[str, Any]) -> SearchProvider | None:
        """With the default corpus provider, a row may bring its own documents
        (``extra_info["documents"]``) or name another seed of the generated corpus."""
        provider, kwargs = self._provider_spec
        if provider != "corpus" or kwargs:
            return None
        extra = task["extra_info"]
        documents = extra.get("documents")
        if documents is None and extra.get("corpus") == "search_qa" and extra.get("corpus_seed"):
            from tool_envs.search.qa import generate_corpus

            documents = generate_corpus(extra["corpus_seed"])
        if documents is None:
            return None
        from tool_envs.search.corpus import CorpusProvider

        return CorpusProvider(documents=documents)

    def _build_provider(self) -> SearchProvider:
        provider, kwargs = self._provider_spec
        cache, cache_mode, max_retries, requests_per_minute = self._cache_spec
        if isinstance(provider, str):
            from tool_envs.search.providers import build_provider

            if provider == "corpus" and not kwargs:
                from tool_envs.search.qa import default_corpus

                kwargs = {"documents": default_corpus()}
            built = build_provider(provider, **kwargs)
            if provider != "corpus":
                from tool_envs.search.resilience import ResilientProvider

                built = ResilientProvider(
                    built, max_retries=max_retries, requests_per_minute=requests_per_minute
                )
        else:
            built = provider
        if cache is not None and cache_mode != "off":
            self._cache = SearchCache(cache)
            built = CachedProvider(built, self._cache, mode=cache_mode)
        return built

    # ----------------------------------------------------------------------- ToolEnv hooks

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return self.task_splits()["train"]

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        from tool_envs.search.qa import default_splits

        return default_splits()

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """Search the question once, then answer with the first gold answer."""
        answers = task.get("reward_spec", {}).get("answers") or []
        question = next((m["content"] for m in task["prompt"] if m["role"] == "user"), "")
        if not answers or not question:
            return None
        call = {"name": "search", "arguments": {"query": question, "max_results": 5}}
        return [f"<tool_call>\n{json.dumps(call)}\n</tool_call>", f"<answer>{answers[0]}</answer>"]

    def check_task(self, task: dict[str, Any]) -> None:
        answers = task["reward_spec"].get("answers")
        if (
            not isinstance(answers, list)
            or not answers
            or not all(isinstance(a, str) for a in answers)
        ):
            raise TaskRowError(
                f"a search task needs a non-empty list of strings here, got {_short(answers)}",
                field="reward_spec.answers",
            )
        extra = task["extra_info"]
        if extra.get("documents") is not None:
            from tool_envs.search.corpus import CorpusError, check_documents

            try:
                check_documents(extra["documents"])
            except CorpusError as exc:
                raise TaskRowError(str(exc), field="extra_info.documents") from None
        seed = extra.get("corpus_seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise TaskRowError(
                f"must be a non-negative integer (a seed of the generated corpus), got "
                f"{_short(seed)}",
                field="extra_info.corpus_seed",
            )
        corpus = extra.get("corpus")
        if corpus is not None and not isinstance(corpus, str):
            raise TaskRowError(
                f"must be a corpus name, got {_short(corpus)}", field="extra_info.corpus"
            )

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._history = []
        self._pages = {}
        self._answer = None
        try:
            self._row_corpus = self._row_corpus_for(task)
        except ImportError as exc:
            raise MissingDependencyError(
                exc.name or "bm25s", "search", "the search corpus"
            ) from exc
        if self._row_corpus is None:
            _ = self.provider  # build it here, so a missing package raises to the caller
        return self._tools

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        assert self._task is not None
        golds = self._task["reward_spec"]["answers"]
        searched = any("urls" in entry for entry in self._history)
        value = score(self._answer or "", golds, self.metric)
        if self.must_search_first and not searched:
            reward, reason = 0.0, "answered without a successful search (must_search_first)"
        else:
            reward = value
            reason = (
                "correct answer"
                if value == 1.0
                else ("partly correct answer" if value > 0 else "wrong answer")
            )
        return reward, {
            "reward": reward,
            "reason": reason,
            "answer": self._answer,
            "gold_answers": list(golds),
            "metric": self.metric,
            "score": value,
            "searches": len(self._history),
            "search_history": [dict(entry) for entry in self._history],
        }

    def _step_info(self) -> dict[str, Any]:
        return {"search_history": [dict(entry) for entry in self._history]}

    def close(self) -> None:
        super().close()
        if self._provider is not None and isinstance(self._provider_spec[0], str):
            self._provider.close()  # built here; a provider passed in belongs to the caller
        if self._cache is not None:
            self._cache.close()
        self._provider = self._cache = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration, not the clients: a copy rebuilds its provider stack."""
        return state_without(self, cleared=("_provider", "_cache"))


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

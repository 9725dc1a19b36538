"""Real episodes of the shipped envs played by scripted agents, printed turn by turn.

No model, no network, no API key: the agents below write the same kinds of text a model would
(correct calls, malformed calls, calls to tools that do not exist, wrong answers), and the env
handles each exactly as it would during training.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym

import tool_envs
from tool_envs.calculator import gold_turns

Agent = Callable[[dict[str, Any]], Iterator[str]]


def gold_agent(task: dict[str, Any]) -> Iterator[str]:
    """Replays the task's gold calls, one per turn, then states the answer."""
    yield from gold_turns(task)


def clumsy_agent(task: dict[str, Any]) -> Iterator[str]:
    """Makes the mistakes models make, recovers, then answers correctly."""
    first = task["reward_spec"]["gold_calls"][0]
    name, a, b = first["name"], first["arguments"]["a"], first["arguments"]["b"]
    yield f'<tool_call>{{"name": "{name}", "arguments": {{"a": {a}, "b": {b},}}}}</tool_call>'
    yield f'<tool_call>{{"name": "calculate", "arguments": {{"text": "{a}, {b}"}}}}</tool_call>'
    yield f'<tool_call>{{"name": "{name}", "arguments": {{"a": "{a}"}}}}</tool_call>'
    yield from gold_turns(task)


def guessing_agent(task: dict[str, Any]) -> Iterator[str]:
    """Answers at once without tools, and wrongly."""
    yield f"I think it is {task['reward_spec']['answer'] + 1}."


AGENTS: dict[str, Agent] = {"gold": gold_agent, "clumsy": clumsy_agent, "guessing": guessing_agent}


def run_episode(env: gym.Env, agent: Agent, seed: int) -> dict[str, Any]:
    """Play one episode; return its summary (reward, turns, counters, reward_info)."""
    _, info = env.reset(seed=seed)
    task = env.unwrapped.task
    reward, terminated, truncated, info = 0.0, False, False, {}
    turns = agent(task)
    while not (terminated or truncated):
        action = next(turns, "I am not sure.")
        _, reward, terminated, truncated, info = env.step(action)
    return {
        "task_id": task["extra_info"]["id"],
        "reward": reward,
        "turns": info["turn"],
        "truncated": truncated,
        **info["stats"],
        "reward_info": info["reward_info"],
    }


def run_demo(episodes_per_agent: int = 1, seed: int = 0, show: bool = True) -> list[dict[str, Any]]:
    """Run every scripted agent on the Calculator env; print transcripts and a summary table."""
    gym.register_envs(tool_envs)
    results = []
    env = gym.make("tool_envs/Calculator-v0", render_mode="ansi")
    try:
        for name, agent in AGENTS.items():
            for episode in range(episodes_per_agent):
                result = {"agent": name, **run_episode(env, agent, seed + episode)}
                results.append(result)
                if show:
                    print(f"\n=== {name} agent, task {result['task_id']} ===")
                    print(env.render())
                    print(f"--> reward {result['reward']}: {json.dumps(result['reward_info'])}")
    finally:
        env.close()
    if show:
        _print_table(results)
    return results


def _print_table(results: list[dict[str, Any]]) -> None:
    columns = ["agent", "task_id", "reward", "turns", "tool_calls", "tool_errors", "parse_errors"]
    widths = [max(len(c), *(len(str(r[c])) for r in results)) for c in columns]
    print("\n" + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in results:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)))

"""``tool-envs check``: is an env sound before anyone spends API money or GPU hours on it?

Two checks: Gymnasium's own ``check_env`` (spaces, reset/step signatures, seeding, determinism),
with its warnings treated as failures as the test suite does; and one gold episode, which shows
the tools, the parser and the reward agree on a known-good solution, with every step's ``info``
checked against the ``ToolEnv`` contract (:mod:`tool_envs.core.info_contract`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from tool_envs.core.info_contract import info_problems
from tool_envs.core.messages import render_transcript
from tool_envs.registration import resolve_env_id
from tool_envs.rollout.agents import GoldAgent

__all__ = ["check_env_id"]


def _gold_task(env: gym.Env) -> tuple[str, dict[str, Any]] | None:
    """The first task of the env's test split (else of its first split), if it has gold turns."""
    splits = env.unwrapped.own_task_splits()
    name = "test" if "test" in splits else next(iter(splits), None)
    if name is None or not splits[name]:
        return None
    row = dict(splits[name][0])
    return (name, row) if env.unwrapped.gold_turns(row) is not None else None


class InfoContractCheck(gym.Wrapper):
    """Checks each step's ``info`` against the ``ToolEnv`` contract, recording what is wrong."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.steps = 0
        self.problems: list[tuple[int, str]] = []

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        for problem in info_problems(info, float(reward), terminated, truncated):
            self.problems.append((self.steps, problem))
        return observation, reward, terminated, truncated, info


def check_env_id(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    echo: Callable[[str], Any] = print,
    verbose: bool = False,
) -> bool:
    """Run both checks on ``env_id``, printing what happened; True when both pass."""
    env_id = resolve_env_id(env_id)
    kwargs = dict(env_kwargs or {})
    ok = True
    env = gym.make(env_id, **kwargs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                check_env(env.unwrapped)
            except Exception as exc:
                ok = False
                echo(f"FAIL check_env: {type(exc).__name__}: {exc}")
        for warning in caught:
            ok = False
            echo(f"FAIL check_env warning: {warning.message}")
        if ok:
            echo(f"ok   check_env passed for {env_id}")

        found = _gold_task(env)
        if found is None:
            echo(f"skip gold episode: {env_id} has no gold turns")
            return ok
        split, task = found
        task_id = (task.get("extra_info") or {}).get("id")
        checked = InfoContractCheck(env)
        checked.reset(seed=0, options={"task": task})
        try:
            result = GoldAgent().play(checked, task)
        except Exception as exc:
            echo(f"FAIL gold episode on {split} task {task_id}: {type(exc).__name__}: {exc}")
            return False
        for step, problem in checked.problems:
            ok = False
            echo(f"FAIL info contract at step {step} of the gold episode: {problem}")
        if not checked.problems:
            echo(f"ok   info contract held on all {checked.steps} steps of the gold episode")
        reward_info = json.dumps(result.info.get("reward_info"), default=str)
        turns = result.info.get("turn", 0)
        where = f"gold episode on {split} task {task_id}"
        if result.reward >= 1.0 - 1e-9:
            echo(f"ok   {where}: reward {result.reward} in {turns} turns")
        else:
            ok = False
            how = "truncated" if result.truncated else "ended"
            echo(
                f"FAIL {where} {how} with reward {result.reward} after {turns} turns: {reward_info}"
            )
        if verbose or not ok:
            echo(render_transcript(env.unwrapped.messages))
        return ok
    finally:
        env.close()

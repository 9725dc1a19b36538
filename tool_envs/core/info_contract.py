"""The ``info`` every ``ToolEnv.step`` returns, as a check: what ``tool-envs check`` verifies on
each step of an episode, so an env that leaves out a promised key is named before training."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tool_envs.core.outcome import OUTCOMES

STEP_KEYS = ("turn", "tool_calls", "parse_error", "tool_errors", "stats", "reward_info")
"""Keys of every step's ``info`` (see :class:`tool_envs.core.env.ToolEnv`)."""
REWARD_INFO_KEYS = ("reward", "reason", "outcome")
"""Keys of the final ``reward_info``."""


def info_problems(
    info: Mapping[str, Any], reward: float, terminated: bool, truncated: bool
) -> list[str]:
    """What one step's ``info`` lacks or gets wrong against the contract; empty when it holds."""
    problems = [f"info has no {key!r}" for key in STEP_KEYS if key not in info]
    reward_info = info.get("reward_info")
    ended = terminated or truncated
    if reward_info is None:
        if terminated:
            problems.append("the episode terminated but info['reward_info'] is None")
        return problems
    if not isinstance(reward_info, Mapping):
        return [*problems, f"info['reward_info'] is a {type(reward_info).__name__}, not a dict"]
    if not ended:
        problems.append("info['reward_info'] is set on a step that did not end the episode")
    problems += [
        f"info['reward_info'] has no {key!r}" for key in REWARD_INFO_KEYS if key not in reward_info
    ]
    if "reward" in reward_info and reward_info["reward"] != reward:
        problems.append(
            f"info['reward_info']['reward'] is {reward_info['reward']!r}, "
            f"the step's reward {reward!r}"
        )
    if "outcome" in reward_info and reward_info["outcome"] not in OUTCOMES:
        problems.append(
            f"info['reward_info']['outcome'] {reward_info['outcome']!r} is not one of {OUTCOMES}"
        )
    return problems

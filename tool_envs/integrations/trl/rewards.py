"""Reward functions for GRPOTrainer that read what the env computed.

TRL passes every extra column a ``rollout_func`` returns to reward functions as keyword
arguments, so the env's reward arrives as ``env_reward`` without re-parsing completion text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tool_envs.core.outcome import is_void


def env_reward(
    completions: list[Any], env_reward: list[float | None], **kwargs: Any
) -> list[float | None]:
    """The env's task reward for each rollout; None for a void one (infrastructure failed),
    which TRL leaves out of the group baseline and gives no advantage."""
    return [None if value is None else float(value) for value in env_reward]


def reward_info_func(key: str) -> Callable[..., list[float | None]]:
    """A reward function that reads ``reward_info[key]`` (a number or bool) of each rollout.

    Rollouts whose reward_info lacks the key, and void rollouts, get None, which TRL treats as
    "not scored".
    Combine with ``reward_weights`` in GRPOConfig to shape the reward from named sub-rewards.
    """

    def read(completions: list[Any], reward_info: list[str], **kwargs: Any) -> list[float | None]:
        values = []
        for info in reward_info:
            parsed = (json.loads(info) if info else None) or {}  # "null": ended by a budget
            value = None if is_void(parsed) else parsed.get(key)
            values.append(None if value is None else float(value))
        return values

    read.__name__ = f"reward_info_{key}"
    return read


def env_progress(
    completions: list[Any], env_progress: list[float | None] | None = None, **kwargs: Any
) -> list[float | None]:
    """How far each rollout got towards its task (the env's ``info["progress"]``, e.g. the share
    of a tau task's gold actions made), whatever ended it; None for void rollouts and envs that
    report no progress.

    Added to ``env_reward`` with ``reward_weights`` it tells apart the failures of a group (a wrong
    id at the first lookup or at the last action), which a success-only reward scores alike.
    Episodes cut short by the turn limit keep what they made, so ending a conversation early
    earns nothing over running out of turns.
    """
    if env_progress is None:
        raise ValueError(
            "env_progress reads the env_progress column of make_rollout_func's rollouts; "
            "this trainer's rollouts have none"
        )
    return [None if value is None else float(value) for value in env_progress]


def tool_sequence(
    completions: list[Any], reward_info: list[str], **kwargs: Any
) -> list[float | None]:
    """The share of a task's expected tool calls made in order (MCP-v0's ``tool_sequence``
    part: ``reward_info["parts"]["tool_sequence"]["score"]``); None for void rollouts and for
    rows whose ground truth has no tool sequence (other envs' rows in a mixed batch).

    The env's reward already averages this part with the answer; as a reward function of its
    own it gets its own weight (``reward_weights``) and its own curve
    (``rewards/tool_sequence/mean``), so a run shows whether the agent learns the calls even
    while its answers are still wrong.
    """
    values: list[float | None] = []
    for info in reward_info:
        parsed = (json.loads(info) if info else None) or {}  # "null": ended by a budget
        part = (parsed.get("parts") or {}).get("tool_sequence") or {}
        score = None if is_void(parsed) else part.get("score")
        values.append(None if score is None else float(score))
    return values

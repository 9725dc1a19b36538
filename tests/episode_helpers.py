"""Playing one episode of an env from a list of assistant turns, for the env tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym


def play_to_end(
    env: gym.Env, task: Mapping[str, Any], turns: Iterable[Any]
) -> tuple[float, dict[str, Any]]:
    """Reset ``env`` with ``task`` and take ``turns`` until the episode ends: its final reward
    and info. A test whose turns run out first fails, so a reward is never read mid-episode."""
    env.reset(options={"task": task})
    for turn in turns:
        _, reward, terminated, truncated, info = env.step(turn)
        if terminated or truncated:
            return reward, info
    raise AssertionError("the episode did not end")

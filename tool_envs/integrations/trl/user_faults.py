"""A warning when a policy learns to make its simulated user break: the user-fault rate climbs.

An episode the simulated user spoiled is void, never trained on (:mod:`tool_envs.tau.users.
faults`): a policy cannot be rewarded for it, but it escapes the failure it would otherwise have
scored. A policy that learns to provoke voids shows it as a climbing ``env/user_fault_rate``,
which the rollout engines log every step where a user is checked.
"""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any

from transformers import TrainerCallback

__all__ = ["UserFaultWatch"]

METRIC = "env/user_fault_rate"


class UserFaultWatch(TrainerCallback):
    """Warns once when the user-fault rate of the last ``window`` logged steps is at least
    ``floor`` and ``factor`` times that of the run's first ``window`` steps (again only after it
    has fallen back).

    Args:
        window: Logged steps averaged at the start and at the end.
        factor: How many times the starting rate counts as a climb.
        floor: A rate below this never warns (a few spoiled episodes are noise).
    """

    def __init__(self, window: int = 10, factor: float = 2.0, floor: float = 0.05):
        if window < 1 or factor <= 1 or not 0 < floor <= 1:
            raise ValueError(
                f"UserFaultWatch needs window >= 1, factor > 1 and 0 < floor <= 1; got "
                f"window={window}, factor={factor}, floor={floor}"
            )
        self.window, self.factor, self.floor = window, factor, floor
        self.start: list[float] = []
        self.recent: deque[float] = deque(maxlen=window)
        self.warned = False
        self.warnings: list[str] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any):
        if not logs or METRIC not in logs or not state.is_world_process_zero:
            return
        rate = float(logs[METRIC])
        if len(self.start) < self.window:
            self.start.append(rate)
        self.recent.append(rate)
        if len(self.start) < self.window or len(self.recent) < self.window:
            return
        baseline = sum(self.start) / len(self.start)
        now = sum(self.recent) / len(self.recent)
        climbing = now >= self.floor and now >= self.factor * baseline
        if climbing and not self.warned:
            message = (
                f"the simulated user's fault rate climbed to {now:.3f} over the last "
                f"{self.window} logged steps (step {state.global_step}; {baseline:.3f} over the "
                f"first {self.window}): spoiled episodes are void and not trained on, so a "
                "policy that provokes them escapes its failures. Read the faults' evidence in "
                "the rollouts' reward_info['user_fault'] (or re-check an eval run with "
                "`tool-envs check-users`)"
            )
            self.warnings.append(message)
            warnings.warn(message, UserWarning, stacklevel=2)
        self.warned = climbing

"""Trainer callbacks, by job: the metrics file and the one-line logs
(:mod:`~tool_envs.integrations.trl.metrics_file`), SFT's stop at a target success and rewind
(:mod:`~tool_envs.integrations.trl.env_success`), the reward curve
(:mod:`~tool_envs.integrations.trl.plots`). This module keeps their old import path."""

from __future__ import annotations

from tool_envs.integrations.trl.env_success import (
    SNAPSHOT_MEMORY_LIMIT,
    EnvSuccessCallback,
    WeightSnapshot,
)
from tool_envs.integrations.trl.metrics_file import (
    MetricsFile,
    RewardSignalWatch,
    one_line_logs,
    resumed_checkpoint,
    start_new_run,
)
from tool_envs.integrations.trl.plots import plot_reward_curve

__all__ = [
    "SNAPSHOT_MEMORY_LIMIT",
    "EnvSuccessCallback",
    "MetricsFile",
    "RewardSignalWatch",
    "WeightSnapshot",
    "one_line_logs",
    "plot_reward_curve",
    "resumed_checkpoint",
    "start_new_run",
]

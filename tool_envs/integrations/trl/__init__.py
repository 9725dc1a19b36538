"""TRL integration: a ``rollout_func`` for ``GRPOTrainer`` that plays tool_envs episodes.

    from trl import GRPOTrainer
    from tool_envs.integrations.trl import TaskRowEnvironment, env_reward, make_rollout_func

    trainer = GRPOTrainer(
        model=..., args=grpo_config, train_dataset=task_rows,
        reward_funcs=[env_reward],
        rollout_func=make_rollout_func(),
        environment_factory=TaskRowEnvironment,   # hands each rollout its dataset row
    )

With vLLM, use ``ToolEnvsGRPOTrainer`` (same arguments) instead of ``GRPOTrainer``: its weight
sync also works without a GPU (colocate, and a server without NCCL); see ``trainer``.

Pinned to TRL 1.16 (``trl>=1.16,<1.17``): the rollout and environment APIs are experimental there.
"""

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports
from tool_envs.integrations.trl.environment import TaskRowEnvironment
from tool_envs.integrations.trl.rewards import (
    env_progress,
    env_reward,
    reward_info_func,
    tool_sequence,
)
from tool_envs.integrations.trl.rollout_func import make_rollout_func, rollouts_to_batch
from tool_envs.integrations.trl.tool_loop import tool_loop_environment

__all__ = [
    "TaskRowEnvironment",
    "ToolEnvsGRPOTrainer",
    "ToolEnvsRolloutWorker",
    "env_progress",
    "env_reward",
    "make_rollout_func",
    "reward_info_func",
    "rollouts_to_batch",
    "tool_loop_environment",
    "tool_sequence",
]


# Lazy: importing TRL's trainer pulls in transformers' Trainer; only the trainers need it.
_LAZY = {
    "ToolEnvsGRPOTrainer": "tool_envs.integrations.trl.trainer",
    "ToolEnvsRolloutWorker": "tool_envs.integrations.trl.async_worker",  # AsyncGRPOTrainer
}

if TYPE_CHECKING:
    from tool_envs.integrations.trl.async_worker import (
        ToolEnvsRolloutWorker as ToolEnvsRolloutWorker,
    )
    from tool_envs.integrations.trl.trainer import ToolEnvsGRPOTrainer as ToolEnvsGRPOTrainer

__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""TRL integration: a ``rollout_func`` for ``GRPOTrainer`` that plays tool_envs episodes.

    from trl import GRPOTrainer
    from tool_envs.integrations.trl import TaskRowEnvironment, env_reward, make_rollout_func

    trainer = GRPOTrainer(
        model=..., args=grpo_config, train_dataset=task_rows,
        reward_funcs=[env_reward],
        rollout_func=make_rollout_func(),
        environment_factory=TaskRowEnvironment,   # hands each rollout its dataset row
    )

Pinned to TRL 1.16 (``trl>=1.16,<1.17``): the rollout and environment APIs are experimental there.
"""

from tool_envs.integrations.trl.environment import TaskRowEnvironment
from tool_envs.integrations.trl.rewards import env_reward, reward_info_func
from tool_envs.integrations.trl.rollout_func import make_rollout_func, rollouts_to_batch
from tool_envs.integrations.trl.tool_loop import tool_loop_environment

__all__ = [
    "TaskRowEnvironment",
    "env_reward",
    "make_rollout_func",
    "reward_info_func",
    "rollouts_to_batch",
    "tool_loop_environment",
]

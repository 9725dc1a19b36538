"""Which tasks an evaluation plays: env ids or task sources -> rows grouped by env, with stable ids.

Trials are matched across reruns by (env_id, task_id, trial), so a task's id must not depend on
how the run was started; rows without ``extra_info["id"]`` get one derived from their prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import tool_envs
from tool_envs.data import load_task_sources
from tool_envs.data.schema import task_id_of
from tool_envs.errors import EvalError
from tool_envs.registration import registered_id, resolve_env_id

__all__ = ["EvalTask", "derive_seed", "load_eval_tasks"]

gym.register_envs(tool_envs)


@dataclass(frozen=True)
class EvalTask:
    """One task of the run: its row, its id, and its position in its env's task list."""

    env_id: str
    task_id: str
    index: int
    row: dict[str, Any]


def derive_seed(seed: int, task_index: int, trial: int) -> int:
    """Reset seed of one trial: fixed by (run seed, task index, trial), so reruns repeat it."""
    return int(np.random.SeedSequence([seed, task_index, trial]).generate_state(1)[0])


def load_eval_tasks(
    sources: Sequence[str],
    split: str,
    limit: int | None = None,
    where: Mapping[str, Any] | None = None,
) -> dict[str, list[EvalTask]]:
    """Tasks per env id, in source order.

    A source is a registered env id (its own ``split``) or a dataset source (folder, files, Hub
    id) whose rows are routed by their ``env_id``. ``limit`` keeps the first tasks of each source.
    """
    if limit is not None and limit < 1:
        raise EvalError(f"limit must be at least 1, got {limit}")
    grouped: dict[str, list[EvalTask]] = {}
    seen: dict[tuple[str, str], int] = {}
    for source in sources:
        rows = load_task_sources([source], split, limit, where)
        for row in rows:
            resolve_env_id(row["env_id"])  # imports the module of a ``module:EnvId`` row
            env_id = registered_id(row["env_id"])
            tasks = grouped.setdefault(env_id, [])
            task = EvalTask(env_id, task_id_of(row), len(tasks), row)
            if (env_id, task.task_id) in seen:
                raise EvalError(
                    f"task id {task.task_id!r} of {env_id} appears twice (from {source!r}); "
                    "trials are matched by task id, so ids must be unique"
                )
            seen[(env_id, task.task_id)] = task.index
            tasks.append(task)
    return grouped

"""Gold trajectories as SFT data, tokenized exactly as the rollout engine tokenizes episodes.

Each env's gold turns are played through the env with the engine's scripted turns, so SFT sees the
same token layout (chat template, env turns, stop tokens) that GRPO will later train on, and the
loss covers only the assistant's tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from tool_envs.rollout.engine import Rollout, RolloutEngine


def gold_scripts(tasks: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Each task's gold assistant turns, from its env's ``gold_turns``."""
    envs: dict[str, gym.Env] = {}
    scripts = []
    try:
        for index, task in enumerate(tasks):
            env_id = task["env_id"]
            if env_id not in envs:
                envs[env_id] = gym.make(env_id)
            turns = envs[env_id].unwrapped.gold_turns(task)
            if turns is None:
                raise ValueError(f"task {index}: {env_id} has no gold turns to learn from")
            scripts.append(turns)
    finally:
        for env in envs.values():
            env.close()
    return scripts


def sft_rows(rollouts: Sequence[Rollout]) -> list[dict[str, list[int]]]:
    """TRL SFTTrainer rows: ``input_ids`` and ``assistant_masks`` (1 on policy tokens only)."""
    return [
        {
            "input_ids": r.prompt_ids + r.completion_ids,
            "assistant_masks": [0] * len(r.prompt_ids) + r.env_mask,
        }
        for r in rollouts
    ]


def gold_sft_rows(engine: RolloutEngine, tasks: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Play every task's gold turns and return SFT rows; gold that fails its task is an error."""
    rollouts = engine.run(tasks, scripts=gold_scripts(tasks))
    failed = [(r.task_id, r.reward_info) for r in rollouts if not r.success]
    if failed:
        raise ValueError(
            f"{len(failed)} gold trajectories did not solve their task, e.g. {failed[0]}"
        )
    return sft_rows(rollouts)


def check_fits(rows: Sequence[Mapping[str, list[int]]], max_length: int | None) -> None:
    """Refuse gold rows longer than SFT's ``max_length`` instead of letting TRL cut them.

    TRL truncates each row to ``max_length`` and then drops rows left without an assistant
    token, without a word: a tau episode (a ~2,500-token policy prompt with a tiny tokenizer)
    is over ``SFTConfig``'s default of 1,024, so every row vanished and training failed on an
    empty dataset, and shorter cuts would silently train on half-episodes.
    """
    if max_length is None or not rows:
        return
    longest = max(len(row["input_ids"]) for row in rows)
    too_long = sum(len(row["input_ids"]) > max_length for row in rows)
    if too_long:
        raise ValueError(
            f"{too_long} of {len(rows)} gold trajectories are longer than max_length={max_length} "
            f"tokens (the longest has {longest}); set max_length to at least {longest}, or to "
            "null, in the SFT config"
        )

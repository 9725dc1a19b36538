"""The async worker scores as GRPOTrainer does: ``reward_funcs`` summed (default ``env_reward``
alone), and the async recipe passes its ``reward_funcs`` option as the sync recipe does."""

from types import SimpleNamespace

import pytest
from recipe_helpers import load_recipe
from rollout_helpers import stub_rollout

from tool_envs.integrations.trl import env_progress, env_reward
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.player import Played

pytest.importorskip(
    "trl.experimental.async_grpo.async_grpo_trainer", reason="needs TRL >= 1.16 (train extra)"
)
from tool_envs.integrations.trl.async_worker import (
    ToolEnvsRolloutWorker,
    group_samples,
)


def rollout(reward: float, progress: float) -> Rollout:
    outcome = "success" if reward >= 1 else "failure"
    info = {"reward": reward, "outcome": outcome}
    return stub_rollout(reward, outcome, reward_info=info, progress=progress)


def scores(samples):
    return [s.metrics["reward"] for s in samples]


def test_the_reward_is_the_sum_of_the_reward_funcs():
    group = [rollout(1.0, 0.5), rollout(0.0, 0.25)]
    assert scores(group_samples(Played.of(group), 0, 0)[0]) == [1.0, 0.0]  # the env's reward
    only_progress = group_samples(Played.of(group, [env_progress]), 0, 0)[0]
    assert scores(only_progress) == [0.5, 0.25]  # the env reward is not added on top
    both = group_samples(Played.of(group, [env_reward, env_progress]), 0, 0)[0]
    assert scores(both) == [1.5, 0.25]
    assert [s.advantage for s in both] == pytest.approx([1.0, -1.0])


def test_a_worker_with_nothing_to_score_is_refused():
    with pytest.raises(ValueError, match="reward_funcs is empty"):
        ToolEnvsRolloutWorker(
            tasks=[{}], tokenizer="x", vllm_server_url="http://127.0.0.1:1", reward_funcs=()
        )


def test_the_async_recipe_hands_its_reward_funcs_to_the_worker():
    recipe = load_recipe("train_async_grpo")
    specs = [f"tool_envs.integrations.trl:{name}" for name in ("env_reward", "env_progress")]
    env_args = recipe.AsyncEnvArguments(reward_funcs=specs)
    args = SimpleNamespace(
        vllm_server_base_url="http://127.0.0.1:1", num_generations=2, max_staleness=1,
        queue_maxsize=0, seed=0, temperature=1.0, top_p=1.0, top_k=0, min_p=0.0,
        repetition_penalty=1.0, generation_kwargs=None,
    )  # fmt: skip
    worker = recipe.build_worker(env_args, args, [{"prompt": []}], config=None)
    assert worker.reward_funcs == [env_reward, env_progress]

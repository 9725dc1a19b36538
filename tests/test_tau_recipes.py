"""The tau learning recipe as a user runs it: a task set, a tiny model, SFT on gold, GRPO steps.

The episodes are multi-turn conversations with the scripted user (ask, look up, confirm, act,
report), several thousand tokens long: this checks that the recipes' budgets fit them, that SFT
learns from every gold row and that GRPO steps play whole conversations.
"""

import json

import pytest

pytest.importorskip("trl", reason="the recipes need the 'train' extra (trl)")

from recipe_helpers import REPO, assert_a_quiet_console, run

from tool_envs.tau.task_set import write_task_set
from tool_envs.tiny_models import build_tiny_model_for_env


@pytest.fixture(scope="module")
def retail_tasks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("retail-tasks")
    sizes = {"train": 24, "test": 4, "heldout": 4}
    return write_task_set(
        folder, "retail", sizes, categories=["cancel"], heldout_splits=["heldout"], prompt="compact"
    )


@pytest.fixture(scope="module")
def tiny_retail(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-retail")
    return build_tiny_model_for_env(
        "tool_envs/TauRetail-v0", folder, vocab_size=2048, num_layers=2, hidden_size=64
    )


def test_sft_on_gold_conversations_then_grpo_steps(tiny_retail, retail_tasks, tmp_path):
    sft_dir, grpo_dir = tmp_path / "sft", tmp_path / "grpo"
    out, err = run(
        "train_sft.py",
        "--config", REPO / "recipes/configs/tau_retail_cpu_sft.yaml",
        "--tasks", retail_tasks,
        "--model_name_or_path", tiny_retail,
        "--output_dir", sft_dir,
        "--max_steps", 2,
        "--logging_steps", 1,
        "--eval_every", 2,
        "--eval_tasks", 2,
        "--per_device_train_batch_size", 1,  # the config's micro-batches of one, accumulated
        "--gradient_accumulation_steps", 2,
        with_stderr=True,
        exit_code=1,  # 2 steps cannot reach the config's stop_at_success: said, not hidden
    )  # fmt: skip
    assert_a_quiet_console(out, err, steps=2)
    assert "24 gold trajectories" in out  # every row kept: none cut by max_length
    assert "greedy success checks: [(2, " in out
    # The check also scored the 2 check tasks' gold under teacher forcing (seven agent turns each).
    assert "step 2: teacher-forced on the gold: agent tokens 0." in out
    check = json.loads((sft_dir / "greedy_checks.jsonl").read_text().splitlines()[0])
    assert check["gold"]["turns"] == 14 and check["gold"]["digits"] > 0

    out, err = run(
        "train_grpo.py",
        "--config", REPO / "recipes/configs/tau_retail_cpu_grpo.yaml",
        "--tasks", retail_tasks,
        "--model_name_or_path", sft_dir,
        "--output_dir", grpo_dir,
        "--max_steps", 2,
        "--per_device_train_batch_size", 4,
        "--num_generations", 2,
        "--max_tasks", 8,
        "--heldout_tasks", 2,
        with_stderr=True,
    )  # fmt: skip
    assert_a_quiet_console(out, err, steps=2)
    records = [json.loads(line) for line in (grpo_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "env/success_rate" in r]
    assert [r["step"] for r in steps] == [1, 2]
    # The config adds partial credit for the gold actions made to the env's reward.
    assert all("rewards/env_progress/mean" in r for r in steps), "the shaping term is logged"
    assert "Held-out greedy success (2 tasks no training step saw)" in out
    summary = json.loads((grpo_dir / f"{grpo_dir.name}-summary.json").read_text())
    assert summary["n_tasks"] == 2 and summary["steps"] == 2

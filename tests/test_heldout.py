"""Held-out before/after comparison: McNemar's exact test and the paired outcomes."""

import json
import math

import pytest

from tool_envs.eval.heldout import (
    HeldoutComparison,
    HeldoutEvaluator,
    discordant,
    greedy_outcomes,
    mcnemar_exact,
)
from tool_envs.rollout.sft import gold_scripts
from tool_envs.tiny_models import build_tiny_model_for_env


def test_mcnemar_exact_matches_the_binomial_tail():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    # b=10, c=0: 2 * (1/2)^10
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(0, 10) == mcnemar_exact(10, 0)
    # b=8, c=2: 2 * P(X <= 2), X ~ Binomial(10, 1/2) = 2 * 56 / 1024
    assert mcnemar_exact(8, 2) == pytest.approx(112 / 1024)
    assert math.isclose(mcnemar_exact(51, 3), 2 * sum(math.comb(54, k) for k in range(4)) / 2**54)
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_exact(-1, 2)


def test_discordant_counts_each_side_and_refuses_unpaired_outcomes():
    assert discordant([1, 1, 0, 0, 1], [1, 0, 1, 0, 0]) == (2, 1)
    with pytest.raises(ValueError, match="3 and 2"):
        discordant([1, 0, 1], [1, 0])


def test_a_comparison_reports_success_gain_and_p_value(tmp_path):
    before = [0] * 6 + [1] * 4
    after = [1] * 6 + [1, 1, 1, 0]
    comparison = HeldoutComparison.of(before, after)
    assert comparison.success_before == 0.4 and comparison.success_after == 0.9
    assert (comparison.only_after, comparison.only_before) == (6, 1)
    assert comparison.p_value == pytest.approx(mcnemar_exact(6, 1))
    table = comparison.table()
    assert "(10 tasks no training step saw)" in table and "+50.0 points" in table
    path = comparison.write(tmp_path / "summary.json", steps=3, seconds=1.5)
    saved = json.loads(path.read_text())
    assert saved["success_before"] == 0.4 and saved["n_tasks"] == 10 and saved["steps"] == 3
    with pytest.raises(ValueError, match="no held-out outcomes"):
        HeldoutComparison.of([], [])


def test_greedy_outcomes_are_per_task_and_leave_the_model_in_training_mode(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tool_envs.calculator import default_splits

    folder = build_tiny_model_for_env("tool_envs/Calculator-v0", tmp_path, num_layers=1)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).train()
    tasks = default_splits()["test"][:3]
    outcomes = greedy_outcomes(model, tokenizer, tasks)
    assert len(outcomes) == 3 and set(outcomes) <= {0, 1}
    assert model.training  # restored: it is called in the middle of a training run
    assert greedy_outcomes(model, tokenizer, tasks) == outcomes  # greedy: the same again

    # An untrained model fails; each failure is located at its first turn off the gold.
    evaluator = HeldoutEvaluator(tokenizer, tasks)
    assert evaluator.outcomes(model) == outcomes
    found = evaluator.departures()
    assert len(found) == outcomes.count(0)
    golds = gold_scripts(tasks)
    for departure in found:
        index = [task["extra_info"]["id"] for task in tasks].index(departure.task_id)
        assert departure.expected == golds[index][departure.turn - 1]
        assert departure.said != departure.expected

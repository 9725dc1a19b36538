"""GRPOTrainer steps through make_rollout_func on real tiny models (CPU)."""

import json

import datasets
import pytest
import torch
from rollout_helpers import (
    GoldPolicyBackend,
    saved_tiny_model,
    tiny_grpo_config,
)

from tool_envs.calculator import default_splits
from tool_envs.data import encode_row
from tool_envs.integrations.trl import TaskRowEnvironment, env_reward, make_rollout_func

trl = pytest.importorskip("trl", reason="the TRL integration needs the 'train' extra (trl)")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return saved_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def distinct_tokens(completion_ids, **kwargs):
    """Varies across a group even when every env reward is 0 (a random model never succeeds)."""
    return [float(len(set(ids))) for ids in completion_ids]


def make_trainer(tiny, tmp_path, rows, rollout_func, reward_funcs=(env_reward,), **overrides):
    folder, tokenizer = tiny
    config = tiny_grpo_config(
        tmp_path,
        per_device_train_batch_size=8,  # two GRPO groups of 4
        max_completion_length=160,
        learning_rate=1e-2,  # large, so one step visibly moves a random tiny model
        logging_steps=1,
        beta=0.0,
        seed=0,
        **overrides,
    )
    dataset = datasets.Dataset.from_list([encode_row(r) for r in rows])  # as load_dataset gives
    return trl.GRPOTrainer(
        model=str(folder),
        processing_class=tokenizer,
        reward_funcs=list(reward_funcs),
        args=config,
        train_dataset=dataset,
        rollout_func=rollout_func,
        environment_factory=TaskRowEnvironment,
    )


def recording(rollout_func, sink):
    def wrapped(prompts, trainer):
        rows = [dict(e.row) for e in trainer.environments]
        output = rollout_func(prompts, trainer)
        sink.append((prompts, rows, output))
        return output

    return wrapped


def test_grpo_step_with_model_generation_changes_weights(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = default_splits()["train"][:8]
    calls = []
    trainer = make_trainer(
        tiny,
        tmp_path,
        rows,
        recording(make_rollout_func(max_tokens_per_turn=24), calls),
        (env_reward, distinct_tokens),
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters())

    prompts, batch_rows, output = calls[0]
    assert len(output["completion_ids"]) == len(prompts) == 8
    for ids, mask, logprobs in zip(
        output["completion_ids"], output["env_mask"], output["logprobs"], strict=True
    ):
        assert len(ids) == len(mask) == len(logprobs) <= 160
    # Each group of 4 shares one task, and each rollout ran the task of its own row.
    for index, row in enumerate(batch_rows):
        assert output["task_id"][index] == json.loads(row["extra_info"])["id"]
        assert row["prompt"] == prompts[index]
    assert all(len(set(output["task_id"][i : i + 4])) == 1 for i in range(0, 8, 4))
    logged = trainer.state.log_history[0]
    assert {"env/success_rate", "env/turns", "env/tool_calls", "env/parse_errors"} <= set(logged)
    assert 0 < logged["rollout/seconds"] < logged["step_time"]  # playing is part of the step


def test_grpo_step_on_multi_turn_episodes_honours_env_mask(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = default_splits()["train"][8:16]
    calls = []
    gold = GoldPolicyBackend(tiny[1], rows)
    rollout_func = recording(make_rollout_func(backend_factory=lambda trainer: gold), calls)
    trainer = make_trainer(tiny, tmp_path, rows, rollout_func)
    trainer.train()

    _, _, output = calls[0]
    assert output["env_reward"] == [1.0] * 8 and min(output["num_turns"]) >= 2
    policy_tokens = [sum(mask) for mask in output["env_mask"]]
    assert all(p < len(ids) for p, ids in zip(policy_tokens, output["completion_ids"], strict=True))
    # TRL counts only tokens with env_mask 1 as completion length: proof it used our mask.
    logged = trainer.state.log_history[0]
    assert logged["completions/mean_length"] == pytest.approx(
        sum(policy_tokens) / len(policy_tokens)
    )
    assert logged["env/success_rate"] == 1.0 and logged["rewards/env_reward/mean"] == 1.0


def register_one_turn_calculator() -> str:
    """A Calculator whose turn limit (1) ends the gold episode after its tool call."""
    import gymnasium as gym

    env_id = "tool_envs_test/OneTurnCalculator-v0"
    if env_id not in gym.registry:
        gym.register(
            env_id, entry_point="tool_envs.calculator.env:CalculatorEnv", max_episode_steps=1
        )
    return env_id


@pytest.mark.parametrize("mask_truncated", [False, True])
def test_mask_truncated_completions_leaves_turn_limit_episodes_out_of_the_loss(
    tiny, tmp_path, monkeypatch, mask_truncated
):
    """TRL's flag judges truncation by a missing stop token; a turn-limit episode ends on one,
    so the integration masks it itself. Its reward 0 still sets its group's baseline."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = default_splits()["train"][24:32]
    rows = [{**r, "env_id": register_one_turn_calculator()} for r in rows[:4]] + rows[4:]
    calls = []
    gold = GoldPolicyBackend(tiny[1], rows)
    rollout_func = recording(make_rollout_func(backend_factory=lambda trainer: gold), calls)
    trainer = make_trainer(
        tiny, tmp_path, rows, rollout_func, mask_truncated_completions=mask_truncated
    )
    trainer.train()

    output = calls[0][2]
    cut = [i for i, finish in enumerate(output["finish"]) if finish == "turn_limit"]
    assert len(cut) == 4 and len({output["task_id"][i] for i in cut}) == 1
    for i, mask in enumerate(output["env_mask"]):
        assert output["env_reward"][i] == (0.0 if i in cut else 1.0)
        assert sum(mask) == 0 if mask_truncated and i in cut else sum(mask) > 0
    logged = trainer.state.log_history[0]
    assert logged["completions/clipped_ratio"] == 0.0  # TRL alone sees no truncation
    assert logged["rewards/env_reward/mean"] == 0.5
    policy_tokens = [sum(mask) for mask in output["env_mask"]]
    assert logged["completions/mean_length"] == pytest.approx(sum(policy_tokens) / 8)


def test_missing_task_row_environment_is_a_clear_error(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    folder, tokenizer = tiny
    config = tiny_grpo_config(tmp_path)
    dataset = datasets.Dataset.from_list([encode_row(r) for r in default_splits()["train"][:4]])
    trainer = trl.GRPOTrainer(
        model=str(folder),
        processing_class=tokenizer,
        reward_funcs=[env_reward],
        args=config,
        train_dataset=dataset,
        rollout_func=make_rollout_func(),
    )
    with pytest.raises(ValueError, match="environment_factory=TaskRowEnvironment"):
        trainer.train()


def test_reward_info_functions_read_named_sub_rewards():
    from tool_envs.integrations.trl import reward_info_func

    read = reward_info_func("successful_tool_calls")
    infos = [json.dumps({"successful_tool_calls": 2}), json.dumps({"reason": "x"}), "", "null"]
    assert read.__name__ == "reward_info_successful_tool_calls"
    assert read(completions=[None] * 4, reward_info=infos) == [2.0, None, None, None]


def test_env_progress_reads_the_rollouts_progress_column_and_names_a_missing_one():
    from tool_envs.integrations.trl import env_progress

    assert env_progress(completions=[None] * 3, env_progress=[0.75, None, 1]) == [0.75, None, 1.0]
    with pytest.raises(ValueError, match="env_progress column of make_rollout_func"):
        env_progress(completions=[None], env_reward=[1.0])


GRADER_DOWN_FOR: set[str] = set()  # task ids the flaky calculator's grader cannot score


def register_flaky_calculator() -> str:
    import gymnasium as gym

    from tool_envs.calculator.env import CalculatorEnv
    from tool_envs.errors import InfrastructureError

    class Flaky(CalculatorEnv):
        """A Calculator whose (pretend) grader service is down for some tasks."""

        def _compute_reward(self):
            if self.task["extra_info"]["id"] in GRADER_DOWN_FOR:
                raise InfrastructureError("grader: connection refused", cause="judge")
            return super()._compute_reward()

    env_id = "tool_envs_test/FlakyCalculator-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=Flaky, max_episode_steps=8)
    return env_id


def test_void_episodes_are_masked_out_of_the_loss_and_counted(tiny, tmp_path, monkeypatch):
    """A group whose grader is down trains on nothing: no token in the loss, no reward, no
    share of the baseline; the step logs the void rate and its cause."""
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env_id = register_flaky_calculator()
    rows = [{**r, "env_id": env_id} for r in default_splits()["train"][16:24]]
    GRADER_DOWN_FOR.clear()
    GRADER_DOWN_FOR.add(rows[4]["extra_info"]["id"])
    calls = []
    gold = GoldPolicyBackend(tiny[1], rows)
    rollout_func = recording(
        make_rollout_func(backend_factory=lambda trainer: gold, max_void_fraction=0.5), calls
    )
    trainer = make_trainer(tiny, tmp_path, rows, rollout_func)
    trainer.train()

    output = calls[0][2]
    void = [i for i, outcome in enumerate(output["outcome"]) if outcome == "void"]
    assert len(void) == 4 and len({output["task_id"][i] for i in void}) == 1  # one whole group
    for i, ids in enumerate(output["completion_ids"]):
        if i in void:
            assert output["env_reward"][i] is None and output["env_mask"][i] == [0] * len(ids)
            assert json.loads(output["reward_info"][i])["void_cause"] == "judge"
        else:
            assert output["env_reward"][i] == 1.0 and sum(output["env_mask"][i]) > 0
    logged = trainer.state.log_history[0]
    assert logged["env/void_rate"] == 0.5 and logged["env/void/judge"] == 0.5
    policy_tokens = [sum(mask) for mask in output["env_mask"]]
    assert logged["completions/mean_length"] == pytest.approx(sum(policy_tokens) / 8)
    assert logged["rewards/env_reward/mean"] == 1.0  # the void group is not scored as 0


def test_a_run_without_reward_signal_says_so_and_counts_the_turns_it_played(
    tiny, tmp_path, monkeypatch
):
    """A cold model on env_reward alone: every group's rewards are equal (all 0), so GRPO has
    nothing to learn from; the run says so after ``steps`` such steps, once, and points to the
    SFT warm start. Its turns, cut by the token budget, are counted, not shown as 0."""
    from tool_envs.integrations.trl.callbacks import RewardSignalWatch

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = default_splits()["train"][:8]
    lines: list[str] = []
    trainer = make_trainer(
        tiny, tmp_path, rows, make_rollout_func(max_tokens_per_turn=24), max_steps=3
    )
    trainer.add_callback(RewardSignalWatch(steps=2, echo=lines.append))
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "env/reward" in entry]
    assert [entry["env/reward"] for entry in logged] == [0.0, 0.0, 0.0]
    # Each episode played at least its first turn, however it ended (most cut by the budget).
    assert all(entry["env/turns"] >= 1 and entry["env/truncated_rate"] > 0 for entry in logged)
    [warning] = lines
    assert warning.startswith("WARNING: no reward signal in steps 1-2:")
    assert "SFT" in warning and "recipes/train_sft.py" in warning

"""Teacher-forced scores on gold conversations (``tool_envs.eval.teacher_forced``): the smooth
progress measure of an SFT warm start, read by the SFT recipe at every check."""

from __future__ import annotations

import json
from types import SimpleNamespace

import gymnasium as gym
import pytest
from callback_helpers import FixedEvaluator, end_steps

torch = pytest.importorskip("torch", reason="scoring needs the 'train' extra (torch)")


import tool_envs  # noqa: E402
from tool_envs.eval.teacher_forced import GoldScores, digit_token_ids, gold_scores  # noqa: E402
from tool_envs.integrations.trl.callbacks import EnvSuccessCallback  # noqa: E402
from tool_envs.rollout import RolloutConfig, gold_sft_rows  # noqa: E402
from tool_envs.tiny_models import build_model, build_tokenizer, env_texts  # noqa: E402

gym.register_envs(tool_envs)


class NextIsPlusOne(torch.nn.Module):
    """A model whose argmax after token t is always t + 1: its right answers can be counted."""

    def __init__(self, vocab: int = 16):
        super().__init__()
        self.vocab = vocab
        self.unused = torch.nn.Parameter(torch.zeros(1))  # gold_scores reads the device from it

    def forward(self, input_ids):
        logits = torch.nn.functional.one_hot(input_ids + 1, self.vocab).float()
        return SimpleNamespace(logits=logits)


def test_scores_count_the_agents_tokens_digits_and_exact_turns():
    # Two agent turns (mask 1): tokens 1,2,3 after 5 and 1,2,4 after 7. The model says 6,2,3 and
    # 8,2,3: right at 2,3 and at 2, so 3 of 6 tokens; no turn is exact. Digits are 2, 3 and 4.
    row = {"input_ids": [5, 1, 2, 3, 7, 1, 2, 4], "assistant_masks": [0, 1, 1, 1, 0, 1, 1, 1]}
    scores = gold_scores(NextIsPlusOne(), [row], digit_ids={2, 3, 4})
    assert (scores.tokens, scores.digits, scores.turns) == (6, 4, 2)
    assert scores.token_accuracy == 0.5 and scores.digit_accuracy == 0.75
    assert scores.turns_exact == 0.0
    # Turn one exact now (0 -> 1,2,3), and a second row with no digits: the counts add up.
    exact = {"input_ids": [0, 1, 2, 3, 9, 5, 7], "assistant_masks": [0, 1, 1, 1, 0, 0, 1]}
    scores = gold_scores(NextIsPlusOne(), [row, exact], digit_ids={2, 3, 4})
    assert (scores.tokens, scores.turns) == (10, 4) and scores.turns_exact == 0.25
    assert scores.token_accuracy == 6 / 10 and scores.digit_accuracy == 5 / 6
    assert scores.summary() == "agent tokens 0.600, digits 0.833, turns exact 0.250"


def test_no_digits_and_no_agent_tokens_are_said_not_divided_by():
    row = {"input_ids": [0, 1, 5], "assistant_masks": [0, 1, 1]}
    assert gold_scores(NextIsPlusOne(), [row], digit_ids={9}).digit_accuracy is None
    with pytest.raises(ValueError, match="no agent tokens"):
        gold_scores(NextIsPlusOne(), [{"input_ids": [0, 1], "assistant_masks": [0, 0]}], {1})
    with pytest.raises(ValueError, match="at least one gold row"):
        gold_scores(NextIsPlusOne(), [], {1})


@pytest.fixture(scope="module")
def calculator_gold():
    """A tokenizer of Calculator-v0's texts and the gold rows of two of its tasks (short: a tau
    conversation is ~2,300 tokens, too long to memorise in a test)."""
    tokenizer = build_tokenizer(env_texts("tool_envs/Calculator-v0", limit=200), vocab_size=512)
    tasks = gym.make("tool_envs/Calculator-v0").unwrapped.task_splits()["test"][:2]
    config = RolloutConfig(max_completion_length=8192, max_tokens_per_turn=4096)
    return tokenizer, gold_sft_rows(tokenizer, tasks, config)


def test_a_model_fitted_to_the_gold_scores_it_exactly_and_a_random_one_does_not(calculator_gold):
    tokenizer, rows = calculator_gold
    digits = digit_token_ids(tokenizer)
    assert set(tokenizer.encode("8447", add_special_tokens=False)) <= digits
    assert not set(tokenizer.encode("email", add_special_tokens=False)) & digits
    model = build_model(tokenizer, hidden_size=64, num_layers=2)
    before = gold_scores(model, rows, digits)
    assert before.turns_exact == 0.0 and before.token_accuracy < 0.2
    assert before.digits >= 4  # the operands the agent copies and the result
    assert model.training  # the mode it was in is put back

    # The end of the first conversation (its last agent turns and the tool results between
    # them), memorised: every agent token is then right.
    tail = {key: value[-200:] for key, value in rows[0].items()}
    batch = {"input_ids": torch.tensor([tail["input_ids"]])}
    labels = batch["input_ids"].masked_fill(~torch.tensor([tail["assistant_masks"]]).bool(), -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    after = gold_scores(model, [tail], digits)
    assert after.turns >= 2 and after.digits >= 4
    assert after.token_accuracy == 1.0 and after.digit_accuracy == 1.0 and after.turns_exact == 1.0


def test_each_check_runs_the_gold_probe_and_keeps_its_scores(tmp_path, capsys):
    probed = []

    def probe(model):
        probed.append(model)
        return GoldScores(0.5 + len(probed) / 10, 0.25, 0.125, tokens=8, digits=4, turns=8)

    failing = FixedEvaluator(0.0)
    callback = EnvSuccessCallback(None, [], evaluator=failing, every_steps=5, gold_probe=probe)
    end_steps(callback, tmp_path, (5, 10), "weights")
    assert probed == ["weights", "weights"]
    out = capsys.readouterr().out
    assert "step 10: teacher-forced on the gold: agent tokens 0.700, digits 0.250" in out
    records = [json.loads(line) for line in (tmp_path / "greedy_checks.jsonl").open()]
    assert [r["gold"]["token_accuracy"] for r in records] == [0.6, 0.7]
    summary = json.loads(callback.write_summary(tmp_path / "summary.json", 10).read_text())
    assert [step for step, _ in summary["gold_checks"]] == [5, 10]
    assert summary["gold_checks"][1][1]["turns_exact"] == 0.125

"""Invariants of the rollout engine on real episodes (tiny local model, real chat template)."""

import pytest
import torch
from rollout_helpers import GoldPolicyBackend, tiny_tokenizer_and_model

from tool_envs.calculator import default_splits, gold_turns
from tool_envs.calculator.tools import CALCULATOR_TOOLS
from tool_envs.core.tools import Toolset
from tool_envs.rollout import (
    RolloutConfig,
    RolloutEngine,
    SamplingSettings,
    TransformersBackend,
)
from tool_envs.rollout.template import ChatTemplateRenderer

ROWS = default_splits()["train"][:6]


@pytest.fixture(scope="module")
def tiny():
    return tiny_tokenizer_and_model()


def check_invariants(tokenizer, rollout, config):
    """What TRL and the loss rely on, checked on one finished rollout."""
    n = len(rollout.completion_ids)
    assert len(rollout.env_mask) == n and (rollout.logprobs is None or len(rollout.logprobs) == n)
    assert 0 < n <= config.max_completion_length
    # Policy spans decode to exactly the texts the env received (plus their stop token).
    spans, current = [], []
    for token, mask in zip(rollout.completion_ids, rollout.env_mask, strict=True):
        if mask:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    assert len(spans) == len(rollout.policy_texts)
    for span, text in zip(spans, rollout.policy_texts, strict=True):
        assert tokenizer.decode(span).removesuffix(tokenizer.eos_token) == text
    if rollout.finish == "terminated":
        assert rollout.completion_ids[-1] == tokenizer.eos_token_id and rollout.env_mask[-1] == 1


def test_gold_episodes_tokens_equal_the_template_render(tiny):
    tokenizer, _ = tiny
    config = RolloutConfig(max_completion_length=400)
    with RolloutEngine(tokenizer, GoldPolicyBackend(tokenizer, ROWS), config=config) as engine:
        rollouts = engine.run(ROWS)
    renderer = ChatTemplateRenderer(tokenizer)
    for rollout, row in zip(rollouts, ROWS, strict=True):
        check_invariants(tokenizer, rollout, config)
        assert rollout.finish == "terminated" and rollout.reward == 1.0
        assert rollout.turns == len(gold_turns(row))
        # prompt + completion is token for token the template's render of the whole conversation,
        # with each assistant turn as the policy wrote it.
        full = renderer.render(
            rollout.messages, Toolset(CALCULATOR_TOOLS).schemas, add_generation_prompt=False
        )
        text = tokenizer.decode(rollout.prompt_ids + rollout.completion_ids)
        assert full.startswith(text) and full[len(text) :].strip() == ""
    # One generation call per turn, for all live episodes together.
    assert engine.generation_calls == max(len(gold_turns(r)) for r in ROWS)


def test_groups_share_task_state_and_model_rollouts_keep_their_budgets(tiny):
    tokenizer, model = tiny
    torch.manual_seed(0)
    config = RolloutConfig(max_completion_length=60, max_tokens_per_turn=16)
    tasks = [ROWS[0]] * 3 + [ROWS[1]] * 3
    with RolloutEngine(tokenizer, TransformersBackend(model), SamplingSettings(), config) as engine:
        rollouts = engine.run(tasks, seeds=[7, 7, 7, 8, 8, 8])
    for rollout in rollouts:
        check_invariants(tokenizer, rollout, config)
        assert rollout.finish in {"turn_tokens", "terminated", "completion_budget", "turn_limit"}
        assert all(lp <= 0 for lp in rollout.logprobs)
    assert [r.task_id for r in rollouts] == [ROWS[0]["extra_info"]["id"]] * 3 + [
        ROWS[1]["extra_info"]["id"]
    ] * 3
    assert len({tuple(r.prompt_ids) for r in rollouts[:3]}) == 1


def test_logprobs_are_the_models_own(tiny):
    """The sampler's logprobs equal a fresh forward pass: the bookkeeping is token-exact."""
    tokenizer, model = tiny
    torch.manual_seed(1)
    settings = SamplingSettings(temperature=0.7)
    config = RolloutConfig(max_completion_length=40, max_tokens_per_turn=12)
    with RolloutEngine(tokenizer, TransformersBackend(model), settings, config) as engine:
        rollout = engine.run(ROWS[:1])[0]
    ids = torch.tensor([rollout.prompt_ids + rollout.completion_ids])
    with torch.no_grad():
        logits = model(ids).logits[0, len(rollout.prompt_ids) - 1 : -1] / 0.7
    recomputed = torch.log_softmax(logits, -1).gather(-1, ids[0, len(rollout.prompt_ids) :, None])[
        :, 0
    ]
    policy = torch.tensor(rollout.env_mask, dtype=torch.bool)
    assert torch.allclose(recomputed[policy], torch.tensor(rollout.logprobs)[policy], atol=1e-4)


def test_completion_budget_ends_before_env_tokens_overflow(tiny):
    tokenizer, _ = tiny
    config = RolloutConfig(max_completion_length=45)
    with RolloutEngine(tokenizer, GoldPolicyBackend(tokenizer, ROWS), config=config) as engine:
        rollouts = engine.run(ROWS)
    assert {r.finish for r in rollouts} <= {"completion_budget", "terminated"}
    assert any(r.finish == "completion_budget" for r in rollouts)
    for rollout in rollouts:
        check_invariants(tokenizer, rollout, config)
        if rollout.finish == "completion_budget":
            assert rollout.env_mask[-1] == 1 and rollout.reward == 0.0  # ends on a policy turn


def test_scripted_turns_export_gold_trajectories(tiny):
    tokenizer, _ = tiny
    with RolloutEngine(
        tokenizer, GoldPolicyBackend(tokenizer, []), config=RolloutConfig()
    ) as engine:
        rollouts = engine.run(ROWS[:2], scripts=[gold_turns(r) for r in ROWS[:2]])
        assert engine.generation_calls == 0
        with pytest.raises(ValueError, match=r"script .* has 1 turns"):
            engine.run(ROWS[2:3], scripts=[gold_turns(ROWS[2])[:1]])
    assert [r.reward for r in rollouts] == [1.0, 1.0]


def test_bad_arguments_are_named(tiny):
    tokenizer, model = tiny
    with pytest.raises(ValueError, match="max_tokens_per_turn"):
        RolloutConfig(max_tokens_per_turn=0)
    engine = RolloutEngine(tokenizer, TransformersBackend(model))
    with engine, pytest.raises(ValueError, match="2 seeds for 1 tasks"):
        engine.run(ROWS[:1], seeds=[1, 2])


def test_mixed_env_rows_route_per_row_and_metrics_break_down_per_env(tiny):
    import gymnasium as gym

    from tool_envs.rollout.metrics import episode_metrics, episode_summary

    lenient = "tool_envs_test/CalculatorLenient-v0"
    if lenient not in gym.registry:
        gym.register(
            lenient,
            entry_point="tool_envs.calculator.env:CalculatorEnv",
            max_episode_steps=8,
            kwargs={"require_tool_use": False},
        )
    tokenizer, _ = tiny
    answer_only = [f"It is {row['reward_spec']['answer']}." for row in ROWS[:2]]
    rows = [ROWS[0], {**ROWS[0], "env_id": lenient}, ROWS[1], {**ROWS[1], "env_id": lenient}]
    scripts = [[answer_only[0]], [answer_only[0]], [answer_only[1]], [answer_only[1]]]
    with RolloutEngine(tokenizer, None) as engine:
        rollouts = engine.run(rows, scripts=scripts)
    # Same answer without tools: the default env refuses it, the lenient one accepts it.
    assert [r.env_id for r in rollouts] == [r["env_id"] for r in rows]
    assert [r.reward for r in rollouts] == [0.0, 1.0, 0.0, 1.0]
    metrics = episode_metrics([episode_summary(r) for r in rollouts])
    assert metrics["env/success_rate"] == 0.5
    assert metrics["env/Calculator-v0/success_rate"] == 0.0
    assert metrics["env/CalculatorLenient-v0/success_rate"] == 1.0
    assert metrics["env/CalculatorLenient-v0/turns"] == 1.0


def test_max_turns_truncates_through_the_envs_time_limit(tiny):
    tokenizer, _ = tiny
    three_turn = [r for r in ROWS if len(gold_turns(r)) >= 3][:2]
    config = RolloutConfig(max_turns=1)
    with RolloutEngine(
        tokenizer, GoldPolicyBackend(tokenizer, three_turn), config=config
    ) as engine:
        rollouts = engine.run(three_turn)
    for rollout in rollouts:
        assert rollout.finish == "turn_limit" and rollout.turns == 1 and rollout.reward == 0.0
        assert rollout.env_mask[-1] == 1  # ends on the policy's turn, not on env tokens
        check_invariants(tokenizer, rollout, config)


def test_a_context_over_max_model_len_ends_only_its_episode(tiny):
    """With a backend's max_model_len, an over-long episode ends alone, with the reason recorded."""
    tokenizer, _ = tiny
    backend = GoldPolicyBackend(tokenizer, ROWS[1:3])
    with RolloutEngine(tokenizer, backend, config=RolloutConfig()) as engine:
        unlimited = engine.run(ROWS[1:3])
    longest = max(len(r.prompt_ids) + len(r.completion_ids) for r in unlimited)
    long_row = {**ROWS[0], "prompt": [dict(m) for m in ROWS[0]["prompt"]]}
    long_row["prompt"][-1]["content"] = "x " * longest + long_row["prompt"][-1]["content"]
    rows = [long_row, *ROWS[1:3]]
    backend = GoldPolicyBackend(tokenizer, rows)
    backend.max_model_len = longest  # the normal rows' gold episodes just fit, the long one not
    with RolloutEngine(tokenizer, backend, config=RolloutConfig()) as engine:
        long, *normal = engine.run(rows)
    assert long.finish == "context_length" and long.completion_ids == [] and long.reward == 0.0
    assert f"max_model_len of {longest}" in long.reward_info["reason"]
    assert [r.completion_ids for r in normal] == [r.completion_ids for r in unlimited]
    assert all(r.finish == "terminated" and r.success for r in normal)

    # A limit inside an episode caps the turn at the room left and ends it there.
    backend.max_model_len = len(normal[0].prompt_ids) + 5
    with RolloutEngine(tokenizer, backend, config=RolloutConfig()) as engine:
        (cut,) = engine.run(rows[1:2])
    assert cut.finish == "context_length" and len(cut.completion_ids) == 5
    assert cut.env_mask == [1] * 5

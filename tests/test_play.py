"""``play``: one place chooses the engine, plays, refuses a mostly-void batch, scores and measures.

Played with a real tiny transformers model (random weights: it solves nothing) beside scripted
gold turns (which solve their task), so a batch holds both a success and a failure.
"""

from __future__ import annotations

import asyncio

import pytest
from rollout_helpers import FailsOnMarker, tiny_tokenizer_and_model

from tool_envs.calculator import default_splits, gold_turns
from tool_envs.integrations.trl import env_reward
from tool_envs.rollout import (
    Played,
    Player,
    Policy,
    RolloutConfig,
    RolloutEngine,
    RolloutVoidError,
    SamplingSettings,
    TransformersBackend,
    play,
)

# Short budgets: a random tiny model writes until a cap (its episode ends in its first turn); a
# gold turn of Calculator-v0 fits 48 tokens of the tiny tokenizer, a gold episode 512.
CONFIG = RolloutConfig(max_completion_length=512, max_tokens_per_turn=48)
GREEDY = SamplingSettings(temperature=0.0)


@pytest.fixture(scope="module")
def policy():
    tokenizer, model = tiny_tokenizer_and_model()
    backend = TransformersBackend(model.eval(), pad_token_id=tokenizer.pad_token_id)
    return Policy(tokenizer, backend, GREEDY)


@pytest.fixture(scope="module")
def tasks():
    return default_splits()["test"][:2]


def num_turns(completions, num_turns, **columns):
    return [float(n) for n in num_turns]


def test_a_batch_is_played_in_row_order_scored_and_measured(policy, tasks):
    scripts = [gold_turns(tasks[0]), None]  # the first row plays its gold, the second the model
    played = play(tasks, [7, 7], policy, CONFIG, scripts=scripts)
    first, second = played.rollouts
    assert [r.task_id for r in played.rollouts] == [t["extra_info"]["id"] for t in tasks]
    assert first.success and not second.success and played.void == 0
    assert played.rewards == [first.reward, second.reward]  # no reward funcs: the env's reward
    assert played.metrics["env/success_rate"] == 0.5
    assert played.metrics["env/reward"] == pytest.approx((first.reward + second.reward) / 2)
    assert [s["success_rate"] for s in played.summaries] == [1.0, 0.0]

    weighted = play(
        tasks, None, policy, CONFIG, scripts=scripts,
        reward_funcs=[env_reward, num_turns], reward_weights=[2.0, 0.5],
    )  # fmt: skip
    expected = [2.0 * r.reward + 0.5 * r.turns for r in weighted.rollouts]
    assert weighted.rewards == pytest.approx(expected)
    assert weighted.rollouts[0].turns >= 2  # the gold calls a tool, then answers


def test_the_engine_kind_is_the_policys_and_a_player_keeps_one_engine(policy, tasks):
    with Player(policy, CONFIG) as player:
        assert type(player.engine) is RolloutEngine  # a batched backend: lockstep
        pool = player.engine.pool
        player.play(tasks[:1])
        player.play(tasks[:1])
        assert player.engine.pool is pool
        with pytest.raises(TypeError, match="aplay\\(\\) needs the asynchronous engine"):
            asyncio.run(player.aplay(tasks[:1]))
    with pytest.raises(ValueError, match="needs a continuous-batching server backend"):
        Player(Policy(policy.tokenizer, policy.backend, engine="async"))


def test_void_episodes_get_no_reward_and_a_mostly_void_batch_raises(policy, tasks):
    FailsOnMarker.marker = tasks[1]["prompt"][-1]["content"]
    seen = []

    def counting(completions, env_reward, **columns):
        seen.append(len(completions))
        return env_reward

    config = CONFIG.replace(env_wrappers=(FailsOnMarker,), max_void_fraction=0.5)
    scripts = [gold_turns(task) for task in tasks]
    played = play(tasks, None, policy, config, scripts=scripts, reward_funcs=[counting])
    assert [r.void for r in played.rollouts] == [False, True]
    assert played.rewards == [1.0, None] and played.void_fraction == 0.5
    assert seen == [1]  # reward functions score the episodes that are not void
    assert played.metrics["env/void/env_error"] == 0.5

    with pytest.raises(RolloutVoidError, match=r"1 of 2 episodes are void.*env_error") as err:
        play(tasks, None, policy, config.replace(max_void_fraction=0.4), scripts=scripts)
    assert len(err.value.rollouts) == 2  # nothing is lost


def test_bad_inputs_are_refused_naming_what_was_wrong(policy, tasks):
    with pytest.raises(ValueError, match=r"Policy\.engine must be one of"):
        Policy(policy.tokenizer, policy.backend, engine="fast")
    with pytest.raises(ValueError, match="got 1 reward_weights for 2 reward_funcs"):
        Player(policy, CONFIG, reward_funcs=[env_reward, num_turns], reward_weights=[1.0])

    def too_few(completions, **columns):
        return []

    with pytest.raises(ValueError, match="reward function too_few gave 0 scores for 1 episodes"):
        play(tasks[:1], None, policy, CONFIG, scripts=[None], reward_funcs=[too_few])
    with pytest.raises(ValueError, match="got 2 seeds for 1 tasks"):
        play(tasks[:1], [1, 2], policy, CONFIG)


def test_a_scored_batch_can_be_built_from_rollouts(policy, tasks):
    """``Played.of`` is the scoring of ``play`` alone, for rollouts played elsewhere."""
    played = play(tasks, None, policy, CONFIG, scripts=[gold_turns(t) for t in tasks])
    again = Played.of(played.rollouts, [env_reward, env_reward])
    assert again.rewards == [2.0 * r for r in played.rewards]
    assert again.summaries == played.summaries


def first_only(completions, **columns):
    return [1.0] + [None] * (len(completions) - 1)


def nothing(completions, **columns):
    return [None] * len(completions)


def test_a_none_adds_nothing_and_all_none_leaves_an_episode_unscored(policy, tasks):
    """As GRPOTrainer sums reward functions: a reward that does not apply to a row (None) is
    left out of its sum; a row no function scores is unscored."""
    played = play(tasks, None, policy, CONFIG, scripts=[gold_turns(t) for t in tasks])
    mixed = Played.of(played.rollouts, [env_reward, first_only])
    assert mixed.rewards == [played.rewards[0] + 1.0, played.rewards[1]]
    assert Played.of(played.rollouts, [nothing, first_only]).rewards == [1.0, None]

"""``play`` with a message-level agent: the chat engine, through ``play`` and ``Player.stream``.

The gold and noop agents play the real Calculator-v0 env (gold solves every task, noop none), so
the episodes, their seeds, scores and void handling are the ones ``tool-envs eval`` records.
"""

from __future__ import annotations

import threading

import pytest
from rollout_helpers import FailsOnMarker

from tool_envs.calculator import default_splits
from tool_envs.errors import EpisodeInterrupted, EvalError
from tool_envs.integrations.trl import env_reward
from tool_envs.rollout import (
    ChatEngine,
    ChatEpisode,
    Player,
    Policy,
    RolloutConfig,
    RolloutVoidError,
    play,
)
from tool_envs.rollout.agents import GoldAgent, NoopAgent
from tool_envs.rollout.choice import make_engine
from tool_envs.rollout.player import columns

SETTINGS = RolloutConfig(max_concurrent_requests=4)


@pytest.fixture(scope="module")
def tasks():
    return default_splits()["test"][:4]


def num_turns(completions, num_turns, **columns):
    return [float(n) for n in num_turns]


def test_gold_and_noop_are_played_with_the_callers_seeds_and_scored(tasks):
    seeds = [11, 12, 13, 14]
    gold = play(tasks, seeds, Policy(agent=GoldAgent()), SETTINGS)
    assert all(isinstance(e, ChatEpisode) for e in gold.rollouts)
    assert [e.seed for e in gold.rollouts] == seeds  # row order, each with its own seed
    assert [e.task_id for e in gold.rollouts] == [t["extra_info"]["id"] for t in tasks]
    assert gold.rewards == [1.0] * 4 and gold.void == 0
    assert {e.finish for e in gold.rollouts} == {"terminated"}
    assert gold.metrics["env/success_rate"] == 1.0
    first = gold.rollouts[0]
    assert first.messages[0]["role"] == "system" and first.turns >= 2  # a tool call, an answer
    assert first.stats["tool_calls"] >= 1 and first.outcome == "success"

    noop = play(tasks, None, Policy(agent=NoopAgent()), SETTINGS)
    assert noop.rewards == [0.0] * 4 and noop.metrics["env/success_rate"] == 0.0
    assert [e.turns for e in noop.rollouts] == [1] * 4  # the empty reply is the final answer
    assert noop.metrics["env/turns"] == 1.0


def test_chat_episodes_have_no_token_columns_and_reward_functions_score_them(tasks):
    played = play(tasks[:2], None, Policy(agent=GoldAgent()), SETTINGS)
    named = columns(played.rollouts)
    assert "completion_ids" not in named and "prompt_ids" not in named  # not made up
    assert named["env_reward"] == [1.0, 1.0] and named["num_turns"] == [
        e.turns for e in played.rollouts
    ]

    with Player(
        Policy(agent=GoldAgent()), SETTINGS, reward_funcs=[env_reward, num_turns],
        reward_weights=[2.0, 0.5],
    ) as player:  # fmt: skip
        finished = sorted(player.stream(tasks[:2], [3, 4]), key=lambda f: f.index)
    assert [f.episode.seed for f in finished] == [3, 4]
    assert [f.reward for f in finished] == [2.0 + 0.5 * f.episode.turns for f in finished]

    def needs_tokens(completions, completion_ids, **columns):
        return [1.0] * len(completions)

    with pytest.raises(TypeError, match="completion_ids"):
        play(tasks[:1], None, Policy(agent=GoldAgent()), SETTINGS, reward_funcs=[needs_tokens])


class HeldAgent(GoldAgent):
    """Gold turns, but every row except ``first`` waits at its first turn for ``gate``, then
    ends at that turn if ``stop`` is set (as the chat API agent checks stop each turn)."""

    def __init__(self, first):
        self.first = first["prompt"][-1]["content"]
        self.gate = threading.Event()
        self.started = []

    def play(self, env, task, stop=None, result=None):
        self.started.append(task["extra_info"]["id"])
        if task["prompt"][-1]["content"] != self.first:
            assert self.gate.wait(30), "the test never opened the gate"
            if stop is not None and stop.is_set():
                raise EpisodeInterrupted
        return super().play(env, task, stop, result)


def test_the_stream_yields_each_episode_as_it_finishes(tasks):
    """Rows 1-3 are held until the consumer has row 0: it is yielded while they still play."""
    agent = HeldAgent(tasks[0])
    seen = []
    with Player(Policy(agent=agent), SETTINGS) as player:
        for finished in player.stream(tasks, [5, 6, 7, 8]):
            seen.append(finished.index)
            assert finished.error is None and finished.reward == 1.0
            assert finished.episode.seed == [5, 6, 7, 8][finished.index]
            agent.gate.set()
    assert seen[0] == 0 and sorted(seen) == [0, 1, 2, 3]


def test_stop_is_honoured_at_the_next_turn_and_nothing_more_starts(tasks):
    agent = HeldAgent(tasks[0])
    stop = threading.Event()
    config = RolloutConfig(max_concurrent_requests=2)
    with Player(Policy(agent=agent), config) as player:
        seen = []
        for finished in player.stream(tasks, None, stop=stop):
            seen.append(finished.index)
            stop.set()  # row 1 is playing, held at its first turn; rows 2 and 3 wait
            agent.gate.set()
        assert player.engine.playing == 0
    assert seen == [0]  # row 1 ended at its next turn (dropped), rows 2-3 never started
    assert tasks[3]["extra_info"]["id"] not in agent.started  # it would have started after stop


def test_an_env_that_raises_voids_only_its_episode_under_the_void_rule(tasks):
    FailsOnMarker.marker = tasks[1]["prompt"][-1]["content"]
    settings = SETTINGS.replace(env_wrappers=(FailsOnMarker,), max_void_fraction=0.5)
    played = play(tasks[:2], None, Policy(agent=GoldAgent()), settings)
    assert [e.void for e in played.rollouts] == [False, True]
    assert played.rewards == [1.0, None] and played.metrics["env/void/env_error"] == 0.5
    void = played.rollouts[1]
    assert void.finish == "void" and void.reward_info["void_cause"] == "env_error"
    assert void.result.error == "OSError: the tool server went away"

    with pytest.raises(RolloutVoidError, match=r"1 of 2 episodes are void.*env_error"):
        play(tasks[:2], None, Policy(agent=GoldAgent()), settings.replace(max_void_fraction=0.4))
    with Player(Policy(agent=GoldAgent()), settings.replace(max_void_fraction=0.4)) as player:
        stream = player.stream(tasks[:2])
        got = {}
        with pytest.raises(RolloutVoidError):  # once every row has its episode
            for finished in stream:
                got[finished.index] = finished.reward
    assert got == {0: 1.0, 1: None}  # both were yielded before the batch was refused


def test_a_row_its_env_cannot_start_stops_play_naming_the_task(tasks):
    broken = {**tasks[1], "reward_spec": {}}
    with Player(Policy(agent=GoldAgent()), SETTINGS) as player:
        finished = list(player.stream([tasks[0], broken]))
    failed = next(f for f in finished if f.error is not None)
    assert failed.index == 1 and failed.episode is None
    assert isinstance(failed.error, EvalError)
    task_id = tasks[1]["extra_info"]["id"]
    assert f"tool_envs/Calculator-v0 cannot start task {task_id!r}: TaskRowError" in str(
        failed.error
    )
    with pytest.raises(EvalError, match="cannot start task"):
        play([tasks[0], broken], None, Policy(agent=GoldAgent()), SETTINGS)


def test_the_engine_follows_the_policy_and_mixed_policies_are_refused():
    with make_engine(None, None, agent=NoopAgent()) as engine:
        assert type(engine) is ChatEngine
    with pytest.raises(ValueError, match="takes no tokenizer"):
        Policy(tokenizer=object(), agent=NoopAgent())
    with pytest.raises(ValueError, match="played by the chat engine, not 'lockstep'"):
        Policy(agent=NoopAgent(), engine="lockstep")
    with pytest.raises(ValueError, match="give agent="):
        Policy(engine="chat")
    with pytest.raises(ValueError, match="needs a tokenizer"):
        Policy()
    with pytest.raises(ValueError, match="scripts are for the token engines"):
        play([], None, Policy(agent=GoldAgent()), scripts=[["x"]])

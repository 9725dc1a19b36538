"""Gold episodes with failed tries before tool calls (``recovery_share``): the env answers each
try with an error (a parse error or a tool error), the gold call follows, and the loss never
covers a try."""

from __future__ import annotations

import json
import random

import pytest
from rollout_helpers import tau_gold_rows

from tool_envs.rollout import Player, Policy, RolloutConfig
from tool_envs.rollout.sft import (
    gold_scripts,
    malformed_call,
    miscopied_call,
    play_tries,
    sft_rows,
    with_recovery,
)


@pytest.fixture(scope="module")
def played():
    tokenizer, tasks, plain = tau_gold_rows(3)
    every = tau_gold_rows(3, recovery_share=1.0, seed=3)[2]
    again = tau_gold_rows(3, recovery_share=1.0, seed=3)[2]
    none = tau_gold_rows(3, recovery_share=0.0, seed=3)[2]
    return tokenizer, tasks, plain, every, again, none


def trained_tokens(row):
    return [t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if m]


def test_every_tool_call_follows_a_try_the_env_refused(played):
    tokenizer, tasks, plain, every, _, _ = played
    calls = [sum("<tool_call>" in turn for turn in gold) for gold in gold_scripts(tasks)]
    assert min(calls) >= 2  # look-ups and the cancellation
    kinds = set()
    for row, plain_row, count in zip(every, plain, calls, strict=True):
        text = tokenizer.decode(row["input_ids"])
        assert text.count("<tool_response>\nError: ") == count
        assert "Error" not in tokenizer.decode(plain_row["input_ids"])
        kinds.add(text.count("could not parse your tool call") < count)  # some tool errors
        kinds.add(text.count("could not parse your tool call") > 0)
    assert kinds == {True}


def test_the_loss_covers_exactly_the_gold_turns(played):
    _, _, plain, every, _, _ = played
    for row, plain_row in zip(every, plain, strict=True):
        assert trained_tokens(row) == trained_tokens(plain_row)  # no token of a try


def test_tries_are_drawn_per_task_and_seed(played):
    _, tasks, plain, every, again, none = played
    assert every == again and none == plain
    scripts = gold_scripts(tasks)
    half = with_recovery(tasks, scripts, 0.5, seed=0)
    (first,), (tried,) = with_recovery(tasks[:1], scripts[:1], 0.5, seed=0)
    assert (first, tried) == (half[0][0], half[1][0])  # a task's draw ignores the others
    with pytest.raises(ValueError, match=r"recovery share must be in \[0, 1\], got 1.5"):
        with_recovery(tasks, scripts, 1.5, seed=0)


def test_a_try_the_env_does_not_refuse_falls_back_to_plain_gold(played):
    """A repeated look-up draws no error: that task is played as plain gold, with no tries."""
    tokenizer, tasks, plain, _, _, _ = played
    scripts = gold_scripts(tasks)
    lookup = next(i for i, turn in enumerate(scripts[0]) if "<tool_call>" in turn)
    repeated = [*scripts[0][:lookup], scripts[0][lookup], *scripts[0][lookup:]]
    broken = malformed_call(scripts[1][lookup], random.Random(0))
    refused = [*scripts[1][:lookup], broken, *scripts[1][lookup:]]
    config = RolloutConfig(max_completion_length=8192, max_tokens_per_turn=4096)
    with Player(Policy(tokenizer), config) as player:
        rollouts, tries = play_tries(
            player, tasks[:2], scripts[:2], [repeated, refused], [{lookup}, {lookup}]
        )
    assert tries == [set(), {lookup}]
    assert sft_rows(rollouts[:1]) == plain[:1]
    assert rollouts[1].stats["parse_errors"] == 1 and rollouts[1].success


def test_a_failed_try_is_cut_or_miscopied():
    call = {"name": "get_order_details", "arguments": {"order_id": "#W1234567"}}
    turn = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
    rng = random.Random(0)
    for _ in range(50):
        broken = malformed_call(turn, rng)
        assert broken is not None and broken.endswith("\n</tool_call>")
        assert turn.startswith(broken.removesuffix("\n</tool_call>"))
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
        miscopied = miscopied_call(turn, rng)
        assert miscopied is not None
        said = json.loads(miscopied.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
        value = said["arguments"]["order_id"]
        assert said["name"] == call["name"] and 6 <= len(value) < 9
    assert malformed_call("All done. Your refund is 12.00.", rng) is None
    assert (
        miscopied_call('<tool_call>\n{"name": "f", "arguments": {"n": 3}}\n</tool_call>', rng)
        is None
    )

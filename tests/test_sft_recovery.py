"""Gold episodes with malformed tries before tool calls (``recovery_share``): the env answers each
try with its parse error, the gold call follows, and the loss never covers a try."""

from __future__ import annotations

import random

import pytest
from rollout_helpers import tau_gold_rows

from tool_envs.rollout.sft import malformed_call, with_recovery


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
    calls = [sum("<tool_call>" in turn for turn in gold) for gold in _gold(tasks)]
    assert min(calls) >= 2  # look-ups and the cancellation
    for row, plain_row, count in zip(every, plain, calls, strict=True):
        text = tokenizer.decode(row["input_ids"])
        assert text.count("Error: could not parse your tool call") == count
        assert len(row["input_ids"]) > len(plain_row["input_ids"])


def test_the_loss_covers_exactly_the_gold_turns(played):
    _, _, plain, every, _, _ = played
    for row, plain_row in zip(every, plain, strict=True):
        assert trained_tokens(row) == trained_tokens(plain_row)  # no token of a try


def test_tries_are_drawn_per_task_and_seed(played):
    _, tasks, plain, every, again, none = played
    assert every == again and none == plain
    scripts = _gold(tasks)
    half = with_recovery(tasks, scripts, 0.5, seed=0)
    (first,), (tried,) = with_recovery(tasks[:1], scripts[:1], 0.5, seed=0)
    assert (first, tried) == (half[0][0], half[1][0])  # a task's draw ignores the others
    with pytest.raises(ValueError, match=r"recovery share must be in \[0, 1\], got 1.5"):
        with_recovery(tasks, scripts, 1.5, seed=0)


def test_a_malformed_call_is_cut_inside_its_json():
    turn = (
        '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1"}}\n</tool_call>'
    )
    rng = random.Random(0)
    for _ in range(50):
        broken = malformed_call(turn, rng)
        assert broken is not None and broken.endswith("\n</tool_call>")
        assert turn.startswith(broken.removesuffix("\n</tool_call>"))
        assert "{" in broken and not broken.removesuffix("\n</tool_call>").endswith("}}")
    assert malformed_call("All done. Your refund is 12.00.", rng) is None


def _gold(tasks):
    from tool_envs.rollout.sft import gold_scripts

    return gold_scripts(tasks)

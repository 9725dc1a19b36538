"""Where failed greedy episodes first left their gold conversation."""

import json
from dataclasses import dataclass, field

import pytest

from tool_envs.eval.departures import (
    Departure,
    departure_counts,
    departures,
    first_departure,
    gold_turn_kind,
)

ASK = "Could you give me your email?"
FIND = (
    '<tool_call>\n{"name": "find_user_id_by_email", "arguments": {"email": "a@b.c"}}\n</tool_call>'
)
REPORT = "All done."


@dataclass
class Episode:
    """What ``departures`` reads of a Rollout."""

    policy_texts: list[str]
    success: bool = False
    task_id: str | None = "t"
    extra: dict = field(default_factory=dict)


def test_the_first_differing_turn_is_found_and_trailing_spaces_do_not_count():
    gold = [ASK, FIND, REPORT]
    assert first_departure([ASK + "\n", FIND, REPORT], gold) is None
    assert first_departure([ASK, FIND.replace("a@b.c", "a@b.d"), REPORT], gold) == 1
    assert first_departure([ASK], gold) == 1  # ended before the gold's second turn
    assert first_departure([], gold) == 0


def test_a_gold_turn_is_named_by_the_tool_it_calls_or_as_a_reply():
    assert gold_turn_kind(FIND) == "find_user_id_by_email"
    assert gold_turn_kind(REPORT) == "reply"
    assert gold_turn_kind("<tool_call>not json</tool_call>") == "tool call"


def test_only_failed_episodes_with_a_gold_get_a_departure():
    golds = [[ASK, FIND, REPORT]] * 3 + [None]
    episodes = [
        Episode([ASK, FIND, REPORT], success=True),  # solved: no departure
        Episode([ASK, FIND.replace("a@b.c", "x@y.z")], task_id="wrong-email"),
        Episode([ASK], task_id="stopped"),
        Episode(["anything"], task_id="no-gold"),
    ]
    found = departures(episodes, golds)
    assert found == [
        Departure("wrong-email", 2, FIND, FIND.replace("a@b.c", "x@y.z")),
        Departure("stopped", 2, FIND, None),
    ]
    assert departure_counts(found) == "turn 2: find_user_id_by_email x2"
    assert json.loads(json.dumps(found[1].as_dict()))["said"] is None
    with pytest.raises(ValueError, match="2 rollouts but 1 gold"):
        departures(episodes[:2], golds[:1])


def test_a_failure_that_said_every_gold_turn_has_no_departure():
    # The reward failed for another reason (e.g. extra turns after the gold): not a departure.
    assert departures([Episode([ASK, FIND, REPORT, "more"])], [[ASK, FIND, REPORT]]) == []

"""Where a greedy episode first left the gold conversation.

A success rate of 0.05 after thousands of SFT steps says nothing about why. For envs with gold
turns (``env.unwrapped.gold_turns``), a failed episode is compared with its gold, turn by turn:
the first policy turn that differs from the gold turn (or the gold turn the episode never got to)
names what the model has not learned yet: a tool's arguments, the confirmation, the report.
Up to the first departure the conversation is the gold one (the scripted user answers the same
words the same way), so that turn is comparable; later turns are not.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class Departure:
    """The first policy turn of a failed episode that is not the gold turn.

    ``turn`` counts policy turns from 1; ``said`` is None where the episode ended before it.
    """

    task_id: str | None
    turn: int
    expected: str
    said: str | None

    @property
    def label(self) -> str:
        """``turn N: tool_name`` for a gold tool call, ``turn N: reply`` for gold text."""
        return f"turn {self.turn}: {gold_turn_kind(self.expected)}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def gold_turn_kind(text: str) -> str:
    """The tool a gold turn calls, or ``reply`` for a turn that only talks."""
    match = _TOOL_CALL.search(text)
    if match is None:
        return "reply"
    try:
        return str(json.loads(match.group(1))["name"])
    except (ValueError, KeyError, TypeError):
        return "tool call"


def first_departure(said: Sequence[str], gold: Sequence[str]) -> int | None:
    """Index of the first gold turn ``said`` does not reproduce (spaces at the ends ignored);
    None when every gold turn was said. Turns past the gold's are not departures: the episode
    is judged by its reward, this only says where a failed one went off."""
    for index, expected in enumerate(gold):
        if index >= len(said) or said[index].strip() != expected.strip():
            return index
    return None


def departures(rollouts: Sequence[Any], golds: Sequence[Sequence[str] | None]) -> list[Departure]:
    """The first departure of every failed rollout that has a gold (paired by position)."""
    if len(rollouts) != len(golds):
        raise ValueError(f"{len(rollouts)} rollouts but {len(golds)} gold conversations")
    found = []
    for rollout, gold in zip(rollouts, golds, strict=True):
        if rollout.success or gold is None:
            continue
        index = first_departure(rollout.policy_texts, gold)
        if index is None:
            continue  # said every gold turn and still failed: the reward says why
        said = rollout.policy_texts[index] if index < len(rollout.policy_texts) else None
        found.append(Departure(rollout.task_id, index + 1, gold[index], said))
    return found


def departure_counts(found: Sequence[Departure]) -> str:
    """``turn 2: find_user_id_by_email x12, turn 7: reply x3``: the most common first."""
    counts = Counter(departure.label for departure in found)
    return ", ".join(f"{label} x{count}" for label, count in counts.most_common())

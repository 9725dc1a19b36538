"""Gold turns an agent could have written: ask, look up, confirm, act, report.

A task's gold actions carry values only the user knows (an email, an order id, a reason). A
demonstration that calls ``find_user_id_by_email`` with an email nobody gave teaches a policy to
guess, and has no user turn between its calls. The gold conversation here gets every value the
way the policy says to: it first asks the user for what the scenario says they know, asks for an
explicit yes before each change (every tau policy requires it), and reports the outcome at the end.
The simulated user's replies fall between those turns, so SFT on gold sees multi-turn episodes
with user turns, as GRPO will.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tool_envs.tau.task import GoldAction, TauRewardSpec, UserScenario, action_key
from tool_envs.tau.users.reading import IDENTITY_FIELDS

ASK_PREFIX = "To help you with that, could you please give me your"
CONFIRM_SUFFIX = "Shall I proceed? (yes/no)"


def gold_conversation(
    spec: TauRewardSpec,
    scenario: UserScenario,
    writes: Callable[[str], bool],
    identity_ask: Sequence[str] = (),
) -> list[str] | None:
    """The gold assistant turns of a task, or None where the scenario cannot ask for one.

    ``writes(name)`` says whether a tool changes the database: a change is confirmed first,
    unless the user has said no (then the change is not in the gold and nothing is asked).
    ``identity_ask`` is the domain's :attr:`~tool_envs.tau.domain.Domain.identity_ask`.
    """
    asks = {action_key(a.name, a.arguments): a.instruction for a in scenario.user_actions}
    turns = []
    if scenario.known_info:
        turns.append(ask_for(first_question_fields(scenario.known_info, identity_ask)))
    for action in spec.actions:
        if action.requestor == "user":
            instruction = asks.get(action_key(action.name, action.arguments))
            if instruction is None:
                return None  # the scenario does not say how to ask for it
            turns.append(f"Please {instruction} now, then tell me what you see.")
            continue
        if writes(action.name) and scenario.confirm:
            turns.append(confirmation(action))
        turns.append(tool_call_text(action))
    if spec.actions and spec.actions[-1].name == "transfer_to_human_agents":
        if spec.outputs:  # say what must be said, then ask before handing over
            facts = "; ".join(spec.outputs)
            ask = f"Before I transfer you: {facts}. Shall I transfer you to a human agent now?"
            turns.insert(len(turns) - 1, ask)
        return turns
    report = "All done."
    if spec.outputs:
        report += " For your information: " + "; ".join(spec.outputs) + "."
    turns.append(report)
    return turns


def first_question_fields(known_info: Mapping[str, Any], identity_ask: Sequence[str]) -> list[str]:
    """The fields the gold's first question names: ``identity_ask`` in place of the identity
    the user knows, then the user's other fields.

    Which identity a user knows is hidden from the agent (the opening message does not say), so
    a first question that named it would teach a policy to guess. The scripted user answers a
    question for an identity it lacks with the one it has (rule 2 of
    :mod:`tool_envs.tau.users.scripted`), and the gold's lookup then follows what it was told.
    """
    if not identity_ask or not any(field in IDENTITY_FIELDS for field in known_info):
        return list(known_info)
    others = [field for field in known_info if field not in IDENTITY_FIELDS]
    return [*identity_ask, *others]


def ask_for(fields: Iterable[str]) -> str:
    """One question for every field named, in the words the field is named by."""
    words = [field.replace("_", " ") for field in fields]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"{ASK_PREFIX} {listed}?"


def confirmation(action: GoldAction) -> str:
    """The change spelled out (tool and arguments), then a yes/no question."""
    details = "; ".join(f"{name}: {_value_text(value)}" for name, value in action.arguments.items())
    return f"I am about to call {action.name} ({details}). {CONFIRM_SUFFIX}"


def tool_call_text(action: GoldAction) -> str:
    """The Hermes tool call the parsers read back."""
    call = {"name": action.name, "arguments": action.arguments}
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)

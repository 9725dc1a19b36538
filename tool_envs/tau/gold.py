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
from collections.abc import Callable, Mapping
from typing import Any

from tool_envs.tau.task import GoldAction, TauRewardSpec, UserScenario, action_key

ASK_PREFIX = "To help you with that, could you please give me your"
CONFIRM_SUFFIX = "Shall I proceed? (yes/no)"


def gold_conversation(
    spec: TauRewardSpec, scenario: UserScenario, writes: Callable[[str], bool]
) -> list[str] | None:
    """The gold assistant turns of a task, or None where the scenario cannot ask for one.

    ``writes(name)`` says whether a tool changes the database: a change is confirmed first,
    unless the user has said no (then the change is not in the gold and nothing is asked).
    """
    asks = {action_key(a.name, a.arguments): a.instruction for a in scenario.user_actions}
    turns = []
    if scenario.known_info:
        turns.append(ask_for(scenario.known_info))
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


def ask_for(known_info: Mapping[str, Any]) -> str:
    """One question for every field the user knows, in the words the field is named by."""
    words = [field.replace("_", " ") for field in known_info]
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

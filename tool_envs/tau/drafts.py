"""From a drawn request to a task: the pieces every domain's task categories are built from.

A category draws a :class:`Draft`: whose account it is about and one or more :class:`Part`
(the gold calls of one request, what the user knows, how they would ask). A domain's
:class:`TaskWriter` adds how the user proves who they are, and turns the draft into the
scenario, gold actions, required outputs and tags of a task, the same way for every domain.
How those texts are worded (openings, amounts, lists) is :mod:`tool_envs.tau.wording`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tool_envs.tau.db import Record

Action = dict[str, Any]
"""One gold tool call: ``{"name": ..., "arguments": {...}}`` (plus ``requestor`` for a user's)."""

Finished = tuple[dict[str, Any], list[Action], list[str], list[str]]
"""A drawn task: (user scenario, gold actions, required outputs, tags)."""

Authenticate = Callable[[random.Random, Record], "Identity"]
"""How the owner of a draft's ``subject`` proves who they are (drawn with the task's rng)."""

Finish = Callable[[random.Random, Any, "Draft", str], Finished]
"""A :class:`~tool_envs.tau.taskgen.TaskSource`'s ``finish``: (rng, context, draft, category)."""


def call(name: str, **arguments: Any) -> Action:
    """A gold call of the agent."""
    return {"name": name, "arguments": arguments}


def user_call(name: str, **arguments: Any) -> Action:
    """A gold call the user makes on their own device (dual control)."""
    return {"name": name, "arguments": arguments, "requestor": "user"}


@dataclass
class Part:
    """One request: its gold calls, what the user knows, and how they would ask for it."""

    actions: list[Action]
    info: dict[str, str]
    instruction: str
    ask: str
    outputs: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    # What the user asks to be told ("How much will I get back?"), set only with outputs and
    # said with the request (:meth:`~tool_envs.tau.wording.Opening.asking`): the agent can only
    # know to state an output if the user asks for it.
    question: str = ""


@dataclass
class Draft:
    """A task before authentication: whose account (``subject``) and the requests on it.

    ``extra_actions`` (a total over several parts) go before the first write, as an agent
    states the total when asking for confirmation. ``confirm`` is the user's answer to it.
    """

    subject: Record
    parts: list[Part]
    reason_for_call: str
    extra_instruction: str = ""
    extra_actions: list[Action] = field(default_factory=list)
    extra_outputs: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    confirm: bool = True


@dataclass
class Identity:
    """How the user proves who they are: the lookup calls, what they know, how they are told."""

    actions: list[Action]
    known: dict[str, str]
    instruction: str
    keywords: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskWriter:
    """A domain's way of turning a draft into a task.

    Attributes:
        writes: Names of the tools that change the database.
        confirm_rule: Told to a user who will be asked to confirm a write ('' tells nothing).
        join: Joins two values the user knows for one field ('#W1 and #W2').
        join_by_key: Another joiner for some fields.
    """

    writes: Collection[str]
    confirm_rule: str = "When the agent asks you to confirm an action you asked for, say yes."
    join: str = "; "
    join_by_key: Mapping[str, str] = field(default_factory=dict)

    def merge(self, known: dict[str, str], info: Mapping[str, str]) -> None:
        """Add what one part's user knows to what the user knows already."""
        for key, value in info.items():
            if key in known and value != known[key] and value not in known[key]:
                known[key] = f"{known[key]}{self.join_by_key.get(key, self.join)}{value}"
            else:
                known.setdefault(key, value)

    def finish(
        self,
        draft: Draft,
        category: str,
        identity: Identity | None,
        persona: Callable[[], str],
    ) -> Finished:
        """The scenario, gold actions, outputs and tags of a draft.

        ``persona`` is called last, so a seeded generator draws it after everything else.
        """
        actions = list(identity.actions) if identity else []
        known = dict(identity.known) if identity else {}
        outputs: list[str] = []
        tags = [category, *draft.tags]
        instructions = []
        for part in draft.parts:
            actions += part.actions
            self.merge(known, part.info)
            outputs += [o for o in dict.fromkeys(part.outputs) if o not in outputs]
            tags += part.tags
            instructions.append(part.instruction)
        first_write = next((i for i, a in enumerate(actions) if a["name"] in self.writes), None)
        at = len(actions) if first_write is None else first_write
        actions[at:at] = draft.extra_actions
        outputs += [o for o in draft.extra_outputs if o not in outputs]
        if draft.extra_instruction:
            instructions.append(draft.extra_instruction)
        if outputs:
            tags.append("outputs")
            if any(a["name"] == "transfer_to_human_agents" for a in actions):
                raise AssertionError("a task that ends with a transfer cannot require outputs")
        if self.confirm_rule and draft.confirm and any(a["name"] in self.writes for a in actions):
            instructions.append(self.confirm_rule)
        if identity and identity.instruction:
            instructions.append(identity.instruction)
        scenario = {
            "persona": persona(),
            "reason_for_call": draft.reason_for_call,
            "known_info": known,
            "task_instructions": " ".join(instructions),
            "keywords": identity.keywords if identity else {},
            "confirm": draft.confirm,
        }
        return scenario, actions, outputs, list(dict.fromkeys(tags))

    def named_finish(self, authenticate: Authenticate, traits: Sequence[str]) -> Finish:
        """A ``finish`` for domains whose subject has a ``name`` and whose persona is that name
        and one of ``traits``: authentication is drawn first, the trait last."""

        def finish(rng: random.Random, ctx: Any, draft: Draft, category: str) -> Finished:
            name = draft.subject["name"]
            return self.finish(
                draft,
                category,
                authenticate(rng, draft.subject),
                persona=lambda: (
                    f"You are {name['first_name']} {name['last_name']}. " + rng.choice(traits)
                ),
            )

        return finish

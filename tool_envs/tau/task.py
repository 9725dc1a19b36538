"""What a tau task is: a user scenario, gold actions and required outputs, as one task row.

``reward_spec`` holds what the reward needs; ``extra_info["user_scenario"]`` what the simulated
user needs::

    reward_spec = {
        "actions": [{"name": "cancel_pending_order",
                     "arguments": {"order_id": "#W0000001", "reason": "no longer needed"}}],
        "outputs": ["1234.56"],      # strings some agent message must contain
    }
    extra_info = {"id": ..., "domain": "retail", "user_scenario": {...}, ...}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from tool_envs.errors import TaskRowError


class GoldAction(BaseModel):
    """One tool call of the gold solution; ``requestor="user"`` for a user-side (device) tool."""

    model_config = ConfigDict(extra="forbid")

    name: StrictStr
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Literal["assistant", "user"] = "assistant"


class UserAction(BaseModel):
    """Something the user can do on their own device when the agent asks (dual control).

    A scripted user performs it, once, when an agent message contains one of ``triggers``
    (default: ``instruction``), case-insensitively; an LLM user gets the device tools and
    decides itself.
    """

    model_config = ConfigDict(extra="forbid")

    name: StrictStr
    arguments: dict[str, Any] = Field(default_factory=dict)
    instruction: StrictStr = Field(
        description="How the agent would ask, e.g. 'restart your phone'."
    )
    triggers: list[StrictStr] = Field(default_factory=list)

    def matches(self, message: str) -> bool:
        lowered = message.lower()
        return any(t.lower() in lowered for t in (self.triggers or [self.instruction]))


class TauRewardSpec(BaseModel):
    """``reward_spec`` of a tau task."""

    model_config = ConfigDict(extra="forbid")

    actions: list[GoldAction] = Field(
        default_factory=list, description="Gold tool calls, replayed on a fresh DB for the hash."
    )
    outputs: list[StrictStr] = Field(
        default_factory=list, description="Strings some agent message must contain."
    )


class UserScenario(BaseModel):
    """Who the simulated user is and what they want (tau2-bench's user_scenario, plus the
    structured fields a scripted user answers from).

    ``known_info`` maps a field name (``email``, ``zip_code``, ``order_id``, ...) to its value;
    the scripted user gives a value when the agent's message mentions the field (its name with
    spaces, or one of ``keywords[field]``). ``confirm`` is how it answers a request to confirm.
    """

    model_config = ConfigDict(extra="forbid")

    persona: StrictStr = ""
    reason_for_call: StrictStr = Field(description="What the user wants, in the user's words.")
    known_info: dict[str, StrictStr] = Field(default_factory=dict)
    known_text: StrictStr = Field(
        default="",
        description="What the user knows as free text (tau2's known_info), for LLM users.",
    )
    unknown_info: StrictStr = ""
    task_instructions: StrictStr = Field(
        default="", description="What the user will and will not accept (for LLM users)."
    )
    keywords: dict[str, list[StrictStr]] = Field(default_factory=dict)
    confirm: bool = Field(default=True, description="Scripted answer to 'shall I proceed?'.")
    user_actions: list[UserAction] = Field(
        default_factory=list, description="Device actions a scripted user takes when asked."
    )

    def instruction(self) -> str:
        """The whole scenario as one instruction text, for an LLM user's system prompt."""
        parts = [self.persona, f"Reason for the call: {self.reason_for_call}"]
        if self.known_text:
            parts.append(f"What you know: {self.known_text}")
        elif self.known_info:
            known = "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in self.known_info.items())
            parts.append(f"You know: {known}.")
        if self.unknown_info:
            parts.append(f"You do not know: {self.unknown_info}")
        if self.task_instructions:
            parts.append(self.task_instructions)
        return "\n".join(part for part in parts if part)


# Free-text arguments no two agents write alike: the call itself is what counts.
NAME_ONLY_ACTIONS = frozenset({"transfer_to_human_agents"})


def action_key(name: str, arguments: Mapping[str, Any]) -> str:
    """What makes two calls the same action (name and arguments, or the name alone)."""
    if name in NAME_ONLY_ACTIONS:
        return name
    return name + json.dumps(arguments, sort_keys=True)


def parse_reward_spec(reward_spec: Mapping[str, Any]) -> TauRewardSpec:
    return _validate(TauRewardSpec, reward_spec, "reward_spec", "invalid tau task")


def parse_scenario(extra_info: Mapping[str, Any]) -> UserScenario:
    scenario = extra_info.get("user_scenario")
    if not isinstance(scenario, Mapping):
        raise TaskRowError(
            "a tau task needs extra_info['user_scenario'] (persona, reason_for_call, known_info, "
            "...)",
            field="extra_info.user_scenario",
        )
    return _validate(UserScenario, scenario, "extra_info.user_scenario", "invalid user scenario")


def db_seed_of(extra_info: Mapping[str, Any]) -> int:
    """The generated database a task runs on (``extra_info['db_seed']``; 0, the shipped env's
    database, when absent). Other seeds are databases of the same shape with other customers,
    orders and ids: task sets drawn from many of them are far larger than one database allows.
    """
    seed = extra_info.get("db_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TaskRowError(
            f"extra_info['db_seed'] must be a whole number >= 0 (0: the shipped database), "
            f"got {seed!r}",
            field="extra_info.db_seed",
        )
    return seed


M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], value: Mapping[str, Any], field: str, what: str) -> M:
    """``model`` from ``value``, or a TaskRowError naming the first bad field below ``field``."""
    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        where, message = _first(exc)
        field = f"{field}.{where}" if where else field
        raise TaskRowError(f"{what}: {message}", field=field) from None


def _first(exc: ValidationError) -> tuple[str, str]:
    error = exc.errors()[0]
    loc = ".".join(str(part) for part in error["loc"])
    return loc, f"{loc}: {error['msg']}" if loc else error["msg"]


def tau_task_row(
    *,
    env_id: str,
    domain: str,
    task_id: str,
    policy: str,
    scenario: UserScenario | Mapping[str, Any],
    actions: Sequence[Mapping[str, Any]],
    outputs: Sequence[str] = (),
    opening: str | None = None,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated task row; the first user message is ``opening`` or the reason for the call."""
    scenario = UserScenario.model_validate(
        scenario if isinstance(scenario, UserScenario) else dict(scenario)
    )
    spec = TauRewardSpec.model_validate({"actions": list(actions), "outputs": list(outputs)})
    # Fields only dual-control domains use are left out when unused, so rows stay minimal.
    scenario_json = scenario.model_dump(mode="json")
    if not scenario.user_actions:
        del scenario_json["user_actions"]
    if not scenario.known_text:
        del scenario_json["known_text"]
    spec_json = spec.model_dump(mode="json")
    for action in spec_json["actions"]:
        if action["requestor"] == "assistant":
            del action["requestor"]
    info = {"id": task_id, "domain": domain, "user_scenario": scenario_json}
    info.update(extra_info or {})
    return {
        "prompt": [
            {"role": "system", "content": policy},
            {"role": "user", "content": opening or scenario.reason_for_call},
        ],
        "env_id": env_id,
        "reward_spec": spec_json,
        "extra_info": info,
    }

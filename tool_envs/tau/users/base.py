"""The one interface every simulated user follows, and what it costs."""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, fields
from typing import Any

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import ToolOutcome, Toolset
from tool_envs.tau.task import UserScenario

STOP = "###STOP###"
"""A user message containing this ends the episode (tau-bench's convention)."""


@dataclass
class UserUsage:
    """LLM usage of one episode's user, summed over every call (zero for scripted users)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: UserUsage) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def as_dict(self) -> dict[str, float]:
        """Every count by its field's name, in field order."""
        return asdict(self)


class DeviceTools:
    """The tools a user has on their own device in a dual-control domain.

    Wraps the domain's user toolset so the env can see what the user did: every call is
    recorded in :attr:`calls` (the env clears it on reset).
    """

    def __init__(self, toolset: Toolset):
        self.toolset = toolset
        self.calls: list[tuple[ToolCall, ToolOutcome]] = []

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return self.toolset.schemas

    @property
    def names(self) -> list[str]:
        return self.toolset.names

    def call(self, call: ToolCall) -> ToolOutcome:
        outcome = self.toolset.call(call)
        self.calls.append((call, outcome))
        return outcome


class UserSimulator(abc.ABC):
    """Plays the customer. ``start`` begins an episode, ``reply`` answers one agent message.

    The user sees only what the agent says (never tool calls or results). A reply containing
    :data:`STOP` ends the episode. Construction must not call any model: envs build users eagerly.
    """

    usage: UserUsage
    strategy: str = "custom"
    """How this user plays (``scripted``, ``llm``, ``react``, ``verify``, ``reflection``,
    ``human``): user faults are reported per strategy."""
    waits: bool = True
    """Whether a reply may wait on something outside the process (a model's API, a person);
    the scripted user's never does (see :attr:`tool_envs.core.ToolEnv.steps_wait`)."""

    @abc.abstractmethod
    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        """Begin an episode; ``opening`` is the user's first message, already in the prompt.

        ``device`` holds the user's own tools in a dual-control domain (None elsewhere).
        """

    @abc.abstractmethod
    def reply(self, agent_message: str) -> str:
        """The user's answer to the agent's message.

        A user that cannot answer for reasons that are not the agent's (its model's API failed
        after its retries, it produced an empty message) raises
        :class:`~tool_envs.errors.InfrastructureError` with cause ``"user_simulator"`` and leaves
        its own state as before the call; the env then voids the episode.
        """

    def instructions(self) -> str:
        """What the user was told and keeps to itself this episode (its scenario, its rules):
        a reply that repeats it is a fault (:mod:`tool_envs.tau.users.faults`)."""
        return ""

    def close(self) -> None:
        """Release clients or processes (none by default)."""
        return None


class ScenarioUser(UserSimulator):
    """A user that keeps what every built-in user keeps of an episode: its usage, its device
    and its scenario's instruction, which :meth:`instructions` reports unless overridden.

    A subclass's ``start`` calls ``super().start(...)`` first, then sets up its own play.
    """

    def __init__(self) -> None:
        self.usage = UserUsage()
        self.device: DeviceTools | None = None
        self._scenario_instruction = ""

    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        self.usage = UserUsage()
        self.device = device
        self._scenario_instruction = scenario.instruction()

    def instructions(self) -> str:
        return self._scenario_instruction

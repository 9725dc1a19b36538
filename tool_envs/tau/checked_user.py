"""The simulated user's side of a tau-style episode, one piece for tau's and tau2's envs.

Both start the user on the task's scenario, check each of its replies against that scenario
(:mod:`tool_envs.tau.users.faults`) and re-check a stored conversation the same way; they differ
only in the words that end a conversation, the fault kinds checked, the domain's words for the
user's fields and how far a task is.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from tool_envs.core.messages import Message
from tool_envs.tau.task import UserScenario, parse_scenario
from tool_envs.tau.users.base import STOP, DeviceTools, UserSimulator
from tool_envs.tau.users.faults import (
    FAULT_KINDS,
    TaskState,
    UserFault,
    UserFaultCheck,
    stored_instructions,
)

__all__ = ["CheckedUser", "StateOf"]

StateOf = Callable[[Sequence[Message]], TaskState]
"""How far a task is after a stored conversation's messages before a user turn."""


class CheckedUser(abc.ABC):
    """Mixin for a :class:`~tool_envs.core.env.ToolEnv` whose ``user`` plays a scenario and is
    checked on every reply (when ``check_user``); a user fault ends the episode, void.

    A subclass sets :attr:`user_stops` and :attr:`user_fault_kinds` where they differ from
    tau's, and gives the domain's field words (:meth:`_user_keywords`), how far the task is now
    (:meth:`_task_state`) and after a stored conversation (:meth:`_stored_state`), and what the
    user's device showed (:meth:`_device_outputs`).
    """

    user_stops: ClassVar[tuple[str, ...]] = (STOP,)
    """A user reply containing one of these ends the conversation."""
    user_fault_kinds: ClassVar[tuple[str, ...]] = FAULT_KINDS
    """The user fault kinds checked."""

    user: UserSimulator
    check_user: bool
    _turn: int
    _messages: list[Message]
    _user_check: UserFaultCheck | None
    _user_fault: UserFault | None

    @abc.abstractmethod
    def _user_keywords(self) -> Mapping[str, tuple[str, ...]]:
        """The domain's words for the fields of a scenario's ``known_info``."""

    @abc.abstractmethod
    def _task_state(self) -> TaskState:
        """How far the episode's task is now."""

    @abc.abstractmethod
    def _stored_state(
        self, task: Mapping[str, Any], device_calls: Sequence[Mapping[str, Any]]
    ) -> StateOf:
        """How far ``task`` is along a stored conversation with these device calls."""

    @abc.abstractmethod
    def _device_outputs(self) -> list[str]:
        """What the user's device tools answered this episode."""

    def _start_user(
        self, task: Mapping[str, Any], scenario: UserScenario, device: DeviceTools | None
    ) -> None:
        """Start the user on ``scenario`` with the task's opening message, and its check."""
        opening = next((m["content"] for m in task["prompt"] if m["role"] == "user"), "")
        self.user.start(scenario, opening, device)
        self._user_fault = None
        self._user_check = None
        if self.check_user:
            self._user_check = self._fault_check(scenario, self.user.instructions())

    def _ends_conversation(self, answer: str) -> bool:
        """Whether ``answer`` says one of :attr:`user_stops`, which end the conversation."""
        return any(stop in answer for stop in self.user_stops)

    def _check_reply(self, agent_message: str, answer: str, stopped: bool) -> bool:
        """Check the user's ``answer`` to ``agent_message``; True when it is a fault."""
        if self._user_check is not None:
            self._user_fault = self._user_check.check(
                turn=self._turn,
                agent_message=agent_message,
                reply=answer,
                stopped=stopped,
                before=self._messages[:-1],
                state=self._task_state(),
                device_outputs=self._device_outputs(),
            )
        return self._user_fault is not None

    def _user_checks(self) -> list[str]:
        """The fault kinds this env checked, for ``reward_info["user_checks"]``."""
        return list(self.user_fault_kinds) if self.check_user else []

    def recheck_user(
        self,
        task: Mapping[str, Any],
        messages: Sequence[Message],
        device_calls: Sequence[Mapping[str, Any]] = (),
    ) -> UserFault | None:
        """The user fault of a stored conversation of ``task``, found as it would have been
        while playing (``tool-envs check-users`` re-checks saved eval runs this way).
        ``device_calls`` are the episode's ``reward_info["user_device_calls"]``."""
        state_of = self._stored_state(task, device_calls)
        scenario = parse_scenario(task["extra_info"])
        check = self._fault_check(scenario, stored_instructions(scenario))
        return check.recheck(messages, device_calls, state_of, stops=self.user_stops)

    def _fault_check(self, scenario: UserScenario, instructions: str) -> UserFaultCheck:
        return UserFaultCheck.of(
            scenario, self._user_keywords(), instructions, kinds=self.user_fault_kinds
        )

"""A deterministic, offline user: answers from the scenario's fields, confirms or declines, stops.

Rules, applied to each agent message in order:

0. in a dual-control domain, the message asks for one of the scenario's ``user_actions`` not yet
   done (one of its triggers appears) -> do it on the device and report what the device shows;
1. the message asks something (a "?" or "please provide/tell/share ...") and mentions fields of
   ``known_info`` (by name or keyword) not given yet -> give those values;
2. it asks for confirmation ("confirm", "proceed", "shall I", ...) -> yes or no, as the
   scenario's ``confirm`` says (a confirmation that repeats details already given is still a
   confirmation);
3. it asks again for details already given -> give them again;
4. anything else -> thank the agent and end with ``###STOP###``.

So an agent that asks for what it needs, confirms before writing, and then reports back gets a
cooperative user, and training and CI need no LLM.
"""

from __future__ import annotations

import re

from tool_envs.core.parsers.base import ToolCall
from tool_envs.tau.task import UserAction, UserScenario
from tool_envs.tau.users.base import STOP, DeviceTools, UserSimulator, UserUsage

_CONFIRMATION = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|would you like|do you want|is that correct|"
    r"is this correct|are you sure|yes or no|\(yes/no\)|may i|can i go ahead)\b",
    re.IGNORECASE,
)
# Fields whose plain name rarely appears in how agents ask for them.
DEFAULT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail"),
    "zip_code": ("zip", "postal code", "postcode"),
    "name": ("your name", "full name", "first name", "last name", "name and"),
    "user_id": ("user id", "user_id", "account id", "customer id"),
    "order_id": ("order id", "order number", "order_id", "which order"),
    "reservation_id": ("reservation id", "reservation number", "confirmation number",
                       "booking reference", "reservation_id", "which reservation"),
    "payment_method": ("payment method", "pay with", "payment", "refund to"),
}  # fmt: skip


_REQUEST = re.compile(
    r"\?|\b(please (provide|share|tell|give|confirm|let me know)|could you|can you|what is your)\b",
    re.IGNORECASE,
)


class ScriptedUser(UserSimulator):
    """Deterministic user for training and tests (see the module docstring for its rules)."""

    def __init__(self, keywords: dict[str, tuple[str, ...]] | None = None):
        self.extra_keywords = dict(keywords or {})
        self.usage = UserUsage()
        self._scenario: UserScenario | None = None
        self._patterns: list[tuple[str, str, re.Pattern[str]]] = []
        self._given: set[str] = set()
        self._device: DeviceTools | None = None
        self._pending_actions: list[UserAction] = []

    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        self._scenario = scenario
        self._device = device
        self._pending_actions = list(scenario.user_actions) if device is not None else []
        self.usage = UserUsage()
        self._patterns = []
        self._given = set()
        for field, value in scenario.known_info.items():
            words = {field.replace("_", " "), field}
            words.update(DEFAULT_KEYWORDS.get(field, ()))
            words.update(self.extra_keywords.get(field, ()))
            words.update(scenario.keywords.get(field, ()))
            alternation = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
            self._patterns.append((field, value, re.compile(rf"\b(?:{alternation})", re.I)))

    def reply(self, agent_message: str) -> str:
        if self._scenario is None:
            raise RuntimeError("call start() before reply()")
        done = self._act_on_device(agent_message)
        if done:
            return done
        if not _REQUEST.search(agent_message):
            return f"Thank you, that's all I needed. {STOP}"
        mentioned = [(field, value) for field, value, pattern in self._patterns
                     if pattern.search(agent_message)]  # fmt: skip
        new = [(field, value) for field, value in mentioned if field not in self._given]
        if new:
            self._given.update(field for field, _ in new)
            return _details(new)
        if _CONFIRMATION.search(agent_message):
            return (
                "Yes, please go ahead." if self._scenario.confirm else "No, please don't do that."
            )
        if mentioned:
            return _details(mentioned)
        return f"Thank you, that's all I needed. {STOP}"

    def _act_on_device(self, agent_message: str) -> str:
        """Do every pending device action the message asks for; describe what happened.

        A state-changing action is used up once it succeeds (a failed one, asked for too early,
        can be asked for again); a look-only one (a tool without ``writes``) can be repeated.
        An action listed twice (reboot, then reboot again later) needs two requests.
        """
        if self._device is None:
            return ""
        reports = []
        asked = []  # the same action listed twice (a second reboot) is done once per request
        for action in self._pending_actions:
            if action.matches(agent_message) and action not in asked:
                asked.append(action)
        for action in asked:
            outcome = self._device.call(ToolCall(action.name, dict(action.arguments)))
            if outcome.error is None and self._device.toolset[action.name].writes:
                self._pending_actions.remove(action)
            reports.append(
                f"OK, I did that ({action.instruction}). My phone shows: {outcome.content}"
            )
        return " ".join(reports)


def _details(fields: list[tuple[str, str]]) -> str:
    return " ".join(f"My {field.replace('_', ' ')} is {value}." for field, value in fields)

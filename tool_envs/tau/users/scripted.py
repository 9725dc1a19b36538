"""A deterministic, offline user: answers from the scenario's fields, confirms or declines, stops.

It plays the scenario's person fairly: it answers what it is asked however the agent words it
(a question, a statement such as "I need your email", an imperative, a request after a
pleasantry or an apology), says what it does not know (offering what it does instead), and ends
the chat only when the agent reports, says goodbye, asks whether there is anything else, or
clearly cannot help. A message is read by :func:`~tool_envs.tau.users.acts.read_turn`: its act
(ask, approve, anything else, end, open, a device step) by a classifier trained on labelled agent
messages, the fields it asks for by the rules of :mod:`~tool_envs.tau.users.reading`. Rules,
applied to each agent message in order:

0. in a dual-control domain, the message asks for one of the scenario's ``user_actions`` not yet
   done (one of its triggers appears in a request, or anywhere when the act is a device step;
   not when the act is an approval, a report or "anything else") -> do it on the device and
   report what the device shows;
1. it asks for fields of ``known_info`` (by name or keyword) not given yet -> give those values;
   if it also asks for an identity field the user does not know (an email it never had), say so
   and give the identity fields it does know instead;
2. it asks the user to approve an action ("Shall I proceed?", "Would you like me to cancel
   it?", "Please confirm ...") -> yes or no, as the scenario's ``confirm`` says (the details a
   confirmation spells out are not questions);
3. it asks again for details already given -> give them again;
4. it asks only for fields the user does not know -> say so; for an identity field (email, name,
   zip code, phone, date of birth, member id, user id) offer the identity fields it knows, which
   the policies accept instead (retail: name and zip code for an email); otherwise offer the
   known details not given yet, or repeat the request;
5. it asks the user to identify themselves without naming a detail -> give the identity fields
   it knows;
6. it asks whether there is anything else (and no known field is asked by those words), or it
   reports an outcome, says goodbye, refuses or hands the user over, asking nothing -> thank the
   agent and end with ``###STOP###``;
7. any other message: an open question ("How can I help you today?") -> repeat the request; a
   message that asks nothing and ends nothing ("Let me check that.") -> acknowledge it.

A message the user cannot answer (rules 4 and 7) never ends the chat by itself; after
:data:`PATIENCE` such messages in a row the user concludes the agent cannot help and stops.
So an agent that asks for what it needs, in any order and any wording its policy allows,
confirms before writing and then reports back gets a cooperative user, and training and CI need
no LLM. ``tests/test_user_wordings.py`` checks these rules on hundreds of agent messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tool_envs.core.parsers.base import ToolCall
from tool_envs.tau.task import UserAction, UserScenario
from tool_envs.tau.users.acts import Act, read_turn
from tool_envs.tau.users.base import STOP, DeviceTools, ScenarioUser
from tool_envs.tau.users.reading import (
    DEFAULT_KEYWORDS,
    IDENTITY_FIELDS,
    FieldWords,
    Reading,
    requests_to_act,
    vocabulary,
)

__all__ = ["DEFAULT_KEYWORDS", "IDENTITY_FIELDS", "PATIENCE", "ScriptedUser"]

PATIENCE = 3
"""Messages in a row the user cannot answer before it concludes the agent cannot help."""

_MAY_ACT = ("device", "ask", "open")


class ScriptedUser(ScenarioUser):
    """Deterministic user for training and tests (see the module docstring for its rules).

    Args:
        keywords: Extra words per field, the domain's; a field named here that the scenario
            does not know is one the user can say it does not know.
    """

    strategy = "scripted"
    waits = False

    def __init__(self, keywords: Mapping[str, Iterable[str]] | None = None):
        super().__init__()
        self.extra_keywords = {field: tuple(words) for field, words in (keywords or {}).items()}
        self._scenario: UserScenario | None = None
        self._opening = ""
        self._known: list[tuple[str, str]] = []
        self._vocabulary: list[FieldWords] = []
        self._given: set[str] = set()
        self._unanswered = 0
        self._pending_actions: list[UserAction] = []

    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        super().start(scenario, opening, device)
        self._scenario = scenario
        self._opening = opening or scenario.reason_for_call
        self._pending_actions = list(scenario.user_actions) if device is not None else []
        self._given = set()
        self._unanswered = 0
        self._vocabulary = vocabulary(scenario, self.extra_keywords)
        self._known = list(scenario.known_info.items())

    def read(self, agent_message: str) -> Reading:
        """What ``agent_message`` asks of this user (its scenario's fields, known ones first)."""
        return self.read_turn(agent_message)[1]

    def read_turn(self, agent_message: str) -> tuple[Act, Reading]:
        """The act ``agent_message`` asks of this user and what it asks for
        (:func:`~tool_envs.tau.users.acts.read_turn`)."""
        return read_turn(
            agent_message,
            self._vocabulary,
            known=len(self._known),
            device=self.device is not None,
        )

    def wanted(self, reading: Reading) -> tuple[list[str], list[str]]:
        """The fields a message asks for that the user knows, and those it does not."""
        known = dict(self._known)
        asked = [field for field in reading.asked if field in known]
        return asked, [field for field in reading.asked if field not in known]

    def reply(self, agent_message: str) -> str:
        if self._scenario is None:
            raise RuntimeError("call start() before reply()")
        act, reading = self.read_turn(agent_message)
        # A request the rules see to act on the device is done unless the message is read as an
        # approval, a report or a goodbye ("Please make payment now" is an action, not a field).
        done = self._act_on_device(agent_message, loose=act == "device") if act in _MAY_ACT else ""
        if done:
            return done
        known = dict(self._known)
        asked_fields, unknown = self.wanted(reading)
        asked = [(field, known[field]) for field in asked_fields]
        new = [(field, value) for field, value in asked if field not in self._given]
        if new:
            return self._answered(self._cannot_give(unknown, new))
        if reading.confirmation:
            return self._answered(
                "Yes, please go ahead." if self._scenario.confirm else "No, please don't do that."
            )
        if reading.anything_else:  # asked again once its answer (a follow-up) was given
            return f"No, that's all. Thank you! {STOP}"
        if asked:
            return self._answered(self._cannot_give(unknown, asked))
        if unknown:
            return self._unanswerable(self._cannot_give(unknown, []))
        identity = [(f, v) for f, v in self._known if f in IDENTITY_FIELDS]
        if reading.identity and identity:
            self._given.update(field for field, _ in identity)
            return self._answered(_details(identity))
        if reading.ends:
            return f"Thank you, that's all I needed. {STOP}"
        if reading.request:
            return self._unanswerable(self._opening)
        return self._unanswerable("Okay, thank you.")

    def _cannot_give(self, unknown: list[str], new: list[tuple[str, str]]) -> str:
        """Give ``new``; for the unknown fields asked, say so and offer what the user knows.

        Where identity fields are among the unknown ones, only those are named (the caller's
        own name and the account name are asked with the same words).
        """
        self._given.update(field for field, _ in new)
        if not unknown:
            return _details(new)
        if any(field in IDENTITY_FIELDS for field in unknown):
            unknown = [field for field in unknown if field in IDENTITY_FIELDS]
        missing = _join([field.replace("_", " ") for field in unknown])
        offer: list[tuple[str, str]] = []
        if unknown[0] in IDENTITY_FIELDS:
            offer = [(f, v) for f, v in self._known if f in IDENTITY_FIELDS]
            offer = [item for item in offer if item not in new]
            head = f"I'm sorry, I can't give you my {missing}"
            if offer:
                head += ", but I can give you my " + _join([f.replace("_", " ") for f, _ in offer])
            head += "."
        else:
            head = f"I'm sorry, I don't know my {missing}."
            if not new:
                offer = [(f, v) for f, v in self._known if f not in self._given]
        if not offer and not new:
            return f"{head} {self._opening}"
        self._given.update(field for field, _ in offer)
        return f"{head} {_details([*new, *offer])}"

    def _answered(self, answer: str) -> str:
        self._unanswered = 0
        return answer

    def _unanswerable(self, answer: str) -> str:
        self._unanswered += 1
        if self._unanswered >= PATIENCE:
            return f"I don't think you can help me with this. Goodbye. {STOP}"
        return answer

    def _act_on_device(self, agent_message: str, loose: bool = False) -> str:
        """Do every pending device action the message asks for; describe what happened.

        A state-changing action is used up once it succeeds (a failed one, asked for too early,
        can be asked for again); a look-only one (a tool without ``writes``) can be repeated.
        An action listed twice (reboot, then reboot again later) needs two requests.
        """
        if self.device is None:
            return ""
        reports = []
        asked = []  # the same action listed twice (a second reboot) is done once per request
        requests = requests_to_act(agent_message)
        for action in self._pending_actions:
            if action.matches(requests) and action not in asked:
                asked.append(action)
        if loose and not asked:  # asked for an action in words the request rules do not see
            asked = [a for a in self._pending_actions if a.matches(agent_message)][:1]
        for action in asked:
            outcome = self.device.call(ToolCall(action.name, dict(action.arguments)))
            if outcome.error is None and self.device.toolset[action.name].writes:
                self._pending_actions.remove(action)
            reports.append(
                f"OK, I did that ({action.instruction}). My phone shows: {outcome.content}"
            )
        if reports:
            self._unanswered = 0
        return " ".join(reports)


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _details(fields: list[tuple[str, str]]) -> str:
    return " ".join(f"My {field.replace('_', ' ')} is {value}." for field, value in fields)

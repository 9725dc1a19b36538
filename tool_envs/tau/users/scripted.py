"""A deterministic, offline user: answers from the scenario's fields, confirms or declines, stops.

It plays the scenario's person fairly: it answers what it knows, says what it does not know
(offering what it does instead), and ends the chat only when the agent is done or clearly cannot
help. Rules, applied to each agent message in order:

0. in a dual-control domain, the message asks for one of the scenario's ``user_actions`` not yet
   done (one of its triggers appears) -> do it on the device and report what the device shows;
1. the message asks nothing (no "?" and no "please provide/tell/share ...": the agent reports a
   result, says goodbye or says it cannot help) -> thank the agent and end with ``###STOP###``;
2. it asks for fields of ``known_info`` (by name or keyword) not given yet -> give those values;
   if it also asks for an identity field the user does not know (an email it never had), say so
   and give the identity fields it does know instead;
3. it asks for confirmation ("confirm", "proceed", "shall I", ...) -> yes or no, as the
   scenario's ``confirm`` says (a confirmation that repeats details already given is still a
   confirmation);
4. it asks again for details already given -> give them again;
5. it asks only for fields the user does not know -> say so; for an identity field (email, name,
   zip code, phone, date of birth, member id, user id) offer the identity fields it knows, which
   the policies accept instead (retail: name and zip code for an email); otherwise offer the
   known details not given yet, or repeat the request;
6. it asks whether there is anything else -> the agent considers the request handled: thank it
   and end with ``###STOP###``;
7. any other question ("How can I help you today?") -> repeat the request.

A question the user cannot answer (rules 5 and 7) never ends the chat by itself; after
:data:`PATIENCE` such questions in a row the user concludes the agent cannot help and stops.
So an agent that asks for what it needs, in any order its policy allows, confirms before writing
and then reports back gets a cooperative user, and training and CI need no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tool_envs.core.parsers.base import ToolCall
from tool_envs.tau.task import UserAction, UserScenario
from tool_envs.tau.users.base import STOP, DeviceTools, UserSimulator, UserUsage

PATIENCE = 3
"""Questions in a row the user cannot answer before it concludes the agent cannot help."""

_CONFIRMATION = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|would you like|do you want|is that correct|"
    r"is this correct|are you sure|yes or no|\(yes/no\)|may i|can i go ahead)\b",
    re.IGNORECASE,
)
_ANYTHING_ELSE = re.compile(
    r"\b(anything else|something else|any other (question|request|issue)s?)\b", re.IGNORECASE
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
IDENTITY_FIELDS = frozenset(
    {
        "email", "name", "zip_code", "user_id", "phone", "phone_number", "date_of_birth",
        "member_id", "patient_name", "patient_date_of_birth", "patient_member_id",
    }
)  # fmt: skip
"""Fields a policy identifies a customer by. Asked for one it does not know, the user offers
the ones it knows: every policy accepts another identity (retail: name and zip code instead of
an email; telecom: name or date of birth; healthcare: member id, name or email with the date of
birth)."""

_REQUEST = re.compile(
    r"\?|\b(please (provide|share|tell|give|confirm|let me know)|could you|can you|what is your)\b",
    re.IGNORECASE,
)


class ScriptedUser(UserSimulator):
    """Deterministic user for training and tests (see the module docstring for its rules).

    Args:
        keywords: Extra words per field, the domain's; a field named here that the scenario
            does not know is one the user can say it does not know.
    """

    def __init__(self, keywords: Mapping[str, Iterable[str]] | None = None):
        self.extra_keywords = {field: tuple(words) for field, words in (keywords or {}).items()}
        self.usage = UserUsage()
        self._scenario: UserScenario | None = None
        self._opening = ""
        self._known: list[tuple[str, str, re.Pattern[str]]] = []
        self._unknown: list[tuple[str, re.Pattern[str]]] = []
        self._given: set[str] = set()
        self._unanswered = 0
        self._device: DeviceTools | None = None
        self._pending_actions: list[UserAction] = []

    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        self._scenario = scenario
        self._opening = opening or scenario.reason_for_call
        self._device = device
        self._pending_actions = list(scenario.user_actions) if device is not None else []
        self.usage = UserUsage()
        self._given = set()
        self._unanswered = 0
        fields = [*DEFAULT_KEYWORDS, *self.extra_keywords, *scenario.keywords]
        fields += [f for f in scenario.known_info if f not in fields]
        words = {field: self._words(field, scenario) for field in dict.fromkeys(fields)}
        self._known = [
            (field, value, _pattern(words[field])) for field, value in scenario.known_info.items()
        ]
        self._unknown = [
            (field, _pattern(words[field])) for field in words if field not in scenario.known_info
        ]

    def _words(self, field: str, scenario: UserScenario) -> set[str]:
        words = {field.replace("_", " "), field}
        words.update(DEFAULT_KEYWORDS.get(field, ()))
        words.update(self.extra_keywords.get(field, ()))
        words.update(scenario.keywords.get(field, ()))
        return words

    def reply(self, agent_message: str) -> str:
        if self._scenario is None:
            raise RuntimeError("call start() before reply()")
        done = self._act_on_device(agent_message)
        if done:
            return done
        if not _REQUEST.search(agent_message):
            return f"Thank you, that's all I needed. {STOP}"
        mentioned, unknown = self._mentions(agent_message)
        new = [(field, value) for field, value in mentioned if field not in self._given]
        if not new and _CONFIRMATION.search(agent_message):
            return self._answered(
                "Yes, please go ahead." if self._scenario.confirm else "No, please don't do that."
            )
        if mentioned:
            return self._answered(self._cannot_give(unknown, new or mentioned))
        if unknown:
            return self._unanswerable(self._cannot_give(unknown, []))
        if _ANYTHING_ELSE.search(agent_message):
            return f"No, that's all. Thank you! {STOP}"
        return self._unanswerable(self._opening)

    def _mentions(self, message: str) -> tuple[list[tuple[str, str]], list[str]]:
        """Known fields the message asks for, and unknown ones it asks for in other words.

        An unknown field counts only where no known field's words matched, so "the patient's
        date of birth" is the patient's, not the caller's own that the user does not know.
        """
        mentioned, spans = [], []
        for field, value, pattern in self._known:
            hits = [m.span() for m in pattern.finditer(message)]
            if hits:
                mentioned.append((field, value))
                spans += hits
        unknown = []
        for field, pattern in self._unknown:
            hits = [m.span() for m in pattern.finditer(message)]
            hits = [hit for hit in hits if not any(_overlap(hit, span) for span in spans)]
            if hits:  # fields asked with the same words (member id, patient member id): one
                unknown.append(field)
                spans += hits
        return mentioned, unknown

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
            offer = [(f, v) for f, v, _ in self._known if f in IDENTITY_FIELDS]
            offer = [item for item in offer if item not in new]
            head = f"I'm sorry, I can't give you my {missing}"
            if offer:
                head += ", but I can give you my " + _join([f.replace("_", " ") for f, _ in offer])
            head += "."
        else:
            head = f"I'm sorry, I don't know my {missing}."
            if not new:
                offer = [(f, v) for f, v, _ in self._known if f not in self._given]
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
        if reports:
            self._unanswered = 0
        return " ".join(reports)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _pattern(words: Iterable[str]) -> re.Pattern[str]:
    alternation = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"\b(?:{alternation})", re.I)


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _details(fields: list[tuple[str, str]]) -> str:
    return " ".join(f"My {field.replace('_', ' ')} is {value}." for field, value in fields)

"""User faults: a simulated user that breaks its own scenario spoils the episode, as an outage does.

An agent's reward is only as honest as its simulated user. A user that stops before its request
is done scores a correct agent 0; one that invents an email scores it 0 too; one that pastes its
instructions tells the agent what it should have asked for. Each user turn is checked against
the scenario and the conversation so far, and a turn at fault ends the episode *void*
(``void_cause="user_simulator"``, ``reward_info["user_fault"] = {"kind", "turn", "evidence"}``):
never the agent's failure, never trained on. The kinds (:data:`FAULT_KINDS`):

- ``premature_stop``: the user ends the chat while its task is unfinished (gold actions not made
  or required facts not said) right after the agent asked for something it knows (a detail of
  its scenario it has not given yet), a yes or no, or an action on its device;
- ``invented_value``: the user states an identity value or id (an email, a zip code, a phone
  number, a date, an order, user, reservation or member id) that is in neither its scenario nor
  the conversation it has seen (the agent's and its own messages, its device's screens);
- ``leaked_instructions``: the user repeats its hidden instructions: a section label of its
  prompt ("Reason for the call:"), or eight words in a row of its instructions that address it
  as "you", speak of "the agent" or lay down a rule ("if", "never"), and that nobody has said;
- ``contradiction``: the user declines a confirmation its scenario accepts, or accepts one it
  declines (``UserScenario.confirm``). A decline counts only when the agent asked to confirm a
  gold change still to be made, naming its ids and no id outside the task (a wrong order id is
  rightly declined).

A fault the agent provoked is the agent's, not the user's, or voiding would become a way out of
failure: the user is blamed only when the agent's turn before was fair. An unfair turn is empty,
abusive, asks for the user's instructions, or puts words in the user's mouth (names an id or
email that nobody had said, e.g. proposes an email for the user to accept); after it, whatever
the user does is scored as usual.

tau2's scenarios are free text: their ``confirm`` is not read from them, so ``contradiction`` is
not checked for tau2 envs; the other three kinds are (tau2 ids and emails are in the scenario's
prose). Not checked anywhere: facts that are not ids (a wrong product colour, a made-up reason),
and a user that silently ignores an instruction of its scenario.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tool_envs.core.outcome import void_info
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.acts import read_turn
from tool_envs.tau.users.reading import FieldWords, Reading, requests_to_act, vocabulary

__all__ = [
    "FAULT_KINDS",
    "TaskState",
    "UserFault",
    "UserFaultCheck",
    "fault_reward_info",
    "gold_values",
    "id_values",
    "normal_value",
    "recheck_conversation",
    "stored_calls",
    "stored_instructions",
]

FAULT_KINDS = ("premature_stop", "invented_value", "leaked_instructions", "contradiction")
"""What a simulated user can do that spoils an episode; ``reward_info["user_fault"]["kind"]``."""

LEAK_WORDS = 8
"""Words in a row of its instructions a user must repeat to leak them."""


@dataclass(frozen=True)
class UserFault:
    """One user turn that broke its scenario: ``turn`` is the agent turn it answered."""

    kind: str
    turn: int
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "turn": self.turn, "evidence": self.evidence}


@dataclass(frozen=True)
class TaskState:
    """What the env knows of the task when the user answers.

    Attributes:
        unfinished: Some gold action is not made yet, or some required fact not said.
        progress: How far it is, in words ("1 of 3 gold actions made"), for the evidence.
        pending_changes: The id values (:func:`normal_value`) of each gold change (a write)
            not made yet: a confirmation naming them asks about the task's own change.
        gold_values: Every id value of the gold actions' arguments.
    """

    unfinished: bool
    progress: str = ""
    pending_changes: tuple[frozenset[str], ...] = ()
    gold_values: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        made: Sequence[bool],
        missing: Sequence[Any],
        pending: Iterable[Mapping[str, Any]],
        arguments: Iterable[Mapping[str, Any]],
    ) -> TaskState:
        """The state both tau envs report: ``made`` says of each compared gold action whether
        it was made, ``missing`` holds the required facts not said, ``pending`` the arguments of
        the gold writes not made, ``arguments`` those of every gold action."""
        progress = f"{sum(made)} of {len(made)} gold actions made"
        if missing:
            progress += f", {len(missing)} required fact(s) not said"
        return cls(
            unfinished=not all(made) or bool(missing),
            progress=progress,
            pending_changes=tuple(gold_values([change]) for change in pending),
            gold_values=gold_values(arguments),
        )


# -- ids and values ------------------------------------------------------------------------------

_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_PHONE = r"\+?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}\b"
_DATE = r"\b\d{4}-\d{2}-\d{2}\b"
_ZIP = r"(?<![\d.$,])\b\d{5}\b(?![.,]\d)"
_LONG_NUMBER = r"(?<![\d.$,])\b\d{6,}\b(?![.,]\d)"
# A token with letters and digits, or an id with a separator: #W8386917, DD-459359, P236647,
# 2VVTUV, mateo_garcia_3243, credit_card_4421566 (not 1080p, 5pm, 2nd, 4G or 4GB).
_MIXED = r"#?\b(?=[A-Za-z_-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*\b"
_ID = re.compile(rf"{_EMAIL}|{_PHONE}|{_DATE}|{_ZIP}|{_LONG_NUMBER}|{_MIXED}")
_NOT_AN_ID = re.compile(
    r"^(?:\d+(?:st|nd|rd|th|am|pm|gb|mb|kb|tb|p|k|g|x|h|m|s|mins?|hrs?|days?|lbs?|oz|kg|cm|mm"
    r"|in|ft)|[a-z]{1,3}\d{1,2}|\d{1,2}[a-z]{1,2})$",
    re.I,
)


def id_values(text: str) -> list[str]:
    """The identity values and ids ``text`` states (emails, phone numbers, dates, zip codes, ids
    that mix letters and digits), as written."""
    found = []
    for match in _ID.finditer(text):
        value = match.group(0)
        bare = value.lstrip("#")
        if "@" not in value and _NOT_AN_ID.match(bare):
            continue
        if len(bare) < 4 and not bare.isdigit():
            continue
        if "@" not in value and sum(ch.isdigit() for ch in bare) < 2 and not bare.isupper():
            continue  # "address1", "line2": a field's name; ids have digits or are all caps
        found.append(value)
    return found


def normal_value(value: str) -> str:
    """How two ways of writing a value compare: lower case, no '#'; a phone number's digits."""
    value = value.lower().lstrip("#")
    digits = re.sub(r"\D", "", value)
    if re.fullmatch(_PHONE, value) and len(digits) >= 10:
        return digits
    return value


def _values_in(texts: Iterable[str]) -> set[str]:
    return {normal_value(v) for text in texts for v in id_values(text)}


def _said(value: str, haystack: str, digits: str) -> bool:
    """``value`` (normal) appears in the text, or as digits in its digits (a phone number)."""
    return value in haystack or (value.isdigit() and len(value) >= 7 and value in digits)


# -- the agent's turn ------------------------------------------------------------------------------

_ABUSE = re.compile(
    r"\b(?:idiot|stupid|moron|dumb|shut\s+up|fuck\w*|shit\w*|bitch\w*|damn\s+you|screw\s+you"
    r"|loser|pathetic|worthless|go\s+away|hate\s+you)\b",
    re.I,
)
_PROBING = re.compile(
    r"\b(?:your|the)\s+(?:instructions?|system\s+prompt|prompt|scenario|persona|rules|script)\b"
    r"|\bwhat\s+(?:were|are)\s+you\s+told\b|\bignore\s+(?:your|all|previous)\b",
    re.I,
)


def unfair_turn(agent_message: str, before: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the agent's turn provoked what followed (then no fault is the user's), or None."""
    if not agent_message.strip():
        return "the agent's message was empty"
    if _ABUSE.search(agent_message):
        return "the agent's message was abusive"
    if _PROBING.search(agent_message):
        return "the agent asked about the user's instructions"
    everything = " ".join(str(m.get("content") or "") for m in before).lower()
    digits = re.sub(r"\D", "", everything)
    for value in id_values(agent_message):
        if not _said(normal_value(value), everything, digits):
            return f"the agent put {value!r} in the user's mouth (nobody had said it)"
    return None


# -- the user's reply ------------------------------------------------------------------------------

_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|ok(?:ay)?|alright|please\s+(?:do|go\s+ahead|proceed)"
    r"|go\s+(?:ahead|for\s+it)|(?:that's|that\s+is|sounds|that\s+sounds)\s+(?:right|correct|good"
    r"|fine|great|perfect)|correct|absolutely|definitely|of\s+course|do\s+it|proceed|confirm(?:ed)?"
    r"|i\s+confirm|that\s+works|i\s+(?:agree|approve|accept))\b",
    re.I,
)
_NO = re.compile(
    r"^\W*(?:no|nope|nah|don't|do\s+not|please\s+(?:don't|do\s+not)|not\s+(?:now|yet|really)"
    r"|i\s+(?:don't|do\s+not)\s+(?:want|agree|approve|accept)|i'?d\s+rather\s+not|never\s*mind"
    r"|cancel\s+that|hold\s+off|actually,?\s+(?:no|don't)|i\s+(?:decline|refuse))\b",
    re.I,
)


def yes_or_no(reply: str) -> bool | None:
    """True for a clear yes, False for a clear no, None otherwise (read from its start)."""
    yes, no = bool(_YES.match(reply)), bool(_NO.match(reply))
    return yes if yes != no else None


_LABELS = re.compile(
    r"\b(?:reason\s+for\s+the\s+call|your\s+instructions|what\s+you\s+know|you\s+know"
    r"|you\s+do\s+not\s+know|task\s+instructions|known[\s_]info|unknown[\s_]info|persona"
    r"|user[\s_]scenario)\s*:",
    re.I,
)
_RULE_WORDS = frozenset(
    {"you", "your", "yours", "yourself", "agent", "agent's", "if", "unless", "never",
     "instructions", "conversation", "rules", "scenario", "persona", "pretend"}
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9#@'_.-]*[a-z0-9]", re.I)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


# -- the check -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Turn:
    """One user turn as the check sees it."""

    agent_message: str
    reply: str
    stopped: bool
    seen: list[str]  # what the user has seen and said, the agent's message included
    user_said: str  # what the user said before this reply (lower case)
    state: TaskState


class UserFaultCheck:
    """Checks each user turn of one episode against its scenario (see the module docstring).

    Args:
        scenario: The user's scenario.
        vocabulary: How its fields are asked for (:func:`~tool_envs.tau.users.reading.
            vocabulary`), its known fields first.
        instructions: What the user was told and keeps to itself
            (:meth:`~tool_envs.tau.users.base.UserSimulator.instructions`).
        kinds: The fault kinds to check (tau2: all but ``contradiction``).
    """

    def __init__(
        self,
        scenario: UserScenario,
        vocabulary: Sequence[FieldWords],
        instructions: str,
        kinds: Sequence[str] = FAULT_KINDS,
    ):
        unknown = [kind for kind in kinds if kind not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown user fault kinds {unknown}; choose from {FAULT_KINDS}")
        self.scenario = scenario
        self.kinds = tuple(kinds)
        self._vocabulary = list(vocabulary)
        self._last_read: tuple[str | None, Reading] = (None, Reading())
        self._known = dict(scenario.known_info)
        scenario_text = " ".join(
            [
                scenario.persona,
                scenario.reason_for_call,
                scenario.known_text,
                scenario.unknown_info,
                scenario.task_instructions,
                *scenario.known_info.values(),
                *(str(a.arguments) for a in scenario.user_actions),
            ]
        )
        self._scenario_text = scenario_text.lower()
        self._scenario_values = _values_in([scenario_text])
        # What it knows it may say, however its scenario words it ("not what you ordered").
        sayable = set().union(*(_runs(_words(v), LEAK_WORDS) for v in scenario.known_info.values()))
        self._hidden = _runs(_words(instructions), LEAK_WORDS) - sayable

    @classmethod
    def of(
        cls,
        scenario: UserScenario,
        keywords: Mapping[str, Iterable[str]],
        instructions: str,
        kinds: Sequence[str] = FAULT_KINDS,
    ) -> UserFaultCheck:
        """The check of a user of ``scenario`` in a domain whose fields are asked by
        ``keywords`` (the domain's ``user_keywords``)."""
        return cls(scenario, vocabulary(scenario, keywords), instructions, kinds)

    def recheck(
        self,
        messages: Sequence[Mapping[str, Any]],
        device_calls: Sequence[Mapping[str, Any]],
        state_of: Callable[[Sequence[Mapping[str, Any]]], TaskState],
        stops: Sequence[str],
    ) -> UserFault | None:
        """The first fault of a stored conversation (:func:`recheck_conversation`), with the
        episode's ``reward_info["user_device_calls"]``."""
        outputs = [str(call.get("content") or "") for call in device_calls]
        return recheck_conversation(
            self, messages, state_of=state_of, stops=stops, device_outputs=outputs
        )

    def check(
        self,
        *,
        turn: int,
        agent_message: str,
        reply: str,
        stopped: bool,
        before: Sequence[Mapping[str, Any]],
        state: TaskState,
        device_outputs: Sequence[str] = (),
    ) -> UserFault | None:
        """The fault of the user's ``reply`` to ``agent_message``, or None.

        ``before`` is the conversation before the agent's message (tool results included),
        ``stopped`` whether the reply ends the chat, ``device_outputs`` what the user's device
        has shown it this episode.
        """
        if unfair_turn(agent_message, before) is not None:
            return None
        seen = [
            str(m.get("content") or "") for m in before if m.get("role") in ("user", "assistant")
        ]
        user_said = " ".join(str(m.get("content") or "") for m in before if m.get("role") == "user")
        this = _Turn(
            agent_message=agent_message,
            reply=reply,
            stopped=stopped,
            seen=[*seen, agent_message, *device_outputs],
            user_said=user_said.lower(),
            state=state,
        )
        for kind, finder in (
            ("leaked_instructions", self._leak),
            ("invented_value", self._invented),
            ("contradiction", self._contradiction),
            ("premature_stop", self._premature_stop),
        ):
            if kind in self.kinds:
                evidence = finder(this)
                if evidence:
                    return UserFault(kind, turn, evidence)
        return None

    # -- kinds -------------------------------------------------------------------------------------

    def _leak(self, turn: _Turn) -> str | None:
        label = _LABELS.search(turn.reply)
        if label:
            return f"the reply carries a label of its instructions: {label.group(0)!r}"
        said = _runs(_words(" ".join(turn.seen)), LEAK_WORDS)
        for run in sorted(_runs(_words(turn.reply), LEAK_WORDS) & self._hidden - said):
            if _RULE_WORDS.intersection(run):
                return f"the reply repeats its instructions word for word: {' '.join(run)!r}"
        return None

    def _invented(self, turn: _Turn) -> str | None:
        haystack = " ".join([self._scenario_text, *turn.seen]).lower()
        digits = re.sub(r"\D", "", haystack)
        for value in id_values(turn.reply):
            if not _said(normal_value(value), haystack, digits):
                return (
                    f"the user said {value!r}, which is in neither its scenario nor the "
                    "conversation"
                )
        return None

    def _contradiction(self, turn: _Turn) -> str | None:
        reading = self._read(turn.agent_message)
        if not reading.confirmation or self._new_known(reading.asked, turn):
            return None
        answer = yes_or_no(turn.reply)
        if answer is None or answer == self.scenario.confirm:
            return None
        if answer:
            return f"the user accepted ({turn.reply[:60]!r}) a change its scenario declines"
        named = {normal_value(v) for v in id_values(turn.agent_message)}
        allowed = turn.state.gold_values | self._scenario_values
        if not named or not named <= allowed:
            return None  # not clearly the task's own change: declining may be right
        if not any(named & change for change in turn.state.pending_changes):
            return None
        return (
            f"the user declined ({turn.reply[:60]!r}) the task's own change, which its scenario "
            "accepts"
        )

    def _premature_stop(self, turn: _Turn) -> str | None:
        if not turn.stopped or not turn.state.unfinished:
            return None
        reading = self._read(turn.agent_message)
        if reading.ends or reading.anything_else:
            return None
        asked = self._new_known(reading.asked, turn)
        device = [
            action.instruction
            for action in self.scenario.user_actions
            if action.matches(requests_to_act(turn.agent_message))
        ]
        if asked:
            what = "its " + ", ".join(field.replace("_", " ") for field in asked)
        elif device:
            what = f"an action on its device ({device[0]})"
        elif reading.confirmation:
            what = "a yes or no"
        else:
            return None
        progress = f" ({turn.state.progress})" if turn.state.progress else ""
        return f"the user ended the chat after the agent asked for {what}, unfinished{progress}"

    def _read(self, agent_message: str) -> Reading:
        """The agent's message read as the scripted user reads it (the act classified); the
        turn's checks share one reading."""
        if self._last_read[0] != agent_message:
            reading = read_turn(agent_message, self._vocabulary, known=len(self._known))[1]
            self._last_read = (agent_message, reading)
        return self._last_read[1]

    def _new_known(self, asked: Sequence[str], turn: _Turn) -> list[str]:
        """Known fields asked whose value the user has not said yet."""
        return [
            field
            for field in asked
            if field in self._known and self._known[field].lower() not in turn.user_said
        ]


def fault_reward_info(fault: UserFault) -> dict[str, Any]:
    """The ``reward_info`` of an episode the user spoiled: void, with the fault."""
    info = void_info(
        "user_simulator", f"the simulated user broke its scenario: {fault.kind}, {fault.evidence}"
    )
    info["user_fault"] = fault.as_dict()
    return info


def gold_values(arguments: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The id values (:func:`normal_value`) of gold calls' arguments, nested ones included."""
    return frozenset(_values_in(_strings(list(arguments))))


def _strings(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return [str(value)]


def stored_calls(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) of the agent's tool calls in a stored conversation."""
    calls = []
    for message in messages:
        for part in message.get("tool_calls") or []:
            function = part.get("function") or {}
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {}
            calls.append(
                (str(function.get("name")), arguments if isinstance(arguments, dict) else {})
            )
    return calls


def recheck_conversation(
    check: UserFaultCheck,
    messages: Sequence[Mapping[str, Any]],
    *,
    state_of: Callable[[Sequence[Mapping[str, Any]]], TaskState],
    stops: Sequence[str],
    device_outputs: Sequence[str] = (),
) -> UserFault | None:
    """The first fault among a stored conversation's user turns, checked as the env checks them
    while it plays (:meth:`UserFaultCheck.check` on each reply to an agent message).

    ``state_of(messages so far)`` gives the task's state at a reply. What a stored run does not
    keep is taken in the user's favour: its device's screens all count as seen from the start.
    """
    turn = 0
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            turn += 1
        if message.get("role") != "user" or index == 0:
            continue
        agent = messages[index - 1]
        if agent.get("role") != "assistant":
            continue  # the opening message, which follows the system prompt
        reply = str(message.get("content") or "")
        fault = check.check(
            turn=turn,
            agent_message=str(agent.get("content") or ""),
            reply=reply,
            stopped=any(stop in reply for stop in stops),
            before=messages[: index - 1],
            state=state_of(messages[:index]),
            device_outputs=device_outputs,
        )
        if fault is not None:
            return fault
    return None


def stored_instructions(scenario: UserScenario) -> str:
    """What a user of ``scenario`` was told, for re-checking a stored run: the scenario and the
    LLM user's rules (a scripted user never says either, so both can be looked for)."""
    from tool_envs.tau.users.llm import RULES

    return RULES + scenario.instruction()

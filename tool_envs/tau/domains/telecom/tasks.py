"""Seeded generator of telecom tasks: what a customer wants, and what a correct agent does.

Tasks are drawn from the seed-0 database:

- *troubleshooting* (``ts_*``): the customer's phone starts broken (its record in the
  ``devices`` table is the starting state: airplane mode on, a loose SIM, a wrong APN, data
  roaming off abroad, ...). The gold fix is the agent's checks plus the steps the *customer*
  takes on the phone (``requestor: "user"`` actions, which the scripted user performs when the
  agent asks), sometimes with account changes only the agent can make (roaming on the account,
  a data top-up, a payment request the customer approves on the phone, then resuming the line);
- *account requests*: suspend or resume a line, roaming, top-ups, plan changes, paying a bill,
  and two of these in one call;
- *refusals, questions and hand-offs*: an overdue bill blocks the request, a legacy plan, a line
  that is not the caller's; a price or amount to state; a transfer to a human.

Each split holds every category in the proportions of :data:`CATEGORY_WEIGHTS`, and no task is in
two splits. Every draft is replayed through the agent's and the phone's tools on a fresh
database before it is kept: every gold call succeeds, and every write (agent or phone) changes
the database, so leaving out or changing any of them loses the reward. Tasks whose gold changes
nothing and that require no output (a do-nothing agent passes them) stay near 3% of a split.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_envs.tau.domains.telecom import phone
from tool_envs.tau.domains.telecom.data import (
    DEFAULT_APN,
    MAX_TOP_UP_GB,
    OVERDUE_REASON,
    SUSPEND_REASONS,
    load_tables,
)
from tool_envs.tau.domains.telecom.tools import PhoneTools, TelecomTools
from tool_envs.tau.drafts import Action, call, user_call
from tool_envs.tau.task import UserAction
from tool_envs.tau.taskgen import TaskContext, TaskSource
from tool_envs.tau.tools import write_tool_names
from tool_envs.tau.wording import Opening, money

ENV_ID = "tool_envs/TauTelecom-v0"
DOMAIN_NAME = "telecom"
POLICY = Path(__file__).with_name("policy.md").read_text(encoding="utf-8")

Record = dict[str, Any]
AGENT_WRITE_TOOLS = write_tool_names(TelecomTools)
USER_WRITE_TOOLS = write_tool_names(PhoneTools)
WRITE_TOOLS = AGENT_WRITE_TOOLS + USER_WRITE_TOOLS

# Share of each category in a split (normalised). The three "silent" categories (no write, no
# output: refuse_other, refuse_legacy_plan, transfer) are the only tasks a do-nothing agent
# passes; together they stay near 3%.
CATEGORY_WEIGHTS: dict[str, float] = {
    # troubleshooting fixed on the phone alone
    "ts_airplane": 4,
    "ts_sim": 4,
    "ts_reboot": 3.5,
    "ts_mobile_data": 4,
    "ts_apn": 4,
    "ts_network_mode": 4,
    "ts_mms": 3.5,
    "ts_multi": 6,
    # troubleshooting that needs the account too
    "ts_roaming": 6,
    "ts_data_limit": 4,
    "ts_suspended_overdue": 5,
    "ts_suspended_hold": 2,
    # account requests
    "suspend": 5,
    "resume": 3,
    "enable_roaming": 5,
    "disable_roaming": 3,
    "top_up": 5,
    "top_up_capped": 2,
    "change_plan": 6,
    "pay_bill": 5,
    "pay_then_write": 3,
    "multi_step": 4,
    # refusals, questions, hand-offs
    "refuse_overdue": 4,
    "refuse_other": 1,
    "refuse_legacy_plan": 1,
    "declined": 3,
    "info": 4,
    "transfer_after_fix": 3,
    "transfer": 1.5,
}

_TRAITS = (
    "You are calm and friendly and answer questions directly.",
    "You are busy and keep your messages short.",
    "You are not very confident with phone settings, so you like clear step-by-step help.",
    "You write casually, like in a text message.",
    "You are detail-oriented and like to hear exact amounts.",
    "You are frustrated that your phone is acting up, but cooperative.",
    "You are cheerful and thank the agent often.",
)
_CONFIRM_RULE = "When the agent asks you to confirm a change you asked for, say yes."
_DEVICE_RULE = (
    "When the agent asks you to do something on your phone, do exactly that (with your phone "
    "tools) and tell the agent what the phone shows. Do not change phone settings on your own."
)

# How the agent asks for each phone action: the instruction (what the gold turn says) and the
# words that make the scripted user do it (case-insensitive substrings of an agent message).
_ASKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "check_status_bar": (
        "check the status bar at the top of your screen",
        ("status bar", "top of your screen", "top of the screen", "top of screen"),
    ),
    "run_speed_test": ("run a speed test", ("speed test",)),
    "send_test_mms": (
        "send a test picture message to yourself",
        ("test picture message", "test mms", "picture message to yourself"),
    ),
    "toggle_airplane_mode": ("turn off airplane mode", ("airplane mode", "flight mode")),
    "toggle_mobile_data": ("turn on mobile data", ("mobile data", "cellular data")),
    "toggle_roaming": (
        "turn on data roaming in your phone's settings",
        ("data roaming", "roaming on your phone", "roaming in your phone", "roaming setting"),
    ),
    "set_apn": (f"set the APN name to {DEFAULT_APN['name']}", ("apn", "access point")),
    "reset_apn_settings": (
        "reset your APN settings to the defaults",
        ("apn", "access point"),
    ),
    "reseat_sim": (
        "take out your SIM card and put it back in",
        ("sim card", "reseat", "re-seat", "reinsert", "re-insert"),
    ),
    "reboot_device": (
        "restart your phone",
        (
            "restart",
            "reboot",
            "turn it off and on",
            "turn your phone off and on",
            "turn off your phone",
            "switch off your phone",
            "switch your phone off",
            "power cycle",
            "power it off",
        ),
    ),
    "set_network_mode": (
        "set the preferred network mode to automatic",
        ("network mode", "network type", "preferred network"),
    ),
    "make_payment": (
        "approve the payment request on your phone",
        (
            "approve the payment",
            "accept the payment",
            "approve the request",
            "accept the request",
            "pay the payment request",
            "complete the payment",
        ),
    ),
}

# (how the customer asks, how their instructions say it, the topic for the summary)
_TRANSFER_ISSUES = (
    ("dispute a roaming charge on my last bill that I don't recognise",
     "dispute a roaming charge on your last bill that you don't recognise", "billing dispute"),
    ("move my number to another carrier", "move your number to another carrier",
     "port-out request"),
    ("get my cracked screen repaired", "get your cracked screen repaired", "device repair"),
    ("close my account completely", "close your account completely", "account closure"),
    ("add a new line for my son", "add a new line for your son", "new line"),
)  # fmt: skip


# --------------------------------------------------------------------------- context


class _Context(TaskContext):
    """The database and the indexes the generator draws from (built once per generation).

    Every write, the agent's or the phone's, must change the database."""

    tools_class = TelecomTools
    user_tools_class = PhoneTools
    writes_must_change = frozenset(WRITE_TOOLS)

    def __init__(self, tables: Mapping[str, Mapping[str, Record]]):
        super().__init__(tables)
        self.customers: dict[str, Record] = dict(tables["customers"])
        self.lines: dict[str, Record] = dict(tables["lines"])
        self.bills: dict[str, Record] = dict(tables["bills"])
        self.plans: dict[str, Record] = dict(tables["plans"])
        self.devices: dict[str, Record] = dict(tables["devices"])
        self.faults: dict[str, tuple[str, ...]] = {
            line_id: tuple(phone.faults(self.device(line), line, self.plans[line["plan_id"]]))
            for line_id, line in self.lines.items()
        }
        self.by_faults: dict[tuple[str, ...], list[str]] = {}
        for line_id, found in self.faults.items():
            self.by_faults.setdefault(found, []).append(line_id)
        self.line_ids = list(self.lines)

    def device(self, line: Record) -> Record:
        return self.devices[line["phone_number"]]

    def customer(self, line: Record) -> Record:
        return self.customers[line["customer_id"]]

    def overdue(self, customer: Record) -> Record | None:
        found = [
            self.bills[b] for b in customer["bill_ids"] if self.bills[b]["status"] == "overdue"
        ]
        return found[0] if found else None

    def pick(self, rng: random.Random, where: Callable[[Record], bool]) -> Record | None:
        """A random line that satisfies ``where`` (None after a few misses)."""
        for _ in range(60):
            line = self.lines[rng.choice(self.line_ids)]
            if where(line):
                return line
        return None


def _user_actions(actions: list[Action]) -> list[dict[str, Any]] | None:
    """The scenario's ``user_actions`` for the gold's phone steps, or None if the gold turn of
    one step would also set off another step not done yet (the scripted user would do both)."""
    entries = []
    for action in actions:
        if action.get("requestor") != "user":
            continue
        instruction, triggers = _ASKS[action["name"]]
        entries.append(
            {
                "name": action["name"],
                "arguments": action["arguments"],
                "instruction": instruction,
                "triggers": list(triggers),
            }
        )
    keys = [json.dumps([e["name"], e["arguments"]], sort_keys=True) for e in entries]
    if len(set(keys)) != len(keys):
        return None
    parsed = [UserAction.model_validate(entry) for entry in entries]
    for position, entry in enumerate(parsed):
        message = f"Please {entry.instruction} now, then tell me what you see."
        if [p for p in parsed[position:] if p.matches(message)] != [entry]:
            return None
    return entries


# --------------------------------------------------------------------------- drafts


@dataclass
class _Draft:
    """One task before authentication is added: the line it is about and what to do."""

    line: Record
    actions: list[Action]
    reason_for_call: str
    instructions: list[str]
    known: dict[str, str] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    confirm: bool = True


_opening = Opening(
    greetings=("Hi,", "Hello,", "Hi there,", "Good morning,", "Hey,"), want_first=True
)


def _greeting(rng: random.Random) -> str:
    return rng.choice(_opening.greetings)


def _where(device: Record) -> str:
    if phone.abroad(device):
        return f"You are travelling in {device['location']}."
    return "You are at home."


_NO_SERVICE = (
    "my phone says there's no service and I can't make calls",
    "my phone has had no signal since this morning",
    "I can't make or receive any calls on my phone",
)
_NO_DATA = (
    "my mobile data isn't working",
    "I can't get online on my phone unless I'm on Wi-Fi",
    "the internet doesn't work on my phone",
)
_SLOW = (
    "my mobile internet is painfully slow",
    "web pages take forever to load on mobile data",
    "my phone's internet has become really slow",
)
_MMS = (
    "I can't send picture messages",
    "my photo messages keep failing to send",
    "MMS messages won't go through on my phone",
)


def _symptoms(rng: random.Random, found: tuple[str, ...], device: Record) -> tuple[str, str]:
    """What the customer says is wrong (the first visible problem, plus the ones they noticed
    before), and the sentence for the LLM user's instructions."""
    present = set(found)
    if present & phone.NO_SERVICE_FAULTS:
        main = rng.choice(_NO_SERVICE)
    elif present & phone.NO_DATA_FAULTS:
        main = rng.choice(_NO_DATA)
    elif "network_mode" in present:
        main = rng.choice(_SLOW)
    else:
        main = rng.choice(_MMS)
    extra = []
    if "network_mode" in present and main not in _SLOW:
        extra.append("even when it worked, the internet was really slow")
    if "mmsc" in present and main not in _MMS:
        extra.append("picture messages never send")
    text = main + "".join(f", and {e}" for e in extra)
    if phone.abroad(device):
        text = f"I'm in {device['location']} right now and {text}"
    goal = "You want calls and mobile internet (at a normal speed) to work again"
    if "mmsc" in present:
        goal += ", and picture messages to send"
    return text, goal + "."


def _top_up(rng: random.Random, ctx: _Context, line: Record, gb: int) -> tuple[list, str]:
    plan = ctx.plans[line["plan_id"]]
    price = round(gb * plan["top_up_price_per_gb"], 2)
    actions = [call("get_plan_details", plan_id=plan["plan_id"])]
    if gb > 1:
        actions.append(call("calculate", expression=f"{gb} * {plan['top_up_price_per_gb']:.2f}"))
    actions.append(call("add_data_top_up", line_id=line["line_id"], gb=gb))
    return actions, money(price)


def _payment(ctx: _Context, line: Record, bill: Record) -> list[Action]:
    customer_id = line["customer_id"]
    return [
        call("send_payment_request", customer_id=customer_id, bill_id=bill["bill_id"]),
        user_call("make_payment", phone_number=line["phone_number"], bill_id=bill["bill_id"]),
    ]


def _troubleshoot(rng: random.Random, ctx: _Context, line: Record) -> _Draft | None:
    """Fix every fault of the line's phone and account, in the policy's checklist order."""
    found = ctx.faults[line["line_id"]]
    if not found:
        return None
    present = set(found)
    device = ctx.device(line)
    number = line["phone_number"]
    customer = ctx.customer(line)
    overdue = ctx.overdue(customer)
    suspended_overdue = "line_suspended" in present and line["suspension_reason"] == OVERDUE_REASON
    if overdue is not None and not suspended_overdue and present & {
        "roaming_account", "data_limit", "line_suspended"
    }:  # fmt: skip
        return None  # blocked by an overdue bill the customer did not call about
    actions = [call("get_line_details", line_id=line["line_id"])]
    outputs: list[str] = []
    known: dict[str, str] = {}
    instructions: list[str] = []
    if present & (phone.NO_SERVICE_FAULTS | phone.NO_DATA_FAULTS):
        actions.append(user_call("check_status_bar", phone_number=number))
    elif "network_mode" in present:
        actions.append(user_call("run_speed_test", phone_number=number))
    else:
        actions.append(user_call("send_test_mms", phone_number=number))
    if suspended_overdue:
        assert overdue is not None
        actions.append(call("list_bills", customer_id=customer["customer_id"]))
        actions += _payment(ctx, line, overdue)
        outputs.append(money(overdue["amount"]))
        instructions.append(
            "If the agent tells you about an overdue bill, you agree to pay it with a payment "
            "request, approve it on your phone, and want your line working again."
        )
    if "line_suspended" in present:
        actions.append(call("resume_line", line_id=line["line_id"]))
        if line["suspension_reason"] == "lost or stolen":
            instructions.append(
                "Some time ago you reported this phone lost and had the line suspended; you "
                "found the phone again and forgot about the suspension. You want the line active."
            )
        elif not suspended_overdue:
            instructions.append(
                "Some time ago you put your line on hold (suspended it) and forgot about it; you "
                "want it active again now."
            )
    if "airplane_mode" in present:
        actions.append(user_call("toggle_airplane_mode", phone_number=number, enabled=False))
    if "sim_loose" in present:
        actions.append(user_call("reseat_sim", phone_number=number))
    if present & {"sim_loose", "needs_reboot"}:
        actions.append(user_call("reboot_device", phone_number=number))
    if "roaming_account" in present:
        actions.append(call("enable_roaming", line_id=line["line_id"]))
        instructions.append("You want roaming enabled on your account for this trip.")
    if "mobile_data_off" in present:
        actions.append(user_call("toggle_mobile_data", phone_number=number, enabled=True))
    if "roaming_device" in present:
        actions.append(user_call("toggle_roaming", phone_number=number, enabled=True))
    if "apn_name" in present:
        if "mmsc" in present or rng.random() < 0.4:
            actions.append(user_call("reset_apn_settings", phone_number=number))
        else:
            actions.append(user_call("set_apn", phone_number=number, apn_name=DEFAULT_APN["name"]))
    if "data_limit" in present:
        room = MAX_TOP_UP_GB - line["data_top_up_gb"]
        if room < 1:
            return None
        gb = rng.randint(1, min(5, room))
        calls, price = _top_up(rng, ctx, line, gb)
        actions += calls
        outputs.append(price)
        known["data_amount"] = f"{gb} GB"
        instructions.append(
            f"If the agent offers a data top-up, you want {gb} GB and want to know the price."
        )
    if "network_mode" in present:
        if actions[1]["name"] != "run_speed_test":
            actions.append(user_call("run_speed_test", phone_number=number))
        actions.append(user_call("set_network_mode", phone_number=number, mode="auto"))
    if "mmsc" in present:
        if actions[1]["name"] != "send_test_mms":
            actions.append(user_call("send_test_mms", phone_number=number))
        if not any(a["name"] == "reset_apn_settings" for a in actions):
            actions.append(user_call("reset_apn_settings", phone_number=number))
    symptom, goal = _symptoms(rng, found, device)
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=f"{_greeting(rng)} {symptom}.",
        instructions=[_where(device), goal, _DEVICE_RULE, *instructions],
        known=known,
        outputs=outputs,
        tags=["troubleshooting"],
    )


def _lines_with(ctx: _Context, accept: Callable[[tuple[str, ...]], bool]) -> list[str]:
    return [line for faults, lines in ctx.by_faults.items() if accept(faults) for line in lines]


_DEVICE_ONLY = frozenset(phone.FAULTS) - {"line_suspended", "roaming_account", "data_limit"}
_TS_FILTERS: dict[str, Callable[[tuple[str, ...]], bool]] = {
    "ts_airplane": lambda f: f == ("airplane_mode",),
    "ts_sim": lambda f: f == ("sim_loose",),
    "ts_reboot": lambda f: f == ("needs_reboot",),
    "ts_mobile_data": lambda f: f == ("mobile_data_off",),
    "ts_apn": lambda f: f == ("apn_name",),
    "ts_network_mode": lambda f: f == ("network_mode",),
    "ts_mms": lambda f: f == ("mmsc",),
    "ts_multi": lambda f: len(f) >= 2 and set(f) <= _DEVICE_ONLY,
    "ts_roaming": lambda f: bool(set(f) & {"roaming_account", "roaming_device"}),
    "ts_data_limit": lambda f: "data_limit" in f and "line_suspended" not in f,
    "ts_suspended_overdue": lambda f: "line_suspended" in f,
    "ts_suspended_hold": lambda f: "line_suspended" in f,
}


def _ts(category: str) -> Callable[[random.Random, _Context], _Draft | None]:
    def make(rng: random.Random, ctx: _Context) -> _Draft | None:
        candidates = _lines_with(ctx, _TS_FILTERS[category])
        line = ctx.lines[rng.choice(candidates)]
        overdue_reason = line["suspension_reason"] == OVERDUE_REASON
        if category == "ts_suspended_overdue" and not overdue_reason:
            return None
        if category == "ts_suspended_hold" and (line["status"] == "active" or overdue_reason):
            return None
        return _troubleshoot(rng, ctx, line)

    return make


# --------------------------------------------------------------------------- account requests


def _no_overdue(ctx: _Context) -> Callable[[Record], bool]:
    return lambda line: ctx.overdue(ctx.customer(line)) is None


def _active(ctx: _Context) -> Callable[[Record], bool]:
    return lambda line: line["status"] == "active" and ctx.overdue(ctx.customer(line)) is None


def _suspend(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: line["status"] == "active")
    if line is None:
        return None
    reason = rng.choice(SUSPEND_REASONS)
    if reason == "lost or stolen":
        ask = rng.choice(("suspend my line because I lost my phone",
                          "block my line, my phone was stolen"))  # fmt: skip
        why = "You lost your phone (or it was stolen) and want the line suspended."
    else:
        ask = rng.choice(
            ("put my line on hold for a while", "pause my phone line for a few months")
        )
        why = "You will not use the line for a few months and want it suspended for now."
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("suspend_line", line_id=line["line_id"], reason=reason),
        ],
        reason_for_call=_opening(rng, [ask]),
        instructions=[why, f"If asked for the reason, it is '{reason}'."],
        known={"reason": reason},
        tags=["suspend_line"],
    )


def _resume(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(
        rng,
        lambda line: (
            line["suspension_reason"] in SUSPEND_REASONS and ctx.overdue(ctx.customer(line)) is None
        ),
    )
    if line is None:
        return None
    ask = rng.choice(("reactivate my line", "get my suspended line working again",
                      "take my line off hold"))  # fmt: skip
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("resume_line", line_id=line["line_id"]),
        ],
        reason_for_call=_opening(rng, [ask]),
        instructions=[
            f"Your line was suspended ('{line['suspension_reason']}'); you want it active again."
        ],
        tags=["resume_line"],
    )


def _enable_roaming(rng: random.Random, ctx: _Context) -> _Draft | None:
    active = _active(ctx)
    line = ctx.pick(
        rng,
        lambda line: (
            active(line) and not line["roaming_enabled"] and not phone.abroad(ctx.device(line))
        ),
    )
    if line is None:
        return None
    plan = ctx.plans[line["plan_id"]]
    output = rng.random() < 0.5
    actions = [call("get_line_details", line_id=line["line_id"])]
    instructions = ["You are travelling abroad next week and want roaming on your line."]
    outputs = []
    if output:
        actions.append(call("get_plan_details", plan_id=plan["plan_id"]))
        outputs.append(money(plan["roaming"]["voice_per_minute"]))
        instructions.append("You want to know how much a minute of calls costs abroad.")
    actions.append(call("enable_roaming", line_id=line["line_id"]))
    ask = rng.choice(("turn on roaming before my trip abroad", "enable international roaming",
                      "make sure my phone works abroad next week"))  # fmt: skip
    question = "How much are calls abroad per minute?" if output else ""
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=_opening(rng, [ask], question),
        instructions=instructions,
        outputs=outputs,
        tags=["enable_roaming"],
    )


def _disable_roaming(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(
        rng, lambda line: line["roaming_enabled"] and not phone.abroad(ctx.device(line))
    )
    if line is None:
        return None
    ask = rng.choice(("turn off roaming now that I'm back home",
                      "disable roaming so I don't get surprise charges"))  # fmt: skip
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("disable_roaming", line_id=line["line_id"]),
        ],
        reason_for_call=_opening(rng, [ask]),
        instructions=["You are at home and want roaming turned off on your line."],
        tags=["disable_roaming"],
    )


def _top_up_draft(rng: random.Random, ctx: _Context, capped: bool) -> _Draft | None:
    active = _active(ctx)
    line = ctx.pick(rng, lambda line: active(line) and (line["data_top_up_gb"] > 0 or not capped))
    if line is None:
        return None
    room = MAX_TOP_UP_GB - line["data_top_up_gb"]
    if capped:
        if not 1 <= room <= 5:
            return None
        wanted = room + rng.randint(1, 3)
        gb = room
        instruction = (
            f"You want {wanted} GB of extra data. If the agent explains that the line can only "
            f"get {room} GB more this cycle, accept {room} GB."
        )
    else:
        if room < 1:
            return None
        wanted = gb = rng.randint(1, min(5, room))
        instruction = f"You want {gb} GB of extra data this month."
    calls, price = _top_up(rng, ctx, line, gb)
    ask = rng.choice(("buy some extra data", "top up my data for this month",
                      "add more data to my line"))  # fmt: skip
    return _Draft(
        line=line,
        actions=[call("get_line_details", line_id=line["line_id"]), *calls],
        reason_for_call=_opening(rng, [ask], "How much will it cost?"),
        instructions=[instruction, "You want to know the price."],
        known={"data_amount": f"{wanted} GB"},
        outputs=[price],
        tags=["add_data_top_up"] + (["refusal"] if capped else []),
    )


def _plan_choice(rng: random.Random, ctx: _Context, line: Record) -> tuple[Record, str] | None:
    """A plan to move the line to, and how the customer describes it."""
    current = ctx.plans[line["plan_id"]]
    options = [p for p in ctx.plans.values() if p["available"] and p["plan_id"] != line["plan_id"]]
    if rng.random() < 0.6:
        plan = rng.choice(options)
        return plan, f"the {plan['name']} plan"
    more = sorted(
        (p for p in options if p["data_gb"] > current["data_gb"]),
        key=lambda p: (p["monthly_price"], p["plan_id"]),
    )
    if not more:
        return None
    wanted = rng.choice(sorted({p["data_gb"] for p in more}))
    plan = min((p for p in more if p["data_gb"] >= wanted),
               key=lambda p: (p["monthly_price"], p["plan_id"]))  # fmt: skip
    return plan, f"the cheapest plan with at least {wanted} GB of data"


def _change_plan(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, _active(ctx))
    if line is None:
        return None
    choice = _plan_choice(rng, ctx, line)
    if choice is None:
        return None
    plan, described = choice
    ask = rng.choice(("change my plan", "switch to a different plan", "move to another plan"))
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("list_plans"),
            call("change_plan", line_id=line["line_id"], plan_id=plan["plan_id"]),
        ],
        reason_for_call=_opening(rng, [ask]),
        instructions=[
            f"You want to move your line to {described}.",
            "You want to know its monthly price.",
        ],
        known={"new_plan": described.removeprefix("the ")},
        outputs=[money(plan["monthly_price"])],
        tags=["change_plan"],
    )


def _pay_bill(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: True)
    if line is None:
        return None
    customer = ctx.customer(line)
    overdue = ctx.overdue(customer)
    bill = overdue or ctx.bills[customer["bill_ids"][-1]]
    month = "overdue bill" if overdue else "June bill"
    actions = [call("list_bills", customer_id=customer["customer_id"])]
    if rng.random() < 0.4:
        actions.append(call("get_bill_details", bill_id=bill["bill_id"]))
    actions += _payment(ctx, line, bill)
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=_opening(rng, [f"pay my {month}"], "How much is it?"),
        instructions=[
            f"You want to pay your {month} now and to know the amount. You will approve the "
            "payment request on your phone when the agent asks.",
            _DEVICE_RULE,
        ],
        outputs=[money(bill["amount"])],
        tags=["bill"],
    )


def _pay_then_write(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: ctx.overdue(ctx.customer(line)) is not None)
    if line is None:
        return None
    bill = ctx.overdue(ctx.customer(line))
    assert bill is not None
    if line["status"] != "active":
        kind = "resume"
    else:
        kind = rng.choice(("roaming", "top_up", "plan"))
        if kind == "roaming" and line["roaming_enabled"]:
            kind = "plan"
    actions = [
        call("get_line_details", line_id=line["line_id"]),
        call("list_bills", customer_id=line["customer_id"]),
        *_payment(ctx, line, bill),
    ]
    outputs = [money(bill["amount"])]
    known: dict[str, str] = {}
    if kind == "resume":
        actions.append(call("resume_line", line_id=line["line_id"]))
        ask, want = "get my line reactivated", "You want your suspended line active again."
    elif kind == "roaming":
        actions.append(call("enable_roaming", line_id=line["line_id"]))
        ask, want = "turn on roaming for a trip", "You want roaming on your line for a trip."
    elif kind == "top_up":
        room = MAX_TOP_UP_GB - line["data_top_up_gb"]
        if room < 1:
            return None
        gb = rng.randint(1, min(5, room))
        calls, price = _top_up(rng, ctx, line, gb)
        actions += calls
        outputs.append(price)
        known["data_amount"] = f"{gb} GB"
        ask, want = "buy extra data", f"You want {gb} GB of extra data and to know its price."
    else:
        choice = _plan_choice(rng, ctx, line)
        if choice is None:
            return None
        plan, described = choice
        actions += [
            call("list_plans"),
            call("change_plan", line_id=line["line_id"], plan_id=plan["plan_id"]),
        ]
        outputs.append(money(plan["monthly_price"]))
        known["new_plan"] = described.removeprefix("the ")
        ask, want = "change my plan", f"You want to move to {described} and to know its price."
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=_opening(rng, [ask]),
        instructions=[
            want,
            "If the agent says an overdue bill must be paid first, you want to know the amount, "
            "agree to a payment request and approve it on your phone when asked.",
            _DEVICE_RULE,
        ],
        known=known,
        outputs=outputs,
        tags=["bill", "multi_step"],
    )


def _multi_step(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, _active(ctx))
    if line is None or phone.abroad(ctx.device(line)):
        return None
    first = rng.choice(("plan", "top_up"))
    actions = [call("get_line_details", line_id=line["line_id"])]
    outputs, asks, wants = [], [], []
    known: dict[str, str] = {}
    if first == "plan":
        choice = _plan_choice(rng, ctx, line)
        if choice is None:
            return None
        plan, described = choice
        actions += [
            call("list_plans"),
            call("change_plan", line_id=line["line_id"], plan_id=plan["plan_id"]),
        ]
        outputs.append(money(plan["monthly_price"]))
        known["new_plan"] = described.removeprefix("the ")
        asks.append("change my plan")
        wants.append(f"You want to move to {described} and to know its monthly price.")
    else:
        room = MAX_TOP_UP_GB - line["data_top_up_gb"]
        if room < 1:
            return None
        gb = rng.randint(1, min(5, room))
        calls, price = _top_up(rng, ctx, line, gb)
        actions += calls
        outputs.append(price)
        known["data_amount"] = f"{gb} GB"
        asks.append("buy some extra data")
        wants.append(f"You want {gb} GB of extra data and to know the price.")
    if line["roaming_enabled"]:
        actions.append(call("disable_roaming", line_id=line["line_id"]))
        asks.append("turn off roaming")
        wants.append("You also want roaming turned off on your line.")
    else:
        actions.append(call("enable_roaming", line_id=line["line_id"]))
        asks.append("turn on roaming for a trip")
        wants.append("You also want roaming turned on for a trip next month.")
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=_opening(rng, asks),
        instructions=wants,
        known=known,
        outputs=outputs,
        tags=["multi_step"],
    )


# --------------------------------------------------------------------------- refusals etc.


def _refuse_overdue(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: ctx.overdue(ctx.customer(line)) is not None)
    if line is None:
        return None
    bill = ctx.overdue(ctx.customer(line))
    assert bill is not None
    if line["status"] != "active":
        ask, want = "get my line reactivated", "You want your suspended line active again"
    elif line["roaming_enabled"]:
        ask, want = rng.choice(
            (
                ("buy some extra data", "You want extra data"),
                ("upgrade my plan", "You want a bigger plan"),
            )
        )
    else:
        ask, want = rng.choice(
            (
                ("turn on roaming for a trip", "You want roaming for a trip"),
                ("buy some extra data", "You want extra data"),
                ("upgrade my plan", "You want a bigger plan"),
            )
        )
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("list_bills", customer_id=line["customer_id"]),
        ],
        reason_for_call=_opening(rng, [ask]),
        instructions=[
            f"{want}. If the agent says an overdue bill must be paid first, ask how much it is, "
            "but you do not want to pay it today: say no to any payment request and end the "
            "conversation."
        ],
        outputs=[money(bill["amount"])],
        tags=["refusal"],
        confirm=False,
    )


def _refuse_other(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: line["status"] == "active")
    other = ctx.pick(rng, lambda other: other["status"] == "active")
    if line is None or other is None or other["customer_id"] == line["customer_id"]:
        return None
    return _Draft(
        line=line,
        actions=[],
        reason_for_call=_opening(rng, ["suspend my neighbour's phone line, they asked me to"]),
        instructions=[
            f"You want the line {other['phone_number']}, which belongs to your neighbour, "
            "suspended. It is not on your account. If the agent refuses, accept it."
        ],
        known={"other_phone_number": other["phone_number"]},
        tags=["refusal"],
    )


def _refuse_legacy_plan(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, _active(ctx))
    legacy = [p for p in ctx.plans.values() if not p["available"] and p["plan_id"] != (
        line["plan_id"] if line else "")]  # fmt: skip
    if line is None or not legacy:
        return None
    plan = rng.choice(legacy)
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("list_plans"),
        ],
        reason_for_call=_opening(rng, ["switch back to an old plan I used to have"]),
        instructions=[
            f"You want the {plan['name']} plan. If the agent says it is no longer available, "
            "keep your current plan and end the conversation."
        ],
        known={"new_plan": f"{plan['name']}"},
        tags=["refusal"],
    )


def _declined(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, _active(ctx))
    if line is None:
        return None
    if rng.random() < 0.5:
        room = MAX_TOP_UP_GB - line["data_top_up_gb"]
        if room < 1:
            return None
        gb = rng.randint(1, min(5, room))
        calls, price = _top_up(rng, ctx, line, gb)
        actions = [call("get_line_details", line_id=line["line_id"]), *calls[:-1]]
        known = {"data_amount": f"{gb} GB"}
        ask, question = "maybe buy some extra data", "How much would it cost?"
        want = f"You are thinking about {gb} GB of extra data and want to know the price."
    else:
        choice = _plan_choice(rng, ctx, line)
        if choice is None:
            return None
        plan, described = choice
        actions = [call("get_line_details", line_id=line["line_id"]), call("list_plans")]
        price = money(plan["monthly_price"])
        known = {"new_plan": described.removeprefix("the ")}
        ask, question = "maybe change my plan", "What would it cost per month?"
        want = f"You are thinking about {described} and want to know its monthly price."
    return _Draft(
        line=line,
        actions=actions,
        reason_for_call=_opening(rng, [ask], question),
        instructions=[
            want,
            "Once you hear the price you decide against it: when asked to confirm, say no.",
        ],
        known=known,
        outputs=[price],
        tags=["declined"],
        confirm=False,
    )


def _info(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: True)
    if line is None:
        return None
    customer = ctx.customer(line)
    kind = rng.choice(("bill", "data", "roaming_rate"))
    if kind == "bill":
        bill = ctx.bills[rng.choice(customer["bill_ids"][:-1])]
        month = {"2025-03": "March", "2025-04": "April", "2025-05": "May"}[bill["period"]]
        return _Draft(
            line=line,
            actions=[call("list_bills", customer_id=customer["customer_id"])],
            reason_for_call=_opening(rng, ["check the amount of one of my bills"]),
            instructions=[f"You want to know the amount of your {month} 2025 bill."],
            known={"bill_month": f"{month} 2025"},
            outputs=[money(bill["amount"])],
            tags=["info"],
        )
    plan = ctx.plans[line["plan_id"]]
    if kind == "data":
        limit = phone.data_limit_gb(line, plan)
        left = round(max(limit - line["data_used_gb"], 0.0), 1)
        if left * 10 % 10 == 0:
            return None
        return _Draft(
            line=line,
            actions=[call("get_line_details", line_id=line["line_id"])],
            reason_for_call=_opening(rng, ["find out how much data I have left this month"]),
            instructions=["You want to know how many GB of data you have left this month."],
            outputs=[f"{left:.1f}"],
            tags=["info"],
        )
    return _Draft(
        line=line,
        actions=[
            call("get_line_details", line_id=line["line_id"]),
            call("get_plan_details", plan_id=plan["plan_id"]),
        ],
        reason_for_call=_opening(rng, ["know what mobile data costs abroad on my plan"]),
        instructions=["You want to know the roaming price of mobile data per MB on your plan."],
        outputs=[money(plan["roaming"]["data_per_mb"])],
        tags=["info"],
    )


def _transfer_call(line: Record, topic: str) -> Action:
    summary = (
        f"Customer {line['customer_id']} (line {line['phone_number']}) asks for a human agent: "
        f"{topic}, which is outside what the agent can do."
    )
    return call("transfer_to_human_agents", summary=summary)


def _transfer(rng: random.Random, ctx: _Context) -> _Draft | None:
    line = ctx.pick(rng, lambda line: True)
    if line is None:
        return None
    issue, want, topic = rng.choice(_TRANSFER_ISSUES)
    return _Draft(
        line=line,
        actions=[call("get_line_details", line_id=line["line_id"]), _transfer_call(line, topic)],
        reason_for_call=_opening(rng, [issue]),
        instructions=[f"You want to {want}. You insist on talking to a human agent."],
        tags=["transfer"],
    )


def _transfer_after_fix(rng: random.Random, ctx: _Context) -> _Draft | None:
    category = rng.choice(("ts_airplane", "ts_sim", "ts_reboot", "ts_mobile_data", "ts_apn",
                           "ts_network_mode", "ts_mms"))  # fmt: skip
    draft = _ts(category)(rng, ctx)
    if draft is None or draft.outputs:
        return None
    issue, want, topic = rng.choice(_TRANSFER_ISSUES)
    draft.actions.append(_transfer_call(draft.line, topic))
    draft.reason_for_call += f" After that I also want to {issue}."
    draft.instructions.append(
        f"Once the phone works, you also want to {want}, and insist on a human agent for it."
    )
    draft.tags += ["transfer", "multi_step"]
    return draft


_CATEGORIES: dict[str, Callable[[random.Random, _Context], _Draft | None]] = {
    **{category: _ts(category) for category in _TS_FILTERS},
    "suspend": _suspend,
    "resume": _resume,
    "enable_roaming": _enable_roaming,
    "disable_roaming": _disable_roaming,
    "top_up": lambda rng, ctx: _top_up_draft(rng, ctx, capped=False),
    "top_up_capped": lambda rng, ctx: _top_up_draft(rng, ctx, capped=True),
    "change_plan": _change_plan,
    "pay_bill": _pay_bill,
    "pay_then_write": _pay_then_write,
    "multi_step": _multi_step,
    "refuse_overdue": _refuse_overdue,
    "refuse_other": _refuse_other,
    "refuse_legacy_plan": _refuse_legacy_plan,
    "declined": _declined,
    "info": _info,
    "transfer_after_fix": _transfer_after_fix,
    "transfer": _transfer,
}
assert set(_CATEGORIES) == set(CATEGORY_WEIGHTS)


# --------------------------------------------------------------------------- rows


def _authentication(
    rng: random.Random, customer: Record, line: Record
) -> tuple[list[Action], dict[str, str]]:
    number = line["phone_number"]
    if rng.random() < 0.7:
        actions = [call("find_customer_by_phone", phone_number=number)]
        known = {"phone_number": number}
        if rng.random() < 0.5:
            known["name"] = customer["full_name"]
        else:
            known["date_of_birth"] = customer["date_of_birth"]
    else:
        actions = [
            call(
                "find_customer_by_name_dob",
                full_name=customer["full_name"],
                date_of_birth=customer["date_of_birth"],
            )
        ]
        known = {
            "name": customer["full_name"],
            "date_of_birth": customer["date_of_birth"],
            "phone_number": number,
        }
    actions.append(call("get_customer_details", customer_id=customer["customer_id"]))
    return actions, known


def _finish(
    rng: random.Random, ctx: _Context, draft: _Draft, category: str
) -> tuple[dict[str, Any], list[Action], list[str], list[str]] | None:
    """The scenario, gold actions, outputs and tags of a draft (None if its phone steps could
    not be asked for one at a time)."""
    customer = ctx.customer(draft.line)
    actions, known = _authentication(rng, customer, draft.line)
    actions += draft.actions
    known.update(draft.known)
    user_actions = _user_actions(actions)
    if user_actions is None:
        return None
    writes = [a["name"] for a in actions if a["name"] in WRITE_TOOLS]
    tags = [category, *draft.tags, *writes]
    if user_actions:
        tags.append("dual_control")
    if any("." not in output for output in draft.outputs):
        return None  # a whole number such as '62' would match too much of what agents say
    if draft.outputs:
        tags.append("outputs")
        if any(a["name"] == "transfer_to_human_agents" for a in actions):
            raise AssertionError("a task that ends with a transfer cannot require outputs")
    if any(a["name"] == "transfer_to_human_agents" for a in actions):
        tags.append("transfer")
    instructions = list(draft.instructions)
    if any(a["name"] in AGENT_WRITE_TOOLS for a in actions) and draft.confirm:
        instructions.append(_CONFIRM_RULE)
    how = "your full name" if "name" in known else "your date of birth"
    if "name" in known and "date_of_birth" in known:
        how = "your full name and date of birth"
    instructions.append(
        f"To identify yourself, give your phone number ({draft.line['phone_number']}) and {how} "
        "when asked."
    )
    scenario = {
        "persona": f"You are {customer['full_name']}. {rng.choice(_TRAITS)}",
        "reason_for_call": draft.reason_for_call,
        "known_info": known,
        "task_instructions": " ".join(instructions),
        "confirm": draft.confirm,
        "user_actions": user_actions,
    }
    return scenario, actions, list(dict.fromkeys(draft.outputs)), list(dict.fromkeys(tags))


TASKS = TaskSource(
    domain=DOMAIN_NAME,
    env_id=ENV_ID,
    policy=POLICY,
    context=_Context,
    load_tables=load_tables,
    weights=CATEGORY_WEIGHTS,
    categories=_CATEGORIES,
    finish=_finish,
)
"""Telecom's tasks; ``extra_info["tags"]`` names the write tools a task uses, agent and phone
side, ``troubleshooting``, ``dual_control``, ``bill``, ``multi_step``, ``refusal``,
``transfer``, ``info``, ``declined`` and ``outputs``."""

generate_splits = TASKS.generate
default_splits = TASKS.default_splits

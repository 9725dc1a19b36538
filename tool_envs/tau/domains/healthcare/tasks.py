"""Seeded generator of healthcare tasks: what a caller wants, and what a correct agent does.

A task is built from the seed-0 database in three layers:

- *parts*: one request about one record (book, reschedule or cancel an appointment, refill a
  prescription, file or appeal a claim, a coverage or claim question, a request the policy
  refuses), each with the gold tool calls a correct agent makes (the reads it needs, then the
  write), what the caller knows and what the agent must state;
- *categories*: a part alone, parts combined (multi-step, multi-item), a caller acting for a
  patient, refusals, transfers, declined confirmations, together with the identity checks that
  start every task (rule 1.1);
- *splits*: each split gets a fixed share of every category, and no task is in two splits.

What a correct agent may do is decided with :mod:`.rules` (the policy as functions). Every draft
is replayed through :class:`HealthcareTools` on a fresh database before it is kept, so every gold
call succeeds, and ids that only exist after a write (a new appointment or claim) are read from
the replay. Tasks whose gold changes nothing and that require no output (only the transfers)
stay near 2% of a split.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tool_envs.tau.db import Database, Record
from tool_envs.tau.domains.healthcare import rules
from tool_envs.tau.domains.healthcare.data import (
    CANCEL_REASONS,
    LAST_DAY,
    NOW,
    TODAY,
    WINDOW_END,
    is_minor,
    load_tables,
    parse_day,
    visit_service,
    weekday,
)
from tool_envs.tau.domains.healthcare.tools import HealthcareTools
from tool_envs.tau.drafts import Action, Draft, Finished, Identity, Part, TaskWriter, call
from tool_envs.tau.taskgen import TaskContext, TaskSource
from tool_envs.tau.tools import write_tool_names
from tool_envs.tau.wording import Opening, money

ENV_ID = "tool_envs/TauHealthcare-v0"
DOMAIN_NAME = "healthcare"
POLICY = Path(__file__).with_name("policy.md").read_text(encoding="utf-8")

WRITE_TOOLS = write_tool_names(HealthcareTools)

CATEGORY_WEIGHTS: dict[str, float] = {
    "book_primary": 7,
    "book_specialist": 7,
    "book_with_copay": 4,
    "reschedule": 8,
    "cancel": 7,
    "cancel_two": 3,
    "refill": 8,
    "refill_two": 4,
    "file_claim": 5,
    "appeal_claim": 5,
    "proxy_write": 6,
    "multi_step": 8,
    "referral_then_primary": 3,
    "transfer_after_write": 3,
    "coverage_info": 4,
    "claim_status": 4,
    "appointment_info": 3,
    "declined": 2,
    "refuse_late_change": 4,
    "refuse_early_refill": 4,
    "refuse_no_refills": 3,
    "refuse_referral": 2,
    "refuse_late_claim": 2,
    "refuse_late_appeal": 1.5,
    "refuse_unauthorized": 2.5,
    "refuse_other_patient": 1.5,
    "transfer_emergency": 1.2,
    "transfer_medical": 1.3,
}
"""Share of each category in every split (normalised; counts rounded, largest remainder first).
The two ``transfer_*`` categories are the only ones a do-nothing agent passes (no write, no
output)."""

NEW_APPOINTMENT = "{new appointment id}"
NEW_CLAIM = "{new claim id}"
"""Placeholders in a draft's outputs, replaced by the id the gold replay created."""

_TRAITS = (
    "You are polite and answer questions directly.",
    "You are in a hurry and keep your messages short.",
    "You are a little anxious about medical things and like clear explanations.",
    "You write casually, like in a text message.",
    "You are precise and like to hear exact dates, times and amounts.",
    "You are friendly and chatty but stay on topic.",
    "You are mildly frustrated with phone menus but cooperative.",
)
_WRITER = TaskWriter(
    writes=WRITE_TOOLS,
    confirm_rule="When the agent asks you to confirm a change you asked for, say yes.",
    join="; and ",
)
_opening = Opening(greetings=("Hi,", "Hello,", "Hi there,", "Good morning,", "Hello there,"))
_SPECIALIST_WORDS = {
    "Cardiology": "a cardiologist",
    "Dermatology": "a dermatologist",
    "Orthopedics": "an orthopedic doctor",
    "Neurology": "a neurologist",
    "Endocrinology": "an endocrinologist",
    "Gastroenterology": "a gastroenterologist",
    "Obstetrics and Gynecology": "a gynecologist",
    "Psychiatry": "a psychiatrist",
    "Physical Therapy": "a physical therapist",
    "Ophthalmology": "an eye doctor",
}
_APPEAL_FOR_DENIAL = {
    "no referral on file": "referral on file",
    "not medically necessary": "medically necessary",
    "billing code error": "billing error",
    "out of network": "provider in network",
}
"""The appeal reason a patient gives against each denial reason."""
_MEDICAL_QUESTIONS = (
    ("whether it is safe to take ibuprofen together with {med}", "a drug interaction question"),
    ("whether you can double the dose of {med} when you forget one", "a dosing question"),
    ("whether the headaches you get could be a side effect of {med}", "a side-effect question"),
    ("what your latest blood test results mean", "a question about test results"),
    ("whether the rash on your arm needs to be seen today", "a symptom question"),
)
_EMERGENCIES = (
    "I have crushing chest pain and my left arm feels numb",
    "my husband suddenly can't lift his right arm and his speech is slurred",
    "I cut my hand badly in the kitchen and it won't stop bleeding",
    "my daughter is wheezing and can barely breathe",
    "I feel faint and my heart is racing really fast",
)


def doctor(provider: Record) -> str:
    """How people name a provider: 'Dr. Ada Kessler', or 'Ada Kessler, NP' for non-doctors."""
    name = f"{provider['name']['first_name']} {provider['name']['last_name']}"
    return f"Dr. {name}" if provider["title"] in ("MD", "DO") else f"{name}, {provider['title']}"


def _when(start: str) -> str:
    return f"{start[:10]} at {start[11:]}"


# --------------------------------------------------------------------------- context


class _Context(TaskContext):
    """The database and the indexes the generator draws from (built once per generation)."""

    tools_class = HealthcareTools

    def __init__(self, tables: Mapping[str, Mapping[str, Record]]):
        super().__init__(tables)
        self.patients: dict[str, Record] = dict(tables["patients"])
        self.providers: dict[str, Record] = dict(tables["providers"])
        self.plans: dict[str, Record] = dict(tables["plans"])
        self.clinics: dict[str, Record] = dict(tables["clinics"])
        self.appointments: dict[str, Record] = dict(tables["appointments"])
        self.prescriptions: dict[str, Record] = dict(tables["prescriptions"])
        self.claims: dict[str, Record] = dict(tables["claims"])
        self.adults = [p for p in self.patients if not is_minor(self.patients[p])]
        self.by_specialty: dict[str, list[str]] = {}
        for provider_id, provider in self.providers.items():
            self.by_specialty.setdefault(provider["specialty"], []).append(provider_id)
        self._slots: dict[tuple[str, str], list[str]] = {}
        self._selected: dict[tuple[str, Any], list[str]] = {}
        today = parse_day(TODAY)
        self.booking_days = [
            (today + dt.timedelta(days=n)).isoformat()
            for n in range(2, (LAST_DAY - today).days + 1)
        ]

    def accept(self, rng: random.Random, finished: Finished) -> Finished | None:
        scenario, actions, outputs, tags = finished
        filled = _fill_ids(self, actions, outputs)
        return None if filled is None else (scenario, actions, filled, tags)

    def select(self, table: str, where: Callable[[Record], bool]) -> list[str]:
        """Keys of the base records ``where`` accepts, computed once per condition. A condition
        is known by its code, so it may only depend on the record and this context."""
        key = (table, getattr(where, "__code__", where))
        found = self._selected.get(key)
        if found is None:
            found = [k for k, record in self.tables[table].items() if where(record)]
            self._selected[key] = found
        return found

    def free_slots(self, provider_id: str, date: str) -> list[str]:
        """Free slots of the provider on ``date`` in the base database ([] if not working)."""
        key = (provider_id, date)
        found = self._slots.get(key)
        if found is None:
            provider = self.providers[provider_id]
            if weekday(date) not in provider["working_days"]:
                found = []
            else:
                self.tools.db = Database(self.base)
                text = self.tools.get_provider_availability(provider_id, date)
                found = json.loads(text)["available_slots"]
            self._slots[key] = found
        return found


# --------------------------------------------------------------------------- parts


def _appointment_text(ctx: _Context, appointment: Record) -> str:
    provider = ctx.providers[appointment["provider_id"]]
    return f"your appointment with {doctor(provider)} on {_when(appointment['start'])}"


def _pick_slot(
    rng: random.Random, ctx: _Context, provider_id: str, days: list[str]
) -> tuple[str, str, str] | None:
    """(date, time, how the caller asks for it) of a free slot on one of ``days``."""
    days = [d for d in days if ctx.free_slots(provider_id, d)]
    if not days:
        return None
    date = rng.choice(days)
    free = ctx.free_slots(provider_id, date)
    style = rng.random()
    if style < 0.2:
        return date, free[0], "the earliest time available that day"
    afternoon = [s for s in free if s >= "13:00"]
    if style < 0.3 and afternoon:
        return date, afternoon[0], "the earliest afternoon time available that day"
    if style < 0.38:
        return date, free[-1], "the latest time available that day"
    time = rng.choice(free)
    return date, time, time


def _book(
    rng: random.Random,
    ctx: _Context,
    patient: Record,
    specialist: bool,
    *,
    copay: bool = False,
    new_id: bool = True,
) -> Part | None:
    plan = ctx.plans[patient["plan_id"]]
    if specialist:
        if plan["referral_required"]:
            specialties = [
                r["specialty"]
                for r in patient["referrals"]
                if r["issued_on"] <= TODAY <= r["expires_on"]
            ]
        else:
            specialties = list(_SPECIALIST_WORDS)
        if not specialties:
            return None
        specialty = rng.choice(specialties)
        pool = [
            p
            for p in ctx.by_specialty[specialty]
            if plan["network"] in ctx.providers[p]["networks"]
        ]
        if not pool:
            return None
        provider = ctx.providers[rng.choice(pool)]
        days = [d for d in ctx.booking_days if rules.may_book(patient, plan, specialty, d)]
        visit_type = rng.choice(("consultation", "follow-up"))
    else:
        provider = ctx.providers[patient["primary_provider_id"]]
        days = ctx.booking_days
        visit_type = rng.choice(("checkup", "sick visit", "follow-up"))
    picked = _pick_slot(rng, ctx, provider["provider_id"], days)
    if picked is None:
        return None
    date, time, time_text = picked
    actions = []
    if specialist:
        actions.append(call("search_providers", specialty=provider["specialty"]))
    else:
        actions.append(call("get_provider_details", provider_id=provider["provider_id"]))
    actions.append(
        call("get_provider_availability", provider_id=provider["provider_id"], date=date)
    )
    outputs = [NEW_APPOINTMENT] if new_id else []
    question = ""  # the new id is stated unasked (rule 2.4); a copay only when asked
    instruction = (
        f"You want a {visit_type} appointment with "
        + (
            f"{doctor(provider)} ({provider['specialty']})"
            if specialist
            else f"your primary care provider, {doctor(provider)},"
        )
        + f" on {date} ({weekday(date)}), at {time_text}."
    )
    if copay:
        service = visit_service(provider["specialty"])
        amount = ctx.plans[patient["plan_id"]]["services"][service]["copay"]
        if not amount or plan["network"] not in provider["networks"]:
            return None
        actions.append(
            call(
                "check_coverage",
                patient_id=patient["patient_id"],
                service=service,
                provider_id=provider["provider_id"],
            )
        )
        outputs.append(money(amount))
        instruction += " Before booking you want to know your copay for the visit."
        question = "What will my copay be?"
    start = f"{date} {time}"
    actions.append(
        call(
            "book_appointment",
            patient_id=patient["patient_id"],
            provider_id=provider["provider_id"],
            start_time=start,
            visit_type=visit_type,
        )
    )
    if new_id:
        instruction += " You want the new appointment's id."
    info = {"preferred_date": date, "preferred_time": time_text, "visit_type": visit_type}
    if specialist:
        info = {"preferred_doctor": doctor(provider), **info}
        ask = rng.choice(
            (
                f"make an appointment with {_SPECIALIST_WORDS[provider['specialty']]}",
                f"book a visit with {_SPECIALIST_WORDS[provider['specialty']]}",
            )
        )
    else:
        ask = rng.choice(
            (
                "book an appointment with my regular doctor",
                f"schedule a {visit_type} with my primary care provider",
                "see my family doctor sometime soon",
            )
        )
    return Part(
        actions=actions,
        info=info,
        instruction=instruction,
        ask=ask,
        outputs=outputs,
        tags=["book_appointment"],
        question=question,
    )


def _changeable(ctx: _Context, patient: Record) -> list[Record]:
    return [
        ctx.appointments[a]
        for a in patient["appointments"]
        if rules.can_change(ctx.appointments[a])
    ]


def _reschedule(
    rng: random.Random, ctx: _Context, appointment: Record, *, read_list: bool = True
) -> Part | None:
    provider_id = appointment["provider_id"]
    days = [d for d in ctx.booking_days if d != appointment["start"][:10]]
    picked = _pick_slot(rng, ctx, provider_id, days)
    if picked is None:
        return None
    date, time, time_text = picked
    patient = ctx.patients[appointment["patient_id"]]
    actions = [
        call("get_appointment_details", appointment_id=appointment["appointment_id"]),
        call("get_provider_availability", provider_id=provider_id, date=date),
        call(
            "reschedule_appointment",
            appointment_id=appointment["appointment_id"],
            new_start_time=f"{date} {time}",
        ),
    ]
    if read_list:
        actions.insert(0, call("list_patient_appointments", patient_id=patient["patient_id"]))
    when = f"{date} ({weekday(date)}), at {time_text}"
    return Part(
        actions=actions,
        info={
            "current_appointment": _appointment_text(ctx, appointment)[5:],
            "new_time": f"{date}, {time_text}",
        },
        instruction=f"You want to move {_appointment_text(ctx, appointment)} to {when}.",
        ask=rng.choice(
            (
                "reschedule an appointment",
                "move one of my appointments to another day",
                "change the date of an upcoming appointment",
            )
        ),
        tags=["reschedule_appointment"],
    )


def _cancel(
    rng: random.Random, ctx: _Context, appointment: Record, *, read_list: bool = True
) -> Part:
    reason = rng.choice(CANCEL_REASONS)
    actions = [
        call("get_appointment_details", appointment_id=appointment["appointment_id"]),
        call("cancel_appointment", appointment_id=appointment["appointment_id"], reason=reason),
    ]
    if read_list:
        actions.insert(0, call("list_patient_appointments", patient_id=appointment["patient_id"]))
    why = {
        "schedule conflict": "something else came up at that time",
        "feeling better": "you are feeling better",
        "seeing another provider": "you are seeing another provider",
        "other": "of a reason you would rather not explain (say 'other')",
    }[reason]
    return Part(
        actions=actions,
        info={
            "current_appointment": _appointment_text(ctx, appointment)[5:],
            "cancellation_reason": reason,
        },
        instruction=f"You want to cancel {_appointment_text(ctx, appointment)} because {why}.",
        ask=rng.choice(
            (
                "cancel an appointment",
                "cancel one of my upcoming appointments",
                "call off an appointment I booked",
            )
        ),
        tags=["cancel_appointment"],
    )


def _refillable(ctx: _Context, patient: Record) -> list[Record]:
    return [
        ctx.prescriptions[r]
        for r in patient["prescriptions"]
        if rules.refillable(ctx.prescriptions[r]) and rules.refill_due(ctx.prescriptions[r])
    ]


def _medication(prescription: Record) -> str:
    return f"{prescription['medication']} {prescription['strength']}"


def _refill(
    rng: random.Random,
    ctx: _Context,
    prescription: Record,
    *,
    pharmacy: bool | None = None,
    read_list: bool = True,
) -> Part:
    patient_id = prescription["patient_id"]
    actions = [
        call("get_prescription_details", prescription_id=prescription["prescription_id"]),
        call(
            "request_refill", patient_id=patient_id, prescription_id=prescription["prescription_id"]
        ),
    ]
    if read_list:
        actions.insert(0, call("list_prescriptions", patient_id=patient_id))
    pharmacy = rng.random() < 0.5 if pharmacy is None else pharmacy
    instruction = f"You want a refill of your {_medication(prescription)}."
    outputs = []
    if pharmacy:
        outputs = [prescription["pharmacy"].split(" (")[0]]
        instruction += " You want to know which pharmacy it goes to."
    return Part(
        actions=actions,
        info={"medication": _medication(prescription)},
        instruction=instruction,
        ask=rng.choice(
            (
                f"refill my {prescription['medication']}",
                "get a prescription refilled",
                "order a refill of one of my medications",
            )
        ),
        outputs=outputs,
        tags=["request_refill"],
        question="Which pharmacy will the refill go to?" if outputs else "",
    )


def _claim_visit_text(ctx: _Context, appointment: Record) -> str:
    provider = ctx.providers[appointment["provider_id"]]
    return f"the visit with {doctor(provider)} on {appointment['start'][:10]}"


def _file_claim(
    rng: random.Random, ctx: _Context, appointment: Record, *, new_id: bool = True
) -> Part:
    patient_id = appointment["patient_id"]
    instruction = (
        f"Your insurance claim for {_claim_visit_text(ctx, appointment)} was never filed; you "
        "want it filed."
    )
    if new_id:
        instruction += " You want the new claim's id."
    return Part(
        actions=[
            call("list_patient_appointments", patient_id=patient_id),
            call("get_appointment_details", appointment_id=appointment["appointment_id"]),
            call("file_claim", patient_id=patient_id, appointment_id=appointment["appointment_id"]),
        ],
        info={"claim_visit": _claim_visit_text(ctx, appointment)},
        instruction=instruction,
        ask=rng.choice(
            (
                "file an insurance claim for a recent visit",
                "get a claim submitted for a doctor's visit",
                "make sure my insurance gets billed for a visit",
            )
        ),
        outputs=[NEW_CLAIM] if new_id else [],
        tags=["file_claim"],
    )


def _find_claim(rng: random.Random, ctx: _Context, claim: Record) -> tuple[list, dict, str]:
    """Reads that lead to the claim, what the caller knows about it, and how they name it."""
    appointment = ctx.appointments[claim["appointment_id"]]
    if rng.random() < 0.5:
        return (
            [call("get_claim_details", claim_id=claim["claim_id"])],
            {"claim_number": claim["claim_id"]},
            f"claim {claim['claim_id']}",
        )
    visit = _claim_visit_text(ctx, appointment)
    actions = [
        call("list_patient_appointments", patient_id=claim["patient_id"]),
        call("get_appointment_details", appointment_id=appointment["appointment_id"]),
        call("get_claim_details", claim_id=claim["claim_id"]),
    ]
    return actions, {"claim_visit": visit}, f"the claim for {visit}"


def _appeal(rng: random.Random, ctx: _Context, claim: Record) -> Part:
    reason = _APPEAL_FOR_DENIAL[claim["denial_reason"]]
    actions, info, named = _find_claim(rng, ctx, claim)
    actions.append(call("appeal_claim", claim_id=claim["claim_id"], reason=reason))
    return Part(
        actions=actions,
        info={**info, "appeal_reason": reason},
        instruction=(
            f"{named[0].upper()}{named[1:]} was denied ('{claim['denial_reason']}'). You want to "
            f"appeal it; your reason: '{reason}'."
        ),
        ask=rng.choice(
            (
                "appeal a denied insurance claim",
                "dispute a claim my plan denied",
                "challenge an insurance denial",
            )
        ),
        tags=["appeal_claim"],
    )


def _claim_status(rng: random.Random, ctx: _Context, claim: Record) -> Part:
    actions, info, named = _find_claim(rng, ctx, claim)
    outputs = [claim["status"]]
    want = "its status"
    if claim["status"] == "paid":
        outputs.append(money(claim["patient_responsibility"]))
        want = "its status and how much you owe"
    elif claim["status"] in ("denied", "appealed"):
        outputs.append(claim["denial_reason"])
        want = "its status and why it was denied"
    return Part(
        actions=actions,
        info=info,
        instruction=f"You want to know the status of {named}: {want}.",
        ask=rng.choice(
            (
                "check on an insurance claim",
                "find out what happened with a claim",
                "ask about the status of a claim",
            )
        ),
        outputs=outputs,
        tags=["info"],
    )


def _coverage(rng: random.Random, ctx: _Context, patient: Record) -> Part | None:
    plan = ctx.plans[patient["plan_id"]]
    if rng.random() < 0.55:
        specialty = rng.choice([s for s in ctx.by_specialty if s not in ("Pediatrics",)])
        pool = [
            p
            for p in ctx.by_specialty[specialty]
            if plan["network"] in ctx.providers[p]["networks"]
        ]
        if not pool:
            return None
        provider = ctx.providers[rng.choice(pool)]
        who = _SPECIALIST_WORDS.get(specialty, "a primary care doctor")
        service = visit_service(specialty)
        amount = plan["services"][service]["copay"]
        if not amount:
            return None
        return Part(
            actions=[
                call("search_providers", specialty=specialty),
                call(
                    "check_coverage",
                    patient_id=patient["patient_id"],
                    service=service,
                    provider_id=provider["provider_id"],
                ),
            ],
            info={"preferred_doctor": doctor(provider)},
            instruction=(
                f"You are thinking about seeing {doctor(provider)} ({specialty}) and want to "
                "know your copay for a visit."
            ),
            ask=f"find out what a visit with {who} would cost me",
            outputs=[money(amount)],
            tags=["info"],
        )
    service, words = rng.choice(
        (
            ("urgent care", "an urgent care visit"),
            ("x-ray", "an x-ray"),
            ("lab work", "lab work"),
            ("telehealth visit", "a video visit"),
        )
    )
    amount = plan["services"][service]["copay"]
    if not amount:
        return None
    return Part(
        actions=[call("check_coverage", patient_id=patient["patient_id"], service=service)],
        info={},
        instruction=f"You want to know your copay for {words} ('{service}').",
        ask=f"know what my plan charges me for {words}",
        outputs=[money(amount)],
        tags=["info"],
    )


def _next_appointment(rng: random.Random, ctx: _Context, patient: Record) -> Part | None:
    upcoming = [
        ctx.appointments[a]
        for a in patient["appointments"]
        if ctx.appointments[a]["status"] == "scheduled"
    ]
    if not upcoming:
        return None
    first = min(upcoming, key=lambda a: a["start"])
    clinic = ctx.clinics[first["clinic_id"]]
    return Part(
        actions=[
            call("list_patient_appointments", patient_id=patient["patient_id"]),
            call("list_clinics"),
        ],
        info={},
        instruction=(
            "You forgot when your next appointment is. You want its date, time and the clinic."
        ),
        ask="find out when my next appointment is",
        outputs=[first["start"][:10], first["start"][11:], clinic["name"]],
        tags=["info"],
    )


# --------------------------------------------------------------------------- refusals


def _late_change(rng: random.Random, ctx: _Context, appointment: Record) -> Part:
    clinic = ctx.clinics[appointment["clinic_id"]]
    verb = rng.choice(("cancel", "reschedule"))
    return Part(
        actions=[
            call("list_patient_appointments", patient_id=appointment["patient_id"]),
            call("get_appointment_details", appointment_id=appointment["appointment_id"]),
            call("list_clinics"),
        ],
        info={"current_appointment": _appointment_text(ctx, appointment)[5:]},
        instruction=(
            f"You want to {verb} {_appointment_text(ctx, appointment)}. If the agent says it "
            "is too late to change it, accept that and ask how you can reach the clinic."
        ),
        ask=f"{verb} an appointment I have coming up very soon",
        outputs=[rules.RULE_CHANGE_WINDOW, clinic["phone"]],
        tags=["refusal"],
    )


def _early_refill(rng: random.Random, ctx: _Context, prescription: Record) -> Part:
    return Part(
        actions=[
            call("list_prescriptions", patient_id=prescription["patient_id"]),
            call("get_prescription_details", prescription_id=prescription["prescription_id"]),
        ],
        info={"medication": _medication(prescription)},
        instruction=(
            f"You want a refill of your {_medication(prescription)} now because you are going "
            "away. If the agent says it is too early, accept it and ask from which date you can "
            "request it."
        ),
        ask=rng.choice(
            (
                f"refill my {prescription['medication']} a bit early",
                "get one of my prescriptions refilled before a trip",
            )
        ),
        outputs=[rules.earliest_refill_date(prescription), rules.timing_rule(prescription)],
        tags=["refusal"],
    )


def _no_refill(rng: random.Random, ctx: _Context, prescription: Record) -> Part:
    prescriber = ctx.providers[prescription["prescriber_id"]]
    return Part(
        actions=[
            call("list_prescriptions", patient_id=prescription["patient_id"]),
            call("get_prescription_details", prescription_id=prescription["prescription_id"]),
            call("get_provider_details", provider_id=prescriber["provider_id"]),
        ],
        info={"medication": _medication(prescription)},
        instruction=(
            f"You want a refill of your {_medication(prescription)}. If the agent says it cannot "
            "be refilled, accept it and ask who you should contact."
        ),
        ask=rng.choice((f"refill my {prescription['medication']}", "get a refill of a medication")),
        outputs=[rules.RULE_NO_REFILL, prescriber["name"]["last_name"]],
        tags=["refusal"],
    )


def _referral_refused(
    rng: random.Random, ctx: _Context, patient: Record
) -> tuple[Part, Record] | None:
    plan = ctx.plans[patient["plan_id"]]
    if not plan["referral_required"]:
        return None
    date = rng.choice(ctx.booking_days[:30])
    missing = [
        s
        for s in _SPECIALIST_WORDS
        if not rules.has_referral(patient, s, date) and not rules.has_referral(patient, s, TODAY)
    ]
    if is_minor(patient) or not missing:
        return None
    specialty = rng.choice(missing)
    pool = [
        p for p in ctx.by_specialty[specialty] if plan["network"] in ctx.providers[p]["networks"]
    ]
    if not pool:
        return None
    provider = ctx.providers[rng.choice(pool)]
    pcp = ctx.providers[patient["primary_provider_id"]]
    expired = [r for r in patient["referrals"] if r["specialty"] == specialty]
    note = " (you had one, but it has expired)" if expired else ""
    part = Part(
        actions=[
            call("get_plan_details", plan_id=plan["plan_id"]),
            call("search_providers", specialty=specialty),
            call("get_provider_details", provider_id=pcp["provider_id"]),
        ],
        info={"preferred_doctor": doctor(provider), "preferred_date": date},
        instruction=(
            f"You want a consultation with {doctor(provider)} ({specialty}) on {date}. You do "
            f"not have a referral{note}. If the agent explains that you need one, accept it and "
            "ask who can give you one."
        ),
        ask=f"make an appointment with {_SPECIALIST_WORDS[specialty]}",
        outputs=[rules.RULE_REFERRAL, pcp["name"]["last_name"]],
        tags=["refusal"],
    )
    return part, pcp


def _late_claim(rng: random.Random, ctx: _Context, appointment: Record) -> Part:
    return Part(
        actions=[
            call("list_patient_appointments", patient_id=appointment["patient_id"]),
            call("get_appointment_details", appointment_id=appointment["appointment_id"]),
        ],
        info={"claim_visit": _claim_visit_text(ctx, appointment)},
        instruction=(
            f"You want an insurance claim filed for {_claim_visit_text(ctx, appointment)}. If "
            "the agent says it is too late, accept it."
        ),
        ask="file an insurance claim for a visit I had a while ago",
        outputs=[rules.RULE_CLAIM_DEADLINE],
        tags=["refusal"],
    )


def _late_appeal(rng: random.Random, ctx: _Context, claim: Record) -> Part:
    actions, info, named = _find_claim(rng, ctx, claim)
    return Part(
        actions=actions,
        info={**info, "appeal_reason": _APPEAL_FOR_DENIAL[claim["denial_reason"]]},
        instruction=(
            f"You want to appeal the denial of {named}, which you only just found in your mail. "
            "If the agent says it is too late, accept it."
        ),
        ask="appeal an old insurance denial",
        outputs=[rules.RULE_APPEAL_DEADLINE],
        tags=["refusal"],
    )


# --------------------------------------------------------------------------- drafts


@dataclass
class _Draft(Draft):
    """A draft whose caller may be someone on the patient's behalf, or not identify at all."""

    caller: dict[str, str] | None = None  # {"name", "relationship"} when not the patient
    identify: bool = True


def _any_patient(rng: random.Random, ctx: _Context, adult: bool = True) -> Record:
    return ctx.patients[rng.choice(ctx.adults if adult else list(ctx.patients))]


def _draft(rng: random.Random, patient: Record, parts: list[Part], **kwargs: Any) -> _Draft:
    return _Draft(
        subject=patient, parts=parts, reason_for_call=_opening.asking(rng, parts), **kwargs
    )


def _book_category(specialist: bool, copay: bool) -> Callable[[random.Random, _Context], Any]:
    def make(rng: random.Random, ctx: _Context) -> _Draft | None:
        patient = _any_patient(rng, ctx)
        part = _book(rng, ctx, patient, specialist or (copay and rng.random() < 0.5), copay=copay)
        return _draft(rng, patient, [part]) if part else None

    return make


def _pick_record(rng: random.Random, ctx: _Context, table: str, where: Callable) -> Record:
    keys = ctx.select(table, where)
    return ctx.tables[table][rng.choice(keys)]


def _adult(ctx: _Context, record: Record) -> bool:
    return not is_minor(ctx.patients[record["patient_id"]])


def _reschedule_category(rng: random.Random, ctx: _Context) -> _Draft | None:
    appointment = _pick_record(
        rng, ctx, "appointments", lambda a: rules.can_change(a) and _adult(ctx, a)
    )
    part = _reschedule(rng, ctx, appointment)
    patient = ctx.patients[appointment["patient_id"]]
    return _draft(rng, patient, [part]) if part else None


def _cancel_category(rng: random.Random, ctx: _Context) -> _Draft | None:
    appointment = _pick_record(
        rng, ctx, "appointments", lambda a: rules.can_change(a) and _adult(ctx, a)
    )
    patient = ctx.patients[appointment["patient_id"]]
    return _draft(rng, patient, [_cancel(rng, ctx, appointment)])


def _cancel_two(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    changeable = _changeable(ctx, patient)
    if len(changeable) < 2:
        return None
    first, second = sorted(rng.sample(changeable, 2), key=lambda a: a["start"])
    one = _cancel(rng, ctx, first)
    two = _cancel(rng, ctx, second, read_list=False)
    two.info["cancellation_reason"] = one.info["cancellation_reason"]
    two.actions[-1]["arguments"]["reason"] = one.info["cancellation_reason"]
    two.instruction = f"You also want to cancel {_appointment_text(ctx, second)}, same reason."
    return _Draft(
        subject=patient,
        parts=[one, two],
        tags=["multi_item"],
        reason_for_call=_opening(rng, ["cancel two of my appointments"]),
    )


def _refill_category(rng: random.Random, ctx: _Context) -> _Draft | None:
    prescription = _pick_record(
        rng, ctx, "prescriptions", lambda r: rules.refillable(r) and rules.refill_due(r)
    )
    patient = ctx.patients[prescription["patient_id"]]
    return _draft(rng, patient, [_refill(rng, ctx, prescription)])


def _refill_two(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    due = _refillable(ctx, patient)
    if len(due) < 2:
        return None
    first, second = rng.sample(due, 2)
    pharmacy = rng.random() < 0.5
    one = _refill(rng, ctx, first, pharmacy=pharmacy)
    two = _refill(rng, ctx, second, pharmacy=False, read_list=False)
    if one.question:  # which refill: the outputs name the first one's pharmacy only
        one.question = f"Which pharmacy will the {first['medication']} go to?"
    return _Draft(
        subject=patient,
        parts=[one, two],
        tags=["multi_item"],
        reason_for_call=_opening.asking(rng, [one, two], ["refill two of my prescriptions"]),
    )


def _file_claim_category(rng: random.Random, ctx: _Context) -> _Draft | None:
    appointment = _pick_record(rng, ctx, "appointments", rules.can_file_claim)
    patient = ctx.patients[appointment["patient_id"]]
    if is_minor(patient):
        return None
    return _draft(rng, patient, [_file_claim(rng, ctx, appointment)])


def _appeal_category(rng: random.Random, ctx: _Context) -> _Draft | None:
    claim = _pick_record(rng, ctx, "claims", rules.can_appeal)
    patient = ctx.patients[claim["patient_id"]]
    if is_minor(patient):
        return None
    return _draft(rng, patient, [_appeal(rng, ctx, claim)])


def _caller_for(rng: random.Random, patient: Record) -> dict[str, str] | None:
    if not patient["authorized_contacts"]:
        return None
    return dict(rng.choice(patient["authorized_contacts"]))


def _proxy_write(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = ctx.patients[rng.choice(list(ctx.patients))]
    caller = _caller_for(rng, patient)
    if caller is None:
        return None
    kind = rng.choice(("cancel", "reschedule", "book", "refill"))
    part: Part | None = None
    if kind in ("cancel", "reschedule"):
        changeable = _changeable(ctx, patient)
        if not changeable:
            return None
        appointment = rng.choice(changeable)
        if kind == "cancel":
            part = _cancel(rng, ctx, appointment)
        else:
            part = _reschedule(rng, ctx, appointment)
    elif kind == "book":
        part = _book(rng, ctx, patient, False)
    else:
        due = _refillable(ctx, patient)
        part = _refill(rng, ctx, rng.choice(due)) if due else None
    if part is None:
        return None
    _third_person(part, patient)
    return _draft(rng, patient, [part], caller=caller, tags=["proxy"])


def _third_person(part: Part, patient: Record) -> None:
    """Rewrite a part's wording for someone calling on the patient's behalf."""
    first = patient["name"]["first_name"]
    part.instruction = (
        part.instruction.replace("You want", f"You want, for {first},", 1)
        .replace(" your ", f" {first}'s ")
        .replace(" you are ", f" {first} is ")
    )
    part.info = {k: v.replace("your ", f"{first}'s ") for k, v in part.info.items()}
    relative = _relative_word(patient)
    part.ask = part.ask.replace(" my ", f" my {relative}'s ").replace(" I ", " we ")
    if f"my {relative}" not in part.ask:
        part.ask += f" for my {relative}"


def _relative_word(patient: Record) -> str:
    return "child" if is_minor(patient) else "family member"


_COMBOS = (
    ("cancel", "refill"),
    ("reschedule", "claim_status"),
    ("book", "refill"),
    ("refill", "file_claim"),
    ("cancel", "book"),
    ("appeal", "coverage"),
    ("file_claim", "appointment_info"),
    ("reschedule", "refill"),
    ("book", "coverage"),
    ("refill", "appeal"),
)


def _part_of_kind(
    rng: random.Random, ctx: _Context, patient: Record, kind: str, new_id: bool = True
) -> Part | None:
    if kind in ("cancel", "reschedule"):
        changeable = _changeable(ctx, patient)
        if not changeable:
            return None
        appointment = rng.choice(changeable)
        return (
            _cancel(rng, ctx, appointment)
            if kind == "cancel"
            else _reschedule(rng, ctx, appointment)
        )
    if kind == "book":
        return _book(rng, ctx, patient, rng.random() < 0.4, new_id=new_id)
    if kind == "refill":
        due = _refillable(ctx, patient)
        # Without new ids (before a transfer) nothing may be required, so no pharmacy either.
        pharmacy = None if new_id else False
        return _refill(rng, ctx, rng.choice(due), pharmacy=pharmacy) if due else None
    if kind == "file_claim":
        visits = [
            ctx.appointments[a]
            for a in patient["appointments"]
            if rules.can_file_claim(ctx.appointments[a])
        ]
        return _file_claim(rng, ctx, rng.choice(visits), new_id=new_id) if visits else None
    if kind in ("appeal", "claim_status"):
        claims = [ctx.claims[c] for c in patient["claims"]]
        if kind == "appeal":
            claims = [c for c in claims if rules.can_appeal(c)]
            return _appeal(rng, ctx, rng.choice(claims)) if claims else None
        return _claim_status(rng, ctx, rng.choice(claims)) if claims else None
    if kind == "coverage":
        return _coverage(rng, ctx, patient)
    if kind == "appointment_info":
        return _next_appointment(rng, ctx, patient)
    raise ValueError(kind)


def _multi_step(rng: random.Random, ctx: _Context) -> _Draft | None:
    first_kind, second_kind = rng.choice(_COMBOS)
    patient = _any_patient(rng, ctx)
    one = _part_of_kind(rng, ctx, patient, first_kind)
    two = _part_of_kind(rng, ctx, patient, second_kind)
    if one is None or two is None:
        return None
    return _draft(rng, patient, [one, two], tags=["multi_step"])


def _referral_then_primary(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    refused = _referral_refused(rng, ctx, patient)
    if refused is None:
        return None
    part, pcp = refused
    part.info.pop("preferred_date")
    picked = _pick_slot(rng, ctx, pcp["provider_id"], ctx.booking_days[:21])
    if picked is None:
        return None
    date, time, time_text = picked
    book = Part(
        actions=[
            call("get_provider_availability", provider_id=pcp["provider_id"], date=date),
            call(
                "book_appointment",
                patient_id=patient["patient_id"],
                provider_id=pcp["provider_id"],
                start_time=f"{date} {time}",
                visit_type="consultation",
            ),
        ],
        info={"preferred_date": date, "preferred_time": time_text, "visit_type": "consultation"},
        instruction=(
            f"When the agent offers an appointment with your primary care provider to get the "
            f"referral, you accept: a consultation on {date} ({weekday(date)}), at {time_text}. "
            "You want the new appointment's id."
        ),
        ask="",
        outputs=[NEW_APPOINTMENT],
        tags=["book_appointment"],
    )
    part.outputs = part.outputs[:1]  # naming the PCP is part of booking with them
    return _Draft(
        subject=patient,
        parts=[part, book],
        tags=["multi_step"],
        reason_for_call=_opening(rng, [part.ask]),
    )


def _transfer_part(rng: random.Random, ctx: _Context, patient: Record) -> Part:
    meds = [ctx.prescriptions[r]["medication"] for r in patient["prescriptions"]]
    question, topic = rng.choice(_MEDICAL_QUESTIONS)
    if "{med}" in question and not meds:
        question, topic = _MEDICAL_QUESTIONS[-1]
    question = question.format(med=rng.choice(meds) if meds else "")
    name = f"{patient['name']['first_name']} {patient['name']['last_name']}"
    return Part(
        actions=[
            call(
                "transfer_to_human_agents",
                summary=f"Patient {name} ({patient['patient_id']}) has {topic}; needs a nurse.",
            )
        ],
        info={},
        instruction=(
            f"You also want to ask {question}. You insist on an answer; if the agent offers to "
            "transfer you to a nurse, accept."
        ),
        ask=f"find out {question.replace('you ', 'I ').replace('your ', 'my ')}",
        tags=["transfer"],
    )


def _transfer_after_write(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    kind = rng.choice(("cancel", "reschedule", "book", "refill", "file_claim"))
    # No required output: the gold episode ends with the transfer, before any report.
    one = _part_of_kind(rng, ctx, patient, kind, new_id=False)
    if one is None or one.outputs:
        return None
    two = _transfer_part(rng, ctx, patient)
    return _draft(rng, patient, [one, two], tags=["multi_step"])


def _info_category(kind: str) -> Callable[[random.Random, _Context], _Draft | None]:
    def make(rng: random.Random, ctx: _Context) -> _Draft | None:
        patient = _any_patient(rng, ctx)
        if kind == "claim_status" and not patient["claims"]:
            return None
        part = _part_of_kind(rng, ctx, patient, kind)
        return _draft(rng, patient, [part]) if part else None

    return make


def _declined(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    if rng.random() < 0.5:
        part = _book(rng, ctx, patient, rng.random() < 0.5, copay=True, new_id=False)
        change = "Once you hear the copay you decide not to book"
    else:
        due = _refillable(ctx, patient)
        part = _refill(rng, ctx, rng.choice(due), pharmacy=True) if due else None
        change = "Once you hear which pharmacy it would go to you decide to wait"
    if part is None:
        return None
    part.actions = part.actions[:-1]  # the caller declines: no write
    part.tags = ["declined"]
    part.instruction += f" {change}: when asked to confirm, say no."
    return _draft(rng, patient, [part], tags=["declined"], confirm=False)


def _refusal_category(kind: str) -> Callable[[random.Random, _Context], _Draft | None]:
    def make(rng: random.Random, ctx: _Context) -> _Draft | None:
        part: Part | None
        if kind == "late_change":
            record = _pick_record(
                rng,
                ctx,
                "appointments",
                lambda a: (
                    a["status"] == "scheduled" and NOW < a["start"] < WINDOW_END and _adult(ctx, a)
                ),
            )
            part = _late_change(rng, ctx, record)
        elif kind == "early_refill":
            record = _pick_record(
                rng, ctx, "prescriptions", lambda r: rules.refillable(r) and not rules.refill_due(r)
            )
            part = _early_refill(rng, ctx, record)
        elif kind == "no_refills":
            record = _pick_record(
                rng,
                ctx,
                "prescriptions",
                lambda r: not rules.refillable(r) and r["refill_request"] is None,
            )
            part = _no_refill(rng, ctx, record)
        elif kind == "late_claim":
            record = _pick_record(
                rng,
                ctx,
                "appointments",
                lambda a: (
                    a["status"] == "completed"
                    and a["claim_id"] is None
                    and not rules.can_file_claim(a)
                    and _adult(ctx, a)
                ),
            )
            part = _late_claim(rng, ctx, record)
        elif kind == "late_appeal":
            record = _pick_record(
                rng,
                ctx,
                "claims",
                lambda c: c["status"] == "denied" and not rules.can_appeal(c) and _adult(ctx, c),
            )
            part = _late_appeal(rng, ctx, record)
        else:
            raise ValueError(kind)
        return _draft(rng, ctx.patients[record["patient_id"]], [part])

    return make


def _refuse_referral(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    refused = _referral_refused(rng, ctx, patient)
    return _draft(rng, patient, [refused[0]]) if refused else None


def _refuse_unauthorized(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = ctx.patients[rng.choice(list(ctx.patients))]
    listed = {c["name"] for c in patient["authorized_contacts"]}
    first = rng.choice(("Marguerite", "Calvin", "Priyanka", "Tobias", "Annika", "Desmond"))
    caller = {
        "name": f"{first} {patient['name']['last_name']}",
        "relationship": rng.choice(("spouse", "sibling", "parent", "friend")),
    }
    if is_minor(patient):
        caller["relationship"] = rng.choice(("grandparent", "aunt", "uncle"))
    if caller["name"] in listed:
        return None
    upcoming = [
        ctx.appointments[a]
        for a in patient["appointments"]
        if ctx.appointments[a]["status"] == "scheduled"
    ]
    if upcoming and rng.random() < 0.6:
        want = "when the next appointment is, and to cancel it if it is this week"
        ask = f"check on my {_relative_word(patient)}'s next appointment"
    else:
        want = "the status of their recent insurance claims"
        ask = f"check on my {_relative_word(patient)}'s insurance claims"
    part = Part(
        actions=[],
        info={},
        instruction=(
            f"You want to know {want}. You are not listed as an authorized contact; if the "
            "agent refuses for that reason, accept it."
        ),
        ask=ask,
        outputs=[rules.RULE_AUTHORIZATION],
        tags=["refusal"],
    )
    return _draft(rng, patient, [part], caller=caller)


def _refuse_other_patient(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    other = _any_patient(rng, ctx)
    mine = f"{patient['name']['first_name']} {patient['name']['last_name']}"
    if other is patient or rules.is_authorized(other, mine):
        return None
    other_name = f"{other['name']['first_name']} {other['name']['last_name']}"
    part = Part(
        actions=[],
        info={},
        instruction=(
            f"After you are verified, you ask when the next appointment of your friend "
            f"{other_name} (born {other['dob']}) is, since you drive them there. If the agent "
            "refuses, accept it."
        ),
        ask="find out when a friend's appointment is, since I'm driving them",
        outputs=[rules.RULE_OTHER_PATIENT],
        tags=["refusal"],
    )
    return _draft(rng, patient, [part])


def _transfer_emergency(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    name = f"{patient['name']['first_name']} {patient['name']['last_name']}"
    emergency = rng.choice(_EMERGENCIES)
    part = Part(
        actions=[
            call("transfer_to_human_agents", summary=f"Emergency: {name} reports that {emergency}.")
        ],
        info={},
        instruction=(
            "You are calling about an emergency happening right now and want help "
            "immediately. If the agent tells you to call 911 and transfers you, accept."
        ),
        ask="",
        tags=["transfer"],
    )
    opening = f"Please help, this is {name}: {emergency}! Can someone see me right away?"
    return _Draft(
        subject=patient, parts=[part], reason_for_call=opening, identify=False, tags=["emergency"]
    )


def _transfer_medical(rng: random.Random, ctx: _Context) -> _Draft | None:
    patient = _any_patient(rng, ctx)
    part = _transfer_part(rng, ctx, patient)
    part.instruction = part.instruction.replace("You also want", "You want")
    return _draft(rng, patient, [part])


_CATEGORIES: dict[str, Callable[[random.Random, _Context], _Draft | None]] = {
    "book_primary": _book_category(False, False),
    "book_specialist": _book_category(True, False),
    "book_with_copay": _book_category(False, True),
    "reschedule": _reschedule_category,
    "cancel": _cancel_category,
    "cancel_two": _cancel_two,
    "refill": _refill_category,
    "refill_two": _refill_two,
    "file_claim": _file_claim_category,
    "appeal_claim": _appeal_category,
    "proxy_write": _proxy_write,
    "multi_step": _multi_step,
    "referral_then_primary": _referral_then_primary,
    "transfer_after_write": _transfer_after_write,
    "coverage_info": _info_category("coverage"),
    "claim_status": _info_category("claim_status"),
    "appointment_info": _info_category("appointment_info"),
    "declined": _declined,
    "refuse_late_change": _refusal_category("late_change"),
    "refuse_early_refill": _refusal_category("early_refill"),
    "refuse_no_refills": _refusal_category("no_refills"),
    "refuse_referral": _refuse_referral,
    "refuse_late_claim": _refusal_category("late_claim"),
    "refuse_late_appeal": _refusal_category("late_appeal"),
    "refuse_unauthorized": _refuse_unauthorized,
    "refuse_other_patient": _refuse_other_patient,
    "transfer_emergency": _transfer_emergency,
    "transfer_medical": _transfer_medical,
}


# --------------------------------------------------------------------------- rows


def _identity(rng: random.Random, draft: _Draft) -> Identity:
    """The verification calls (rule 1.1, and 1.3 for a caller), what the caller knows, and how
    the scenario tells them to identify themselves."""
    patient = draft.subject
    name = patient["name"]
    proxy = draft.caller is not None
    prefix = "patient_" if proxy else ""
    method = rng.choices(("name", "member", "email"), weights=(45, 30, 25 if not proxy else 0))[0]
    dob = {f"{prefix}date_of_birth": patient["dob"]}
    if method == "name":
        action = call(
            "find_patient_by_name_dob",
            first_name=name["first_name"],
            last_name=name["last_name"],
            date_of_birth=patient["dob"],
        )
        known = {f"{prefix}name": f"{name['first_name']} {name['last_name']}", **dob}
        how = "full name and date of birth"
    elif method == "member":
        action = call(
            "find_patient_by_member_id",
            member_id=patient["member_id"],
            date_of_birth=patient["dob"],
        )
        known = {f"{prefix}member_id": patient["member_id"], **dob}
        how = "insurance member id and date of birth"
    else:
        action = call("find_patient_by_email", email=patient["email"], date_of_birth=patient["dob"])
        known = {"email": patient["email"], **dob}
        how = "email address and date of birth"
    if proxy:
        known = {f"{prefix}name": f"{name['first_name']} {name['last_name']}", **known}
        known.update(own_name=draft.caller["name"], relationship=draft.caller["relationship"])
        how = (
            f"To identify the patient, give {name['first_name']}'s {how.replace('full ', '')} "
            "when asked, and your own full name and relationship."
        )
    else:
        how = f"To identify yourself, give your {how} when asked."
    return Identity(
        actions=[action, call("get_patient_details", patient_id=patient["patient_id"])],
        known=known,
        instruction=how,
    )


def _persona(rng: random.Random, draft: _Draft) -> str:
    patient = draft.subject
    name = f"{patient['name']['first_name']} {patient['name']['last_name']}"
    if draft.caller is None:
        return f"You are {name}, a patient of Clearwater Health Partners. {rng.choice(_TRAITS)}"
    return (
        f"You are {draft.caller['name']}, calling on behalf of {name} (you are their "
        f"{draft.caller['relationship']}). {rng.choice(_TRAITS)}"
    )


def _finish(rng: random.Random, ctx: _Context, draft: _Draft, category: str) -> Finished:
    """The scenario, gold actions, outputs and tags of a draft (ids not yet filled in)."""
    identity = _identity(rng, draft) if draft.identify else None
    return _WRITER.finish(draft, category, identity, persona=lambda: _persona(rng, draft))


def _fill_ids(ctx: _Context, actions: list[Action], outputs: list[str]) -> list[str] | None:
    """Replay the gold; put the ids it created into the outputs. None if a call fails."""
    results = ctx.replay(actions)
    if results is None:
        return None
    created = {}
    for action, result in zip(actions, results, strict=True):
        if action["name"] == "get_provider_availability":
            # A caller asking for "the earliest time" means the earliest the agent sees then: an
            # earlier change in the same task (a cancellation) must not have moved it.
            args = action["arguments"]
            if json.loads(result)["available_slots"] != ctx.free_slots(**args):
                return None
        elif action["name"] == "book_appointment":
            created[NEW_APPOINTMENT] = json.loads(result)["appointment_id"]
        elif action["name"] == "file_claim":
            created[NEW_CLAIM] = json.loads(result)["claim_id"]
    if any(o in (NEW_APPOINTMENT, NEW_CLAIM) and o not in created for o in outputs):
        return None
    return [created.get(o, o) for o in outputs]


TASKS = TaskSource(
    domain=DOMAIN_NAME,
    env_id=ENV_ID,
    policy=POLICY,
    context=_Context,
    load_tables=load_tables,
    weights=CATEGORY_WEIGHTS,
    categories=_CATEGORIES,
    finish=_finish,
    attempts_per_task=300,
)
"""Healthcare's tasks; ``extra_info["tags"]`` names the write tools a task uses,
``multi_step``, ``multi_item``, ``proxy``, ``refusal``, ``transfer``, ``info``, ``declined`` and
``outputs``."""

generate_splits = TASKS.generate
default_splits = TASKS.default_splits

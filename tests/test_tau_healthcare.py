"""TauHealthcare-v0: the database, the tools' rules, and tasks that are solvable, strict, not free.

A one-argument change to one of its writes loses the reward and every gold write follows the
policy's rules; the checks every domain shares (gold turns solve every task, a do-nothing agent
passes almost none, ...) are in test_tau_domains.py. The env is built directly (the registry
entry is the lead's), so a row's env_id is not checked against a spec here.
"""

import datetime as dt
import json
import re
from collections import Counter

import tau_domain_checks as kit
from gymnasium.utils.env_checker import check_env
from tau_domain_checks import actions_of, call, fails, play
from tau_helpers import COMPLETION_TOKENS, PROMPT_TOKENS, customer_server

from tool_envs.tau.domains.healthcare import DOMAIN, TauHealthcareEnv, rules
from tool_envs.tau.domains.healthcare.data import (
    CANCEL_REASONS,
    NOW,
    PRIMARY_CARE,
    TODAY,
    WINDOW_END,
    day_slots,
    weekday,
)
from tool_envs.tau.domains.healthcare.tasks import CATEGORY_WEIGHTS, WRITE_TOOLS, money
from tool_envs.tau.domains.healthcare.tools import HealthcareTools
from tool_envs.tau.task import parse_reward_spec

SPLITS, ALL_TASKS, TABLES = kit.shipped(DOMAIN)
NO_OP = "Is there anything else I can help you with?"

has_write = kit.writes_in(WRITE_TOOLS)
env, tools = kit.fixtures(lambda: TauHealthcareEnv(tasks=SPLITS["test"]), DOMAIN)


def records(table, where=lambda record: True):
    return [r for r in TABLES[table].values() if where(r)]


def first(table, where=lambda record: True):
    return next(r for r in TABLES[table].values() if where(r))


def adult(record):
    patient = TABLES["patients"][record["patient_id"]]
    return patient["dob"] < "2006-01-01"


def free_slot(provider_id, *, after="2025-03-12"):
    """A (date, time) free slot of the provider in the base database."""
    provider = TABLES["providers"][provider_id]
    taken = {
        a["start"]
        for a in records(
            "appointments", lambda a: a["status"] == "scheduled" and a["provider_id"] == provider_id
        )
    }
    date = dt.date.fromisoformat(after)
    while True:
        text = date.isoformat()
        if weekday(text) in provider["working_days"]:
            for slot in day_slots(provider["hours"]):
                if f"{text} {slot}" not in taken:
                    return text, slot
        date += dt.timedelta(days=1)


def task_row(actions, outputs, known_info, opening="Hi, I need some help.", confirm=True):
    return kit.hand_written(
        DOMAIN, opening, actions, outputs, persona="A patient.", known_info=known_info,
        confirm=confirm,
    )  # fmt: skip


# --------------------------------------------------------------------------- (2) strict reward


def _other(values, value, number):
    others = [v for v in values if v != value]
    return others[number % len(others)]


def _perturb(action, number):
    """The same write with ONE argument changed to another plausible value."""
    args = json.loads(json.dumps(action["arguments"]))
    keys = sorted(args)
    key = keys[number % len(keys)]
    value = args[key]
    if key == "patient_id":
        args[key] = _other(list(TABLES["patients"])[:50], value, number)
    elif key == "provider_id":
        specialty = TABLES["providers"][value]["specialty"]
        same = [p for p, r in TABLES["providers"].items() if r["specialty"] == specialty]
        args[key] = _other(same, value, number)
    elif key in ("start_time", "new_start_time"):
        moment = dt.datetime.strptime(value, "%Y-%m-%d %H:%M") + dt.timedelta(minutes=30)
        args[key] = moment.strftime("%Y-%m-%d %H:%M")
    elif key == "visit_type":
        args[key] = _other(("checkup", "sick visit", "follow-up", "consultation"), value, number)
    elif key == "reason" and action["name"] == "cancel_appointment":
        args[key] = _other(CANCEL_REASONS, value, number)
    elif key == "reason":
        args[key] = _other(
            ("medically necessary", "referral on file", "billing error", "provider in network"),
            value,
            number,
        )
    elif key in ("appointment_id", "prescription_id", "claim_id"):
        table = {
            "appointment_id": "appointments",
            "prescription_id": "prescriptions",
            "claim_id": "claims",
        }[key]
        owner = TABLES[table][value]["patient_id"]
        listed = TABLES["patients"][owner][table]
        args[key] = _other(listed if len(listed) > 1 else list(TABLES[table])[:50], value, number)
    else:  # pragma: no cover - a new write argument needs a perturbation here
        raise AssertionError(f"no perturbation for {action['name']}.{key}")
    assert args[key] != value
    return {"name": action["name"], "arguments": args}


def test_changing_one_argument_of_one_write_loses_the_reward(env):
    checked = 0
    for number, task, position in kit.one_write_each(ALL_TASKS, WRITE_TOOLS):
        actions = list(actions_of(task))
        actions[position] = _perturb(actions[position], number)
        if number % 10 == 0:  # now and then the whole episode through the env
            turns = kit.turns_of(actions, task["reward_spec"]["outputs"])
            reward, info, _ = play(env, task, turns)
            assert reward == 0.0 and info["reward_info"]["db_match"] is False
        db, _ = env.replay(parse_reward_spec({"actions": actions}))
        gold = env.gold_hash(parse_reward_spec(task["reward_spec"]))
        assert db.hash() != gold, (task["extra_info"]["id"], actions[position])
        checked += 1
    assert checked == sum(map(has_write, ALL_TASKS)) > 0.6 * len(ALL_TASKS)


# --------------------------------------------------------------------------- (4) database


def test_the_database_has_the_required_size_and_shape():
    sizes = {name: len(table) for name, table in TABLES.items()}
    assert sizes == {
        "clinics": 8,
        "plans": 6,
        "providers": 80,
        "patients": 500,
        "appointments": 1500,
        "prescriptions": 1000,
        "claims": 600,
    }
    providers, patients = TABLES["providers"], TABLES["patients"]
    assert len({p["specialty"] for p in providers.values()}) == 13
    assert {p["clinic_id"] for p in providers.values()} == set(TABLES["clinics"])
    assert len({p["name"]["last_name"] for p in providers.values()}) == 80
    for key in ("email", "member_id"):
        assert len({p[key] for p in patients.values()}) == 500
    identities = {
        (p["name"]["first_name"], p["name"]["last_name"], p["dob"]) for p in patients.values()
    }
    assert len(identities) == 500
    for patient_id, patient in patients.items():
        assert re.fullmatch(r"P\d{6}", patient_id) and patient["patient_id"] == patient_id
        assert providers[patient["primary_provider_id"]]["specialty"] in PRIMARY_CARE
        assert patient["plan_id"] in TABLES["plans"]
        for table in ("appointments", "prescriptions", "claims"):
            assert all(TABLES[table][k]["patient_id"] == patient_id for k in patient[table])
    assert all(p["appointments"] for p in patients.values())
    booked = Counter()
    for appointment_id, appointment in TABLES["appointments"].items():
        assert re.fullmatch(r"A\d{7}", appointment_id)
        provider = providers[appointment["provider_id"]]
        assert appointment["start"][11:] in day_slots(provider["hours"])
        assert weekday(appointment["start"][:10]) in provider["working_days"]
        past = appointment["start"] < NOW
        allowed = {"completed", "cancelled", "no-show"} if past else {"scheduled", "cancelled"}
        assert appointment["status"] in allowed
        if appointment["status"] == "scheduled":
            booked[appointment["provider_id"], appointment["start"]] += 1
        if appointment["status"] == "completed":
            claim = appointment["claim_id"]
            assert claim is None or TABLES["claims"][claim]["appointment_id"] == appointment_id
    assert max(booked.values()) == 1, "a provider is double-booked"
    statuses = Counter(a["status"] for a in TABLES["appointments"].values())
    assert set(statuses) == {"scheduled", "completed", "cancelled", "no-show"}
    late = records("appointments", lambda a: a["status"] == "scheduled" and a["start"] < WINDOW_END)
    assert len(late) >= 25
    rxs = TABLES["prescriptions"].values()
    assert {r["controlled_schedule"] for r in rxs} == {None, "II", "III", "IV", "V"}
    assert {r["status"] for r in rxs} == {"active", "expired", "discontinued"}
    for rx in rxs:
        assert 0 <= rx["refills_remaining"] <= rx["refills_authorized"]
        assert rx["controlled_schedule"] != "II" or rx["refills_authorized"] == 0
        assert (rx["status"] == "expired") == (
            rx["expires_on"] < TODAY and rx["status"] != "discontinued"
        )
    assert sum(rules.refillable(r) and rules.refill_due(r) for r in rxs) >= 100
    assert sum(rules.refillable(r) and not rules.refill_due(r) for r in rxs) >= 100
    claims = Counter(c["status"] for c in TABLES["claims"].values())
    assert set(claims) == {"submitted", "in review", "paid", "denied", "appealed"}
    for plan in TABLES["plans"].values():
        assert set(plan["services"]) == set(TABLES["plans"]["CAS-HMO"]["services"])
    assert {p["referral_required"] for p in TABLES["plans"].values()} == {True, False}
    assert json.loads(json.dumps(TABLES)) == TABLES


def test_splits_cover_every_category_and_share_no_task():
    kit.check_splits(SPLITS, CATEGORY_WEIGHTS, {*WRITE_TOOLS, *kit.TAGS, "proxy", "emergency"})
    for row in ALL_TASKS:
        known = row["extra_info"]["user_scenario"]["known_info"]
        opening = row["prompt"][-1]["content"]
        # The first message never volunteers an identifier: the agent has to ask.
        assert "@" not in opening and not re.search(
            r"\b(P\d{6}|A\d{7}|RX\d{6}|CLM\d{7})\b", opening
        )
        identifiers = (
            "name",
            "date_of_birth",
            "member_id",
            "email",
            "patient_name",
            "patient_date_of_birth",
            "patient_member_id",
            "claim_number",
        )
        assert not any(known[k] in opening for k in identifiers if k in known)


def test_the_user_asks_for_the_pharmacy_and_the_copay_exactly_when_they_must_be_stated():
    """Some refills state the pharmacy and some bookings the copay, with the same request
    otherwise; the scripted user only says its opening, so the opening asks for each exactly
    where the gold states it."""
    pharmacies = {rx["pharmacy"].split(" (")[0] for rx in TABLES["prescriptions"].values()}
    asked = Counter()
    for row in ALL_TASKS:
        info, outputs = row["extra_info"], row["reward_spec"]["outputs"]
        opening = row["prompt"][-1]["content"]
        states_pharmacy = any(output in pharmacies for output in outputs)
        assert ("Which pharmacy" in opening) == states_pharmacy, (info["id"], opening, outputs)
        if any(a["name"] == "request_refill" for a in actions_of(row)):
            asked["pharmacy", states_pharmacy] += 1
        if info["category"] in ("book_primary", "book_specialist", "book_with_copay", "declined"):
            states_copay = any(a["name"] == "check_coverage" for a in actions_of(row))
            assert ("What will my copay be?" in opening) == states_copay, (info["id"], opening)
            asked["copay", states_copay] += 1
    assert min(asked.values()) > 20 and len(asked) == 4, asked  # every kind occurs


def test_every_gold_write_follows_the_policy():
    """What rules.py says a correct agent may do holds for every write of every gold."""
    counts = Counter()
    for task in ALL_TASKS:
        actions = actions_of(task)
        verified = [a for a in actions if a["name"].startswith("find_patient")]
        if has_write(task):
            assert verified, task["extra_info"]["id"]  # rule 1.1
        scenario = task["extra_info"]["user_scenario"]
        if "own_name" in scenario["known_info"]:  # rule 1.3
            patient_id = next(
                a["arguments"]["patient_id"] for a in actions if a["name"] == "get_patient_details"
            )
            caller = scenario["known_info"]["own_name"]
            if not rules.is_authorized(TABLES["patients"][patient_id], caller):
                assert not has_write(task) and task["reward_spec"]["outputs"] == ["rule 1.3"]
        for action in actions:
            args, name = action["arguments"], action["name"]
            if name in ("cancel_appointment", "reschedule_appointment"):
                assert rules.can_change(TABLES["appointments"][args["appointment_id"]])
            elif name == "book_appointment":
                patient = TABLES["patients"][args["patient_id"]]
                specialty = TABLES["providers"][args["provider_id"]]["specialty"]
                plan = TABLES["plans"][patient["plan_id"]]
                assert rules.may_book(patient, plan, specialty, args["start_time"][:10])
            elif name == "request_refill":
                prescription = TABLES["prescriptions"][args["prescription_id"]]
                assert rules.refillable(prescription) and rules.refill_due(prescription)
            elif name == "file_claim":
                assert rules.can_file_claim(TABLES["appointments"][args["appointment_id"]])
            elif name == "appeal_claim":
                assert rules.can_appeal(TABLES["claims"][args["claim_id"]])
            counts[name] += 1
    assert all(counts[name] >= 20 for name in WRITE_TOOLS), counts


# --------------------------------------------------------------------------- (6) tool rules


def test_identity_lookups_and_reads(tools):
    patient = next(iter(TABLES["patients"].values()))
    name, dob, patient_id = patient["name"], patient["dob"], patient["patient_id"]
    assert (
        tools(
            "find_patient_by_name_dob",
            first_name=name["first_name"].upper(),
            last_name=name["last_name"],
            date_of_birth=dob,
        )
        == patient_id
    )
    assert (
        tools(
            "find_patient_by_member_id", member_id=patient["member_id"].lower(), date_of_birth=dob
        )
        == patient_id
    )
    assert tools("find_patient_by_email", email=patient["email"], date_of_birth=dob) == patient_id
    assert json.loads(tools("get_patient_details", patient_id=patient_id)) == patient
    listed = json.loads(tools("list_patient_appointments", patient_id=patient_id))
    assert [a["appointment_id"] for a in listed] == patient["appointments"]
    appointment_id = patient["appointments"][0]
    assert (
        json.loads(tools("get_appointment_details", appointment_id=appointment_id))
        == (TABLES["appointments"][appointment_id])
    )
    assert len(json.loads(tools("list_clinics"))) == 8
    found = json.loads(tools("search_providers", specialty="dermatology"))
    assert len(found) == 6 and {p["specialty"] for p in found} == {"Dermatology"}
    at_clinic = json.loads(tools("search_providers", specialty="", clinic_id="CL104"))
    assert at_clinic and {p["clinic_id"] for p in at_clinic} == {"CL104"}
    pcp = patient["primary_provider_id"]
    assert json.loads(tools("get_provider_details", provider_id=pcp)) == TABLES["providers"][pcp]
    date, _ = free_slot(pcp)
    slots = json.loads(tools("get_provider_availability", provider_id=pcp, date=date))
    assert slots["available_slots"] and slots["weekday"] == weekday(date)
    coverage = json.loads(tools("check_coverage", patient_id=patient_id, service="lab work"))
    plan = TABLES["plans"][patient["plan_id"]]
    assert coverage["copay"] == plan["services"]["lab work"]["copay"]
    assert json.loads(tools("get_plan_details", plan_id=plan["plan_id"])) == plan
    claim = first("claims")
    assert json.loads(tools("get_claim_details", claim_id=claim["claim_id"])) == claim
    rx = first("prescriptions")
    assert (
        json.loads(tools("get_prescription_details", prescription_id=rx["prescription_id"]))[
            "medication"
        ]
        == rx["medication"]
    )
    assert tools("calculate", expression="(45 + 20) * 2") == "130"
    assert tools.db.changes() == {}


def test_booking_rules(tools):
    patient = first("patients", lambda p: p["dob"] < "2000-01-01")
    pcp_id = patient["primary_provider_id"]
    pcp = TABLES["providers"][pcp_id]
    date, slot = free_slot(pcp_id)
    common = {"patient_id": patient["patient_id"], "provider_id": pcp_id, "visit_type": "checkup"}
    off = next(d for d in ("2025-03-15", "2025-03-16") if weekday(d) not in pcp["working_days"])
    fails(tools, "get_provider_availability", "does not see patients", provider_id=pcp_id, date=off)
    fails(tools, "book_appointment", "does not see patients", start_time=f"{off} 10:00", **common)
    fails(tools, "book_appointment", "in the past", start_time="2025-03-03 10:00", **common)
    fails(tools, "book_appointment", "too far ahead", start_time="2025-06-02 10:00", **common)
    fails(tools, "book_appointment", "'YYYY-MM-DD HH:MM'", start_time="next Friday", **common)
    fails(tools, "book_appointment", "not a free slot", start_time=f"{date} 12:00", **common)
    booked = json.loads(tools("book_appointment", start_time=f"{date} {slot}", **common))
    assert booked["status"] == "scheduled" and booked["start"] == f"{date} {slot}"
    assert (
        booked["appointment_id"]
        in json.loads(tools("get_patient_details", patient_id=patient["patient_id"]))[
            "appointments"
        ]
    )
    free = json.loads(tools("get_provider_availability", provider_id=pcp_id, date=date))
    assert slot not in free["available_slots"], "a booked slot is still listed"
    fails(tools, "book_appointment", "not a free slot", start_time=f"{date} {slot}", **common)
    # The same patient cannot be in two places at once.
    other = next(
        p
        for p in TABLES["providers"].values()
        if p["provider_id"] != pcp_id
        and weekday(date) in p["working_days"]
        and slot in day_slots(p["hours"])
    )
    fails(
        tools,
        "book_appointment",
        "already has appointment",
        **{**common, "provider_id": other["provider_id"]},
        start_time=f"{date} {slot}",
    )
    # Cancelling frees the slot again, and a cancelled appointment cannot be changed.
    tools("cancel_appointment", appointment_id=booked["appointment_id"], reason="other")
    free = json.loads(tools("get_provider_availability", provider_id=pcp_id, date=date))
    assert slot in free["available_slots"]
    fails(
        tools,
        "reschedule_appointment",
        "only scheduled",
        appointment_id=booked["appointment_id"],
        new_start_time=f"{date} {slot}",
    )


def test_ids_of_new_records_are_deterministic(tools):
    patient = first("patients", lambda p: p["dob"] < "2000-01-01")
    pcp_id = patient["primary_provider_id"]
    date, slot = free_slot(pcp_id)
    arguments = {
        "patient_id": patient["patient_id"],
        "provider_id": pcp_id,
        "start_time": f"{date} {slot}",
        "visit_type": "follow-up",
    }
    first_id = json.loads(tools("book_appointment", **arguments))["appointment_id"]
    other = HealthcareTools(DOMAIN.new_database())
    assert json.loads(other.book_appointment(**arguments))["appointment_id"] == first_id
    assert re.fullmatch(r"A\d{7}", first_id)


def test_appointment_changes_need_a_scheduled_appointment(tools):
    completed = first("appointments", lambda a: a["status"] == "completed")
    scheduled = first("appointments", lambda a: rules.can_change(a))
    fails(
        tools,
        "cancel_appointment",
        "only scheduled",
        appointment_id=completed["appointment_id"],
        reason="other",
    )
    fails(
        tools,
        "reschedule_appointment",
        "already starts at",
        appointment_id=scheduled["appointment_id"],
        new_start_time=scheduled["start"],
    )
    date, slot = free_slot(scheduled["provider_id"])
    moved = json.loads(
        tools(
            "reschedule_appointment",
            appointment_id=scheduled["appointment_id"],
            new_start_time=f"{date}T{slot}",
        )
    )
    assert moved["start"] == f"{date} {slot}" and moved["rescheduled_from"] == scheduled["start"]
    assert TABLES["appointments"][scheduled["appointment_id"]]["start"] == scheduled["start"]


def _refused_to_a_stranger(tools, name, owner, **arguments):
    """The call, made for another patient than ``owner``, fails: 'is not one of' theirs."""
    stranger = next(p for p in TABLES["patients"] if p != owner)
    fails(tools, name, "is not one of", patient_id=stranger, **arguments)


def test_refill_rules(tools):
    due = first("prescriptions", lambda r: rules.refillable(r) and rules.refill_due(r))
    owner = due["patient_id"]
    _refused_to_a_stranger(tools, "request_refill", owner, prescription_id=due["prescription_id"])
    for where, message in (
        (lambda r: r["status"] == "discontinued", "only active"),
        (lambda r: r["status"] == "expired", "only active"),
        (lambda r: r["status"] == "active" and r["refills_remaining"] == 0, "no refills"),
        (lambda r: r["refill_request"] is not None, "still pending"),
    ):
        rx = first("prescriptions", where)
        fails(
            tools,
            "request_refill",
            message,
            patient_id=rx["patient_id"],
            prescription_id=rx["prescription_id"],
        )
    result = json.loads(
        tools("request_refill", patient_id=owner, prescription_id=due["prescription_id"])
    )
    assert result["refills_remaining"] == due["refills_remaining"] - 1
    assert result["refill_request"] == {"requested_on": TODAY, "status": "pending"}
    fails(
        tools,
        "request_refill",
        "still pending",
        patient_id=owner,
        prescription_id=due["prescription_id"],
    )


def test_refill_timing_follows_the_policy_arithmetic():
    rx = {"days_supply": 30, "last_fill_date": "2025-02-20", "controlled_schedule": None}
    assert rules.earliest_refill_date(rx) == "2025-03-15"  # 23 days
    assert rules.earliest_refill_date({**rx, "days_supply": 90}) == "2025-04-29"  # 68 days
    assert rules.earliest_refill_date({**rx, "controlled_schedule": "IV"}) == "2025-03-22"


def test_claim_rules(tools):
    visit = first("appointments", rules.can_file_claim)
    patient_id = visit["patient_id"]
    _refused_to_a_stranger(tools, "file_claim", patient_id, appointment_id=visit["appointment_id"])
    for where, message in (
        (lambda a: a["status"] == "no-show", "only be filed for completed"),
        (lambda a: a.get("claim_id") is not None, "already has claim"),
    ):
        other = first("appointments", where)
        ids = {"patient_id": other["patient_id"], "appointment_id": other["appointment_id"]}
        fails(tools, "file_claim", message, **ids)
    claim = json.loads(
        tools("file_claim", patient_id=patient_id, appointment_id=visit["appointment_id"])
    )
    assert claim["status"] == "submitted" and claim["billed_amount"] == visit["billed_amount"]
    shown = json.loads(tools("get_appointment_details", appointment_id=visit["appointment_id"]))
    assert shown["claim_id"] == claim["claim_id"]
    details = json.loads(tools("get_claim_details", claim_id=claim["claim_id"]))
    assert {key: details[key] for key in claim} == claim and details["patient_id"] == patient_id
    paid = first("claims", lambda c: c["status"] == "paid")
    fails(tools, "appeal_claim", "only denied", claim_id=paid["claim_id"], reason="billing error")
    appealed = first("claims", lambda c: c["status"] == "appealed")
    fails(
        tools,
        "appeal_claim",
        "already appealed",
        claim_id=appealed["claim_id"],
        reason="billing error",
    )
    denied = first("claims", rules.can_appeal)
    result = json.loads(
        tools("appeal_claim", claim_id=denied["claim_id"], reason="medically necessary")
    )
    assert result["appeal"] == {"reason": "medically necessary", "filed_on": TODAY}


def test_coverage_answers(tools):
    plan_of = {p: TABLES["plans"][r["plan_id"]] for p, r in TABLES["patients"].items()}
    patient_id = next(p for p, plan in plan_of.items() if plan["plan_id"] == "CAS-HMO")

    def dermatologist(in_network):
        return next(
            p["provider_id"]
            for p in TABLES["providers"].values()
            if p["specialty"] == "Dermatology" and ("Cascade" in p["networks"]) == in_network
        )

    def coverage(provider_id):
        arguments = {"patient_id": patient_id, "provider_id": provider_id}
        return json.loads(tools("check_coverage", service="specialist visit", **arguments))

    derm = dermatologist(True)
    result = coverage(derm)
    assert result["in_network"] and result["copay"] == 45 and result["referral_required"]
    fails(tools, "check_coverage", "does not give",
          patient_id=patient_id, service="lab work", provider_id=derm)  # fmt: skip
    result = coverage(dermatologist(False))
    assert result["in_network"] is False and result["covered"] is False


def test_read_tools_never_write_and_lookups_follow_edits(tools):
    patient = first("patients", lambda p: p["dob"] < "2000-01-01")
    for name, arguments in (
        ("get_patient_details", {"patient_id": patient["patient_id"]}),
        ("list_patient_appointments", {"patient_id": patient["patient_id"]}),
        ("list_prescriptions", {"patient_id": patient["patient_id"]}),
        ("list_clinics", {}),
        ("think", {"thought": "nothing to change"}),
    ):
        assert not tools(name, **arguments).startswith("Error")
    assert tools.db.changes() == {}
    # An edited record is shown as edited (the cached text of the base record is not reused).
    scheduled = first("appointments", rules.can_change)
    tools("get_appointment_details", appointment_id=scheduled["appointment_id"])
    tools("cancel_appointment", appointment_id=scheduled["appointment_id"], reason="other")
    shown = json.loads(tools("get_appointment_details", appointment_id=scheduled["appointment_id"]))
    assert shown["status"] == "cancelled"
    listed = json.loads(tools("list_patient_appointments", patient_id=scheduled["patient_id"]))
    assert {a["appointment_id"]: a["status"] for a in listed}[scheduled["appointment_id"]] == (
        "cancelled"
    )


def test_check_env_passes():
    environment = TauHealthcareEnv(tasks=SPLITS["test"][:5])
    check_env(environment, skip_render_check=True)
    observation, _ = environment.reset(seed=1)
    assert observation[0]["content"] == DOMAIN.policy
    environment.close()


def test_the_registered_id_runs_the_shipped_tasks_once_registered():
    import gymnasium as gym

    import tool_envs

    gym.register_envs(tool_envs)
    made = gym.make("tool_envs/TauHealthcare-v0")
    observation, _ = made.reset(seed=1)
    assert observation[0]["content"] == DOMAIN.policy
    made.close()


def _median_step(env, task, turn, fresh):
    # A write is never an episode's first call: the caller was verified before.
    verified = [call("think", thought="verified")]
    return kit.median_step(env, task, [turn], fresh=fresh, prelude=verified)


def test_tool_calls_through_step_are_fast(env):
    """Median wall time of one tool call through env.step (parse, run, format)."""
    task = SPLITS["test"][0]
    patient = first("patients")
    scheduled = first("appointments", rules.can_change)
    reads = {
        "get_patient_details": call("get_patient_details", patient_id=patient["patient_id"]),
        "list_patient_appointments": call(
            "list_patient_appointments", patient_id=patient["patient_id"]
        ),
        "get_provider_availability": call(
            "get_provider_availability",
            provider_id=scheduled["provider_id"],
            date=scheduled["start"][:10],
        ),
    }
    for name, turn in reads.items():
        median = _median_step(env, task, turn, fresh=False)
        print(f"median env.step with one {name} call: {median * 1e6:.0f} us")
        assert median < 2e-3
    write = call("cancel_appointment", appointment_id=scheduled["appointment_id"], reason="other")
    median = _median_step(env, task, write, fresh=True)
    print(f"median env.step with one cancel_appointment call: {median * 1e6:.0f} us")
    assert median < 2e-3


# --------------------------------------------------------------------------- (7) conversations


def test_a_hand_written_conversation_with_the_scripted_user(env):
    appointment = first("appointments", lambda a: rules.can_change(a) and adult(a))
    patient = TABLES["patients"][appointment["patient_id"]]
    name = f"{patient['name']['first_name']} {patient['name']['last_name']}"
    cancel = {"appointment_id": appointment["appointment_id"], "reason": "schedule conflict"}
    task = task_row(
        actions=[{"name": "cancel_appointment", "arguments": cancel}],
        outputs=[appointment["start"][:10]],
        known_info={
            "name": name,
            "date_of_birth": patient["dob"],
            "current_appointment": f"the one on {appointment['start']}",
            "cancellation_reason": "schedule conflict",
        },
        opening="Hi, I need to cancel an appointment.",
    )
    env.reset(options={"task": task})
    observation, *_ = env.step("Sure. Could you tell me your full name and date of birth?")
    answer = observation[0]["content"]
    assert name in answer and patient["dob"] in answer
    first_name, last_name = name.split(" ")
    observation, *_ = env.step(
        call(
            "find_patient_by_name_dob",
            first_name=first_name,
            last_name=last_name,
            date_of_birth=patient["dob"],
        )
    )
    assert observation[0]["content"] == patient["patient_id"]
    env.step(call("list_patient_appointments", patient_id=patient["patient_id"]))
    observation, *_ = env.step("Thanks. Which appointment is it, and what is the reason?")
    assert appointment["start"] in observation[0]["content"]
    assert "schedule conflict" in observation[0]["content"]
    env.step(call("get_appointment_details", appointment_id=appointment["appointment_id"]))
    observation, *_ = env.step(
        f"I will cancel your appointment on {appointment['start'][:10]} at "
        f"{appointment['start'][11:]} (reason: schedule conflict). Shall I proceed (yes/no)?"
    )
    assert observation[0]["content"].startswith("Yes")
    observation, reward, terminated, _, _ = env.step(call("cancel_appointment", **cancel))
    assert not terminated and json.loads(observation[0]["content"])["status"] == "cancelled"
    _, reward, terminated, _, info = env.step(
        f"Done: the appointment on {appointment['start'][:10]} is cancelled."
    )
    assert terminated and reward == 1.0, info["reward_info"]


def test_an_agent_that_breaks_the_policy_gets_zero():
    """Cancelling inside the 24-hour window: the write succeeds, the task is lost."""
    task = next(t for t in SPLITS["train"] if t["extra_info"]["category"] == "refuse_late_change")
    environment = TauHealthcareEnv(tasks=[task])
    appointment_id = next(
        a["arguments"]["appointment_id"]
        for a in actions_of(task)
        if a["name"] == "get_appointment_details"
    )
    turns = [call(a["name"], **a["arguments"]) for a in actions_of(task)]
    turns.append(call("cancel_appointment", appointment_id=appointment_id, reason="other"))
    turns.append("Cancelled. " + " ".join(task["reward_spec"]["outputs"]))
    reward, info, results = play(environment, task, turns)
    assert not results[-1].startswith("Error") and reward == 0.0
    assert info["reward_info"]["db_match"] is False
    # Refusing, with the rule and the clinic's number, passes the same task.
    reward, _, _ = play(environment, task, environment.gold_turns(task))
    assert reward == 1.0
    environment.close()


def test_a_disclosure_without_the_rule_fails():
    """(A declined write: test_tau_domains.py.)"""
    task = next(t for t in SPLITS["train"] if t["extra_info"]["category"] == "refuse_unauthorized")
    environment = TauHealthcareEnv(tasks=[task])
    turns = [call(a["name"], **a["arguments"]) for a in actions_of(task)]
    reward, info, _ = play(environment, task, [*turns, "Their next visit is on Friday."])
    assert reward == 0.0 and info["reward_info"]["outputs"] == {"rule 1.3": False}
    environment.close()


def test_an_llm_user_episode_against_a_local_openai_compatible_server():
    appointment = first("appointments", lambda a: rules.can_change(a) and adult(a))
    patient = TABLES["patients"][appointment["patient_id"]]
    cancel = {"appointment_id": appointment["appointment_id"], "reason": "feeling better"}
    task = task_row(
        actions=[{"name": "cancel_appointment", "arguments": cancel}],
        outputs=[],
        known_info={"email": patient["email"], "date_of_birth": patient["dob"]},
        opening="Hello, I'd like to cancel an appointment, I'm feeling better.",
    )
    with customer_server() as server:
        environment = TauHealthcareEnv(
            tasks=[task],
            user="llm",
            user_kwargs={"base_url": server.base_url, "api_key": "local"},
        )
        environment.reset(options={"task": task})
        assert server.requests == [], "no LLM call at construction or reset"
        observation, *_ = environment.step("Happy to help. What is your email address?")
        assert observation[0]["content"] == f"Sure, it is {patient['email']}"
        environment.step(
            call("find_patient_by_email", email=patient["email"], date_of_birth=patient["dob"])
        )
        environment.step(call("list_patient_appointments", patient_id=patient["patient_id"]))
        observation, *_ = environment.step(
            f"I will cancel your appointment on {appointment['start']}. Do you confirm?"
        )
        assert observation[0]["content"] == "Yes, please."
        environment.step(call("cancel_appointment", **cancel))
        _, reward, terminated, _, info = environment.step("Done, it is cancelled.")
        usage = info["reward_info"]["user_usage"]
        assert terminated and reward == 1.0, info["reward_info"]
        assert usage["calls"] == 3 and usage["prompt_tokens"] == 3 * PROMPT_TOKENS
        assert usage["completion_tokens"] == 3 * COMPLETION_TOKENS
        system = server.requests[0]["messages"][0]
        assert system["role"] == "system" and patient["email"] in system["content"]
        environment.close()


def test_database_overlay_is_per_episode(env):
    appointment = first("appointments", rules.can_change)
    key = appointment["appointment_id"]
    cancel = call("cancel_appointment", appointment_id=key, reason="other")
    read = call("get_appointment_details", appointment_id=key)
    kit.check_overlay(env, SPLITS["test"][0], cancel, read, "scheduled", ("appointments", key))


def test_money_outputs_match_both_ways_of_writing_an_amount():
    assert money(45.0) == "45" and money(42.7) == "42.7" and money(12.35) == "12.35"

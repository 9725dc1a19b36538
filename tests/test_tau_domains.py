"""The checks every tau domain passes, run over all of them.

Each domain's own file (test_tau_<domain>.py) tests its rules, tools and task categories; what
holds for any domain built on the kit (gold replays are clean and solve their task, generation is
seeded, a do-nothing agent passes almost nothing, the committed dataset is its builder's output)
is checked here once, parametrised by domain.
"""

from __future__ import annotations

import importlib
from functools import cache

import gymnasium as gym
import pytest
from dataset_helpers import check_committed_dataset
from gymnasium.utils.env_checker import check_env
from pydantic import TypeAdapter
from tau_domain_checks import (
    actions_of,
    check_do_nothing_rate,
    check_generation_is_seeded,
    check_gold_replay_keeps_base,
    play,
    tool_runner,
)

import tool_envs
from tool_envs.tau.env import TauEnv
from tool_envs.tau.task import parse_reward_spec
from tool_envs.tau.tools import write_tool_names

ALL = ("retail", "airline", "telecom", "doordash", "healthcare")
GENERATED = ("retail", "telecom", "doordash", "healthcare")
"""Domains whose generator the generic seeded-generation and replay checks cover (airline's
own file checks its generator and replays with its own bounds)."""
SEEDED_SIZES = {
    "retail": {"a": 40, "b": 20},
    "doordash": {"a": 40, "b": 20},
    "healthcare": {"a": 40, "b": 20},
    # Telecom's smallest categories need a larger split to be drawn at all.
    "telecom": {"a": 60, "b": 30},
}

BAD_CALLS = {
    "retail": [
        ("find_user_id_by_email", {"email": "nobody@example.com"}, "user not found"),
        ("find_user_id_by_name_zip", {"first_name": "A", "last_name": "B", "zip": "1"},
         "not found"),
        ("get_user_details", {"user_id": "nobody_1234"}, "not found"),
        ("get_order_details", {"order_id": "W1234567"}, "order ids look like"),
        ("get_product_details", {"product_id": "123"}, "not found"),
        ("cancel_pending_order", {"order_id": "#W0000000", "reason": "ordered by mistake"},
         "not found"),
        ("modify_user_address", {"user_id": "x", "address1": "1 A St", "address2": "",
                                 "city": "B", "state": "C", "country": "USA", "zip": "1"},
         "not found"),
        ("get_order_details", {"order": "#W1234567"}, "unexpected argument"),
        ("calculate", {"expression": "__import__('os')"}, "only numbers"),
    ],
    "doordash": [
        ("find_customer_by_email", {"email": "nobody@example.com"}, "no customer"),
        ("find_customer_by_phone", {"phone": "999-555-0000"}, "no customer"),
        ("get_customer_details", {"customer_id": "cus_00000"}, "not found"),
        ("get_order_details", {"order_id": "123456"}, "order ids look like"),
        ("get_restaurant_details", {"restaurant_id": "rst_0"}, "not found"),
        ("get_menu", {"restaurant_id": "rst_0"}, "not found"),
        ("track_delivery", {"order_id": "DD-000000"}, "not found"),
        ("cancel_order", {"order_id": "DD-000000", "reason": "no_longer_needed"}, "not found"),
        ("cancel_order", {"order_id": "DD-000000", "reason": "changed my mind"}, "invalid"),
        ("issue_credit", {"order_id": "DD-000000", "amount": 5, "reason": "late_delivery"},
         "not found"),
        ("get_order_details", {"order": "DD-123456"}, "unexpected argument"),
        ("modify_order_items", {"order_id": "DD-000000", "changes": "L1"}, "invalid"),
        ("calculate", {"expression": "__import__('os')"}, "only numbers"),
    ],
    "healthcare": [
        ("find_patient_by_name_dob", {"first_name": "No", "last_name": "Body",
                                      "date_of_birth": "1990-01-01"}, "no patient matches"),
        ("find_patient_by_name_dob", {"first_name": "No", "last_name": "Body",
                                      "date_of_birth": "01/02/1990"}, "YYYY-MM-DD"),
        ("find_patient_by_member_id", {"member_id": "XX00000000", "date_of_birth": "1990-01-01"},
         "no patient matches"),
        ("find_patient_by_email", {"email": "nobody@example.net", "date_of_birth": "1990-01-01"},
         "no patient matches"),
        ("get_patient_details", {"patient_id": "nobody"}, "look like 'P123456'"),
        ("list_patient_appointments", {"patient_id": "P000000"}, "not found"),
        ("list_prescriptions", {"patient_id": "P000000"}, "not found"),
        ("get_appointment_details", {"appointment_id": "A0000000"}, "not found"),
        ("get_prescription_details", {"prescription_id": "RX000000"}, "not found"),
        ("get_claim_details", {"claim_id": "CLM0000000"}, "not found"),
        ("get_plan_details", {"plan_id": "GOLD"}, "not found"),
        ("get_provider_details", {"provider_id": "PRV0000"}, "not found"),
        ("search_providers", {}, "give a specialty"),
        ("search_providers", {"specialty": "Astrology"}, "unknown specialty"),
        ("search_providers", {"clinic_id": "CL999"}, "not found"),
        ("get_provider_availability", {"provider_id": "PRV0000", "date": "2025-03-12"},
         "not found"),
        ("check_coverage", {"patient_id": "P000000", "service": "lab work"}, "not found"),
        ("check_coverage", {"patient_id": "P000000", "service": "massage"}, "invalid arguments"),
        ("book_appointment", {"patient_id": "P000000", "provider_id": "PRV0000",
                              "start_time": "2025-03-12 10:00", "visit_type": "checkup"},
         "not found"),
        ("reschedule_appointment", {"appointment_id": "A0000000",
                                    "new_start_time": "2025-03-12 10:00"}, "not found"),
        ("cancel_appointment", {"appointment_id": "A0000000", "reason": "other"}, "not found"),
        ("cancel_appointment", {"appointment_id": "A0000000", "reason": "bored"},
         "invalid arguments"),
        ("request_refill", {"patient_id": "P000000", "prescription_id": "RX000000"},
         "not found"),
        ("file_claim", {"patient_id": "P000000", "appointment_id": "A0000000"}, "not found"),
        ("appeal_claim", {"claim_id": "CLM0000000", "reason": "billing error"}, "not found"),
        ("get_claim_details", {"claim": "CLM0000000"}, "unexpected argument"),
        ("calculate", {"expression": "__import__('os')"}, "only numbers"),
    ],
    "telecom": [
        ("find_customer_by_phone", {"phone_number": "555-000-0000"}, "no line"),
        ("find_customer_by_phone", {"phone_number": "12345"}, "10-digit"),
        ("find_customer_by_name_dob", {"full_name": "No One", "date_of_birth": "1990-01-01"},
         "not found"),
        ("get_customer_details", {"customer_id": "123456"}, "customer ids look like"),
        ("get_line_details", {"line_id": "123"}, "line ids look like"),
        ("get_plan_details", {"plan_id": "gold"}, "list_plans"),
        ("get_bill_details", {"bill_id": "1234567"}, "bill ids look like"),
        ("suspend_line", {"line_id": "L000000", "reason": "temporary hold"}, "not found"),
        ("add_data_top_up", {"line_id": "L000000", "gb": "2"}, "invalid arguments"),
        ("check_status_bar", {"phone_number": "555-000-0000"}, "no phone"),
        ("set_network_mode", {"phone_number": "555-000-0000", "mode": "auto"}, "no phone"),
        ("toggle_airplane_mode", {"phone_number": "555-000-0000"}, "invalid arguments"),
        ("calculate", {"expression": "__import__('os')"}, "only numbers"),
    ],
}  # fmt: skip
"""Per domain: (tool, arguments, what its error message says) for unknown ids and bad arguments."""


@cache
def package(name):
    return importlib.import_module(f"tool_envs.tau.domains.{name}")


@cache
def splits(name):
    return package(name).DOMAIN.load_splits()


def all_tasks(name):
    return [row for rows in splits(name).values() for row in rows]


def generate_tables(name):
    return importlib.import_module(f"tool_envs.tau.domains.{name}.data").generate_tables


def has_write(name):
    domain = package(name).DOMAIN
    writes = set(write_tool_names(domain.tools, *filter(None, [domain.user_tools])))
    return lambda task: any(a["name"] in writes for a in actions_of(task))


def env_class(name):
    found = vars(package(name)).values()
    return next(
        v for v in found if isinstance(v, type) and issubclass(v, TauEnv) and v is not TauEnv
    )


@pytest.fixture(scope="module")
def envs():
    """One env per domain over its test split, made when a test first needs it."""
    made = {}

    def env(name):
        if name not in made:
            made[name] = env_class(name)(tasks=splits(name)["test"])
        return made[name]

    yield env
    for environment in made.values():
        environment.close()


@pytest.mark.parametrize("name", ("retail", "doordash", "telecom"))
def test_check_env_passes_and_the_registered_id_works(name):
    """(Airline and healthcare check their envs in their own files.)"""
    environment = env_class(name)(tasks=splits(name)["test"][:5])
    check_env(environment, skip_render_check=True)
    environment.close()
    gym.register_envs(tool_envs)
    made = gym.make(package(name).DOMAIN.env_id)
    observation, _ = made.reset(seed=1)
    assert observation[0]["content"] == package(name).DOMAIN.policy
    made.close()


@pytest.mark.parametrize(
    ("domain", "name", "arguments", "message"),
    [(domain, *bad) for domain, calls in BAD_CALLS.items() for bad in calls],
)
def test_bad_ids_and_arguments_are_error_messages(domain, name, arguments, message):
    result = tool_runner(package(domain).DOMAIN)(name, **arguments)
    assert result.startswith("Error: ") and message in result, result


@pytest.mark.parametrize("name", GENERATED)
def test_a_declined_confirmation_keeps_the_database(name):
    """A declined task writes nothing and has an amount to state; asked to confirm, its user
    says no."""
    task = next(t for t in splits(name)["train"] if t["extra_info"]["category"] == "declined")
    assert not has_write(name)(task) and task["reward_spec"]["outputs"]
    environment = env_class(name)(tasks=[task])
    environment.reset(options={"task": task})
    assert environment.step("Shall I go ahead and proceed?")[0][0]["content"].startswith("No")
    environment.close()


@pytest.mark.parametrize("name", ALL)
def test_committed_dataset_matches_its_builder_and_loads(tmp_path, name):
    check_committed_dataset(tmp_path, f"tau_{name}", splits(name)["test"])


@pytest.mark.parametrize("name", GENERATED)
def test_generation_is_deterministic_fast_and_seeded(name):
    tables = package(name).DOMAIN.load_tables()
    generate_splits = importlib.import_module(f"tool_envs.tau.domains.{name}.tasks")
    check_generation_is_seeded(
        generate_tables(name), generate_splits.generate_splits, tables, SEEDED_SIZES[name]
    )


@pytest.mark.parametrize("name", GENERATED)
def test_replaying_every_gold_leaves_the_base_tables_untouched(envs, name):
    domain = package(name).DOMAIN
    check_gold_replay_keeps_base(
        envs(name), domain, generate_tables(name), all_tasks(name), has_write(name)
    )


@pytest.mark.parametrize("name", GENERATED)
def test_a_do_nothing_agent_passes_at_most_five_percent_of_each_split(envs, name):
    check_do_nothing_rate(envs(name), splits(name), has_write(name))


@pytest.mark.parametrize("name", ("retail", "doordash", "healthcare"))
def test_every_task_is_solved_by_its_gold_turns_without_tool_errors(envs, name):
    """Telecom's own file plays its tasks with the phone side checked too."""
    env = envs(name)
    for task in all_tasks(name):
        reward, info, results = play(env, task, env.gold_turns(task))
        assert reward == 1.0, (task["extra_info"]["id"], info["reward_info"])
        assert len(results) == len(actions_of(task))
        errors = [r for r in results if r.startswith("Error")]
        assert not errors, (task["extra_info"]["id"], errors)


@pytest.mark.parametrize("name", ALL)
def test_every_record_matches_its_typed_record(envs, name):
    """``records.py`` describes every table: each base record, and each record a gold replay
    writes, has exactly the declared fields, of the declared types and closed value sets."""
    records = importlib.import_module(f"tool_envs.tau.domains.{name}.records").RECORDS
    tables = package(name).DOMAIN.load_tables()
    assert set(records) == set(tables)
    adapters = {table: TypeAdapter(kind) for table, kind in records.items()}

    def check(table, record):
        # Validation ignores unknown keys; dumping back shows them (and any coercion) as a diff.
        adapter = adapters[table]
        assert adapter.dump_python(adapter.validate_python(record)) == record, (table, record)

    for table, rows in tables.items():
        for record in rows.values():
            check(table, record)
    env = envs(name)
    for task in all_tasks(name):
        db, _ = env.replay(parse_reward_spec(task["reward_spec"]))
        for table, changed in db.changes().items():
            for record in changed.values():
                if record is not None:
                    check(table, record)

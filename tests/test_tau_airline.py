"""The airline domain: database, tools, policy rules in the tasks, gold replay, baselines, dataset.

Every generated task (train and test) is played through the env with the scripted user, so a
task set that a correct agent cannot solve fails here, not in a training run.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from pathlib import Path

import pytest
import tau_domain_checks as kit
from gymnasium.utils.env_checker import check_env

from tool_envs.core.parsers.base import ToolCall
from tool_envs.tau.db import record_hash
from tool_envs.tau.domains.airline import DOMAIN, POLICY, TauAirlineEnv
from tool_envs.tau.domains.airline.data import generate_tables, load_tables
from tool_envs.tau.domains.airline.tasks import default_splits, generate_splits
from tool_envs.tau.task import parse_reward_spec
from tool_envs.tau.users.base import STOP

REPO = Path(__file__).resolve().parents[1]
WRITE_TOOLS = {
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_passengers",
    "update_reservation_baggages",
    "send_certificate",
}
NO_OP_MESSAGE = "Is there anything else I can help you with?"


@pytest.fixture(scope="module")
def splits():
    return default_splits()


env = kit.env_fixture(TauAirlineEnv)


def _all_tasks(splits):
    return [row for rows in splits.values() for row in rows]


def _writes(row):
    return [a for a in row["reward_spec"]["actions"] if a["name"] in WRITE_TOOLS]


def _turn(name, **arguments):
    """An assistant turn with one Hermes-format tool call."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _call(env, name, **arguments):
    """One tool call on the env's current database, as the model would make it."""
    return env._tools.call(ToolCall(name=name, arguments=arguments)).content


# ----------------------------------------------------------------------------- database


def test_database_sizes_integrity_and_determinism():
    started = time.perf_counter()
    tables = generate_tables(0)
    elapsed = time.perf_counter() - started
    # ~0.5 s; the bound only catches a pathological slowdown, as in tau_domain_checks (a 2 s
    # bound leaves a 2-core machine shared with vLLM servers too little room).
    assert elapsed < 10.0, f"generating the database took {elapsed:.2f} s"
    assert len(tables["users"]) >= 500
    assert len(tables["flights"]) >= 300
    assert len(tables["reservations"]) >= 1000
    assert tables == load_tables() == generate_tables(0)
    assert generate_tables(1) != tables
    json.dumps(tables)  # JSON-serialisable

    airports = {f["origin"] for f in tables["flights"].values()}
    assert 15 <= len(airports) <= 25
    statuses = Counter(
        day["status"] for f in tables["flights"].values() for day in f["dates"].values()
    )
    assert {"available", "landed", "cancelled", "delayed", "flying", "on time"} <= set(statuses)
    for user_id, user in tables["users"].items():
        assert user["user_id"] == user_id
        assert user["membership"] in ("regular", "silver", "gold")
        for rid in user["reservations"]:
            assert tables["reservations"][rid]["user_id"] == user_id
    for rid, res in tables["reservations"].items():
        assert len(rid) == 6 and rid.isalnum() and rid.upper() == rid
        user = tables["users"][res["user_id"]]
        assert rid in user["reservations"]
        for payment in res["payment_history"]:
            assert payment["payment_id"] in user["payment_methods"]
        for segment in res["flights"]:
            assert segment["date"] in tables["flights"][segment["flight_number"]]["dates"]
        assert 0 <= res["nonfree_baggages"] <= res["total_baggages"]


def test_replaying_every_gold_action_never_mutates_the_base_tables(splits, env):
    base = DOMAIN.base()
    for row in _all_tasks(splits):
        env.replay(parse_reward_spec(row["reward_spec"]))
    recomputed = sum(
        record_hash(name, key, record)
        for name, records in base.tables.items()
        for key, record in records.items()
    ) % (1 << 256)
    assert recomputed == base.hash_sum
    assert base.tables == generate_tables(0)


# ----------------------------------------------------------------------------- task set


def test_task_set_covers_every_write_tool_refusals_transfers_and_outputs(splits):
    assert len(splits["train"]) >= 500 and len(splits["test"]) >= 100
    for split, rows in splits.items():
        written = {a["name"] for row in rows for a in _writes(row)}
        assert written == WRITE_TOOLS, f"{split} lacks {WRITE_TOOLS - written}"
        categories = Counter(row["extra_info"]["category"] for row in rows)
        assert categories["cancel_refused"] and categories["basic_economy_change_refused"]
        assert categories["transfer"] and categories["transfer_after_write"]
        refusals_with_outputs = [
            row for row in rows if not _writes(row) and row["reward_spec"]["outputs"]
        ]
        assert len(refusals_with_outputs) >= 0.05 * len(rows)
        transfers = [
            row
            for row in rows
            if row["reward_spec"]["actions"][-1]["name"] == "transfer_to_human_agents"
        ]
        assert transfers and all(not row["reward_spec"]["outputs"] for row in transfers)
        assert sum(bool(row["reward_spec"]["outputs"]) for row in rows) >= 0.6 * len(rows)
        assert max(len(_writes(row)) for row in rows) >= 2  # multi-step tasks
        for row in rows:
            assert row["env_id"] == "tool_envs/TauAirline-v0"
            assert row["prompt"][0]["content"] == POLICY
            scenario = row["extra_info"]["user_scenario"]
            assert scenario["known_info"]["user_id"] not in row["prompt"][1]["content"]
            for rid in [a["arguments"].get("reservation_id") for a in _writes(row)]:
                assert rid is None or rid not in row["prompt"][1]["content"]

    def key(row):
        spec = copy.deepcopy(row["reward_spec"])
        for action in spec["actions"]:
            action["arguments"].pop("summary", None)
        return json.dumps([row["extra_info"]["category"], spec], sort_keys=True)

    assert not {key(r) for r in splits["train"]} & {key(r) for r in splits["test"]}


def test_the_user_asks_what_added_bags_cost_exactly_when_there_is_a_fee(splits):
    """Bags within the free allowance cost nothing and the gold states no fee; paid ones must be
    stated. The scripted user only says its opening, so the opening has to ask for the fee
    exactly when there is one: otherwise half the tasks punish what the other half require."""
    asked = Counter()
    for row in _all_tasks(splits):
        if row["extra_info"]["category"] != "add_bags":
            continue
        opening = row["prompt"][-1]["content"]
        states_fee = bool(row["reward_spec"]["outputs"])
        assert ("How much will the extra luggage cost?" in opening) == states_fee, (
            row["extra_info"]["id"],
            opening,
            row["reward_spec"]["outputs"],
        )
        asked[states_fee] += 1
    assert min(asked[True], asked[False]) > 20, asked  # both kinds occur


def test_generation_is_deterministic_for_other_sizes_and_seeds():
    small = generate_splits({"train": 40, "test": 20}, seed=3)
    assert small == generate_splits({"train": 40, "test": 20}, seed=3)
    assert len(small["train"]) == 40 and len(small["test"]) == 20
    assert small != generate_splits({"train": 40, "test": 20}, seed=4)


def test_every_gold_episode_earns_full_reward_without_tool_errors(splits, env):
    failures = []
    for row in _all_tasks(splits):
        env.reset(options={"task": row})
        turns = env.gold_turns(row)
        reward, terminated, info = 0.0, False, {}
        for turn in turns:
            assert not terminated, "the episode ended before the gold turns did"
            observation, reward, terminated, _, info = env.step(turn)
            errors = [m["content"] for m in observation if m["content"].startswith("Error")]
            if errors:
                failures.append((row["extra_info"]["id"], errors))
        if not terminated or reward != 1.0:
            failures.append((row["extra_info"]["id"], info.get("reward_info")))
        if not any(a["name"] == "transfer_to_human_agents" for a in row["reward_spec"]["actions"]):
            assert STOP in env.messages[-1]["content"]
    assert not failures, failures[:5]


def _perturbed(action, rng_index, reservations):
    """A copy of a write action with ONE argument changed to another plausible value."""
    action = copy.deepcopy(action)
    args = action["arguments"]
    name = action["name"]
    if name in ("book_reservation", "update_reservation_baggages"):
        args["total_baggages"] += 1
    elif name == "cancel_reservation":
        others = [r for r in reservations if r != args["reservation_id"]]
        args["reservation_id"] = others[rng_index % len(others)]
    elif name == "update_reservation_flights":
        cabins = ["basic_economy", "economy", "business"]
        cabins.remove(args["cabin"])
        args["cabin"] = cabins[rng_index % 2]
    elif name == "update_reservation_passengers":
        dob = args["passengers"][0]["dob"]
        args["passengers"][0]["dob"] = "1999-01-01" if dob != "1999-01-01" else "1998-01-01"
    elif name == "send_certificate":
        args["amount"] += 50
    else:  # pragma: no cover - a new write tool needs a perturbation here
        raise AssertionError(f"no perturbation for {name}")
    return action


def test_perturbing_one_argument_of_a_write_gives_reward_zero(splits, env):
    reservations = sorted(load_tables()["reservations"])
    checked = 0
    for number, row in enumerate(_all_tasks(splits)):
        spec = parse_reward_spec(row["reward_spec"])
        gold = env.gold_hash(spec)
        actions = row["reward_spec"]["actions"]
        for index, action in enumerate(actions):
            if action["name"] not in WRITE_TOOLS:
                continue
            changed = [*actions[:index], _perturbed(action, number, reservations)]
            changed += actions[index + 1 :]
            db, _ = env.replay(parse_reward_spec({"actions": changed, "outputs": []}))
            assert db.hash() != gold, (row["extra_info"]["id"], action["name"])
            checked += 1
            if number % 50 == 0:  # and now and then, the whole episode through the env
                perturbed_row = copy.deepcopy(row)
                perturbed_row["reward_spec"]["actions"] = changed
                env.reset(options={"task": row})
                for turn in env.gold_turns(perturbed_row):
                    *_, reward, terminated, _, _ = env.step(turn)
                    if terminated:
                        break
                assert terminated and reward == 0.0
    assert checked >= 600


def test_do_nothing_agent_passes_almost_no_task(splits, env):
    rates = {}
    for split, rows in splits.items():
        passed = 0
        for row in rows:
            env.reset(options={"task": row})
            terminated, reward = False, 0.0
            for _ in range(3):  # the scripted user may answer a question before it stops
                _, reward, terminated, _, _ = env.step(NO_OP_MESSAGE)
                if terminated:
                    break
            passed += terminated and reward == 1.0
        rates[split] = passed / len(rows)
    print(f"do-nothing pass rate: {rates}")
    assert all(rate <= 0.05 for rate in rates.values()), rates


# ----------------------------------------------------------------------------- tools


def _first(rows, category):
    return next(r for r in rows if r["extra_info"]["category"] == category)


def test_read_tools_do_not_write_and_search_finds_bookable_flights(splits, env):
    row = _first(splits["test"], "change_flight")
    env.reset(options={"task": row})
    known = row["extra_info"]["user_scenario"]["known_info"]
    user = json.loads(_call(env, "get_user_details", user_id=known["user_id"]))
    assert known["reservation_id"] in user["reservations"]
    reservation = json.loads(
        _call(env, "get_reservation_details", reservation_id=known["reservation_id"])
    )
    assert all("status" in segment for segment in reservation["flights"])
    airports = json.loads(_call(env, "list_all_airports"))
    assert len(airports) == 20 and {"iata", "city"} <= set(airports[0])
    offers = json.loads(_call(env, "search_direct_flight", origin="JFK", destination="ATL",
                              date="2024-05-20"))  # fmt: skip
    assert all(o["origin"] == "JFK" and o["destination"] == "ATL" for o in offers)
    pairs = json.loads(_call(env, "search_onestop_flight", origin="SEA", destination="MIA",
                             date="2024-05-20"))  # fmt: skip
    for first, second in pairs:
        assert first["destination"] == second["origin"]
        assert second["scheduled_departure_time_est"] > first["scheduled_arrival_time_est"]
    assert _call(env, "calculate", expression="2 * (3 + 4)") == "14"
    assert env._db.changes() == {}


def test_tool_error_paths_say_error(splits, env):
    tables = load_tables()
    env.reset(options={"task": _first(splits["test"], "book_one_way")})
    book = copy.deepcopy(_first(splits["test"], "book_one_way")["reward_spec"]["actions"][-1])
    args = book["arguments"]
    user = tables["users"][args["user_id"]]
    cancelled = next(r for r in tables["reservations"].values() if r.get("status") == "cancelled")
    active = next(
        r
        for r in tables["reservations"].values()
        if r.get("status") != "cancelled" and r["cabin"] != "business"
    )
    landed = next(
        (n, d)
        for n, f in tables["flights"].items()
        for d, day in f["dates"].items()
        if day["status"] == "landed"
    )

    def broken(**changes):
        return _call(env, "book_reservation", **{**args, **changes})

    cases = {
        "unknown user": _call(env, "get_user_details", user_id="nobody_0000"),
        "unknown reservation": _call(env, "get_reservation_details", reservation_id="ZZZZZZ"),
        "bad airport": _call(env, "search_direct_flight", origin="XXX", destination="JFK",
                             date="2024-05-20"),
        "bad date": _call(env, "search_onestop_flight", origin="JFK", destination="SEA",
                          date="May 20"),
        "unknown payment": broken(payment_methods=[{"payment_id": "credit_card_0", "amount": 1}]),
        "wrong total": broken(
            payment_methods=[{**p, "amount": p["amount"] + 1} for p in args["payment_methods"]]
        ),
        "flight not bookable": broken(flights=[{"flight_number": landed[0], "date": landed[1]}]),
        "too many passengers": broken(passengers=[args["passengers"][0]] * 6),
        "bad passenger": broken(passengers=[{"first_name": "A", "last_name": "B"}]),
        "bags": broken(total_baggages=1, nonfree_baggages=2),
        "schema": _call(env, "book_reservation", user_id=args["user_id"]),
        "cancel twice": _call(env, "cancel_reservation",
                              reservation_id=cancelled["reservation_id"]),
        "same flights": _call(
            env, "update_reservation_flights", reservation_id=active["reservation_id"],
            cabin=active["cabin"], payment_id=next(iter(
                tables["users"][active["user_id"]]["payment_methods"])),
            flights=[{"flight_number": s["flight_number"], "date": s["date"]}
                     for s in active["flights"]],
        ),
        "passenger count": _call(
            env, "update_reservation_passengers", reservation_id=active["reservation_id"],
            passengers=active["passengers"] * 2,
        ),
        "remove bags": _call(
            env, "update_reservation_baggages", reservation_id=active["reservation_id"],
            total_baggages=-1, nonfree_baggages=0, payment_id="credit_card_0",
        ),
        "certificate amount": _call(env, "send_certificate", user_id=args["user_id"], amount=0),
        "certificate user": _call(env, "send_certificate", user_id="nobody_0000", amount=50),
        "update cancelled": _call(
            env, "update_reservation_baggages", reservation_id=cancelled["reservation_id"],
            total_baggages=9, nonfree_baggages=9, payment_id="credit_card_0",
        ),
    }  # fmt: skip
    gift = next((m for m in user["payment_methods"].values() if m["source"] == "gift_card"), None)
    if gift is not None:
        cases["gift card balance"] = broken(
            payment_methods=[{"payment_id": gift["id"], "amount": gift["amount"] + 1}]
        )
    for name, content in cases.items():
        assert content.startswith("Error"), (name, content)
    assert env._db.changes() == {}, "a failed write changed the database"


def test_certificates_pay_only_for_new_bookings(env):
    tables = load_tables()
    res = next(
        r
        for r in tables["reservations"].values()
        if r.get("status") != "cancelled"
        and any(
            m["source"] == "certificate"
            for m in tables["users"][r["user_id"]]["payment_methods"].values()
        )
    )
    methods = tables["users"][res["user_id"]]["payment_methods"].values()
    certificate = next(m["id"] for m in methods if m["source"] == "certificate")
    env.reset(options={"task": default_splits()["test"][0]})
    bags = _call(
        env,
        "update_reservation_baggages",
        reservation_id=res["reservation_id"],
        total_baggages=res["total_baggages"] + 9,
        nonfree_baggages=res["nonfree_baggages"] + 9,
        payment_id=certificate,
    )
    other_cabin = "business" if res["cabin"] != "business" else "economy"
    cabin = _call(
        env,
        "update_reservation_flights",
        reservation_id=res["reservation_id"],
        cabin=other_cabin,
        flights=[{"flight_number": s["flight_number"], "date": s["date"]} for s in res["flights"]],
        payment_id=certificate,
    )
    for content in (bags, cabin):
        assert content.startswith("Error:"), content
    assert "certificate" in bags
    assert env._db.changes() == {}


def test_book_then_cancel_refunds_gift_cards_and_restores_seats(splits, env):
    row = next(
        r
        for r in splits["train"]
        if r["extra_info"]["category"].startswith("book")
        and any(
            p["payment_id"].startswith("gift_card")
            for p in r["reward_spec"]["actions"][-1]["arguments"]["payment_methods"]
        )
    )
    book = row["reward_spec"]["actions"][-1]["arguments"]
    env.reset(options={"task": row})
    before = json.loads(_call(env, "get_user_details", user_id=book["user_id"]))
    reservation = json.loads(_call(env, "book_reservation", **book))
    gift = book["payment_methods"][0]["payment_id"]
    after = json.loads(_call(env, "get_user_details", user_id=book["user_id"]))
    paid = book["payment_methods"][0]["amount"]
    balance = before["payment_methods"][gift]["amount"]
    assert after["payment_methods"][gift]["amount"] == balance - paid
    assert reservation["reservation_id"] in after["reservations"]
    # the same booking again gets another id (deterministic, never a clash)
    again = _call(env, "book_reservation", **book)
    if not again.startswith("Error"):  # the balance may not cover a second booking
        assert json.loads(again)["reservation_id"] != reservation["reservation_id"]
    cancelled = json.loads(
        _call(env, "cancel_reservation", reservation_id=reservation["reservation_id"])
    )
    assert cancelled["status"] == "cancelled"
    assert cancelled["payment_history"][-1]["amount"] < 0


def test_check_env_passes():
    environment = TauAirlineEnv()
    try:
        check_env(environment, skip_render_check=True)
    finally:
        environment.close()


# ----------------------------------------------------------------------------- episodes


def test_hand_written_episode_with_the_scripted_user(splits, env):
    row = _first(splits["test"], "cancel")
    known = row["extra_info"]["user_scenario"]["known_info"]
    refund = row["reward_spec"]["outputs"][0]
    rid = known["reservation_id"]
    env.reset(options={"task": row})

    observation, *_ = env.step("I can help with that. Could you please provide your user id?")
    assert known["user_id"] in observation[0]["content"]
    observation, *_ = env.step(_turn("get_user_details", user_id=known["user_id"]))
    assert known["reservation_id"] in observation[0]["content"]

    observation, *_ = env.step(
        "Thank you. Which reservation id would you like to cancel, and what is the reason for "
        "the cancellation?"
    )
    assert known["reservation_id"] in observation[0]["content"]
    assert known["cancel_reason"] in observation[0]["content"]
    observation, *_ = env.step(_turn("get_reservation_details", reservation_id=rid))
    paid = sum(p["amount"] for p in json.loads(observation[0]["content"])["payment_history"])
    assert str(paid) == refund

    observation, reward, terminated, *_ = env.step(
        f"This booking can be cancelled with a full refund of {refund} dollars to the original "
        "payment methods. Shall I proceed? (yes/no)"
    )
    assert observation[0]["content"].startswith("Yes") and not terminated
    observation, *_ = env.step(_turn("cancel_reservation", reservation_id=rid))
    assert json.loads(observation[0]["content"])["status"] == "cancelled"
    observation, reward, terminated, _, info = env.step(
        f"Done: the reservation is cancelled and {refund} dollars are on their way back to you."
    )
    assert terminated and STOP in observation[0]["content"]
    assert reward == 1.0, info["reward_info"]


def test_hand_written_booking_episode_asks_then_confirms(splits, env):
    row = _first(splits["test"], "book_one_way")
    known = row["extra_info"]["user_scenario"]["known_info"]
    actions = row["reward_spec"]["actions"]
    total = row["reward_spec"]["outputs"][0]
    env.reset(options={"task": row})

    observation, *_ = env.step("Happy to help. Could you please provide your user id?")
    assert known["user_id"] in observation[0]["content"]
    env.step(_turn(actions[0]["name"], **actions[0]["arguments"]))
    observation, *_ = env.step(
        "Which cabin would you like, who is traveling, how many bags will you check, and "
        "would you like travel insurance?"
    )
    answer = observation[0]["content"]
    for field in ("preferred_cabin", "who_is_flying", "bags_to_check", "wants_insurance"):
        assert known[field] in answer, (field, answer)
    env.step(_turn(actions[1]["name"], **actions[1]["arguments"]))
    observation, *_ = env.step("Which flight do you prefer, and how would you like to pay?")
    assert known["flight_choice"] in observation[0]["content"]
    assert known["payment_choice"] in observation[0]["content"]
    observation, *_ = env.step(f"The total is {total} dollars. Shall I proceed? (yes/no)")
    assert observation[0]["content"].startswith("Yes")
    env.step(_turn(actions[2]["name"], **actions[2]["arguments"]))
    *_, reward, terminated, _, info = env.step(f"Booked! You paid {total} dollars in total.")
    assert terminated and reward == 1.0, info["reward_info"]


def test_an_agent_that_breaks_the_policy_gets_zero(splits, env):
    row = _first(splits["test"], "cancel_refused")
    rid = row["extra_info"]["user_scenario"]["known_info"]["reservation_id"]
    env.reset(options={"task": row})
    env.step(_turn("cancel_reservation", reservation_id=rid))
    *_, reward, terminated, _, info = env.step(
        f"Cancelled. You paid {row['reward_spec']['outputs'][0]} dollars."
    )
    assert terminated and reward == 0.0
    assert info["reward_info"]["db_match"] is False


# ----------------------------------------------------------------------------- dataset

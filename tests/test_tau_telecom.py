"""TauTelecom-v0: the database, the phone's physics, the tools' rules, and dual-control tasks that
are solvable, strict and not free.

Every kit.shipped task is played through the env by its gold turns with the scripted user (who does
the phone steps when asked): reward 1. A one-argument change to one write, the agent's or the
customer's, loses the reward; the checks every domain shares are in test_tau_domains.py.
"""

import copy
import json
import statistics
import time

import gymnasium as gym
import tau_domain_checks as kit
from tau_domain_checks import actions_of, call, fails
from tau_helpers import PROMPT_TOKENS, customer_server

import tool_envs
from tool_envs.core.tools import Toolset
from tool_envs.tau.domains.telecom import DOMAIN, ENV_ID, PhoneTools, TauTelecomEnv
from tool_envs.tau.domains.telecom import phone as physics
from tool_envs.tau.domains.telecom.data import DEFAULT_APN, MAX_TOP_UP_GB
from tool_envs.tau.domains.telecom.tasks import (
    AGENT_WRITE_TOOLS,
    CATEGORY_WEIGHTS,
    USER_WRITE_TOOLS,
    WRITE_TOOLS,
    money,
)

SPLITS, ALL_TASKS, TABLES = kit.shipped(DOMAIN)
NO_OP_MESSAGE = "Is there anything else I can help you with?"

gym.register_envs(tool_envs)
if ENV_ID not in gym.registry:  # until the registry lists the domain
    gym.register(ENV_ID, entry_point=TauTelecomEnv, max_episode_steps=30)

has_write = kit.writes_in(WRITE_TOOLS)
env, tools = kit.fixtures(lambda: TauTelecomEnv(tasks=SPLITS["test"]), DOMAIN)


def play(env, task, turns):
    """Play assistant turns; return (reward, info, tool results, user replies) at the end."""
    env.reset(options={"task": task})
    results, replies = [], []
    for number, turn in enumerate(turns, 1):
        observation, reward, terminated, truncated, info = env.step(turn)
        results += [m["content"] for m in observation if m["role"] == "tool"]
        replies += [m["content"] for m in observation if m["role"] == "user"]
        if terminated or truncated:
            assert number == len(turns), "the episode ended before the last turn"
            return reward, info, results, replies
    raise AssertionError("the episode did not end")


def line_where(where):
    return next(line for line in TABLES["lines"].values() if where(line))


def faults_of(line):
    device = TABLES["devices"][line["phone_number"]]
    return physics.faults(device, line, TABLES["plans"][line["plan_id"]])


def overdue(customer_id):
    customer = TABLES["customers"][customer_id]
    return [b for b in customer["bill_ids"] if TABLES["bills"][b]["status"] == "overdue"]


def clean_line(where=lambda line: True):
    """An active line of a customer without overdue bills, whose phone works fully, at home."""
    return line_where(
        lambda line: (
            line["status"] == "active"
            and not overdue(line["customer_id"])
            and not faults_of(line)
            and TABLES["devices"][line["phone_number"]]["location"] == "home"
            and where(line)
        )
    )


# --------------------------------------------------------------------------- (1) gold solves


def test_every_task_is_solved_by_its_gold_turns_without_tool_errors(env):
    for task in ALL_TASKS:
        turns = env.gold_turns(task)
        assert turns is not None, task["extra_info"]["id"]
        reward, info, results, replies = play(env, task, turns)
        task_id = task["extra_info"]["id"]
        assert reward == 1.0, (task_id, info["reward_info"])
        agent = [a for a in actions_of(task) if a.get("requestor", "assistant") == "assistant"]
        user = [a for a in actions_of(task) if a.get("requestor") == "user"]
        assert len(results) == len(agent)
        assert not [r for r in results if r.startswith("Error")], task_id
        device_calls = info["reward_info"]["user_device_calls"]
        assert [{"name": a["name"], "arguments": a["arguments"]} for a in user] == [
            {"name": c["name"], "arguments": c["arguments"]} for c in device_calls
        ], task_id
        assert all(c["error"] is None for c in device_calls), task_id
        assert not any("My phone shows: Error" in reply for reply in replies), task_id


# --------------------------------------------------------------------------- (2) strict reward


def _other_line(line_id):
    """Another line of the same customer if there is one, else another customer's line."""
    line = TABLES["lines"][line_id]
    same = [e["line_id"] for e in TABLES["customers"][line["customer_id"]]["lines"]
            if e["line_id"] != line_id]  # fmt: skip
    return same[0] if same else next(k for k in TABLES["lines"] if k != line_id)


OWNERS = {line["phone_number"]: line["customer_id"] for line in TABLES["lines"].values()}


def _perturb(action, number):
    """The same write with one argument changed to another plausible value (in place)."""
    args = action["arguments"]
    key = sorted(args)[number % len(args)]
    value = args[key]
    if key == "line_id":
        args[key] = _other_line(value)
    elif key == "phone_number":  # a phone of another customer (their payment would fail)
        args[key] = next(p for p, owner in OWNERS.items() if owner != OWNERS[value])
    elif key == "customer_id":
        args[key] = next(c for c in TABLES["customers"] if c != value)
    elif key == "bill_id":
        bills = TABLES["customers"][TABLES["bills"][value]["customer_id"]]["bill_ids"]
        args[key] = next(b for b in bills if b != value)
    elif key == "reason":
        args[key] = "temporary hold" if value == "lost or stolen" else "lost or stolen"
    elif key == "gb":
        args[key] = value + 1
    elif key == "plan_id":
        args[key] = next(p for p in ("plus-20", "basic-5") if p != value)
    elif key == "enabled":
        args[key] = not value
    elif key == "mode":
        args[key] = "4g_only"
    elif key == "apn_name":
        args[key] = "internet"
    else:
        raise AssertionError(f"no perturbation for {key}")
    assert args[key] != value
    return key


def test_changing_one_argument_of_one_write_loses_the_reward(env):
    """Agent writes are changed in the agent's turn; phone steps in what the user does."""
    checked = {"assistant": 0, "user": 0}
    for number, task, position in kit.one_write_each(ALL_TASKS, WRITE_TOOLS):
        turns = env.gold_turns(task)
        changed = copy.deepcopy(task)
        action = changed["reward_spec"]["actions"][position]
        original = copy.deepcopy(action)
        _perturb(action, number)
        side = action.get("requestor", "assistant")
        if side == "user":
            entries = changed["extra_info"]["user_scenario"]["user_actions"]
            entry = next(e for e in entries if e["name"] == original["name"]
                         and e["arguments"] == original["arguments"])  # fmt: skip
            entry["arguments"] = action["arguments"]
            changed["reward_spec"] = task["reward_spec"]  # the gold stays as it was
        else:  # the gold conversation also asks and confirms: find the call's own turn
            at = turns.index(call(original["name"], **original["arguments"]))
            turns[at] = call(action["name"], **action["arguments"])
            changed = task
        reward, info, _, _ = play(env, changed, turns)
        assert reward == 0.0, (task["extra_info"]["id"], original, action)
        assert info["reward_info"]["db_match"] is False
        checked[side] += 1
    print(f"perturbed writes: {checked}")
    assert checked["assistant"] > 200 and checked["user"] > 150
    assert sum(checked.values()) > 0.8 * len(ALL_TASKS)


# --------------------------------------------------------------------------- (4) database


def test_the_database_has_the_required_size_and_shape():
    customers, lines, bills = TABLES["customers"], TABLES["lines"], TABLES["bills"]
    plans, devices = TABLES["plans"], TABLES["devices"]
    sizes = {name: len(table) for name, table in TABLES.items()}
    print(f"telecom tables: {sizes}")
    assert sizes == {"plans": 12, "customers": 500, "lines": 800, "bills": 2000, "devices": 800}
    assert {p["available"] for p in plans.values()} == {True, False}
    assert len({(c["full_name"], c["date_of_birth"]) for c in customers.values()}) == 500
    for customer_id, customer in customers.items():
        assert customer["customer_id"] == customer_id and customer["lines"]
        assert customer["default_payment_method_id"] in customer["payment_methods"]
        for entry in customer["lines"]:
            assert lines[entry["line_id"]]["phone_number"] == entry["phone_number"]
        statuses = [bills[b]["status"] for b in customer["bill_ids"]]
        assert statuses[-1] == "pending" and statuses.count("overdue") <= 1
        assert (customer["account_status"] == "past_due") == ("overdue" in statuses)
    for line_id, line in lines.items():
        assert line["line_id"] == line_id and line["plan_id"] in plans
        assert devices[line["phone_number"]]["device_id"] == line["device_id"]
        assert line["status"] in ("active", "suspended")
        assert (line["suspension_reason"] is None) == (line["status"] == "active")
        if line["suspension_reason"] == "overdue bill":
            assert overdue(line["customer_id"])
        assert line["data_top_up_gb"] <= MAX_TOP_UP_GB
    for bill in bills.values():
        assert bill["status"] in ("paid", "overdue", "pending")
        assert bill["amount"] == round(sum(item["amount"] for item in bill["items"]), 2)
    assert len({line["phone_number"] for line in lines.values()}) == 800 == len(devices)
    # Plenty of phones start broken, in every way the troubleshooting guide covers.
    seen = {fault for line in lines.values() for fault in faults_of(line)}
    assert seen == set(physics.FAULTS)
    assert sum(bool(faults_of(line)) for line in lines.values()) > 300
    assert json.loads(json.dumps(TABLES)) == TABLES


def test_splits_cover_every_category_and_tool_and_share_no_task():
    keys = {}
    for split, rows in SPLITS.items():
        assert len(rows) >= {"train": 500, "test": 100}[split]
        tags = {tag for row in rows for tag in row["extra_info"]["tags"]}
        assert set(AGENT_WRITE_TOOLS) | set(USER_WRITE_TOOLS) <= tags
        assert {"troubleshooting", "dual_control", "bill", "refusal", "transfer", "multi_step",
                "outputs", "info", "declined"} <= tags  # fmt: skip
        assert {row["extra_info"]["category"] for row in rows} == set(CATEGORY_WEIGHTS)
        keys[split] = {json.dumps(row["reward_spec"], sort_keys=True) for row in rows}
        assert len(keys[split]) == len(rows)
        troubleshooting = [r for r in rows if "troubleshooting" in r["extra_info"]["tags"]]
        phone_only = [
            r for r in troubleshooting if not set(AGENT_WRITE_TOOLS) & set(r["extra_info"]["tags"])
        ]
        assert len(troubleshooting) > 0.4 * len(rows) and len(phone_only) > 0.25 * len(rows)
    assert not keys["train"] & keys["test"]
    for row in ALL_TASKS:
        scenario = row["extra_info"]["user_scenario"]
        opening = row["prompt"][-1]["content"]
        # The first message never volunteers an identifier: the agent has to ask.
        assert not any(value in opening for value in scenario["known_info"].values())
        # Every phone step of the gold is something the scripted user can be asked to do.
        user = [a for a in actions_of(row) if a.get("requestor") == "user"]
        assert [(a["name"], a["arguments"]) for a in user] == [
            (e["name"], e["arguments"]) for e in scenario.get("user_actions", [])
        ]


# --------------------------------------------------------------------------- (6) tool rules


def test_lookups_and_reads(tools):
    line = next(iter(TABLES["lines"].values()))
    customer = TABLES["customers"][line["customer_id"]]
    digits = line["phone_number"].replace("-", "")
    for written in (line["phone_number"], digits, f"+1 ({digits[:3]}) {digits[3:6]} {digits[6:]}"):
        assert tools("find_customer_by_phone", phone_number=written) == customer["customer_id"]
    found = tools("find_customer_by_name_dob", full_name=customer["full_name"].upper(),
                  date_of_birth=customer["date_of_birth"])  # fmt: skip
    assert found == customer["customer_id"]
    assert json.loads(tools("get_customer_details", customer_id=found)) == customer
    view = json.loads(tools("get_line_details", line_id=line["line_id"]))
    plan = TABLES["plans"][line["plan_id"]]
    assert view["data_limit_gb"] == plan["data_gb"] + line["data_top_up_gb"]
    assert view["plan_name"] == plan["name"] and view["status"] == line["status"]
    assert len(json.loads(tools("list_plans"))) == 12
    assert json.loads(tools("get_plan_details", plan_id="plus-20"))["data_gb"] == 20
    bills = json.loads(tools("list_bills", customer_id=found))
    assert [b["bill_id"] for b in bills] == customer["bill_ids"]
    bill_id = customer["bill_ids"][0]
    assert json.loads(tools("get_bill_details", bill_id=bill_id)) == TABLES["bills"][bill_id]
    assert tools("calculate", expression="3 * 3.45") == "10.35"
    number = line["phone_number"]
    for read in ("check_status_bar", "run_speed_test", "send_test_mms", "check_apn_settings",
                 "check_payment_requests"):  # fmt: skip
        assert not tools(read, phone_number=number).startswith("Error")
    assert tools.db.changes() == {}


def test_line_and_roaming_rules(tools):
    line = clean_line(lambda line: not line["roaming_enabled"])
    line_id = line["line_id"]
    fails(tools, "resume_line", "already active", line_id=line_id)
    fails(tools, "disable_roaming", "already disabled", line_id=line_id)
    fails(tools, "suspend_line", "'lost or stolen' or 'temporary hold'",
          line_id=line_id, reason="moving abroad")  # fmt: skip
    assert json.loads(tools("enable_roaming", line_id=line_id))["roaming_enabled"] is True
    fails(tools, "enable_roaming", "already enabled", line_id=line_id)
    suspended = json.loads(tools("suspend_line", line_id=line_id, reason="temporary hold"))
    assert suspended["status"] == "suspended"
    fails(tools, "suspend_line", "already suspended", line_id=line_id, reason="lost or stolen")
    fails(tools, "add_data_top_up", "suspended line cannot", line_id=line_id, gb=1)
    fails(tools, "change_plan", "suspended line cannot", line_id=line_id, plan_id="max-50")
    assert "Emergency calls only" in tools("check_status_bar", phone_number=line["phone_number"])
    assert json.loads(tools("resume_line", line_id=line_id))["status"] == "active"
    assert json.loads(tools("disable_roaming", line_id=line_id))["roaming_enabled"] is False
    assert tools.db.hash() == DOMAIN.new_database().hash(), "round trips restore the state"


def test_an_overdue_bill_blocks_service_changes_until_paid_on_the_phone(tools):
    line = line_where(lambda line: line["suspension_reason"] == "overdue bill")
    customer_id, number = line["customer_id"], line["phone_number"]
    bill_id = overdue(customer_id)[0]
    active = line_where(
        lambda other: (
            other["customer_id"] != customer_id
            and other["status"] == "active"
            and overdue(other["customer_id"])
        )
    )
    for name, arguments in (
        ("resume_line", {"line_id": line["line_id"]}),
        ("enable_roaming", {"line_id": active["line_id"]}),
        ("add_data_top_up", {"line_id": active["line_id"], "gb": 1}),
        ("change_plan", {"line_id": active["line_id"], "plan_id": "ultra-100"}),
    ):
        if name == "enable_roaming" and active["roaming_enabled"]:
            continue
        fails(tools, name, "overdue bill", **arguments)
    paid = next(b for b in TABLES["customers"][customer_id]["bill_ids"]
                if TABLES["bills"][b]["status"] == "paid")  # fmt: skip
    fails(tools, "send_payment_request", "already paid", customer_id=customer_id, bill_id=paid)
    other = next(c for c in TABLES["customers"] if c != customer_id)
    fails(tools, "send_payment_request", "does not belong",
          customer_id=other, bill_id=bill_id)  # fmt: skip
    fails(tools, "make_payment", "no payment request", phone_number=number, bill_id=bill_id)
    assert tools("check_payment_requests", phone_number=number).endswith(
        "no payment requests waiting."
    )
    sent = json.loads(tools("send_payment_request", customer_id=customer_id, bill_id=bill_id))
    assert sent["payment_request"] == "sent"
    pending = TABLES["customers"][customer_id]["bill_ids"][-1]
    fails(tools, "send_payment_request", "still open", customer_id=customer_id, bill_id=pending)
    assert bill_id in tools("check_payment_requests", phone_number=number)
    stranger = line_where(lambda other: other["customer_id"] != customer_id)["phone_number"]
    fails(tools, "make_payment", "no payment request", phone_number=stranger, bill_id=bill_id)
    amount = TABLES["bills"][bill_id]["amount"]
    assert tools("make_payment", phone_number=number, bill_id=bill_id) == (
        f"Carrier app: bill {bill_id} paid ({amount:.2f}). Thank you!"
    )
    bill = json.loads(tools("get_bill_details", bill_id=bill_id))
    assert bill["status"] == "paid" and bill["payment_request"] == "completed"
    profile = json.loads(tools("get_customer_details", customer_id=customer_id))
    assert profile["account_status"] == "active"
    assert TABLES["customers"][customer_id]["account_status"] == "past_due", "base changed"
    fails(tools, "make_payment", "no payment request", phone_number=number, bill_id=bill_id)
    assert json.loads(tools("resume_line", line_id=line["line_id"]))["status"] == "active"


def test_top_ups_are_capped_priced_and_billed(tools):
    line = clean_line(lambda line: line["data_top_up_gb"] == 0)
    line_id, plan = line["line_id"], TABLES["plans"][line["plan_id"]]
    bill_id = TABLES["customers"][line["customer_id"]]["bill_ids"][-1]
    amount = TABLES["bills"][bill_id]["amount"]
    fails(tools, "add_data_top_up", "at least 1", line_id=line_id, gb=0)
    fails(tools, "add_data_top_up", f"at most {MAX_TOP_UP_GB} GB more",
          line_id=line_id, gb=MAX_TOP_UP_GB + 1)  # fmt: skip
    result = json.loads(tools("add_data_top_up", line_id=line_id, gb=3))
    price = round(3 * plan["top_up_price_per_gb"], 2)
    assert result["charged"] == price and result["data_top_up_gb"] == 3
    assert result["data_limit_gb"] == plan["data_gb"] + 3
    bill = json.loads(tools("get_bill_details", bill_id=bill_id))
    assert bill["amount"] == round(amount + price, 2) and bill["items"][-1]["amount"] == price
    fails(tools, "add_data_top_up", "at most 7 GB more", line_id=line_id, gb=8)
    assert not tools("add_data_top_up", line_id=line_id, gb=7).startswith("Error")
    fails(tools, "add_data_top_up", "at most 0 GB more", line_id=line_id, gb=1)
    # Once the current bill is paid, the cycle takes no more charges.
    other = clean_line(lambda other: other["customer_id"] != line["customer_id"]
                       and other["data_top_up_gb"] == 0)  # fmt: skip
    current = TABLES["customers"][other["customer_id"]]["bill_ids"][-1]
    tools("send_payment_request", customer_id=other["customer_id"], bill_id=current)
    tools("make_payment", phone_number=other["phone_number"], bill_id=current)
    fails(tools, "add_data_top_up", "already paid", line_id=other["line_id"], gb=1)


def test_plan_changes(tools):
    line = clean_line()
    line_id, current = line["line_id"], line["plan_id"]
    fails(tools, "change_plan", "already on", line_id=line_id, plan_id=current)
    fails(tools, "change_plan", "legacy plan", line_id=line_id, plan_id="legacy-talk-1")
    fails(tools, "change_plan", "not found", line_id=line_id, plan_id="platinum")
    target = "ultra-100" if current != "ultra-100" else "basic-5"
    view = json.loads(tools("change_plan", line_id=line_id, plan_id=target))
    assert view["plan_id"] == target and view["plan_name"] == TABLES["plans"][target]["name"]


def _state(tools, number):
    return tools("check_status_bar", phone_number=number)


def test_the_phone_shows_what_its_settings_and_line_imply(tools):
    line = clean_line(
        lambda line: TABLES["devices"][line["phone_number"]]["network_mode"] == "auto"
    )
    number = line["phone_number"]
    assert _state(tools, number).endswith("internet: connected.")
    assert "good" in tools("run_speed_test", phone_number=number)
    assert tools("send_test_mms", phone_number=number) == "MMS sent successfully."
    # Airplane mode cuts everything; turning it off again restores the phone.
    on = tools("toggle_airplane_mode", phone_number=number, enabled=True)
    assert on.startswith("Airplane mode turned on.") and "airplane mode icon, no signal" in on
    assert tools("run_speed_test", phone_number=number).startswith("Speed test failed")
    assert "already on" in tools("toggle_airplane_mode", phone_number=number, enabled=True)
    tools("toggle_airplane_mode", phone_number=number, enabled=False)
    # Mobile data off.
    assert "internet: off" in tools("toggle_mobile_data", phone_number=number, enabled=False)
    tools("toggle_mobile_data", phone_number=number, enabled=True)
    # A wrong APN: no internet until the name is right again (typed or reset).
    assert "internet: no connection." in tools("set_apn", phone_number=number, apn_name="web")
    fails(tools, "set_apn", "cannot be empty", phone_number=number, apn_name="  ")
    assert "'web'" in tools("check_apn_settings", phone_number=number)
    fixed = tools("set_apn", phone_number=number, apn_name=DEFAULT_APN["name"])
    assert fixed.endswith("internet: connected.")
    # Slow network modes.
    tools("set_network_mode", phone_number=number, mode="2g_only")
    assert "slow" in tools("run_speed_test", phone_number=number)
    fails(tools, "set_network_mode", "mode must be one of", phone_number=number, mode="6g")
    tools("set_network_mode", phone_number=number, mode="auto")
    # The SIM: reseating needs a restart before the phone uses it again.
    reseated = tools("reseat_sim", phone_number=number)
    assert "restarted" in reseated and "'No service'" in reseated
    assert tools("reboot_device", phone_number=number).endswith("internet: connected.")
    assert tools.db.get("devices", number) == TABLES["devices"][number]


def test_broken_phones_are_fixed_by_the_steps_of_the_guide(tools):
    def fix(fault, steps):
        line = line_where(lambda line: tuple(faults_of(line)) == (fault,))
        number = line["phone_number"]
        before = _state(tools, number)
        for name, arguments in steps:
            last = tools(name, phone_number=number, **arguments)
        assert not physics.faults(tools.db.get("devices", number), line,
                                  TABLES["plans"][line["plan_id"]]), (fault, last)  # fmt: skip
        return before, last

    before, after = fix("sim_loose", [("reseat_sim", {}), ("reboot_device", {})])
    assert "'No SIM card'" in before and after.endswith("internet: connected.")
    before, _ = fix("needs_reboot", [("reboot_device", {})])
    assert "'No service'" in before
    fix("mmsc", [("reset_apn_settings", {})])
    fix("network_mode", [("set_network_mode", {"mode": "auto"})])
    # Abroad: the account needs roaming for service, the phone needs data roaming for data.
    line = line_where(lambda line: tuple(faults_of(line)) == ("roaming_account", "roaming_device")
                      and not overdue(line["customer_id"]))  # fmt: skip
    number = line["phone_number"]
    assert "'No service'" in _state(tools, number)
    tools("enable_roaming", line_id=line["line_id"])
    status = _state(tools, number)
    assert "R (roaming)" in status and "data roaming is turned off" in status
    assert tools("toggle_roaming", phone_number=number, enabled=True).endswith(
        "internet: connected."
    )
    # All data used: a top-up brings the internet back.
    line = line_where(lambda line: tuple(faults_of(line)) == ("data_limit",)
                      and not overdue(line["customer_id"])
                      and line["data_top_up_gb"] < MAX_TOP_UP_GB)  # fmt: skip
    assert "used all the data" in _state(tools, line["phone_number"])
    tools("add_data_top_up", line_id=line["line_id"], gb=1)
    assert _state(tools, line["phone_number"]).endswith("internet: connected.")


def test_read_tools_never_write(tools):
    line = next(iter(TABLES["lines"].values()))
    tools("find_customer_by_phone", phone_number=line["phone_number"])
    tools("get_customer_details", customer_id=line["customer_id"])
    tools("get_line_details", line_id=line["line_id"])
    tools("list_bills", customer_id=line["customer_id"])
    tools("list_plans")
    tools("think", thought="nothing to change")
    for read in ("check_status_bar", "run_speed_test", "send_test_mms", "check_apn_settings",
                 "check_payment_requests"):  # fmt: skip
        tools(read, phone_number=line["phone_number"])
    assert tools.db.changes() == {}


def test_an_agent_cannot_use_the_customers_phone(env):
    env.reset(options={"task": SPLITS["test"][0]})
    observation, *_ = env.step(call("reboot_device", phone_number="510-555-0134"))
    assert observation[0]["content"].startswith("Error: unknown tool 'reboot_device'")
    assert "reboot_device" not in {t["function"]["name"] for t in env.tools}


def _median_step(env, turns):
    times = []
    for turn in turns:
        started = time.perf_counter()
        _, _, terminated, _, info = env.step(turn)
        times.append(time.perf_counter() - started)
        assert not terminated and not info["tool_errors"], info
    return statistics.median(times)


def test_tool_calls_through_step_are_fast(env):
    """Median wall time of one tool call through env.step (parse, run, format), read and write."""
    env.reset(options={"task": SPLITS["test"][0]})
    line = clean_line()
    other = "ultra-100" if line["plan_id"] != "ultra-100" else "basic-5"
    read = _median_step(env, [call("get_line_details", line_id=line["line_id"])] * 300)
    plans = [other, line["plan_id"]] * 150
    write = _median_step(env, [call("change_plan", line_id=line["line_id"], plan_id=p)
                               for p in plans])  # fmt: skip
    print(f"median env.step: get_line_details {read * 1e6:.0f} us, "
          f"change_plan {write * 1e6:.0f} us")  # fmt: skip
    assert read < 1e-3 and write < 1e-3


# --------------------------------------------------------------------------- (7) conversations


def _airplane_task():
    line = line_where(lambda line: tuple(faults_of(line)) == ("airplane_mode",))
    customer = TABLES["customers"][line["customer_id"]]
    number = line["phone_number"]
    fix = {"name": "toggle_airplane_mode", "arguments": {"phone_number": number, "enabled": False}}
    task = kit.hand_written(
        DOMAIN,
        "Hi, my phone suddenly has no service at all.",
        [{**fix, "requestor": "user"}],
        known_info={"phone_number": number, "name": customer["full_name"]},
        user_actions=[{**fix, "instruction": "turn off airplane mode",
                       "triggers": ["airplane mode"]}],
    )  # fmt: skip
    return task, line, customer


def test_a_hand_written_troubleshooting_conversation_with_the_scripted_user(env):
    task, line, customer = _airplane_task()
    number = line["phone_number"]
    env.reset(options={"task": task})
    observation, *_ = env.step("Sorry to hear that. What is your phone number and full name?")
    assert observation[0]["content"] == (
        f"My phone number is {number}. My name is {customer['full_name']}."
    )
    observation, *_ = env.step(call("find_customer_by_phone", phone_number=number))
    assert observation[0]["content"] == customer["customer_id"]
    env.step(call("get_customer_details", customer_id=customer["customer_id"]))
    observation, *_ = env.step(call("get_line_details", line_id=line["line_id"]))
    assert json.loads(observation[0]["content"])["status"] == "active"
    observation, reward, terminated, _, _ = env.step(
        "Your line is active. Could you check whether airplane mode is on, and turn it off?"
    )
    reply = observation[0]["content"]
    assert reply.startswith("OK, I did that (turn off airplane mode). My phone shows: ")
    assert "Airplane mode turned off." in reply and "internet: connected." in reply
    assert not terminated
    _, reward, terminated, _, info = env.step("Great, your phone is working again.")
    assert terminated and reward == 1.0, info["reward_info"]
    (device_call,) = info["reward_info"]["user_device_calls"]
    assert device_call["content"].startswith("Airplane mode turned off.")
    assert {k: v for k, v in device_call.items() if k != "content"} == {
        "name": "toggle_airplane_mode",
        "arguments": {"phone_number": number, "enabled": False},
        "error": None,
    }

    # The same episode, but the agent never asks the customer to act: the phone stays broken.
    env.reset(options={"task": task})
    env.step("What is your phone number and full name?")
    env.step(call("find_customer_by_phone", phone_number=number))
    env.step(call("get_customer_details", customer_id=customer["customer_id"]))
    env.step(call("get_line_details", line_id=line["line_id"]))
    _, reward, terminated, _, info = env.step("Your line is active, so all should be fine.")
    assert terminated and reward == 0.0
    assert info["reward_info"]["db_match"] is False
    assert info["reward_info"]["user_device_calls"] == []


def test_database_overlay_is_per_episode(env):
    line = clean_line()
    suspend = call("suspend_line", line_id=line["line_id"], reason="temporary hold")
    read = call("get_line_details", line_id=line["line_id"])
    kit.check_overlay(env, SPLITS["test"][0], suspend, read, "active", ("lines", line["line_id"]))


def test_llm_user_episode_gets_the_phone_tools_and_counts_its_calls():
    task = next(t for t in SPLITS["train"]
                if t["extra_info"]["category"] == "disable_roaming")  # fmt: skip
    gold = actions_of(task)
    line_id = gold[-1]["arguments"]["line_id"]
    with customer_server() as server:
        environment = TauTelecomEnv(
            tasks=[task], user="llm", user_kwargs={"base_url": server.base_url, "api_key": "local"}
        )
        environment.reset(seed=0)
        assert server.requests == [], "no LLM call at construction or reset"
        for action in gold[:-1]:
            environment.step(call(action["name"], **action["arguments"]))
        observation, *_ = environment.step("I will turn roaming off on your line. Do you confirm?")
        assert observation[0]["content"] == "Yes, please."
        environment.step(call("disable_roaming", line_id=line_id))
        _, reward, terminated, _, info = environment.step("Done: roaming is off.")
        environment.close()
    assert terminated and reward == 1.0, info["reward_info"]
    usage = info["reward_info"]["user_usage"]
    assert usage["calls"] == len(server.requests) == 2
    assert usage["prompt_tokens"] == 2 * PROMPT_TOKENS
    sent = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert sent == Toolset.from_object(PhoneTools()).names
    assert {"toggle_airplane_mode", "make_payment", "reboot_device"} <= set(sent)
    system = server.requests[0]["messages"][0]["content"]
    assert task["extra_info"]["user_scenario"]["known_info"]["phone_number"] in system


def test_money_outputs_match_how_agents_write_amounts():
    assert money(13.8) == "13.8" and money(44.99) == "44.99" and money(12.0) == "12"

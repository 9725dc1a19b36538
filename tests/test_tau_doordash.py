"""TauDoordash-v0: the database, the tools' rules, and tasks that are solvable, strict and not free.

A one-argument change to one of its writes loses the reward; the checks every domain shares
(gold turns solve every task, a do-nothing agent passes almost none, ...) are in
test_tau_domains.py.
"""

import json
import re

import tau_domain_checks as kit
from tau_domain_checks import actions_of, call, fails
from tau_helpers import customer_server

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Toolset
from tool_envs.tau.domains.doordash import DOMAIN, TauDoordashEnv
from tool_envs.tau.domains.doordash.data import (
    CITY_NAMES,
    delivered_minutes_ago,
    minutes_late,
    parse_time,
)
from tool_envs.tau.domains.doordash.tasks import CATEGORY_WEIGHTS, WRITE_TOOLS, money
from tool_envs.tau.domains.doordash.tools import (
    DoordashTools,
    cancellation_fee,
    order_credits,
    recent_credits,
)
from tool_envs.tau.users.base import STOP

SPLITS, ALL_TASKS, TABLES = kit.shipped(DOMAIN)
ORDERS = TABLES["orders"]
CUSTOMERS = TABLES["customers"]
RESTAURANTS = TABLES["restaurants"]
REASONS = {
    "cancel_order": ("no_longer_needed", "ordered_by_mistake", "taking_too_long"),
    "issue_refund": ("missing_item", "wrong_item", "damaged_item"),
    "issue_credit": ("late_delivery", "poor_food_quality", "late_item_report"),
}

has_write = kit.writes_in(WRITE_TOOLS)
env, tools = kit.fixtures(lambda: TauDoordashEnv(tasks=SPLITS["test"]), DOMAIN)


def first(where):
    return next(order for order in ORDERS.values() if where(order))


def status(*names):
    return lambda order: order["status"] in names


def _ok(tools, name, **arguments):
    result = tools(name, **arguments)
    assert not result.startswith("Error"), result
    return json.loads(result)


# --------------------------------------------------------------------------- (2) strict reward


def _other_line(order, line_id):
    return next((line["line_id"] for line in order["items"] if line["line_id"] != line_id), None)


def _perturb(action, key):
    """The same write with ``key`` changed to another plausible value."""
    args = json.loads(json.dumps(action["arguments"]))
    value = args[key]
    order = ORDERS[args["order_id"]]
    if key == "order_id":
        same = [o for o in CUSTOMERS[order["customer_id"]]["orders"] if o != value]
        args[key] = same[0] if same else next(o for o in ORDERS if o != value)
    elif key == "reason":
        args[key] = next(r for r in REASONS[action["name"]] if r != value)
    elif key == "amount":
        args[key] = value + 1.0 if value < 10 else value - 1.0
    elif key in ("changes", "items"):
        entry = args[key][0]
        other = _other_line(order, entry.get("line_id"))
        if "line_id" in entry and other and other not in [e["line_id"] for e in args[key]]:
            entry["line_id"] = other
        else:
            line = next((ln for ln in order["items"] if ln["line_id"] == entry.get("line_id")), {})
            entry["quantity"] = entry.get("quantity", line.get("quantity", 1)) + 1
    elif key == "city":
        args[key] = next(city for city in CITY_NAMES if city != value)
    elif key == "state":
        args[key] = "NV" if value != "NV" else "UT"
    else:
        args[key] = kit.changed_text(key, value)
    assert args[key] != action["arguments"][key] or key in ("changes", "items")
    assert args != action["arguments"]
    return {"name": action["name"], "arguments": args}


def test_changing_one_argument_of_one_write_loses_the_reward(env):
    checked = kit.check_changed_write_loses(env, ALL_TASKS, WRITE_TOOLS, _perturb)
    assert checked == sum(map(has_write, ALL_TASKS)) > 0.7 * len(ALL_TASKS)


# --------------------------------------------------------------------------- (4) database


def test_the_database_has_the_required_size_and_shape():
    dashers = TABLES["dashers"]
    assert (len(CUSTOMERS), len(RESTAURANTS), len(ORDERS), len(dashers)) == (500, 120, 1000, 150)
    assert {o["status"] for o in ORDERS.values()} == {
        "placed", "confirmed", "preparing", "picked_up", "delivered", "cancelled"
    }  # fmt: skip
    assert len({c["email"] for c in CUSTOMERS.values()}) == 500
    assert len({re.sub(r"\D", "", c["phone"]) for c in CUSTOMERS.values()}) == 500
    for customer_id, customer in CUSTOMERS.items():
        assert re.fullmatch(r"cus_\d{5}", customer_id) and customer["customer_id"] == customer_id
        assert customer["orders"] and customer["addresses"] and customer["payment_methods"]
        assert all(ORDERS[o]["customer_id"] == customer_id for o in customer["orders"])
        # The generated credit history respects the limits the tools enforce.
        for order_id in {c["order_id"] for c in customer["credit_history"]}:
            assert order_credits(customer, order_id) <= 1500
        assert recent_credits(customer) <= 2500
    for restaurant in RESTAURANTS.values():
        assert 9 <= len(restaurant["menu"]) <= 13
        for item in restaurant["menu"].values():
            for group in item["option_groups"]:
                assert 0 <= group["min_select"] <= group["max_select"] <= len(group["options"])
    for order_id, order in ORDERS.items():
        assert re.fullmatch(r"DD-\d{6}", order_id) and order["order_id"] == order_id
        restaurant = RESTAURANTS[order["restaurant_id"]]
        assert order["delivery_address"]["city"] == restaurant["address"]["city"]
        assert order["payment_method_id"] in CUSTOMERS[order["customer_id"]]["payment_methods"]
        subtotal = 0
        for line in order["items"]:
            item = restaurant["menu"][line["item_id"]]
            unit = round(item["price"] * 100) + sum(
                round(o["price"] * 100) for o in line["options"]
            )
            assert round(line["unit_price"] * 100) == unit
            assert round(line["line_total"] * 100) == unit * line["quantity"]
            subtotal += unit * line["quantity"]
        assert round(order["subtotal"] * 100) == subtotal
        parts = ("subtotal", "delivery_fee", "service_fee", "tip")
        assert round(order["total"] * 100) == sum(round(order[p] * 100) for p in parts)
        assert next(iter(order["timeline"])) == "placed"
        if order["status"] in ("confirmed", "preparing", "picked_up"):
            assert order["eta"] > "2025-03-14T19:30:00"
        if order["dasher_id"] and order["status"] != "delivered":
            assert order_id in dashers[order["dasher_id"]]["active_order_ids"]
        if order["status"] == "picked_up":
            assert order["dasher_id"] is not None
    assert json.loads(json.dumps(TABLES)) == TABLES


def test_splits_cover_every_category_and_share_no_task():
    kit.check_splits(SPLITS, CATEGORY_WEIGHTS, {*WRITE_TOOLS, *kit.TAGS})
    kit.check_openings(ALL_TASKS, "DD-", "@", "555")
    for row in ALL_TASKS:
        # Every task starts by authenticating the customer it is about.
        names = [a["name"] for a in actions_of(row)[:2]]
        assert names[0] in ("find_customer_by_email", "find_customer_by_phone")
        assert names[1] == "get_customer_details"


ASKS_TO_BE_TOLD = ("How much will I get back?", "What will my new total be?",
                   "How much will I be refunded?")  # fmt: skip


def test_the_user_asks_for_every_amount_the_agent_must_state():
    """Cancellations, item changes and refunds state an amount in some tasks and not in others;
    the scripted user only says its opening, so the opening asks for the amount exactly where
    the gold states it (a multi-step task without outputs asks nothing)."""
    asked = {True: 0, False: 0}
    for row in ALL_TASKS:
        info = row["extra_info"]
        opening = row["prompt"][-1]["content"]
        wants_amount = bool(row["reward_spec"]["outputs"])
        asks = any(text in opening for text in ASKS_TO_BE_TOLD)
        if info["category"] == "multi_step":
            assert wants_amount or not asks, (info["id"], opening)
        if info["category"] not in ("cancel", "modify_items", "add_items", "refund"):
            continue
        assert asks == wants_amount, (info["id"], opening, row["reward_spec"]["outputs"])
        asked[wants_amount] += 1
    assert min(asked.values()) > 20, asked  # both kinds occur


# --------------------------------------------------------------------------- (6) tool rules


def test_lookups_and_reads(tools):
    customer = next(iter(CUSTOMERS.values()))
    customer_id = customer["customer_id"]
    assert tools("find_customer_by_email", email=customer["email"].upper()) == customer_id
    digits = re.sub(r"\D", "", customer["phone"])
    spelled = f"+1 ({digits[:3]}) {digits[3:6]}-{digits[6:]}"
    assert tools("find_customer_by_phone", phone=spelled) == customer_id
    profile = json.loads(tools("get_customer_details", customer_id=customer_id))
    assert [o["order_id"] for o in profile["orders"]] == customer["orders"]
    assert profile["credits_issued_last_30_days"] == recent_credits(customer) / 100
    order_id = customer["orders"][0]
    assert json.loads(tools("get_order_details", order_id=order_id)) == ORDERS[order_id]
    restaurant_id = ORDERS[order_id]["restaurant_id"]
    details = json.loads(tools("get_restaurant_details", restaurant_id=restaurant_id))
    assert "menu" not in details and details["name"] == RESTAURANTS[restaurant_id]["name"]
    menu = json.loads(tools("get_menu", restaurant_id=restaurant_id))
    assert menu == list(RESTAURANTS[restaurant_id]["menu"].values())
    assert tools("calculate", expression="(12.5 + 30.25) - 2") == "40.75"
    assert tools.db.changes() == {}


def test_tracking_shows_eta_dasher_and_lateness(tools):
    moving = first(status("picked_up"))
    tracked = _ok(tools, "track_delivery", order_id=moving["order_id"])
    assert tracked["eta"] == moving["eta"][11:16] and tracked["minutes_away"] > 0
    dasher = TABLES["dashers"][moving["dasher_id"]]
    assert tracked["dasher"]["name"] == dasher["name"]
    assert tracked["dasher"]["status"] == "delivering"
    late = first(lambda o: o["status"] == "delivered" and (minutes_late(o) or 0) >= 45)
    tracked = _ok(tools, "track_delivery", order_id=late["order_id"])
    assert tracked["minutes_late"] == minutes_late(late) and "eta" not in tracked
    waiting = first(lambda o: o["status"] == "placed")
    assert _ok(tools, "track_delivery", order_id=waiting["order_id"])["dasher"] is None


def _line_change(order):
    """A valid change of the first line's quantity, and the item of that line."""
    line = order["items"][0]
    return {"line_id": line["line_id"], "quantity": line["quantity"] + 1}


def test_nothing_changes_after_pickup(tools):
    order = first(status("picked_up"))
    address = dict(order["delivery_address"], street="1 Union Street")
    item_id = order["items"][0]["item_id"]
    for name, arguments in (
        ("modify_order_items", {"changes": [_line_change(order)]}),
        ("add_order_items", {"items": [{"item_id": item_id, "quantity": 1}]}),
        ("update_delivery_address", address),
        ("cancel_order", {"reason": "taking_too_long"}),
    ):
        fails(tools, name, "picked up", order_id=order["order_id"], **arguments)
    for delivered_only in ("issue_refund", "issue_credit"):
        arguments = (
            {"items": [{"line_id": "L1"}], "reason": "missing_item"}
            if delivered_only == "issue_refund"
            else {"amount": 5.0, "reason": "late_delivery"}
        )
        fails(tools, delivered_only, "only", order_id=order["order_id"], **arguments)


def test_cancellation_fee_follows_the_status(tools):
    for state, fee in (("placed", lambda o: 0), ("confirmed", lambda o: 500),
                       ("preparing", lambda o: round(o["subtotal"] * 100))):  # fmt: skip
        # Orders with a dasher where there can be one: cancelling frees the dasher.
        order = first(lambda o, s=state: o["status"] == s and (o["dasher_id"] or s == "placed"))
        assert cancellation_fee(order) == fee(order)
        result = _ok(tools, "cancel_order", order_id=order["order_id"], reason="ordered_by_mistake")
        expected = round(order["total"] * 100) - fee(order)
        assert round(result["cancellation"]["refund"] * 100) == expected
        assert round(result["cancellation"]["fee"] * 100) == fee(order)
        cancelled = json.loads(tools("get_order_details", order_id=order["order_id"]))
        assert cancelled["status"] == "cancelled" and cancelled["dasher_id"] is None
        assert cancelled["payment_history"][-1]["amount"] == expected / 100
        if order["dasher_id"]:
            dasher = tools.db.get("dashers", order["dasher_id"])
            assert order["order_id"] not in dasher["active_order_ids"]
        fails(tools, "cancel_order", "only orders that have not been picked up",
               order_id=order["order_id"], reason="ordered_by_mistake")  # fmt: skip
    assert ORDERS[order["order_id"]]["status"] == "preparing", "the base tables changed"


def _menu_item(order, *, groups=True, available=True, exclude=()):
    menu = RESTAURANTS[order["restaurant_id"]]["menu"]
    return next(
        item
        for item in menu.values()
        if bool(item["option_groups"]) == groups
        and item["available"] == available
        and item["item_id"] not in exclude
    )


def test_item_changes_check_the_menu_and_keep_one_net_adjustment(tools):
    def fits(order):
        menu = RESTAURANTS[order["restaurant_id"]]["menu"]
        groups = menu[order["items"][0]["item_id"]]["option_groups"]
        present = [line["item_id"] for line in order["items"]]
        plain = [i for i in menu.values() if not i["option_groups"] and i["available"]
                 and i["item_id"] not in present]  # fmt: skip
        return (
            order["status"] == "confirmed"
            and len(order["items"]) >= 2
            and any(g["min_select"] == 1 for g in groups)
            and bool(plain)
        )

    order = first(fits)
    order_id, lines = order["order_id"], order["items"]
    menu = RESTAURANTS[order["restaurant_id"]]["menu"]
    item = menu[lines[0]["item_id"]]
    required = next(g for g in item["option_groups"] if g["min_select"] == 1)
    chosen = [o["option_id"] for o in lines[0]["options"]]
    current = next(o for o in chosen if o in [x["option_id"] for x in required["options"]])
    other = next(o["option_id"] for o in required["options"] if o["option_id"] != current)
    swapped = [other if o == current else o for o in chosen]
    fails(tools, "modify_order_items", "has no line", order_id=order_id,
          changes=[{"line_id": "L9", "quantity": 1}])  # fmt: skip
    fails(
        tools,
        "modify_order_items",
        "listed twice",
        order_id=order_id,
        changes=[{"line_id": "L1", "quantity": 2}, {"line_id": "L1", "quantity": 3}],
    )
    fails(tools, "modify_order_items", "no quantity or option_ids", order_id=order_id,
          changes=[{"line_id": "L1"}])  # fmt: skip
    fails(tools, "modify_order_items", "unknown field", order_id=order_id,
          changes=[{"line_id": "L1", "size": "large"}])  # fmt: skip
    fails(tools, "modify_order_items", "not an option", order_id=order_id,
          changes=[{"line_id": "L1", "option_ids": ["opt_00000"]}])  # fmt: skip
    fails(tools, "modify_order_items", "needs exactly 1", order_id=order_id,
          changes=[{"line_id": "L1", "option_ids": [*chosen, other]}])  # fmt: skip
    fails(tools, "modify_order_items", "already has", order_id=order_id,
          changes=[{"line_id": "L1", "option_ids": chosen}])  # fmt: skip
    fails(tools, "modify_order_items", "between 0 and 20", order_id=order_id,
          changes=[{"line_id": "L1", "quantity": -1}])  # fmt: skip
    fails(
        tools,
        "modify_order_items",
        "at least one item",
        order_id=order_id,
        changes=[{"line_id": line["line_id"], "quantity": 0} for line in lines],
    )
    plain = _menu_item(order, groups=False, exclude=[line["item_id"] for line in lines])
    fails(tools, "add_order_items", "not on the menu", order_id=order_id,
          items=[{"item_id": "itm_00000"}])  # fmt: skip
    fails(tools, "add_order_items", "needs exactly 1", order_id=order_id,
          items=[{"item_id": item["item_id"], "quantity": 1}])  # fmt: skip
    fails(tools, "add_order_items", "between 1 and 20", order_id=order_id,
          items=[{"item_id": plain["item_id"], "quantity": 0}])  # fmt: skip

    # Two calls in either order, or one, reach the same state: one net price adjustment.
    swap = {"line_id": "L1", "option_ids": swapped}
    removal = {"line_id": lines[1]["line_id"], "quantity": 0}
    add = [{"item_id": plain["item_id"], "quantity": 2, "option_ids": []}]
    hashes = []
    for plan in (
        [("modify_order_items", {"changes": [swap, removal]}), ("add_order_items", {"items": add})],
        [("add_order_items", {"items": add}), ("modify_order_items", {"changes": [removal]}),
         ("modify_order_items", {"changes": [swap]})],
    ):  # fmt: skip
        db = DOMAIN.new_database()
        toolset = Toolset.from_object(DoordashTools(db))
        for name, arguments in plan:
            result = toolset.call(ToolCall(name, {"order_id": order_id, **arguments})).content
            assert not result.startswith("Error"), result
        hashes.append(db.hash())
        final = db.get("orders", order_id)
        adjustments = [p for p in final["payment_history"] if p["type"] == "adjustment"]
        assert len(adjustments) == 1
        assert round(adjustments[0]["amount"] * 100) == round(
            (final["total"] - order["total"]) * 100
        )
        new_line = final["items"][-1]
        assert new_line["line_id"] == f"L{order['next_line']}" and new_line["quantity"] == 2
    assert hashes[0] == hashes[1]


def test_adding_an_item_already_in_the_order_raises_its_quantity(tools):
    order = first(lambda o: o["status"] == "placed")
    line = order["items"][0]
    result = _ok(
        tools,
        "add_order_items",
        order_id=order["order_id"],
        items=[
            {"item_id": line["item_id"], "option_ids": [o["option_id"] for o in line["options"]]}
        ],
    )
    assert [changed["line_id"] for changed in result["changed_lines"]] == [line["line_id"]]
    assert result["changed_lines"][0]["quantity"] == line["quantity"] + 1
    assert round(result["price_difference"] * 100) == round(line["unit_price"] * 100)


def test_addresses_stay_in_the_restaurant_city(tools):
    order = first(status("preparing"))
    address = order["delivery_address"]
    other = next(city for city in CITY_NAMES if city != address["city"])
    fails(tools, "update_delivery_address", "outside the delivery area",
          order_id=order["order_id"], **dict(address, city=other))  # fmt: skip
    fails(
        tools,
        "update_delivery_address",
        "five digits",
        order_id=order["order_id"],
        **dict(address, street="9 Vine Way", zip="8021"),
    )
    fails(tools, "update_delivery_address", "already going",
          order_id=order["order_id"], **address)  # fmt: skip
    moved = _ok(tools, "update_delivery_address", order_id=order["order_id"],
                **dict(address, street="9 Vine Way", unit=""))  # fmt: skip
    assert moved["delivery_address"]["street"] == "9 Vine Way"


def test_refund_rules(tools):
    def fits(order):
        return (
            order["status"] == "delivered"
            and delivered_minutes_ago(order) < 20 * 60
            and not order["refunds"]
            and any(line["quantity"] >= 2 for line in order["items"])
        )

    order = first(fits)
    line = next(line for line in order["items"] if line["quantity"] >= 2)
    common = {"order_id": order["order_id"], "reason": "missing_item"}
    fails(tools, "issue_refund", "has no line", items=[{"line_id": "L9"}], **common)
    fails(tools, "issue_refund", "unknown field",
          items=[{"line_id": line["line_id"], "price": 1}], **common)  # fmt: skip
    fails(
        tools,
        "issue_refund",
        "not " + str(line["quantity"] + 1),
        items=[{"line_id": line["line_id"], "quantity": line["quantity"] + 1}],
        **common,
    )
    refund = _ok(tools, "issue_refund", items=[{"line_id": line["line_id"], "quantity": 1}],
                 **common)  # fmt: skip
    assert refund["amount"] == line["unit_price"]
    assert refund["payment_method_id"] == order["payment_method_id"]
    rest = line["quantity"] - 1
    fails(tools, "issue_refund", f"has {rest} unit(s) left",
          items=[{"line_id": line["line_id"], "quantity": rest + 1}], **common)  # fmt: skip
    second = _ok(tools, "issue_refund", items=[{"line_id": line["line_id"]}], **common)
    assert second["items"][0]["quantity"] == rest and second["refund_id"].endswith("-2")
    fails(tools, "issue_refund", "already refunded in full",
          items=[{"line_id": line["line_id"]}], **common)  # fmt: skip
    stale = first(lambda o: o["status"] == "delivered" and delivered_minutes_ago(o) > 26 * 60)
    fails(tools, "issue_refund", "within 24 hours", order_id=stale["order_id"],
          items=[{"line_id": "L1"}], reason="missing_item")  # fmt: skip


def test_credit_rules(tools):
    def fresh(order):
        customer = CUSTOMERS[order["customer_id"]]
        return (
            order["status"] == "delivered"
            and delivered_minutes_ago(order) < 5 * 24 * 60
            and recent_credits(customer) == 0
        )

    order = first(fresh)
    customer = CUSTOMERS[order["customer_id"]]
    common = {"order_id": order["order_id"], "reason": "poor_food_quality"}
    fails(tools, "issue_credit", "must be positive", amount=0, **common)
    fails(tools, "issue_credit", "at most 15.00 more", amount=15.01, **common)
    result = _ok(tools, "issue_credit", amount=10, **common)
    assert result["credit"]["amount"] == 10.0 and result["credit"]["issued_at"].startswith("2025")
    assert result["credits_balance"] == round(customer["credits_balance"] + 10, 2)
    fails(tools, "issue_credit", "at most 5.00 more", amount=6, **common)
    _ok(tools, "issue_credit", amount=5, order_id=order["order_id"], reason="late_delivery")
    fails(tools, "issue_credit", "0.00 more", amount=1, **common)
    profile = json.loads(tools("get_customer_details", customer_id=customer["customer_id"]))
    assert profile["credits_issued_last_30_days"] == 15.0
    another = next(
        (o for o in customer["orders"] if o != order["order_id"]
         and ORDERS[o]["status"] == "delivered" and delivered_minutes_ago(ORDERS[o]) < 6 * 1440),
        None,
    )  # fmt: skip
    if another:
        fails(tools, "issue_credit", "in the last 30 days", order_id=another, amount=11,
               reason="late_delivery")  # fmt: skip
    old = first(lambda o: o["status"] == "delivered" and delivered_minutes_ago(o) > 8 * 1440)
    fails(tools, "issue_credit", "within 7 days", order_id=old["order_id"], amount=5,
          reason="late_delivery")  # fmt: skip
    assert CUSTOMERS[customer["customer_id"]]["credit_history"] == customer["credit_history"]


def test_read_tools_never_write(tools):
    order = first(status("preparing"))
    for name, arguments in (
        ("get_order_details", {"order_id": order["order_id"]}),
        ("get_customer_details", {"customer_id": order["customer_id"]}),
        ("get_menu", {"restaurant_id": order["restaurant_id"]}),
        ("get_restaurant_details", {"restaurant_id": order["restaurant_id"]}),
        ("track_delivery", {"order_id": order["order_id"]}),
        ("find_customer_by_email", {"email": CUSTOMERS[order["customer_id"]]["email"]}),
        ("think", {"thought": "nothing to change"}),
    ):
        tools(name, **arguments)
    assert tools.db.changes() == {}


def test_reads_show_the_episode_edits(tools):
    order = first(status("placed"))
    before = tools("get_order_details", order_id=order["order_id"])
    tools("cancel_order", order_id=order["order_id"], reason="no_longer_needed")
    after = json.loads(tools("get_order_details", order_id=order["order_id"]))
    assert json.loads(before)["status"] == "placed" and after["status"] == "cancelled"
    profile = json.loads(tools("get_customer_details", customer_id=order["customer_id"]))
    summary = next(o for o in profile["orders"] if o["order_id"] == order["order_id"])
    assert summary["status"] == "cancelled"
    assert json.loads(tools("track_delivery", order_id=order["order_id"]))["status"] == "cancelled"


def test_tool_calls_through_step_are_fast(env):
    """Median wall time of one tool call through env.step (parse, run, format)."""
    task = SPLITS["test"][0]
    orders = list(ORDERS.values())[:40]
    waiting = [o for o in ORDERS.values() if o["status"] in ("placed", "confirmed")][:40]
    reads = {
        "get_order_details": [call("get_order_details", order_id=o["order_id"]) for o in orders],
        "get_customer_details": [
            call("get_customer_details", customer_id=o["customer_id"]) for o in orders
        ],
        "track_delivery": [call("track_delivery", order_id=o["order_id"]) for o in orders],
    }
    writes = {
        "cancel_order": [
            call("cancel_order", order_id=o["order_id"], reason="ordered_by_mistake")
            for o in waiting
        ],
        "modify_order_items": [
            call("modify_order_items", order_id=o["order_id"], changes=[_line_change(o)])
            for o in waiting
        ],
    }
    for name, turns in reads.items():
        median = kit.median_step(env, task, turns, fresh=False)
        print(f"median env.step with one {name} call: {median * 1e6:.0f} us")
        assert median < 2e-3
    for name, turns in writes.items():
        median = kit.median_step(env, task, turns, fresh=True)
        print(f"median env.step with one {name} call (fresh episode): {median * 1e6:.0f} us")
        assert median < 4e-3


# --------------------------------------------------------------------------- (7) conversations


def _refund_task():
    """A hand-written task: one unit of one line of a delivered order was missing."""
    order = first(
        lambda o: (
            o["status"] == "delivered"
            and delivered_minutes_ago(o) < 20 * 60
            and not o["refunds"]
            and len(o["items"]) >= 2
        )
    )
    customer = CUSTOMERS[order["customer_id"]]
    line = order["items"][0]
    return order, customer, line, kit.hand_written(
        DOMAIN,
        "Hi, something was missing from my delivery tonight.",
        [{"name": "issue_refund",
          "arguments": {"order_id": order["order_id"], "reason": "missing_item",
                        "items": [{"line_id": line["line_id"], "quantity": 1}]}}],
        [money(round(line["unit_price"] * 100))],
        known_info={"email": customer["email"], "order_id": order["order_id"],
                    "items": f"one {line['name']}"},
    )  # fmt: skip


def test_a_hand_written_conversation_with_the_scripted_user(env):
    order, customer, line, task = _refund_task()
    amount = f"{line['unit_price']:.2f}"
    env.reset(options={"task": task})
    observation, *_ = env.step("Sorry to hear that. Could you please provide your email address?")
    assert observation[0]["content"] == f"My email is {customer['email']}."
    observation, *_ = env.step(call("find_customer_by_email", email=customer["email"]))
    assert observation[0]["content"] == customer["customer_id"]
    env.step(call("get_customer_details", customer_id=customer["customer_id"]))
    observation, *_ = env.step("Thanks. What is the order id, and which item was missing?")
    assert order["order_id"] in observation[0]["content"]
    assert line["name"] in observation[0]["content"]
    env.step(call("get_order_details", order_id=order["order_id"]))
    observation, *_ = env.step(
        f"I can refund one {line['name']}: {amount} dollars back to the card you paid with. "
        "Shall I proceed (yes/no)?"
    )
    assert observation[0]["content"].startswith("Yes")
    observation, reward, terminated, _, _ = env.step(
        call("issue_refund", order_id=order["order_id"], reason="missing_item",
             items=[{"line_id": line["line_id"], "quantity": 1}])
    )  # fmt: skip
    assert not terminated and json.loads(observation[0]["content"])["amount"] == line["unit_price"]
    observation, reward, terminated, _, info = env.step(f"Done: {amount} has been refunded.")
    assert terminated and STOP in observation[0]["content"]
    assert reward == 1.0, info["reward_info"]


def test_an_agent_that_breaks_the_policy_gets_zero(env):
    """Refunding the whole order when one item was missing fails the task."""
    order, customer, line, task = _refund_task()
    env.reset(options={"task": task})
    env.step(call("find_customer_by_email", email=customer["email"]))
    env.step(
        call("issue_refund", order_id=order["order_id"], reason="missing_item",
             items=[{"line_id": item["line_id"]} for item in order["items"]])
    )  # fmt: skip
    _, reward, terminated, _, info = env.step(
        f"Done: I refunded everything, including {line['unit_price']:.2f} for the {line['name']}."
    )
    assert terminated and reward == 0.0
    assert info["reward_info"]["db_match"] is False and all(info["reward_info"]["outputs"].values())


def test_a_customer_known_by_phone_answers_a_question_about_email(env):
    task = next(
        t for t in SPLITS["test"] if "phone" in t["extra_info"]["user_scenario"]["known_info"]
    )
    phone = task["extra_info"]["user_scenario"]["known_info"]["phone"]
    env.reset(options={"task": task})
    observation, *_ = env.step("Could you tell me the email address on your account?")
    assert phone in observation[0]["content"]


def test_an_llm_user_episode_end_to_end_against_a_local_server():
    order = first(lambda o: o["status"] == "placed")
    customer = CUSTOMERS[order["customer_id"]]
    refund = money(round(order["total"] * 100))
    task = kit.hand_written(
        DOMAIN,
        "Hi, I'd like to cancel the order I just placed.",
        [{"name": "cancel_order", "arguments": {
            "order_id": order["order_id"], "reason": "ordered_by_mistake"}}],
        [refund],
        task_id="llm-user",
        known_info={"email": customer["email"], "order_id": order["order_id"]},
        task_instructions="You ordered it by mistake. Say yes when asked to confirm.",
    )  # fmt: skip
    with customer_server() as server:
        environment = TauDoordashEnv(
            tasks=[task], user="llm", user_kwargs={"base_url": server.base_url, "api_key": "local"}
        )
        environment.reset(options={"task": task})
        assert server.requests == [], "no LLM call at construction or reset"
        observation, *_ = environment.step("Happy to help! What is the email on your account?")
        assert observation[0]["content"] == f"Sure, it is {customer['email']}"
        environment.step(call("find_customer_by_email", email=customer["email"]))
        environment.step(call("get_customer_details", customer_id=customer["customer_id"]))
        environment.step(call("get_order_details", order_id=order["order_id"]))
        observation, *_ = environment.step(
            f"Order {order['order_id']} is still 'placed', so cancelling is free and you get "
            f"{refund} dollars back. Do you confirm the cancellation?"
        )
        assert observation[0]["content"] == "Yes, please."
        environment.step(
            call("cancel_order", order_id=order["order_id"], reason="ordered_by_mistake")
        )
        observation, reward, terminated, _, info = environment.step(
            f"Done: the order is cancelled and {refund} dollars go back to your card."
        )
        environment.close()
    assert terminated and reward == 1.0, info["reward_info"]
    assert info["reward_info"]["user_usage"]["calls"] == 3
    assert customer["email"] in server.requests[0]["messages"][0]["content"]


def test_database_overlay_is_per_episode(env):
    order = first(status("preparing"))
    cancel = call("cancel_order", order_id=order["order_id"], reason="no_longer_needed")
    read = call("get_order_details", order_id=order["order_id"])
    record = ("orders", order["order_id"])
    kit.check_overlay(env, SPLITS["test"][0], cancel, read, "preparing", record)


def test_credit_windows_in_the_data_match_the_policy_clock():
    """Windows are counted from the fixed now, and no delivered order sits on an edge."""
    for order in ORDERS.values():
        if order["status"] == "delivered":
            age = delivered_minutes_ago(order)
            assert not 22 * 60 < age < 26 * 60 and not 6.5 * 1440 < age < 7.5 * 1440
            assert parse_time(order["timeline"]["delivered"]) < parse_time("2025-03-14T19:30:00")

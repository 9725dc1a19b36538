"""TauRetail-v0: the database, the tools' rules, and tasks that are solvable, strict and not free.

A one-argument change to one of its writes loses the reward; the checks every domain shares
(gold turns solve every task, a do-nothing agent passes almost none, ...) are in
test_tau_domains.py.
"""

import json
import re
import statistics
import time

import tau_domain_checks as kit
from tau_domain_checks import call, fails

from tool_envs.tau.domains.retail import DOMAIN, TauRetailEnv
from tool_envs.tau.domains.retail.tasks import CATEGORY_WEIGHTS, WRITE_TOOLS, money

SPLITS, ALL_TASKS, TABLES = kit.shipped(DOMAIN)

has_write = kit.writes_in(WRITE_TOOLS)
env, tools = kit.fixtures(lambda: TauRetailEnv(tasks=SPLITS["test"]), DOMAIN)


def first(status, *, where=lambda order: True):
    return next(o for o in TABLES["orders"].values() if o["status"] == status and where(o))


# --------------------------------------------------------------------------- (2) strict reward


def _other_variant(item_id, avoid):
    """Another available variant of the product that ``item_id`` belongs to."""
    for product in TABLES["products"].values():
        if item_id in product["variants"]:
            for key, variant in product["variants"].items():
                if key not in avoid and variant["available"]:
                    return key
    raise AssertionError(f"no variant besides {avoid}")


def _perturb(action, key):
    """The same write with ``key`` changed to another plausible value."""
    args = json.loads(json.dumps(action["arguments"]))
    value = args[key]
    order = TABLES["orders"].get(args.get("order_id", ""))
    owner = order["user_id"] if order else args.get("user_id")
    if key == "order_id":
        same = [o for o in TABLES["users"][owner]["orders"] if o != value]
        args[key] = same[0] if same else next(o for o in TABLES["orders"] if o != value)
    elif key == "user_id":
        args[key] = next(u for u in TABLES["users"] if u != value)
    elif key == "reason":
        args[key] = "ordered by mistake" if value == "no longer needed" else "no longer needed"
    elif key == "payment_method_id":
        others = [m for m in TABLES["users"][owner]["payment_methods"] if m != value]
        args[key] = others[0] if others else "credit_card_1000000"
    elif key == "item_ids":
        spare = [i["item_id"] for i in order["items"] if i["item_id"] not in value]
        args[key] = [spare[0] if spare else _other_variant(value[0], value), *value[1:]]
    elif key == "new_item_ids":
        args[key] = [_other_variant(value[0], [*value, *args["item_ids"]]), *value[1:]]
    else:
        args[key] = kit.changed_text(key, value)
    assert args[key] != value
    return {"name": action["name"], "arguments": args}


def test_changing_one_argument_of_one_write_loses_the_reward(env):
    checked = kit.check_changed_write_loses(env, ALL_TASKS, WRITE_TOOLS, _perturb)
    assert checked > 0.8 * len(ALL_TASKS)


# --------------------------------------------------------------------------- (4) database


def test_the_database_has_the_required_size_and_shape():
    users, orders, products = TABLES["users"], TABLES["orders"], TABLES["products"]
    assert (len(users), len(orders), len(products)) == (500, 1000, 50)
    statuses = {o["status"] for o in orders.values()}
    assert statuses == {
        "pending",
        "processed",
        "delivered",
        "cancelled",
        "return requested",
        "exchange requested",
    }
    for user_id, user in users.items():
        assert re.fullmatch(r"[a-z]+_[a-z]+_\d{4}", user_id) and user["user_id"] == user_id
        assert set(user["address"]) == {"address1", "address2", "city", "country", "state", "zip"}
        assert user["orders"] and all(orders[o]["user_id"] == user_id for o in user["orders"])
        sources = {m["source"] for m in user["payment_methods"].values()}
        assert sources <= {"credit_card", "paypal", "gift_card"}
    assert len({u["email"] for u in users.values()}) == 500
    name_zip = {(u["name"]["first_name"], u["name"]["last_name"], u["address"]["zip"])
                for u in users.values()}  # fmt: skip
    assert len(name_zip) == 500
    for order_id, order in orders.items():
        assert re.fullmatch(r"#W\d{7}", order_id) and order["order_id"] == order_id
        assert order_id in users[order["user_id"]]["orders"]
        for item in order["items"]:
            assert item["item_id"] in products[item["product_id"]]["variants"]
        assert (
            order["payment_history"][0]["payment_method_id"]
            in (users[order["user_id"]]["payment_methods"])
        )
    for product in products.values():
        assert sum(v["available"] for v in product["variants"].values()) >= 3
    assert json.loads(json.dumps(TABLES)) == TABLES


def test_splits_cover_every_category_and_share_no_task():
    kit.check_splits(SPLITS, CATEGORY_WEIGHTS, {*WRITE_TOOLS, *kit.TAGS})
    kit.check_openings(ALL_TASKS, "#W", "@")


# --------------------------------------------------------------------------- (6) tool rules


ASKS_TO_BE_TOLD = ("How much", "What balance")


def test_the_user_asks_for_every_amount_the_agent_must_state():
    """The gold reports an amount only where the task requires it, so the user's request must
    say so: otherwise an agent cannot know whether to state the refund, and half the tasks of
    a category punish what the other half require."""
    asked = {True: 0, False: 0}
    for row in ALL_TASKS:
        info = row["extra_info"]
        if info["category"] not in ("cancel", "payment", "items", "exchange", "return"):
            continue
        opening = row["prompt"][-1]["content"]
        wants_amount = bool(row["reward_spec"]["outputs"])
        assert any(text in opening for text in ASKS_TO_BE_TOLD) == wants_amount, (
            info["id"],
            opening,
            row["reward_spec"]["outputs"],
        )
        asked[wants_amount] += 1
    assert min(asked.values()) > 20, asked  # both kinds occur


def test_lookups_and_reads(tools):
    user = next(iter(TABLES["users"].values()))
    name = user["name"]
    assert tools("find_user_id_by_email", email=user["email"].upper()) == user["user_id"]
    found = tools(
        "find_user_id_by_name_zip",
        first_name=name["first_name"],
        last_name=name["last_name"],
        zip=user["address"]["zip"],
    )
    assert found == user["user_id"]
    assert json.loads(tools("get_user_details", user_id=user["user_id"])) == user
    order_id = user["orders"][0]
    assert json.loads(tools("get_order_details", order_id=order_id)) == TABLES["orders"][order_id]
    listing = json.loads(tools("list_all_product_types"))
    assert len(listing) == 50 and list(listing) == sorted(listing)
    product_id = listing["Yoga Mat"]
    assert json.loads(tools("get_product_details", product_id=product_id))["name"] == "Yoga Mat"
    assert tools("calculate", expression="(12.5 + 30.25) - 2") == "40.75"
    assert tools.db.changes() == {}


def test_writes_need_the_right_status(tools):
    delivered = first("delivered")
    processed = first("processed")
    pending = first("pending")
    address = {"address1": "1 Elm St", "address2": "", "city": "Boise", "state": "ID",
               "country": "USA", "zip": "83701"}  # fmt: skip
    item = delivered["items"][0]["item_id"]
    method = delivered["payment_history"][0]["payment_method_id"]
    fails(tools, "cancel_pending_order", "only pending orders",
          order_id=processed["order_id"], reason="no longer needed")  # fmt: skip
    fails(tools, "modify_pending_order_address", "only pending orders",
          order_id=delivered["order_id"], **address)  # fmt: skip
    fails(tools, "modify_pending_order_payment", "only pending orders",
          order_id=delivered["order_id"], payment_method_id=method)  # fmt: skip
    fails(tools, "modify_pending_order_items", "only pending orders",
          order_id=delivered["order_id"], item_ids=[item], new_item_ids=[item],
          payment_method_id=method)  # fmt: skip
    fails(tools, "return_delivered_order_items", "only delivered orders",
          order_id=pending["order_id"], item_ids=[pending["items"][0]["item_id"]],
          payment_method_id=pending["payment_history"][0]["payment_method_id"])  # fmt: skip
    fails(tools, "exchange_delivered_order_items", "only delivered orders",
          order_id=processed["order_id"], item_ids=[processed["items"][0]["item_id"]],
          new_item_ids=[processed["items"][0]["item_id"]],
          payment_method_id=processed["payment_history"][0]["payment_method_id"])  # fmt: skip
    fails(tools, "cancel_pending_order", "must be 'no longer needed' or 'ordered by mistake'",
          order_id=pending["order_id"], reason="found it cheaper")  # fmt: skip
    # One return or exchange per order.
    assert not tools("return_delivered_order_items", order_id=delivered["order_id"],
                     item_ids=[item], payment_method_id=method).startswith("Error")  # fmt: skip
    fails(tools, "exchange_delivered_order_items", "only one return or exchange",
          order_id=delivered["order_id"], item_ids=[item], new_item_ids=[item],
          payment_method_id=method)  # fmt: skip


def test_cancelling_refunds_and_credits_a_gift_card_at_once(tools):
    def paid_by_gift_card(order):
        methods = TABLES["users"][order["user_id"]]["payment_methods"]
        return methods[order["payment_history"][0]["payment_method_id"]]["source"] == "gift_card"

    order = first("pending", where=paid_by_gift_card)
    user_id, payment = order["user_id"], order["payment_history"][0]
    balance = TABLES["users"][user_id]["payment_methods"][payment["payment_method_id"]]["balance"]
    result = json.loads(
        tools("cancel_pending_order", order_id=order["order_id"], reason="no longer needed")
    )
    assert result["status"] == "cancelled" and result["cancel_reason"] == "no longer needed"
    assert result["payment_history"][-1] == {**payment, "transaction_type": "refund"}
    user = json.loads(tools("get_user_details", user_id=user_id))
    card = user["payment_methods"][payment["payment_method_id"]]
    assert card["balance"] == round(balance + payment["amount"], 2)
    assert (
        TABLES["users"][user_id]["payment_methods"][payment["payment_method_id"]]["balance"]
        == balance
    ), "the base tables changed"
    fails(tools, "cancel_pending_order", "only pending orders",
          order_id=order["order_id"], reason="no longer needed")  # fmt: skip


def _swappable(order):
    item = order["items"][0]
    variants = TABLES["products"][item["product_id"]]["variants"]
    new = next(k for k, v in variants.items() if v["available"] and k != item["item_id"])
    unavailable = next((k for k, v in variants.items() if not v["available"]), None)
    return item, variants[new], unavailable


def test_item_modification_rules(tools):
    order = first("pending", where=lambda o: len(o["items"]) >= 2)
    item, new, unavailable = _swappable(order)
    methods = TABLES["users"][order["user_id"]]["payment_methods"]
    method = next(iter(methods))
    common = {"order_id": order["order_id"], "payment_method_id": method}
    other_product = order["items"][1]["item_id"]
    fails(tools, "modify_pending_order_items", "same product",
          item_ids=[item["item_id"]], new_item_ids=[other_product], **common)  # fmt: skip
    fails(tools, "modify_pending_order_items", "not in order",
          item_ids=["0000000000"], new_item_ids=[new["item_id"]], **common)  # fmt: skip
    fails(tools, "modify_pending_order_items", "same length",
          item_ids=[item["item_id"]], new_item_ids=[], **common)  # fmt: skip
    fails(tools, "modify_pending_order_items", "same as the item",
          item_ids=[item["item_id"]], new_item_ids=[item["item_id"]], **common)  # fmt: skip
    if unavailable:
        fails(tools, "modify_pending_order_items", "not available",
               item_ids=[item["item_id"]], new_item_ids=[unavailable], **common)  # fmt: skip
    fails(tools, "modify_pending_order_items", "not found in the profile",
          item_ids=[item["item_id"]], new_item_ids=[new["item_id"]],
          order_id=order["order_id"], payment_method_id="paypal_0000000")  # fmt: skip
    result = json.loads(tools("modify_pending_order_items", item_ids=[item["item_id"]],
                              new_item_ids=[new["item_id"]], **common))  # fmt: skip
    assert result["status"] == "pending (item modified)"
    assert result["items"][0]["item_id"] == new["item_id"]
    assert result["items"][0]["price"] == new["price"]
    difference = round(new["price"] - item["price"], 2)
    if difference:
        assert result["payment_history"][-1]["amount"] == abs(difference)
    fails(tools, "modify_pending_order_items", "already modified once",
          item_ids=[item["item_id"]], new_item_ids=[new["item_id"]], **common)  # fmt: skip
    # Cancelling is still possible, and refunds the net amount paid.
    result = json.loads(
        tools("cancel_pending_order", order_id=order["order_id"], reason="ordered by mistake")
    )
    refunded = sum(
        e["amount"] * (1 if e["transaction_type"] == "refund" else -1)
        for e in result["payment_history"]
    )
    assert abs(refunded) < 0.01


def test_payment_and_refund_method_rules(tools):
    def shape(order):
        methods = TABLES["users"][order["user_id"]]["payment_methods"].values()
        return any(m["source"] == "gift_card" and m["balance"] < order["payment_history"][0][
            "amount"] for m in methods)  # fmt: skip

    order = first("pending", where=shape)
    methods = TABLES["users"][order["user_id"]]["payment_methods"]
    card = next(m["id"] for m in methods.values() if m["source"] == "gift_card")
    current = order["payment_history"][0]["payment_method_id"]
    fails(tools, "modify_pending_order_payment", "insufficient gift card balance",
          order_id=order["order_id"], payment_method_id=card)  # fmt: skip
    fails(tools, "modify_pending_order_payment", "must differ",
          order_id=order["order_id"], payment_method_id=current)  # fmt: skip

    def two_cards(order):
        methods = TABLES["users"][order["user_id"]]["payment_methods"].values()
        return sum(m["source"] == "credit_card" for m in methods) >= 2

    delivered = first("delivered", where=two_cards)
    original = delivered["payment_history"][0]["payment_method_id"]
    methods = TABLES["users"][delivered["user_id"]]["payment_methods"]
    other = next(k for k, m in methods.items() if m["source"] == "credit_card" and k != original)
    fails(tools, "return_delivered_order_items", "original payment method",
          order_id=delivered["order_id"], item_ids=[delivered["items"][0]["item_id"]],
          payment_method_id=other)  # fmt: skip


def test_read_tools_never_write(tools):
    order = first("delivered")
    tools("get_order_details", order_id=order["order_id"])
    tools("get_user_details", user_id=order["user_id"])
    tools("get_product_details", product_id=order["items"][0]["product_id"])
    tools("find_user_id_by_email", email=TABLES["users"][order["user_id"]]["email"])
    tools("list_all_product_types")
    tools("think", thought="nothing to change")
    assert tools.db.changes() == {}


def test_lookups_follow_the_episode_edits(tools):
    user = next(iter(TABLES["users"].values()))
    address = {"address1": "1 Elm St", "address2": "", "city": "Boise", "state": "ID",
               "country": "USA", "zip": "83701"}  # fmt: skip
    tools("modify_user_address", user_id=user["user_id"], **address)
    name = user["name"]
    moved = tools("find_user_id_by_name_zip", first_name=name["first_name"],
                  last_name=name["last_name"], zip="83701")  # fmt: skip
    assert moved == user["user_id"]
    old = tools("find_user_id_by_name_zip", first_name=name["first_name"],
                last_name=name["last_name"], zip=user["address"]["zip"])  # fmt: skip
    assert old.startswith("Error")


def test_tool_calls_through_step_are_fast(env):
    """Median wall time of one read tool call through env.step (parse, run, format)."""
    task = SPLITS["test"][0]
    env.reset(options={"task": task})
    order_id = next(iter(TABLES["orders"]))
    turn = call("get_order_details", order_id=order_id)
    times = []
    for _ in range(200):
        started = time.perf_counter()
        env.step(turn)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    print(f"median env.step with one get_order_details call: {median * 1e6:.0f} us")
    assert median < 2e-3


# --------------------------------------------------------------------------- (7) conversation


def test_a_hand_written_conversation_with_the_scripted_user(env):
    order = first("pending")
    user = TABLES["users"][order["user_id"]]
    refund = order["payment_history"][0]["amount"]
    task = kit.hand_written(
        DOMAIN,
        "Hi, I'd like to cancel one of my orders.",
        [{"name": "cancel_pending_order",
          "arguments": {"order_id": order["order_id"], "reason": "ordered by mistake"}}],
        [money(refund)],
        known_info={"email": user["email"], "order_id": order["order_id"],
                    "reason": "ordered by mistake"},
    )  # fmt: skip
    env.reset(options={"task": task})
    reply = kit.say(env, "Sure. Could you please provide your email address?")
    assert reply == f"My email is {user['email']}."
    assert kit.say(env, call("find_user_id_by_email", email=user["email"])) == user["user_id"]
    env.step(call("get_user_details", user_id=user["user_id"]))
    reply = kit.say(env, "Thanks. What is the order id, and the reason for cancelling?")
    assert order["order_id"] in reply and "ordered by mistake" in reply
    env.step(call("get_order_details", order_id=order["order_id"]))
    proposal = (
        f"I will cancel it; {money(refund)} dollars go back to the original payment method. "
        "Shall I proceed (yes/no)?"
    )
    assert kit.say(env, proposal).startswith("Yes")
    observation, reward, terminated, _, _ = env.step(
        call("cancel_pending_order", order_id=order["order_id"], reason="ordered by mistake")
    )
    assert not terminated and json.loads(observation[0]["content"])["status"] == "cancelled"
    _, reward, terminated, _, info = env.step("Done: the order is cancelled.")
    assert terminated and reward == 1.0, info["reward_info"]


def test_database_overlay_is_per_episode(env):
    order = first("pending")
    cancel = call("cancel_pending_order", order_id=order["order_id"], reason="no longer needed")
    read = call("get_order_details", order_id=order["order_id"])
    record = ("orders", order["order_id"])
    kit.check_overlay(env, SPLITS["test"][0], cancel, read, "pending", record)

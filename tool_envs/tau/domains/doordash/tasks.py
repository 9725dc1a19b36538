"""Seeded generator of food-delivery tasks: what a customer wants, and what a correct agent does.

A task is built from the seed-0 database in three layers:

- *parts*: one request about one order (cancel, change items, add items, move the delivery,
  refund items, give credit, ...), each with the gold tool calls a correct agent makes (the reads
  it needs, then the write), what the user knows and the facts the agent must state;
- *categories*: a part alone, parts combined (multi-step), or a request the policy refuses or
  hands to a human, together with the authentication calls every task starts with;
- *splits*: each split gets a fixed share of every category, and no task is in two splits.

Every draft is replayed through :class:`DoordashTools` on a fresh database before it is kept, so
every gold call of every shipped task succeeds. Tasks whose gold changes nothing and that require
no output (a do-nothing agent would pass them: transfers and refusals about someone else's
order) are kept to about 3% of a split.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tool_envs.tau.db import Record
from tool_envs.tau.domains.doordash.data import (
    CHANGEABLE_STATUSES,
    CITY_NAMES,
    CREDIT_LIMIT_30_DAYS,
    CREDIT_LIMIT_PER_ORDER,
    cents,
    city_index,
    delivered_minutes_ago,
    line_options,
    load_tables,
    make_line,
    minutes_late,
    random_address,
)
from tool_envs.tau.domains.doordash.tools import (
    DoordashTools,
    amount_paid,
    cancellation_fee,
    order_credits,
    recent_credits,
)
from tool_envs.tau.drafts import Draft, Identity, Part, TaskWriter, call
from tool_envs.tau.taskgen import TaskContext, TaskSource
from tool_envs.tau.tools import write_tool_names
from tool_envs.tau.wording import Opening, and_join
from tool_envs.tau.wording import money as _money

ENV_ID = "tool_envs/TauDoordash-v0"
DOMAIN_NAME = "doordash"
POLICY = Path(__file__).with_name("policy.md").read_text(encoding="utf-8")

WRITE_TOOLS = write_tool_names(DoordashTools)

# Share of each category in a split (normalised). The two "silent" categories (no write, no
# output: transfers and requests about another customer's order) are the only tasks a
# do-nothing agent passes; together they stay near 3%.
CATEGORY_WEIGHTS: dict[str, float] = {
    "cancel": 9,
    "cancel_two": 2,
    "modify_items": 9,
    "add_items": 8,
    "modify_and_add": 3,
    "address": 7,
    "refund": 11,
    "refund_partial": 4,
    "credit_late": 6,
    "credit_quality": 3,
    "credit_late_report": 5,
    "multi_step": 7,
    "declined": 2.5,
    "refuse_after_pickup": 5,
    "refuse_too_old": 2.5,
    "refuse_credit_limit": 2.5,
    "refuse_outside_area": 2,
    "refuse_other_customer": 1.2,
    "transfer": 2,
    "transfer_after_write": 2,
    "info": 5.5,
}

_TRAITS = (
    "You are friendly and relaxed and answer questions directly.",
    "You are hungry and in a hurry, so you keep your messages short.",
    "You are polite but not very good with apps, so you like clear explanations.",
    "You write casually, like in a text message.",
    "You care about the exact amounts and like to hear them.",
    "You are annoyed about what happened but you stay cooperative.",
    "You are cheerful and thank the agent often.",
    "You are a little distracted (you are at work) but answer when asked.",
)
_WRITER = TaskWriter(writes=WRITE_TOOLS, join_by_key={"order_id": " and "})
_opening = Opening(
    greetings=("Hi,", "Hello,", "Hi there,", "Hey,", "Good evening,"),
    wants=("I'd like to", "I want to", "I need to", "can you help me"),
)
_CANCEL_PHRASES = {
    "no_longer_needed": "you no longer need it (your plans changed)",
    "ordered_by_mistake": "you ordered it by mistake",
    "taking_too_long": "it is taking too long",
}
_CANCEL_SAY = {
    "no_longer_needed": "I don't need it anymore, my plans changed.",
    "ordered_by_mistake": "I ordered it by mistake.",
    "taking_too_long": "It's taking too long.",
}
_REFUND_QUESTION = " You want to know how much money you will get back."
_NEW_TOTAL = "What will my new total be?"
_REFUND_SAY = {
    "missing_item": "missing from the bag",
    "wrong_item": "not what you ordered (the restaurant sent the wrong dish)",
    "damaged_item": "damaged, spilled all over the bag",
}


def money(amount_cents: int) -> str:
    """An amount as a required output: '42.75', '42.7' or '42', so '42.70' and '$42.00' match."""
    return _money(amount_cents / 100)


def _num(amount_cents: int) -> str:
    return f"{amount_cents / 100:.2f}"


def _options_text(options: list[Record]) -> str:
    return "; ".join(f"{o['group']}: {o['name']}" for o in options)


def _line_text(line: Record, quantity: int | None = None) -> str:
    count = line["quantity"] if quantity is None else quantity
    options = f" ({_options_text(line['options'])})" if line["options"] else ""
    return f"{count} {line['name']}{options}"


def _address_text(address: Mapping[str, str]) -> str:
    unit = f", {address['unit']}" if address["unit"] else ""
    return f"{address['street']}{unit}, {address['city']}, {address['state']} {address['zip']}"


def _address_args(address: Mapping[str, str]) -> dict[str, str]:
    return {key: address[key] for key in ("street", "unit", "city", "state", "zip")}


def _clock(text: str) -> str:
    return text.split("T")[1][:5]


# --------------------------------------------------------------------------- context


class _Context(TaskContext):
    """The database and the order lists the generator draws from (built once per generation)."""

    tools_class = DoordashTools

    def __init__(self, tables: Mapping[str, Mapping[str, Record]]):
        super().__init__(tables)
        self.customers: dict[str, Record] = dict(tables["customers"])
        self.orders: dict[str, Record] = dict(tables["orders"])
        self.restaurants: dict[str, Record] = dict(tables["restaurants"])
        self.dashers: dict[str, Record] = dict(tables["dashers"])
        self.groups: dict[str, list[str]] = {}
        for order_id, order in self.orders.items():
            for group in _groups_of(order):
                self.groups.setdefault(group, []).append(order_id)

    def pick(self, rng: random.Random, group: str) -> Record | None:
        found = self.groups.get(group, [])
        return self.orders[rng.choice(found)] if found else None

    def customer_of(self, order: Record) -> Record:
        return self.customers[order["customer_id"]]

    def orders_of(self, customer: Record, group: str, exclude: str = "") -> list[Record]:
        return [
            self.orders[o]
            for o in customer["orders"]
            if o != exclude and group in _groups_of(self.orders[o])
        ]

    def menu(self, order: Record) -> dict[str, Record]:
        return self.restaurants[order["restaurant_id"]]["menu"]


def _groups_of(order: Record) -> list[str]:
    """The generator's names for what can be asked about an order."""
    status = order["status"]
    groups = [status]
    if status in CHANGEABLE_STATUSES:
        groups.append("changeable")
    if status in ("placed", "confirmed", "preparing", "picked_up"):
        groups.append("active")
    if status == "delivered":
        age = delivered_minutes_ago(order)
        if age < 22 * 60:
            groups.append("recent")
        if age < 6.5 * 24 * 60:
            groups.append("week")
            if (minutes_late(order) or 0) >= 20:
                groups.append("late_week")
        if 26 * 60 < age < 6.5 * 24 * 60:
            groups.append("late_report")
        if age > 7.5 * 24 * 60:
            groups.append("old")
    return groups


def _credit_room(customer: Record, order_id: str) -> int:
    """Cents of credit the limits still allow for this order."""
    return max(
        0,
        min(
            cents(CREDIT_LIMIT_PER_ORDER) - order_credits(customer, order_id),
            cents(CREDIT_LIMIT_30_DAYS) - recent_credits(customer),
        ),
    )


def _credited_for(customer: Record, order_id: str, reason: str) -> bool:
    return any(
        c["order_id"] == order_id and c["reason"] == reason for c in customer["credit_history"]
    )


# --------------------------------------------------------------------------- parts


@dataclass
class _Part(Part):
    """A request that may add credit or cancel with a reason code."""

    credit: int = 0  # cents of credit this part adds to the customer's balance
    reason_code: str = ""  # the cancel reason the gold uses, for parts that cancel


def _cancel(rng: random.Random, ctx: _Context, order: Record, output: bool) -> _Part:
    reason = rng.choice(list(_CANCEL_PHRASES))
    if order["status"] == "placed" and reason == "taking_too_long":
        reason = "no_longer_needed"
    fee = cancellation_fee(order)
    refund = amount_paid(order) - fee
    actions = [call("get_order_details", order_id=order["order_id"])]
    instruction = (
        f"You want to cancel your order {order['order_id']} from {order['restaurant_name']} "
        f"because {_CANCEL_PHRASES[reason]}."
    )
    outputs = []
    if fee:
        actions.append(call("calculate", expression=f"{_num(amount_paid(order))} - {_num(fee)}"))
        instruction += " You accept the cancellation fee."
    if output or fee:
        # With a fee the policy has the agent state the refund before cancelling.
        outputs = [money(refund)]
        instruction += _REFUND_QUESTION
    actions.append(call("cancel_order", order_id=order["order_id"], reason=reason))
    return _Part(
        actions=actions,
        info={"order_id": order["order_id"], "reason": _CANCEL_SAY[reason]},
        instruction=instruction,
        reason_code=reason,
        ask=rng.choice(
            (
                f"cancel my order from {order['restaurant_name']}",
                "cancel an order I just placed",
                "cancel my food order",
            )
        ),
        outputs=outputs,
        tags=["cancel_order"],
        question="How much will I get back?" if outputs else "",
    )


def _new_options(rng: random.Random, item: Record, line: Record) -> tuple[list[str], str] | None:
    """Another valid choice of options for a line, with how the customer would say it."""
    current = [o["option_id"] for o in line["options"]]
    moves = []
    for group in item["option_groups"]:
        ids = [o["option_id"] for o in group["options"]]
        chosen = [o for o in current if o in ids]
        names = {o["option_id"]: o["name"] for o in group["options"]}
        if group["min_select"] == group["max_select"] == 1 and chosen:
            for other in ids:
                if other != chosen[0]:
                    text = (
                        f"change the {group['name'].lower()} of the {line['name']} from "
                        f"{names[chosen[0]]} to {names[other]}"
                    )
                    moves.append(([other if o == chosen[0] else o for o in current], text))
            continue
        if len(chosen) < group["max_select"]:
            for other in ids:
                if other not in chosen:
                    text = f"add {names[other]} to the {line['name']}"
                    moves.append(([*current, other], text))
        if len(chosen) > group["min_select"]:
            for gone in chosen:
                text = f"take the {names[gone]} off the {line['name']}"
                moves.append(([o for o in current if o != gone], text))
    return rng.choice(moves) if moves else None


def _modify(
    rng: random.Random, ctx: _Context, order: Record, count: int, output: bool
) -> _Part | None:
    menu = ctx.menu(order)
    if len(order["items"]) < count:
        return None
    lines = sorted(rng.sample(order["items"], count), key=order["items"].index)
    changes, texts, old_cents, new_cents = [], [], 0, 0
    for line in lines:
        item = menu[line["item_id"]]
        kinds = ["quantity", "options", "options"]
        if len(order["items"]) > count:
            kinds.append("remove")
        kind = rng.choice(kinds)
        options = _new_options(rng, item, line) if kind == "options" else None
        if kind == "options" and options is None:
            kind = "quantity"
        if kind == "quantity":
            quantity = rng.choice([q for q in (1, 2, 3) if q != line["quantity"]])
            changes.append({"line_id": line["line_id"], "quantity": quantity})
            texts.append(f"make it {quantity} {line['name']} instead of {line['quantity']}")
            new = make_line(line["line_id"], item, quantity, line["options"])
        elif kind == "remove":
            changes.append({"line_id": line["line_id"], "quantity": 0})
            texts.append(f"remove the {line['name']} completely")
            new = None
        else:
            option_ids, text = options
            changes.append({"line_id": line["line_id"], "option_ids": option_ids})
            texts.append(text)
            new = make_line(line["line_id"], item, line["quantity"], line_options(item, option_ids))
        old_cents += cents(line["line_total"])
        new_cents += cents(new["line_total"]) if new else 0
    if new_cents == old_cents and output:
        output = False
    total = cents(order["total"])
    new_total = total + new_cents - old_cents
    actions = [
        call("get_order_details", order_id=order["order_id"]),
        call("get_menu", restaurant_id=order["restaurant_id"]),
    ]
    outputs = []
    instruction = (
        f"In your order {order['order_id']} from {order['restaurant_name']}, you want to "
        f"{and_join(texts)}."
    )
    if output:
        actions.append(
            call("calculate", expression=f"{_num(total)} - {_num(old_cents)} + {_num(new_cents)}")
        )
        outputs = [money(new_total)]
        instruction += " You want to know the new order total."
    actions.append(call("modify_order_items", order_id=order["order_id"], changes=changes))
    return _Part(
        actions=actions,
        info={"order_id": order["order_id"], "changes": "; ".join(texts)},
        instruction=instruction,
        ask=rng.choice(
            (
                f"change something in my {order['restaurant_name']} order",
                "make a change to the food I ordered",
                "fix a couple of things in the order I just placed"
                if count > 1
                else "fix something in the order I just placed",
            )
        ),
        outputs=outputs,
        tags=["modify_order_items"] + (["multi_item"] if count > 1 else []),
        question=_NEW_TOTAL if outputs else "",
    )


def _choose_options(rng: random.Random, item: Record) -> list[str]:
    chosen = []
    for group in item["option_groups"]:
        count = group["min_select"]
        if count < group["max_select"] and rng.random() < 0.4:
            count += 1
        chosen += [o["option_id"] for o in rng.sample(group["options"], count)]
    return chosen


def _add(
    rng: random.Random, ctx: _Context, order: Record, count: int, output: bool
) -> _Part | None:
    menu = ctx.menu(order)
    present = {line["item_id"] for line in order["items"]}
    candidates = [i for i in menu.values() if i["available"] and i["item_id"] not in present]
    if len(candidates) < count:
        return None
    position = list(menu)
    items = sorted(rng.sample(candidates, count), key=lambda i: position.index(i["item_id"]))
    arguments, texts, added = [], [], 0
    for item in items:
        quantity = rng.choices((1, 2), weights=(75, 25))[0]
        option_ids = _choose_options(rng, item)
        arguments.append(
            {"item_id": item["item_id"], "quantity": quantity, "option_ids": option_ids}
        )
        line = make_line("", item, quantity, line_options(item, option_ids))
        texts.append(_line_text(line))
        added += cents(line["line_total"])
    total = cents(order["total"])
    actions = [
        call("get_order_details", order_id=order["order_id"]),
        call("get_menu", restaurant_id=order["restaurant_id"]),
    ]
    outputs = []
    instruction = (
        f"You want to add {and_join(texts)} to your order {order['order_id']} from "
        f"{order['restaurant_name']}."
    )
    instruction += " You do not want any other options or extras on them."
    if output:
        actions.append(call("calculate", expression=f"{_num(total)} + {_num(added)}"))
        outputs = [money(total + added)]
        instruction += " You want to know the new order total."
    actions.append(call("add_order_items", order_id=order["order_id"], items=arguments))
    return _Part(
        actions=actions,
        info={"order_id": order["order_id"], "new_items": and_join(texts)},
        instruction=instruction,
        ask=rng.choice(
            (
                f"add something to my {order['restaurant_name']} order",
                "add a few things to the order I just placed"
                if count > 1
                else "add one more thing to my order",
                "add to my food order before it's picked up",
            )
        ),
        outputs=outputs,
        tags=["add_order_items"] + (["multi_item"] if count > 1 else []),
        question=_NEW_TOTAL if outputs else "",
    )


def _address(rng: random.Random, ctx: _Context, order: Record) -> _Part | None:
    customer = ctx.customer_of(order)
    current = order["delivery_address"]
    saved = [
        a
        for a in customer["addresses"].values()
        if _address_args(a) != current and a["city"] == current["city"]
    ]
    if saved and rng.random() < 0.5:
        chosen = rng.choice(saved)
        address = _address_args(chosen)
        said = f"my saved {chosen['label']} address ({_address_text(address)})"
        instruction = (
            f"You want your order {order['order_id']} from {order['restaurant_name']} "
            f"delivered to your saved {chosen['label']} address instead: "
            f"{_address_text(address)}."
        )
    else:
        address = random_address(rng, city_index(current["city"]))
        said = _address_text(address)
        instruction = (
            f"You want your order {order['order_id']} from {order['restaurant_name']} "
            f"delivered to {said} instead (you are not at home)."
        )
    return _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call("update_delivery_address", order_id=order["order_id"], **address),
        ],
        info={"order_id": order["order_id"], "new_address": said},
        instruction=instruction,
        ask=rng.choice(
            (
                "change where my order is being delivered",
                f"send my {order['restaurant_name']} order to a different address",
                "update the delivery address on my order",
            )
        ),
        tags=["update_delivery_address"],
    )


def _refundable(order: Record) -> list[tuple[Record, int]]:
    """Lines of a delivered order with units not yet refunded, and how many."""
    refunded: dict[str, int] = {}
    for refund in order["refunds"]:
        for entry in refund["items"]:
            refunded[entry["line_id"]] = refunded.get(entry["line_id"], 0) + entry["quantity"]
    found = []
    for line in order["items"]:
        left = line["quantity"] - refunded.get(line["line_id"], 0)
        if left > 0:
            found.append((line, left))
    return found


def _affected(
    rng: random.Random, order: Record, count: int, reason: str
) -> list[tuple[Record, int]] | None:
    """``count`` lines hit by the problem (with a photo where the reason needs one)."""
    lines = _refundable(order)
    if reason != "missing_item":
        lines = [
            (line, left) for line, left in lines if line["line_id"] in order["customer_photos"]
        ]
    if len(lines) < count:
        return None
    chosen = sorted(rng.sample(lines, count), key=lambda pair: order["items"].index(pair[0]))
    return [(line, rng.randint(1, left)) for line, left in chosen]


def _items_said(affected: list[tuple[Record, int]]) -> str:
    texts = []
    for line, quantity in affected:
        if quantity == line["quantity"]:
            texts.append(
                f"the {_line_text(line)}" if line["quantity"] > 1 else f"the {line['name']}"
            )
        else:
            texts.append(f"{quantity} of the {line['quantity']} {line['name']}")
    return and_join(texts)


def _refund(
    rng: random.Random,
    ctx: _Context,
    order: Record,
    count: int,
    output: bool,
    reason: str | None = None,
) -> _Part | None:
    reason = (
        reason
        or rng.choices(("missing_item", "wrong_item", "damaged_item"), weights=(60, 25, 15))[0]
    )
    affected = _affected(rng, order, count, reason)
    if affected is None:
        return None
    amounts = [cents(line["unit_price"]) * quantity for line, quantity in affected]
    actions = [call("get_order_details", order_id=order["order_id"])]
    outputs = []
    if output or count > 1:
        if count > 1:
            actions.append(call("calculate", expression=" + ".join(_num(a) for a in amounts)))
        outputs = [money(sum(amounts))]
    items = [{"line_id": line["line_id"], "quantity": quantity} for line, quantity in affected]
    actions.append(call("issue_refund", order_id=order["order_id"], items=items, reason=reason))
    said = _items_said(affected)
    problem = _REFUND_SAY[reason]
    instruction = (
        f"Your order {order['order_id']} from {order['restaurant_name']} arrived earlier today. "
        f"What went wrong: {said} - {problem}."
    )
    if reason != "missing_item":
        instruction += " You already sent a photo of it through the app."
    instruction += " You want a refund for it."
    if outputs:
        instruction += " You want to know how much will be refunded."
    info = {"order_id": order["order_id"], "items": said, "issue": problem}
    if reason != "missing_item":
        info["photo"] = "Yes, I sent a photo through the app."
    return _Part(
        actions=actions,
        info=info,
        instruction=instruction,
        ask=rng.choice(
            {
                "missing_item": (
                    f"get a refund because part of my {order['restaurant_name']} order was missing",
                    "report missing food from tonight's delivery",
                ),
                "wrong_item": (
                    f"report that {order['restaurant_name']} sent me the wrong food",
                    "get a refund for an item that was wrong",
                ),
                "damaged_item": (
                    "report food that arrived spilled",
                    f"get a refund because something from {order['restaurant_name']} was ruined",
                ),
            }[reason]
        ),
        outputs=outputs,
        tags=["issue_refund"] + (["multi_item"] if count > 1 else []),
        question="How much will I be refunded?" if outputs else "",
    )


def _refund_partial(rng: random.Random, ctx: _Context, order: Record) -> _Part | None:
    """Two problems: one refundable, one wrong item without a photo (refused)."""
    lines = _refundable(order)
    unproven = [(ln, n) for ln, n in lines if ln["line_id"] not in order["customer_photos"]]
    if len(lines) < 2 or not unproven:
        return None
    bad_line, _ = rng.choice(unproven)
    rest = [(ln, n) for ln, n in lines if ln is not bad_line]
    reason = "missing_item"
    photographed = [(ln, n) for ln, n in rest if ln["line_id"] in order["customer_photos"]]
    if photographed and rng.random() < 0.5:
        rest, reason = photographed, rng.choice(("wrong_item", "damaged_item"))
    line, left = rng.choice(rest)
    quantity = rng.randint(1, left)
    amount = cents(line["unit_price"]) * quantity
    refund_said = _items_said([(line, quantity)])
    bad_said = f"the {bad_line['name']}"
    actions = [
        call("get_order_details", order_id=order["order_id"]),
        call(
            "issue_refund",
            order_id=order["order_id"],
            items=[{"line_id": line["line_id"], "quantity": quantity}],
            reason=reason,
        ),
    ]
    instruction = (
        f"Your order {order['order_id']} from {order['restaurant_name']} arrived earlier today "
        f"with two problems: {refund_said} - {_REFUND_SAY[reason]}"
        + (" (you sent a photo of it through the app)" if reason != "missing_item" else "")
        + f"; and {bad_said} was the wrong dish, but you did not take or send a photo of it. "
        "You want refunds for both. If the agent says the wrong dish needs a photo sent through "
        "the app first, accept that. You want to know how much will be refunded."
    )
    return _Part(
        actions=actions,
        info={
            "order_id": order["order_id"],
            "items": f"{refund_said} ({_REFUND_SAY[reason]}) and {bad_said} (wrong dish)",
            "issue": f"{_REFUND_SAY[reason]}, and {bad_said} was the wrong dish",
            "photo": "I didn't send a photo of the wrong dish."
            + (" I did send one of the other item." if reason != "missing_item" else ""),
        },
        instruction=instruction,
        ask=f"sort out a couple of problems with my {order['restaurant_name']} delivery",
        outputs=[money(amount)],
        tags=["issue_refund", "refusal"],
    )


def _credit(ctx: _Context, order: Record, reason: str, base_cents: int) -> tuple[int, int] | None:
    """(credit, new balance) in cents for a credit of ``base_cents``, within the limits."""
    customer = ctx.customer_of(order)
    if _credited_for(customer, order["order_id"], reason):
        return None
    room = _credit_room(customer, order["order_id"])
    amount = min(base_cents, room)
    if amount <= 0:
        return None
    balance = cents(customer["credits_balance"]) + amount
    return amount, balance


def _late_credit(rng: random.Random, ctx: _Context, order: Record) -> _Part | None:
    late = minutes_late(order) or 0
    if late < 20 or delivered_minutes_ago(order) > 6.5 * 24 * 60:
        return None
    entitled = 1000 if late >= 45 else 500
    found = _credit(ctx, order, "late_delivery", entitled)
    if found is None:
        return None
    amount, balance = found
    customer = ctx.customer_of(order)
    actions = [
        call("get_order_details", order_id=order["order_id"]),
        call("track_delivery", order_id=order["order_id"]),
        call(
            "calculate", expression=f"{_num(cents(customer['credits_balance']))} + {_num(amount)}"
        ),
        call(
            "issue_credit", order_id=order["order_id"], amount=amount / 100, reason="late_delivery"
        ),
    ]
    outputs = list(
        dict.fromkeys([money(amount), money(balance)] if amount < entitled else [money(balance)])
    )
    return _Part(
        actions=actions,
        info={"order_id": order["order_id"], "issue": f"the food came about {late} minutes late"},
        instruction=(
            f"Your order {order['order_id']} from {order['restaurant_name']} arrived much later "
            "than the time the app promised. You want some compensation. You accept account "
            "credit. You want to know your credit balance afterwards."
        ),
        ask=rng.choice(
            (
                f"complain that my {order['restaurant_name']} delivery was really late",
                "get something back for a delivery that came way too late",
            )
        ),
        outputs=outputs,
        tags=["issue_credit"],
        credit=amount,
    )


def _quality_credit(rng: random.Random, ctx: _Context, order: Record) -> _Part | None:
    if (minutes_late(order) or 0) >= 20:
        return None  # keep the complaint to one problem: this order was also late
    found = _credit(ctx, order, "poor_food_quality", 500)
    if found is None:
        return None
    amount, balance = found
    customer = ctx.customer_of(order)
    dish = rng.choice(order["items"])["name"]
    return _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call(
                "calculate",
                expression=f"{_num(cents(customer['credits_balance']))} + {_num(amount)}",
            ),
            call(
                "issue_credit",
                order_id=order["order_id"],
                amount=amount / 100,
                reason="poor_food_quality",
            ),
        ],
        info={"order_id": order["order_id"], "issue": f"the {dish} arrived cold and soggy"},
        instruction=(
            f"The {dish} in your order {order['order_id']} from {order['restaurant_name']} "
            "arrived cold and soggy. Nothing was missing and you did not take photos. You want "
            "some compensation and accept account credit. You want to know your credit balance "
            "afterwards."
        ),
        ask=rng.choice(
            (
                f"complain that my food from {order['restaurant_name']} arrived cold",
                "report that my food was cold and soggy when it came",
            )
        ),
        outputs=list(dict.fromkeys([money(balance)] + ([money(amount)] if amount < 500 else []))),
        tags=["issue_credit"],
        credit=amount,
    )


def _late_report_credit(rng: random.Random, ctx: _Context, order: Record) -> _Part | None:
    reason = rng.choices(("missing_item", "wrong_item"), weights=(70, 30))[0]
    affected = _affected(rng, order, rng.choices((1, 2), weights=(75, 25))[0], reason)
    if affected is None:
        return None
    value = sum(cents(line["unit_price"]) * quantity for line, quantity in affected)
    found = _credit(ctx, order, "late_item_report", value)
    if found is None:
        return None
    amount, balance = found
    customer = ctx.customer_of(order)
    said = _items_said(affected)
    problem = _REFUND_SAY[reason]
    day = order["timeline"]["delivered"][:10]
    actions = [call("get_order_details", order_id=order["order_id"])]
    if len(affected) > 1:
        expression = " + ".join(_num(cents(ln["unit_price"]) * q) for ln, q in affected)
        actions.append(call("calculate", expression=expression))
    actions += [
        call(
            "calculate", expression=f"{_num(cents(customer['credits_balance']))} + {_num(amount)}"
        ),
        call(
            "issue_credit",
            order_id=order["order_id"],
            amount=amount / 100,
            reason="late_item_report",
        ),
    ]
    instruction = (
        f"Your order {order['order_id']} from {order['restaurant_name']} was delivered on {day}. "
        f"What went wrong: {said} - {problem}. You only now found time to report it."
    )
    if reason != "missing_item":
        instruction += " You sent a photo of it through the app on the day."
    instruction += (
        " You would like a refund, but accept account credit if that is what the agent can "
        "offer. You want to know how much credit you get and your balance afterwards."
    )
    info = {"order_id": order["order_id"], "items": said, "issue": problem}
    if reason != "missing_item":
        info["photo"] = "Yes, I sent a photo through the app."
    return _Part(
        actions=actions,
        info=info,
        instruction=instruction,
        ask=rng.choice(
            (
                f"report a problem with an order from {order['restaurant_name']} a few days ago",
                "report something that was wrong with a delivery earlier this week",
            )
        ),
        outputs=list(dict.fromkeys([money(amount), money(balance)])),
        tags=["issue_credit"] + (["multi_item"] if len(affected) > 1 else []),
        credit=amount,
    )


# --------------------------------------------------------------------------- categories


def _one(
    part: _Part | None, ctx: _Context, order: Record | None, rng: random.Random
) -> Draft | None:
    """A draft of one part about one order of the order's customer."""
    if part is None or order is None:
        return None
    return Draft(
        subject=ctx.customer_of(order), parts=[part], reason_for_call=_opening.asking(rng, [part])
    )


def _single(rng: random.Random, ctx: _Context, category: str) -> Draft | None:
    output = rng.random() < 0.6
    if category == "cancel":
        order = ctx.pick(rng, "changeable")
        return _one(_cancel(rng, ctx, order, output), ctx, order, rng)
    if category == "modify_items":
        order = ctx.pick(rng, "changeable")
        count = rng.choices((1, 2), weights=(65, 35))[0]
        return _one(_modify(rng, ctx, order, count, output), ctx, order, rng)
    if category == "add_items":
        order = ctx.pick(rng, "changeable")
        count = rng.choices((1, 2), weights=(65, 35))[0]
        return _one(_add(rng, ctx, order, count, output), ctx, order, rng)
    if category == "address":
        order = ctx.pick(rng, "changeable")
        return _one(_address(rng, ctx, order), ctx, order, rng)
    if category == "refund":
        order = ctx.pick(rng, "recent")
        count = rng.choices((1, 2, 3), weights=(60, 30, 10))[0]
        return _one(_refund(rng, ctx, order, count, output or rng.random() < 0.5), ctx, order, rng)
    if category == "refund_partial":
        order = ctx.pick(rng, "recent")
        return _one(_refund_partial(rng, ctx, order), ctx, order, rng)
    if category == "credit_late":
        order = ctx.pick(rng, "late_week")
        return _one(_late_credit(rng, ctx, order), ctx, order, rng)
    if category == "credit_quality":
        order = ctx.pick(rng, "week")
        return _one(_quality_credit(rng, ctx, order), ctx, order, rng)
    if category == "credit_late_report":
        order = ctx.pick(rng, "late_report")
        return _one(_late_report_credit(rng, ctx, order), ctx, order, rng)
    raise ValueError(category)


def _cancel_two(rng: random.Random, ctx: _Context) -> Draft | None:
    first = ctx.pick(rng, "changeable")
    customer = ctx.customer_of(first)
    others = ctx.orders_of(customer, "changeable", exclude=first["order_id"])
    if not others:
        return None
    second = rng.choice(others)
    parts = [_cancel(rng, ctx, first, False), _cancel(rng, ctx, second, False)]
    # Read both orders first: the agent states the total before the first cancellation.
    reads = [a for p in parts for a in p.actions if a["name"] != "cancel_order"]
    writes = [a for p in parts for a in p.actions if a["name"] == "cancel_order"]
    parts[0].actions, parts[1].actions = reads, writes
    refunds = [amount_paid(o) - cancellation_fee(o) for o in (first, second)]
    for part in parts:
        part.outputs, part.question = [], ""
        part.instruction = part.instruction.replace(_REFUND_QUESTION, "")
    return Draft(
        subject=customer,
        parts=parts,
        reason_for_call=_opening(
            rng, ["cancel both of the orders I have on the way"], "How much do I get back?"
        ),
        extra_instruction="You want to know the total amount refunded for both orders.",
        extra_actions=[call("calculate", expression=" + ".join(_num(r) for r in refunds))],
        extra_outputs=[money(sum(refunds))],
        tags=["multi_step"],
    )


def _modify_and_add(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, "changeable")
    modify = _modify(rng, ctx, order, 1, False)
    add = _add(rng, ctx, order, 1, False)
    if modify is None or add is None:
        return None
    modify.actions = modify.actions[:2] + modify.actions[-1:]
    add.actions = add.actions[-1:]  # the order and menu were already read
    add.instruction = add.instruction.replace(
        f"your order {order['order_id']} from {order['restaurant_name']}", "the same order"
    )
    # The new total covers both changes: the modified lines, then the added ones.
    changed = modify.actions[-1]["arguments"]["changes"][0]
    line = next(ln for ln in order["items"] if ln["line_id"] == changed["line_id"])
    menu = ctx.menu(order)
    item = menu[line["item_id"]]
    if changed.get("quantity") == 0:
        new_line_cents = 0
    else:
        options = (
            line_options(item, changed["option_ids"])
            if "option_ids" in changed
            else line["options"]
        )
        new_line_cents = cents(
            make_line("", item, changed.get("quantity", line["quantity"]), options)["line_total"]
        )
    added = add.actions[-1]["arguments"]["items"][0]
    added_item = menu[added["item_id"]]
    added_cents = cents(
        make_line("", added_item, added["quantity"], line_options(added_item, added["option_ids"]))[
            "line_total"
        ]
    )
    total = cents(order["total"]) - cents(line["line_total"]) + new_line_cents + added_cents
    expression = (
        f"{_num(cents(order['total']))} - {_num(cents(line['line_total']))} + "
        f"{_num(new_line_cents)} + {_num(added_cents)}"
    )
    return Draft(
        subject=ctx.customer_of(order),
        parts=[modify, add],
        reason_for_call=_opening(
            rng, [modify.ask, "add something to it"], "What will the new total be?"
        ),
        extra_instruction="You want to know the new order total after both changes.",
        extra_actions=[call("calculate", expression=expression)],
        extra_outputs=[money(total)],
        tags=["multi_step"],
    )


_COMBOS = ("cancel+refund", "add+address", "late+refund", "refund+eta", "modify+quality")


def _multi_step(rng: random.Random, ctx: _Context) -> Draft | None:
    combo = rng.choice(_COMBOS)
    if combo == "add+address":
        order = ctx.pick(rng, "changeable")
        add = _add(rng, ctx, order, rng.choice((1, 2)), rng.random() < 0.5)
        address = _address(rng, ctx, order)
        if add is None or address is None:
            return None
        address.actions = address.actions[1:]
        address.instruction = address.instruction.replace(
            f"Your order {order['order_id']} from {order['restaurant_name']}", "The order"
        )
        parts = [add, address]
        asks = [add.ask, "change where it is delivered"]
        customer = ctx.customer_of(order)
    elif combo == "late+refund":
        order = ctx.pick(rng, "recent")
        refund = _refund(rng, ctx, order, 1, True, "missing_item")
        late = _late_credit(rng, ctx, order)
        if refund is None or late is None:
            return None
        late.actions = late.actions[1:]
        parts = [refund, late]
        asks = [refund.ask, "it also came very late"]
        customer = ctx.customer_of(order)
    else:
        first_group, second_group = {
            "cancel+refund": ("changeable", "recent"),
            "refund+eta": ("recent", "active"),
            "modify+quality": ("changeable", "week"),
        }[combo]
        first = ctx.pick(rng, first_group)
        customer = ctx.customer_of(first)
        others = ctx.orders_of(customer, second_group, exclude=first["order_id"])
        if not others:
            return None
        second = rng.choice(others)
        if combo == "cancel+refund":
            parts = [
                _cancel(rng, ctx, first, rng.random() < 0.5),
                _refund(rng, ctx, second, 1, rng.random() < 0.5),
            ]
        elif combo == "modify+quality":
            parts = [
                _modify(rng, ctx, first, 1, rng.random() < 0.5),
                _quality_credit(rng, ctx, second),
            ]
        else:
            parts = [_refund(rng, ctx, first, 1, True), _eta(rng, ctx, second)]
        if any(part is None for part in parts):
            return None
        asks = [part.ask for part in parts]
    return Draft(
        subject=customer,
        parts=parts,
        reason_for_call=_opening.asking(rng, parts, asks),
        tags=["multi_step"],
    )


def _eta(rng: random.Random, ctx: _Context, order: Record) -> _Part:
    return _Part(
        actions=[call("track_delivery", order_id=order["order_id"])],
        info={"order_id": order["order_id"]},
        instruction=(
            f"You want to know when your order {order['order_id']} from "
            f"{order['restaurant_name']} will arrive."
        ),
        ask=rng.choice(
            (
                f"know when my {order['restaurant_name']} order will get here",
                "find out where my food is",
            )
        ),
        outputs=[_clock(order["eta"])],
        tags=["info"],
    )


def _declined(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, rng.choice(("confirmed", "preparing")))
    part = _cancel(rng, ctx, order, True)
    part.actions = part.actions[:-1]  # the customer declines: no write
    part.tags = []
    fee = cancellation_fee(order)
    part.outputs = [money(fee), *part.outputs]
    part.instruction = (
        f"You are thinking of cancelling your order {order['order_id']} from "
        f"{order['restaurant_name']} because {_CANCEL_PHRASES[part.reason_code]}, but "
        "first you want to know what it would cost and how much you would get back. Once you "
        "hear that there is a cancellation fee you change your mind: when asked to confirm, say "
        "no and keep the order."
    )
    return Draft(
        subject=ctx.customer_of(order),
        parts=[part],
        reason_for_call=_opening(rng, [f"maybe {part.ask}"], "Would it cost me anything?"),
        tags=["declined"],
        confirm=False,
    )


_PICKUP_REQUESTS = (
    ("cancel", "cancel my order from {name}", "cancel it"),
    ("change", "change an item in my {name} order", "change one of the dishes"),
    ("add", "add a drink to my {name} order", "add a drink to it"),
    ("address", "change the delivery address of my {name} order", "send it somewhere else"),
)


def _refuse_after_pickup(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, "picked_up")
    _, ask, want = rng.choice(_PICKUP_REQUESTS)
    name = order["restaurant_name"]
    part = _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call("track_delivery", order_id=order["order_id"]),
        ],
        info={"order_id": order["order_id"]},
        instruction=(
            f"About your order {order['order_id']} from {name}: you want to {want}. If the "
            "agent explains that this is no longer possible because the dasher already has the "
            "food, accept it; you would then like to know when it will arrive."
        ),
        ask=ask.format(name=name),
        outputs=[_clock(order["eta"])],
        tags=["refusal"],
    )
    return _one(part, ctx, order, rng)


def _refuse_too_old(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, "old")
    line = rng.choice(order["items"])
    day = order["timeline"]["delivered"][:10]
    part = _Part(
        actions=[call("get_order_details", order_id=order["order_id"])],
        info={
            "order_id": order["order_id"],
            "items": f"the {line['name']}",
            "issue": "it was missing from the bag",
        },
        instruction=(
            f"Your order {order['order_id']} from {order['restaurant_name']} was missing the "
            f"{line['name']}; you forgot to report it until now. You want a refund or credit. "
            "If the agent explains it is too late, accept it and ask when the order was "
            "delivered."
        ),
        ask=f"report that my {order['restaurant_name']} order was missing something",
        outputs=[day],
        tags=["refusal"],
    )
    return _one(part, ctx, order, rng)


def _refuse_credit_limit(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, "week")
    customer = ctx.customer_of(order)
    if _credit_room(customer, order["order_id"]) > 0:
        return None
    per_order = order_credits(customer, order["order_id"])
    late = minutes_late(order) or 0
    if late >= 20 and not _credited_for(customer, order["order_id"], "late_delivery"):
        issue, actions = f"the food came about {late} minutes late", ["track_delivery"]
    elif not _credited_for(customer, order["order_id"], "poor_food_quality"):
        issue, actions = "the food arrived cold", []
    else:
        return None
    if per_order >= cents(CREDIT_LIMIT_PER_ORDER):
        output, limit = money(per_order), "for that order"
    else:
        output, limit = money(recent_credits(customer)), "in the last 30 days"
    part = _Part(
        actions=[call("get_order_details", order_id=order["order_id"])]
        + [call(name, order_id=order["order_id"]) for name in actions],
        info={"order_id": order["order_id"], "issue": issue},
        instruction=(
            f"About your order {order['order_id']} from {order['restaurant_name']}: {issue}. "
            "You want some account credit as compensation. If the agent explains that you have "
            f"reached the credit limit, accept it and ask how much credit you got {limit}."
        ),
        ask=f"get some credit because my {order['restaurant_name']} order was disappointing",
        outputs=[output],
        tags=["refusal"],
    )
    return _one(part, ctx, order, rng)


def _refuse_outside_area(rng: random.Random, ctx: _Context) -> Draft | None:
    order = ctx.pick(rng, "changeable")
    restaurant = ctx.restaurants[order["restaurant_id"]]
    city = restaurant["address"]["city"]
    elsewhere = rng.choice([c for c in CITY_NAMES if c != city])
    address = random_address(rng, city_index(elsewhere))
    part = _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call("get_restaurant_details", restaurant_id=order["restaurant_id"]),
        ],
        info={"order_id": order["order_id"], "new_address": _address_text(address)},
        instruction=(
            f"You want your order {order['order_id']} from {restaurant['name']} delivered to "
            f"{_address_text(address)}, where you are visiting friends. If the agent explains "
            "that the restaurant does not deliver there, accept it and keep the order as it is "
            "(do not cancel)."
        ),
        ask="have my order delivered to where I'm staying this weekend",
        outputs=[city],
        tags=["refusal"],
    )
    return _one(part, ctx, order, rng)


def _refuse_other_customer(rng: random.Random, ctx: _Context) -> Draft | None:
    customer = ctx.customers[rng.choice(list(ctx.customers))]
    order = ctx.pick(rng, "changeable")
    if order["customer_id"] == customer["customer_id"]:
        return None
    part = _Part(
        actions=[],
        info={"order_id": order["order_id"]},
        instruction=(
            f"You want to cancel order {order['order_id']}, which your roommate placed from "
            "their own account. If the agent refuses because it is not your order, accept it."
        ),
        ask="cancel an order my roommate placed",
    )
    return Draft(
        subject=customer, parts=[part], reason_for_call=_opening(rng, [part.ask]), tags=["refusal"]
    )


_HUMAN_ISSUES = (
    (
        "recent",
        "I think I'm having an allergic reaction to something in this order.",
        "allergic reaction after eating",
    ),
    (
        "recent",
        "The seal on the bag was broken and the food looks tampered with.",
        "possible food tampering",
    ),
    (
        "recent",
        "The app says it was delivered, but nothing ever arrived.",
        "order marked delivered that never arrived",
    ),
    (
        "week",
        "The dasher was aggressive and threatening when he dropped off my food.",
        "threatening dasher",
    ),
    ("week", "I got sick after eating this and want to report it.", "illness after eating"),
)


def _transfer_part(rng: random.Random, ctx: _Context, customer: Record) -> _Part | None:
    group, complaint, topic = rng.choice(_HUMAN_ISSUES)
    orders = ctx.orders_of(customer, group)
    if not orders:
        return None
    order = rng.choice(orders)
    summary = (
        f"Customer {customer['customer_id']} reports {topic} on order {order['order_id']} "
        f"from {order['restaurant_name']}; needs a human agent."
    )
    return _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call("transfer_to_human_agents", summary=summary),
        ],
        info={"order_id": order["order_id"]},
        instruction=(
            f"About your order {order['order_id']} from {order['restaurant_name']}, you tell the "
            f'agent: "{complaint}" You want to talk to a person about it.'
        ),
        ask=f"report something serious about an order. {complaint[:-1]}",
        tags=["transfer"],
    )


def _transfer(rng: random.Random, ctx: _Context) -> Draft | None:
    customer = ctx.customers[rng.choice(list(ctx.customers))]
    part = _transfer_part(rng, ctx, customer)
    if part is None:
        return None
    return Draft(subject=customer, parts=[part], reason_for_call=_opening(rng, [part.ask]))


def _transfer_after_write(rng: random.Random, ctx: _Context) -> Draft | None:
    kind = rng.choice(("cancel", "refund", "address"))
    first = ctx.pick(rng, "changeable" if kind != "refund" else "recent")
    customer = ctx.customer_of(first)
    if kind == "cancel":
        one = _cancel(rng, ctx, first, False)
    elif kind == "refund":
        one = _refund(rng, ctx, first, 1, False)
    else:
        one = _address(rng, ctx, first)
    two = _transfer_part(rng, ctx, customer)
    if one is None or two is None or two.info["order_id"] == first["order_id"]:
        return None
    # No required output: the gold episode ends with the transfer, before any report.
    one.actions = [a for a in one.actions if a["name"] != "calculate"]
    one.outputs, one.question = [], ""
    one.instruction = one.instruction.replace(_REFUND_QUESTION, "").replace(
        " You want to know how much will be refunded.", ""
    )
    two.ask = "then report something serious about another order"
    return Draft(
        subject=customer,
        parts=[one, two],
        reason_for_call=_opening(rng, [one.ask, two.ask]),
        tags=["multi_step"],
    )


def _info(rng: random.Random, ctx: _Context) -> Draft | None:
    kind = rng.choice(("eta", "eta", "balance", "total", "price"))
    if kind == "eta":
        order = ctx.pick(rng, "active")
        return _one(_eta(rng, ctx, order), ctx, order, rng)
    if kind == "balance":
        customer = ctx.customers[rng.choice(list(ctx.customers))]
        if customer["credits_balance"] <= 0:
            return None
        return Draft(
            subject=customer,
            parts=[],
            reason_for_call=_opening(rng, ["check how much credit I have on my account"]),
            extra_instruction="You want to know your account credit balance.",
            extra_outputs=[money(cents(customer["credits_balance"]))],
            tags=["info"],
        )
    if kind == "total":
        order = ctx.pick(rng, "delivered")
        part = _Part(
            actions=[call("get_order_details", order_id=order["order_id"])],
            info={"order_id": order["order_id"]},
            instruction=(
                f"You want to know the total you paid for your order {order['order_id']} from "
                f"{order['restaurant_name']}, including fees and tip."
            ),
            ask=f"check how much I paid in total for my {order['restaurant_name']} order",
            outputs=[money(cents(order["total"]))],
            tags=["info"],
        )
        return _one(part, ctx, order, rng)
    order = ctx.pick(rng, "changeable")
    plain = [i for i in ctx.menu(order).values() if not i["option_groups"] and i["available"]]
    if not plain:
        return None
    item = rng.choice(plain)
    part = _Part(
        actions=[
            call("get_order_details", order_id=order["order_id"]),
            call("get_menu", restaurant_id=order["restaurant_id"]),
        ],
        info={"order_id": order["order_id"]},
        instruction=(
            f"Before deciding whether to add it to your order {order['order_id']}, you want to "
            f"know the price of the {item['name']} at {order['restaurant_name']}. You do not "
            "want to add anything yet."
        ),
        ask=f"know how much the {item['name']} costs at {order['restaurant_name']}",
        outputs=[money(cents(item["price"]))],
        tags=["info"],
    )
    return _one(part, ctx, order, rng)


_CATEGORIES: dict[str, Callable[[random.Random, _Context], Draft | None]] = {
    "cancel": lambda rng, ctx: _single(rng, ctx, "cancel"),
    "cancel_two": _cancel_two,
    "modify_items": lambda rng, ctx: _single(rng, ctx, "modify_items"),
    "add_items": lambda rng, ctx: _single(rng, ctx, "add_items"),
    "modify_and_add": _modify_and_add,
    "address": lambda rng, ctx: _single(rng, ctx, "address"),
    "refund": lambda rng, ctx: _single(rng, ctx, "refund"),
    "refund_partial": lambda rng, ctx: _single(rng, ctx, "refund_partial"),
    "credit_late": lambda rng, ctx: _single(rng, ctx, "credit_late"),
    "credit_quality": lambda rng, ctx: _single(rng, ctx, "credit_quality"),
    "credit_late_report": lambda rng, ctx: _single(rng, ctx, "credit_late_report"),
    "multi_step": _multi_step,
    "declined": _declined,
    "refuse_after_pickup": _refuse_after_pickup,
    "refuse_too_old": _refuse_too_old,
    "refuse_credit_limit": _refuse_credit_limit,
    "refuse_outside_area": _refuse_outside_area,
    "refuse_other_customer": _refuse_other_customer,
    "transfer": _transfer,
    "transfer_after_write": _transfer_after_write,
    "info": _info,
}


# --------------------------------------------------------------------------- rows


def _authentication(rng: random.Random, customer: Record) -> Identity:
    """The lookup calls, what the user knows, and extra keywords for the scripted user."""
    customer_id = customer["customer_id"]
    if rng.random() < 0.65:
        actions = [call("find_customer_by_email", email=customer["email"])]
        known, keywords = {"email": customer["email"]}, {}
        how = "the email address of your account"
    else:
        actions = [call("find_customer_by_phone", phone=customer["phone"])]
        # Asked for an email, this customer answers with the phone number instead.
        known, keywords = {"phone": customer["phone"]}, {"phone": ["email", "e-mail"]}
        how = "your phone number (you do not remember which email the account uses)"
    return Identity(
        actions=[*actions, call("get_customer_details", customer_id=customer_id)],
        known=known,
        instruction=f"To identify yourself, give {how} when asked.",
        keywords=keywords,
    )


TASKS = TaskSource(
    domain=DOMAIN_NAME,
    env_id=ENV_ID,
    policy=POLICY,
    context=_Context,
    load_tables=load_tables,
    weights=CATEGORY_WEIGHTS,
    categories=_CATEGORIES,
    finish=_WRITER.named_finish(_authentication, _TRAITS),
    attempts_per_task=300,
)
"""Doordash's tasks; ``extra_info["tags"]`` names the write tools a task uses, ``multi_step``,
``multi_item``, ``refusal``, ``transfer``, ``info``, ``declined`` and ``outputs``."""

generate_splits = TASKS.generate
default_splits = TASKS.default_splits

"""Seeded generator of retail tasks: what a customer wants, and what a correct agent does.

A task is built from the seed-0 database in three layers:

- *parts*: one request about one order or profile (cancel, change an address, swap items,
  return, exchange, ...), each with the gold tool calls a correct agent makes (the reads it needs,
  then the write), what the user knows and the amounts the agent must state;
- *categories*: a part alone, parts combined (multi-step), or a request the policy refuses or
  hands to a human, together with the authentication calls every task starts with;
- *splits*: each split gets a fixed share of every category, and no task is in two splits.

Every draft is replayed through :class:`RetailTools` on a fresh database before it is kept, so
every gold call of every shipped task succeeds. Tasks whose gold changes nothing and that
require no output (a do-nothing agent would pass them) are kept to about 3% of a split.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from pathlib import Path

from tool_envs.tau.db import Record
from tool_envs.tau.domains.retail.data import CANCEL_REASONS, load_tables, random_address
from tool_envs.tau.domains.retail.tools import RetailTools
from tool_envs.tau.drafts import Action, Draft, Identity, Part, TaskWriter, call
from tool_envs.tau.taskgen import TaskContext, TaskSource
from tool_envs.tau.tools import write_tool_names
from tool_envs.tau.wording import Opening, and_join, money

ENV_ID = "tool_envs/TauRetail-v0"
DOMAIN_NAME = "retail"
POLICY = Path(__file__).with_name("policy.md").read_text(encoding="utf-8")

WRITE_TOOLS = write_tool_names(RetailTools)

# Share of each category in a split (normalised). The two "silent" categories (no write, no
# output) are the only tasks a do-nothing agent passes; together they stay near 3%.
CATEGORY_WEIGHTS: dict[str, float] = {
    "cancel": 11,
    "cancel_two": 4,
    "order_address": 7,
    "user_and_order_address": 4,
    "user_address": 5,
    "payment": 7,
    "items": 12,
    "return": 11,
    "exchange": 11,
    "multi_step": 8,
    "items_twice": 3,
    "refuse_status": 6,
    "refuse_other_user": 1.5,
    "transfer_after_write": 3,
    "transfer": 1.5,
    "info": 3.5,
    "declined": 2,
}

_TRAITS = (
    "You are calm and friendly and answer questions directly.",
    "You are busy and keep your messages short.",
    "You are polite but a little unsure about online shopping, so you like clear explanations.",
    "You write casually, like in a text message.",
    "You are detail-oriented and like to hear the exact amounts.",
    "You are mildly annoyed about the situation but cooperative.",
    "You are cheerful and thank the agent often.",
)
_WRITER = TaskWriter(writes=WRITE_TOOLS, join_by_key={"order_id": " and "})
_opening = Opening(greetings=("Hi,", "Hello,", "Hi there,", "Good morning,", "Hey,"))


def _num(amount: float) -> str:
    return f"{amount:.2f}"


def _options_text(options: Mapping[str, str]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in options.items())


def _item_text(item: Record) -> str:
    return f"the {item['name']} ({_options_text(item['options'])})"


def _items_text(items: list[Record]) -> str:
    texts = [_item_text(item) for item in items]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def _names_text(items: list[Record]) -> str:
    return and_join([item["name"] for item in items])


def _change_text(old: Record, new: Record) -> str:
    """What changes from an item to its replacement, e.g. 'color black instead of navy'."""
    changes = [
        f"{key} {value} instead of {old['options'][key]}"
        for key, value in new["options"].items()
        if old["options"].get(key) != value
    ]
    return f"the {old['name']} with " + " and ".join(changes) + " (everything else the same)"


_BRANDS = {
    "visa": "Visa card",
    "mastercard": "Mastercard",
    "amex": "American Express card",
    "discover": "Discover card",
}


def _method_text(method: Record) -> str:
    if method["source"] == "credit_card":
        return f"the {_BRANDS[method['brand']]} ending in {method['last_four']}"
    if method["source"] == "paypal":
        return "my PayPal account"
    return "my gift card"


def _address_text(address: Mapping[str, str]) -> str:
    line2 = f", {address['address2']}" if address["address2"] else ""
    return (
        f"{address['address1']}{line2}, {address['city']}, {address['state']} {address['zip']}, "
        f"{address['country']}"
    )


def _address_args(address: Mapping[str, str]) -> dict[str, str]:
    keys = ("address1", "address2", "city", "state", "country", "zip")
    return {key: address[key] for key in keys}


# --------------------------------------------------------------------------- context


class _Context(TaskContext):
    """The database and the indexes the generator draws from (built once per generation)."""

    tools_class = RetailTools

    def __init__(self, tables: Mapping[str, Mapping[str, Record]]):
        super().__init__(tables)
        self.users: dict[str, Record] = dict(tables["users"])
        self.orders: dict[str, Record] = dict(tables["orders"])
        self.products: dict[str, Record] = dict(tables["products"])
        self.by_status: dict[str, list[str]] = {}
        for order_id, order in self.orders.items():
            self.by_status.setdefault(order["status"], []).append(order_id)

    def user_orders(self, user_id: str, status: str) -> list[str]:
        return [o for o in self.users[user_id]["orders"] if self.orders[o]["status"] == status]

    def alternatives(self, item: Record) -> list[Record]:
        """Available variants of the item's product other than the item itself."""
        variants = self.products[item["product_id"]]["variants"]
        return [v for k, v in variants.items() if v["available"] and k != item["item_id"]]


# --------------------------------------------------------------------------- parts


def _cancel(rng: random.Random, ctx: _Context, order_id: str, output: bool) -> Part:
    order = ctx.orders[order_id]
    reason = rng.choice(CANCEL_REASONS)
    refund = order["payment_history"][0]["amount"]
    instruction = (
        f"You want to cancel order {order_id} ({_names_text(order['items'])}) because it is "
        f"'{reason}'."
    )
    if output:
        instruction += " You want to know how much money you will get back."
    return Part(
        actions=[
            call("get_order_details", order_id=order_id),
            call("cancel_pending_order", order_id=order_id, reason=reason),
        ],
        info={"order_id": order_id, "reason": reason},
        instruction=instruction,
        ask=rng.choice(
            (
                f"cancel my order with the {_names_text(order['items'])}",
                "cancel one of my orders",
                "cancel an order I placed",
            )
        ),
        outputs=[money(refund)] if output else [],
        tags=["cancel_pending_order"],
        question="How much will I get back?" if output else "",
    )


def _order_address(
    rng: random.Random, ctx: _Context, order_id: str, address: Mapping[str, str]
) -> Part:
    order = ctx.orders[order_id]
    return Part(
        actions=[
            call("get_order_details", order_id=order_id),
            call("modify_pending_order_address", order_id=order_id, **_address_args(address)),
        ],
        info={"order_id": order_id, "new_address": _address_text(address)},
        instruction=(
            f"You want order {order_id} ({_names_text(order['items'])}) shipped to "
            f"{_address_text(address)}."
        ),
        ask=rng.choice(
            (
                "change the shipping address of an order",
                f"have my {_names_text(order['items'])} order sent to a different address",
                "fix the delivery address on one of my orders",
            )
        ),
        tags=["modify_pending_order_address"],
    )


def _user_address(rng: random.Random, user: Record, address: Mapping[str, str]) -> Part:
    return Part(
        actions=[call("modify_user_address", user_id=user["user_id"], **_address_args(address))],
        info={"new_address": _address_text(address)},
        instruction=(
            f"You moved and want the default address of your account changed to "
            f"{_address_text(address)}."
        ),
        ask=rng.choice(
            (
                "update the address on my account because I moved",
                "change my default address",
                "put my new home address on my profile",
            )
        ),
        tags=["modify_user_address"],
    )


def _payment(rng: random.Random, ctx: _Context, order_id: str, output: bool) -> Part | None:
    order = ctx.orders[order_id]
    user = ctx.users[order["user_id"]]
    total = order["payment_history"][0]["amount"]
    current = order["payment_history"][0]["payment_method_id"]
    choices = [
        m
        for key, m in user["payment_methods"].items()
        if key != current and (m["source"] != "gift_card" or m["balance"] >= total)
    ]
    if len(order["payment_history"]) != 1 or not choices:
        return None
    method = rng.choice(choices)
    actions = [
        call("get_order_details", order_id=order_id),
        call("modify_pending_order_payment", order_id=order_id, payment_method_id=method["id"]),
    ]
    instruction = (
        f"You want to pay for order {order_id} ({_names_text(order['items'])}) with "
        f"{_method_text(method).replace('my ', 'your ')} instead."
    )
    outputs = []
    if output and method["source"] == "gift_card":
        left = round(method["balance"] - total, 2)
        if left > 0:
            expression = f"{_num(method['balance'])} - {_num(total)}"
            actions.insert(1, call("calculate", expression=expression))
            outputs = [money(left)]
            instruction += " You want to know how much will be left on your gift card."
    return Part(
        actions=actions,
        info={"order_id": order_id, "payment_method": _method_text(method)},
        instruction=instruction,
        ask=rng.choice(
            (
                "change how I'm paying for an order",
                "switch the payment method on an order I placed",
                f"pay for my {_names_text(order['items'])} order with a different method",
            )
        ),
        outputs=outputs,
        tags=["modify_pending_order_payment"],
        question="What balance will be left afterwards?" if outputs else "",
    )


def _swaps(
    rng: random.Random, ctx: _Context, order: Record, count: int
) -> list[tuple[Record, Record]] | None:
    """``count`` (item, new variant) pairs of distinct items of the order, or None."""
    swappable = [item for item in order["items"] if ctx.alternatives(item)]
    if len(swappable) < count:
        return None
    chosen = rng.sample(swappable, count)
    chosen.sort(key=lambda item: order["items"].index(item))
    return [(item, rng.choice(ctx.alternatives(item))) for item in chosen]


def _charge_method(
    rng: random.Random, user: Record, difference: float, exclude: str | None = None
) -> Record | None:
    methods = [
        m
        for m in user["payment_methods"].values()
        if m["id"] != exclude and (m["source"] != "gift_card" or m["balance"] >= difference)
    ]
    return rng.choice(methods) if methods else None


def _difference_call(pairs: list[tuple[Record, Record]]) -> Action:
    new = " + ".join(_num(variant["price"]) for _, variant in pairs)
    old = " + ".join(_num(item["price"]) for item, _ in pairs)
    if len(pairs) > 1:
        new, old = f"({new})", f"({old})"
    return call("calculate", expression=f"{new} - {old}")


def _swap_part(
    rng: random.Random,
    ctx: _Context,
    order_id: str,
    count: int,
    output: bool,
    tool_name: str,
) -> Part | None:
    """Modify the items of a pending order or exchange those of a delivered one."""
    order = ctx.orders[order_id]
    user = ctx.users[order["user_id"]]
    pairs = _swaps(rng, ctx, order, count)
    if pairs is None:
        return None
    difference = round(sum(v["price"] for _, v in pairs) - sum(i["price"] for i, _ in pairs), 2)
    method = _charge_method(rng, user, difference)
    if difference == 0 or method is None:
        return None
    actions = [call("get_order_details", order_id=order_id)]
    for product_id in dict.fromkeys(item["product_id"] for item, _ in pairs):
        actions.append(call("get_product_details", product_id=product_id))
    outputs = []
    if output:
        actions.append(_difference_call(pairs))
        outputs = [money(abs(difference))]
    actions.append(
        call(
            tool_name,
            order_id=order_id,
            item_ids=[item["item_id"] for item, _ in pairs],
            new_item_ids=[variant["item_id"] for _, variant in pairs],
            payment_method_id=method["id"],
        )
    )
    items = [item for item, _ in pairs]
    changes = "; ".join(_change_text(item, variant) for item, variant in pairs)
    verb = "change" if tool_name == "modify_pending_order_items" else "exchange"
    settle = "charged to" if difference > 0 else "refunded to"
    instruction = (
        f"In order {order_id} you want to {verb} {_items_text(items)}: you want {changes}. "
        f"Any price difference should be paid with or refunded to "
        f"{_method_text(method).replace('my ', 'your ')}."
    )
    if output:
        instruction += f" Ask how much will be {settle} you."
    if tool_name == "modify_pending_order_items":
        asks = (
            f"change the {_names_text(items)} in an order I haven't received yet",
            "change some items in an order I just placed",
            f"get a different version of the {_names_text(items)} I ordered",
        )
    else:
        asks = (
            f"exchange the {_names_text(items)} I received",
            f"swap the {_names_text(items)} from a delivered order for a different option",
            "exchange something I received",
        )
    tags = [tool_name] + (["multi_item"] if count > 1 else [])
    return Part(
        actions=actions,
        info={
            "order_id": order_id,
            "items": _items_text(items),
            "new_items": changes,
            "payment_method": _method_text(method),
        },
        instruction=instruction,
        ask=rng.choice(asks),
        outputs=outputs,
        tags=tags,
        question=f"How much will be {settle} me?" if output else "",
    )


def _return(
    rng: random.Random, ctx: _Context, order_id: str, count: int, output: bool
) -> Part | None:
    order = ctx.orders[order_id]
    user = ctx.users[order["user_id"]]
    if count > len(order["items"]):
        return None
    items = sorted(rng.sample(order["items"], count), key=lambda item: order["items"].index(item))
    original = order["payment_history"][0]["payment_method_id"]
    gift = [
        m
        for m in user["payment_methods"].values()
        if m["source"] == "gift_card" and m["id"] != original
    ]
    method = gift[0] if gift and rng.random() < 0.35 else user["payment_methods"][original]
    refund = round(sum(item["price"] for item in items), 2)
    actions = [call("get_order_details", order_id=order_id)]
    outputs = []
    if output:
        if count > 1:
            expression = " + ".join(_num(item["price"]) for item in items)
            actions.append(call("calculate", expression=expression))
        outputs = [money(refund)]
    actions.append(
        call(
            "return_delivered_order_items",
            order_id=order_id,
            item_ids=[item["item_id"] for item in items],
            payment_method_id=method["id"],
        )
    )
    where = "the original payment method" if method["id"] == original else _method_text(method)
    instruction = (
        f"You want to return {_items_text(items)} from order {order_id}, with the refund going "
        f"to {where.replace('my ', 'your ')}."
    )
    if output:
        instruction += " You want to know the total refund."
    return Part(
        actions=actions,
        info={"order_id": order_id, "items": _items_text(items), "payment_method": where},
        instruction=instruction,
        ask=rng.choice(
            (
                f"return the {_names_text(items)} I received",
                "return some things from a delivered order",
                f"send back the {_names_text(items)}",
            )
        ),
        outputs=outputs,
        tags=["return_delivered_order_items"] + (["multi_item"] if count > 1 else []),
        question="How much will the refund be in total?" if output else "",
    )


# --------------------------------------------------------------------------- categories


def _count(rng: random.Random, weights: tuple[int, ...]) -> int:
    return rng.choices(range(1, len(weights) + 1), weights=weights)[0]


def _pick(rng: random.Random, ctx: _Context, status: str) -> str | None:
    found = ctx.by_status.get(status, [])
    return rng.choice(found) if found else None


def _single(rng: random.Random, ctx: _Context, category: str) -> Draft | None:
    output = rng.random() < 0.6
    if category == "cancel":
        order_id = _pick(rng, ctx, "pending")
        part = _cancel(rng, ctx, order_id, output)
    elif category == "order_address":
        order_id = _pick(rng, ctx, "pending")
        order = ctx.orders[order_id]
        home = ctx.users[order["user_id"]]["address"]
        if order["address"] != home and rng.random() < 0.6:
            part = _order_address(rng, ctx, order_id, home)
            part.instruction += " That is the address on your account."
        else:
            part = _order_address(rng, ctx, order_id, random_address(rng))
    elif category == "payment":
        part = _payment(rng, ctx, _pick(rng, ctx, "pending"), output or rng.random() < 0.5)
    elif category == "items":
        count = _count(rng, (6, 3, 1))
        order_id = _pick(rng, ctx, "pending")
        part = _swap_part(rng, ctx, order_id, count, output, "modify_pending_order_items")
    elif category == "exchange":
        count = _count(rng, (7, 3))
        order_id = _pick(rng, ctx, "delivered")
        part = _swap_part(rng, ctx, order_id, count, output, "exchange_delivered_order_items")
    elif category == "return":
        order_id = _pick(rng, ctx, "delivered")
        count = _count(rng, (5, 3, 2))
        part = _return(rng, ctx, order_id, count, output or rng.random() < 0.3)
    else:
        raise ValueError(category)
    if part is None:
        return None
    user = ctx.users[ctx.orders[part.info["order_id"]]["user_id"]]
    return Draft(subject=user, parts=[part], reason_for_call=_opening.asking(rng, [part]))


def _cancel_two(rng: random.Random, ctx: _Context) -> Draft | None:
    user = ctx.users[ctx.orders[_pick(rng, ctx, "pending")]["user_id"]]
    pending = ctx.user_orders(user["user_id"], "pending")
    if len(pending) < 2:
        return None
    first, second = rng.sample(pending, 2)
    parts = [_cancel(rng, ctx, first, False), _cancel(rng, ctx, second, False)]
    # Read both orders first: the agent states the total before the first cancellation.
    parts[0].actions, parts[1].actions = (
        [parts[0].actions[0], parts[1].actions[0]],
        [parts[0].actions[1], parts[1].actions[1]],
    )
    amounts = [ctx.orders[o]["payment_history"][0]["amount"] for o in (first, second)]
    total = round(sum(amounts), 2)
    return Draft(
        subject=user,
        parts=parts,
        reason_for_call=_opening(
            rng, ["cancel two of my orders"], "How much will I get back in total?"
        ),
        extra_instruction="You want to know the total amount refunded for both orders.",
        extra_actions=[call("calculate", expression=" + ".join(_num(a) for a in amounts))],
        extra_outputs=[money(total)],
        tags=["multi_step"],
    )


def _user_and_order_address(rng: random.Random, ctx: _Context) -> Draft | None:
    order_id = _pick(rng, ctx, "pending")
    user = ctx.users[ctx.orders[order_id]["user_id"]]
    address = random_address(rng)
    parts = [_user_address(rng, user, address), _order_address(rng, ctx, order_id, address)]
    parts[1].instruction = f"Your pending order {order_id} should also go to the new address."
    return Draft(
        subject=user,
        parts=parts,
        reason_for_call=_opening(
            rng, ["update my address, both on my account and on an order that hasn't shipped"]
        ),
        tags=["multi_step"],
    )


def _user_address_only(rng: random.Random, ctx: _Context) -> Draft | None:
    user = ctx.users[rng.choice(list(ctx.users))]
    part = _user_address(rng, user, random_address(rng))
    return Draft(subject=user, parts=[part], reason_for_call=_opening.asking(rng, [part]))


_COMBOS = (
    ("pending", "cancel", "delivered", "return"),
    ("pending", "items+address", None, None),
    ("delivered", "exchange", "pending", "order_address"),
    ("delivered", "return", "delivered", "exchange"),
    ("pending", "payment", "pending", "cancel"),
)


def _combo_part(
    rng: random.Random, ctx: _Context, kind: str, order_id: str, output: bool | None = None
) -> Part | None:
    output = rng.random() < 0.5 if output is None else output
    if kind == "cancel":
        return _cancel(rng, ctx, order_id, output)
    if kind == "return":
        return _return(rng, ctx, order_id, _count(rng, (3, 2)), output)
    if kind == "exchange":
        return _swap_part(rng, ctx, order_id, 1, output, "exchange_delivered_order_items")
    if kind == "order_address":
        return _order_address(rng, ctx, order_id, random_address(rng))
    if kind == "payment":
        return _payment(rng, ctx, order_id, output)
    raise ValueError(kind)


def _multi_step(rng: random.Random, ctx: _Context) -> Draft | None:
    first_status, first_kind, second_status, second_kind = rng.choice(_COMBOS)
    first = _pick(rng, ctx, first_status)
    user = ctx.users[ctx.orders[first]["user_id"]]
    if first_kind == "items+address":
        count = _count(rng, (2, 1))
        items = _swap_part(rng, ctx, first, count, False, "modify_pending_order_items")
        if items is None:
            return None
        address = _order_address(rng, ctx, first, random_address(rng))
        address.actions = address.actions[1:]  # the order was already read
        address.instruction = address.instruction.replace(f"order {first}", "that order", 1)
        parts = [items, address]
        asks = [items.ask, "change where it ships"]
    else:
        others = [o for o in ctx.user_orders(user["user_id"], second_status) if o != first]
        if not others:
            return None
        one = _combo_part(rng, ctx, first_kind, first)
        two = _combo_part(rng, ctx, second_kind, rng.choice(others))
        if one is None or two is None:
            return None
        parts = [one, two]
        asks = [one.ask, two.ask]
    return Draft(
        subject=user,
        parts=parts,
        reason_for_call=_opening.asking(rng, parts, asks),
        tags=["multi_step"],
    )


def _items_twice(rng: random.Random, ctx: _Context) -> Draft | None:
    order_id = _pick(rng, ctx, "pending")
    order = ctx.orders[order_id]
    part = _swap_part(rng, ctx, order_id, 1, rng.random() < 0.5, "modify_pending_order_items")
    if part is None:
        return None
    changed = part.actions[-1]["arguments"]["item_ids"][0]
    rest = [item for item in order["items"] if item["item_id"] != changed]
    later = _item_text(rest[0]) if rest else "the item you just changed"
    extra = (
        f" After that change is made, you also ask to change {later} to another option; the "
        "agent should explain that an order's items can only be modified once, and you accept."
    )
    part.instruction += extra
    return Draft(
        subject=ctx.users[order["user_id"]],
        parts=[part],
        reason_for_call=_opening.asking(rng, [part]),
        tags=["refusal"],
    )


_REFUSALS = (
    ("cancel", ("processed", "delivered", "cancelled")),
    ("change the shipping address of", ("processed", "delivered")),
    ("return", ("pending", "processed")),
    ("exchange", ("pending", "processed")),
    ("change an item in", ("processed", "delivered")),
)


def _refuse_status(rng: random.Random, ctx: _Context) -> Draft | None:
    verb, statuses = rng.choice(_REFUSALS)
    status = rng.choice(statuses)
    order_id = _pick(rng, ctx, status)
    order = ctx.orders[order_id]
    user = ctx.users[order["user_id"]]
    names = _names_text(order["items"])
    part = Part(
        actions=[call("get_order_details", order_id=order_id)],
        info={"order_id": order_id},
        instruction=(
            f"You want to {verb} order {order_id} ({names}). If the agent explains that this "
            "is not possible for the order's current status, accept it and end the conversation."
        ),
        ask=f"{verb} my order with the {names}",
        outputs=[status],
    )
    return Draft(subject=user, parts=[part], reason_for_call=_opening(rng, [part.ask]),
                  tags=["refusal"])  # fmt: skip


def _refuse_other_user(rng: random.Random, ctx: _Context) -> Draft | None:
    user = ctx.users[rng.choice(list(ctx.users))]
    order_id = _pick(rng, ctx, "pending")
    if ctx.orders[order_id]["user_id"] == user["user_id"]:
        return None
    part = Part(
        actions=[],
        info={"order_id": order_id},
        instruction=(
            f"You want to cancel order {order_id}, which your friend placed on their own account. "
            "If the agent refuses because it is not your order, accept it."
        ),
        ask="cancel an order my friend placed",
    )
    return Draft(subject=user, parts=[part], reason_for_call=_opening(rng, [part.ask]),
                  tags=["refusal"])  # fmt: skip


_HUMAN_ISSUES = (
    ("processed", "My parcel was supposed to arrive days ago and tracking hasn't moved.",
     "late parcel"),
    ("delivered", "The box arrived crushed and I want to file a complaint.", "damaged parcel"),
    ("processed", "I need the address changed even though it has already shipped.",
     "address change on a shipped order"),
    ("delivered", "I was promised a discount on this order and want it applied.",
     "promised discount"),
)  # fmt: skip


def _transfer_part(rng: random.Random, ctx: _Context, user: Record) -> Part | None:
    status, complaint, topic = rng.choice(_HUMAN_ISSUES)
    orders = ctx.user_orders(user["user_id"], status)
    if not orders:
        return None
    order_id = rng.choice(orders)
    summary = (
        f"User {user['user_id']} asks for a human agent about a {topic} on order {order_id} "
        f"({status}), which is outside what the agent can do."
    )
    return Part(
        actions=[
            call("get_order_details", order_id=order_id),
            call("transfer_to_human_agents", summary=summary),
        ],
        info={"order_id": order_id},
        instruction=(
            f"About order {order_id}: {complaint} You insist on talking to a human agent."
        ),
        ask=f"talk to a human about a problem with an order. {complaint[:-1]}",
        tags=["transfer"],
    )


def _transfer(rng: random.Random, ctx: _Context) -> Draft | None:
    user = ctx.users[rng.choice(list(ctx.users))]
    part = _transfer_part(rng, ctx, user)
    if part is None:
        return None
    return Draft(subject=user, parts=[part], reason_for_call=_opening.asking(rng, [part]))


def _transfer_after_write(rng: random.Random, ctx: _Context) -> Draft | None:
    first_kind = rng.choice(("cancel", "return", "exchange", "order_address"))
    status = "pending" if first_kind in ("cancel", "order_address") else "delivered"
    first = _pick(rng, ctx, status)
    user = ctx.users[ctx.orders[first]["user_id"]]
    # No required output: the gold episode ends with the transfer, before any report.
    one = _combo_part(rng, ctx, first_kind, first, output=False)
    two = _transfer_part(rng, ctx, user)
    if one is None or two is None or two.info["order_id"] == first:
        return None
    two.ask = "then talk to a human about another order"
    return Draft(
        subject=user,
        parts=[one, two],
        reason_for_call=_opening(rng, [one.ask, two.ask]),
        tags=["multi_step"],
    )


def _info(rng: random.Random, ctx: _Context) -> Draft | None:
    kind = rng.choice(("tracking", "gift_card", "total"))
    if kind == "gift_card":
        user = ctx.users[rng.choice(list(ctx.users))]
        cards = [m for m in user["payment_methods"].values() if m["source"] == "gift_card"]
        if not cards or cards[0]["balance"] <= 0:
            return None
        return Draft(
            subject=user,
            parts=[],
            reason_for_call=_opening(rng, ["check how much is left on my gift card"]),
            extra_instruction="You want to know the balance of your gift card.",
            extra_outputs=[money(cards[0]["balance"])],
            tags=["info"],
        )
    order_id = _pick(rng, ctx, rng.choice(("processed", "delivered")))
    order = ctx.orders[order_id]
    names = _names_text(order["items"])
    if kind == "tracking":
        answer = order["fulfillments"][0]["tracking_id"][0]
        want, ask = "the tracking number", f"get the tracking number for my {names} order"
    else:
        answer = money(order["payment_history"][0]["amount"])
        want, ask = "the total you paid", f"check how much I paid for my {names} order"
    part = Part(
        actions=[call("get_order_details", order_id=order_id)],
        info={"order_id": order_id},
        instruction=f"You want to know {want} of order {order_id}.",
        ask=ask,
        outputs=[answer],
    )
    return Draft(subject=ctx.users[order["user_id"]], parts=[part],
                  reason_for_call=_opening(rng, [part.ask]), tags=["info"])  # fmt: skip


def _declined(rng: random.Random, ctx: _Context) -> Draft | None:
    if rng.random() < 0.5:
        order_id = _pick(rng, ctx, "pending")
        part = _cancel(rng, ctx, order_id, True)
        question = "How much would I get back?"
    else:
        order_id = _pick(rng, ctx, "delivered")
        part = _return(rng, ctx, order_id, 1, True)
        if part is None:
            return None
        question = "How much would the refund be?"
    part.actions = part.actions[:-1]  # the user declines: no write
    part.instruction += (
        " Once you hear the amount you change your mind: when asked to confirm, say no."
    )
    user = ctx.users[ctx.orders[order_id]["user_id"]]
    return Draft(
        subject=user,
        parts=[part],
        reason_for_call=_opening(rng, [f"maybe {part.ask}"], question),
        tags=["declined"],
        confirm=False,
    )


_CATEGORIES: dict[str, Callable[[random.Random, _Context], Draft | None]] = {
    "cancel": lambda rng, ctx: _single(rng, ctx, "cancel"),
    "cancel_two": _cancel_two,
    "order_address": lambda rng, ctx: _single(rng, ctx, "order_address"),
    "user_and_order_address": _user_and_order_address,
    "user_address": _user_address_only,
    "payment": lambda rng, ctx: _single(rng, ctx, "payment"),
    "items": lambda rng, ctx: _single(rng, ctx, "items"),
    "return": lambda rng, ctx: _single(rng, ctx, "return"),
    "exchange": lambda rng, ctx: _single(rng, ctx, "exchange"),
    "multi_step": _multi_step,
    "items_twice": _items_twice,
    "refuse_status": _refuse_status,
    "refuse_other_user": _refuse_other_user,
    "transfer_after_write": _transfer_after_write,
    "transfer": _transfer,
    "info": _info,
    "declined": _declined,
}


# --------------------------------------------------------------------------- rows


def _authentication(rng: random.Random, user: Record) -> Identity:
    user_id = user["user_id"]
    if rng.random() < 0.65:
        actions = [call("find_user_id_by_email", email=user["email"])]
        known = {"email": user["email"]}
        how = "your email address"
    else:
        name = user["name"]
        zip_code = user["address"]["zip"]
        actions = [
            call(
                "find_user_id_by_name_zip",
                first_name=name["first_name"],
                last_name=name["last_name"],
                zip=zip_code,
            )
        ]
        known = {"name": f"{name['first_name']} {name['last_name']}", "zip_code": zip_code}
        how = "your name and zip code (you do not remember which email you used)"
    return Identity(
        actions=[*actions, call("get_user_details", user_id=user_id)],
        known=known,
        instruction=f"To identify yourself, give {how} when asked.",
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
    subject_of=lambda draft: draft.subject["user_id"],
)
"""Retail's tasks; ``extra_info["tags"]`` names the write tools a task uses, ``multi_step``,
``multi_item``, ``refusal``, ``transfer``, ``info``, ``declined`` and ``outputs``."""

generate_splits = TASKS.generate
default_splits = TASKS.default_splits

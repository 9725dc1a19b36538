"""The food-delivery agent's tools: find customers, read orders, menus and deliveries; change,
cancel, refund and credit orders within the rules the data can check.

The tools check what the data decides: ids exist, an order is in a status that allows the change
(nothing changes after pickup), options fit the menu, refunds stay inside the 24-hour window and
never exceed what was paid for a line, credits stay inside the 7-day window and the per-order and
30-day limits. What needs judgement is the agent's job, as in tau-bench: whether a complaint
qualifies (a photo for a wrong or damaged item), which items and how many, what a credit should
be. A write the policy forbids but the data allows still succeeds, and the database then no
longer matches the gold replay.

Every write is a function of its arguments and the current state: new ids count what is already
there, lines added to an order are placed in menu order, and an order's item changes are kept
as one net price adjustment, so the same end state is reached however the changes were split.

Reads return JSON text. The text of a read whose records this episode has not changed is cached
per process (base records never change), so repeated reads cost a dictionary lookup.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from tool_envs.core.tools import tool
from tool_envs.tau.domains.doordash.data import (
    CHANGEABLE_STATUSES,
    CONFIRMED_CANCEL_FEE,
    CREDIT_LIMIT_30_DAYS,
    CREDIT_LIMIT_PER_ORDER,
    CREDIT_WINDOW_DAYS,
    NOW,
    NOW_TIME,
    REFUND_WINDOW_HOURS,
    cents,
    delivered_minutes_ago,
    line_options,
    make_line,
    minutes_late,
    parse_time,
    recompute_totals,
)
from tool_envs.tau.domains.doordash.records import CancelReason, CreditReason, RefundReason
from tool_envs.tau.tools import DomainTools

Record = dict[str, Any]

_MAX_QUANTITY = 20
_THIRTY_DAYS_AGO = NOW_TIME - dt.timedelta(days=30)


def _email_key(customer: Record) -> str:
    return customer["email"].lower()


def _phone_key(customer: Record) -> str:
    return _digits(customer["phone"])


def _digits(phone: str) -> str:
    digits = "".join(ch for ch in phone if ch.isdigit())
    return digits[1:] if len(digits) == 11 and digits.startswith("1") else digits


def _dumps(value: Any) -> str:
    # The data is ASCII; the default escaping is the C encoder's fastest path.
    return json.dumps(value)


def _clock(text: str) -> str:
    """'2025-03-14T19:52:00' -> '19:52' (today) or '2025-03-12 19:52' (another day)."""
    day, time = text.split("T")
    return time[:5] if day == NOW[:10] else f"{day} {time[:5]}"


def _fmt(amount_cents: int) -> str:
    return f"{amount_cents / 100:.2f}"


def recent_credits(customer: Record) -> int:
    """Cents of credit issued to the customer in the 30 days before now."""
    return sum(
        cents(entry["amount"])
        for entry in customer["credit_history"]
        if parse_time(entry["issued_at"]) > _THIRTY_DAYS_AGO
    )


def order_credits(customer: Record, order_id: str) -> int:
    """Cents of credit already issued for one order."""
    return sum(
        cents(entry["amount"])
        for entry in customer["credit_history"]
        if entry["order_id"] == order_id
    )


def cancellation_fee(order: Record) -> int:
    """The fee in cents for cancelling now: free while placed, a flat fee once confirmed, the
    food subtotal once the restaurant is preparing it."""
    return {"placed": 0, "confirmed": cents(CONFIRMED_CANCEL_FEE)}.get(
        order["status"], cents(order["subtotal"])
    )


def amount_paid(order: Record) -> int:
    """Cents the customer has paid for the order, net of refunds."""
    paid = 0
    for entry in order["payment_history"]:
        sign = -1 if entry["type"] == "refund" else 1
        paid += sign * cents(entry["amount"])
    return paid


class DoordashTools(DomainTools):
    """Tools of a food-delivery service's customer-support agent."""

    ensure_ascii = True  # the data is ASCII; the default escaping is the C encoder's fastest path

    # ----------------------------------------------------------------------- reads

    @tool
    def find_customer_by_email(self, email: str) -> str:
        """Find a customer's id from the email address of their account. This or
        find_customer_by_phone is how a customer is authenticated.

        Args:
            email: The customer's email address, such as 'maya.chen42@mailbox.test'.
        """
        email = email.strip().lower()
        return self._find(
            "customers", "email", _email_key, email, "no customer with that email address"
        )

    @tool
    def find_customer_by_phone(self, phone: str) -> str:
        """Find a customer's id from the phone number of their account. This or
        find_customer_by_email is how a customer is authenticated.

        Args:
            phone: The phone number, such as '303-555-0142' (any punctuation is fine).
        """
        return self._find(
            "customers", "phone", _phone_key, _digits(phone), "no customer with that phone number"
        )

    @tool
    def get_customer_details(self, customer_id: str) -> str:
        """Get a customer's profile: name, contact details, DashPass membership, saved addresses,
        payment methods, credit balance and credit history (with the total issued in the last
        30 days), and a summary of each of their orders.

        Args:
            customer_id: The customer's id, such as 'cus_12345'.
        """
        customer = self._customer(customer_id)
        orders = [self._order(order_id) for order_id in customer["orders"]]
        records = [("customers", customer_id, customer)]
        records += [("orders", order["order_id"], order) for order in orders]

        def build() -> Record:
            view = {key: value for key, value in customer.items() if key != "orders"}
            view["credits_issued_last_30_days"] = recent_credits(customer) / 100
            view["orders"] = [
                {
                    "order_id": order["order_id"],
                    "restaurant_name": order["restaurant_name"],
                    "status": order["status"],
                    "placed_at": order["timeline"]["placed"],
                    "total": order["total"],
                }
                for order in orders
            ]
            return view

        return self._cached(("customer", customer_id), records, build)

    @tool
    def get_order_details(self, order_id: str) -> str:
        """Get an order: restaurant, status, items (line ids, item ids, quantities, options and
        prices), subtotal, fees, tip and total, payments and refunds, delivery address, timeline,
        quoted and estimated delivery times, the dasher, photos the customer sent through the
        app and any cancellation.

        Args:
            order_id: The order id, such as 'DD-123456'.
        """
        order = self._order(order_id)
        return self._cached(("order", order_id), [("orders", order_id, order)], lambda: order)

    @tool
    def get_restaurant_details(self, restaurant_id: str) -> str:
        """Get a restaurant's name, cuisine, phone, address (its city is its delivery area),
        rating and delivery fee. Use get_menu for its menu.

        Args:
            restaurant_id: The restaurant id, such as 'rst_1234'.
        """
        return self._restaurant_text(
            restaurant_id,
            "restaurant",
            lambda restaurant: {key: value for key, value in restaurant.items() if key != "menu"},
        )

    @tool
    def get_menu(self, restaurant_id: str) -> str:
        """Get a restaurant's menu: each item's id, name, category, price, availability and
        option groups (each with how many options may be chosen, and each option's id and
        price).

        Args:
            restaurant_id: The restaurant id, such as 'rst_1234'.
        """
        return self._restaurant_text(
            restaurant_id, "menu", lambda restaurant: list(restaurant["menu"].values())
        )

    @tool
    def track_delivery(self, order_id: str) -> str:
        """Track an order: its status, the estimated arrival time and minutes until then, the
        time quoted at checkout, and the dasher (name, vehicle, status, location). For a
        delivered order: when it arrived and how many minutes after the quoted time.

        Args:
            order_id: The order id, such as 'DD-123456'.
        """
        order = self._order(order_id)
        dasher = self.db.get("dashers", order["dasher_id"]) if order["dasher_id"] else None
        records = [("orders", order_id, order)]
        if dasher is not None:
            records.append(("dashers", dasher["dasher_id"], dasher))
        return self._cached(("track", order_id), records, lambda: _tracking(order, dasher))

    # ----------------------------------------------------------------------- order changes

    @tool(writes=True)
    def modify_order_items(self, order_id: str, changes: list[dict]) -> str:
        """Change items already in an order that has not been picked up: the quantity of a line
        (0 removes it) and/or its options (the full new list of option ids for that line). Put
        every change to the order in one call. The price difference (new subtotal minus old;
        fees and tip stay the same) is charged to or refunded to the order's payment method.
        Only call this after the customer has confirmed the changes and the new total with an
        explicit yes.

        Args:
            order_id: The order id, such as 'DD-123456'.
            changes: One object per line to change: {"line_id": "L2", "quantity": 2,
                "option_ids": ["opt_12345"]}; leave out "quantity" or "option_ids" to keep it.
        """
        order = self._changeable(order_id, "its items changed")
        menu = self._restaurant(order["restaurant_id"])["menu"]
        if not isinstance(changes, list) or not changes:
            raise ValueError("changes must list at least one line to change")
        lines = {line["line_id"]: line for line in order["items"]}
        new_lines: dict[str, Record | None] = {}
        for change in changes:
            _check_entry(change, "a change", "line_id", '"L1", "quantity": 2')
            line_id = change["line_id"]
            line = lines.get(line_id)
            if line is None:
                raise ValueError(f"order {order_id} has no line {line_id!r}")
            if line_id in new_lines:
                raise ValueError(f"line {line_id} is listed twice; give one change per line")
            if "quantity" not in change and "option_ids" not in change:
                raise ValueError(f"the change to line {line_id} gives no quantity or option_ids")
            quantity = _quantity(change.get("quantity", line["quantity"]), allow_zero=True)
            item = menu.get(line["item_id"])
            if item is None:
                raise ValueError(f"item {line['item_id']} is no longer on the menu")
            if "option_ids" in change:
                options = _options(item, change["option_ids"])
            else:
                options = [dict(option) for option in line["options"]]
            if quantity > line["quantity"] and not item["available"]:
                raise ValueError(f"{item['name']} is not available, so no more can be ordered")
            if quantity == 0:
                new_lines[line_id] = None
                continue
            new = make_line(line_id, item, quantity, options)
            if new == line:
                raise ValueError(f"line {line_id} already has that quantity and those options")
            new_lines[line_id] = new
        if all(new_lines.get(line_id, line) is None for line_id, line in lines.items()):
            raise ValueError("an order must keep at least one item; cancel the order instead")

        before = order["total"]
        order = self.db.edit("orders", order_id)
        order["items"] = [
            new_lines.get(line["line_id"], line)
            for line in order["items"]
            if new_lines.get(line["line_id"], line) is not None
        ]
        self._reprice(order)
        changed = [line for line in new_lines.values() if line is not None]
        removed = [line_id for line_id, line in new_lines.items() if line is None]
        return _dumps(_items_result(order, before, changed, removed))

    @tool(writes=True)
    def add_order_items(self, order_id: str, items: list[dict]) -> str:
        """Add items from the same restaurant's menu to an order that has not been picked up. An
        item identical to a line already in the order (same item and options) increases that
        line's quantity. The price of the added items is charged to the order's payment method;
        fees and tip stay the same. Only call this after the customer has confirmed the items
        and the new total with an explicit yes.

        Args:
            order_id: The order id, such as 'DD-123456'.
            items: One object per item to add: {"item_id": "itm_12345", "quantity": 1,
                "option_ids": ["opt_12345"]}; "quantity" defaults to 1 and "option_ids" to none.
        """
        order = self._changeable(order_id, "items added")
        menu = self._restaurant(order["restaurant_id"])["menu"]
        if not isinstance(items, list) or not items:
            raise ValueError("items must list at least one item to add")
        position = {item_id: index for index, item_id in enumerate(menu)}
        additions: list[tuple[Record, int, list[Record]]] = []
        for entry in items:
            _check_entry(entry, "an item", "item_id", '"itm_12345", "quantity": 1')
            item = menu.get(entry["item_id"])
            if item is None:
                raise ValueError(
                    f"item {entry['item_id']!r} is not on the menu of {order['restaurant_name']}"
                )
            if not item["available"]:
                raise ValueError(f"{item['name']} ({item['item_id']}) is not available right now")
            quantity = _quantity(entry.get("quantity", 1), allow_zero=False)
            additions.append((item, quantity, _options(item, entry.get("option_ids", []))))
        # Menu order, then option order: the same request always gives the same lines.
        additions.sort(key=lambda a: (position[a[0]["item_id"]], [o["option_id"] for o in a[2]]))

        # Plan on the base lines (never mutated: changed lines are new objects), then apply
        # the plan to the episode's own copy of the order.
        lines = list(order["items"])
        next_line = order["next_line"]
        for item, quantity, options in additions:
            same = next(
                (
                    index
                    for index, line in enumerate(lines)
                    if line["item_id"] == item["item_id"] and line["options"] == options
                ),
                None,
            )
            if same is None:
                lines.append(make_line(f"L{next_line}", item, quantity, options))
                next_line += 1
                continue
            line = lines[same]
            if line["quantity"] + quantity > _MAX_QUANTITY:
                raise ValueError(f"at most {_MAX_QUANTITY} of one item per order")
            lines[same] = make_line(line["line_id"], item, line["quantity"] + quantity, options)

        untouched = {id(line) for line in order["items"]}
        changed = [line for line in lines if id(line) not in untouched]
        before = order["total"]
        order = self.db.edit("orders", order_id)
        own = {line["line_id"]: line for line in order["items"]}
        order["items"] = [own[line["line_id"]] if id(line) in untouched else line for line in lines]
        order["next_line"] = next_line
        self._reprice(order)
        return _dumps(_items_result(order, before, changed, []))

    @tool(writes=True)
    def update_delivery_address(
        self, order_id: str, street: str, unit: str, city: str, state: str, zip: str
    ) -> str:
        """Send an order that has not been picked up to another address. The address must be in
        the restaurant's delivery area (the restaurant's city). Only call this after the
        customer has confirmed the new address with an explicit yes.

        Args:
            order_id: The order id, such as 'DD-123456'.
            street: Street number and name, such as '1200 Birchwood Avenue'.
            unit: Apartment, suite or unit, such as 'Apt 4B', or '' if none.
            city: The city, such as 'Denver'.
            state: The two-letter state code, such as 'CO'.
            zip: The five-digit zip code, such as '80218'.
        """
        order = self._changeable(order_id, "its address changed")
        restaurant = self._restaurant(order["restaurant_id"])
        area = restaurant["address"]
        if (city.strip().lower(), state.strip().upper()) != (area["city"].lower(), area["state"]):
            raise ValueError(
                f"{city}, {state} is outside the delivery area of {restaurant['name']}, which "
                f"delivers only within {area['city']}, {area['state']}"
            )
        if not (len(zip) == 5 and zip.isdigit()):
            raise ValueError(f"zip code {zip!r} must be five digits")
        if not street.strip():
            raise ValueError("street must not be empty")
        address = {
            "street": street,
            "unit": unit,
            "city": area["city"],
            "state": area["state"],
            "zip": zip,
        }
        if address == order["delivery_address"]:
            raise ValueError(f"order {order_id} is already going to that address")
        order = self.db.edit("orders", order_id)
        order["delivery_address"] = address
        return _dumps(
            {"order_id": order_id, "status": order["status"], "delivery_address": address}
        )

    @tool(writes=True)
    def cancel_order(self, order_id: str, reason: CancelReason) -> str:
        """Cancel an order that has not been picked up. Cancelling is free while the order is
        'placed'; once 'confirmed' a flat fee is kept; once 'preparing' the food subtotal is
        kept. The rest of what was paid is refunded to the order's payment method. Only call
        this after the customer has heard the fee and refund and confirmed with an explicit yes.

        Args:
            order_id: The order id, such as 'DD-123456'.
            reason: Why the customer cancels.
        """
        order = self._order(order_id)
        if order["status"] not in CHANGEABLE_STATUSES:
            raise ValueError(
                f"order {order_id} is '{order['status']}'; only orders that have not been picked "
                "up can be cancelled"
            )
        fee = cancellation_fee(order)
        refund = max(0, amount_paid(order) - fee)
        dasher_id = order["dasher_id"]

        order = self.db.edit("orders", order_id)
        order["status"] = "cancelled"
        order["timeline"]["cancelled"] = NOW
        order["eta"] = None
        order["dasher_id"] = None
        order["cancellation"] = {
            "reason": reason,
            "fee": fee / 100,
            "refund": refund / 100,
            "cancelled_at": NOW,
        }
        if refund:
            order["payment_history"].append(
                {
                    "type": "refund",
                    "amount": refund / 100,
                    "payment_method_id": order["payment_method_id"],
                    "at": NOW,
                }
            )
        if dasher_id and self.db.get("dashers", dasher_id) is not None:
            dasher = self.db.edit("dashers", dasher_id)
            dasher["active_order_ids"] = [o for o in dasher["active_order_ids"] if o != order_id]
            if not dasher["active_order_ids"]:
                dasher["status"] = "available"
        return _dumps(
            {
                "order_id": order_id,
                "status": "cancelled",
                "cancellation": order["cancellation"],
                "refunded_to": order["payment_method_id"] if refund else None,
            }
        )

    # ----------------------------------------------------------------------- refunds and credits

    @tool(writes=True)
    def issue_refund(self, order_id: str, items: list[dict], reason: RefundReason) -> str:
        """Refund items of a delivered order to the order's original payment method (the only
        place a refund can go). Possible within 24 hours of delivery, for at most the quantity
        delivered and not yet refunded; each unit is refunded at its line's unit price. Only
        call this after the customer has confirmed the items and the amount with an explicit
        yes.

        Args:
            order_id: The order id, such as 'DD-123456'.
            items: One object per affected line: {"line_id": "L1", "quantity": 1}; leave out
                "quantity" to refund every unit of the line not yet refunded.
            reason: What was wrong with the items.
        """
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError(
                f"order {order_id} is '{order['status']}'; only delivered orders can be refunded"
            )
        if delivered_minutes_ago(order) > REFUND_WINDOW_HOURS * 60:
            raise ValueError(
                f"order {order_id} was delivered at {_clock(order['timeline']['delivered'])}, "
                f"more than {REFUND_WINDOW_HOURS} hours ago; refunds must be requested within "
                f"{REFUND_WINDOW_HOURS} hours of delivery"
            )
        if not isinstance(items, list) or not items:
            raise ValueError("items must list at least one line to refund")
        lines = {line["line_id"]: (index, line) for index, line in enumerate(order["items"])}
        refunded: dict[str, int] = {}
        for refund in order["refunds"]:
            for entry in refund["items"]:
                refunded[entry["line_id"]] = refunded.get(entry["line_id"], 0) + entry["quantity"]
        chosen: dict[str, tuple[int, Record, int]] = {}
        for entry in items:
            if not isinstance(entry, dict) or "line_id" not in entry:
                raise ValueError(
                    'each item must be an object like {"line_id": "L1", "quantity": 1}'
                )
            unknown = sorted(set(entry) - {"line_id", "quantity"})
            if unknown:
                raise ValueError(f"unknown field(s) in an item: {', '.join(unknown)}")
            found = lines.get(entry["line_id"])
            if found is None:
                raise ValueError(f"order {order_id} has no line {entry['line_id']!r}")
            index, line = found
            if line["line_id"] in chosen:
                raise ValueError(f"line {line['line_id']} is listed twice")
            left = line["quantity"] - refunded.get(line["line_id"], 0)
            if left <= 0:
                raise ValueError(
                    f"line {line['line_id']} ({line['name']}) was already refunded in full"
                )
            quantity = _quantity(entry.get("quantity", left), allow_zero=False)
            if quantity > left:
                raise ValueError(
                    f"line {line['line_id']} ({line['name']}) has {left} unit(s) left to refund, "
                    f"not {quantity}"
                )
            chosen[line["line_id"]] = (index, line, quantity)
        entries = [
            {
                "line_id": line["line_id"],
                "name": line["name"],
                "quantity": quantity,
                "amount": cents(line["unit_price"]) * quantity / 100,
            }
            for _, line, quantity in sorted(chosen.values(), key=lambda c: c[0])
        ]
        total = sum(cents(entry["amount"]) for entry in entries)

        order = self.db.edit("orders", order_id)
        record = {
            "refund_id": f"RF-{order_id.split('-')[-1]}-{len(order['refunds']) + 1}",
            "reason": reason,
            "items": entries,
            "amount": total / 100,
            "payment_method_id": order["payment_method_id"],
            "issued_at": NOW,
        }
        order["refunds"].append(record)
        order["payment_history"].append(
            {
                "type": "refund",
                "amount": total / 100,
                "payment_method_id": order["payment_method_id"],
                "at": NOW,
            }
        )
        return _dumps(record)

    @tool(writes=True)
    def issue_credit(self, order_id: str, amount: float, reason: CreditReason) -> str:
        """Give the customer account credit (usable on future orders) for a problem with a
        delivered order, within 7 days of its delivery. A customer can get at most 15.00 of
        credit per order and at most 25.00 in any 30 days. Only call this after the customer
        has agreed to the amount with an explicit yes.

        Args:
            order_id: The order the credit is for, such as 'DD-123456'.
            amount: The credit in dollars, such as 5.0.
            reason: Why the credit is given.
        """
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise ValueError(
                f"order {order_id} is '{order['status']}'; credits are only for delivered orders"
            )
        if delivered_minutes_ago(order) > CREDIT_WINDOW_DAYS * 24 * 60:
            raise ValueError(
                f"order {order_id} was delivered on {_clock(order['timeline']['delivered'])}, "
                f"more than {CREDIT_WINDOW_DAYS} days ago; credits must be requested within "
                f"{CREDIT_WINDOW_DAYS} days of delivery"
            )
        value = cents(amount)
        if value <= 0:
            raise ValueError("the amount must be positive")
        customer = self._customer(order["customer_id"])
        for_order = order_credits(customer, order_id)
        if for_order + value > cents(CREDIT_LIMIT_PER_ORDER):
            raise ValueError(
                f"order {order_id} already has {_fmt(for_order)} in credits; at most "
                f"{CREDIT_LIMIT_PER_ORDER:.2f} per order, so at most "
                f"{_fmt(max(0, cents(CREDIT_LIMIT_PER_ORDER) - for_order))} more"
            )
        recent = recent_credits(customer)
        if recent + value > cents(CREDIT_LIMIT_30_DAYS):
            raise ValueError(
                f"the customer received {_fmt(recent)} in credits in the last 30 days; at most "
                f"{CREDIT_LIMIT_30_DAYS:.2f} in 30 days, so at most "
                f"{_fmt(max(0, cents(CREDIT_LIMIT_30_DAYS) - recent))} more"
            )

        customer = self.db.edit("customers", customer["customer_id"])
        entry = {
            "credit_id": f"CR-{customer['customer_id'].split('_')[-1]}-"
            f"{len(customer['credit_history']) + 1}",
            "order_id": order_id,
            "amount": value / 100,
            "reason": reason,
            "issued_at": NOW,
        }
        customer["credit_history"].append(entry)
        customer["credits_balance"] = (cents(customer["credits_balance"]) + value) / 100
        return _dumps({"credit": entry, "credits_balance": customer["credits_balance"]})

    # ----------------------------------------------------------------------- helpers

    def _customer(self, customer_id: str) -> Record:
        return self._record("customers", customer_id, "customer")

    def _order(self, order_id: str) -> Record:
        return self._record("orders", order_id, "order", example="DD-123456")

    def _restaurant(self, restaurant_id: str) -> Record:
        return self._record("restaurants", restaurant_id, "restaurant")

    def _restaurant_text(self, restaurant_id: str, view: str, pick: Callable[[Record], Any]) -> str:
        """``pick`` of a restaurant as text, serialised once while the restaurant is unchanged."""
        restaurant = self._restaurant(restaurant_id)
        return self._cached(
            (view, restaurant_id),
            [("restaurants", restaurant_id, restaurant)],
            lambda: pick(restaurant),
        )

    def _changeable(self, order_id: str, what: str) -> Record:
        order = self._order(order_id)
        if order["status"] not in CHANGEABLE_STATUSES:
            raise ValueError(
                f"order {order_id} is '{order['status']}'; only an order that has not been "
                f"picked up can have {what}"
            )
        return order

    @staticmethod
    def _reprice(order: Record) -> None:
        """New totals, and the net price change kept as one adjustment on the payment."""
        recompute_totals(order)
        charged = sum(
            cents(entry["amount"])
            for entry in order["payment_history"]
            if entry["type"] == "charge"
        )
        history = [entry for entry in order["payment_history"] if entry["type"] != "adjustment"]
        difference = cents(order["total"]) - charged
        if difference:
            history.append(
                {
                    "type": "adjustment",
                    "amount": difference / 100,
                    "payment_method_id": order["payment_method_id"],
                    "at": NOW,
                }
            )
        order["payment_history"] = history


def _check_entry(entry: Any, name: str, key: str, example: str) -> None:
    """One object of a list of order lines: it names its ``key`` and has no field beyond
    ``key``, quantity and option_ids. ``name`` has its article ("an item"); ``example`` is what
    follows the key in the message's example object."""
    if not isinstance(entry, dict) or key not in entry:
        noun = name.split()[-1]
        raise ValueError(
            f'each {noun} must be an object like {{"{key}": {example}, "option_ids": [...]}}'
        )
    unknown = sorted(set(entry) - {key, "quantity", "option_ids"})
    if unknown:
        raise ValueError(f"unknown field(s) in {name}: {', '.join(unknown)}")


def _quantity(value: Any, *, allow_zero: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"quantity must be a whole number, got {value!r}")
    value = int(value)
    low = 0 if allow_zero else 1
    if not low <= value <= _MAX_QUANTITY:
        raise ValueError(f"quantity must be between {low} and {_MAX_QUANTITY}, got {value}")
    return value


def _options(item: Record, option_ids: Any) -> list[Record]:
    """Check a choice of options against the item's option groups; the options in menu order."""
    if not isinstance(option_ids, list) or not all(isinstance(o, str) for o in option_ids):
        raise ValueError("option_ids must be a list of option ids")
    if len(set(option_ids)) != len(option_ids):
        raise ValueError("an option is listed twice")
    known = {o["option_id"]: group for group in item["option_groups"] for o in group["options"]}
    for option_id in option_ids:
        if option_id not in known:
            raise ValueError(f"option {option_id!r} is not an option of {item['name']}")
    for group in item["option_groups"]:
        count = sum(known[option_id] is group for option_id in option_ids)
        if not group["min_select"] <= count <= group["max_select"]:
            need = (
                f"exactly {group['min_select']}"
                if group["min_select"] == group["max_select"]
                else f"{group['min_select']} to {group['max_select']}"
            )
            raise ValueError(
                f"{item['name']} needs {need} option(s) from '{group['name']}', got {count}"
            )
    return line_options(item, option_ids)


def _items_result(
    order: Record, total_before: float, changed: list[Record], removed: list[str]
) -> Record:
    """What an item change returns: the new or changed lines, totals and the difference."""
    return {
        "order_id": order["order_id"],
        "changed_lines": changed,
        "removed_line_ids": removed,
        "subtotal": order["subtotal"],
        "total": order["total"],
        "price_difference": (cents(order["total"]) - cents(total_before)) / 100,
        "payment_method_id": order["payment_method_id"],
    }


def _tracking(order: Record, dasher: Record | None) -> Record:
    view: Record = {
        "order_id": order["order_id"],
        "status": order["status"],
        "restaurant_name": order["restaurant_name"],
        "quoted_eta": _clock(order["quoted_eta"]),
    }
    status = order["status"]
    if status == "delivered":
        view["delivered_at"] = _clock(order["timeline"]["delivered"])
        view["minutes_late"] = max(0, minutes_late(order) or 0)
    elif status == "cancelled":
        view["cancelled_at"] = _clock(order["timeline"]["cancelled"])
    else:
        eta = parse_time(order["eta"])
        view["eta"] = _clock(order["eta"])
        view["minutes_away"] = round((eta - NOW_TIME).total_seconds() / 60)
    if dasher is not None:
        view["dasher"] = {"name": dasher["name"], "vehicle": dasher["vehicle"]}
        if status not in ("delivered", "cancelled"):
            view["dasher"]["status"] = dasher["status"]
            view["dasher"]["location"] = dasher["location"]
    else:
        view["dasher"] = None
    view["delivery_address"] = order["delivery_address"]
    return view

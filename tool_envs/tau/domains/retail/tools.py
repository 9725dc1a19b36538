"""The retail agent's tools: look up users, orders and products; change pending and delivered
orders within the policy's rules.

Every tool reads through ``self.db`` (the episode's copy-on-write view) and changes records only
through ``db.edit``; lookups by email or name go through base indexes, so no call scans a
table. A bad request raises ``ValueError`` with a message for the agent, which the toolset turns
into an ``Error: ...`` tool message; a write that fails changes nothing (all checks run before
the first edit).

Tools return records as JSON text (what the toolset would make of a dict). The text of a record
the episode has not changed is cached per process: base records never change, and encoding a
product with twenty variants costs more than the rest of a tool call.
"""

from __future__ import annotations

import json
from typing import Any

from tool_envs.core.tools import tool
from tool_envs.tau.domains.retail.data import CANCEL_REASONS
from tool_envs.tau.tools import DomainTools

Record = dict[str, Any]

PENDING = "pending"
ITEMS_MODIFIED = "pending (item modified)"
_PENDING_STATUSES = (PENDING, ITEMS_MODIFIED)


def _email_key(user: Record) -> str:
    return user["email"].lower()


def _name_zip_key(user: Record) -> tuple[str, str, str]:
    name = user["name"]
    return (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"])


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict:
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "country": country,
        "state": state,
        "zip": zip,
    }


class RetailTools(DomainTools):
    """Tools of an online shop's customer-service agent (tau-bench's retail tool names)."""

    # ----------------------------------------------------------------------- reads

    @tool
    def find_user_id_by_email(self, email: str) -> str:
        """Find a user's id from their email address. This or find_user_id_by_name_zip is how a
        user is authenticated.

        Args:
            email: The user's email address, such as 'ana.ruiz1234@example.com'.
        """
        return self._find("users", "email", _email_key, email.strip().lower(), "user not found")

    @tool
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Find a user's id from their first name, last name and zip code. Use it when the user
        cannot give their email address.

        Args:
            first_name: The user's first name, such as 'Ana'.
            last_name: The user's last name, such as 'Ruiz'.
            zip: The zip code of the user's address, such as '80212'.
        """
        key = (first_name.strip().lower(), last_name.strip().lower(), zip.strip())
        return self._find("users", "name_zip", _name_zip_key, key, "user not found")

    @tool
    def get_user_details(self, user_id: str) -> str:
        """Get a user's profile: name, address, email, payment methods (with gift card balances)
        and the ids of their orders.

        Args:
            user_id: The user's id, such as 'ana_ruiz_1234'.
        """
        return self._record_text("users", user_id, self._user(user_id))

    @tool
    def get_order_details(self, order_id: str) -> str:
        """Get an order's status, items (with item ids, prices and options), shipping address,
        fulfillments (tracking ids) and payment history.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
        """
        return self._record_text("orders", order_id, self._order(order_id))

    @tool
    def get_product_details(self, product_id: str) -> str:
        """Get a product's variants: for each item id its options, price and whether it is
        available. A product id is not an item id.

        Args:
            product_id: The product id, such as '6086499569'.
        """
        product = self.db.get("products", product_id)
        if product is None:
            raise ValueError(f"product {product_id} not found")
        return self._record_text("products", product_id, product)

    @tool
    def list_all_product_types(self) -> str:
        """List the shop's product types: each product name with its product id (50 products)."""
        # Tools never change products, so the base index is the whole answer.
        by_name = self.db.base.index("products", "name", lambda product: product["name"])
        return self._cached(
            ("", "product types"),
            [],
            lambda: {name: keys[0] for name, keys in sorted(by_name.items())},
        )

    # ----------------------------------------------------------------------- pending orders

    @tool(writes=True)
    def cancel_pending_order(self, order_id: str, reason: str) -> str:
        """Cancel a pending order. Everything paid is refunded to the payment method it came
        from; a gift card is credited at once, other methods within 5-7 business days. Only call
        this after the user has confirmed the cancellation and its reason with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            reason: Why the user cancels: 'no longer needed' or 'ordered by mistake'.
        """
        order = self._order(order_id)
        self._require_pending(order, "cancelled")
        if reason not in CANCEL_REASONS:
            raise ValueError("the reason must be 'no longer needed' or 'ordered by mistake'")
        user = self._user(order["user_id"])
        net: dict[str, float] = {}
        for entry in order["payment_history"]:
            sign = 1 if entry["transaction_type"] == "payment" else -1
            method_id = entry["payment_method_id"]
            net[method_id] = net.get(method_id, 0.0) + sign * entry["amount"]
        refunds = [(method, round(amount, 2)) for method, amount in net.items() if amount > 0.005]

        order = self.db.edit("orders", order_id)
        for method_id, amount in refunds:
            order["payment_history"].append(
                {"transaction_type": "refund", "amount": amount, "payment_method_id": method_id}
            )
            if user["payment_methods"].get(method_id, {}).get("source") == "gift_card":
                self._credit_gift_card(user["user_id"], method_id, amount)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        return _dumps(order)

    @tool(writes=True)
    def modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> str:
        """Change the shipping address of a pending order. Only call this after the user has
        confirmed the new address with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            address1: The first line of the address, such as '123 Main Street'.
            address2: The second line of the address, such as 'Apt 1B', or '' if none.
            city: The city, such as 'Denver'.
            state: The state, such as 'CO'.
            country: The country, such as 'USA'.
            zip: The zip code, such as '80212'.
        """
        self._require_pending(self._order(order_id), "changed")
        order = self.db.edit("orders", order_id)
        order["address"] = _address(address1, address2, city, state, country, zip)
        return _dumps(order)

    @tool(writes=True)
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> str:
        """Pay a pending order with another of the user's payment methods: the new method is
        charged the order total and the old one refunded (a gift card must cover the total).
        Possible only while the order has a single payment. Only call this after the user has
        confirmed with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            payment_method_id: The id of the new payment method, such as 'paypal_1234567' or
                'credit_card_1234567', from the user's profile.
        """
        order = self._order(order_id)
        self._require_pending(order, "changed")
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ValueError(
                "the payment method can only be changed while the order has a single payment"
            )
        amount, old_method = history[0]["amount"], history[0]["payment_method_id"]
        if payment_method_id == old_method:
            raise ValueError("the new payment method must differ from the current one")
        user = self._user(order["user_id"])
        method = self._payment_method(user, payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ValueError(
                f"insufficient gift card balance ({method['balance']:.2f}) to pay {amount:.2f}"
            )

        order = self.db.edit("orders", order_id)
        order["payment_history"] += [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": method["id"]},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_method},
        ]
        if method["source"] == "gift_card":
            self._credit_gift_card(user["user_id"], method["id"], -amount)
        if user["payment_methods"].get(old_method, {}).get("source") == "gift_card":
            self._credit_gift_card(user["user_id"], old_method, amount)
        return _dumps(order)

    @tool(writes=True)
    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        """Swap items of a pending order for other available variants of the same products
        (e.g. another size or color). An order's items can be modified only once, so collect
        every item to change first. The price difference is charged to, or refunded to, the
        given payment method (a gift card must cover a charge). Only call this after the user has
        confirmed the items and payment method with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            item_ids: The item ids to replace, such as ['1008292230'].
            new_item_ids: The replacement item ids, in the same order: new_item_ids[i] replaces
                item_ids[i] and must be an available variant of the same product.
            payment_method_id: The payment method for the price difference, such as
                'gift_card_1234567', from the user's profile.
        """
        order = self._order(order_id)
        if order["status"] == ITEMS_MODIFIED:
            raise ValueError(
                f"the items of order {order_id} were already modified once and cannot be "
                "modified again"
            )
        if order["status"] != PENDING:
            raise ValueError(
                f"order {order_id} is '{order['status']}'; only pending orders can be modified"
            )
        swaps, difference = self._swaps(order, item_ids, new_item_ids)
        user = self._user(order["user_id"])
        method = self._check_charge(user, payment_method_id, difference)

        order = self.db.edit("orders", order_id)
        for position, variant in swaps:
            item = order["items"][position]
            item.update(item_id=variant["item_id"], price=variant["price"])
            item["options"] = dict(variant["options"])
        if difference:
            order["payment_history"].append(
                {
                    "transaction_type": "payment" if difference > 0 else "refund",
                    "amount": abs(difference),
                    "payment_method_id": method["id"],
                }
            )
            if method["source"] == "gift_card":
                self._credit_gift_card(user["user_id"], method["id"], -difference)
        order["status"] = ITEMS_MODIFIED
        return _dumps(order)

    # ----------------------------------------------------------------------- users

    @tool(writes=True)
    def modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> str:
        """Change the default address in a user's profile (orders keep their own shipping
        address). Only call this after the user has confirmed the new address with an explicit
        yes.

        Args:
            user_id: The user's id, such as 'ana_ruiz_1234'.
            address1: The first line of the address, such as '123 Main Street'.
            address2: The second line of the address, such as 'Apt 1B', or '' if none.
            city: The city, such as 'Denver'.
            state: The state, such as 'CO'.
            country: The country, such as 'USA'.
            zip: The zip code, such as '80212'.
        """
        self._user(user_id)
        user = self.db.edit("users", user_id)
        user["address"] = _address(address1, address2, city, state, country, zip)
        return _dumps(user)

    # ----------------------------------------------------------------------- delivered orders

    @tool(writes=True)
    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> str:
        """Request the return of items of a delivered order; the user gets instructions by email
        and the refund follows when the items arrive. The refund goes to the order's original
        payment method or to one of the user's gift cards. An order can have only one return or
        exchange, so collect every item first. Only call this after the user has confirmed the
        items and refund method with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            item_ids: The item ids to return, such as ['1008292230', '4983901480'].
            payment_method_id: Where the refund goes: the order's original payment method or a
                gift card of the user, such as 'gift_card_1234567'.
        """
        order = self._order(order_id)
        self._require_delivered(order)
        self._positions(order, item_ids)
        user = self._user(order["user_id"])
        method = self._payment_method(user, payment_method_id)
        original = order["payment_history"][0]["payment_method_id"]
        if method["id"] != original and method["source"] != "gift_card":
            raise ValueError(
                f"a refund can only go to the original payment method ({original}) or a gift card"
            )

        order = self.db.edit("orders", order_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = method["id"]
        return _dumps(order)

    @tool(writes=True)
    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> str:
        """Request an exchange of items of a delivered order for other available variants of the
        same products; the user gets instructions by email for sending the old items back. The
        price difference is charged to, or refunded to, the given payment method (a gift card
        must cover a charge). An order can have only one return or exchange, so collect every
        item first. Only call this after the user has confirmed with an explicit yes.

        Args:
            order_id: The order id, such as '#W1234567' (with the '#').
            item_ids: The item ids to exchange, such as ['1008292230'].
            new_item_ids: The new item ids, in the same order: new_item_ids[i] replaces
                item_ids[i] and must be an available variant of the same product.
            payment_method_id: The payment method for the price difference, such as
                'credit_card_1234567', from the user's profile.
        """
        order = self._order(order_id)
        self._require_delivered(order)
        _, difference = self._swaps(order, item_ids, new_item_ids)
        user = self._user(order["user_id"])
        method = self._check_charge(user, payment_method_id, difference)

        pairs = sorted(zip(item_ids, new_item_ids, strict=True))
        order = self.db.edit("orders", order_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = [old for old, _ in pairs]
        order["exchange_new_items"] = [new for _, new in pairs]
        order["exchange_payment_method_id"] = method["id"]
        order["exchange_price_difference"] = difference
        return _dumps(order)

    # ----------------------------------------------------------------------- helpers

    def _user(self, user_id: str) -> Record:
        return self._record("users", user_id, "user")

    def _order(self, order_id: str) -> Record:
        return self._record("orders", order_id, "order", example="#W1234567")

    @staticmethod
    def _require_pending(order: Record, done: str) -> None:
        if order["status"] not in _PENDING_STATUSES:
            raise ValueError(
                f"order {order['order_id']} is '{order['status']}'; only pending orders can be "
                f"{done}"
            )

    @staticmethod
    def _require_delivered(order: Record) -> None:
        status = order["status"]
        if status in ("return requested", "exchange requested"):
            raise ValueError(
                f"order {order['order_id']} is '{status}'; an order can have only one return or "
                "exchange"
            )
        if status != "delivered":
            raise ValueError(
                f"order {order['order_id']} is '{status}'; only delivered orders can be returned "
                "or exchanged"
            )

    @staticmethod
    def _positions(order: Record, item_ids: list[str]) -> list[int]:
        """Where each item id sits in the order (an id listed twice needs two such items)."""
        if not item_ids:
            raise ValueError("item_ids must list at least one item")
        used: set[int] = set()
        positions = []
        for item_id in item_ids:
            position = next(
                (
                    index
                    for index, item in enumerate(order["items"])
                    if item["item_id"] == item_id and index not in used
                ),
                None,
            )
            if position is None:
                raise ValueError(f"item {item_id} is not in order {order['order_id']}")
            used.add(position)
            positions.append(position)
        return positions

    def _swaps(
        self, order: Record, item_ids: list[str], new_item_ids: list[str]
    ) -> tuple[list[tuple[int, Record]], float]:
        """Check a list of item swaps; return (position, new variant) pairs and the price
        difference (new minus old, rounded to cents)."""
        if len(item_ids) != len(new_item_ids):
            raise ValueError("item_ids and new_item_ids must have the same length")
        swaps = []
        difference = 0.0
        for position, new_id in zip(self._positions(order, item_ids), new_item_ids, strict=True):
            old = order["items"][position]
            product = self.db.get("products", old["product_id"])
            variant = product["variants"].get(new_id) if product else None
            if variant is None:
                raise ValueError(
                    f"new item {new_id} is not a variant of {old['name']} (product "
                    f"{old['product_id']}); items can only be swapped within the same product"
                )
            if new_id == old["item_id"]:
                raise ValueError(f"new item {new_id} is the same as the item it replaces")
            if not variant["available"]:
                raise ValueError(f"new item {new_id} is not available")
            difference += variant["price"] - old["price"]
            swaps.append((position, variant))
        return swaps, round(difference, 2)

    def _payment_method(self, user: Record, payment_method_id: str) -> Record:
        method = user["payment_methods"].get(payment_method_id)
        if method is None:
            raise ValueError(
                f"payment method {payment_method_id} not found in the profile of {user['user_id']}"
            )
        return method

    def _check_charge(self, user: Record, payment_method_id: str, amount: float) -> Record:
        method = self._payment_method(user, payment_method_id)
        if method["source"] == "gift_card" and amount > 0 and method["balance"] < amount:
            raise ValueError(
                f"insufficient gift card balance ({method['balance']:.2f}) to pay {amount:.2f}"
            )
        return method

    def _credit_gift_card(self, user_id: str, method_id: str, amount: float) -> None:
        method = self.db.edit("users", user_id)["payment_methods"][method_id]
        method["balance"] = round(method["balance"] + amount, 2)

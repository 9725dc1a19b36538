"""The retail database's records, typed: what each table's values hold (see :mod:`.data`).

Tables map a record's id to the record; records are plain JSON dicts (the database copies and
hashes them as such), so these are ``TypedDict``s: a description for readers and type checkers,
checked against the generated tables and every gold replay by the tests.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict

from tool_envs.tau.records import CreditCard, Name, PostalAddress

OrderStatus = Literal[
    "pending",
    "pending (item modified)",
    "processed",
    "delivered",
    "cancelled",
    "return requested",
    "exchange requested",
]


class Variant(TypedDict):
    """One buyable version of a product; ``price`` is today's price."""

    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(TypedDict):
    """A catalogue product (10-digit id) and its variants by item id."""

    product_id: str
    name: str
    variants: dict[str, Variant]


class PayPal(TypedDict):
    source: Literal["paypal"]
    id: str


class GiftCard(TypedDict):
    source: Literal["gift_card"]
    id: str
    balance: float


PaymentMethod = CreditCard | PayPal | GiftCard
"""Tagged by ``source``."""


class User(TypedDict):
    """A customer (``first_last_NNNN``); email and (name, zip) are unique."""

    user_id: str
    name: Name
    address: PostalAddress
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str]


class OrderItem(TypedDict):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(TypedDict):
    tracking_id: list[str]
    item_ids: list[str]


class Payment(TypedDict):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class Order(TypedDict):
    """An order (``#W`` + 7 digits); the ``NotRequired`` fields are set by cancels, returns and
    exchanges."""

    order_id: str
    user_id: str
    address: PostalAddress
    items: list[OrderItem]
    status: OrderStatus
    fulfillments: list[Fulfillment]
    payment_history: list[Payment]
    cancel_reason: NotRequired[Literal["no longer needed", "ordered by mistake"]]
    return_items: NotRequired[list[str]]
    return_payment_method_id: NotRequired[str]
    exchange_items: NotRequired[list[str]]
    exchange_new_items: NotRequired[list[str]]
    exchange_payment_method_id: NotRequired[str]
    exchange_price_difference: NotRequired[float]


RECORDS: dict[str, type] = {"products": Product, "users": User, "orders": Order}
"""The record type of each table."""

"""The food-delivery database's records, typed: what each table's values hold (see :mod:`.data`).

Tables map a record's id to the record; records are plain JSON dicts (the database copies and
hashes them as such), so these are ``TypedDict``s: a description for readers and type checkers,
checked against the generated tables and every gold replay by the tests. Money is in dollars
with cents (the tools compute in whole cents).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict

from tool_envs.tau.records import CardBrand, Name, StreetAddress

OrderStatus = Literal[
    "placed", "confirmed", "preparing", "picked_up", "delivered", "cancelled"
]  # fmt: skip
CancelReason = Literal["no_longer_needed", "ordered_by_mistake", "taking_too_long"]
RefundReason = Literal["missing_item", "wrong_item", "damaged_item"]
CreditReason = Literal["late_delivery", "poor_food_quality", "late_item_report"]


class SavedAddress(TypedDict):
    address_id: str
    label: str
    street: str
    unit: str
    city: str
    state: str
    zip: str


class Card(TypedDict):
    payment_method_id: str
    type: Literal["card"]
    brand: CardBrand
    last_four: str


class Wallet(TypedDict):
    payment_method_id: str
    type: Literal["paypal", "apple_pay"]


PaymentMethod = Card | Wallet
"""Tagged by ``type``."""


class Credit(TypedDict):
    credit_id: str
    order_id: str
    amount: float
    reason: CreditReason
    issued_at: str


class Customer(TypedDict):
    """A customer (``cus_`` + 5 digits), their saved addresses, payment methods and credits."""

    customer_id: str
    name: Name
    email: str
    phone: str
    dashpass: bool
    addresses: dict[str, SavedAddress]
    default_address_id: str
    payment_methods: dict[str, PaymentMethod]
    default_payment_method_id: str
    credits_balance: float
    credit_history: list[Credit]
    orders: list[str]


class MenuOption(TypedDict):
    option_id: str
    name: str
    price: float


class OptionGroup(TypedDict):
    """A choice on a menu item: pick between ``min_select`` and ``max_select`` options."""

    name: str
    min_select: int
    max_select: int
    options: list[MenuOption]


class MenuItem(TypedDict):
    item_id: str
    name: str
    category: str
    price: float
    available: bool
    option_groups: list[OptionGroup]


class Restaurant(TypedDict):
    restaurant_id: str
    name: str
    cuisine: str
    phone: str
    address: StreetAddress
    rating: float
    delivery_fee: float
    menu: dict[str, MenuItem]


class LineOption(TypedDict):
    option_id: str
    group: str
    name: str
    price: float


class OrderLine(TypedDict):
    line_id: str
    item_id: str
    name: str
    quantity: int
    options: list[LineOption]
    unit_price: float
    line_total: float


class Payment(TypedDict):
    type: Literal["charge", "refund", "adjustment"]
    amount: float
    payment_method_id: str
    at: str


class DeliveryAddress(TypedDict):
    street: str
    unit: str
    city: str
    state: str
    zip: str


class Timeline(TypedDict):
    """When the order reached each status it has been in."""

    placed: str
    confirmed: NotRequired[str]
    preparing: NotRequired[str]
    picked_up: NotRequired[str]
    delivered: NotRequired[str]
    cancelled: NotRequired[str]


class RefundedLine(TypedDict):
    line_id: str
    quantity: int
    amount: float
    name: NotRequired[str]


class Refund(TypedDict):
    refund_id: str
    reason: RefundReason
    items: list[RefundedLine]
    amount: float
    payment_method_id: str
    issued_at: str


class Cancellation(TypedDict):
    reason: CancelReason
    fee: float
    refund: float
    cancelled_at: str


class Order(TypedDict):
    """An order (``DD-`` + 6 digits); ``next_line`` numbers the next line added."""

    order_id: str
    customer_id: str
    restaurant_id: str
    restaurant_name: str
    status: OrderStatus
    items: list[OrderLine]
    next_line: int
    subtotal: float
    delivery_fee: float
    service_fee: float
    tip: float
    total: float
    payment_method_id: str
    payment_history: list[Payment]
    delivery_address: DeliveryAddress
    dropoff_instructions: str
    dasher_id: str | None
    timeline: Timeline
    quoted_eta: str
    eta: str | None
    customer_photos: list[str]
    refunds: list[Refund]
    cancellation: Cancellation | None


class Location(TypedDict):
    lat: float
    lng: float


class Dasher(TypedDict):
    dasher_id: str
    name: str
    vehicle: Literal["bike", "e-bike", "scooter", "car"]
    rating: float
    city: str
    status: Literal[
        "available", "heading_to_restaurant", "waiting_at_restaurant", "delivering", "offline"
    ]
    location: Location
    active_order_ids: list[str]


RECORDS: dict[str, type] = {
    "customers": Customer,
    "restaurants": Restaurant,
    "orders": Order,
    "dashers": Dasher,
}
"""The record type of each table."""

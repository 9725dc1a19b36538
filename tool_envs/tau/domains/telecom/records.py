"""The telecom database's records, typed: what each table's values hold (see :mod:`.data`).

Tables map a record's id to the record; records are plain JSON dicts (the database copies and
hashes them as such), so these are ``TypedDict``s: a description for readers and type checkers,
checked against the generated tables and every gold replay by the tests. ``devices`` is the
customer's side of dual control: only the phone's own tools change it.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from tool_envs.tau.records import CardBrand, StreetAddress


class Roaming(TypedDict):
    data_per_mb: float
    voice_per_minute: float
    sms: float


class Plan(TypedDict):
    """A plan; legacy plans are not ``available`` to switch to."""

    plan_id: str
    name: str
    monthly_price: float
    data_gb: int
    top_up_price_per_gb: float
    roaming: Roaming
    available: bool


class CreditCard(TypedDict):
    id: str
    type: Literal["credit_card"]
    brand: CardBrand
    last_four: str


class BankAccount(TypedDict):
    id: str
    type: Literal["bank_account"]
    bank: str
    last_four: str


PaymentMethod = CreditCard | BankAccount
"""Tagged by ``type``."""


class LineRef(TypedDict):
    line_id: str
    phone_number: str


class Customer(TypedDict):
    """An account holder (``C`` + 6 digits)."""

    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    address: StreetAddress
    account_status: Literal["active", "past_due"]
    payment_methods: dict[str, PaymentMethod]
    default_payment_method_id: str
    lines: list[LineRef]
    bill_ids: list[str]


class Line(TypedDict):
    """A phone line (``L`` + 6 digits) on a plan, as the carrier sees it."""

    line_id: str
    phone_number: str
    customer_id: str
    plan_id: str
    status: Literal["active", "suspended"]
    suspension_reason: Literal["lost or stolen", "overdue bill", "temporary hold"] | None
    roaming_enabled: bool
    data_used_gb: float
    data_top_up_gb: int
    device_id: str


class BillItem(TypedDict):
    description: str
    amount: float


class Bill(TypedDict):
    """A monthly bill (``B`` + 7 digits); ``payment_request`` is set when the agent sends one."""

    bill_id: str
    customer_id: str
    period: str
    issue_date: str
    due_date: str
    items: list[BillItem]
    amount: float
    status: Literal["pending", "overdue", "paid"]
    payment_request: Literal["sent", "completed"] | None
    paid_on: str | None


class Apn(TypedDict):
    name: str
    mmsc: str


class Device(TypedDict):
    """The customer's phone, keyed by its number: what only the customer can see and change."""

    phone_number: str
    device_id: str
    model: str
    location: str
    coverage_bars: int
    airplane_mode: bool
    mobile_data_enabled: bool
    roaming_enabled_on_device: bool
    apn: Apn
    sim_status: Literal["seated", "loose"]
    network_mode: Literal["auto", "4g_only", "3g_only", "2g_only"]
    needs_reboot: bool


RECORDS: dict[str, type] = {
    "plans": Plan,
    "customers": Customer,
    "lines": Line,
    "bills": Bill,
    "devices": Device,
}
"""The record type of each table."""

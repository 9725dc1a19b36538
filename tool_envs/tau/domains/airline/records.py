"""The airline database's records, typed: what each table's values hold (see :mod:`.data`).

Tables map a record's id to the record; records are plain JSON dicts (the database copies and
hashes them as such), so these are ``TypedDict``s: a description for readers and type checkers,
checked against the generated tables and every gold replay by the tests.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict

from tool_envs.tau.records import CreditCard, Name, PostalAddress

Cabin = Literal["basic_economy", "economy", "business"]
FlightStatus = Literal["available", "on time", "delayed", "flying", "landed", "cancelled"]


class Seats(TypedDict):
    basic_economy: int
    economy: int
    business: int


class FlightDate(TypedDict):
    """A flight on one date: seats and prices while on sale, actual times once it has gone."""

    status: FlightStatus
    actual_departure_time_est: NotRequired[str]
    actual_arrival_time_est: NotRequired[str]
    available_seats: NotRequired[Seats]
    prices: NotRequired[Seats]


class Flight(TypedDict):
    """A scheduled flight (``HAT`` + 3 digits) and its state per date."""

    flight_number: str
    origin: str
    destination: str
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    dates: dict[str, FlightDate]


class Voucher(TypedDict):
    """A gift card or a travel certificate, with what is left on it."""

    source: Literal["gift_card", "certificate"]
    id: str
    amount: int


PaymentMethod = CreditCard | Voucher
"""Tagged by ``source``."""


class Passenger(TypedDict):
    first_name: str
    last_name: str
    dob: str


class User(TypedDict):
    user_id: str
    name: Name
    address: PostalAddress
    email: str
    dob: str
    membership: Literal["regular", "silver", "gold"]
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    reservations: list[str]


class Segment(TypedDict):
    flight_number: str
    date: str
    price: int
    origin: str
    destination: str


class Payment(TypedDict):
    """A payment (positive) or refund (negative) on one payment method."""

    payment_id: str
    amount: int


class Reservation(TypedDict):
    """A booking (6 upper-case letters and digits); ``status`` is set only by a cancel."""

    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: Literal["one_way", "round_trip"]
    cabin: Cabin
    flights: list[Segment]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Literal["yes", "no"]
    status: NotRequired[Literal["cancelled"]]


RECORDS: dict[str, type] = {"flights": Flight, "users": User, "reservations": Reservation}
"""The record type of each table."""

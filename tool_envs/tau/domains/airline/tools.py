"""The airline agent's tools: search flights, read users and reservations, book, change, cancel.

Tools check what the data allows (ids exist, the reservation is still active, seats and balances
suffice, the amounts add up) and raise ``ValueError`` otherwise. What the *policy* allows (the
24-hour cancellation window, no flight changes in basic economy, who gets compensation) is the
agent's job, as in tau-bench: a write the policy forbids still succeeds, and the database no
longer matches the gold replay.

Every write is deterministic in its arguments and the current state (a new reservation's id is a
hash of the booking), so a correct agent and the gold replay reach the same database.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from typing import Any, Literal

from tool_envs.core.tools import format_result, tool
from tool_envs.tau.db import BaseTables
from tool_envs.tau.domains.airline.data import AIRPORTS, BAG_FEE, INSURANCE_FEE, MAX_PASSENGERS
from tool_envs.tau.domains.airline.data import NOW as _NOW
from tool_envs.tau.domains.airline.records import Cabin
from tool_envs.tau.tools import DomainTools

_PASSENGER_FIELDS = ("first_name", "last_name", "dob")


def _objects_with(value: Any, item: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """``value`` checked to be a non-empty list of objects with exactly ``fields``: a model
    that sends anything else reads which ``item`` was wrong and what it should have been."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"{item}s must be a non-empty list of {{{', '.join(fields)}}}")
    quoted = [f"'{field}'" for field in fields]
    exactly = f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    for entry in value:
        if not isinstance(entry, dict) or set(entry) != set(fields):
            raise ValueError(
                f"each {item} must be an object with exactly {exactly}, got {json.dumps(entry)}"
            )
    return value


_AIRPORT_TEXT = format_result([{"iata": code, "city": city} for code, city in AIRPORTS.items()])
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_PAYMENT_LIMITS = {"certificate": 1, "credit_card": 1, "gift_card": 3}


def _route_key(flight: dict[str, Any]) -> tuple[str, str]:
    return flight["origin"], flight["destination"]


def _origin_key(flight: dict[str, Any]) -> str:
    return flight["origin"]


def _money(value: float) -> int | float:
    """Whole dollars as int, else cents: 250.0 and 250 must hash the same."""
    value = round(float(value), 2)
    return int(value) if value.is_integer() else value


class AirlineTools(DomainTools):
    """Tools over the airline database (flights, users, reservations)."""

    quote_keys = True
    texts_per_process = True

    # ------------------------------------------------------------------ helpers (not tools)

    def _user(self, user_id: str) -> dict[str, Any]:
        return self._record("users", user_id, "user")

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        return self._record("reservations", reservation_id, "reservation")

    def _active(self, reservation_id: str) -> dict[str, Any]:
        reservation = self._reservation(reservation_id)
        if reservation.get("status") == "cancelled":
            raise ValueError(f"reservation '{reservation_id}' is cancelled and cannot be changed")
        return reservation

    def _flight(self, number: Any) -> dict[str, Any]:
        return self._record("flights", number, "flight")

    def _bookable(self, number: str, date: str, cabin: str, seats: int) -> tuple[dict, int]:
        """The flight and its current price in ``cabin``, if ``seats`` can be sold on ``date``."""
        flight = self._flight(number)
        day = flight["dates"].get(date)
        if day is None:
            raise ValueError(f"flight {number} does not fly on '{date}'")
        if day["status"] != "available":
            raise ValueError(f"flight {number} on {date} is not bookable (status: {day['status']})")
        if day["available_seats"][cabin] < seats:
            raise ValueError(
                f"flight {number} on {date} has {day['available_seats'][cabin]} {cabin} seats "
                f"left; {seats} needed"
            )
        return flight, day["prices"][cabin]

    def _move_seats(self, number: str, date: str, cabin: str, change: int) -> None:
        """Take (negative ``change``) or give back seats, on dates still open for sale."""
        flight = self.db.get("flights", number)
        if flight is None or flight["dates"].get(date, {}).get("status") != "available":
            return
        seats = self.db.edit("flights", number)["dates"][date]["available_seats"]
        seats[cabin] += change

    @staticmethod
    def _flight_refs(flights: Any) -> list[tuple[str, str]]:
        items = _objects_with(flights, "flight", ("flight_number", "date"))
        return [(str(item["flight_number"]), str(item["date"])) for item in items]

    def _check_itinerary(
        self, segments: list[dict[str, Any]], origin: str, destination: str, flight_type: str
    ) -> None:
        """The flights must chain from ``origin`` to ``destination`` (and back for round trips)."""
        if segments[0]["origin"] != origin:
            raise ValueError(f"the first flight leaves from {segments[0]['origin']}, not {origin}")
        for before, after in itertools.pairwise(segments):
            if before["destination"] != after["origin"]:
                raise ValueError(
                    f"flight {after['flight_number']} leaves from {after['origin']}, but the "
                    f"previous flight lands in {before['destination']}"
                )
            same_day = before["date"] == after["date"]
            if after["date"] < before["date"] or (
                same_day and after["departure"] <= before["arrival"]
            ):
                raise ValueError(
                    f"flight {after['flight_number']} on {after['date']} departs before "
                    f"flight {before['flight_number']} on {before['date']} arrives"
                )
        end = segments[-1]["destination"]
        if flight_type == "one_way":
            if end != destination:
                raise ValueError(f"the last flight lands in {end}, not {destination}")
        else:
            turns = [s["destination"] for s in segments[:-1]]
            if end != origin or destination not in turns:
                path = " -> ".join([segments[0]["origin"], *[s["destination"] for s in segments]])
                raise ValueError(
                    f"a round trip must fly {origin} -> {destination} -> {origin}; these flights "
                    f"go {path}"
                )

    @staticmethod
    def _segment(flight: dict[str, Any], date: str, price: int) -> dict[str, Any]:
        return {
            "flight_number": flight["flight_number"],
            "date": date,
            "price": price,
            "origin": flight["origin"],
            "destination": flight["destination"],
        }

    @staticmethod
    def _passengers(passengers: Any) -> list[dict[str, str]]:
        cleaned = []
        for person in _objects_with(passengers, "passenger", _PASSENGER_FIELDS):
            if not all(isinstance(person[k], str) and person[k].strip() for k in person):
                raise ValueError(f"passenger fields must be non-empty strings: {person}")
            try:
                dt.date.fromisoformat(person["dob"])
            except ValueError:
                raise ValueError(
                    f"dob '{person['dob']}' is not a date in the format YYYY-MM-DD"
                ) from None
            cleaned.append({k: person[k].strip() for k in _PASSENGER_FIELDS})
        return cleaned

    def _method(self, user: dict[str, Any], payment_id: Any) -> dict[str, Any]:
        method = user["payment_methods"].get(payment_id) if isinstance(payment_id, str) else None
        if method is None:
            raise ValueError(
                f"payment method '{payment_id}' is not in the profile of user '{user['user_id']}'"
            )
        return method

    def _charge_or_refund(self, user: dict[str, Any], payment_id: str, amount: float) -> None:
        """Charge ``amount`` (refund if negative) to a credit card or gift card of the user."""
        method = self._method(user, payment_id)
        if method["source"] == "certificate":
            raise ValueError("a travel certificate can only be used to pay for a new booking")
        if method["source"] == "gift_card":
            if amount > method["amount"]:
                raise ValueError(
                    f"gift card {payment_id} has a balance of {method['amount']}, less than "
                    f"the {_money(amount)} due"
                )
            edited = self.db.edit("users", user["user_id"])["payment_methods"][payment_id]
            edited["amount"] = _money(method["amount"] - amount)

    # ------------------------------------------------------------------ read tools
    #
    # Reads return JSON text, formatted exactly as the toolset formats a dict. A read whose
    # inputs are all unchanged base records always gives the same text, so that text is kept
    # per process (``texts_per_process``; see :meth:`_first_texts`): base records are never
    # mutated, and an episode's edited records are other objects, never cached.

    def _first_texts(self, base: BaseTables) -> dict[Any, Any]:
        """Every user and reservation rendered once per process (~0.1 s), so the common reads
        cost a dict lookup instead of a ``json.dumps``; searches are kept as they come."""
        texts: dict[Any, Any] = {}
        for user_id, user in base.tables["users"].items():
            texts["user", user_id] = format_result(user)
        flights = base.tables["flights"]
        for rid, reservation in base.tables["reservations"].items():
            texts["reservation", rid] = format_result(
                _with_status(reservation, lambda _table, key: flights.get(key))
            )
        return texts

    def _dumps(self, value: Any) -> str:
        return format_result(value)

    def _connections(self, origin: str, destination: str) -> list[tuple[str, str]]:
        """Flight-number pairs that connect ``origin`` to ``destination`` with one stop.

        Schedules never change, so the pairs are worked out once per airport pair.
        """
        views = self._text_store()
        key = ("connections", origin, destination)
        found = views.get(key)
        if found is not None:
            return found
        found = []
        for first_number in self.db.lookup("flights", "origin", _origin_key, origin):
            first = self.db.get("flights", first_number)
            stop = first["destination"]
            if stop == destination:
                continue
            onward = self.db.lookup("flights", "route", _route_key, (stop, destination))
            for second_number in onward:
                second = self.db.get("flights", second_number)
                if second["scheduled_departure_time_est"] > first["scheduled_arrival_time_est"]:
                    found.append((first_number, second_number))
        views[key] = found
        return found

    @tool
    def get_user_details(self, user_id: str) -> str:
        """Get a user's profile: name, contact details, date of birth, membership tier, payment
        methods (with gift card and certificate balances), saved passengers and reservation ids.

        Args:
            user_id: The user's id, such as 'sara_doe_4965'.
        """
        user = self._user(user_id)
        return self._cached(("user", user_id), [("users", user_id, user)], lambda: user)

    @tool
    def get_reservation_details(self, reservation_id: str) -> str:
        """Get a reservation: trip, cabin, flights (each with the price paid per passenger and
        its current status), passengers, payments, bags, insurance and when it was booked.

        Args:
            reservation_id: The reservation id, six letters and digits such as '8JX2WO'.
        """
        reservation = self._reservation(reservation_id)

        # Flight statuses never change through the tools, so only the reservation matters.
        key = ("reservation", reservation_id)
        return self._cached(
            key,
            [("reservations", reservation_id, reservation)],
            lambda: _with_status(reservation, self.db.get),
        )

    @tool
    def list_all_airports(self) -> str:
        """List every airport the airline serves, as IATA code and city."""
        return _AIRPORT_TEXT

    def _offer(self, flight: dict[str, Any], date: str) -> dict[str, Any] | None:
        day = flight["dates"].get(date)
        if day is None or day["status"] != "available":
            return None
        return {
            "flight_number": flight["flight_number"],
            "origin": flight["origin"],
            "destination": flight["destination"],
            "date": date,
            "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
            "available_seats": day["available_seats"],
            "prices": day["prices"],
        }

    @staticmethod
    def _check_search(origin: str, destination: str, date: str) -> None:
        for code in (origin, destination):
            if code not in AIRPORTS:
                raise ValueError(
                    f"'{code}' is not an airport we serve; use list_all_airports for IATA codes"
                )
        try:
            dt.date.fromisoformat(date)
        except ValueError:
            raise ValueError(f"date '{date}' is not in the format YYYY-MM-DD") from None

    def _flights_of(self, numbers: list[str]) -> list[tuple[str, str, Any]]:
        return [("flights", number, self.db.get("flights", number)) for number in numbers]

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> str:
        """Search direct flights between two airports on a date that can still be booked, with
        their schedule, seats left and price per passenger in each cabin.

        Args:
            origin: IATA code of the departure airport, such as 'JFK'.
            destination: IATA code of the arrival airport, such as 'LAX'.
            date: The date of the flight, in the format 'YYYY-MM-DD'.
        """
        self._check_search(origin, destination, date)
        numbers = self.db.lookup("flights", "route", _route_key, (origin, destination))
        flights = self._flights_of(numbers)

        def build() -> list[dict[str, Any]]:
            offers = (self._offer(flight, date) for _, _, flight in flights)
            return [offer for offer in offers if offer is not None]

        return self._cached(("direct", origin, destination, date), flights, build)

    @tool
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> str:
        """Search connections with exactly one stop on a date: pairs of bookable flights where
        the second leaves the connecting airport after the first lands, the same day.

        Args:
            origin: IATA code of the departure airport, such as 'JFK'.
            destination: IATA code of the arrival airport, such as 'LAX'.
            date: The date of the first flight, in the format 'YYYY-MM-DD'.
        """
        self._check_search(origin, destination, date)
        pairs = [
            (self.db.get("flights", first), self.db.get("flights", second))
            for first, second in self._connections(origin, destination)
        ]
        used = [("flights", f["flight_number"], f) for pair in pairs for f in pair]

        def build() -> list[list[dict[str, Any]]]:
            found = []
            for first, second in pairs:
                offers = [self._offer(first, date), self._offer(second, date)]
                if offers[0] is not None and offers[1] is not None:
                    found.append(offers)
            return found

        return self._cached(("onestop", origin, destination, date), used, build)

    # ------------------------------------------------------------------ write tools

    @tool(writes=True)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: Literal["one_way", "round_trip"],
        cabin: Cabin,
        flights: list[dict],
        passengers: list[dict],
        payment_methods: list[dict],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Literal["yes", "no"],
    ) -> dict[str, Any]:
        """Book a new reservation and charge it. Only after the user confirmed every detail and
        the total price. The total must equal: sum of the flights' prices in the cabin times the
        number of passengers, plus 30 per passenger with insurance, plus 50 per non-free bag.

        Args:
            user_id: The id of the user who books, such as 'sara_doe_4965'.
            origin: IATA code of the trip's origin, such as 'SFO'.
            destination: IATA code of the trip's destination (the turning point of a round trip).
            flight_type: 'one_way' or 'round_trip'.
            cabin: The cabin for every flight: 'basic_economy', 'economy' or 'business'.
            flights: Every flight of the trip in order, each
                {"flight_number": "HAT001", "date": "2024-05-20"}.
            passengers: Each passenger as
                {"first_name": ..., "last_name": ..., "dob": "YYYY-MM-DD"}; at most 5.
            payment_methods: How the total is paid, each {"payment_id": ..., "amount": ...}
                with ids from the user's profile; at most one certificate, one credit card
                and three gift cards.
            total_baggages: The number of checked bags for the whole reservation.
            nonfree_baggages: How many of those bags are paid (beyond the free allowance).
            insurance: 'yes' to buy travel insurance (30 per passenger), else 'no'.
        """
        user = self._user(user_id)
        for code in (origin, destination):
            if code not in AIRPORTS:
                raise ValueError(f"'{code}' is not an airport we serve")
        people = self._passengers(passengers)
        if len(people) > MAX_PASSENGERS:
            raise ValueError(f"a reservation can have at most {MAX_PASSENGERS} passengers")
        segments = []
        for number, date in self._flight_refs(flights):
            flight, price = self._bookable(number, date, cabin, len(people))
            segment = self._segment(flight, date, price)
            segment["departure"] = flight["scheduled_departure_time_est"]
            segment["arrival"] = flight["scheduled_arrival_time_est"]
            segments.append(segment)
        self._check_itinerary(segments, origin, destination, flight_type)
        if not 0 <= nonfree_baggages <= total_baggages:
            raise ValueError("bags: need 0 <= nonfree_baggages <= total_baggages")
        total = sum(s["price"] for s in segments) * len(people)
        total += INSURANCE_FEE * len(people) * (insurance == "yes") + BAG_FEE * nonfree_baggages

        if not isinstance(payment_methods, list) or not payment_methods:
            raise ValueError("payment_methods must be a non-empty list of {payment_id, amount}")
        payments: dict[str, int | float] = {}
        counts = dict.fromkeys(_PAYMENT_LIMITS, 0)
        for item in payment_methods:
            if not isinstance(item, dict) or set(item) != {"payment_id", "amount"}:
                raise ValueError(
                    "each payment must be an object with exactly 'payment_id' and 'amount', "
                    f"got {json.dumps(item)}"
                )
            amount = item["amount"]
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
                raise ValueError(f"payment amount must be a positive number, got {amount!r}")
            method = self._method(user, item["payment_id"])
            if item["payment_id"] in payments:
                raise ValueError(f"payment method {item['payment_id']} is listed twice")
            counts[method["source"]] += 1
            if method["source"] in ("gift_card", "certificate") and amount > method["amount"]:
                raise ValueError(
                    f"{item['payment_id']} has a balance of {method['amount']}, less than {amount}"
                )
            payments[item["payment_id"]] = _money(amount)
        for source, limit in _PAYMENT_LIMITS.items():
            if counts[source] > limit:
                raise ValueError(f"at most {limit} {source.replace('_', ' ')}(s) per booking")
        paid = _money(sum(payments.values()))
        if paid != _money(total):
            raise ValueError(f"the payments add up to {paid}, but the total price is {total}")

        booking = {
            "user_id": user_id, "flights": flights, "passengers": people, "cabin": cabin,
            "payments": payments, "bags": [total_baggages, nonfree_baggages],
            "insurance": insurance, "origin": origin, "destination": destination,
        }  # fmt: skip
        reservation_id = _new_id(json.dumps(booking, sort_keys=True, default=str), self.db)
        for segment in segments:
            del segment["departure"], segment["arrival"]
            self._move_seats(segment["flight_number"], segment["date"], cabin, -len(people))
        edited_user = self.db.edit("users", user_id)
        for payment_id, amount in payments.items():
            method = edited_user["payment_methods"][payment_id]
            if method["source"] != "credit_card":
                method["amount"] = _money(method["amount"] - amount)
        edited_user["reservations"].append(reservation_id)
        record = {
            "reservation_id": reservation_id,
            "user_id": user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": segments,
            "passengers": people,
            "payment_history": [
                {"payment_id": pid, "amount": amount} for pid, amount in sorted(payments.items())
            ],
            "created_at": _NOW,
            "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
        }
        return self.db.insert("reservations", reservation_id, record)

    @tool(writes=True)
    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        """Cancel a whole reservation and refund every payment to the method it came from.
        Only when the policy allows the cancellation and the user confirmed it.

        Args:
            reservation_id: The reservation id, such as '8JX2WO'.
        """
        reservation = self._active(reservation_id)
        net: dict[str, int | float] = {}
        for payment in reservation["payment_history"]:
            net[payment["payment_id"]] = net.get(payment["payment_id"], 0) + payment["amount"]
        user = self.db.get("users", reservation["user_id"])
        edited = self.db.edit("reservations", reservation_id)
        for payment_id, amount in net.items():
            if amount <= 0:
                continue
            edited["payment_history"].append({"payment_id": payment_id, "amount": _money(-amount)})
            method = user["payment_methods"].get(payment_id) if user else None
            if method is not None and method["source"] != "credit_card":
                balance = self.db.edit("users", user["user_id"])["payment_methods"][payment_id]
                balance["amount"] = _money(balance["amount"] + amount)
        for segment in reservation["flights"]:
            self._move_seats(
                segment["flight_number"],
                segment["date"],
                reservation["cabin"],
                len(reservation["passengers"]),
            )
        edited["status"] = "cancelled"
        return edited

    @tool(writes=True)
    def update_reservation_flights(
        self, reservation_id: str, cabin: Cabin, flights: list[dict], payment_id: str
    ) -> dict[str, Any]:
        """Change a reservation's flights and/or cabin, charging or refunding the price
        difference for all passengers. Only after the user confirmed. Flights kept unchanged in
        the same cabin keep the price paid; all others are priced at today's fare.

        Args:
            reservation_id: The reservation id, such as '8JX2WO'.
            cabin: The cabin for every flight after the change.
            flights: ALL flights of the reservation after the change, in order (unchanged
                ones too), each {"flight_number": ..., "date": ...}.
            payment_id: A credit card or gift card from the user's profile for the difference.
        """
        reservation = self._active(reservation_id)
        user = self._user(reservation["user_id"])
        self._method(user, payment_id)
        count = len(reservation["passengers"])
        same_cabin = cabin == reservation["cabin"]
        old = {(s["flight_number"], s["date"]): s for s in reservation["flights"]}
        segments, kept = [], set()
        for number, date in self._flight_refs(flights):
            if same_cabin and (number, date) in old:
                flight = self._flight(number)
                segment = self._segment(flight, date, old[number, date]["price"])
                kept.add((number, date))
            else:
                flight, price = self._bookable(number, date, cabin, count)
                segment = self._segment(flight, date, price)
            segment["departure"] = flight["scheduled_departure_time_est"]
            segment["arrival"] = flight["scheduled_arrival_time_est"]
            segments.append(segment)
        self._check_itinerary(
            segments, reservation["origin"], reservation["destination"], reservation["flight_type"]
        )
        if same_cabin and len(kept) == len(segments) == len(old):
            raise ValueError("these are the reservation's current flights and cabin: no change")
        difference = (
            sum(s["price"] for s in segments) - sum(s["price"] for s in reservation["flights"])
        ) * count
        self._charge_or_refund(user, payment_id, difference)
        for key in old:
            if key not in kept:
                self._move_seats(*key, reservation["cabin"], count)
        for segment in segments:
            del segment["departure"], segment["arrival"]
            if (segment["flight_number"], segment["date"]) not in kept:
                self._move_seats(segment["flight_number"], segment["date"], cabin, -count)
        edited = self.db.edit("reservations", reservation_id)
        edited["flights"] = segments
        edited["cabin"] = cabin
        if difference:
            edited["payment_history"].append(
                {"payment_id": payment_id, "amount": _money(difference)}
            )
        return edited

    @tool(writes=True)
    def update_reservation_passengers(
        self, reservation_id: str, passengers: list[dict]
    ) -> dict[str, Any]:
        """Replace the passengers' details of a reservation; their number cannot change.
        Only after the user confirmed.

        Args:
            reservation_id: The reservation id, such as '8JX2WO'.
            passengers: ALL passengers after the change, in order, each
                {"first_name": ..., "last_name": ..., "dob": "YYYY-MM-DD"}.
        """
        reservation = self._active(reservation_id)
        people = self._passengers(passengers)
        if len(people) != len(reservation["passengers"]):
            raise ValueError(
                f"the reservation has {len(reservation['passengers'])} passengers; the number "
                f"of passengers cannot change (got {len(people)})"
            )
        edited = self.db.edit("reservations", reservation_id)
        edited["passengers"] = people
        return edited

    @tool(writes=True)
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> dict[str, Any]:
        """Add checked bags to a reservation, charging 50 per additional non-free bag.
        Only after the user confirmed. Bags cannot be removed.

        Args:
            reservation_id: The reservation id, such as '8JX2WO'.
            total_baggages: The new total number of checked bags of the reservation.
            nonfree_baggages: The new number of paid bags among them.
            payment_id: A credit card or gift card from the user's profile for the fee.
        """
        reservation = self._active(reservation_id)
        user = self._user(reservation["user_id"])
        if not 0 <= nonfree_baggages <= total_baggages:
            raise ValueError("bags: need 0 <= nonfree_baggages <= total_baggages")
        if total_baggages < reservation["total_baggages"]:
            raise ValueError(
                f"the reservation already has {reservation['total_baggages']} checked bags; "
                "bags cannot be removed"
            )
        if nonfree_baggages < reservation["nonfree_baggages"]:
            raise ValueError(
                f"the reservation already has {reservation['nonfree_baggages']} paid bags; "
                "paid bags cannot become free"
            )
        if (total_baggages, nonfree_baggages) == (
            reservation["total_baggages"],
            reservation["nonfree_baggages"],
        ):
            raise ValueError("these are the reservation's current bags: no change")
        fee = BAG_FEE * (nonfree_baggages - reservation["nonfree_baggages"])
        method = self._method(user, payment_id)
        if method["source"] == "certificate":
            raise ValueError("a travel certificate can only be used to pay for a new booking")
        if fee:
            self._charge_or_refund(user, payment_id, fee)
        edited = self.db.edit("reservations", reservation_id)
        edited["total_baggages"] = total_baggages
        edited["nonfree_baggages"] = nonfree_baggages
        if fee:
            edited["payment_history"].append({"payment_id": payment_id, "amount": fee})
        return edited

    @tool(writes=True)
    def send_certificate(self, user_id: str, amount: int) -> str:
        """Add a travel certificate (a voucher for future bookings) to a user's profile, as
        compensation the policy allows. Only after the user confirmed.

        Args:
            user_id: The user's id, such as 'sara_doe_4965'.
            amount: The certificate's value in dollars.
        """
        user = self._user(user_id)
        if isinstance(amount, bool) or amount <= 0:
            raise ValueError(f"amount must be a positive number of dollars, got {amount!r}")
        seed = f"{user_id}|{amount}|{len(user['payment_methods'])}"
        digits = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
        while True:
            payment_id = f"certificate_{digits % 9_000_000 + 1_000_000}"
            if payment_id not in user["payment_methods"]:
                break
            digits //= 7
        edited = self.db.edit("users", user_id)
        edited["payment_methods"][payment_id] = {
            "source": "certificate",
            "id": payment_id,
            "amount": _money(amount),
        }
        return f"Certificate {payment_id} worth {_money(amount)} added to user {user_id}."


def _with_status(reservation: dict[str, Any], get: Any) -> dict[str, Any]:
    """The reservation as get_reservation_details shows it: each flight with its status."""
    flights = []
    for segment in reservation["flights"]:
        flight = get("flights", segment["flight_number"])
        day = flight["dates"].get(segment["date"], {}) if flight else {}
        flights.append({**segment, "status": day.get("status", "unknown")})
    return {**reservation, "flights": flights}


def _new_id(text: str, db: Any) -> str:
    """Six letters and digits from a hash of the booking, skipping ids already taken."""
    salt = 0
    while True:
        number = int.from_bytes(hashlib.sha256(f"{salt}|{text}".encode()).digest()[:8], "big")
        rid = ""
        for _ in range(6):
            number, digit = divmod(number, 36)
            rid += _ALPHABET[digit]
        if db.get("reservations", rid) is None:
            return rid
        salt += 1

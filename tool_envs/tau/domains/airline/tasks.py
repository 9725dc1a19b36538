"""Seeded generator of airline tasks: bookings, changes, cancellations, compensation, refusals.

Each task is drawn from the database (a real user, a real reservation, real flights), its gold
actions are exactly what a correct agent calls (the reads it needs, then the writes), and they
are replayed through the tools while generating, so every gold action is known to succeed and
every required output (a total, a refund, a fee, a quote) is computed from the database.

Categories (per split, in fixed proportions; see :data:`CATEGORY_WEIGHTS`):

- ``book_one_way``, ``book_round_trip``, ``book_one_stop``: a new reservation with passengers,
  bags, insurance and a payment choice; output: the total price;
- ``cancel``: a cancellation the policy allows (24 hours, airline-cancelled flight, business,
  insured with a covered reason); output: the refund. ``cancel_two``: two reservations, one or
  both of which may be cancelled;
- ``cancel_refused``: not allowed; output: what was paid. ``cancel_refused_then_change``: the
  user moves the flight instead; output: the price difference;
- ``change_flight``, ``change_cabin``, ``add_bags``, ``update_passengers`` and the pairs
  ``change_flight_and_bags``, ``change_cabin_and_passengers``;
- ``certificate`` (delayed or cancelled flight, eligible user) and ``cancel_with_certificate``;
  ``compensation_refused_cancel`` (not eligible, but the flight was cancelled, so the trip may be
  cancelled);
- ``basic_economy_change_refused``: output: what an upgrade to economy would cost (declined);
- ``transfer_after_write`` (a write, then a request only a human can handle),
  ``transfer`` and ``refusal`` (no write, no output: the only tasks a do-nothing agent passes,
  kept under 4% of each split).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Toolset
from tool_envs.tau.db import Database, Tables
from tool_envs.tau.domains.airline.data import (
    AIRPORTS,
    BAG_FEE,
    FREE_BAGS,
    INSURANCE_FEE,
    TODAY,
    load_tables,
)
from tool_envs.tau.domains.airline.tools import AirlineTools
from tool_envs.tau.drafts import Action, Draft, Finished, Part, TaskWriter, call
from tool_envs.tau.taskgen import TaskContext, TaskSource
from tool_envs.tau.tools import write_tool_names

ENV_ID = "tool_envs/TauAirline-v0"
DOMAIN_NAME = "airline"
POLICY = Path(__file__).with_name("policy.md").read_text(encoding="utf-8")
WRITE_TOOLS = write_tool_names(AirlineTools)
_WRITER = TaskWriter(writes=WRITE_TOOLS, confirm_rule="")
"""No confirm rule in airline's instructions: the scenario's ``confirm`` says how users answer."""

CATEGORY_WEIGHTS: dict[str, float] = {
    "book_one_way": 10,
    "book_round_trip": 8,
    "book_one_stop": 4,
    "cancel": 9,
    "cancel_two": 4,
    "cancel_refused": 6,
    "cancel_refused_then_change": 3,
    "change_flight": 9,
    "change_cabin": 7,
    "add_bags": 8,
    "update_passengers": 6,
    "certificate": 5,
    "cancel_with_certificate": 2,
    "compensation_refused_cancel": 2,
    "basic_economy_change_refused": 4,
    "change_flight_and_bags": 3,
    "change_cabin_and_passengers": 2,
    "transfer_after_write": 3,
    "transfer": 1.5,
    "refusal": 1.5,
}
"""Share of each category in every split (the counts are rounded, largest remainder first)."""

_WINDOW_START = "2024-05-14T15:00:00"  # booked after this: inside the 24-hour window
_FLOWN = frozenset({"landed", "flying"})
_TRAITS = (
    "patient and polite",
    "in a hurry and a bit curt",
    "friendly and chatty",
    "precise and detail-oriented",
    "stressed about travel plans",
    "calm and matter-of-fact",
)
_CABIN_WORDS = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}
_COVERED_REASONS = (
    "a passenger has fallen ill and cannot travel",
    "a severe storm is forecast at the destination",
)


def _city(code: str) -> str:
    return f"{AIRPORTS[code]} ({code})"


def _date_words(date: str) -> str:
    day = dt.date.fromisoformat(date)
    return f"May {day.day}"


def _amount(value: float) -> str:
    """How a required output states money: a plain number, no currency sign."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _person(first: str, last: str, dob: str) -> dict[str, str]:
    return {"first_name": first, "last_name": last, "dob": dob}


def _describe(person: dict[str, str]) -> str:
    return f"{person['first_name']} {person['last_name']} (born {person['dob']})"


def _draft(
    ctx: _Context,
    user_id: str,
    reason: str,
    known: dict[str, str],
    instructions: str,
    actions: list[Action],
    outputs: Sequence[str] = (),
    confirm: bool = True,
    question: str = "",
) -> Draft:
    """One request of one user as the kit's draft; ``reason`` is the user's whole opening, to
    which ``question`` (what the user wants to be told, :attr:`Part.question`) is added."""
    part = Part(
        actions,
        info=known,
        instruction=instructions,
        ask=reason,
        outputs=list(outputs),
        question=question,
    )
    opening = f"{reason} {question}" if question else reason
    return Draft(ctx.users[user_id], [part], reason_for_call=opening, confirm=confirm)


class _Context(TaskContext):
    """What the categories draw from: the database, facts about its records, plans of changes
    (each drawn with the generation's ``rng``), and a replay that every gold call must pass."""

    tools_class = AirlineTools

    def __init__(self, tables: Tables):
        super().__init__(tables)
        self.users = self.tables["users"]
        self.flights = self.tables["flights"]
        self.reservations = self.tables["reservations"]
        self.toolset = Toolset.from_object(self.tools)
        self.user_ids = list(self.users)
        self.reservation_ids = list(self.reservations)
        self.routes: dict[tuple[str, str], list[str]] = {}
        for number, flight in self.flights.items():
            self.routes.setdefault((flight["origin"], flight["destination"]), []).append(number)
        self.route_keys = list(self.routes)
        self.future_dates = [f"2024-05-{day:02d}" for day in range(17, 31)]

    # ----------------------------------------------------------------- facts about records

    def status(self, segment: dict[str, Any]) -> str:
        return self.flights[segment["flight_number"]]["dates"][segment["date"]]["status"]

    def active(self, rid: str) -> bool:
        return self.reservations[rid].get("status") != "cancelled"

    def flown(self, rid: str) -> bool:
        return any(self.status(s) in _FLOWN for s in self.reservations[rid]["flights"])

    def on_sale(self, rid: str) -> bool:
        return all(self.status(s) == "available" for s in self.reservations[rid]["flights"])

    def changeable(self, rid: str) -> bool:
        return self.active(rid) and not self.flown(rid)

    def movable(self, rid: str) -> bool:
        """Its flights may be changed: not flown, all on sale, and not basic economy."""
        return (
            self.changeable(rid)
            and self.on_sale(rid)
            and self.reservations[rid]["cabin"] != "basic_economy"
        )

    def cancel_grounds(self, rid: str) -> list[str]:
        """Why the policy allows cancelling (the insurance ground needs a covered reason)."""
        res = self.reservations[rid]
        grounds = []
        if res["created_at"] > _WINDOW_START:
            grounds.append("24h")
        if any(self.status(s) == "cancelled" for s in res["flights"]):
            grounds.append("airline_cancelled")
        if res["cabin"] == "business":
            grounds.append("business")
        if res["insurance"] == "yes":
            grounds.append("insurance")
        return grounds

    def paid(self, rid: str) -> int | float:
        return sum(p["amount"] for p in self.reservations[rid]["payment_history"])

    def allowance(self, user_id: str, cabin: str, passengers: int) -> int:
        return FREE_BAGS[self.users[user_id]["membership"]][cabin] * passengers

    def legs(self, rid: str) -> list[list[int]]:
        """Indexes of the reservation's flights per direction (outbound, then return)."""
        res = self.reservations[rid]
        if res["flight_type"] == "one_way":
            return [list(range(len(res["flights"])))]
        turn = next(
            i for i, s in enumerate(res["flights"]) if s["destination"] == res["destination"]
        )
        return [list(range(turn + 1)), list(range(turn + 1, len(res["flights"])))]

    def methods(self, user_id: str, source: str) -> list[dict[str, Any]]:
        return [m for m in self.users[user_id]["payment_methods"].values() if m["source"] == source]

    def pay_difference(
        self, rng: random.Random, user_id: str, amount: float
    ) -> dict[str, Any] | None:
        """A credit card, or a gift card that covers ``amount``, to charge or refund."""
        options = self.methods(user_id, "credit_card") + [
            m for m in self.methods(user_id, "gift_card") if m["amount"] >= amount
        ]
        return rng.choice(options) if options else None

    @staticmethod
    def payment_words(method: dict[str, Any]) -> str:
        if method["source"] == "credit_card":
            return (
                f"my {method['brand']} credit card ending in {method['last_four']} ({method['id']})"
            )
        return f"my {method['source'].replace('_', ' ')} {method['id']}"

    def accept(self, rng: random.Random, finished: Finished) -> Finished:
        """Every gold call already succeeded while drawing; only a kept task gets a persona."""
        scenario, actions, outputs, writes = finished
        name = self.users[scenario["known_info"]["user_id"]]["name"]
        persona = f"You are {name['first_name']} {name['last_name']}, {rng.choice(_TRAITS)}."
        return {**scenario, "persona": persona}, actions, outputs, writes

    # ----------------------------------------------------------------- replay

    def run_gold(self, actions: list[dict[str, Any]]) -> list[Any]:
        """Run the actions on a fresh database; every one must succeed. Returns the results."""
        self.tools.db = Database(self.base)
        results = []
        for action in actions:
            outcome = self.toolset.call(ToolCall(action["name"], dict(action["arguments"])))
            if outcome.error is not None:
                raise AssertionError(f"gold action {action} failed: {outcome.content}")
            try:
                results.append(json.loads(outcome.content))
            except json.JSONDecodeError:
                results.append(outcome.content)
        return results

    def search(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        self.tools.db = Database(self.base)
        return json.loads(self.tools.search_direct_flight(origin, destination, date))

    def choose(
        self,
        rng: random.Random,
        offers: list[Any],
        cabin: str,
        seats: int,
        price: Callable[[Any], int],
    ) -> tuple[str, Any] | None:
        """A preference that singles out one offer with enough seats, and that offer."""
        if not offers:
            return None
        keys: dict[str, Callable[[Any], Any]] = {
            "cheapest": price,
            "earliest": lambda o: _first(o)["scheduled_departure_time_est"],
            "latest": lambda o: _Reverse(_first(o)["scheduled_departure_time_est"]),
        }
        kinds = list(keys)
        rng.shuffle(kinds)
        for kind in kinds:
            key = keys[kind]
            ranked = sorted(offers, key=key)
            if len(ranked) > 1 and key(ranked[0]) == key(ranked[1]):
                continue
            best = ranked[0]
            legs = best if isinstance(best, list) else [best]
            if all(leg["available_seats"][cabin] >= seats for leg in legs):
                return kind, best
        return None

    # ----------------------------------------------------------------- plans of changes

    def booking_payment(
        self, rng: random.Random, user_id: str, total: int
    ) -> tuple[list | None, str]:
        """How the user pays a booking: one card, a gift card, or a certificate plus a card."""
        cards = self.methods(user_id, "credit_card")
        gifts = [m for m in self.methods(user_id, "gift_card") if m["amount"] >= total]
        certificates = [m for m in self.methods(user_id, "certificate") if m["amount"] < total]
        options = []
        if cards:
            options.append("card")
        if gifts:
            options.append("gift")
        if certificates and cards:
            options.append("certificate")
        if not options:
            return None, ""
        option = rng.choice(options)
        if option == "card":
            card = rng.choice(cards)
            return [{"payment_id": card["id"], "amount": total}], self.payment_words(card)
        if option == "gift":
            gift = rng.choice(gifts)
            return [{"payment_id": gift["id"], "amount": total}], self.payment_words(gift)
        certificate, card = rng.choice(certificates), rng.choice(cards)
        words = (
            f"the whole balance of {self.payment_words(certificate)} first, and the rest with "
            f"{self.payment_words(card)}"
        )
        return [
            {"payment_id": certificate["id"], "amount": certificate["amount"]},
            {"payment_id": card["id"], "amount": total - certificate["amount"]},
        ], words

    def pick_reservation(
        self, rng: random.Random, test: Callable[[str], bool], tries: int = 400
    ) -> str | None:
        for _ in range(tries):
            rid = rng.choice(self.reservation_ids)
            if test(rid):
                return rid
        return None

    def reads(self, user_id: str, *rids: str) -> list[dict[str, Any]]:
        return [
            call("get_user_details", user_id=user_id),
            *[call("get_reservation_details", reservation_id=rid) for rid in rids],
        ]

    def refusable(self, rid: str) -> bool:
        grounds = self.cancel_grounds(rid)
        return self.changeable(rid) and not (set(grounds) - {"insurance"})

    def change_flight_plan(self, rng: random.Random, rid: str) -> dict[str, Any] | None:
        """Move one direction of the reservation to a direct flight on another date."""
        res = self.reservations[rid]
        legs = self.legs(rid)
        which = rng.randrange(len(legs))
        leg = legs[which]
        first, last = res["flights"][leg[0]], res["flights"][leg[-1]]
        origin, destination = first["origin"], last["destination"]
        if (origin, destination) not in self.routes:
            return None
        low, high = "2024-05-16", "2024-05-30"
        if which == 0 and len(legs) == 2:
            high = res["flights"][legs[1][0]]["date"]
        if which == 1:
            low = res["flights"][legs[0][-1]]["date"]
        dates = [d for d in self.future_dates if low < d < high and d != first["date"]]
        if not dates:
            return None
        date = rng.choice(dates)
        count = len(res["passengers"])
        cabin = res["cabin"]
        picked = self.choose(
            rng, self.search(origin, destination, date), cabin, count, lambda o: o["prices"][cabin]
        )
        if picked is None:
            return None
        preference, offer = picked
        new = {"flight_number": offer["flight_number"], "date": date}
        flights = []
        for i, segment in enumerate(res["flights"]):
            if i in leg:
                if i == leg[0]:
                    flights.append(new)
            else:
                flights.append({"flight_number": segment["flight_number"], "date": segment["date"]})
        old_price = sum(res["flights"][i]["price"] for i in leg)
        difference = (offer["prices"][cabin] - old_price) * count
        if difference == 0:
            return None
        method = self.pay_difference(rng, res["user_id"], difference)
        if method is None:
            return None
        direction = "outbound" if which == 0 else "return"
        words = (
            f"move the {direction} flight ({AIRPORTS[origin]} to {AIRPORTS[destination]}) to "
            f"{_date_words(date)}, on the {preference} direct flight that day"
        )
        return {
            "actions": [
                call("search_direct_flight", origin=origin, destination=destination, date=date),
                call(
                    "update_reservation_flights",
                    reservation_id=rid,
                    cabin=cabin,
                    flights=flights,
                    payment_id=method["id"],
                ),
            ],
            "known": {
                "target_date": date,
                "flight_choice": f"the {preference} direct flight on {_date_words(date)}",
                "payment_choice": self.payment_words(method),
            },
            "words": words + f", paying or getting refunded through {self.payment_words(method)}",
            "outputs": [_amount(abs(difference))],
            "direction": direction,
        }

    def cabin_plan(
        self, rng: random.Random, rid: str, new_cabin: str | None = None
    ) -> dict[str, Any] | None:
        res = self.reservations[rid]
        count = len(res["passengers"])
        if new_cabin is None:
            choices = [c for c in ("basic_economy", "economy", "business") if c != res["cabin"]]
            new_cabin = rng.choice(choices)
        searches, difference = [], 0
        for segment in res["flights"]:
            day = self.flights[segment["flight_number"]]["dates"][segment["date"]]
            if day["available_seats"][new_cabin] < count:
                return None
            difference += (day["prices"][new_cabin] - segment["price"]) * count
            search = call(
                "search_direct_flight",
                origin=segment["origin"],
                destination=segment["destination"],
                date=segment["date"],
            )
            if search not in searches:
                searches.append(search)
        if difference == 0:
            return None
        return {"cabin": new_cabin, "searches": searches, "difference": difference}

    def bags_plan(
        self, rng: random.Random, rid: str, extra: int | None = None
    ) -> dict[str, Any] | None:
        res = self.reservations[rid]
        user_id = res["user_id"]
        extra = extra or rng.choices((1, 2, 3), (5, 3, 1))[0]
        total = res["total_baggages"] + extra
        allowance = self.allowance(user_id, res["cabin"], len(res["passengers"]))
        nonfree = max(0, total - allowance)
        if nonfree < res["nonfree_baggages"]:
            return None
        fee = BAG_FEE * (nonfree - res["nonfree_baggages"])
        method = self.pay_difference(rng, user_id, fee)
        if method is None:
            return None
        return {
            "action": call(
                "update_reservation_baggages",
                reservation_id=rid,
                total_baggages=total,
                nonfree_baggages=nonfree,
                payment_id=method["id"],
            ),
            "fee": fee,
            "extra": extra,
            "method": method,
        }

    def passenger_plan(self, rng: random.Random, rid: str) -> dict[str, Any] | None:
        res = self.reservations[rid]
        user = self.users[res["user_id"]]
        passengers = [dict(p) for p in res["passengers"]]
        index = rng.randrange(len(passengers))
        old = passengers[index]
        kind = rng.choice(("dob", "last_name", "replace"))
        if kind == "dob":
            day = dt.date.fromisoformat(old["dob"])
            new_dob = (day + dt.timedelta(days=rng.choice((-3, -1, 1, 2, 10)))).isoformat()
            passengers[index] = {**old, "dob": new_dob}
            words = (
                f"the date of birth of {old['first_name']} {old['last_name']} should be {new_dob}"
            )
        elif kind == "last_name":
            new_last = old["last_name"] + rng.choice(("-Smith", "e", "s"))
            passengers[index] = {**old, "last_name": new_last}
            words = (
                f"{old['first_name']} {old['last_name']}'s last name should be spelled {new_last}"
            )
        else:
            names = {(p["first_name"], p["last_name"]) for p in passengers}
            candidates = [
                p
                for p in user["saved_passengers"]
                if (p["first_name"], p["last_name"]) not in names
            ]
            if not candidates:
                return None
            person = rng.choice(candidates)
            passengers[index] = dict(person)
            words = (
                f"{old['first_name']} {old['last_name']} can no longer travel; replace them with "
                f"my saved passenger {_describe(person)}"
            )
        return {
            "action": call(
                "update_reservation_passengers", reservation_id=rid, passengers=passengers
            ),
            "words": words,
        }

    def eligible(self, rid: str) -> bool:
        res = self.reservations[rid]
        membership = self.users[res["user_id"]]["membership"]
        return membership != "regular" or res["insurance"] == "yes" or res["cabin"] == "business"

    def disrupted(self, rid: str) -> tuple[dict[str, Any], str] | None:
        for segment in self.reservations[rid]["flights"]:
            if self.status(segment) in ("cancelled", "delayed") and segment["date"] >= TODAY:
                return segment, self.status(segment)
        return None


class _Reverse:
    """Sort key wrapper that inverts the order of strings (latest first)."""

    def __init__(self, value: str):
        self.value = value

    def __lt__(self, other: _Reverse) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reverse) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]


def _first(offer: Any) -> dict[str, Any]:
    return offer[0] if isinstance(offer, list) else offer


# --------------------------------------------------------------------------- categories
# Each draws one task with the generation's rng: a draft, or None to draw again.


def _book(rng: random.Random, ctx: _Context, kind: str) -> Draft | None:
    user_id = rng.choice(ctx.user_ids)
    user = ctx.users[user_id]
    cabin = rng.choices(("basic_economy", "economy", "business"), (3, 5, 2))[0]
    date = rng.choice(ctx.future_dates[:-4])
    if kind == "book_one_stop":
        origin, destination = rng.sample(sorted(AIRPORTS), 2)
        if (origin, destination) in ctx.routes:
            return None
        ctx.tools.db = Database(ctx.base)
        offers = json.loads(ctx.tools.search_onestop_flight(origin, destination, date))
    else:
        origin, destination = rng.choice(ctx.route_keys)
        offers = ctx.search(origin, destination, date)
    count = rng.choices((1, 2, 3), (5, 3, 2))[0]
    passengers = [_person(user["name"]["first_name"], user["name"]["last_name"], user["dob"])]
    saved = list(user["saved_passengers"])
    rng.shuffle(saved)
    companions_words = []
    while len(passengers) < count:
        if saved:
            person = saved.pop()
            companions_words.append(f"my saved passenger {_describe(person)}")
        else:
            first = rng.choice(("Lena", "Marco", "Ayla", "Tobias", "Noor", "Felix", "Iris"))
            year = rng.randrange(1950, 2015)
            person = _person(
                first,
                user["name"]["last_name"],
                f"{year}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}",
            )
            companions_words.append(_describe(person))
        passengers.append(person)

    def total_price(offer: Any) -> int:
        return sum(leg["prices"][cabin] for leg in (offer if isinstance(offer, list) else [offer]))

    picked = ctx.choose(rng, offers, cabin, count, total_price)
    if picked is None:
        return None
    preference, outbound = picked
    chosen = outbound if isinstance(outbound, list) else [outbound]
    searches = [
        call(
            "search_onestop_flight" if kind == "book_one_stop" else "search_direct_flight",
            origin=origin,
            destination=destination,
            date=date,
        )
    ]
    option = "one-stop connection" if kind == "book_one_stop" else "direct flight"
    flight_words = f"the {preference} {option}"
    return_date = None
    if kind == "book_round_trip":
        day = dt.date.fromisoformat(date) + dt.timedelta(days=rng.randrange(2, 7))
        return_date = day.isoformat()
        back = ctx.choose(
            rng, ctx.search(destination, origin, return_date), cabin, count, total_price
        )
        if back is None:
            return None
        chosen.append(back[1])
        searches.append(
            call("search_direct_flight", origin=destination, destination=origin, date=return_date)
        )
        flight_words += f" going out and the {back[0]} direct flight coming back"
    bags = rng.choices((0, 1, 2, 3, 4), (3, 4, 3, 2, 1))[0]
    nonfree = max(0, bags - ctx.allowance(user_id, cabin, count))
    insurance = rng.choice(("yes", "no"))
    total = sum(leg["prices"][cabin] for leg in chosen) * count
    total += INSURANCE_FEE * count * (insurance == "yes") + BAG_FEE * nonfree

    payments, pay_words = ctx.booking_payment(rng, user_id, total)
    if payments is None:
        return None
    book = call(
        "book_reservation",
        user_id=user_id,
        origin=origin,
        destination=destination,
        flight_type="round_trip" if return_date else "one_way",
        cabin=cabin,
        flights=[{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in chosen],
        passengers=passengers,
        payment_methods=payments,
        total_baggages=bags,
        nonfree_baggages=nonfree,
        insurance=insurance,
    )
    actions = [call("get_user_details", user_id=user_id), *searches, book]
    ctx.run_gold(actions)
    trip = "round trip" if return_date else "one-way trip"
    when = f"on {_date_words(date)}"
    if return_date:
        when = f"leaving {_date_words(date)} and coming back {_date_words(return_date)}"
    reason = rng.choice(
        (
            f"Hi, I want to book a {trip} from {_city(origin)} to {_city(destination)} {when}.",
            f"I need a {trip} from {AIRPORTS[origin]} to {AIRPORTS[destination]}, {when}. "
            "Can you book it?",
            f"Hello! Please help me book flights {origin} to {destination} ({trip}), {when}.",
        )
    )
    who = "Just me." if count == 1 else "Me and " + " and ".join(companions_words) + "."
    known = {
        "user_id": user_id,
        "preferred_cabin": _CABIN_WORDS[cabin],
        "flight_choice": flight_words,
        "who_is_flying": who,
        "bags_to_check": str(bags),
        "wants_insurance": insurance,
        "payment_choice": pay_words,
    }
    instructions = (
        f"You want {flight_words} in {_CABIN_WORDS[cabin]}. Travellers: {who} "
        f"You will check {bags} bag(s) in total and you "
        f"{'want' if insurance == 'yes' else 'do not want'} travel insurance. "
        f"Pay with {pay_words}. Ask for the total price before agreeing."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions, [_amount(total)])


def _cancel(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, lambda r: ctx.changeable(r) and bool(ctx.cancel_grounds(r)))
    if rid is None:
        return None
    res = ctx.reservations[rid]
    grounds = ctx.cancel_grounds(rid)
    ground = rng.choice(grounds)
    if ground == "insurance":
        why = rng.choice(_COVERED_REASONS)
    elif ground == "airline_cancelled":
        why = "the airline cancelled one of my flights"
    else:
        why = rng.choice(("my plans changed", "I no longer need the trip"))
    user_id = res["user_id"]
    actions = [*ctx.reads(user_id, rid), call("cancel_reservation", reservation_id=rid)]
    ctx.run_gold(actions)
    trip = f"{AIRPORTS[res['origin']]} to {AIRPORTS[res['destination']]}"
    reason = rng.choice(
        (
            f"I need to cancel my reservation for the trip from {trip}.",
            f"Hi, please cancel my {trip} booking; {why}.",
            "I'd like to cancel one of my flight reservations and get my money back.",
        )
    )
    known = {"user_id": user_id, "reservation_id": rid, "cancel_reason": why}
    instructions = (
        f"You want to cancel reservation {rid} (your reason: {why}). You want the full "
        "refund to the original payment method, and to know how much will be refunded."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions, [_amount(ctx.paid(rid))])


def _cancel_refused(rng: random.Random, ctx: _Context, then_change: bool) -> Draft | None:
    if then_change:
        rid = ctx.pick_reservation(
            rng,
            lambda r: (
                ctx.refusable(r)
                and ctx.reservations[r]["cabin"] != "basic_economy"
                and ctx.on_sale(r)
            ),
        )
    else:
        rid = ctx.pick_reservation(rng, ctx.refusable)
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    why = rng.choice(("my plans changed", "I found a cheaper trip elsewhere"))
    known = {"user_id": user_id, "reservation_id": rid, "cancel_reason": why}
    reason = rng.choice(
        (
            f"Hi, I want to cancel my trip to {AIRPORTS[res['destination']]} and get a refund.",
            "I'd like to cancel a reservation, please.",
        )
    )
    if not then_change:
        actions = ctx.reads(user_id, rid)
        ctx.run_gold(actions)
        instructions = (
            f"You want to cancel reservation {rid} (your reason: {why}). If the agent says "
            "it cannot be cancelled, ask how much you paid for it in total, then end the "
            "conversation."
        )
        known["follow_up_question"] = "How much did I pay for this reservation in total?"
        return _draft(ctx, user_id, reason, known, instructions, actions,
            [_amount(ctx.paid(rid))], confirm=False,
        )  # fmt: skip
    change = ctx.change_flight_plan(rng, rid)
    if change is None:
        return None
    actions = [*ctx.reads(user_id, rid), *change["actions"]]
    ctx.run_gold(actions)
    known.update(change["known"])
    instructions = (
        f"You want to cancel reservation {rid} (your reason: {why}). If that is not "
        f"possible, move it instead: {change['words']}."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions,
        change["outputs"],
    )  # fmt: skip


def _change_flight(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, ctx.movable)
    if rid is None:
        return None
    plan = ctx.change_flight_plan(rng, rid)
    if plan is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    actions = [*ctx.reads(user_id, rid), *plan["actions"]]
    ctx.run_gold(actions)
    moved_from = res["origin"] if plan["direction"] == "outbound" else res["destination"]
    reason = rng.choice(
        (
            f"Hi, I need to change the date of my {plan['direction']} flight.",
            f"I want to move my {plan['direction']} flight from {AIRPORTS[moved_from]} "
            "to another day.",
            "Can you help me change a flight on one of my reservations?",
        )
    )
    known = {"user_id": user_id, "reservation_id": rid, **plan["known"]}
    instructions = f"For reservation {rid}, you want to {plan['words']}. Ask what it costs."
    return _draft(ctx, user_id, reason, known, instructions, actions, plan["outputs"])


def _change_cabin(rng: random.Random, ctx: _Context, with_passengers: bool = False) -> Draft | None:
    rid = ctx.pick_reservation(rng, lambda r: ctx.changeable(r) and ctx.on_sale(r))
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    plan = ctx.cabin_plan(rng, rid)
    if plan is None:
        return None
    method = ctx.pay_difference(rng, user_id, plan["difference"])
    if method is None:
        return None
    flights = [{"flight_number": s["flight_number"], "date": s["date"]} for s in res["flights"]]
    update = call(
        "update_reservation_flights",
        reservation_id=rid,
        cabin=plan["cabin"],
        flights=flights,
        payment_id=method["id"],
    )
    actions = [*ctx.reads(user_id, rid), *plan["searches"], update]
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        "target_cabin": _CABIN_WORDS[plan["cabin"]],
        "payment_choice": ctx.payment_words(method),
    }
    up = "upgrade" if plan["difference"] > 0 else "downgrade"
    instructions = (
        f"You want to {up} every flight of reservation {rid} to {_CABIN_WORDS[plan['cabin']]} "
        f"and settle the difference with {ctx.payment_words(method)}. Ask what it costs."
    )
    reason = rng.choice(
        (
            f"I'd like to {up} the cabin on one of my reservations.",
            f"Hi! Can I switch my trip to {_CABIN_WORDS[plan['cabin']]}?",
        )
    )
    if with_passengers:
        change = ctx.passenger_plan(rng, rid)
        if change is None:
            return None
        actions.append(change["action"])
        known["passenger_change"] = change["words"]
        instructions += f" Also: {change['words']}."
        reason = reason.rstrip("?.!") + ", and fix a passenger's details."
    ctx.run_gold(actions)
    return _draft(
        ctx,
        user_id,
        reason,
        known,
        instructions,
        actions,
        [_amount(abs(plan["difference"]))],
    )


def _add_bags(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, ctx.changeable)
    if rid is None:
        return None
    plan = ctx.bags_plan(rng, rid)
    if plan is None:
        return None
    user_id = ctx.reservations[rid]["user_id"]
    actions = [*ctx.reads(user_id, rid), plan["action"]]
    ctx.run_gold(actions)
    extra = plan["extra"]
    reason = rng.choice(
        (
            f"Hi, I need to add {extra} checked bag{'s' * (extra > 1)} to my reservation.",
            "I'd like to bring more luggage on my upcoming trip.",
        )
    )
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        "bags_to_add": str(extra),
        "payment_choice": ctx.payment_words(plan["method"]),
    }
    instructions = (
        f"Add {extra} checked bag(s) to reservation {rid}; pay any fee with "
        f"{ctx.payment_words(plan['method'])}."
    )
    if not plan["fee"]:  # within the free allowance: nothing to state, so nothing is asked
        return _draft(ctx, user_id, reason, known, instructions, actions)
    fee = [_amount(plan["fee"])]
    question = "How much will the extra luggage cost?"
    instructions += " Ask what it costs."
    return _draft(ctx, user_id, reason, known, instructions, actions, fee, question=question)


def _update_passengers(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, ctx.changeable)
    if rid is None:
        return None
    plan = ctx.passenger_plan(rng, rid)
    if plan is None:
        return None
    user_id = ctx.reservations[rid]["user_id"]
    actions = [*ctx.reads(user_id, rid), plan["action"]]
    ctx.run_gold(actions)
    reason = rng.choice(
        (
            "Hi, I need to fix a passenger's details on my booking.",
            "There's a mistake with one of the travellers on my reservation.",
            "I need to change who is flying on one of my reservations.",
        )
    )
    known = {"user_id": user_id, "reservation_id": rid, "passenger_change": plan["words"]}
    instructions = f"On reservation {rid}: {plan['words']}."
    return _draft(ctx, user_id, reason, known, instructions, actions)


def _certificate(rng: random.Random, ctx: _Context, with_cancel: bool) -> Draft | None:
    def fits(r: str) -> bool:
        found = ctx.disrupted(r) if ctx.active(r) and ctx.eligible(r) else None
        if found is None:
            return False
        return not with_cancel or (found[1] == "cancelled" and not ctx.flown(r))

    rid = ctx.pick_reservation(rng, fits, tries=3000)
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    segment, status = ctx.disrupted(rid)  # type: ignore[misc]
    amount = (100 if status == "cancelled" else 50) * len(res["passengers"])
    actions = ctx.reads(user_id, rid)
    outputs = []
    if with_cancel:
        actions.append(call("cancel_reservation", reservation_id=rid))
        outputs.append(_amount(ctx.paid(rid)))
    actions.append(call("send_certificate", user_id=user_id, amount=amount))
    outputs.append(_amount(amount))
    ctx.run_gold(actions)
    flight_words = f"flight {segment['flight_number']} on {_date_words(segment['date'])}"
    reason = rng.choice(
        (
            f"My {flight_words} was {status}. I think I deserve some compensation.",
            f"Hello, the airline {status} my flight and I'd like some compensation.",
        )
    )
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        "flight_issue": f"{flight_words} was {status}",
    }
    instructions = f"Your {flight_words} (reservation {rid}) was {status}. Ask for compensation."
    if with_cancel:
        known["cancel_reason"] = "the airline cancelled my flight"
        instructions += " Also cancel the whole reservation and ask for the refund amount."
    return _draft(ctx, user_id, reason, known, instructions, actions, outputs)


def _compensation_refused_cancel(rng: random.Random, ctx: _Context) -> Draft | None:
    def fits(r: str) -> bool:
        found = ctx.disrupted(r) if ctx.changeable(r) and not ctx.eligible(r) else None
        return found is not None and found[1] == "cancelled"

    rid = ctx.pick_reservation(rng, fits, tries=3000)
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    segment, _ = ctx.disrupted(rid)  # type: ignore[misc]
    actions = [*ctx.reads(user_id, rid), call("cancel_reservation", reservation_id=rid)]
    ctx.run_gold(actions)
    flight_words = f"flight {segment['flight_number']} on {_date_words(segment['date'])}"
    reason = f"The airline cancelled my {flight_words}. I want compensation for this mess."
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        "flight_issue": f"{flight_words} was cancelled",
        "cancel_reason": "the airline cancelled my flight",
    }
    instructions = (
        f"Your {flight_words} (reservation {rid}) was cancelled by the airline. Ask for "
        "compensation; if you get none, cancel the whole reservation and ask for the refund."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions,
        [_amount(ctx.paid(rid))],
    )  # fmt: skip


def _basic_economy_change_refused(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(
        rng,
        lambda r: (
            ctx.changeable(r) and ctx.on_sale(r) and ctx.reservations[r]["cabin"] == "basic_economy"
        ),
    )
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    plan = ctx.cabin_plan(rng, rid, "economy")
    if plan is None or plan["difference"] <= 0:
        return None
    actions = [*ctx.reads(user_id, rid), *plan["searches"]]
    ctx.run_gold(actions)
    later = (dt.date.fromisoformat(res["flights"][0]["date"]) + dt.timedelta(days=1)).isoformat()
    reason = rng.choice(
        (
            "I need to move my flight to the next day.",
            "Hi, can you change my flight to a later date?",
        )
    )
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        "target_date": later,
        "follow_up_question": (
            "How much would it cost to upgrade the whole reservation to economy?"
        ),
    }
    instructions = (
        f"You want to move reservation {rid} to {_date_words(later)}. If the agent refuses, "
        "ask what upgrading the whole reservation to economy would cost, but do not buy it."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions,
        [_amount(plan["difference"])], confirm=False,
    )  # fmt: skip


def _change_flight_and_bags(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, ctx.movable)
    if rid is None:
        return None
    plan = ctx.change_flight_plan(rng, rid)
    bags = ctx.bags_plan(rng, rid)
    if plan is None or bags is None or not bags["fee"]:
        return None
    user_id = ctx.reservations[rid]["user_id"]
    actions = [*ctx.reads(user_id, rid), *plan["actions"], bags["action"]]
    ctx.run_gold(actions)
    reason = "I need to change a flight on my reservation and add some luggage."
    known = {
        "user_id": user_id,
        "reservation_id": rid,
        **plan["known"],
        "bags_to_add": str(bags["extra"]),
        "bag_payment": ctx.payment_words(bags["method"]),
    }
    instructions = (
        f"For reservation {rid}: {plan['words']}. Then add {bags['extra']} checked bag(s), "
        f"paid with {ctx.payment_words(bags['method'])}. Ask what each change costs."
    )
    outputs = plan["outputs"] + [_amount(bags["fee"])]
    return _draft(ctx, user_id, reason, known, instructions, actions, outputs)


def _cancel_two(rng: random.Random, ctx: _Context) -> Draft | None:
    user_id = rng.choice(ctx.user_ids)
    mine = [r for r in ctx.users[user_id]["reservations"] if ctx.changeable(r)]
    allowed = [r for r in mine if set(ctx.cancel_grounds(r)) - {"insurance"}]
    refused = [r for r in mine if ctx.refusable(r)]
    if not allowed or len(allowed) + len(refused) < 2:
        return None
    first = rng.choice(allowed)
    rest = [r for r in allowed + refused if r != first]
    second = rng.choice(rest)
    pair = sorted((first, second))
    actions = ctx.reads(user_id, *pair)
    to_cancel = [r for r in pair if r in allowed]
    actions += [call("cancel_reservation", reservation_id=r) for r in to_cancel]
    ctx.run_gold(actions)
    refund = sum(ctx.paid(r) for r in to_cancel)
    reason = "Hi, I want to cancel two of my reservations and get refunds."
    known = {
        "user_id": user_id,
        "reservation_ids": f"{pair[0]} and {pair[1]}",
        "cancel_reason": "my plans changed",
    }
    instructions = (
        f"Cancel reservations {pair[0]} and {pair[1]} because your plans changed. Accept "
        "that one may not be cancellable. Ask for the total refund."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions, [_amount(refund)])


def _transfer_after_write(rng: random.Random, ctx: _Context) -> Draft | None:
    user_id = rng.choice(ctx.user_ids)
    mine = ctx.users[user_id]["reservations"]
    flown = [
        r for r in mine if ctx.active(r) and ctx.flown(r)
        and any(ctx.status(s) == "available" for s in ctx.reservations[r]["flights"])
    ]  # fmt: skip
    open_ = [r for r in mine if ctx.changeable(r)]
    if not flown or not open_:
        return None
    target, other = rng.choice(open_), rng.choice(flown)
    bags = ctx.bags_plan(rng, target)
    if bags is None:
        return None
    actions = [
        *ctx.reads(user_id, target),
        bags["action"],
        call("get_reservation_details", reservation_id=other),
        call(
            "transfer_to_human_agents",
            summary=(
                f"User {user_id} added bags to {target} and wants to cancel {other}, whose "
                "outbound flight has already departed."
            ),
        ),
    ]
    ctx.run_gold(actions)
    reason = "Hi, I have two things: some extra bags for one trip, and a cancellation."
    known = {
        "user_id": user_id,
        "reservation_id": target,
        "bags_to_add": str(bags["extra"]),
        "payment_choice": ctx.payment_words(bags["method"]),
        "other_reservation_id": other,
        "cancel_reason": "my plans changed",
    }
    instructions = (
        f"First add {bags['extra']} bag(s) to reservation {target} (pay with "
        f"{ctx.payment_words(bags['method'])}); then ask to cancel the rest of reservation "
        f"{other}. Accept a transfer to a human agent."
    )
    return _draft(ctx, user_id, reason, known, instructions, actions)


def _transfer(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, lambda r: ctx.active(r) and ctx.flown(r))
    if rid is None:
        return None
    res = ctx.reservations[rid]
    user_id = res["user_id"]
    flown = next(s for s in res["flights"] if ctx.status(s) in _FLOWN)
    issue = rng.choice(("my checked bag never arrived", "my suitcase was damaged"))
    actions = [
        *ctx.reads(user_id, rid),
        call(
            "transfer_to_human_agents",
            summary=f"User {user_id}: on flight {flown['flight_number']}, {issue}.",
        ),
    ]
    ctx.run_gold(actions)
    reason = f"After my flight {flown['flight_number']}, {issue}. What can you do?"
    known = {"user_id": user_id, "reservation_id": rid, "flight_issue": issue}
    instructions = "Explain the baggage problem; accept a transfer to a human agent."
    return _draft(ctx, user_id, reason, known, instructions, actions)


def _refusal(rng: random.Random, ctx: _Context) -> Draft | None:
    rid = ctx.pick_reservation(rng, ctx.changeable)
    if rid is None:
        return None
    user_id = ctx.reservations[rid]["user_id"]
    actions = ctx.reads(user_id, rid)
    ctx.run_gold(actions)
    request = rng.choice(
        (
            "add one more passenger, my colleague, to this reservation",
            "add travel insurance to this reservation",
            "remove one passenger from this reservation and get their share refunded",
        )
    )
    reason = f"Hi, I'd like to {request}."
    known = {"user_id": user_id, "reservation_id": rid}
    instructions = f"You want to {request} (reservation {rid}). Accept a refusal."
    return _draft(ctx, user_id, reason, known, instructions, actions, confirm=False)


def _finish(rng: random.Random, ctx: _Context, draft: Draft, category: str) -> Finished:
    """The scenario (its persona is drawn once the task is kept), gold, outputs, and the write
    tools the gold calls, in order (``extra_info["writes"]``)."""
    scenario, actions, outputs, _ = _WRITER.finish(draft, category, None, persona=str)
    return scenario, actions, outputs, [a["name"] for a in actions if a["name"] in WRITE_TOOLS]


def _signature(category: str, finished: Finished) -> str:
    """What makes two tasks the same task (transfer summaries are free text: ignored)."""
    _, actions, outputs, _ = finished
    calls = [
        {"name": a["name"]}
        if a["name"] == "transfer_to_human_agents"
        else {"name": a["name"], "arguments": a["arguments"]}
        for a in actions
    ]
    return json.dumps([category, calls, outputs], sort_keys=True)


_CATEGORIES: dict[str, Callable[[random.Random, _Context], Draft | None]] = {
    "book_one_way": lambda rng, ctx: _book(rng, ctx, "book_one_way"),
    "book_round_trip": lambda rng, ctx: _book(rng, ctx, "book_round_trip"),
    "book_one_stop": lambda rng, ctx: _book(rng, ctx, "book_one_stop"),
    "cancel": _cancel,
    "cancel_two": _cancel_two,
    "cancel_refused": lambda rng, ctx: _cancel_refused(rng, ctx, False),
    "cancel_refused_then_change": lambda rng, ctx: _cancel_refused(rng, ctx, True),
    "change_flight": _change_flight,
    "change_cabin": _change_cabin,
    "add_bags": _add_bags,
    "update_passengers": _update_passengers,
    "certificate": lambda rng, ctx: _certificate(rng, ctx, False),
    "cancel_with_certificate": lambda rng, ctx: _certificate(rng, ctx, True),
    "compensation_refused_cancel": _compensation_refused_cancel,
    "basic_economy_change_refused": _basic_economy_change_refused,
    "change_flight_and_bags": _change_flight_and_bags,
    "change_cabin_and_passengers": lambda rng, ctx: _change_cabin(rng, ctx, with_passengers=True),
    "transfer_after_write": _transfer_after_write,
    "transfer": _transfer,
    "refusal": _refusal,
}


TASKS = TaskSource(
    domain=DOMAIN_NAME,
    env_id=ENV_ID,
    policy=POLICY,
    context=_Context,
    load_tables=load_tables,
    weights=CATEGORY_WEIGHTS,
    categories=_CATEGORIES,
    finish=_finish,
    key=_signature,
    tags_field="writes",
    attempts_per_task=2000,
)
"""Airline's tasks; ``extra_info["writes"]`` names the write tools a task calls."""

generate_splits = TASKS.generate
default_splits = TASKS.default_splits

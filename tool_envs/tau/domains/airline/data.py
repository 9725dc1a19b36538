"""The airline database: airports, flights with per-date status, users and reservations.

Generated from a seed at load time (no data files to ship or download) and cached per process.
Every amount of money is a whole number of dollars, so the prices an agent reads, adds and states
never depend on float formatting. Times are US Eastern; "now" is fixed (:data:`NOW`) so that
which reservations are inside the 24-hour cancellation window never depends on the clock.

Tables (typed in :mod:`.records`; record keys are the record ids):

- ``flights``: ``flight_number`` (``HAT001``), ``origin``, ``destination`` (IATA codes),
  ``scheduled_departure_time_est``, ``scheduled_arrival_time_est`` (``HH:MM:SS``, same day) and
  ``dates``: ``{"2024-05-DD": {"status": ...}}``. A bookable date has status ``available`` with
  ``available_seats`` and ``prices`` per cabin; the others are ``landed``, ``flying``,
  ``on time``, ``delayed`` or ``cancelled``.
- ``users``: ``user_id``, ``name``, ``address``, ``email``, ``dob``, ``membership``
  (regular/silver/gold), ``payment_methods`` keyed by payment id (credit_card, gift_card with
  ``amount``, certificate with ``amount``), ``saved_passengers`` and ``reservations`` (ids).
- ``reservations``: ``reservation_id`` (six upper-case letters and digits), ``user_id``,
  ``origin``, ``destination``, ``flight_type`` (one_way/round_trip), ``cabin``, ``flights``
  (``flight_number``, ``date``, ``price`` per passenger, ``origin``, ``destination``),
  ``passengers``, ``payment_history``, ``created_at``, ``total_baggages``, ``nonfree_baggages``,
  ``insurance`` (yes/no) and, once cancelled, ``status: "cancelled"``.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from tool_envs.tau.datagen import SeedTables

TODAY = "2024-05-15"
NOW = "2024-05-15T15:00:00"
FIRST_DATE = dt.date(2024, 5, 1)
LAST_DATE = dt.date(2024, 5, 30)
CABINS = ("basic_economy", "economy", "business")
MEMBERSHIPS = ("regular", "silver", "gold")

FREE_BAGS: dict[str, dict[str, int]] = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
"""Free checked bags per passenger, by membership tier and cabin."""
BAG_FEE = 50
INSURANCE_FEE = 30
MAX_PASSENGERS = 5

AIRPORTS: dict[str, str] = {
    "ATL": "Atlanta", "BOS": "Boston", "CLT": "Charlotte", "DEN": "Denver",
    "DFW": "Dallas-Fort Worth", "DTW": "Detroit", "EWR": "Newark", "IAH": "Houston",
    "JFK": "New York", "LAS": "Las Vegas", "LAX": "Los Angeles", "MCO": "Orlando",
    "MIA": "Miami", "MSP": "Minneapolis", "ORD": "Chicago", "PHL": "Philadelphia",
    "PHX": "Phoenix", "SEA": "Seattle", "SFO": "San Francisco", "SLC": "Salt Lake City",
}  # fmt: skip
# Rough positions (longitude, latitude) for flight durations and prices.
_POSITION: dict[str, tuple[float, float]] = {
    "ATL": (-84.4, 33.6), "BOS": (-71.0, 42.4), "CLT": (-80.9, 35.2), "DEN": (-104.7, 39.9),
    "DFW": (-97.0, 32.9), "DTW": (-83.4, 42.2), "EWR": (-74.2, 40.7), "IAH": (-95.3, 30.0),
    "JFK": (-73.8, 40.6), "LAS": (-115.2, 36.1), "LAX": (-118.4, 33.9), "MCO": (-81.3, 28.4),
    "MIA": (-80.3, 25.8), "MSP": (-93.2, 44.9), "ORD": (-87.9, 42.0), "PHL": (-75.2, 39.9),
    "PHX": (-112.0, 33.4), "SEA": (-122.3, 47.4), "SFO": (-122.4, 37.6), "SLC": (-112.0, 40.8),
}  # fmt: skip
# Statuses of today's flights, weighted by repetition.
_TODAY_STATUSES = (
    ("landed",) * 3 + ("flying",) * 2 + ("on time",) * 3 + ("delayed",) * 2 + ("cancelled",)
)
_HUBS = ("ATL", "ORD", "DFW", "DEN", "JFK", "LAX")

_FIRST_NAMES = (
    "Amara", "Bashir", "Camila", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonah",
    "Kavya", "Liam", "Mei", "Nadia", "Omar", "Priya", "Quinn", "Rafael", "Sofia", "Tomas",
    "Uma", "Victor", "Wren", "Ximena", "Yusuf", "Zara", "Anders", "Bianca", "Caleb", "Delia",
    "Emil", "Freya", "Gideon", "Hana", "Ivan", "Juno", "Kofi", "Leona", "Mateo", "Nina",
    "Oscar", "Paloma", "Rosa", "Soren", "Talia", "Ulrich", "Vera", "Wesley", "Yara", "Zeke",
)  # fmt: skip
_LAST_NAMES = (
    "Abara", "Brandt", "Castillo", "Dube", "Eriksen", "Fontaine", "Garcia", "Haddad", "Ibsen",
    "Jovanovic", "Kimura", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quist",
    "Rossi", "Sato", "Tanaka", "Ueda", "Varga", "Walsh", "Xu", "Yilmaz", "Zhou", "Alvarez",
    "Bianchi", "Chen", "Dalton", "Esposito", "Fischer", "Gupta", "Horvat", "Iyer", "Jensen",
    "Kowalski", "Lopez", "Mensah", "Novak", "Olsen", "Patel", "Reyes", "Silva", "Torres",
)  # fmt: skip
_STREETS = (
    "Maple Avenue", "Cedar Lane", "Harbor Road", "Elm Street", "Sunset Boulevard", "Oak Drive",
    "River Road", "Hillcrest Way", "Lakeview Court", "Pine Street", "Willow Path", "Main Street",
)  # fmt: skip
_CITIES = (
    ("Austin", "TX", "787"), ("Columbus", "OH", "432"), ("Portland", "OR", "972"),
    ("Raleigh", "NC", "276"), ("Tucson", "AZ", "857"), ("Madison", "WI", "537"),
    ("Boise", "ID", "837"), ("Richmond", "VA", "232"), ("Albany", "NY", "122"),
    ("Spokane", "WA", "992"), ("Omaha", "NE", "681"), ("Savannah", "GA", "314"),
)  # fmt: skip
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_CARD_BRANDS = ("visa", "mastercard", "amex", "discover")


def _day(date: dt.date) -> str:
    return date.isoformat()


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def _distance(a: str, b: str) -> float:
    (x1, y1), (x2, y2) = _POSITION[a], _POSITION[b]
    return ((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5


def _routes(rng: random.Random) -> list[tuple[str, str]]:
    """75 airport pairs: every hub to every airport, then random pairs (both directions flown)."""
    codes = sorted(AIRPORTS)
    pairs: list[tuple[str, str]] = []
    for hub in _HUBS:
        for code in codes:
            pair = tuple(sorted((hub, code)))
            if hub != code and pair not in pairs and rng.random() < 0.5:
                pairs.append(pair)  # type: ignore[arg-type]
    while len(pairs) < 75:
        a, b = rng.sample(codes, 2)
        pair = tuple(sorted((a, b)))
        if pair not in pairs:
            pairs.append(pair)  # type: ignore[arg-type]
    return pairs[:75]


def _date_record(
    rng: random.Random, date: dt.date, economy_price: int, departure: int, arrival: int
) -> dict[str, Any]:
    today = dt.date.fromisoformat(TODAY)
    if date < today:
        if rng.random() < 0.05:
            return {"status": "cancelled"}
        delay = rng.choice((0, 0, 0, 5, 10, 25, 40))
        base = f"{_day(date)}T"
        return {
            "status": "landed",
            "actual_departure_time_est": base + _clock(departure + delay),
            "actual_arrival_time_est": base + _clock(min(arrival + delay, 23 * 60 + 59)),
        }
    if date == today:
        return {"status": _TODAY_STATUSES[int(rng.random() * len(_TODAY_STATUSES))]}
    draw = rng.random()
    if draw < 0.05:
        return {"status": "cancelled"}
    if draw < 0.08 and date == today + dt.timedelta(days=1):
        return {"status": "delayed"}
    economy = max(60, round(economy_price * (0.8 + 0.45 * rng.random())))
    return {
        "status": "available",
        "available_seats": {
            "basic_economy": int(rng.random() * 21),
            "economy": int(rng.random() * 21),
            "business": int(rng.random() * 11),
        },
        "prices": {
            "basic_economy": round(economy * (0.55 + 0.25 * rng.random())),
            "economy": economy,
            "business": round(economy * (2.2 + 1.4 * rng.random())),
        },
    }


def _flights(rng: random.Random) -> dict[str, dict[str, Any]]:
    flights: dict[str, dict[str, Any]] = {}
    number = 0
    for a, b in _routes(rng):
        distance = _distance(a, b)
        duration = int(60 + distance * 9) // 5 * 5
        base_price = int(70 + distance * 6 + rng.randint(0, 60))
        for origin, destination in ((a, b), (b, a)):
            for _ in range(2):
                number += 1
                departure = rng.randrange(5 * 60, 23 * 60 - duration, 30)
                arrival = departure + duration
                record = {
                    "flight_number": f"HAT{number:03d}",
                    "origin": origin,
                    "destination": destination,
                    "scheduled_departure_time_est": _clock(departure),
                    "scheduled_arrival_time_est": _clock(arrival),
                    "dates": {},
                }
                date = FIRST_DATE
                while date <= LAST_DATE:
                    record["dates"][_day(date)] = _date_record(
                        rng, date, base_price, departure, arrival
                    )
                    date += dt.timedelta(days=1)
                flights[record["flight_number"]] = record
    return flights


def _person(rng: random.Random, last_name: str | None = None) -> dict[str, str]:
    born = dt.date(1940, 1, 1) + dt.timedelta(days=rng.randrange(0, 365 * 64))
    return {
        "first_name": rng.choice(_FIRST_NAMES),
        "last_name": last_name or rng.choice(_LAST_NAMES),
        "dob": _day(born),
    }


def _add_card(rng: random.Random, methods: dict[str, dict[str, Any]]) -> None:
    pid = _payment_id(rng, "credit_card")
    methods[pid] = {
        "source": "credit_card",
        "id": pid,
        "brand": rng.choice(_CARD_BRANDS),
        "last_four": f"{rng.randrange(10000):04d}",
    }


def _payment_id(rng: random.Random, source: str) -> str:
    return f"{source}_{rng.randrange(1_000_000, 10_000_000)}"


def _user(rng: random.Random, taken: set[str]) -> dict[str, Any]:
    person = _person(rng)
    while True:
        user_id = f"{person['first_name']}_{person['last_name']}_{rng.randrange(1000, 10000)}"
        user_id = user_id.lower()
        if user_id not in taken:
            taken.add(user_id)
            break
    city, state, zip_prefix = rng.choice(_CITIES)
    email = f"{person['first_name']}.{person['last_name']}{rng.randrange(100)}@example.com"
    methods: dict[str, dict[str, Any]] = {}
    for _ in range(rng.choices((0, 1, 2), (1, 14, 5))[0]):
        _add_card(rng, methods)
    for _ in range(rng.choices((0, 1, 2), (5, 4, 1))[0]):
        pid = _payment_id(rng, "gift_card")
        methods[pid] = {"source": "gift_card", "id": pid, "amount": rng.randrange(20, 600)}
    for _ in range(rng.choices((0, 1, 2), (6, 3, 1))[0]):
        pid = _payment_id(rng, "certificate")
        methods[pid] = {
            "source": "certificate",
            "id": pid,
            "amount": rng.choice((50, 100, 150, 200, 250, 500)),
        }
    if not methods:
        _add_card(rng, methods)
    saved = [
        _person(rng, person["last_name"] if rng.random() < 0.4 else None)
        for _ in range(rng.choices((0, 1, 2, 3), (3, 4, 2, 1))[0])
    ]
    return {
        "user_id": user_id,
        "name": {"first_name": person["first_name"], "last_name": person["last_name"]},
        "address": {
            "address1": f"{rng.randrange(1, 9999)} {rng.choice(_STREETS)}",
            "address2": f"Suite {rng.randrange(100, 999)}" if rng.random() < 0.3 else "",
            "city": city,
            "country": "USA",
            "state": state,
            "zip": f"{zip_prefix}{rng.randrange(100):02d}",
        },
        "email": email.lower(),
        "dob": person["dob"],
        "membership": rng.choices(MEMBERSHIPS, (5, 3, 2))[0],
        "payment_methods": methods,
        "saved_passengers": saved,
        "reservations": [],
    }


def _legs(
    rng: random.Random, flights: dict[str, dict[str, Any]], by_origin: dict[str, list[str]]
) -> tuple[str, str, list[list[str]]] | None:
    """A trip's origin, destination and its outbound flight choices (direct or one stop)."""
    first = flights[rng.choice(by_origin[rng.choice(sorted(by_origin))])]
    if rng.random() < 0.75:
        return first["origin"], first["destination"], [[first["flight_number"]]]
    arrival = first["scheduled_arrival_time_est"]
    onward = [
        number
        for number in by_origin[first["destination"]]
        if flights[number]["destination"] != first["origin"]
        and flights[number]["scheduled_departure_time_est"] > arrival
    ]
    if not onward:
        return None
    second = flights[rng.choice(onward)]
    legs = [[first["flight_number"], second["flight_number"]]]
    return first["origin"], second["destination"], legs


def _return_legs(
    rng: random.Random,
    flights: dict[str, dict[str, Any]],
    by_route: dict[tuple[str, str], list[str]],
    origin: str,
    destination: str,
) -> list[str] | None:
    direct = by_route.get((destination, origin))
    if direct:
        return [rng.choice(direct)]
    for first in _departures(by_route, destination):
        hop = flights[first]["destination"]
        onward = [
            n
            for n in by_route.get((hop, origin), [])
            if flights[n]["scheduled_departure_time_est"]
            > flights[first]["scheduled_arrival_time_est"]
        ]
        if onward:
            return [first, rng.choice(onward)]
    return None


def _departures(by_route: dict[tuple[str, str], list[str]], origin: str) -> list[str]:
    return [n for (o, _), numbers in by_route.items() if o == origin for n in numbers]


def _reservation_id(rng: random.Random, taken: dict[str, Any]) -> str:
    while True:
        number = rng.getrandbits(32) % 36**6
        rid = ""
        for _ in range(6):
            number, digit = divmod(number, 36)
            rid += _ALPHABET[digit]
        if rid not in taken:
            return rid


def _price(flight: dict[str, Any], date: str, cabin: str, rng: random.Random) -> int:
    record = flight["dates"][date]
    if record["status"] == "available":
        return record["prices"][cabin]
    distance = _distance(flight["origin"], flight["destination"])
    economy = int(70 + distance * 6 + rng.randint(0, 80))
    return round(economy * {"basic_economy": 0.7, "economy": 1.0, "business": 2.8}[cabin])


def _reservation(
    rng: random.Random,
    user: dict[str, Any],
    flights: dict[str, dict[str, Any]],
    by_origin: dict[str, list[str]],
    by_route: dict[tuple[str, str], list[str]],
    taken: dict[str, Any],
) -> dict[str, Any] | None:
    trip = _legs(rng, flights, by_origin)
    if trip is None:
        return None
    origin, destination, (outbound,) = trip
    round_trip = rng.random() < 0.45
    legs = [outbound]
    if round_trip:
        back = _return_legs(rng, flights, by_route, origin, destination)
        if back is None:
            return None
        legs.append(back)
    start = FIRST_DATE + dt.timedelta(days=rng.randrange(0, 27))
    dates = [start]
    if round_trip:
        dates.append(min(LAST_DATE, start + dt.timedelta(days=rng.randrange(1, 8))))
    cabin = rng.choices(CABINS, (3, 5, 2))[0]
    segments = []
    for leg, date in zip(legs, dates, strict=True):
        for number in leg:
            flight = flights[number]
            segments.append(
                {
                    "flight_number": number,
                    "date": _day(date),
                    "price": _price(flight, _day(date), cabin, rng),
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                }
            )
    count = rng.choices((1, 2, 3, 4), (5, 3, 2, 1))[0]
    passengers: list[dict[str, str]] = []
    if rng.random() < 0.75:
        passengers.append(
            {
                "first_name": user["name"]["first_name"],
                "last_name": user["name"]["last_name"],
                "dob": user["dob"],
            }
        )
    for saved in user["saved_passengers"]:
        if len(passengers) < count and rng.random() < 0.6:
            passengers.append(dict(saved))
    while len(passengers) < count:
        passengers.append(_person(rng))
    insurance = "yes" if rng.random() < 0.35 else "no"
    allowance = FREE_BAGS[user["membership"]][cabin] * len(passengers)
    total_bags = rng.randrange(0, len(passengers) * 2 + 1) if rng.random() < 0.7 else 0
    nonfree = max(0, total_bags - allowance)
    total = sum(s["price"] for s in segments) * len(passengers)
    total += INSURANCE_FEE * len(passengers) * (insurance == "yes") + BAG_FEE * nonfree
    payment = rng.choice(
        [m for m in user["payment_methods"].values() if m["source"] != "certificate"]
        or list(user["payment_methods"].values())
    )
    first_day = dt.date.fromisoformat(segments[0]["date"])
    now = dt.datetime.fromisoformat(NOW)
    if rng.random() < 0.1 and first_day > dt.date.fromisoformat(TODAY):
        created = now - dt.timedelta(minutes=rng.randrange(30, 23 * 60))
    else:
        latest = min(now - dt.timedelta(hours=26), dt.datetime.combine(first_day, dt.time(0)))
        created = latest - dt.timedelta(minutes=rng.randrange(60, 40 * 24 * 60))
    record: dict[str, Any] = {
        "reservation_id": _reservation_id(rng, taken),
        "user_id": user["user_id"],
        "origin": origin,
        "destination": destination,
        "flight_type": "round_trip" if round_trip else "one_way",
        "cabin": cabin,
        "flights": segments,
        "passengers": passengers,
        "payment_history": [{"payment_id": payment["id"], "amount": total}],
        "created_at": created.replace(second=0).isoformat(),
        "total_baggages": total_bags,
        "nonfree_baggages": nonfree,
        "insurance": insurance,
    }
    if rng.random() < 0.07:
        record["status"] = "cancelled"
        record["payment_history"].append({"payment_id": payment["id"], "amount": -total})
    return record


def generate_tables(seed: int = 0) -> dict[str, dict[str, dict[str, Any]]]:
    """The whole database for ``seed``: ``{"flights", "users", "reservations"}`` by record id."""
    rng = random.Random(seed)
    flights = _flights(rng)
    by_origin: dict[str, list[str]] = {}
    by_route: dict[tuple[str, str], list[str]] = {}
    for number, flight in flights.items():
        by_origin.setdefault(flight["origin"], []).append(number)
        by_route.setdefault((flight["origin"], flight["destination"]), []).append(number)
    taken_ids: set[str] = set()
    users = {}
    for _ in range(500):
        user = _user(rng, taken_ids)
        users[user["user_id"]] = user
    reservations: dict[str, dict[str, Any]] = {}
    user_ids = list(users)
    while len(reservations) < 2000:
        user = users[rng.choice(user_ids)]
        record = _reservation(rng, user, flights, by_origin, by_route, reservations)
        if record is not None:
            reservations[record["reservation_id"]] = record
            user["reservations"].append(record["reservation_id"])
    return {"flights": flights, "users": users, "reservations": reservations}


load_tables = SeedTables(generate_tables)
"""The database of the shipped env (seed 0), built once per process; read-only."""

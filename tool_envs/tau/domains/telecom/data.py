"""The telecom database: customers, their lines, plans, bills, and one simulated phone per line.

Nothing is read from disk: :func:`generate_tables` builds the same tables for the same seed on
every machine (one ``random.Random``; no global RNG, no set or hash ordering), and
:func:`load_tables` caches the seed-0 tables for the process. "Today" is fixed
(:data:`TODAY`), so which bills are overdue never depends on the clock.

Tables (every table maps a record's id to the record; all values are JSON types; the record
types are in :mod:`.records`):

``plans`` (12)
    ``{plan_id, name, monthly_price, data_gb, top_up_price_per_gb, roaming: {data_per_mb,
    voice_per_minute, sms}, available}``. ``available`` is False for legacy plans that lines
    may keep but nobody can switch to.
``customers`` (500)
    ``{customer_id, full_name, date_of_birth, email, address: {street, city, state, zip},
    account_status: "active" | "past_due", payment_methods: {id: method},
    default_payment_method_id, lines: [{line_id, phone_number}], bill_ids: [...]}``. A
    customer is ``past_due`` exactly when one of their bills is overdue. (full name, date of
    birth) is unique, so both ways of finding a customer are unambiguous.
``lines`` (800)
    ``{line_id, phone_number, customer_id, plan_id, status: "active" | "suspended",
    suspension_reason, roaming_enabled, data_used_gb, data_top_up_gb, device_id}``.
    ``data_top_up_gb`` is the extra data bought this billing cycle; the line's allowance is the
    plan's ``data_gb`` plus it. Lines suspended for an ``"overdue bill"`` belong to past-due
    customers; the others were suspended on the customer's request.
``bills`` (2,000: one per customer and month, March to June 2025)
    ``{bill_id, customer_id, period, issue_date, due_date, items: [{description, amount}],
    amount, status: "paid" | "overdue" | "pending", payment_request, paid_on}``. The June bill
    is ``pending`` (not due yet); a past-due customer has exactly one ``overdue`` bill.
    ``payment_request`` is None, ``"sent"`` (waiting on the customer's phone) or
    ``"completed"``.
``devices`` (800, keyed by phone number)
    The customer's own phone, which only the customer can operate: ``{phone_number,
    device_id, model, location ("home" or the country the customer is in), coverage_bars
    (signal where the phone is, 2-4), airplane_mode, mobile_data_enabled,
    roaming_enabled_on_device, apn: {name, mmsc}, sim_status: "seated" | "loose",
    network_mode, needs_reboot}``. What the phone shows (service, internet, speed) is derived
    from this record and the line (:mod:`.phone`). More than half the phones start in a broken
    state (airplane mode on, mobile data off, a wrong APN or MMS server, a loose SIM, a stuck
    modem, a slow network mode, roaming off abroad), which is what troubleshooting tasks fix.
"""

from __future__ import annotations

import random
from typing import Any

from tool_envs.tau.datagen import SeedTables, new_id, table_rows

Tables = dict[str, dict[str, dict[str, Any]]]

TODAY = "2025-06-15"
PERIODS = ("2025-03", "2025-04", "2025-05", "2025-06")
CURRENT_PERIOD = PERIODS[-1]
CARRIER = "Parakeet Mobile"
DEFAULT_APN = {"name": "parakeet.web", "mmsc": "http://mms.parakeet.net/servlets/mms"}
NETWORK_MODES = ("auto", "4g_only", "3g_only", "2g_only")
SLOW_NETWORK_MODES = ("3g_only", "2g_only")
SUSPEND_REASONS = ("lost or stolen", "temporary hold")
OVERDUE_REASON = "overdue bill"
MAX_TOP_UP_GB = 10
"""Most extra data one line can buy in a billing cycle (all top-ups together)."""

# plan_id; name; monthly price; data GB; top-up price per GB; roaming data per MB, voice per
# minute, SMS; available for new plan changes.
_PLAN_TABLE = """
starter-2; Starter 2; 14.99; 2; 4.85; 0.25, 0.79, 0.35; yes
senior-4; Senior 4; 17.49; 4; 4.65; 0.25, 0.79, 0.35; yes
basic-5; Basic 5; 24.99; 5; 4.35; 0.20, 0.69, 0.30; yes
student-8; Student 8; 21.99; 8; 3.95; 0.20, 0.69, 0.30; yes
everyday-10; Everyday 10; 34.99; 10; 3.85; 0.18, 0.59, 0.25; yes
plus-20; Plus 20; 44.99; 20; 3.45; 0.15, 0.49, 0.25; yes
traveler-15; Traveler 15; 49.99; 15; 3.45; 0.03, 0.12, 0.05; yes
family-30; Family 30; 54.99; 30; 2.95; 0.15, 0.49, 0.25; yes
max-50; Max 50; 64.99; 50; 2.65; 0.12, 0.39, 0.20; yes
ultra-100; Ultra 100; 84.99; 100; 2.15; 0.05, 0.19, 0.10; yes
legacy-talk-1; Legacy Talk 1; 11.99; 1; 5.85; 0.35, 0.99, 0.45; no
legacy-data-12; Legacy Data 12; 29.99; 12; 4.15; 0.30, 0.89, 0.40; no
"""
_PLAN_WEIGHTS = (5, 4, 9, 5, 12, 11, 5, 8, 7, 4, 3, 4)

_FIRST_NAMES = (
    "Adaeze", "Bertrand", "Carmela", "Dorian", "Eilidh", "Fabian", "Giulia", "Hamid", "Ilse",
    "Jasper", "Kirra", "Lucian", "Maelle", "Nils", "Orla", "Percival", "Ravi", "Sunniva", "Teodor",
    "Ulla", "Vasco", "Wanjiru", "Xavier", "Yolanda", "Zeno", "Aurelia", "Benedikt", "Cosima",
    "Darius", "Estelle", "Fergus", "Gwendolyn", "Hugo", "Imogen", "Jericho", "Katarina", "Leif",
    "Mirela", "Nikolai", "Ottilie", "Pilar", "Rashida", "Stellan", "Thandiwe", "Viggo", "Wilma",
    "Yasmin", "Zofia", "Anselm", "Beatrix", "Cormac", "Delphine", "Emrys", "Flavia", "Gaspard",
    "Henrike", "Ignatius", "Juliska", "Kasimir", "Lavinia",
)  # fmt: skip
_LAST_NAMES = (
    "Achterberg", "Blackwood", "Cardenas", "Dragomir", "Ellingsen", "Fairweather", "Grimaldi",
    "Holmqvist", "Ilunga", "Jankowski", "Kettering", "Lombardi", "Magnusson", "Nwosu",
    "Oldfield", "Papadakis", "Quayle", "Rautio", "Silvestri", "Toivonen", "Uchenna", "Valdivia",
    "Wojcik", "Yoshida", "Zimmermann", "Aldridge", "Bergstrom", "Cheng", "Dunleavy", "Echeverria",
    "Falkner", "Gustafsson", "Haverford", "Iyer", "Jaramillo", "Kovacs", "Lestrange", "Mancini",
    "Nakashima", "Oyelowo", "Pemberton", "Rosenthal", "Szymanski", "Thorvaldsen", "Ulbrich",
    "Vanderberg", "Whitfield", "Yamaguchi", "Zoller", "Amundsen",
)  # fmt: skip
# City, state, zip prefix, telephone area code.
_CITIES = (
    ("Oakland", "CA", "946", "510"), ("Fresno", "CA", "937", "559"),
    ("Eugene", "OR", "974", "541"), ("Tacoma", "WA", "984", "253"),
    ("Reno", "NV", "895", "775"), ("Mesa", "AZ", "852", "480"),
    ("Lubbock", "TX", "794", "806"), ("El Paso", "TX", "799", "915"),
    ("Wichita", "KS", "672", "316"), ("Tulsa", "OK", "741", "918"),
    ("Lincoln", "NE", "685", "402"), ("Fargo", "ND", "581", "701"),
    ("Duluth", "MN", "558", "218"), ("Green Bay", "WI", "543", "920"),
    ("Dayton", "OH", "454", "937"), ("Toledo", "OH", "436", "419"),
    ("Lansing", "MI", "489", "517"), ("Akron", "OH", "443", "330"),
    ("Knoxville", "TN", "379", "865"), ("Savannah", "GA", "314", "912"),
    ("Mobile", "AL", "366", "251"), ("Shreveport", "LA", "711", "318"),
    ("Syracuse", "NY", "132", "315"), ("Albany", "NY", "122", "518"),
    ("Hartford", "CT", "061", "860"), ("Burlington", "VT", "054", "802"),
    ("Portland", "ME", "041", "207"), ("Trenton", "NJ", "086", "609"),
)  # fmt: skip
_STREETS = (
    "Alder", "Birchwood", "Canal", "Dogwood", "Ember", "Fern", "Glen", "Harvest", "Iris",
    "Jasmine", "Kestrel", "Larch", "Magnolia", "Northgate", "Oriole", "Pinecrest", "Ridge",
    "Sage", "Tamarack", "Upland", "Vine", "Westbrook",
)  # fmt: skip
_STREET_TYPES = ("Street", "Avenue", "Road", "Lane", "Drive", "Place", "Terrace", "Way")
_CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
_MODELS = (
    "Pixel 8", "Pixel 7a", "iPhone 15", "iPhone 13", "iPhone SE", "Galaxy S24", "Galaxy A54",
    "Moto G Power", "OnePlus 12", "Nokia G42",
)  # fmt: skip
COUNTRIES = ("Spain", "Portugal", "Mexico", "Canada", "Japan", "Italy", "France", "Iceland")
WRONG_APN_NAMES = ("internet", "wap.parakeet", "parakeet.mms", "web.oldcarrier.com", "pk.net")
WRONG_MMSC = ("http://mms.oldcarrier.com", "http://mmsc.parakeet.org", "")

# Device fault profiles (weight, faults) for phones at home; see :mod:`.phone` for what each
# fault does. Phones abroad get their roaming settings drawn separately.
_PROFILES: tuple[tuple[float, tuple[str, ...]], ...] = (
    (32, ()),
    (5, ("airplane_mode",)),
    (4.5, ("sim_loose",)),
    (4.5, ("needs_reboot",)),
    (5, ("mobile_data_off",)),
    (5, ("apn_name",)),
    (4, ("mmsc",)),
    (4.5, ("network_mode",)),
    (1.5, ("airplane_mode", "mobile_data_off")),
    (1.5, ("sim_loose", "apn_name")),
    (1.5, ("needs_reboot", "network_mode")),
    (1.5, ("mobile_data_off", "apn_name")),
    (1.5, ("apn_name", "mmsc")),
    (1.5, ("airplane_mode", "network_mode")),
    (1.5, ("mobile_data_off", "mmsc")),
)


def plans() -> dict[str, dict[str, Any]]:
    """The plan catalogue (fixed, not drawn from the seed)."""
    table: dict[str, dict[str, Any]] = {}
    for plan_id, name, price, data, top_up, roaming, available in table_rows(_PLAN_TABLE):
        data_mb, voice, sms = (float(value) for value in roaming.split(","))
        table[plan_id] = {
            "plan_id": plan_id,
            "name": name,
            "monthly_price": float(price),
            "data_gb": int(data),
            "top_up_price_per_gb": float(top_up),
            "roaming": {"data_per_mb": data_mb, "voice_per_minute": voice, "sms": sms},
            "available": available == "yes",
        }
    return table


def _payment_methods(rng: random.Random, taken: set[str]) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {}

    def add(kind: str, **fields: Any) -> None:
        method_id = new_id(rng, taken, lambda r: f"{kind}_{r.randint(10**5, 10**6 - 1)}")
        methods[method_id] = {"id": method_id, "type": kind, **fields}

    add("credit_card", brand=rng.choice(_CARD_BRANDS), last_four=f"{rng.randint(0, 9999):04d}")
    if rng.random() < 0.4:
        add("bank_account", bank=rng.choice(("First Harbor", "Pinecone Credit Union",
                                             "Meridian Savings")),
            last_four=f"{rng.randint(0, 9999):04d}")  # fmt: skip
    order = list(methods)
    rng.shuffle(order)
    return {key: methods[key] for key in order}


def _customer(rng: random.Random, taken: set[str], name_dob: set[tuple[str, str]]) -> dict:
    while True:
        first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
        dob = f"{rng.randint(1945, 2005)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if (f"{first} {last}", dob) not in name_dob:
            break
    name_dob.add((f"{first} {last}", dob))
    customer_id = new_id(rng, taken, lambda r: f"C{r.randint(10**5, 10**6 - 1)}")
    email = new_id(
        rng, taken, lambda r: f"{first.lower()}.{last.lower()}{r.randint(1, 999)}@example.net"
    )
    city, state, zip_prefix, _ = rng.choice(_CITIES)
    methods = _payment_methods(rng, taken)
    return {
        "customer_id": customer_id,
        "full_name": f"{first} {last}",
        "date_of_birth": dob,
        "email": email,
        "address": {
            "street": f"{rng.randint(2, 9800)} {rng.choice(_STREETS)} {rng.choice(_STREET_TYPES)}",
            "city": city,
            "state": state,
            "zip": f"{zip_prefix}{rng.randint(0, 99):02d}",
        },
        "account_status": "active",
        "payment_methods": methods,
        "default_payment_method_id": next(iter(methods)),
        "lines": [],
        "bill_ids": [],
        "_area": next(c[3] for c in _CITIES if c[0] == city),
    }


def _device(rng: random.Random, phone: str, device_id: str, abroad: bool) -> dict[str, Any]:
    device: dict[str, Any] = {
        "phone_number": phone,
        "device_id": device_id,
        "model": rng.choice(_MODELS),
        "location": rng.choice(COUNTRIES) if abroad else "home",
        "coverage_bars": rng.choice((2, 3, 3, 4, 4, 4)),
        "airplane_mode": False,
        "mobile_data_enabled": True,
        "roaming_enabled_on_device": rng.random() < 0.3,
        "apn": dict(DEFAULT_APN),
        "sim_status": "seated",
        "network_mode": rng.choice(("auto", "auto", "auto", "4g_only")),
        "needs_reboot": False,
    }
    if abroad:
        return device
    weights = [weight for weight, _ in _PROFILES]
    faults = rng.choices([profile for _, profile in _PROFILES], weights=weights)[0]
    for fault in faults:
        if fault == "airplane_mode":
            device["airplane_mode"] = True
        elif fault == "sim_loose":
            device["sim_status"] = "loose"
        elif fault == "needs_reboot":
            device["needs_reboot"] = True
        elif fault == "mobile_data_off":
            device["mobile_data_enabled"] = False
        elif fault == "apn_name":
            device["apn"]["name"] = rng.choice(WRONG_APN_NAMES)
        elif fault == "mmsc":
            device["apn"]["mmsc"] = rng.choice(WRONG_MMSC)
        elif fault == "network_mode":
            device["network_mode"] = rng.choice(SLOW_NETWORK_MODES)
    return device


def _bill_items(
    rng: random.Random, lines: list[dict[str, Any]], plan_table: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    items = []
    for line in lines:
        plan = plan_table[line["plan_id"]]
        items.append(
            {
                "description": f"{plan['name']} plan, {line['phone_number']}",
                "amount": plan["monthly_price"],
            }
        )
        if rng.random() < 0.12:
            gb = rng.randint(1, 3)
            items.append(
                {
                    "description": f"Data top-up {gb} GB, {line['phone_number']}",
                    "amount": round(gb * plan["top_up_price_per_gb"], 2),
                }
            )
        if rng.random() < 0.08:
            items.append(
                {
                    "description": f"Roaming charges, {line['phone_number']}",
                    "amount": round(rng.uniform(3, 60), 2),
                }
            )
    fees = round(0.07 * sum(item["amount"] for item in items), 2)
    items.append({"description": "Taxes and fees", "amount": fees})
    return items


def generate_tables(seed: int = 0) -> Tables:
    """The whole database for ``seed``: 500 customers, 800 lines and phones, 12 plans, 2,000
    bills (deterministic)."""
    rng = random.Random(seed)
    taken: set[str] = set()
    plan_table = plans()
    plan_ids = list(plan_table)
    name_dob: set[tuple[str, str]] = set()
    customers = [_customer(rng, taken, name_dob) for _ in range(500)]
    # Every customer has a line; the other 300 go to customers drawn at random (at most 4 each).
    owners = list(range(500))
    while len(owners) < 800:
        index = rng.randrange(500)
        if owners.count(index) < 4:
            owners.append(index)
    owners.sort()
    overdue = {index for index in range(500) if rng.random() < 0.15}

    lines: dict[str, dict[str, Any]] = {}
    devices: dict[str, dict[str, Any]] = {}
    for index in owners:
        customer = customers[index]
        area = customer["_area"] if rng.random() < 0.8 else rng.choice(_CITIES)[3]
        phone = new_id(
            rng, taken, lambda r, a=area: f"{a}-{r.randint(200, 999)}-{r.randint(0, 9999):04d}"
        )
        line_id = new_id(rng, taken, lambda r: f"L{r.randint(10**5, 10**6 - 1)}")
        device_id = new_id(rng, taken, lambda r: f"35{r.randint(10**12, 10**13 - 1)}")
        plan_id = rng.choices(plan_ids, weights=_PLAN_WEIGHTS)[0]
        plan = plan_table[plan_id]
        top_up = rng.choice((0,) * 10 + (1, 2, 3, 4, 5, 6, 8))
        allowance = plan["data_gb"] + top_up
        exhausted = rng.random() < 0.09
        used = allowance if exhausted else round(allowance * rng.uniform(0.02, 0.93), 1)
        status, reason = "active", None
        if index in overdue and rng.random() < 0.6:
            status, reason = "suspended", OVERDUE_REASON
        elif rng.random() < 0.05:
            status, reason = "suspended", rng.choice(SUSPEND_REASONS)
        abroad = status == "active" and rng.random() < 0.13
        roaming = rng.random() < (0.45 if abroad else 0.25)
        lines[line_id] = {
            "line_id": line_id,
            "phone_number": phone,
            "customer_id": customer["customer_id"],
            "plan_id": plan_id,
            "status": status,
            "suspension_reason": reason,
            "roaming_enabled": roaming,
            "data_used_gb": float(used),
            "data_top_up_gb": top_up,
            "device_id": device_id,
        }
        devices[phone] = _device(rng, phone, device_id, abroad)
        customer["lines"].append({"line_id": line_id, "phone_number": phone})

    by_customer: dict[str, list[dict[str, Any]]] = {}
    for line in lines.values():
        by_customer.setdefault(line["customer_id"], []).append(line)
    bills: dict[str, dict[str, Any]] = {}
    for index, customer in enumerate(customers):
        late = rng.choice((1, 2)) if index in overdue else -1  # 1: May overdue, 2: April
        for number, period in enumerate(PERIODS):
            bill_id = new_id(rng, taken, lambda r: f"B{r.randint(10**6, 10**7 - 1)}")
            year, month = period.split("-")
            items = _bill_items(rng, by_customer[customer["customer_id"]], plan_table)
            back = len(PERIODS) - 1 - number
            if back == 0:
                status, paid_on = "pending", None
            elif back == late:
                status, paid_on = "overdue", None
            else:
                status, paid_on = "paid", f"{year}-{month}-{rng.randint(18, 27):02d}"
            bills[bill_id] = {
                "bill_id": bill_id,
                "customer_id": customer["customer_id"],
                "period": period,
                "issue_date": f"{year}-{month}-01",
                "due_date": f"{year}-{month}-28",
                "items": items,
                "amount": round(sum(item["amount"] for item in items), 2),
                "status": status,
                "payment_request": None,
                "paid_on": paid_on,
            }
            customer["bill_ids"].append(bill_id)
        if index in overdue:
            customer["account_status"] = "past_due"
        del customer["_area"]
    return {
        "plans": plan_table,
        "customers": {c["customer_id"]: c for c in customers},
        "lines": lines,
        "bills": bills,
        "devices": devices,
    }


load_tables = SeedTables(generate_tables)
"""The database of the shipped env (seed 0), built once per process; read-only."""

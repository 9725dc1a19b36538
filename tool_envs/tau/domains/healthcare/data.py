"""The healthcare database: clinics, providers, insurance plans, patients and their records.

Generated from a seed at load time (nothing to download) and cached per process:
:func:`generate_tables` builds the same tables for the same seed on every machine (one
``random.Random``; no global RNG, no set or hash ordering). "Now" is fixed (:data:`NOW`, a
Monday morning), so which appointments are inside the 24-hour change window, which refills are
due and which claims are past their deadline never depend on the clock.

Tables (every table maps a record's id to the record, typed in :mod:`.records`; dates are
``YYYY-MM-DD`` and times ``YYYY-MM-DD HH:MM``, clinic local time):

``clinics`` (8)
    ``{clinic_id, name, address: {street, city, state, zip}, phone}``; ids like ``CL104``.
``plans`` (6)
    ``{plan_id, name, type (HMO/PPO/EPO), network, referral_required, deductible,
    out_of_pocket_max, services: {service: {covered, copay, coinsurance,
    prior_authorization}}, out_of_network: {covered, coinsurance}}``. A service has either a
    fixed ``copay`` (dollars) or a ``coinsurance`` share; see :data:`SERVICES`.
``providers`` (80)
    ``{provider_id, name: {first_name, last_name}, title, specialty, clinic_id, networks,
    working_days, hours: {start, end}, accepting_new_patients}``; ids like ``PRV2041``. Every
    working day has 30-minute slots from ``start`` to ``end`` except the 12:00-13:00 lunch
    hour. Provider last names are unique.
``patients`` (500)
    ``{patient_id, name: {first_name, last_name}, dob, email, phone, address, plan_id,
    member_id, primary_provider_id, preferred_pharmacy, allergies, referrals: [{referral_id,
    specialty, referred_by, issued_on, expires_on}], authorized_contacts: [{name,
    relationship}], appointments, prescriptions, claims}`` (the last three: record ids).
    ``(first name, last name, dob)``, ``email`` and ``member_id`` are each unique.
``appointments`` (1,500)
    ``{appointment_id, patient_id, provider_id, clinic_id, start, duration_minutes,
    visit_type, status, booked_on}``; status ``scheduled`` (future), ``completed`` or
    ``no-show`` (past) or ``cancelled`` (with ``cancel_reason`` and ``cancelled_on``); a
    rescheduled one also carries ``rescheduled_from``.
    Completed visits carry ``billed_amount`` and ``claim_id`` (None until a claim is filed).
``prescriptions`` (1,000)
    ``{prescription_id, patient_id, medication, strength, instructions, quantity,
    days_supply, controlled_schedule (None or "II".."V"), prescriber_id, pharmacy,
    written_on, expires_on, refills_authorized, refills_remaining, last_fill_date, status
    (active/expired/discontinued), refill_request (None or {requested_on, status})}``.
``claims`` (600)
    ``{claim_id, patient_id, appointment_id, provider_id, service, date_of_service,
    billed_amount, allowed_amount, plan_paid, patient_responsibility, status, submitted_on,
    processed_on, denial_reason, appeal}``; status ``submitted``, ``in review``, ``paid``,
    ``denied`` or ``appealed``.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from typing import Any, get_args

from tool_envs.tau.datagen import SeedTables, new_id
from tool_envs.tau.domains.healthcare.records import Service

Tables = dict[str, dict[str, dict[str, Any]]]

NOW = "2025-03-10 09:00"
"""The fixed current time of every episode (a Monday)."""
TODAY = NOW[:10]
FIRST_DAY = dt.date(2024, 6, 3)
WINDOW_END = "2025-03-11 09:00"
"""Appointments starting before this (24 hours after :data:`NOW`) can no longer be changed."""
BOOKING_HORIZON_DAYS = 60
LAST_DAY = dt.date.fromisoformat(TODAY) + dt.timedelta(days=BOOKING_HORIZON_DAYS)
SLOT_MINUTES = 30
LUNCH = ("12:00", "13:00")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

PRIMARY_CARE = ("Family Medicine", "Internal Medicine", "Pediatrics")
SPECIALTY_COUNTS: dict[str, int] = {
    "Family Medicine": 14,
    "Internal Medicine": 10,
    "Pediatrics": 8,
    "Cardiology": 6,
    "Dermatology": 6,
    "Orthopedics": 6,
    "Neurology": 4,
    "Endocrinology": 4,
    "Gastroenterology": 4,
    "Obstetrics and Gynecology": 5,
    "Psychiatry": 5,
    "Physical Therapy": 4,
    "Ophthalmology": 4,
}
SPECIALTIES = tuple(SPECIALTY_COUNTS)

SERVICES: tuple[Service, ...] = get_args(Service)
VISIT_TYPES = ("checkup", "sick visit", "follow-up", "consultation")
CANCEL_REASONS = ("schedule conflict", "feeling better", "seeing another provider", "other")
APPEAL_REASONS = ("medically necessary", "referral on file", "billing error", "provider in network")
DENIAL_REASONS = (
    "no referral on file",
    "not medically necessary",
    "billing code error",
    "out of network",
)


def visit_service(specialty: str) -> str:
    """The coverage service of an office visit with a provider of ``specialty``."""
    if specialty in PRIMARY_CARE:
        return "primary care visit"
    if specialty == "Psychiatry":
        return "mental health visit"
    if specialty == "Physical Therapy":
        return "physical therapy"
    return "specialist visit"


def provider_services(specialty: str) -> tuple[str, ...]:
    """Services a provider of ``specialty`` gives (what coverage can be checked against them)."""
    if specialty in PRIMARY_CARE:
        return ("primary care visit", "annual physical", "telehealth visit")
    if specialty == "Physical Therapy":
        return ("physical therapy",)
    return (visit_service(specialty), "telehealth visit")


_CLINICS = (
    ("CL101", "Northgate Family Health", "1450 Northgate Way", "Salem", "97301", "503-555-0110"),
    ("CL102", "Riverbend Medical Center", "220 Riverbend Drive", "Eugene", "97401",
     "541-555-0122"),
    ("CL103", "Oak Hollow Clinic", "77 Oak Hollow Road", "Corvallis", "97330", "541-555-0134"),
    ("CL104", "Lakeside Specialty Center", "910 Lakeside Avenue", "Portland", "97205",
     "503-555-0146"),
    ("CL105", "Juniper Ridge Health", "3305 Juniper Ridge Parkway", "Bend", "97701",
     "541-555-0158"),
    ("CL106", "Millrace Medical Plaza", "48 Millrace Street", "Albany", "97321", "541-555-0163"),
    ("CL107", "Fernhill Community Clinic", "1602 Fernhill Boulevard", "Hillsboro", "97124",
     "503-555-0175"),
    ("CL108", "Rogue Valley Care", "515 Bear Creek Lane", "Medford", "97501", "541-555-0187"),
)  # fmt: skip

NETWORKS = ("Cascade", "Willamette", "Pacific Crest")

# plan_id: name, type, network, referral_required, deductible, out-of-pocket max, member prefix,
# out-of-network coinsurance (None: not covered), then per service (in SERVICES order) a copay
# in dollars, a coinsurance share like 0.2, or None (not covered); "*" marks prior authorization.
_PLANS: dict[str, tuple[Any, ...]] = {
    "CAS-HMO": ("Cascade Select HMO", "HMO", "Cascade", True, 500, 4000, "CH", None,
                (20, 45, 0, 25, 35, 10, 60, 0, 30, "0.2*")),
    "CAS-PPO": ("Cascade Choice PPO", "PPO", "Cascade", False, 1000, 6000, "CP", 0.4,
                (30, 55, 0, 30, 40, 15, 75, 10, 40, "0.2*")),
    "WIL-EPO": ("Willamette Direct EPO", "EPO", "Willamette", False, 750, 5000, "WE", None,
                (25, 50, 0, 25, 30, 5, 65, 0, 35, "0.25*")),
    "WIL-PPO": ("Willamette Flex PPO", "PPO", "Willamette", False, 1500, 7000, "WP", 0.4,
                (35, 65, 0, 35, 45, 20, 80, 15, 45, "0.3*")),
    "PCR-MA": ("Pacific Crest Medicare Advantage HMO", "HMO", "Pacific Crest", True, 0, 3500,
               "PM", None, (5, 35, 0, 20, 20, 0, 40, 0, 15, "0.2*")),
    "PCR-BAS": ("Pacific Crest Basic HMO", "HMO", "Pacific Crest", True, 2500, 8500, "PB", None,
                (40, 85, 0, 50, None, 25, 100, 20, 60, "0.4*")),
}  # fmt: skip

# Base fees of an office visit by coverage service (billed amounts vary around them).
_VISIT_FEES = {
    "primary care visit": 165.0,
    "specialist visit": 290.0,
    "mental health visit": 210.0,
    "physical therapy": 140.0,
}

_PHARMACIES = (
    "Northgate Pharmacy (Salem)", "Riverbend Drug (Eugene)", "Campus Corner Pharmacy (Corvallis)",
    "Pearl District Apothecary (Portland)", "High Desert Pharmacy (Bend)",
    "Calapooia Drug (Albany)", "Tualatin Valley Pharmacy (Hillsboro)",
    "Bear Creek Pharmacy (Medford)",
)  # fmt: skip

# name, strengths, controlled schedule, days supply options, instructions, prescriber specialty
_MEDICATIONS: tuple[tuple[str, tuple[str, ...], str | None, tuple[int, ...], str, str], ...] = (
    ("atorvastatin", ("10 mg", "20 mg", "40 mg"), None, (30, 90), "1 tablet at bedtime", "pcp"),
    ("lisinopril", ("5 mg", "10 mg", "20 mg"), None, (30, 90), "1 tablet daily", "pcp"),
    ("metformin", ("500 mg", "1000 mg"), None, (30, 90), "1 tablet twice daily with meals",
     "Endocrinology"),
    ("levothyroxine", ("50 mcg", "75 mcg", "100 mcg"), None, (30, 90),
     "1 tablet every morning before breakfast", "Endocrinology"),
    ("amlodipine", ("5 mg", "10 mg"), None, (30, 90), "1 tablet daily", "Cardiology"),
    ("sertraline", ("50 mg", "100 mg"), None, (30,), "1 tablet daily", "Psychiatry"),
    ("omeprazole", ("20 mg", "40 mg"), None, (30, 90), "1 capsule before breakfast",
     "Gastroenterology"),
    ("albuterol inhaler", ("90 mcg",), None, (30,), "2 puffs every 4-6 hours as needed", "pcp"),
    ("losartan", ("25 mg", "50 mg", "100 mg"), None, (30, 90), "1 tablet daily", "Cardiology"),
    ("escitalopram", ("10 mg", "20 mg"), None, (30,), "1 tablet daily", "Psychiatry"),
    ("montelukast", ("10 mg",), None, (30,), "1 tablet every evening", "pcp"),
    ("hydrochlorothiazide", ("12.5 mg", "25 mg"), None, (30, 90), "1 tablet every morning",
     "pcp"),
    ("metoprolol succinate", ("25 mg", "50 mg"), None, (30, 90), "1 tablet daily",
     "Cardiology"),
    ("tretinoin cream", ("0.025%", "0.05%"), None, (30,), "apply a thin layer at night",
     "Dermatology"),
    ("sumatriptan", ("50 mg", "100 mg"), None, (30,), "1 tablet at migraine onset", "Neurology"),
    ("alprazolam", ("0.25 mg", "0.5 mg"), "IV", (30,), "1 tablet up to twice daily as needed",
     "Psychiatry"),
    ("zolpidem", ("5 mg", "10 mg"), "IV", (30,), "1 tablet at bedtime as needed", "pcp"),
    ("tramadol", ("50 mg",), "IV", (30,), "1 tablet every 6 hours as needed for pain",
     "Orthopedics"),
    ("clonazepam", ("0.5 mg", "1 mg"), "IV", (30,), "1 tablet twice daily", "Neurology"),
    ("lorazepam", ("0.5 mg", "1 mg"), "IV", (30,), "1 tablet up to three times daily as needed",
     "Psychiatry"),
    ("methylphenidate ER", ("18 mg", "36 mg"), "II", (30,), "1 tablet every morning",
     "Psychiatry"),
    ("amphetamine salts", ("10 mg", "20 mg"), "II", (30,), "1 tablet every morning",
     "Psychiatry"),
    ("oxycodone", ("5 mg",), "II", (30,), "1 tablet every 6 hours as needed for pain",
     "Orthopedics"),
    ("testosterone cypionate", ("200 mg/mL",), "III", (30,), "1 mL injected every 2 weeks",
     "Endocrinology"),
    ("pregabalin", ("75 mg", "150 mg"), "V", (30,), "1 capsule twice daily", "Neurology"),
)  # fmt: skip

_FIRST_NAMES = (
    "Adaeze", "Bartholomew", "Celestine", "Dariusz", "Eilidh", "Fernando", "Gwendolyn", "Haruto",
    "Imogen", "Jasper", "Kirra", "Leandro", "Margarethe", "Naveen", "Orla", "Percival", "Rania",
    "Stellan", "Thandiwe", "Ugo", "Veronika", "Wilbur", "Xiadani", "Yosef", "Zinnia", "Alastair",
    "Briony", "Cosmin", "Delphine", "Ezekiel", "Fenna", "Gaspard", "Hyacinth", "Ignatius",
    "Jolene", "Kasimir", "Lucinda", "Mordecai", "Noemi", "Octavia", "Pim", "Rosalie", "Severin",
    "Tallulah", "Urban", "Vesna", "Winifred", "Yolanda", "Zebulon", "Anneliese", "Benedikt",
    "Clarimond", "Dashiell", "Evadne", "Fitzgerald", "Giulietta", "Horatio", "Isadora", "Jethro",
    "Kalinda", "Lysander", "Maelis", "Nkechi", "Oswin", "Philippa", "Quillon", "Rhiannon",
    "Sigrun", "Theodora", "Valdemar",
)  # fmt: skip
_LAST_NAMES = (
    "Achterberg", "Blackwood", "Carrasco", "Dalgleish", "Eberhardt", "Fitzroy", "Gunawardena",
    "Holloway", "Ingersoll", "Jaramillo", "Kettering", "Lindgren", "Mwangi", "Nordstrom",
    "Oduya", "Prendergast", "Quarles", "Radcliffe", "Strand", "Tolliver", "Urquhart", "Vance",
    "Wetherby", "Yardley", "Zielinski", "Ambrose", "Bancroft", "Coutinho", "Drummond",
    "Ellsworth", "Fairweather", "Galloway", "Hathaway", "Iverson", "Jessup", "Kowal", "Larkspur",
    "Montague", "Nakashima", "Ostrowski", "Pemberton", "Rutherford", "Sinclair", "Trevino",
    "Underwood", "Valentin", "Whitfield", "Yoshida", "Zamarripa", "Ashworth", "Boateng",
    "Calloway", "Dufresne", "Espinoza", "Forsythe", "Greenleaf", "Hollister", "Ishikawa",
)  # fmt: skip
_PROVIDER_FIRST = (
    "Adrienne", "Bertrand", "Cordelia", "Desmond", "Estelle", "Florin", "Genevieve", "Hollis",
    "Ilse", "Jerome", "Katarina", "Lionel", "Mirela", "Nikolai", "Ophelia", "Prakash", "Renata",
    "Silas", "Tatiana", "Vikram", "Wilhelm", "Yvette", "Anselm", "Beatrix", "Cassius", "Dagmar",
)  # fmt: skip
_PROVIDER_LAST = (
    "Abernethy", "Balogun", "Castellanos", "Dimitriou", "Eastwood", "Faraday", "Goswami",
    "Hendricks", "Ilunga", "Jankowski", "Kessler", "Lombardi", "Mancuso", "Nwosu", "Olmstead",
    "Pacheco", "Quinlan", "Ramanathan", "Sorensen", "Takahashi", "Uchenna", "Vorhees", "Wakefield",
    "Yancey", "Zeller", "Arbuckle", "Birkeland", "Chaudhry", "Delgado", "Engstrom", "Falconer",
    "Gallagher", "Halvorsen", "Iqbal", "Jennings", "Kovacs", "Lachapelle", "Marchand", "Novotny",
    "Oyelowo", "Pritchard", "Rasmussen", "Santangelo", "Thistlewood", "Umeh", "Varughese",
    "Whitlock", "Yamaguchi", "Zapata", "Aldridge", "Brightwater", "Cavendish", "Dunleavy",
    "Esterhazy", "Fontenot", "Grimaldi", "Hargrove", "Ikeda", "Jovanovic", "Kirkpatrick",
    "Lindqvist", "Mbatha", "Nakamura", "Okonjo", "Pappas", "Rhinehart", "Stavros", "Trudeau",
    "Ulloa", "Vasquez", "Westergaard", "Yeboah", "Zuniga", "Atwater", "Bellamy", "Crane",
    "Dorsey", "Everhart", "Finnegan", "Gustafson", "Holmberg", "Ivanova",
)  # fmt: skip
_STREETS = (
    "Alder", "Birch", "Cascade", "Douglas Fir", "Elk Ridge", "Filbert", "Glacier", "Huckleberry",
    "Ironwood", "Larch", "Madrone", "Ninebark", "Osprey", "Ponderosa", "Quail Run", "Salmonberry",
    "Tamarack", "Vine Maple", "Willow Creek", "Yarrow",
)  # fmt: skip
_STREET_TYPES = ("Street", "Avenue", "Road", "Lane", "Drive", "Court", "Way", "Place")
_ALLERGIES = (
    "penicillin",
    "sulfa drugs",
    "latex",
    "peanuts",
    "shellfish",
    "codeine",
    "ibuprofen",
    "bee stings",
)
_RELATIONSHIPS_ADULT = ("spouse", "adult child", "sibling", "caregiver", "partner")


# --------------------------------------------------------------------------- time helpers


def day(date: dt.date) -> str:
    return date.isoformat()


def parse_day(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


@functools.lru_cache(maxsize=4096)
def weekday(date_text: str) -> str:
    return WEEKDAYS[parse_day(date_text).weekday()]


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def day_slots(hours: dict[str, str]) -> tuple[str, ...]:
    """Start times of a working day's 30-minute slots, without the lunch hour."""
    return _slots_between(hours["start"], hours["end"])


@functools.cache
def _slots_between(start: str, end: str) -> tuple[str, ...]:
    lunch_start, lunch_end = (_minutes(t) for t in LUNCH)
    return tuple(
        _clock(minute)
        for minute in range(_minutes(start), _minutes(end), SLOT_MINUTES)
        if not lunch_start <= minute < lunch_end
    )


# --------------------------------------------------------------------------- generators


def _clinics() -> dict[str, dict[str, Any]]:
    return {
        clinic_id: {
            "clinic_id": clinic_id,
            "name": name,
            "address": {"street": street, "city": city, "state": "OR", "zip": zip_code},
            "phone": phone,
        }
        for clinic_id, name, street, city, zip_code, phone in _CLINICS
    }


def _plans() -> dict[str, dict[str, Any]]:
    plans = {}
    for plan_id, row in _PLANS.items():
        name, kind, network, referral, deductible, maximum, _, oon, values = row
        services = {}
        for service, value in zip(SERVICES, values, strict=True):
            entry: dict[str, Any] = {
                "covered": value is not None,
                "copay": None,
                "coinsurance": None,
                "prior_authorization": False,
            }
            if isinstance(value, str):
                entry["coinsurance"] = float(value.rstrip("*"))
                entry["prior_authorization"] = value.endswith("*")
            elif value is not None:
                entry["copay"] = value
            services[service] = entry
        plans[plan_id] = {
            "plan_id": plan_id,
            "name": name,
            "type": kind,
            "network": network,
            "referral_required": referral,
            "deductible": deductible,
            "out_of_pocket_max": maximum,
            "services": services,
            "out_of_network": {"covered": oon is not None, "coinsurance": oon},
        }
    return plans


def _providers(rng: random.Random, taken: set[str]) -> dict[str, dict[str, Any]]:
    last_names = list(_PROVIDER_LAST)
    rng.shuffle(last_names)
    clinic_ids = [row[0] for row in _CLINICS]
    providers: dict[str, dict[str, Any]] = {}
    number = 0
    for specialty, count in SPECIALTY_COUNTS.items():
        for index in range(count):
            provider_id = new_id(rng, taken, lambda r: f"PRV{r.randint(1000, 9999)}")
            # Primary care is spread over every clinic; specialists over the larger ones too.
            clinic_id = (
                clinic_ids[(index + number) % len(clinic_ids)]
                if specialty in PRIMARY_CARE
                else rng.choice(clinic_ids)
            )
            if specialty == "Physical Therapy":
                title = "DPT"
            elif specialty in PRIMARY_CARE and rng.random() < 0.25:
                title = rng.choice(("NP", "PA"))
            else:
                title = rng.choice(("MD", "MD", "MD", "DO"))
            shape = rng.choices((3, 2, 1), weights=(50, 35, 15))[0]
            networks = sorted(rng.sample(NETWORKS, shape), key=NETWORKS.index)
            days = sorted(rng.sample(range(5), rng.choice((3, 4, 4, 5))))
            start = rng.choice(("07:30", "08:00", "08:00", "09:00"))
            end = {"07:30": "15:30", "08:00": "16:30", "09:00": "17:00"}[start]
            providers[provider_id] = {
                "provider_id": provider_id,
                "name": {"first_name": rng.choice(_PROVIDER_FIRST), "last_name": last_names.pop()},
                "title": title,
                "specialty": specialty,
                "clinic_id": clinic_id,
                "networks": networks,
                "working_days": [WEEKDAYS[d] for d in days],
                "hours": {"start": start, "end": end},
                "accepting_new_patients": rng.random() < 0.8,
            }
        number += count
    return providers


def _address(rng: random.Random, clinic: dict[str, Any]) -> dict[str, str]:
    return {
        "street": f"{rng.randint(10, 9899)} {rng.choice(_STREETS)} {rng.choice(_STREET_TYPES)}",
        "city": clinic["address"]["city"],
        "state": "OR",
        "zip": clinic["address"]["zip"][:3] + f"{rng.randint(0, 99):02d}",
    }


def _patients(
    rng: random.Random,
    taken: set[str],
    clinics: dict[str, dict[str, Any]],
    providers: dict[str, dict[str, Any]],
    plans: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    today = parse_day(TODAY)
    primary = {
        specialty: [p for p in providers.values() if p["specialty"] == specialty]
        for specialty in PRIMARY_CARE
    }
    specialists = [s for s in SPECIALTIES if s not in PRIMARY_CARE]
    patients: dict[str, dict[str, Any]] = {}
    identities: set[tuple[str, str, str]] = set()
    while len(patients) < 500:
        first, last = rng.choice(_FIRST_NAMES), rng.choice(_LAST_NAMES)
        band = rng.random()
        age_days = (
            rng.randint(365, 17 * 365)
            if band < 0.15
            else rng.randint(19 * 365, 64 * 365)
            if band < 0.8
            else rng.randint(66 * 365, 92 * 365)
        )
        dob = day(today - dt.timedelta(days=age_days))
        if (first, last, dob) in identities:
            continue
        identities.add((first, last, dob))
        minor, senior = band < 0.15, band >= 0.8
        patient_id = new_id(rng, taken, lambda r: f"P{r.randint(100000, 999999)}")
        email = new_id(
            rng,
            taken,
            lambda r: f"{first.lower()}.{last.lower()}{r.randint(1, 999)}@example.net",  # noqa: B023
        )
        plan_id = (
            rng.choices(("PCR-MA", "CAS-PPO", "WIL-PPO"), weights=(80, 10, 10))[0]
            if senior
            else rng.choice(("CAS-HMO", "CAS-PPO", "WIL-EPO", "WIL-PPO", "PCR-BAS"))
        )
        plan = plans[plan_id]
        prefix = _PLANS[plan_id][6]
        member_id = new_id(rng, taken, lambda r: f"{prefix}{r.randint(10**7, 10**8 - 1)}")  # noqa: B023
        kinds = ("Pediatrics",) if minor else ("Family Medicine", "Internal Medicine")
        choices = [p for k in kinds for p in primary[k] if plan["network"] in p["networks"]]
        pcp = rng.choice(choices or [p for k in kinds for p in primary[k]])
        clinic = clinics[pcp["clinic_id"]]
        referrals = []
        for _ in range(rng.choices((0, 1, 2), weights=(45, 40, 15))[0]):
            issued = today - dt.timedelta(days=rng.randint(5, 300))
            referral_id = new_id(rng, taken, lambda r: f"RF{r.randint(100000, 999999)}")
            referrals.append(
                {
                    "referral_id": referral_id,
                    "specialty": rng.choice(specialists),
                    "referred_by": pcp["provider_id"],
                    "issued_on": day(issued),
                    "expires_on": day(issued + dt.timedelta(days=180)),
                }
            )
        contacts = []
        if minor:
            parents = rng.sample(_FIRST_NAMES, rng.choice((1, 2)))
            contacts = [{"name": f"{p} {last}", "relationship": "parent"} for p in parents]
        elif rng.random() < (0.5 if senior else 0.25):
            relationship = rng.choice(_RELATIONSHIPS_ADULT)
            surname = last if relationship != "caregiver" else rng.choice(_LAST_NAMES)
            contacts = [
                {"name": f"{rng.choice(_FIRST_NAMES)} {surname}", "relationship": relationship}
            ]
        contacts = [c for c in contacts if c["name"] != f"{first} {last}"]
        area = clinic["phone"][:3]
        patients[patient_id] = {
            "patient_id": patient_id,
            "name": {"first_name": first, "last_name": last},
            "dob": dob,
            "email": email,
            "phone": f"{area}-555-{rng.randint(2000, 9999)}",
            "address": _address(rng, clinic),
            "plan_id": plan_id,
            "member_id": member_id,
            "primary_provider_id": pcp["provider_id"],
            "preferred_pharmacy": _PHARMACIES[list(clinics).index(clinic["clinic_id"])],
            "allergies": sorted(rng.sample(_ALLERGIES, rng.choices((0, 1, 2), (60, 30, 10))[0])),
            "referrals": referrals,
            "authorized_contacts": contacts,
            "appointments": [],
            "prescriptions": [],
            "claims": [],
        }
    return patients


def _working_dates(provider: dict[str, Any], first: dt.date, last: dt.date) -> list[str]:
    days = {WEEKDAYS.index(d) for d in provider["working_days"]}
    out = []
    current = first
    while current <= last:
        if current.weekday() in days:
            out.append(day(current))
        current += dt.timedelta(days=1)
    return out


def _appointments(
    rng: random.Random,
    taken: set[str],
    patients: dict[str, dict[str, Any]],
    providers: dict[str, dict[str, Any]],
    plans: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    today = parse_day(TODAY)
    specialists = [p for p in providers.values() if p["specialty"] not in PRIMARY_CARE]
    pediatric_ok = [p for p in specialists if p["specialty"] not in ("Obstetrics and Gynecology",)]
    busy: set[tuple[str, str]] = set()  # (provider or patient id, start)
    patient_ids = list(patients)
    appointments: dict[str, dict[str, Any]] = {}
    yesterday = today - dt.timedelta(days=1)
    tomorrow = today + dt.timedelta(days=1)
    slots = {pid: day_slots(p["hours"]) for pid, p in providers.items()}
    past_dates = {pid: _working_dates(p, FIRST_DAY, yesterday) for pid, p in providers.items()}
    future_dates = {pid: _working_dates(p, tomorrow, LAST_DAY) for pid, p in providers.items()}
    window_dates = {pid: _working_dates(p, today, tomorrow) for pid, p in providers.items()}

    def add(patient_id: str, provider: dict[str, Any], start: str) -> None:
        patient = patients[patient_id]
        appointment_id = new_id(rng, taken, lambda r: f"A{r.randint(10**6, 10**7 - 1)}")
        busy.update(((provider["provider_id"], start), (patient_id, start)))
        date = start[:10]
        past = start < NOW
        if past:
            status = rng.choices(("completed", "cancelled", "no-show"), weights=(80, 12, 8))[0]
        else:
            status = rng.choices(("scheduled", "cancelled"), weights=(88, 12))[0]
        primary = provider["specialty"] in PRIMARY_CARE
        visit_type = rng.choice(
            ("checkup", "sick visit", "follow-up") if primary else ("consultation", "follow-up")
        )
        booked = parse_day(date) - dt.timedelta(days=rng.randint(2, 40))
        record: dict[str, Any] = {
            "appointment_id": appointment_id,
            "patient_id": patient_id,
            "provider_id": provider["provider_id"],
            "clinic_id": provider["clinic_id"],
            "start": start,
            "duration_minutes": SLOT_MINUTES,
            "visit_type": visit_type,
            "status": status,
            "booked_on": day(min(booked, today - dt.timedelta(days=1))),
        }
        if status == "cancelled":
            record["cancel_reason"] = rng.choice(CANCEL_REASONS)
            cancelled = parse_day(date) - dt.timedelta(days=rng.randint(1, 5))
            record["cancelled_on"] = day(min(cancelled, today - dt.timedelta(days=1)))
        if status == "completed":
            fee = _VISIT_FEES[visit_service(provider["specialty"])]
            record["billed_amount"] = round(fee * rng.uniform(0.85, 1.3), 2)
            record["claim_id"] = None
        appointments[appointment_id] = record
        patient["appointments"].append(appointment_id)

    def pick_provider(patient: dict[str, Any]) -> dict[str, Any]:
        if rng.random() < 0.62:
            return providers[patient["primary_provider_id"]]
        minor = is_minor(patient)
        network = plans[patient["plan_id"]]["network"]
        pool = [p for p in (pediatric_ok if minor else specialists) if network in p["networks"]]
        return rng.choice(pool)

    def place(patient_id: str, provider: dict[str, Any], dates: list[str], late: bool) -> bool:
        """Book a random free slot on one of ``dates``: inside the 24-hour window if ``late``,
        else in the past or after the window."""
        provider_id = provider["provider_id"]
        if not dates:
            return False
        for _ in range(30):
            date = rng.choice(dates)
            start = f"{date} {rng.choice(slots[provider_id])}"
            if late != (NOW < start < WINDOW_END) or (date > TODAY and start < WINDOW_END):
                continue
            if (provider_id, start) in busy or (patient_id, start) in busy:
                continue
            add(patient_id, provider, start)
            return True
        return False

    # Inside the 24-hour window (the rest of today and tomorrow before 09:00): what the policy's
    # late-change rule is about.
    late = 0
    while late < 45:
        patient_id = rng.choice(patient_ids)
        provider = pick_provider(patients[patient_id])
        late += place(patient_id, provider, window_dates[provider["provider_id"]], True)
    owners = patient_ids + [rng.choice(patient_ids) for _ in range(1500 - 500 - late)]
    for patient_id in owners:
        while True:
            provider = pick_provider(patients[patient_id])
            future = rng.random() < 0.22
            dates = (future_dates if future else past_dates)[provider["provider_id"]]
            if place(patient_id, provider, dates, False):
                break
    for patient in patients.values():
        patient["appointments"].sort(key=lambda a: appointments[a]["start"])
    return appointments


def _quantity(instructions: str, days_supply: int) -> int:
    """Units dispensed per fill: one inhaler, tube or vial a month, else doses times days."""
    if instructions.startswith(("2 puffs", "apply", "1 mL")):
        return days_supply // 30
    per_day = 3 if "three times" in instructions else 2 if "twice" in instructions else 1
    if "every 6 hours" in instructions:
        per_day = 4
    return per_day * days_supply


def is_minor(patient: dict[str, Any]) -> bool:
    """Under 18 on :data:`TODAY`."""
    born = parse_day(patient["dob"])
    today = parse_day(TODAY)
    return (today.year - born.year - ((today.month, today.day) < (born.month, born.day))) < 18


def _prescriptions(
    rng: random.Random,
    taken: set[str],
    patients: dict[str, dict[str, Any]],
    providers: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    today = parse_day(TODAY)
    by_specialty: dict[str, list[str]] = {}
    for provider_id, provider in providers.items():
        by_specialty.setdefault(provider["specialty"], []).append(provider_id)
    adults = [pid for pid, p in patients.items() if not is_minor(p)]
    owners = adults[:]
    rng.shuffle(owners)
    owners = owners[:380]
    owners += [rng.choice(owners) for _ in range(1000 - len(owners))]
    prescriptions: dict[str, dict[str, Any]] = {}
    for patient_id in owners:
        patient = patients[patient_id]
        held = {prescriptions[r]["medication"] for r in patient["prescriptions"]}
        options = [m for m in _MEDICATIONS if m[0] not in held]
        name, strengths, schedule, supplies, instructions, prescriber = rng.choice(options)
        days_supply = rng.choice(supplies)
        prescriber_id = (
            patient["primary_provider_id"]
            if prescriber == "pcp"
            else rng.choice(by_specialty[prescriber])
        )
        if schedule == "II":
            refills_authorized, valid_days = 0, 90
        elif schedule is not None:
            refills_authorized, valid_days = rng.randint(1, 5), 180
        else:
            refills_authorized = rng.choice((3, 5, 11) if days_supply == 30 else (1, 3))
            valid_days = 365
        written = today - dt.timedelta(days=rng.randint(10, valid_days + 45))
        # The last fill: from just now to a little past the end of the supply.
        last_fill = today - dt.timedelta(days=rng.randint(0, int(days_supply * 1.35)))
        last_fill = max(last_fill, written)
        fills_since = (last_fill - written).days // days_supply
        refills_remaining = max(0, refills_authorized - fills_since)
        if rng.random() < 0.12:
            refills_remaining = 0
        expires = written + dt.timedelta(days=valid_days)
        status = (
            "discontinued" if rng.random() < 0.07 else "expired" if expires < today else "active"
        )
        prescription_id = new_id(rng, taken, lambda r: f"RX{r.randint(100000, 999999)}")
        request = None
        if status == "active" and refills_remaining > 0 and rng.random() < 0.08:
            request = {
                "requested_on": day(today - dt.timedelta(days=rng.randint(1, 3))),
                "status": "pending",
            }
        prescriptions[prescription_id] = {
            "prescription_id": prescription_id,
            "patient_id": patient_id,
            "medication": name,
            "strength": rng.choice(strengths),
            "instructions": instructions,
            "quantity": _quantity(instructions, days_supply),
            "days_supply": days_supply,
            "controlled_schedule": schedule,
            "prescriber_id": prescriber_id,
            "pharmacy": patient["preferred_pharmacy"],
            "written_on": day(written),
            "expires_on": day(expires),
            "refills_authorized": refills_authorized,
            "refills_remaining": refills_remaining,
            "last_fill_date": day(last_fill),
            "status": status,
            "refill_request": request,
        }
        patient["prescriptions"].append(prescription_id)
    return prescriptions


def _claims(
    rng: random.Random,
    taken: set[str],
    patients: dict[str, dict[str, Any]],
    providers: dict[str, dict[str, Any]],
    plans: dict[str, dict[str, Any]],
    appointments: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    today = parse_day(TODAY)
    completed = [a for a in appointments.values() if a["status"] == "completed"]
    chosen = sorted(rng.sample(completed, 600), key=lambda a: a["start"])
    claims: dict[str, dict[str, Any]] = {}
    for appointment in chosen:
        patient = patients[appointment["patient_id"]]
        plan = plans[patient["plan_id"]]
        provider = providers[appointment["provider_id"]]
        service = visit_service(provider["specialty"])
        served = parse_day(appointment["start"][:10])
        age = (today - served).days
        billed = appointment["billed_amount"]
        allowed = round(billed * rng.uniform(0.6, 0.85), 2)
        submitted = served + dt.timedelta(days=rng.randint(1, 6))
        if age < 12:
            status = rng.choice(("submitted", "in review"))
        else:
            status = rng.choices(
                ("paid", "denied", "appealed", "in review"), weights=(62, 26, 6, 6)
            )[0]
        entry = plan["services"][service]
        copay = entry["copay"] if entry["copay"] is not None else round(allowed * 0.3, 2)
        claim_id = new_id(rng, taken, lambda r: f"CLM{r.randint(10**6, 10**7 - 1)}")
        processed = None
        if status in ("paid", "denied", "appealed"):
            processed = day(
                min(submitted + dt.timedelta(days=rng.randint(8, 40)), today - dt.timedelta(days=1))
            )
        claim: dict[str, Any] = {
            "claim_id": claim_id,
            "patient_id": patient["patient_id"],
            "appointment_id": appointment["appointment_id"],
            "provider_id": provider["provider_id"],
            "service": service,
            "date_of_service": day(served),
            "billed_amount": billed,
            "allowed_amount": None,
            "plan_paid": 0.0,
            "patient_responsibility": None,
            "status": status,
            "submitted_on": day(min(submitted, today)),
            "processed_on": processed,
            "denial_reason": None,
            "appeal": None,
        }
        if status == "paid":
            claim.update(
                allowed_amount=allowed,
                plan_paid=round(max(allowed - copay, 0.0), 2),
                patient_responsibility=round(min(copay, allowed), 2),
            )
        elif status in ("denied", "appealed"):
            claim.update(denial_reason=rng.choice(DENIAL_REASONS), patient_responsibility=billed)
            if status == "appealed":
                filed = parse_day(processed) + dt.timedelta(days=rng.randint(3, 30))
                claim["appeal"] = {
                    "reason": rng.choice(APPEAL_REASONS),
                    "filed_on": day(min(filed, today - dt.timedelta(days=1))),
                }
        claims[claim_id] = claim
        appointment["claim_id"] = claim_id
        patient["claims"].append(claim_id)
    return claims


def generate_tables(seed: int = 0) -> Tables:
    """The whole database for ``seed`` (deterministic): 8 clinics, 6 plans, 80 providers, 500
    patients, 1,500 appointments, 1,000 prescriptions and 600 claims."""
    rng = random.Random(seed)
    taken: set[str] = set()
    clinics = _clinics()
    plans = _plans()
    providers = _providers(rng, taken)
    patients = _patients(rng, taken, clinics, providers, plans)
    appointments = _appointments(rng, taken, patients, providers, plans)
    prescriptions = _prescriptions(rng, taken, patients, providers)
    claims = _claims(rng, taken, patients, providers, plans, appointments)
    return {
        "clinics": clinics,
        "plans": plans,
        "providers": providers,
        "patients": patients,
        "appointments": appointments,
        "prescriptions": prescriptions,
        "claims": claims,
    }


load_tables = SeedTables(generate_tables)
"""The database of the shipped env (seed 0), built once per process; read-only."""

"""The healthcare database's records, typed: what each table's values hold (see :mod:`.data`).

Tables map a record's id to the record; records are plain JSON dicts (the database copies and
hashes them as such), so these are ``TypedDict``s: a description for readers and type checkers,
checked against the generated tables and every gold replay by the tests.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict

from tool_envs.tau.records import Name, StreetAddress

Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
VisitType = Literal["checkup", "sick visit", "follow-up", "consultation"]
CancelReason = Literal["schedule conflict", "feeling better", "seeing another provider", "other"]
Service = Literal[
    "primary care visit",
    "specialist visit",
    "annual physical",
    "mental health visit",
    "physical therapy",
    "telehealth visit",
    "urgent care",
    "lab work",
    "x-ray",
    "mri",
]
"""The services a plan prices (its ``services`` keys, in this order)."""
AppealReason = Literal[
    "medically necessary", "referral on file", "billing error", "provider in network"
]


class Clinic(TypedDict):
    clinic_id: str
    name: str
    address: StreetAddress
    phone: str


class Coverage(TypedDict):
    """What the plan pays for one service: a copay or a coinsurance share."""

    covered: bool
    copay: int | None
    coinsurance: float | None
    prior_authorization: bool


class OutOfNetwork(TypedDict):
    covered: bool
    coinsurance: float | None


class Plan(TypedDict):
    """An insurance plan, its network and its coverage by service name."""

    plan_id: str
    name: str
    type: Literal["HMO", "PPO", "EPO"]
    network: str
    referral_required: bool
    deductible: int
    out_of_pocket_max: int
    services: dict[str, Coverage]
    out_of_network: OutOfNetwork


class Hours(TypedDict):
    start: str
    end: str


class Provider(TypedDict):
    """A clinician (``PRV`` + 4 digits); doctors are MD or DO."""

    provider_id: str
    name: Name
    title: Literal["MD", "DO", "NP", "PA", "DPT"]
    specialty: str
    clinic_id: str
    networks: list[str]
    working_days: list[Weekday]
    hours: Hours
    accepting_new_patients: bool


class Referral(TypedDict):
    referral_id: str
    specialty: str
    referred_by: str
    issued_on: str
    expires_on: str


class Contact(TypedDict):
    """Someone the patient allows to act for them."""

    name: str
    relationship: str


class Patient(TypedDict):
    """A patient (``P`` + 6 digits), their plan and what they have on file."""

    patient_id: str
    name: Name
    dob: str
    email: str
    phone: str
    address: StreetAddress
    plan_id: str
    member_id: str
    primary_provider_id: str
    preferred_pharmacy: str
    allergies: list[str]
    referrals: list[Referral]
    authorized_contacts: list[Contact]
    appointments: list[str]
    prescriptions: list[str]
    claims: list[str]


class Appointment(TypedDict):
    """A visit (``A`` + 7 digits); cancels and reschedules add the ``NotRequired`` fields."""

    appointment_id: str
    patient_id: str
    provider_id: str
    clinic_id: str
    start: str
    duration_minutes: int
    visit_type: VisitType
    status: Literal["scheduled", "completed", "cancelled", "no-show"]
    booked_on: str
    cancel_reason: NotRequired[CancelReason]
    cancelled_on: NotRequired[str]
    billed_amount: NotRequired[float]
    claim_id: NotRequired[str | None]
    rescheduled_from: NotRequired[str]


class RefillRequest(TypedDict):
    requested_on: str
    status: Literal["pending"]


class Prescription(TypedDict):
    """A prescription (``RX`` + 6 digits); ``controlled_schedule`` is None if not controlled."""

    prescription_id: str
    patient_id: str
    medication: str
    strength: str
    instructions: str
    quantity: int
    days_supply: int
    controlled_schedule: Literal["II", "III", "IV", "V"] | None
    prescriber_id: str
    pharmacy: str
    written_on: str
    expires_on: str
    refills_authorized: int
    refills_remaining: int
    last_fill_date: str
    status: Literal["active", "expired", "discontinued"]
    refill_request: RefillRequest | None


class Appeal(TypedDict):
    reason: AppealReason
    filed_on: str


class Claim(TypedDict):
    """An insurance claim (``CLM`` + 7 digits) for one visit."""

    claim_id: str
    patient_id: str
    appointment_id: str
    provider_id: str
    service: str
    date_of_service: str
    billed_amount: float
    allowed_amount: float | None
    plan_paid: float
    patient_responsibility: float | None
    status: Literal["submitted", "in review", "paid", "denied", "appealed"]
    submitted_on: str
    processed_on: str | None
    denial_reason: str | None
    appeal: Appeal | None


RECORDS: dict[str, type] = {
    "clinics": Clinic,
    "plans": Plan,
    "providers": Provider,
    "patients": Patient,
    "appointments": Appointment,
    "prescriptions": Prescription,
    "claims": Claim,
}
"""The record type of each table."""

"""The healthcare agent's tools: verify a patient, read their records, book and change
appointments, request refills, check coverage, file and appeal claims.

Tools check what the data allows (ids exist and belong together, the appointment is still
scheduled, the slot is free, the prescription is active with refills left, the claim is denied)
and raise ``ValueError`` otherwise; a failed write changes nothing (every check runs before the
first edit). What the *policy* allows on top of that (identity before disclosure, who may act
for a patient, the 24-hour change window, referrals, refill timing, claim and appeal deadlines)
is the agent's job, as in tau-bench: such a write still succeeds, and the database no longer
matches the gold replay.

Every write is deterministic in its arguments and the current state (a new appointment's or
claim's id is a hash of what it is for), so a correct agent and the gold replay reach the same
database. Lookups go through base indexes (:meth:`Database.lookup`), never a table scan, and the
JSON text of a read over unchanged base records is kept per process.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from tool_envs.core.tools import tool
from tool_envs.tau.domains.healthcare.data import (
    LAST_DAY,
    NOW,
    PRIMARY_CARE,
    SPECIALTIES,
    TODAY,
    day_slots,
    provider_services,
    visit_service,
    weekday,
)
from tool_envs.tau.domains.healthcare.records import AppealReason, CancelReason, Service, VisitType
from tool_envs.tau.tools import DomainTools

Record = dict[str, Any]
_LAST_DAY = LAST_DAY.isoformat()
_NOW_CLOCK = NOW[11:]
# What a write reports back (the whole record is one get_..._details call away).
_REFILL_FIELDS = ("prescription_id", "medication", "strength", "refills_remaining",
                  "refill_request", "pharmacy")  # fmt: skip
_FILED_FIELDS = ("claim_id", "appointment_id", "date_of_service", "billed_amount", "status",
                 "submitted_on")  # fmt: skip
_APPEALED_FIELDS = ("claim_id", "status", "denial_reason", "appeal")
_START = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})")


# Index keys (one name per key function, as Database.lookup requires).
def _name_dob_key(patient: Record) -> tuple[str, str, str]:
    name = patient["name"]
    return (name["first_name"].lower(), name["last_name"].lower(), patient["dob"])


def _member_key(patient: Record) -> str:
    return patient["member_id"].upper()


def _email_key(patient: Record) -> str:
    return patient["email"].lower()


def _provider_day_key(appointment: Record) -> tuple[str, str]:
    return appointment["provider_id"], appointment["start"][:10]


def _specialty_key(provider: Record) -> str:
    return provider["specialty"].lower()


def _clinic_key(provider: Record) -> str:
    return provider["clinic_id"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _provider_name(provider: Record) -> str:
    name = provider["name"]
    return f"{name['first_name']} {name['last_name']}, {provider['title']}"


@functools.lru_cache(maxsize=4096)
def _parse_date(text: str) -> str:
    try:
        return dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise ValueError(f"'{text}' is not a date in the form YYYY-MM-DD") from None


@functools.lru_cache(maxsize=4096)
def _parse_start(text: str) -> str:
    """'YYYY-MM-DD HH:MM' (a 'T' between date and time is accepted too); cached, as
    ``strptime`` alone would cost more than the rest of a booking."""
    match = _START.fullmatch(text.strip())
    try:
        if match is None:
            raise ValueError
        dt.datetime(*(int(part) for part in match.groups()))
    except ValueError:
        raise ValueError(f"'{text}' is not a time in the form 'YYYY-MM-DD HH:MM'") from None
    year, month, date, hour, minute = match.groups()
    return f"{year}-{month}-{date} {hour}:{minute}"


def _hashed_id(prefix: str, text: str, taken: Callable[[str], bool]) -> str:
    """``prefix`` + 7 digits from a hash of ``text``, skipping ids already taken."""
    salt = 0
    while True:
        digest = hashlib.sha256(f"{salt}|{text}".encode()).digest()
        candidate = f"{prefix}{1_000_000 + int.from_bytes(digest[:8], 'big') % 9_000_000}"
        if not taken(candidate):
            return candidate
        salt += 1


class HealthcareTools(DomainTools):
    """Tools of a patient-services agent at a group of clinics."""

    quote_keys = True
    texts_per_process = True  # tools never change providers, plans or clinics

    # ----------------------------------------------------------------------- helpers

    def _patient(self, patient_id: str) -> Record:
        hint = " (patient ids look like 'P123456')"
        return self._record("patients", patient_id, "patient", hint=hint)

    def _provider(self, provider_id: str) -> Record:
        hint = " (provider ids look like 'PRV1234')"
        return self._record("providers", provider_id, "provider", hint=hint)

    def _appointment(self, appointment_id: str) -> Record:
        hint = " (appointment ids look like 'A1234567')"
        return self._record("appointments", appointment_id, "appointment", hint=hint)

    def _prescription(self, prescription_id: str) -> Record:
        hint = " (ids look like 'RX123456')"
        return self._record("prescriptions", prescription_id, "prescription", hint=hint)

    def _claim(self, claim_id: str) -> Record:
        hint = " (claim ids look like 'CLM1234567')"
        return self._record("claims", claim_id, "claim", hint=hint)

    def _verified(self, found: list[str], date_of_birth: str) -> str:
        dob = _parse_date(date_of_birth)
        matches = [key for key in found if self.db.get("patients", key)["dob"] == dob]
        if len(matches) != 1:
            raise ValueError("no patient matches these details")
        return matches[0]

    def _day(self, provider: Record, date: str) -> tuple[list[str], bool]:
        """Free start times ('HH:MM') of ``provider`` on ``date``, and whether every appointment
        that day is an unchanged base record; ValueError if the day cannot be booked."""
        if date < TODAY:
            raise ValueError(f"{date} is in the past (today is {TODAY})")
        if date > _LAST_DAY:
            raise ValueError(f"{date} is too far ahead: schedules are open through {_LAST_DAY}")
        name = weekday(date)
        if name not in provider["working_days"]:
            raise ValueError(
                f"{_provider_name(provider)} does not see patients on {name}s (working days: "
                f"{', '.join(provider['working_days'])})"
            )
        day = (provider["provider_id"], date)
        found = self.db.lookup("appointments", "provider_day", _provider_day_key, day)
        base = self.db.base.tables["appointments"]
        index = self.db.base.index("appointments", "provider_day", _provider_day_key)
        pristine = len(found) == len(index.get(day, ()))
        taken = set()
        for key in found:
            appointment = self.db.get("appointments", key)
            pristine = pristine and appointment is base.get(key)
            if appointment["status"] == "scheduled":
                taken.add(appointment["start"][11:])
        slots = day_slots(provider["hours"])
        after = _NOW_CLOCK if date == TODAY else ""
        return [s for s in slots if s > after and s not in taken], pristine

    def _free_slots(self, provider: Record, date: str) -> list[str]:
        return self._day(provider, date)[0]

    def _check_slot(self, provider: Record, start: str, patient: Record, moving: str = "") -> None:
        date, clock = start[:10], start[11:]
        free = self._free_slots(provider, date)
        if clock not in free:
            raise ValueError(
                f"{start} is not a free slot of {_provider_name(provider)}; free times on "
                f"{date}: {', '.join(free) or 'none'}"
            )
        for key in patient["appointments"]:
            other = self.db.get("appointments", key)
            if key != moving and other["status"] == "scheduled" and other["start"] == start:
                raise ValueError(f"the patient already has appointment {key} at {start}")

    # ----------------------------------------------------------------------- identity

    @tool
    def find_patient_by_name_dob(self, first_name: str, last_name: str, date_of_birth: str) -> str:
        """Verify a patient by full name and date of birth; returns their patient id. This, or
        one of the other find_patient tools, must succeed before anything is disclosed.

        Args:
            first_name: The patient's first name, such as 'Orla'.
            last_name: The patient's last name, such as 'Strand'.
            date_of_birth: The patient's date of birth, 'YYYY-MM-DD'.
        """
        key = (first_name.strip().lower(), last_name.strip().lower(), _parse_date(date_of_birth))
        return self._find(
            "patients", "name_dob", _name_dob_key, key, "no patient matches these details"
        )

    @tool
    def find_patient_by_member_id(self, member_id: str, date_of_birth: str) -> str:
        """Verify a patient by insurance member id and date of birth; returns their patient id.

        Args:
            member_id: The member id on the patient's insurance card, such as 'CH12345678'.
            date_of_birth: The patient's date of birth, 'YYYY-MM-DD'.
        """
        found = self.db.lookup("patients", "member", _member_key, member_id.strip().upper())
        return self._verified(found, date_of_birth)

    @tool
    def find_patient_by_email(self, email: str, date_of_birth: str) -> str:
        """Verify a patient by email address and date of birth; returns their patient id.

        Args:
            email: The patient's email address, such as 'orla.strand12@example.net'.
            date_of_birth: The patient's date of birth, 'YYYY-MM-DD'.
        """
        found = self.db.lookup("patients", "email", _email_key, email.strip().lower())
        return self._verified(found, date_of_birth)

    # ----------------------------------------------------------------------- reads

    @tool
    def get_patient_details(self, patient_id: str) -> str:
        """Get a verified patient's profile: contact details, insurance plan and member id,
        primary care provider, preferred pharmacy, allergies, referrals on file, authorized
        contacts, and the ids of their appointments, prescriptions and claims.

        Args:
            patient_id: The patient id from a find_patient tool, such as 'P123456'.
        """
        patient = self._patient(patient_id)
        return self._cached(
            ("patient", patient_id), [("patients", patient_id, patient)], lambda: patient
        )

    @tool
    def list_patient_appointments(self, patient_id: str) -> str:
        """List a patient's appointments, oldest first: id, start time, status, visit type,
        provider (id, name, specialty) and clinic id.

        Args:
            patient_id: The patient id, such as 'P123456'.
        """
        patient = self._patient(patient_id)
        records = [("patients", patient_id, patient)]
        appointments = []
        for key in patient["appointments"]:
            appointment = self.db.get("appointments", key)
            records.append(("appointments", key, appointment))
            appointments.append(appointment)

        def build() -> list[Record]:
            rows = []
            for appointment in appointments:
                provider = self.db.get("providers", appointment["provider_id"])
                rows.append(
                    {
                        "appointment_id": appointment["appointment_id"],
                        "start": appointment["start"],
                        "status": appointment["status"],
                        "visit_type": appointment["visit_type"],
                        "provider_id": provider["provider_id"],
                        "provider_name": _provider_name(provider),
                        "specialty": provider["specialty"],
                        "clinic_id": appointment["clinic_id"],
                    }
                )
            return rows

        return self._cached(("appointments of", patient_id), records, build)

    @tool
    def get_appointment_details(self, appointment_id: str) -> str:
        """Get an appointment: patient, provider, clinic, start time, visit type, status (with
        the cancellation reason if cancelled), and for completed visits the billed amount and
        the claim id (null if no claim was filed).

        Args:
            appointment_id: The appointment id, such as 'A1234567'.
        """
        appointment = self._appointment(appointment_id)
        return self._cached(
            ("appointment", appointment_id),
            [("appointments", appointment_id, appointment)],
            lambda: appointment,
        )

    @tool
    def list_clinics(self) -> str:
        """List the clinics: id, name, address and phone number."""
        return self._cached(("clinics",), [], lambda: list(self.db.base.tables["clinics"].values()))

    @tool
    def search_providers(self, specialty: str = "", clinic_id: str = "") -> str:
        """Find providers by specialty, by clinic, or both: id, name, title, specialty, clinic,
        insurance networks, working days and whether they accept new patients.

        Args:
            specialty: A specialty such as 'Dermatology' or 'Family Medicine' ('' for any).
            clinic_id: A clinic id such as 'CL104' ('' for any); see list_clinics.
        """
        specialty, clinic_id = specialty.strip(), clinic_id.strip().upper()
        if not specialty and not clinic_id:
            raise ValueError("give a specialty, a clinic_id, or both")
        if specialty and specialty.lower() not in {s.lower() for s in SPECIALTIES}:
            raise ValueError(
                f"unknown specialty '{specialty}'; specialties: {', '.join(SPECIALTIES)}"
            )
        if clinic_id and self.db.get("clinics", clinic_id) is None:
            raise ValueError(f"clinic '{clinic_id}' not found; see list_clinics")
        key = ("providers", specialty.lower(), clinic_id)

        def build() -> list[Record]:
            if specialty:
                keys = self.db.lookup("providers", "specialty", _specialty_key, specialty.lower())
            else:
                keys = self.db.lookup("providers", "clinic", _clinic_key, clinic_id)
            found = [self.db.get("providers", k) for k in keys]
            return [p for p in found if not clinic_id or p["clinic_id"] == clinic_id]

        # Tools never change providers, so a search is the same in every episode.
        return self._cached(key, [], build)

    @tool
    def get_provider_details(self, provider_id: str) -> str:
        """Get a provider: name, title, specialty, clinic, insurance networks, working days and
        hours, and whether they accept new patients.

        Args:
            provider_id: The provider id, such as 'PRV1234'.
        """
        provider = self._provider(provider_id)
        return self._cached(("provider", provider_id), [], lambda: provider)

    @tool
    def get_provider_availability(self, provider_id: str, date: str) -> str:
        """List a provider's free 30-minute appointment slots on one day (from now through the
        end of the 60-day booking horizon).

        Args:
            provider_id: The provider id, such as 'PRV1234'.
            date: The day, 'YYYY-MM-DD'.
        """
        provider = self._provider(provider_id)
        date = _parse_date(date)
        free, pristine = self._day(provider, date)
        payload = {
            "provider_id": provider_id,
            "date": date,
            "weekday": weekday(date),
            "available_slots": free,
        }
        if not pristine:
            return _dumps(payload)
        return self._cached(("availability", provider_id, date), [], lambda: payload)

    @tool
    def list_prescriptions(self, patient_id: str) -> str:
        """List a patient's prescriptions: id, medication, strength, status, controlled
        schedule, refills remaining and last fill date.

        Args:
            patient_id: The patient id, such as 'P123456'.
        """
        patient = self._patient(patient_id)
        records = [("patients", patient_id, patient)]
        prescriptions = []
        for key in patient["prescriptions"]:
            prescription = self.db.get("prescriptions", key)
            records.append(("prescriptions", key, prescription))
            prescriptions.append(prescription)
        fields = (
            "prescription_id",
            "medication",
            "strength",
            "status",
            "controlled_schedule",
            "refills_remaining",
            "last_fill_date",
        )
        return self._cached(
            ("prescriptions of", patient_id),
            records,
            lambda: [{f: rx[f] for f in fields} for rx in prescriptions],
        )

    @tool
    def get_prescription_details(self, prescription_id: str) -> str:
        """Get a prescription: medication, strength, instructions, quantity, days' supply,
        controlled-substance schedule, prescriber, pharmacy, written and expiry dates, refills
        authorized and remaining, last fill date, status and any pending refill request.

        Args:
            prescription_id: The prescription id, such as 'RX123456'.
        """
        prescription = self._prescription(prescription_id)
        return self._cached(
            ("prescription", prescription_id),
            [("prescriptions", prescription_id, prescription)],
            lambda: prescription,
        )

    @tool
    def get_plan_details(self, plan_id: str) -> str:
        """Get an insurance plan: type, network, whether specialist visits need a referral,
        deductible, out-of-pocket maximum, and per service the copay or coinsurance.

        Args:
            plan_id: The plan id from the patient's profile, such as 'CAS-HMO'.
        """
        plan = self._record("plans", plan_id, "plan")
        return self._cached(("plan", plan_id), [], lambda: plan)

    @tool
    def check_coverage(self, patient_id: str, service: Service, provider_id: str = "") -> str:
        """Check how the patient's plan covers a service: whether it is covered, the copay or
        coinsurance, and whether prior authorization is needed. With a provider, also whether
        the provider is in the plan's network and, for specialist visits, whether the plan
        requires a referral and the patient has a valid one on file for that specialty today.

        Args:
            patient_id: The patient id, such as 'P123456'.
            service: The service, such as 'specialist visit' or 'lab work'.
            provider_id: The provider who would give the service, such as 'PRV1234' ('' if none).
        """
        patient = self._patient(patient_id)
        plan = self.db.get("plans", patient["plan_id"])
        entry = plan["services"][service]
        result: Record = {
            "plan_id": plan["plan_id"],
            "plan_name": plan["name"],
            "service": service,
            "covered": entry["covered"],
            "copay": entry["copay"],
            "coinsurance": entry["coinsurance"],
            "prior_authorization_required": entry["prior_authorization"],
        }
        if provider_id:
            provider = self._provider(provider_id)
            allowed = provider_services(provider["specialty"])
            if service not in allowed:
                raise ValueError(
                    f"{_provider_name(provider)} ({provider['specialty']}) does not give "
                    f"'{service}'; services: {', '.join(allowed)}"
                )
            in_network = plan["network"] in provider["networks"]
            result["provider_id"] = provider_id
            result["in_network"] = in_network
            if not in_network:
                outside = plan["out_of_network"]
                result.update(
                    covered=entry["covered"] and outside["covered"],
                    copay=None,
                    coinsurance=outside["coinsurance"] if outside["covered"] else None,
                )
            if provider["specialty"] not in PRIMARY_CARE:
                result["referral_required"] = plan["referral_required"]
                result["referral_on_file"] = any(
                    r["specialty"] == provider["specialty"] and r["expires_on"] >= TODAY
                    for r in patient["referrals"]
                )
        return _dumps(result)

    @tool
    def get_claim_details(self, claim_id: str) -> str:
        """Get an insurance claim: the visit it is for, date of service, billed and allowed
        amounts, what the plan paid, what the patient owes, status, dates, denial reason and
        any appeal.

        Args:
            claim_id: The claim id, such as 'CLM1234567'.
        """
        claim = self._claim(claim_id)
        return self._cached(("claim", claim_id), [("claims", claim_id, claim)], lambda: claim)

    # ----------------------------------------------------------------------- appointments

    @tool(writes=True)
    def book_appointment(
        self, patient_id: str, provider_id: str, start_time: str, visit_type: VisitType
    ) -> str:
        """Book a 30-minute appointment in one of the provider's free slots. Only call this after
        the patient has confirmed the provider, date, time and visit type with an explicit yes.

        Args:
            patient_id: The patient id, such as 'P123456'.
            provider_id: The provider id, such as 'PRV1234'.
            start_time: A free slot from get_provider_availability, 'YYYY-MM-DD HH:MM'.
            visit_type: 'checkup', 'sick visit', 'follow-up' or 'consultation'.
        """
        patient = self._patient(patient_id)
        provider = self._provider(provider_id)
        start = _parse_start(start_time)
        self._check_slot(provider, start, patient)
        appointment_id = _hashed_id(
            "A",
            f"{patient_id}|{provider_id}|{start}",
            lambda key: self.db.get("appointments", key) is not None,
        )
        record = {
            "appointment_id": appointment_id,
            "patient_id": patient_id,
            "provider_id": provider_id,
            "clinic_id": provider["clinic_id"],
            "start": start,
            "duration_minutes": 30,
            "visit_type": visit_type,
            "status": "scheduled",
            "booked_on": TODAY,
        }
        self.db.insert("appointments", appointment_id, record)
        self.db.edit("patients", patient_id)["appointments"].append(appointment_id)
        return _dumps(record)

    @tool(writes=True)
    def reschedule_appointment(self, appointment_id: str, new_start_time: str) -> str:
        """Move a scheduled appointment to another free slot of the same provider. Only call
        this after the patient has confirmed the new date and time with an explicit yes.

        Args:
            appointment_id: The appointment id, such as 'A1234567'.
            new_start_time: A free slot from get_provider_availability, 'YYYY-MM-DD HH:MM'.
        """
        appointment = self._appointment(appointment_id)
        if appointment["status"] != "scheduled":
            raise ValueError(
                f"appointment {appointment_id} is '{appointment['status']}'; only scheduled "
                "appointments can be rescheduled"
            )
        start = _parse_start(new_start_time)
        if start == appointment["start"]:
            raise ValueError(f"appointment {appointment_id} already starts at {start}")
        provider = self.db.get("providers", appointment["provider_id"])
        patient = self.db.get("patients", appointment["patient_id"])
        self._check_slot(provider, start, patient, moving=appointment_id)
        record = self.db.edit("appointments", appointment_id)
        record["rescheduled_from"] = record["start"]
        record["start"] = start
        return _dumps(record)

    @tool(writes=True)
    def cancel_appointment(self, appointment_id: str, reason: CancelReason) -> str:
        """Cancel a scheduled appointment. Only call this after the patient has confirmed the
        cancellation and its reason with an explicit yes.

        Args:
            appointment_id: The appointment id, such as 'A1234567'.
            reason: 'schedule conflict', 'feeling better', 'seeing another provider' or 'other'.
        """
        appointment = self._appointment(appointment_id)
        if appointment["status"] != "scheduled":
            raise ValueError(
                f"appointment {appointment_id} is '{appointment['status']}'; only scheduled "
                "appointments can be cancelled"
            )
        record = self.db.edit("appointments", appointment_id)
        record.update(status="cancelled", cancel_reason=reason, cancelled_on=TODAY)
        return _dumps(record)

    # ----------------------------------------------------------------------- prescriptions

    @tool(writes=True)
    def request_refill(self, patient_id: str, prescription_id: str) -> str:
        """Send a refill request for a patient's prescription to its pharmacy; uses one of the
        remaining refills. Only call this after the patient has confirmed with an explicit yes.

        Args:
            patient_id: The patient id, such as 'P123456'.
            prescription_id: The prescription id, such as 'RX123456'.
        """
        self._patient(patient_id)
        prescription = self._prescription(prescription_id)
        if prescription["patient_id"] != patient_id:
            raise ValueError(f"prescription {prescription_id} is not one of {patient_id}'s")
        if prescription["status"] != "active":
            raise ValueError(
                f"prescription {prescription_id} is {prescription['status']}; only active "
                "prescriptions can be refilled"
            )
        if prescription["expires_on"] < TODAY:
            raise ValueError(
                f"prescription {prescription_id} expired on {prescription['expires_on']}"
            )
        if prescription["refills_remaining"] < 1:
            raise ValueError(f"prescription {prescription_id} has no refills remaining")
        if prescription["refill_request"] is not None:
            raise ValueError(
                f"a refill of {prescription_id} requested on "
                f"{prescription['refill_request']['requested_on']} is still pending"
            )
        record = self.db.edit("prescriptions", prescription_id)
        record["refills_remaining"] -= 1
        record["refill_request"] = {"requested_on": TODAY, "status": "pending"}
        return _dumps({key: record[key] for key in _REFILL_FIELDS})

    # ----------------------------------------------------------------------- claims

    @tool(writes=True)
    def file_claim(self, patient_id: str, appointment_id: str) -> str:
        """File an insurance claim for a patient's completed visit that has no claim yet; the
        billed amount comes from the visit. Only call this after the patient has confirmed with
        an explicit yes.

        Args:
            patient_id: The patient id, such as 'P123456'.
            appointment_id: The completed appointment, such as 'A1234567'.
        """
        self._patient(patient_id)
        appointment = self._appointment(appointment_id)
        if appointment["patient_id"] != patient_id:
            raise ValueError(f"appointment {appointment_id} is not one of {patient_id}'s")
        if appointment["status"] != "completed":
            raise ValueError(
                f"appointment {appointment_id} is '{appointment['status']}'; claims can only be "
                "filed for completed visits"
            )
        if appointment["claim_id"] is not None:
            raise ValueError(
                f"appointment {appointment_id} already has claim {appointment['claim_id']}"
            )
        provider = self.db.get("providers", appointment["provider_id"])
        claim_id = _hashed_id(
            "CLM", appointment_id, lambda key: self.db.get("claims", key) is not None
        )
        claim = {
            "claim_id": claim_id,
            "patient_id": patient_id,
            "appointment_id": appointment_id,
            "provider_id": provider["provider_id"],
            "service": visit_service(provider["specialty"]),
            "date_of_service": appointment["start"][:10],
            "billed_amount": appointment["billed_amount"],
            "allowed_amount": None,
            "plan_paid": 0.0,
            "patient_responsibility": None,
            "status": "submitted",
            "submitted_on": TODAY,
            "processed_on": None,
            "denial_reason": None,
            "appeal": None,
        }
        self.db.insert("claims", claim_id, claim)
        self.db.edit("appointments", appointment_id)["claim_id"] = claim_id
        self.db.edit("patients", patient_id)["claims"].append(claim_id)
        return _dumps({key: claim[key] for key in _FILED_FIELDS})

    @tool(writes=True)
    def appeal_claim(self, claim_id: str, reason: AppealReason) -> str:
        """Appeal a denied claim (once per claim). Only call this after the patient has
        confirmed the appeal and its reason with an explicit yes.

        Args:
            claim_id: The claim id, such as 'CLM1234567'.
            reason: 'medically necessary', 'referral on file', 'billing error' or
                'provider in network'.
        """
        claim = self._claim(claim_id)
        if claim["status"] == "appealed":
            raise ValueError(f"claim {claim_id} was already appealed; a claim is appealed once")
        if claim["status"] != "denied":
            raise ValueError(
                f"claim {claim_id} is '{claim['status']}'; only denied claims can be appealed"
            )
        record = self.db.edit("claims", claim_id)
        record["status"] = "appealed"
        record["appeal"] = {"reason": reason, "filed_on": TODAY}
        return _dumps({key: record[key] for key in _APPEALED_FIELDS})


__all__ = ["HealthcareTools"]

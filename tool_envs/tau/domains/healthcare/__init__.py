"""``tool_envs/TauHealthcare-v0``: patient services at a group of clinics (a tau-style domain).

The agent verifies the caller (name, member id or email, with the date of birth), checks who
may act for a patient, then books, reschedules and cancels appointments, requests prescription
refills, answers coverage and claim questions, and files and appeals claims under a written
policy (``policy.md``), talking to a simulated caller. The database (8 clinics, 6 insurance
plans, 80 providers, 500 patients, 1,500 appointments, 1,000 prescriptions, 600 claims) and the
tasks are generated from a seed at import time: :mod:`.data`, :mod:`.tools`, :mod:`.rules`,
:mod:`.tasks`::

    import gymnasium as gym
    import tool_envs

    gym.register_envs(tool_envs)
    env = gym.make("tool_envs/TauHealthcare-v0")
"""

from __future__ import annotations

from tool_envs.tau.domains.healthcare.data import generate_tables, load_tables
from tool_envs.tau.domains.healthcare.tasks import (
    ENV_ID,
    POLICY,
    TASKS,
    default_splits,
    generate_splits,
)
from tool_envs.tau.domains.healthcare.tools import HealthcareTools
from tool_envs.tau.env import TauEnv

USER_KEYWORDS: dict[str, tuple[str, ...]] = {
    "date_of_birth": ("date of birth", "birth date", "birthdate", "dob", "born", "birthday"),
    "member_id": ("member id", "member number", "membership number", "insurance id",
                  "insurance card", "subscriber id", "id number"),
    "patient_name": ("patient's name", "patient's full name", "name of the patient",
                     "patient name", "their name", "their full name", "his name", "her name",
                     "child's name", "full name of the patient", "name of the child",
                     "name of your child", "child's full name"),
    "patient_date_of_birth": ("date of birth", "birth date", "birthdate", "dob", "born",
                              "birthday"),
    "patient_member_id": ("member id", "member number", "insurance id", "insurance card",
                          "subscriber id"),
    "own_name": ("your name", "your full name", "own name", "own full name",
                  "who am i speaking", "who i am speaking", "who is calling", "who's calling",
                  "caller's name"),
    "relationship": ("relation to", "relation with", "your relation", "relationship",
                     "related to", "how are you related"),
    "preferred_doctor": ("which doctor", "what doctor", "which provider", "what provider",
                         "doctor's name", "provider's name", "name of the doctor",
                         "name of the provider", "who would you like to see", "specific doctor",
                         "specific provider", "doctor would you", "provider would you",
                         "doctor in mind", "provider in mind", "like to see", "other doctor",
                         "other provider"),
    "preferred_date": ("which date", "what date", "which day", "what day", "date work",
                       "day work", "date would you", "day would you", "when would you",
                       "date in mind", "day in mind", "preferred appointment date",
                       "date you are looking", "date you're looking"),
    "preferred_time": ("what time", "which time", "time slot", "which slot", "time work",
                       "time would you", "time of day", "date and time", "day and time",
                       "morning or afternoon"),
    "visit_type": ("type of visit", "kind of visit", "type of appointment", "sort of visit",
                   "sort of appointment",
                   "kind of appointment", "what the visit is for", "purpose of the visit",
                   "reason for the visit", "reason of the visit", "reason for your visit",
                   "reason for this visit", "checkup", "sick visit", "follow-up"),
    "current_appointment": ("which appointment", "what appointment", "appointment id",
                            "appointment number", "appointment details",
                            "date of the appointment", "appointment is it", "appointment you",
                            "appointment would you", "appointment do you"),
    "new_time": ("new time", "new date", "which date", "what date", "which day", "what day",
                 "what time", "which time", "when would you", "move it to", "reschedule it to",
                 "reschedule to", "date and time", "time work", "date work", "work better",
                 "morning or afternoon", "moved to", "new day", "new hour", "day and hour",
                 "want it instead"),
    "cancellation_reason": ("reason", "why"),
    "medication": ("which medication", "what medication", "which med", "what med",
                   "which prescription", "what prescription", "which medicine", "what medicine",
                   "medication name",
                   "name of the medication", "medication would you", "prescription would you",
                   "medications"),
    "claim_visit": ("which visit", "what visit", "date of service", "date of the visit",
                    "visit date", "which appointment", "what appointment", "visit was it"),
    "claim_number": ("claim number", "claim id", "which claim", "claim reference"),
    "appeal_reason": ("reason", "why", "grounds", "basis"),
}  # fmt: skip
"""Words that make the scripted user give a field of ``known_info`` (besides its name)."""

DOMAIN = TASKS.make_domain(
    HealthcareTools, user_keywords=USER_KEYWORDS, identity_ask=("member_id", "date_of_birth")
)


class TauHealthcareEnv(TauEnv):
    """Patient services with a simulated caller (see :class:`~tool_envs.tau.env.TauEnv`)."""

    domain = DOMAIN


__all__ = [
    "DOMAIN",
    "ENV_ID",
    "POLICY",
    "USER_KEYWORDS",
    "HealthcareTools",
    "TauHealthcareEnv",
    "default_splits",
    "generate_splits",
    "generate_tables",
    "load_tables",
]

"""``tool_envs/TauTelecom-v0``: a mobile carrier's customer service with dual control.

The agent identifies the customer, then manages lines (suspend, resume), roaming, data top-ups,
plan changes and bill payments under a written policy (``policy.md``), and troubleshoots the
customer's phone. The phone is the *customer's*: only the simulated user can change its
settings, reseat its SIM, restart it or approve a payment request on it (:class:`PhoneTools`,
the domain's ``user_tools``), so the agent has to tell them what to do. The phone state lives in
the same episode database as the account, so the reward checks both (as tau2-bench's telecom
domain does). The database (500 customers, 800 lines and phones, 12 plans, 2,000 bills) and the
tasks are generated from a seed at import time: :mod:`.data`, :mod:`.phone`, :mod:`.tools`,
:mod:`.tasks`.
"""

from __future__ import annotations

from tool_envs.tau.domains.telecom.data import generate_tables, load_tables
from tool_envs.tau.domains.telecom.tasks import (
    ENV_ID,
    POLICY,
    TASKS,
    default_splits,
    generate_splits,
)
from tool_envs.tau.domains.telecom.tools import PhoneTools, TelecomTools
from tool_envs.tau.env import TauEnv

DOMAIN = TASKS.make_domain(
    TelecomTools,
    user_tools=PhoneTools,
    # All three: a customer says the two it knows, or all three where the gold looks the
    # account up by name and date of birth, so the lookup follows what was said.
    identity_ask=("phone_number", "name", "date_of_birth"),
    user_keywords={
        "phone_number": (
            "phone #",
            "number on the line",
            "the number that",
            "and number",
            "what's the number",
            "phone number",
            "mobile number",
            "cell number",
            "your number",
            "which line",
            "which number",
            "what #",
            "which #",
            "number of the line",
            "line number",
            "number on the account",
            "number on your account",
            "number on file",
        ),
        "date_of_birth": ("date of birth", "birth date", "birthdate", "dob", "birthday", "born"),
        "reason": ("reason", "why"),
        "data_amount": (
            "additional data",
            "more data",
            "how much were you",
            "how many gigs",
            "how many gigabyte",
            "how much data",
            "how many gb",
            "how many gigabytes",
            "amount of data",
            "how much extra data",
            "top-up size",
            "size of the top-up",
        ),
        "new_plan": (
            "which plan",
            "what plan",
            "new plan",
            "plan would you like",
            "plan do you want",
        ),
        "bill_month": ("which bill", "which month", "billing period", "what month"),
        "other_phone_number": (
            "which line",
            "which number",
            "their number",
            "that line",
            "their phone number",
            "neighbour's number",
            "neighbor's number",
        ),
    },
)


class TauTelecomEnv(TauEnv):
    """Telecom customer service with a customer-operated phone (see
    :class:`~tool_envs.tau.env.TauEnv` for episodes and reward)."""

    domain = DOMAIN


__all__ = [
    "DOMAIN",
    "ENV_ID",
    "POLICY",
    "PhoneTools",
    "TauTelecomEnv",
    "TelecomTools",
    "default_splits",
    "generate_splits",
    "generate_tables",
    "load_tables",
]

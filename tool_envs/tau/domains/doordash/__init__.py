"""``tool_envs/TauDoordash-v0``: a food-delivery service's customer support, tau-bench style.

The agent authenticates the customer (email or phone), then changes, adds to, re-addresses or
cancels orders that have not been picked up, refunds missing, wrong or damaged items, gives
account credit within limits, tracks deliveries and hands safety issues to a human, under a
written policy (``policy.md``), talking to a simulated customer. The database (500 customers,
120 restaurants with menus, 1,000 orders, 150 dashers) and the tasks are generated from a seed
at import time: :mod:`.data`, :mod:`.tools`, :mod:`.tasks`.
"""

from __future__ import annotations

from tool_envs.tau.domains.doordash.data import NOW, generate_tables, load_tables
from tool_envs.tau.domains.doordash.tasks import (
    ENV_ID,
    POLICY,
    TASKS,
    default_splits,
    generate_splits,
)
from tool_envs.tau.domains.doordash.tools import DoordashTools
from tool_envs.tau.env import TauEnv

USER_KEYWORDS: dict[str, tuple[str, ...]] = {
    "phone": ("phone #", "phone", "phone number", "mobile", "cell"),
    "reason": ("making you", "what made you", "reason", "why"),
    "changes": (
        "want to change",
        "needs fixing",
        "needs changing",
        "need changing",
        "needs to change",
        "to be changed",
        "change you would like",
        "like changed",
        "want to fix",
        "like to fix",
        "want changed",
        "need changed",
        "change you'd like",
        "changes you would like",
        "what change",
        "which change",
        "what would you like to change",
        "change would you like",
        "changes would you like",
        "what should i change",
        "which option",
        "what option",
        "modification",
    ),
    "new_items": (
        "new item",
        "to add",
        "add to",
        "which item",
        "what item",
        "which dish",
        "what dish",
        "what would you like to order",
    ),
    "items": (
        "didn't show up",
        "didn't arrive",
        "was missing",
        "which item",
        "what item",
        "which dish",
        "what dish",
        "what was missing",
        "what is missing",
        "what's missing",
        "which part",
        "how many",
        "not receive",
        "didn't receive",
        "missing from",
    ),
    "issue": (
        "what happened",
        "what went wrong",
        "what was wrong",
        "the problem",
        "the issue",
        "describe what",
        "describe the problem",
        "describe the issue",
    ),
    "new_address": (
        "new address",
        "which address",
        "what address",
        "delivery address",
        "shipping address",
        "address you want",
        "address you'd like",
        "address you would like",
        "address would",
        "address should",
        "where should",
        "where would",
    ),
    "photo": ("photo", "picture"),
}
"""Words that make the scripted user give a field of ``known_info`` (besides its name)."""

# A customer who does not remember the email answers with the phone number.
DOMAIN = TASKS.make_domain(DoordashTools, user_keywords=USER_KEYWORDS, identity_ask=("email",))


class TauDoordashEnv(TauEnv):
    """Food-delivery support (see :class:`~tool_envs.tau.env.TauEnv` for episodes and reward)."""

    domain = DOMAIN


__all__ = [
    "DOMAIN",
    "ENV_ID",
    "NOW",
    "POLICY",
    "DoordashTools",
    "TauDoordashEnv",
    "default_splits",
    "generate_splits",
    "generate_tables",
    "load_tables",
]

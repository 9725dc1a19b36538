"""``tool_envs/TauRetail-v0``: an online shop's customer service (tau-bench's retail domain).

The agent identifies the customer, then cancels or modifies pending orders, returns or exchanges
delivered items and updates addresses under a written policy (``policy.md``), talking to a
simulated customer. The database (500 users, 1,000 orders, 50 products) and the tasks are
generated from a seed at import time: :mod:`.data`, :mod:`.tools`, :mod:`.tasks`.
"""

from __future__ import annotations

from tool_envs.tau.domains.retail.data import generate_tables, load_tables
from tool_envs.tau.domains.retail.tasks import (
    ENV_ID,
    POLICY,
    TASKS,
    default_splits,
    generate_splits,
)
from tool_envs.tau.domains.retail.tools import RetailTools
from tool_envs.tau.env import TauEnv

DOMAIN = TASKS.make_domain(
    RetailTools,
    identity_ask=("email",),  # a user without one offers a name and zip code
    user_keywords={
        "reason": ("making you", "what made you", "reason", "why"),
        "items": (
            "which item",
            "which items",
            "what item",
            "which product",
            "which products",
            "which bits",
            "sending back",
            "send back",
            "wanting to return",
        ),
        "new_items": (
            "new item",
            "which option",
            "what option",
            "which variant",
            "which size",
            "what size",
            "which color",
            "what color",
            "like instead",
            "new variant",
            "new option",
            "new size",
            "new color",
            "replacement",
            "want instead",
            "prefer instead",
            "in exchange",
            "in its place",
            "exchange it for",
            "replace it with",
            "receive instead",
            "new one",
            "different size",
            "different color",
            "different colour",
            "different version",
            "different variant",
            "different model",
            "get instead",
        ),
        "payment_method": (
            "difference go",
            "refund method",
            "refunded to",
            "refund go",
            "refund should go",
            "refund to go",
        ),
        "new_address": (
            "where should it go",
            "where should we send",
            "where would you like it",
            "where would you like the order",
            "go instead",
            "new address",
            "which address",
            "what address",
            "shipping address",
            "address to ship",
            "delivery address",
        ),
    },
)


class TauRetailEnv(TauEnv):
    """Retail customer service (see :class:`~tool_envs.tau.env.TauEnv` for episodes and reward)."""

    domain = DOMAIN


__all__ = [
    "DOMAIN",
    "ENV_ID",
    "POLICY",
    "RetailTools",
    "TauRetailEnv",
    "default_splits",
    "generate_splits",
    "generate_tables",
    "load_tables",
]

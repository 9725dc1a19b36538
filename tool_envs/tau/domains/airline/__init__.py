"""The airline domain: book, change and cancel flights under a written policy.

A tau-bench-style airline (500 users, 300 flights with per-date status, 2,000 reservations,
generated from a seed) with its 14 tools, its policy and a seeded task set. The env is
``tool_envs/TauAirline-v0``::

    import gymnasium as gym
    import tool_envs

    gym.register_envs(tool_envs)
    env = gym.make("tool_envs/TauAirline-v0")
"""

from __future__ import annotations

from tool_envs.tau.domains.airline.tasks import POLICY, TASKS
from tool_envs.tau.domains.airline.tools import AirlineTools
from tool_envs.tau.env import TauEnv

USER_KEYWORDS: dict[str, tuple[str, ...]] = {
    "reservation_ids": ("reservation id", "reservation number", "confirmation number",
                        "booking reference", "which reservation"),
    "other_reservation_id": ("reservation id", "reservation number", "which reservation",
                             "other reservation"),
    "preferred_cabin": ("which cabin", "what cabin", "cabin would", "cabin do you",
                        "which class", "what class", "fare class", "class of service",
                        "cabin class", "cabin"),
    "target_cabin": ("which cabin", "what cabin", "cabin would", "cabin do you", "which class",
                     "what class", "cabin class", "cabin"),
    "flight_choice": ("flight you'd like", "flight you would like", "which flight", "what flight",
                      "flight would you", "flight do you",
                      "preferred flight", "flight preference",
                      "preference for the flight", "flight you prefer", "particular flight",
                      "flight time"),
    "who_is_flying": ("their full name", "their name", "their date of birth", "companion",
                      "passenger names", "passenger details", "names of", "who will be",
                      "who is travel", "who's travel", "how many passengers",
                      "which passengers", "traveling with", "travelling with",
                      "who's flying", "who is flying", "who will fly", "who'll be",
                      "who's gonna be", "who is gonna be", "who's going to be",
                      "all passengers", "each passenger", "every passenger",
                      "the passengers", "each traveler", "all travelers",
                      "everyone travel", "everyone flying"),
    "bags_to_check": ("how many bags", "how many checked", "bags would you", "bags will you",
                      "bags do you", "check any", "any checked", "checked bag", "number of bags",
                      "bags to check"),
    "wants_insurance": ("like insurance", "want insurance", "like travel insurance",
                        "want travel insurance", "like to add travel insurance",
                        "like to add insurance", "insurance", "travel insurance"),
    "payment_choice": ("which payment", "payment method", "how would you like to pay",
                       "how do you want to pay", "how you paying", "how are you paying",
                       "how you want to pay", "how you'd like to pay", "how you will pay",
                       "pay with", "which card", "refund to", "like to pay"),
    "bag_payment": ("payment method", "pay for the bag", "pay for the extra", "which card"),
    "cancel_reason": ("making you cancel", "what made you", "reason", "why"),
    "target_date": ("new date", "which date", "what date", "which day", "what day",
                    "when would you"),
    "bags_to_add": ("how many bags", "how many additional", "how many more", "how many extra",
                    "how many checked", "bags you want to add", "additional bag", "extra bag",
                    "more bags", "number of bags"),
    "passenger_change": ("wrong with", "want to change", "which passenger", "what change",
                         "what needs",
                         "correct details", "correct spelling", "spelling of",
                         "correct value", "detail is wrong", "correction",
                         "new details", "correct name", "correct date", "what should"),
    "flight_issue": ("which flight", "what happened", "flight number"),
    "follow_up_question": ("anything else", "other question", "else i can"),
}  # fmt: skip
"""Words that make the scripted user give a field of ``known_info`` (besides its name)."""

DOMAIN = TASKS.make_domain(AirlineTools, user_keywords=USER_KEYWORDS)


class TauAirlineEnv(TauEnv):
    """Airline customer service with a simulated user (see :class:`~tool_envs.tau.env.TauEnv`)."""

    domain = DOMAIN


__all__ = ["DOMAIN", "POLICY", "AirlineTools", "TauAirlineEnv"]

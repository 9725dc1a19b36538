"""How tasks word things: a user's opening message, amounts the agent must state, lists.

Kept apart from the drafting machinery (:mod:`tool_envs.tau.drafts`) because it is what a
domain tunes (its greetings, its way with money), while drafting is the same for every domain.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tool_envs.tau.drafts import Part


def money(amount: float) -> str:
    """An amount as a required output: '42.75', '42.7' or '42', so '42.70' and '$42.00' match."""
    return f"{amount:.2f}".rstrip("0").rstrip(".")


def and_join(texts: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


@dataclass(frozen=True)
class Opening:
    """How a domain's users open a conversation: a greeting, a want, then what they ask.

    ``want_first`` draws the want before the greeting (the order a domain's seeded tasks were
    generated in). A want ending in 'help me' makes the opening a question.
    """

    greetings: tuple[str, ...]
    wants: tuple[str, ...] = ("I'd like to", "I want to", "I need to", "could you help me")
    want_first: bool = False

    def __call__(self, rng: random.Random, asks: list[str], question: str = "") -> str:
        if self.want_first:
            want = rng.choice(self.wants)
            greeting = rng.choice(self.greetings)
        else:
            greeting = rng.choice(self.greetings)
            want = rng.choice(self.wants)
        body = asks[0] if len(asks) == 1 else ", ".join(asks[:-1]) + ", and also " + asks[-1]
        text = f"{greeting} {want} {body}"
        text += "?" if want.endswith("help me") else "."
        return text + (f" {question}" if question else "")

    def asking(
        self, rng: random.Random, parts: Sequence[Part], asks: list[str] | None = None
    ) -> str:
        """The opening for ``parts``: their requests (or ``asks``, other words for them), then
        what the user wants to be told (each part's ``question``). The scripted user only says
        its opening, so this is how the agent learns which values it must state."""
        questions = " ".join(part.question for part in parts if part.question)
        return self(rng, asks or [part.ask for part in parts], questions)

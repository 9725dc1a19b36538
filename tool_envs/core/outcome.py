"""Who an episode's result belongs to: the agent, or the infrastructure around it.

Every finished episode has one outcome class:

* ``"success"``: the agent solved the task (reward >= 1);
* ``"failure"``: the agent did not (wrong answer, turn limit, budget or context exhausted);
* ``"void"``: infrastructure failed and the episode says nothing about the agent: a simulated
  user's or judge's API failed after its retries, an env step hung past its timeout or raised,
  the generation server failed, a sandbox could not run. ``reward_info`` then carries
  ``outcome="void"``, the ``void_cause`` and a ``reason``.

One rule everywhere: a void episode is never scored as the agent failing. ``tool-envs eval``
does not record it as a finished trial (a rerun replays it) and counts it; training masks it out
of the loss (no token of it is trained on, no reward function scores it) and counts it in the
metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# What can void an episode; ``reward_info["void_cause"]`` is one of these. Defined beside
# InfrastructureError, which checks its cause against it.
from tool_envs.errors import VOID_CAUSES as VOID_CAUSES

SUCCESS = "success"
FAILURE = "failure"
VOID = "void"
OUTCOMES = (SUCCESS, FAILURE, VOID)


def void_info(cause: str, detail: str) -> dict[str, Any]:
    """The ``reward_info`` of an episode voided by ``cause`` (reward 0, never trained on)."""
    if cause not in VOID_CAUSES:
        raise ValueError(f"cause must be one of {VOID_CAUSES}, got {cause!r}")
    return {
        "reward": 0.0,
        "outcome": VOID,
        "void_cause": cause,
        "reason": f"void, not the agent's doing: {cause} failed ({detail})",
    }


def outcome_of(reward: float, reward_info: Mapping[str, Any] | None) -> str:
    """The outcome class of a finished episode: what ``reward_info`` says, else by reward."""
    stated = (reward_info or {}).get("outcome")
    if stated in OUTCOMES:
        return stated
    return SUCCESS if reward >= 1.0 else FAILURE


def is_void(reward_info: Mapping[str, Any] | None) -> bool:
    return (reward_info or {}).get("outcome") == VOID

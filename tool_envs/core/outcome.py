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

SUCCESS = "success"
FAILURE = "failure"
VOID = "void"
OUTCOMES = (SUCCESS, FAILURE, VOID)

VOID_CAUSES = (
    "user_simulator",  # the LLM user's API failed or timed out after its retries
    "judge",  # an LLM judge is unreachable, misconfigured or answered garbage
    "env_timeout",  # an env step (or reset) ran past the rollout's timeout
    "env_error",  # an env step raised (a bug or a dead server behind it)
    "sandbox",  # the sandbox could not run the code at all (not the code's fault)
    "generation",  # the policy's generation server failed mid-episode
    "env_server",  # a remote env's server died, hung or dropped the session (tool_envs.serve)
)
"""What can void an episode; ``reward_info["void_cause"]`` is one of these."""


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

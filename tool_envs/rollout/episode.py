"""What scoring, the void rule and the metrics read of a finished episode: :class:`Episode`.

Two kinds of episode meet it. A token-level engine's :class:`~tool_envs.rollout.engine.Rollout`
also has the token ids, masks and logprobs a trainer needs; a message-level agent's
:class:`~tool_envs.rollout.chat_engine.ChatEpisode` has none (the agent talks to a chat API, with
no tokenizer) and carries the agent's own record instead. :func:`~tool_envs.rollout.player.score`,
:func:`~tool_envs.rollout.player.check_void` and
:func:`~tool_envs.rollout.metrics.episode_summary` read only what is here, so one scoring and one
void rule serve both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from tool_envs.core.messages import Message

TaskRows: TypeAlias = Sequence[Mapping[str, Any]]
"""Task rows (the task row schema: ``prompt``, ``env_id``, ``extra_info``), one episode each."""
Seeds: TypeAlias = Sequence[int | None] | None
"""One reset seed per row (None lets that env draw its own); None for every row."""
Scripts: TypeAlias = Sequence[Sequence[str] | None] | None
"""Per row, policy turns that replace generation (gold turns, for SFT), or None."""


class Episode(Protocol):
    """A finished episode, as scoring and metrics read it.

    Attributes:
        env_id: The row's env id.
        task_id: The env's id of the task (``reset``'s ``info["task_id"]``), if it gives one.
        reward: The env's reward (0.0 when the episode was cut short or void).
        reward_info: Why, from the env (a void episode's has ``outcome``, ``void_cause``,
            ``reason``).
        outcome: ``"success"``, ``"failure"`` or ``"void"`` (:mod:`tool_envs.core.outcome`).
        finish: How the episode ended (``"terminated"``, ``"turn_limit"``, ``"void"``, or an
            engine's own reason: a token budget, the context length, a chat API's refusal).
        turns: The turns the env counted (a Rollout), or the agent's steps (a ChatEpisode).
        policy_turns: Policy turns played, a last one the env never counted (cut by a token
            budget) included.
        stats: The env's counters (``tool_calls``, ``tool_errors``, ``parse_errors``, ...).
        progress: The env's last ``info["progress"]`` in [0, 1], or None.
        messages: The final conversation.
        void: Infrastructure failed: the episode says nothing about the policy.
        success: Reward 1 and not void.
        truncated: It did not end with the task (``finish != "terminated"``).
    """

    env_id: str
    task_id: str | None
    messages: list[Message]

    @property
    def reward(self) -> float: ...

    @property
    def reward_info(self) -> dict[str, Any] | None: ...

    @property
    def outcome(self) -> str: ...

    @property
    def finish(self) -> str: ...

    @property
    def turns(self) -> int: ...

    @property
    def policy_turns(self) -> int: ...

    @property
    def stats(self) -> dict[str, int]: ...

    @property
    def progress(self) -> float | None: ...

    @property
    def void(self) -> bool: ...

    @property
    def success(self) -> bool: ...

    @property
    def truncated(self) -> bool: ...

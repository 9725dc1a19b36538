"""What a player of episodes needs of an env, named: :class:`ChatEnv`, and one step-info builder.

The rollout engines, ``tool-envs eval``, the env server and :class:`~tool_envs.serve.RemoteEnv`
all read the same few things of an env beyond Gymnasium's ``reset`` / ``step``: the
conversation, what a step added to it, and the tool schemas. :class:`ToolEnv
<tool_envs.core.env.ToolEnv>` (in process) and ``RemoteEnv`` (served) both provide them, so
code typed against :class:`ChatEnv` plays either. A server also reads the env's own task splits
and gold turns (:class:`ServableEnv`). :func:`chat_env` and :func:`servable_env` give
``env.unwrapped`` as one or the other, or a TypeError naming each read it lacks.

The ``info`` a step returns is built by :func:`step_info` on both sides of the wire, and a void
turn by :func:`void_step`, so a served env's void turn carries the same keys as an in-process
one (see :mod:`tool_envs.core.info_contract`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from tool_envs.core.info_contract import STEP_KEYS
from tool_envs.core.messages import Message

StepResult = tuple[list[Message], float, bool, bool, dict[str, Any]]
"""What ``step`` returns: ``(observation, reward, terminated, truncated, info)``."""


@runtime_checkable
class ChatEnv(Protocol):
    """The chat env the engines play (``env.unwrapped`` of a made env).

    Implementations: :class:`~tool_envs.core.env.ToolEnv` and
    :class:`~tool_envs.serve.client.RemoteEnv`. Each read returns copies: changing them does
    not change the env.
    """

    @property
    def messages(self) -> list[Message]:
        """The whole conversation so far."""
        ...

    @property
    def message_count(self) -> int:
        """How many messages the conversation has (cheaper than ``len(env.messages)``)."""
        ...

    def messages_since(self, start: int) -> list[Message]:
        """The messages from index ``start`` on: what a step added."""
        ...

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Tool schemas of the current episode, in OpenAI function format."""
        ...


@runtime_checkable
class ServableEnv(ChatEnv, Protocol):
    """A chat env a server can serve: it also gives its own task splits and gold turns."""

    def own_task_splits(self) -> dict[str, list[Mapping[str, Any]]]:
        """Named splits of the env's own task set, each row naming the id the env was made as."""
        ...

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """Assistant turns that solve ``task``, or None when the env has no gold."""
        ...


_CHAT_READS = ("messages", "message_count", "messages_since", "tools")
_SERVED_READS = (*_CHAT_READS, "own_task_splits", "gold_turns")


def chat_env(env: gym.Env) -> ChatEnv:
    """``env.unwrapped`` as a :class:`ChatEnv`; a TypeError naming what it lacks otherwise."""
    return _as_protocol(
        env,
        ChatEnv,
        _CHAT_READS,
        "is not a chat env",
        "the engines play tool_envs.core.ToolEnv subclasses and tool_envs.serve.RemoteEnv",
    )


def servable_env(env: gym.Env) -> ServableEnv:
    """``env.unwrapped`` as a :class:`ServableEnv`; a TypeError naming what it lacks otherwise
    (what ``tool-envs serve`` says of an env it cannot serve)."""
    return _as_protocol(
        env,
        ServableEnv,
        _SERVED_READS,
        "cannot be served",
        "a server serves tool_envs.core.ToolEnv subclasses, or envs with every read of "
        "tool_envs.core.chat_env.ServableEnv",
    )


def _as_protocol(
    env: gym.Env, protocol: type, reads: Sequence[str], verdict: str, hint: str
) -> Any:
    unwrapped = env.unwrapped
    # Reads its class has: what the protocol check would find, without running properties (a
    # RemoteEnv's ``messages`` and ``tools`` copy the whole conversation and schemas each time;
    # the engines ask this twice a turn).
    if all(hasattr(type(unwrapped), name) for name in reads):
        return unwrapped
    if not isinstance(unwrapped, protocol):
        missing = [name for name in reads if not hasattr(unwrapped, name)]
        raise TypeError(
            f"{type(unwrapped).__name__} {verdict} (it has no {', '.join(missing)}): {hint}"
        )
    return unwrapped


def step_info(
    turn: int,
    stats: Mapping[str, int],
    reward_info: dict[str, Any] | None = None,
    *,
    tool_calls: Iterable[dict[str, Any]] = (),
    parse_error: str | None = None,
    tool_errors: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A step's ``info``: the contract's keys (:data:`~tool_envs.core.info_contract.STEP_KEYS`)
    in fresh containers, then the env's own keys (``extra``: e.g. ``progress``)."""
    return {
        "turn": turn,
        "tool_calls": list(tool_calls),
        "parse_error": parse_error,
        "tool_errors": list(tool_errors),
        "stats": dict(stats),
        "reward_info": reward_info,
        **(extra or {}),
    }


def void_step(
    turn: int,
    stats: Mapping[str, int],
    reward_info: dict[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> StepResult:
    """The step result of a void turn: no observation, reward 0, ``truncated`` (the episode
    stopped for a reason outside the task), ``turn`` and ``stats`` as before the turn."""
    return [], 0.0, False, True, step_info(turn, stats, reward_info, extra=extra)


_RESET_KEYS = ("task_id", "task_index")


def env_keys(info: Mapping[str, Any]) -> dict[str, Any]:
    """The env's own keys of a step's (or reset's) ``info``: those outside the contract's."""
    return {k: v for k, v in info.items() if k not in STEP_KEYS and k not in _RESET_KEYS}

"""Which engine plays a batch: the one rule, :func:`make_engine`, for every caller.

A message-level agent (:class:`~tool_envs.rollout.agents.Agent`: a chat API, gold or empty
turns; no tokenizer) is played by the chat engine
(:class:`~tool_envs.rollout.chat_engine.ChatEngine`), whole episodes in threads. A token-level
policy (a tokenizer and a backend) by one of the token engines: a continuous-batching server
(an :class:`~tool_envs.rollout.backends.base.AsyncGenerationBackend`) is best used by the
asynchronous engine, each episode moving on its own; a batched backend (transformers, colocated
vLLM) only by the lockstep engine. Every caller chooses here through
:class:`~tool_envs.rollout.player.Player` (the GRPO ``rollout_func``, the async rollout worker,
the held-out evaluator, SFT export, ``tool-envs eval``).
"""

from __future__ import annotations

from typing import Any, Literal

from tool_envs.rollout.async_engine import AsyncRolloutEngine
from tool_envs.rollout.backends.base import AsyncGenerationBackend, SamplingSettings
from tool_envs.rollout.chat_engine import ChatEngine
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import EpisodeRunner, RolloutEngine

EngineKind = Literal["auto", "lockstep", "async", "chat"]
ENGINES: tuple[EngineKind, ...] = ("auto", "lockstep", "async")
"""The token engines' kinds: what a trainer's ``rollout_engine`` may be."""
KINDS: tuple[EngineKind, ...] = (*ENGINES, "chat")
"""Every kind: the token engines', and ``"chat"`` for a message-level agent."""


def check_choice(
    tokenizer: Any,
    backend: Any,
    settings: SamplingSettings | None,
    kind: str,
    agent: Any,
) -> None:
    """Raise ValueError for a kind that does not exist or a policy that mixes the two levels:
    an agent plays messages (kind ``"auto"`` or ``"chat"``, no tokenizer, backend or sampling);
    a token-level policy needs a tokenizer (and is not ``"chat"``)."""
    if kind not in KINDS:
        raise ValueError(f"the engine kind must be one of {KINDS}, got {kind!r}")
    if agent is not None:
        parts = (("tokenizer", tokenizer), ("backend", backend), ("sampling", settings))
        given = [name for name, value in parts if value is not None]
        if given:
            raise ValueError(
                f"a message-level agent ({type(agent).__name__}) writes its own turns, so it "
                f"takes no {', '.join(given)}; give either an agent or a tokenizer and backend"
            )
        if kind not in ("auto", "chat"):
            raise ValueError(
                f"a message-level agent is played by the chat engine, not {kind!r}; use 'chat' "
                "or 'auto'"
            )
    elif kind == "chat":
        raise ValueError("the chat engine plays a message-level agent; give agent=...")
    elif tokenizer is None:
        raise ValueError(
            "a policy needs a tokenizer (and a backend) for the token engines, or a "
            "message-level agent for the chat engine"
        )


def make_engine(
    tokenizer: Any,
    backend: Any,
    settings: SamplingSettings | None = None,
    config: RolloutConfig | None = None,
    kind: str = "auto",
    *,
    agent: Any = None,
) -> EpisodeRunner | ChatEngine:
    """The engine of ``kind``: with an ``agent``, the chat engine (``"auto"`` or ``"chat"``);
    else ``"lockstep"``, ``"async"`` (needs a server backend; a ValueError otherwise) or
    ``"auto"``: async for a server backend, else lockstep. Inconsistent choices are refused
    (:func:`check_choice`)."""
    check_choice(tokenizer, backend, settings, kind, agent)
    if agent is not None:
        return ChatEngine(agent, config)
    is_server = isinstance(backend, AsyncGenerationBackend)
    if kind == "async" and not is_server:
        raise ValueError(
            f"rollout_engine='async' needs a continuous-batching server backend (vllm_mode="
            f"'server'), but the backend is {type(backend).__name__}; use 'lockstep' or 'auto'"
        )
    if kind == "async" or (kind == "auto" and is_server):
        return AsyncRolloutEngine(tokenizer, backend, settings, config)
    return RolloutEngine(tokenizer, backend, settings, config)

"""Which engine plays a batch: the one rule, :func:`make_engine`, for every caller.

A continuous-batching server (an :class:`~tool_envs.rollout.backends.base.AsyncGenerationBackend`)
is best used by the asynchronous engine, each episode moving on its own; a batched backend
(transformers, colocated vLLM) only by the lockstep engine. Every caller chooses here through
:class:`~tool_envs.rollout.player.Player` (the GRPO ``rollout_func``, the async rollout worker,
the held-out evaluator, SFT export).
"""

from __future__ import annotations

from typing import Any, Literal

from tool_envs.rollout.async_engine import AsyncRolloutEngine
from tool_envs.rollout.backends.base import AsyncGenerationBackend, SamplingSettings
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import EpisodeRunner, RolloutEngine

EngineKind = Literal["auto", "lockstep", "async"]
ENGINES: tuple[EngineKind, ...] = ("auto", "lockstep", "async")


def make_engine(
    tokenizer: Any,
    backend: Any,
    settings: SamplingSettings | None = None,
    config: RolloutConfig | None = None,
    kind: str = "auto",
) -> EpisodeRunner:
    """The engine of ``kind`` for ``backend``: ``"lockstep"``, ``"async"`` (needs a server
    backend; a ValueError otherwise) or ``"auto"``: async for a server backend, else lockstep."""
    if kind not in ENGINES:
        raise ValueError(f"rollout_engine must be one of {ENGINES}, got {kind!r}")
    is_server = isinstance(backend, AsyncGenerationBackend)
    if kind == "async" and not is_server:
        raise ValueError(
            f"rollout_engine='async' needs a continuous-batching server backend (vllm_mode="
            f"'server'), but the backend is {type(backend).__name__}; use 'lockstep' or 'auto'"
        )
    if kind == "async" or (kind == "auto" and is_server):
        return AsyncRolloutEngine(tokenizer, backend, settings, config)
    return RolloutEngine(tokenizer, backend, settings, config)

"""Token-level generation backends for the rollout engine (transformers, vLLM, ...)."""

from tool_envs.rollout.backends.base import Generation, GenerationBackend, SamplingSettings

__all__ = ["Generation", "GenerationBackend", "SamplingSettings"]

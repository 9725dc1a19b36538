"""The multi-turn rollout engine: episodes of any env as exact tokens, masks, logprobs, rewards.

Names load lazily so that importing one piece does not import torch or the others.
"""

from __future__ import annotations

from tool_envs._lazy import lazy_exports

_LAZY = {
    "Rollout": "tool_envs.rollout.engine",
    "RolloutConfig": "tool_envs.rollout.engine",
    "RolloutEngine": "tool_envs.rollout.engine",
    "RolloutVoidError": "tool_envs.rollout.engine",
    "AsyncRolloutEngine": "tool_envs.rollout.async_engine",
    "AsyncGenerationBackend": "tool_envs.rollout.async_engine",
    "ChatTemplateRenderer": "tool_envs.rollout.template",
    "TemplatePrefixError": "tool_envs.rollout.template",
    "check_chat_template": "tool_envs.rollout.template_check",
    "TemplateProblem": "tool_envs.rollout.template_check",
    "TemplateReport": "tool_envs.rollout.template_check",
    "Generation": "tool_envs.rollout.backends.base",
    "GenerationBackend": "tool_envs.rollout.backends.base",
    "SamplingSettings": "tool_envs.rollout.backends.base",
    "TransformersBackend": "tool_envs.rollout.backends.hf",
    "VLLMColocateBackend": "tool_envs.rollout.backends.vllm",
    "VLLMServerBackend": "tool_envs.rollout.backends.vllm",
    "OpenAIChatBackend": "tool_envs.rollout.backends.openai_chat",
    "ChatTurn": "tool_envs.rollout.backends.openai_chat",
    "gold_sft_rows": "tool_envs.rollout.sft",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)

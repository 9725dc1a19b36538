"""The multi-turn rollout engines: episodes of any env as exact tokens, masks, logprobs, rewards
(the token engines), or as chat messages played by a message-level agent (the chat engine); one
``play`` for both.

Names load lazily so that importing one piece does not import torch or the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "Rollout": "tool_envs.rollout.engine",
    "RolloutConfig": "tool_envs.rollout.config",
    "EnvPool": "tool_envs.rollout.env_pool",
    "RolloutEngine": "tool_envs.rollout.engine",
    "RolloutVoidError": "tool_envs.errors",
    "ChatEngine": "tool_envs.rollout.chat_engine",
    "ChatEpisode": "tool_envs.rollout.chat_engine",
    "Episode": "tool_envs.rollout.episode",
    "Finished": "tool_envs.rollout.player",
    "Played": "tool_envs.rollout.player",
    "Player": "tool_envs.rollout.player",
    "Policy": "tool_envs.rollout.player",
    "play": "tool_envs.rollout.player",
    "AsyncRolloutEngine": "tool_envs.rollout.async_engine",
    "AsyncGenerationBackend": "tool_envs.rollout.backends.base",
    "ChatTemplateRenderer": "tool_envs.rollout.template",
    "TemplatePrefixError": "tool_envs.rollout.template",
    "check_chat_template": "tool_envs.rollout.template_check",
    "TemplateProblem": "tool_envs.rollout.template_check",
    "TemplateReport": "tool_envs.rollout.template_check",
    "Generation": "tool_envs.rollout.backends.base",
    "GenerationBackend": "tool_envs.rollout.backends.base",
    "SamplingSettings": "tool_envs.rollout.backends.base",
    "TransformersBackend": "tool_envs.rollout.backends.hf",
    "VLLMColocateBackend": "tool_envs.rollout.backends.vllm.colocate",
    "VLLMServerBackend": "tool_envs.rollout.backends.vllm.server",
    "OpenAIChatBackend": "tool_envs.rollout.backends.openai_chat",
    "ChatTurn": "tool_envs.rollout.backends.openai_chat",
    "gold_sft_rows": "tool_envs.rollout.sft",
}

if TYPE_CHECKING:
    from tool_envs.errors import RolloutVoidError as RolloutVoidError
    from tool_envs.rollout.async_engine import AsyncRolloutEngine as AsyncRolloutEngine
    from tool_envs.rollout.backends.base import AsyncGenerationBackend as AsyncGenerationBackend
    from tool_envs.rollout.backends.base import Generation as Generation
    from tool_envs.rollout.backends.base import GenerationBackend as GenerationBackend
    from tool_envs.rollout.backends.base import SamplingSettings as SamplingSettings
    from tool_envs.rollout.backends.hf import TransformersBackend as TransformersBackend
    from tool_envs.rollout.backends.openai_chat import ChatTurn as ChatTurn
    from tool_envs.rollout.backends.openai_chat import OpenAIChatBackend as OpenAIChatBackend
    from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend as VLLMColocateBackend
    from tool_envs.rollout.backends.vllm.server import VLLMServerBackend as VLLMServerBackend
    from tool_envs.rollout.chat_engine import ChatEngine as ChatEngine
    from tool_envs.rollout.chat_engine import ChatEpisode as ChatEpisode
    from tool_envs.rollout.config import RolloutConfig as RolloutConfig
    from tool_envs.rollout.engine import Rollout as Rollout
    from tool_envs.rollout.engine import RolloutEngine as RolloutEngine
    from tool_envs.rollout.env_pool import EnvPool as EnvPool
    from tool_envs.rollout.episode import Episode as Episode
    from tool_envs.rollout.player import Finished as Finished
    from tool_envs.rollout.player import Played as Played
    from tool_envs.rollout.player import Player as Player
    from tool_envs.rollout.player import Policy as Policy
    from tool_envs.rollout.player import play as play
    from tool_envs.rollout.sft import gold_sft_rows as gold_sft_rows
    from tool_envs.rollout.template import ChatTemplateRenderer as ChatTemplateRenderer
    from tool_envs.rollout.template import TemplatePrefixError as TemplatePrefixError
    from tool_envs.rollout.template_check import TemplateProblem as TemplateProblem
    from tool_envs.rollout.template_check import TemplateReport as TemplateReport
    from tool_envs.rollout.template_check import check_chat_template as check_chat_template

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

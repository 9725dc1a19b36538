"""The message-level agents ``tool-envs eval`` plays, under their old import path: they live in
:mod:`tool_envs.rollout.agents`, beside the chat engine that plays them."""

from __future__ import annotations

from tool_envs.errors import EpisodeInterrupted as EpisodeInterrupted
from tool_envs.errors import EvalError as EvalError
from tool_envs.rollout.agents import Agent as Agent
from tool_envs.rollout.agents import EpisodeResult as EpisodeResult
from tool_envs.rollout.agents import GoldAgent as GoldAgent
from tool_envs.rollout.agents import NoopAgent as NoopAgent
from tool_envs.rollout.agents import OpenAIAgent as OpenAIAgent
from tool_envs.rollout.agents import text_mode_messages as text_mode_messages

"""Simulated users: ``scripted`` (offline), ``llm`` (OpenAI-compatible API), ``human``."""

from tool_envs.tau.users.base import STOP, ScenarioUser, UserSimulator, UserUsage

__all__ = ["STOP", "ScenarioUser", "UserSimulator", "UserUsage"]

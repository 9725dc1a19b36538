"""tool_envs: Gymnasium environments in which LLM agents use tools over many turns.

    import gymnasium
    import tool_envs

    gymnasium.register_envs(tool_envs)
    env = gymnasium.make("tool_envs/Calculator-v0")
    observation, info = env.reset(seed=0)

Importing the package only registers the envs; heavier parts load on first use.
"""

from __future__ import annotations

from tool_envs._lazy import lazy_exports
from tool_envs.registration import ENVS, list_envs, register_envs

__version__ = "0.1.0"

register_envs()

_LAZY = {
    "ToolEnv": "tool_envs.core.env",
    "Toolset": "tool_envs.core.tools",
    "tool": "tool_envs.core.tools",
    "get_parser": "tool_envs.core.parsers",
    "load_tasks": "tool_envs.data",
    "validate_row": "tool_envs.data",
}

__all__ = ["ENVS", "__version__", "list_envs", "register_envs", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)

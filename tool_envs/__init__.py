"""tool_envs: Gymnasium environments in which LLM agents use tools over many turns.

    import gymnasium
    import tool_envs

    gymnasium.register_envs(tool_envs)
    env = gymnasium.make("tool_envs/Calculator-v0")
    observation, info = env.reset(seed=0)

Importing the package only registers the envs; heavier parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports
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

if TYPE_CHECKING:
    from tool_envs.core.env import ToolEnv as ToolEnv
    from tool_envs.core.parsers import get_parser as get_parser
    from tool_envs.core.tools import Toolset as Toolset
    from tool_envs.core.tools import tool as tool
    from tool_envs.data import load_tasks as load_tasks
    from tool_envs.data import validate_row as validate_row

__all__ = ["ENVS", "__version__", "list_envs", "register_envs", *_LAZY]


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

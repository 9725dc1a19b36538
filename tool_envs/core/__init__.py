"""The env contract every family builds on: ToolEnv, chat-message spaces, tools, parsers.

Names load lazily so that importing one piece (say, the parsers) does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "ToolEnv": "tool_envs.core.env",
    "TaskSource": "tool_envs.core.env",
    "Message": "tool_envs.core.messages",
    "ChatMessages": "tool_envs.core.spaces",
    "AssistantTurn": "tool_envs.core.spaces",
    "Tool": "tool_envs.core.tools",
    "ToolOutcome": "tool_envs.core.tools",
    "Toolset": "tool_envs.core.tools",
    "format_result": "tool_envs.core.tools",
    "tool": "tool_envs.core.tools",
    "ToolCall": "tool_envs.core.parsers",
    "ParseError": "tool_envs.core.parsers",
    "ParseResult": "tool_envs.core.parsers",
    "ToolCallParser": "tool_envs.core.parsers",
    "get_parser": "tool_envs.core.parsers",
}

if TYPE_CHECKING:
    from tool_envs.core.env import TaskSource as TaskSource
    from tool_envs.core.env import ToolEnv as ToolEnv
    from tool_envs.core.messages import Message as Message
    from tool_envs.core.parsers import ParseError as ParseError
    from tool_envs.core.parsers import ParseResult as ParseResult
    from tool_envs.core.parsers import ToolCall as ToolCall
    from tool_envs.core.parsers import ToolCallParser as ToolCallParser
    from tool_envs.core.parsers import get_parser as get_parser
    from tool_envs.core.spaces import AssistantTurn as AssistantTurn
    from tool_envs.core.spaces import ChatMessages as ChatMessages
    from tool_envs.core.tools import Tool as Tool
    from tool_envs.core.tools import ToolOutcome as ToolOutcome
    from tool_envs.core.tools import Toolset as Toolset
    from tool_envs.core.tools import format_result as format_result
    from tool_envs.core.tools import tool as tool

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""The env contract every family builds on: ToolEnv, chat-message spaces, tools, parsers.

Names load lazily so that importing one piece (say, the parsers) does not import the rest.
"""

from __future__ import annotations

from tool_envs._lazy import lazy_exports

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

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)

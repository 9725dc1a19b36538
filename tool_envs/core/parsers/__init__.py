"""Tool-call parsers: turn an assistant message into content, tool calls and a parse error.

Use :func:`get_parser` with a name from :func:`available_parsers` (``"auto"`` by default) or pass
any object implementing :class:`ToolCallParser`.
"""

from __future__ import annotations

import difflib

from tool_envs.core.parsers.auto import AutoParser
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall, ToolCallParser
from tool_envs.core.parsers.hermes import HermesParser
from tool_envs.core.parsers.json_call import JSONCallParser
from tool_envs.core.parsers.openai_json import OpenAIJSONParser
from tool_envs.core.parsers.python_call import PythonCallParser
from tool_envs.core.parsers.react import ReActParser
from tool_envs.errors import EnvConfigError

PARSERS: dict[str, type] = {
    parser.name: parser
    for parser in (
        AutoParser,
        HermesParser,
        OpenAIJSONParser,
        JSONCallParser,
        ReActParser,
        PythonCallParser,
    )
}
"""Parser classes by name; ``get_parser(name)`` instantiates one."""


def available_parsers() -> list[str]:
    """Names accepted by :func:`get_parser`, sorted."""
    return sorted(PARSERS)


def get_parser(name_or_parser: str | ToolCallParser = "auto") -> ToolCallParser:
    """Resolve a parser name (or pass a parser through), so envs accept either in ``parser=``.

    Raises:
        EnvConfigError: for an unknown name (the message lists the available ones) or an object
            that is not a parser.
    """
    if isinstance(name_or_parser, str):
        key = name_or_parser.strip().lower()
        if key in PARSERS:
            return PARSERS[key]()
        names = available_parsers()
        close = difflib.get_close_matches(key, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise EnvConfigError(
            f"Unknown tool-call parser {name_or_parser!r}.{hint} "
            f"Available parsers: {', '.join(names)}."
        )
    if isinstance(name_or_parser, type):
        if name_or_parser in PARSERS.values():
            return name_or_parser()
        raise EnvConfigError(
            f"parser={name_or_parser.__name__} is a class; pass an instance or one of the names "
            f"{', '.join(available_parsers())}."
        )
    if isinstance(name_or_parser, ToolCallParser):
        return name_or_parser
    raise EnvConfigError(
        f"parser must be a parser name ({', '.join(available_parsers())}) or an object with a "
        f"'name' and a 'parse(text, tool_names=None)' method; got {type(name_or_parser).__name__}."
    )


__all__ = [
    "PARSERS",
    "AutoParser",
    "HermesParser",
    "JSONCallParser",
    "OpenAIJSONParser",
    "ParseError",
    "ParseResult",
    "PythonCallParser",
    "ReActParser",
    "ToolCall",
    "ToolCallParser",
    "available_parsers",
    "get_parser",
]

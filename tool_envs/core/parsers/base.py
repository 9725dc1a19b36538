"""The types every tool-call parser returns, and the protocol a parser implements.

A parser turns the raw text a model wrote into the text meant for the user (``content``), the tool
calls it asked for, and, if some call was malformed, a structured :class:`ParseError`. Parsers never
raise on any input string: malformed input is data, not an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool, as the model asked for it.

    Attributes:
        name: The tool's name, exactly as written by the model (not checked against any toolset).
        arguments: Keyword arguments, decoded from JSON or Python literals.
        id: The call id when the model or API gave one (OpenAI ``tool_calls``), else None.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ParseError:
    """Why some text that looked like a tool call could not be parsed.

    Attributes:
        format: The parser format that detected the attempt (``"hermes"``, ``"json"``, ...).
        message: A short explanation written for the model, e.g. "invalid JSON in <tool_call>:
            Expecting ',' delimiter at line 1 column 27".
        snippet: The offending text (truncated), so logs show what the model wrote.
    """

    format: str
    message: str
    snippet: str = ""


@dataclass(frozen=True)
class ParseResult:
    """What one assistant message means.

    Attributes:
        content: The message text with the tool-call markup removed (what a user would see).
        tool_calls: Well-formed calls, in the order written.
        error: Set when at least one call attempt was malformed. Well-formed calls in the same
            message are still returned in ``tool_calls``.
    """

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    error: ParseError | None = None

    @property
    def is_respond(self) -> bool:
        """True when the message is plain text for the user: no calls and no malformed call."""
        return not self.tool_calls and self.error is None


@runtime_checkable
class ToolCallParser(Protocol):
    """What a tool-call parser provides.

    An implementation must:
      * have a unique lowercase ``name`` (the key users pass as ``parser=...``);
      * implement ``parse(text, tool_names=None)`` that NEVER raises, whatever ``text`` is;
      * use ``tool_names`` (when given) only to disambiguate formats that could be plain prose,
        such as Python call syntax; it must not reject calls to unknown tools (the toolset reports
        those to the model with a clear error).
    """

    name: str

    def parse(self, text: str, tool_names: frozenset[str] | None = None) -> ParseResult: ...

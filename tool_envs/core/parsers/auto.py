"""Auto-detection of the tool-call format, the default parser.

Formats are tried from the most to the least explicit markup, so that a weaker format never
captures a message meant as a stronger one (a JSON call inside ``<tool_call>`` is Hermes, not bare
JSON; a ``"tool_calls"`` object is OpenAI, not a call named by its keys). A clearly attempted but
malformed call returns that format's :class:`ParseError` instead of being read as plain text.
"""

from __future__ import annotations

from tool_envs.core.parsers._common import BaseParser
from tool_envs.core.parsers.base import ParseResult
from tool_envs.core.parsers.hermes import OPEN_TAG, HermesParser
from tool_envs.core.parsers.json_call import JSONCallParser
from tool_envs.core.parsers.openai_json import OpenAIJSONParser
from tool_envs.core.parsers.python_call import PythonCallParser
from tool_envs.core.parsers.react import ReActParser, looks_like_react


class AutoParser(BaseParser):
    """Detects the format: hermes, openai, json, react, python, else plain text for the user."""

    name = "auto"

    def __init__(self) -> None:
        self._hermes = HermesParser()
        self._openai = OpenAIJSONParser()
        self._json = JSONCallParser()
        self._react = ReActParser()
        self._python = PythonCallParser()

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        if OPEN_TAG in text:
            return self._hermes.detect(text, tool_names)
        for parser in (self._openai, self._json):
            result = parser.detect(text, tool_names)
            if result is not None:
                return result
        if looks_like_react(text):
            return self._react.detect(text, tool_names)
        return self._python.detect(text, tool_names)

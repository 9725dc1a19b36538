"""Bare JSON calls: ``{"name": ..., "arguments": {...}}`` or Llama-3 ``{"name", "parameters"}``.

One object or a list of them, as the whole message (optionally after Llama's ``<|python_tag|>``)
or inside ```json / ``` fences with prose around. A JSON object is only a call when it has a
"name" and an "arguments"/"parameters" key (or, given ``tool_names``, a known name), so a model
that answers with JSON data such as ``{"name": "Alice", "age": 3}`` is not misread.
"""

from __future__ import annotations

import re
from typing import Any

from tool_envs.core.parsers._common import (
    CALL_SHAPE,
    BaseParser,
    JSONCandidate,
    call_from_object,
    call_id,
    claimed_candidates,
    describe,
    finish,
    invalid_json,
    remove_spans,
    snippet,
)
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

_NAME_KEY = re.compile(r'"name"\s*:')
_OBJECT_START = re.compile(r"\s*(?:\{|\[\s*\{)")


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """Accept ``{"type": "function", "function": {...}}`` items the same as a plain call."""
    function = obj.get("function")
    if "name" not in obj and isinstance(function, dict) and "name" in function:
        return function
    return obj


def _is_call_object(value: Any, tool_names: frozenset[str] | None) -> bool:
    if not isinstance(value, dict):
        return False
    value = _unwrap(value)
    if "name" not in value:
        return False
    if "arguments" in value or "parameters" in value:
        return True
    name = value["name"]
    return tool_names is not None and isinstance(name, str) and name.strip() in tool_names


def _is_attempt(candidate: JSONCandidate, tool_names: frozenset[str] | None) -> bool:
    """Whether this candidate is (or clearly tried to be) one call object or a list of them."""
    if candidate.decoded.ok:
        value = candidate.decoded.value
        if isinstance(value, list):
            return any(_is_call_object(item, tool_names) for item in value)
        return _is_call_object(value, tool_names)
    return bool(_OBJECT_START.match(candidate.body) and _NAME_KEY.search(candidate.body))


class JSONCallParser(BaseParser):
    """Parses bare or fenced JSON call objects (Llama 3.x, generic JSON prompting)."""

    name = "json"

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        candidates = claimed_candidates(text, lambda c: _is_attempt(c, tool_names))
        for candidate in candidates:
            if not candidate.decoded.ok:
                shape = f"{CALL_SHAPE} (or a list of them)"
                errors.append(invalid_json(self.name, candidate, "tool call", shape))
                continue
            value = candidate.decoded.value
            items = value if isinstance(value, list) else [value]
            for item in items:
                self._item(item, candidate.body, calls, errors)
        if not candidates:
            return None
        return finish(remove_spans(text, [c.span for c in candidates]), calls, errors)

    def _item(
        self, item: Any, source: str, calls: list[ToolCall], errors: list[ParseError]
    ) -> None:
        if not isinstance(item, dict):
            errors.append(
                ParseError(
                    self.name,
                    f"Each tool call must be {CALL_SHAPE}; got {describe(item)}",
                    snippet(source),
                )
            )
            return
        result = call_from_object(_unwrap(item), self.name, source, id_=call_id(item.get("id")))
        if isinstance(result, ToolCall):
            calls.append(result)
        else:
            errors.append(result)

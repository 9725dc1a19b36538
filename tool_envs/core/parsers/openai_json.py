"""OpenAI-style JSON: ``{"tool_calls": [{"id": ..., "function": {"name", "arguments"}}]}``.

Models that imitate the OpenAI API response write this object as the whole message or inside a
```json block. ``arguments`` may be an object or (as the API itself sends it) a JSON string.
"""

from __future__ import annotations

from typing import Any

from tool_envs.core.json_values import describe
from tool_envs.core.parsers._common import (
    BaseParser,
    JSONCandidate,
    call_from_object,
    call_id,
    claimed_candidates,
    finish,
    invalid_json,
    remove_spans,
    snippet,
)
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

OPENAI_SHAPE = (
    '{"tool_calls": [{"id": <optional id>, "type": "function", '
    '"function": {"name": <tool name>, "arguments": {...}}}]}'
)
_ITEM_SHAPE = '{"type": "function", "function": {"name": <tool name>, "arguments": {...}}}'


def _is_attempt(candidate: JSONCandidate) -> bool:
    """Whether this candidate is (or clearly tried to be) an object with a "tool_calls" key."""
    if candidate.decoded.ok:
        return isinstance(candidate.decoded.value, dict) and "tool_calls" in candidate.decoded.value
    body = candidate.body.lstrip()
    return body.startswith("{") and '"tool_calls"' in body


class OpenAIJSONParser(BaseParser):
    """Parses an OpenAI ``tool_calls`` object, bare or in a fenced block; keeps call ids."""

    name = "openai"

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        inner_content: list[str] = []
        candidates = claimed_candidates(text, _is_attempt)
        for candidate in candidates:
            if not candidate.decoded.ok:
                what = "the tool_calls object"
                errors.append(invalid_json(self.name, candidate, what, OPENAI_SHAPE))
                continue
            obj = candidate.decoded.value
            content = obj.get("content")
            if isinstance(content, str) and content.strip():
                inner_content.append(content.strip())
            self._items(obj["tool_calls"], candidate.body, calls, errors)
        if not candidates:
            return None
        outside = remove_spans(text, [c.span for c in candidates])
        content = "\n\n".join(part for part in [outside, *inner_content] if part)
        return finish(content, calls, errors)

    def _items(
        self, tool_calls: Any, source: str, calls: list[ToolCall], errors: list[ParseError]
    ) -> None:
        if isinstance(tool_calls, dict):
            tool_calls = [tool_calls]
        if not isinstance(tool_calls, list):
            errors.append(
                ParseError(
                    self.name,
                    f'"tool_calls" must be a list like {OPENAI_SHAPE}; '
                    f"it was {describe(tool_calls)}",
                    snippet(source),
                )
            )
            return
        for item in tool_calls:
            if not isinstance(item, dict):
                errors.append(
                    ParseError(
                        self.name,
                        f'Each item of "tool_calls" must be {_ITEM_SHAPE}; got {describe(item)}',
                        snippet(source),
                    )
                )
                continue
            function = item.get("function")
            if function is None and "name" in item:
                function = item  # flat {"name", "arguments"} items: accept them too
            if not isinstance(function, dict):
                errors.append(
                    ParseError(
                        self.name,
                        f'Each item of "tool_calls" must be {_ITEM_SHAPE}; '
                        f'"function" was {describe(function)}',
                        snippet(source),
                    )
                )
                continue
            result = call_from_object(
                function, self.name, source, shape=_ITEM_SHAPE, id_=call_id(item.get("id"))
            )
            if isinstance(result, ToolCall):
                calls.append(result)
            else:
                errors.append(result)

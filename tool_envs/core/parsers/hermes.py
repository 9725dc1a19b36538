"""Hermes / Qwen tool calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

The JSON is decoded with ``raw_decode`` from the opening tag, never cut at the first closing tag,
so a string value may contain ``</tool_call>`` without ending the call early.
"""

from __future__ import annotations

import json

from tool_envs.core.parsers._common import (
    CALL_SHAPE,
    BaseParser,
    call_from_object,
    decode_prefix,
    finish,
    remove_spans,
    skip_ws,
    snippet,
)
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_SHAPE = f"<tool_call>{CALL_SHAPE}</tool_call>"


def _skip_fence_open(text: str, pos: int) -> int:
    """Skip a ```json line some models put inside the tag."""
    if text.startswith("```", pos):
        newline = text.find("\n", pos)
        return len(text) if newline < 0 else skip_ws(text, newline + 1)
    return pos


def _skip_fence_close(text: str, pos: int) -> int:
    if text.startswith("```", pos):
        return skip_ws(text, pos + 3)
    return pos


class _CloseTags:
    """``text.find(CLOSE_TAG, pos)`` for increasing ``pos``, remembering the last answer.

    Without it, a message of many unclosed ``<tool_call>`` blocks searched the rest of the text
    once per block (quadratic); with it every closing tag is found once.
    """

    def __init__(self, text: str):
        self._text = text
        self._searched_from = -1
        self._found = -1

    def next(self, pos: int) -> int:
        """The first closing tag at or after ``pos``, or -1."""
        known = self._searched_from >= 0 and self._searched_from <= pos
        if not (known and (self._found < 0 or self._found >= pos)):
            self._searched_from, self._found = pos, self._text.find(CLOSE_TAG, pos)
        return self._found


class HermesParser(BaseParser):
    """Parses ``<tool_call>`` JSON blocks (Hermes, Qwen 2.5/3 chat templates)."""

    name = "hermes"

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        if OPEN_TAG not in text:
            return None
        single = self._single_call(text)
        if single is not None:
            return single
        return self._scan(text)

    def _single_call(self, text: str) -> ParseResult | None:
        """The common turn, exactly one well-formed call and nothing else, read without the
        general scan (half the time); anything unusual returns None and takes :meth:`_scan`,
        which gives the same result here (``tests/test_parsers_fuzz.py`` checks both agree)."""
        block = text.strip()
        if not (block.startswith(OPEN_TAG) and block.endswith(CLOSE_TAG)):
            return None
        if block.count(OPEN_TAG) != 1 or block.count(CLOSE_TAG) != 1:
            return None
        body = block[len(OPEN_TAG) : -len(CLOSE_TAG)]
        if body.lstrip().startswith("```"):
            return None
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        call = call_from_object(value, self.name, block)
        return finish("", [call], []) if isinstance(call, ToolCall) else None

    def _scan(self, text: str) -> ParseResult:
        """Every ``<tool_call>`` block in ``text``, well-formed or not."""
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        spans: list[tuple[int, int]] = []
        closes = _CloseTags(text)
        pos = 0
        while True:
            start = text.find(OPEN_TAG, pos)
            if start < 0:
                break
            end = self._one_block(text, start, closes, calls, errors)
            spans.append((start, end))
            pos = max(end, start + len(OPEN_TAG))
        return finish(remove_spans(text, spans), calls, errors)

    def _one_block(
        self,
        text: str,
        start: int,
        closes: _CloseTags,
        calls: list[ToolCall],
        errors: list[ParseError],
    ) -> int:
        """Parse the block opened at ``start``; return where the block (and its markup) ends."""
        body = _skip_fence_open(text, skip_ws(text, start + len(OPEN_TAG)))
        first_close = closes.next(body)
        block_end = len(text) if first_close < 0 else first_close + len(CLOSE_TAG)

        def fail(message: str, end: int) -> int:
            errors.append(ParseError(self.name, message, snippet(text[start:end])))
            return end

        if body >= len(text) or text.startswith(CLOSE_TAG, body):
            return fail(f"Empty <tool_call> block; write {_SHAPE}.", block_end)
        decoded = decode_prefix(text, body)
        if not decoded.ok:
            where = "" if first_close >= 0 else " (and no closing </tool_call> tag)"
            return fail(
                f"Invalid JSON in <tool_call>{where}: {decoded.message}. Write {_SHAPE}.",
                block_end,
            )
        after = _skip_fence_close(text, skip_ws(text, decoded.end))
        if text.startswith(CLOSE_TAG, after):
            end = after + len(CLOSE_TAG)
        elif after >= len(text) or text.startswith(OPEN_TAG, after):
            end = after  # unclosed tag: generation stopped right after a complete call
        else:
            close = closes.next(after)
            if close >= 0:
                extra = text[after:close].strip()[:40]
                return fail(
                    f"Unexpected text after the JSON object in <tool_call>: {extra!r}. "
                    f"Write {_SHAPE}.",
                    close + len(CLOSE_TAG),
                )
            end = decoded.end  # unclosed, then prose: keep the prose as content

        items = decoded.value if isinstance(decoded.value, list) else [decoded.value]
        if not items:
            return fail(f"Empty list in <tool_call>; write {_SHAPE}.", end)
        source = text[start:end]
        for item in items:
            result = call_from_object(item, self.name, source)
            if isinstance(result, ToolCall):
                calls.append(result)
            else:
                errors.append(result)
        return end

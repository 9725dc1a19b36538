"""Helpers shared by the parsers: JSON decoding that never raises, call validation, code fences.

Every parser funnels its candidate call objects through :func:`call_from_object` so that the
error messages a model sees are worded the same way whatever format it used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from tool_envs.core.json_values import describe
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

SNIPPET_CHARS = 200
"""How much of the offending text a :class:`ParseError` keeps."""

MAX_PARSE_CHARS = 1_000_000
"""Longest message read for tool calls (about 250k tokens, more than a model writes in a turn).

Every parser runs in time linear in the message (Python syntax is the slowest, ~3 s a megabyte
of calls); the cap bounds what one turn can cost. Longer messages get a parse error.
"""

CALL_SHAPE = '{"name": <tool name>, "arguments": {...}}'
"""The shape of one call object, shown to the model in error messages."""

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"

# A Markdown code fence: ```lang\n body ```. An unclosed fence runs to the end of the text, because
# generation often stops (EOS) before the closing backticks.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def snippet(text: str) -> str:
    """Truncate ``text`` for a :class:`ParseError`, so logs stay readable."""
    text = text.strip()
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS] + "..."


def skip_ws(text: str, pos: int) -> int:
    """Index of the first non-whitespace character at or after ``pos``."""
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


@dataclass(frozen=True)
class Decoded:
    """Outcome of decoding JSON: ``ok`` with ``value`` ending at ``end``, or a ``message``."""

    ok: bool
    value: Any = None
    end: int = 0
    message: str = ""


_FIRST_WINDOW = 256
_LOOKAHEAD = 16  # more than the longest token (-Infinity) or escape (\\uXXXX) a cut can split


def decode_prefix(text: str, pos: int = 0) -> Decoded:
    """Decode one JSON value starting at ``pos``; text after it is left to the caller.

    Scanning with ``raw_decode`` (instead of a regex up to a closing tag) is what lets a closing
    tag appear inside a JSON string value. Error positions (line, column) count from ``pos``.

    The value is decoded from a window of the text that grows four-fold until it holds the
    value or the error, never from the whole rest of the text: ``json`` computes an error's line
    number by counting every newline before it, so a message of thousands of malformed calls,
    each decoded against the whole message, took quadratic time. A result is trusted only when
    it lies more than ``_LOOKAHEAD`` characters before the window's end (a cut never changed it).
    """
    size = _FIRST_WINDOW
    while True:
        whole = pos + size >= len(text)
        doc = text[pos:] if whole else text[pos : pos + size]
        settled_before = len(doc) if whole else len(doc) - _LOOKAHEAD
        try:
            value, end = _DECODER.raw_decode(doc)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= settled_before or exc.msg.startswith("Unterminated string")
            if whole or not cut:
                return Decoded(False, message=f"{exc.msg} at line {exc.lineno} column {exc.colno}")
        except RecursionError:  # deeper inside the window means at least as deep in the text
            return Decoded(False, message="JSON is nested too deeply")
        except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
            if "integer string conversion" in str(exc):
                return Decoded(False, message="an integer has too many digits (at most 4300)")
            return Decoded(False, message=str(exc))
        else:
            if whole or end < settled_before:
                return Decoded(True, value=value, end=pos + end)
        size *= 4


def decode_whole(text: str) -> Decoded:
    """Decode ``text`` as exactly one JSON value (surrounding whitespace allowed)."""
    start = skip_ws(text, 0)
    result = decode_prefix(text, start)
    if not result.ok:
        return result
    rest = skip_ws(text, result.end)
    if rest < len(text):
        return Decoded(False, message=f"unexpected text after the JSON value: {text[rest:][:40]!r}")
    return result


def coerce_arguments(value: Any, key: str = "arguments") -> dict[str, Any] | str:
    """Turn an ``arguments`` value into a dict, or return a description of why it is not one.

    A JSON-encoded string of an object is accepted (the OpenAI API sends arguments that way), and
    a missing/null/empty value means "no arguments".
    """
    if isinstance(value, dict):
        return value
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        decoded = decode_whole(value)
        if not decoded.ok:
            return f'"{key}" was a string that is not valid JSON ({decoded.message})'
        if isinstance(decoded.value, dict):
            return decoded.value
        return f'"{key}" was a JSON string that decodes to {describe(decoded.value)}'
    return f'"{key}" was {describe(value)}'


def call_id(value: Any) -> str | None:
    """Normalize a call id: keep strings, stringify integers, drop anything else.

    Ids end up in observations and in tau2's pydantic messages, which need strings; an integer
    too long to print (thousands of digits) is dropped too, so the env gives the call its own.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 256:
        return str(value)
    return None


def call_from_object(
    obj: Any,
    fmt: str,
    source: str,
    *,
    shape: str = CALL_SHAPE,
    id_: str | None = None,
) -> ToolCall | ParseError:
    """Validate one decoded call object ``{"name": ..., "arguments"|"parameters": ...}``."""

    def fail(problem: str) -> ParseError:
        return ParseError(fmt, f"Tool call must be {shape}; {problem}", snippet(source))

    if not isinstance(obj, dict):
        return fail(f"got {describe(obj)}")
    if "name" not in obj:
        return fail('"name" was missing')
    name = obj["name"]
    if not isinstance(name, str):
        return fail(f'"name" was {describe(name)}')
    name = name.strip()
    if not name:
        return fail('"name" was an empty string')
    key = "arguments" if "arguments" in obj else "parameters"
    arguments = coerce_arguments(obj.get(key), key)
    if isinstance(arguments, str):
        return fail(arguments)
    return ToolCall(name=name, arguments=dict(arguments), id=id_)


@dataclass(frozen=True)
class Fence:
    """One Markdown code block: its language tag (lowercased), body, and span in the text."""

    lang: str
    body: str
    start: int
    end: int


def find_fences(text: str, langs: Iterable[str] | None = None) -> list[Fence]:
    """All code blocks in ``text``, optionally only those whose language tag is in ``langs``."""
    wanted = None if langs is None else frozenset(langs)
    fences = []
    for match in _FENCE.finditer(text):
        lang = match.group(1).lower()
        if wanted is None or lang in wanted:
            fences.append(Fence(lang, match.group(2), match.start(), match.end()))
    return fences


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` without the given (start, end) spans, stripped: the user-visible content."""
    pieces = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            start = pos
        pieces.append(text[pos:start])
        pos = max(pos, end)
    pieces.append(text[pos:])
    return "".join(pieces).strip()


@dataclass(frozen=True)
class JSONCandidate:
    """A piece of the message that may hold JSON: the whole message or one fenced block."""

    span: tuple[int, int]
    body: str
    decoded: Decoded
    fenced: bool


_PYTHON_TAG = "<|python_tag|>"


def json_candidates(text: str) -> Iterator[JSONCandidate]:
    """Yield where a JSON payload may be: the whole message first, then ```json / ``` blocks.

    The whole-message candidate is a JSON value at the start of the message (after an optional
    Llama ``<|python_tag|>``); text after it is left as content.
    """
    start = skip_ws(text, 0)
    if text.startswith(_PYTHON_TAG, start):
        start = skip_ws(text, start + len(_PYTHON_TAG))
    if start < len(text) and text[start] in "{[":
        decoded = decode_prefix(text, start)
        end = decoded.end if decoded.ok else len(text)
        yield JSONCandidate((start, end), text[start:end], decoded, fenced=False)
    for fence in find_fences(text, ("", "json", "json5", "jsonc")):
        yield JSONCandidate((fence.start, fence.end), fence.body, decode_whole(fence.body), True)


def invalid_json(parser: str, candidate: JSONCandidate, what: str, shape: str) -> ParseError:
    """The error for a call attempt whose JSON does not decode: where, why, and what to write."""
    return ParseError(
        parser,
        f"Invalid JSON in {what}: {candidate.decoded.message}. Write {shape}.",
        snippet(candidate.body),
    )


def claimed_candidates(
    text: str, is_attempt: Callable[[JSONCandidate], bool]
) -> list[JSONCandidate]:
    """The JSON candidates that are call attempts, skipping ones inside an earlier claimed one
    (a fence inside a whole-message JSON value is part of that value).

    Candidates come in text order and fences never overlap one another, so a candidate overlaps
    a claimed one exactly when it starts before the end of the last claimed span: one comparison
    each, linear in the number of fences.
    """
    claimed: list[JSONCandidate] = []
    claimed_end = -1
    for candidate in json_candidates(text):
        start, end = candidate.span
        if start < claimed_end:
            continue
        if is_attempt(candidate):
            claimed.append(candidate)
            claimed_end = max(claimed_end, end)
    return claimed


class BaseParser:
    """Shared ``parse`` that guarantees the never-raise contract around ``detect``."""

    name: ClassVar[str] = ""

    def parse(self, text: str, tool_names: frozenset[str] | None = None) -> ParseResult:
        """Parse one assistant message; malformed calls come back as ``error``, never raised.

        A message longer than :data:`MAX_PARSE_CHARS` is not read for calls (an error says so):
        every parser is linear in the text, and this bounds the time one turn can take.
        """
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        if len(text) > MAX_PARSE_CHARS:
            return ParseResult(
                content=text.strip(),
                error=ParseError(
                    self.name,
                    f"The message is {len(text):,} characters long; tool calls are only read "
                    f"from messages of at most {MAX_PARSE_CHARS:,} characters. Write shorter "
                    "turns.",
                    snippet(text),
                ),
            )
        try:
            names = None if tool_names is None else frozenset(tool_names)
            result = self.detect(text, names)
        except RecursionError:
            return ParseResult(
                content=text.strip(),
                error=ParseError(self.name, "The tool call is nested too deeply.", snippet(text)),
            )
        except Exception as exc:  # the contract: parse never raises, whatever the text
            return ParseResult(
                content=text.strip(),
                error=ParseError(
                    self.name,
                    f"The tool call could not be parsed ({type(exc).__name__}: {exc}).",
                    snippet(text),
                ),
            )
        return result if result is not None else ParseResult(content=text.strip())

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        """This format's reading of ``text``, or None when ``text`` makes no attempt at it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def finish(content: str, calls: list[ToolCall], errors: list[ParseError]) -> ParseResult:
    """Build the result; the first error is reported, with a count when there were several."""
    error = None
    if errors:
        error = errors[0]
        if len(errors) > 1:
            more = len(errors) - 1
            error = ParseError(
                error.format,
                f"{error.message} (and {more} more malformed call{'s' if more > 1 else ''})",
                error.snippet,
            )
    return ParseResult(content=content, tool_calls=tuple(calls), error=error)

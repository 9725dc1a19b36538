"""Python call syntax: ``tool(a=1, b="x")``, one per line, or ``[f(a=1), g(b=2)]``.

Parsed with :mod:`ast` and :func:`ast.literal_eval` only; model text is never evaluated. Python
syntax overlaps with prose ("see f(x)"), so bare text counts only when the whole message is call
expressions, and with ``tool_names`` a bare call must name a known tool. A ```python / ```py /
``` block that holds nothing but calls is read as calls, unless ``tool_names`` is given, none of
its calls names a tool and one of them is not in the tool-call shape (keyword literal arguments):
that is a usage example (``print(add(1, 2))``), not an attempt at a call.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from typing import Any

from tool_envs.core.parsers._common import BaseParser, find_fences, finish, remove_spans, snippet
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

PYTHON_SHAPE = "tool_name(arg=value, ...)"
_CODE_LANGS = ("python", "py", "python3", "tool_code", "")
# Text that starts like a call, e.g. "add(" or "[functions.add(": a broken attempt, not prose.
_CALL_START = re.compile(r"\s*\[?\s*([A-Za-z_][\w]*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\(")

_TIGHT_CALL = re.compile(r"[A-Za-z_][\w.]*\(")
_LINE_BREAK = re.compile(rb"\r\n?|\n")


class _NotCalls(Exception):
    """The source is valid Python but not only call expressions."""


def _func_name(node: ast.expr) -> str | None:
    """``add`` for ``add(...)``, ``add`` for ``functions.add(...)``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        return node.attr if isinstance(base, ast.Name) else None
    return None


def _parse_calls(source: str) -> list[ast.Call]:
    """The call nodes of ``source``; raises SyntaxError (not Python) or _NotCalls (other code)."""
    try:
        with warnings.catch_warnings():
            # Model text such as "\d" or "1if" makes the compiler warn; keep that off stderr.
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="exec")
    except (SyntaxError, ValueError, OverflowError, MemoryError) as exc:
        raise SyntaxError(str(exc)) from None
    if not tree.body:
        raise _NotCalls
    calls: list[ast.Call] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            raise _NotCalls
        value = stmt.value
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        if not items:
            raise _NotCalls
        for item in items:
            if not isinstance(item, ast.Call) or _func_name(item.func) is None:
                raise _NotCalls
            calls.append(item)
    return calls


def _plain(value: Any) -> Any:
    """Check a literal is JSON-like (tuples become lists); raise ValueError otherwise."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("dict keys must be strings")
            out[key] = _plain(item)
        return out
    raise ValueError(f"{type(value).__name__} values are not supported")


class _Segments:
    """The source text of AST nodes, in time proportional to each node's own length.

    ``ast.get_source_segment`` splits the whole source into lines on every call, which made a
    message of a few thousand calls take close to a minute. Positions in the AST are UTF-8 byte
    offsets, so the source is encoded once and the line starts computed once.
    """

    def __init__(self, source: str):
        self.source = source
        self._data = source.encode("utf-8", errors="surrogatepass")
        # The line breaks the tokenizer counts: \r\n, \r and \n.
        self._line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(self._data))]

    def __call__(self, node: ast.AST) -> str:
        try:
            start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
            end = self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        except (AttributeError, TypeError, IndexError):  # odd positions: the snippet is for logs
            return self.source
        return self._data[start:end].decode("utf-8", errors="replace") or self.source

    def _offset(self, line: int, column: int) -> int:
        return self._line_starts[line - 1] + column


class PythonCallParser(BaseParser):
    """Parses Python-style calls with keyword literal arguments (Llama 3.2 / pythonic format)."""

    name = "python"

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        spans: list[tuple[int, int]] = []
        for fence in find_fences(text, _CODE_LANGS):
            body = textwrap.dedent(fence.body).strip()
            attempt = self._read(body, tool_names, in_block=True)
            if attempt is not None:
                spans.append((fence.start, fence.end))
                calls.extend(attempt[0])
                errors.extend(attempt[1])
        if spans:
            return finish(remove_spans(text, spans), calls, errors)
        attempt = self._read(text.strip(), tool_names, in_block=False)
        if attempt is None:
            return None
        return finish("", *attempt)

    def _read(
        self, source: str, tool_names: frozenset[str] | None, *, in_block: bool
    ) -> tuple[list[ToolCall], list[ParseError]] | None:
        """Calls and errors in ``source``, or None when it is not an attempt at calls."""
        if "(" not in source:  # no call, and no broken start of one: prose (most final answers)
            return None
        try:
            nodes = _parse_calls(source)
            segment = _Segments(source)
        except _NotCalls:
            return None
        except SyntaxError as exc:
            start = _CALL_START.match(source)
            if start is None:
                return None
            name = re.sub(r"\s", "", start.group(1)).rsplit(".", 1)[-1]
            if not in_block and (tool_names is None or name not in tool_names):
                return None  # prose such as "f(x) is nice." stays content
            if in_block and tool_names is not None and name not in tool_names:
                return None
            message = f"Invalid Python call syntax ({exc}). Write {PYTHON_SHAPE}."
            return [], [ParseError(self.name, message, snippet(source))]
        if in_block and tool_names is not None and self._example_code(nodes, segment, tool_names):
            return None
        if not in_block:
            # "Paris (France)" parses as a call; a real call has no space before "(".
            if not all(_TIGHT_CALL.match(segment(node)) for node in nodes):
                return None
            if tool_names is not None and any(
                _func_name(node.func) not in tool_names for node in nodes
            ):
                return None
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        for node in nodes:
            result = self._convert(node, segment)
            if isinstance(result, ToolCall):
                calls.append(result)
            else:
                errors.append(result)
        return calls, errors

    def _example_code(
        self, nodes: list[ast.Call], segment: _Segments, tool_names: frozenset[str]
    ) -> bool:
        """Calls of no known tool in a shape no tool call has (``print(add(1, 2))``, a usage
        example after a solution) are code; ``unknown_tool(x=1)`` stays a (misnamed) call."""
        if any(_func_name(node.func) in tool_names for node in nodes):
            return False
        return any(isinstance(self._convert(node, segment), ParseError) for node in nodes)

    def _convert(self, node: ast.Call, segment: _Segments) -> ToolCall | ParseError:
        name = _func_name(node.func) or ""
        where = snippet(segment(node))

        def fail(problem: str) -> ParseError:
            return ParseError(self.name, f"{problem} Write {PYTHON_SHAPE}.", where)

        if node.args:
            return fail(
                f"{name}(...) has positional arguments; use keyword arguments only, "
                f"like {name}(arg=value)."
            )
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                return fail(f"{name}(...) uses **kwargs; write each argument as arg=value.")
            if keyword.arg in arguments:
                return fail(f"{name}(...) repeats the argument {keyword.arg!r}.")
            try:
                value = _plain(ast.literal_eval(keyword.value))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return fail(
                    f"Argument {keyword.arg!r} of {name}(...) must be a literal: a number, "
                    "string, list, dict, True, False or None."
                )
            arguments[keyword.arg] = value
        return ToolCall(name=name, arguments=arguments)

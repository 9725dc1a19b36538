"""Check that a value a model produced is plain JSON within limits, without recursing.

Tool-call arguments go on to deep copies, JSON encoding, schema validation, chat templates and
pydantic models (tau2), and each of those recurses once per nesting level or turns integers into
text. Arguments nested hundreds deep, or an integer of thousands of digits, would make them raise
``RecursionError`` or ``ValueError`` far from where the value came in. Checking once, at the
boundary where a model's turn enters an env, with an explicit stack instead of recursion, keeps
everything after it safe.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 64
"""Most nested containers (objects and lists) a tool-call argument value may have.

Real tool arguments rarely go past 5; 64 leaves room for any schema while staying far below
Python's recursion limit for the code that walks the value later (copying, encoding, templates).
"""

MAX_INT_DIGITS = 4000
"""Most decimal digits an integer may have: below Python's 4,300-digit limit on converting
integers to and from text, so the value can always be printed and encoded."""

# 10**4000 needs 13,288 bits; comparing bit lengths avoids converting the integer to text.
_MAX_INT_BITS = 13_287
_PATH_CHARS = 80


def describe(value: Any) -> str:
    """Name a value's JSON type in words a model understands ("an object", "a number", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string" if value.strip() else "an empty string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def plain_json(value: Any, *, max_depth: int = MAX_DEPTH) -> tuple[Any, str | None]:
    """A fresh copy of ``value`` as plain JSON data, or ``(None, problem)`` saying what is wrong.

    Plain JSON means ``dict`` with ``str`` keys, ``list`` (tuples become lists), ``str``, ``int``
    (at most :data:`MAX_INT_DIGITS` digits), ``float``, ``bool`` and ``None``, nested at most
    ``max_depth`` containers deep. The walk uses an explicit stack, so any nesting is safe to
    check; the copy shares nothing with ``value``.
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int, str]] = [(value, root, 0, 1, "")]
    while stack:
        item, parent, key, depth, path = stack.pop()
        if item is None or isinstance(item, (bool, float, str)):
            parent[key] = item
        elif isinstance(item, int):
            if item.bit_length() > _MAX_INT_BITS:
                return None, f"{_at(path)}is an integer longer than {MAX_INT_DIGITS} digits"
            parent[key] = int(item)
        elif isinstance(item, (dict, list, tuple)):
            if depth > max_depth:
                return None, f"they are nested more than {max_depth} levels deep"
            problem = _push_children(item, parent, key, depth, path, stack)
            if problem is not None:
                return None, problem
        else:
            return None, f"{_at(path)}is {describe(item)}, which is not a JSON value"
    return root[0], None


def _push_children(
    item: dict[Any, Any] | list[Any] | tuple[Any, ...],
    parent: Any,
    key: Any,
    depth: int,
    path: str,
    stack: list[tuple[Any, Any, Any, int, str]],
) -> str | None:
    """Place an empty copy of the container and queue its children; a problem for bad keys."""
    if isinstance(item, dict):
        for name in item:
            if not isinstance(name, str):
                return f"{_at(path)}has a key that is {describe(name)}; object keys are strings"
        copy: Any = dict.fromkeys(item)  # keeps the key order; values are filled in below
        children = item.items()
        parent[key] = copy
        for name, child in children:
            stack.append((child, copy, name, depth + 1, _child_path(path, f".{name}")))
        return None
    copy = [None] * len(item)
    parent[key] = copy
    for index, child in enumerate(item):
        stack.append((child, copy, index, depth + 1, _child_path(path, f"[{index}]")))
    return None


def _child_path(path: str, step: str) -> str:
    """The path of a child, kept short: a long path stops growing (it is only for messages)."""
    if len(path) >= _PATH_CHARS:
        return path
    return (path + step)[:_PATH_CHARS]


def _at(path: str) -> str:
    """Where a problem is, e.g. "'a.b[2]' ", or "the value " for the value itself."""
    return f"'{path.lstrip('.')}' " if path else "the value "

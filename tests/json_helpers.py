"""Looking inside JSON values (task rows, tool arguments) in tests."""

from __future__ import annotations

from collections.abc import Iterator


def string_leaves(value: object) -> Iterator[str]:
    """The strings inside a JSON value: itself, or those of its items, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_leaves(item)

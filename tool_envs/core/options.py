"""Checks of env constructor arguments, so a bad ``gymnasium.make`` argument fails at make time.

Without them ``gym.make("tool_envs/Calculator-v0", tolerance="x")`` was accepted and failed at
the first step, far from the typo. Each check names the argument, what it expects and what came,
and returns the value in its canonical type (an ``int`` given for a float becomes a ``float``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from tool_envs.errors import EnvConfigError


def _fail(name: str, value: Any, expected: str) -> EnvConfigError:
    return EnvConfigError(f"{name}={value!r} is not valid: expected {expected}")


def number(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    above: float | None = None,
    optional: bool = False,
) -> float | None:
    """A finite real number (bools are not numbers), ``>= minimum`` / ``> above`` when given."""
    if value is None and optional:
        return None
    bounds = []
    if minimum is not None:
        bounds.append(f">= {minimum:g}")
    if above is not None:
        bounds.append(f"> {above:g}")
    expected = "a finite number" + (f" {' and '.join(bounds)}" if bounds else "")
    expected += " or None" if optional else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(name, value, expected)
    if not math.isfinite(value):
        raise _fail(name, value, expected)
    if (minimum is not None and value < minimum) or (above is not None and value <= above):
        raise _fail(name, value, expected)
    return float(value)


def integer(name: str, value: Any, *, minimum: int | None = None) -> int:
    """An ``int`` (not a bool, not a float), ``>= minimum`` when given."""
    expected = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, value, expected)
    if minimum is not None and value < minimum:
        raise _fail(name, value, expected)
    return int(value)


def flag(name: str, value: Any) -> bool:
    """A real ``bool``: ``"false"`` is a non-empty string, so it must not pass as True."""
    if not isinstance(value, bool):
        raise _fail(name, value, "True or False")
    return value


def choice(name: str, value: Any, allowed: Collection[str]) -> str:
    """One of ``allowed`` (strings)."""
    if not isinstance(value, str) or value not in allowed:
        raise _fail(name, value, f"one of {sorted(allowed)}")
    return value


def mapping(name: str, value: Any, *, optional: bool = True) -> dict[str, Any]:
    """A mapping with string keys (None means empty when ``optional``), as a fresh dict."""
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise _fail(name, value, "a dict with string keys" + (" or None" if optional else ""))
    return dict(value)

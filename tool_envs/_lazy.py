"""Lazy re-exports, so importing a package does not import all of its heavy modules.

A package lists its lazy names once, as ``{name: module}``, and mirrors the table in an
``if TYPE_CHECKING:`` block of imports, so type checkers and IDEs see the names that run-time
``__getattr__`` resolves (``tests/test_exports.py`` keeps the two in step)::

    _LAZY = {"RolloutEngine": "tool_envs.rollout.engine"}

    if TYPE_CHECKING:
        from tool_envs.rollout.engine import RolloutEngine

    __getattr__ = lazy_exports(__name__, _LAZY)
    __dir__ = lazy_dir(globals(), _LAZY)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]`` on first access of ``name``."""

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def lazy_dir(namespace: Mapping[str, Any], table: Mapping[str, str]) -> Callable[[], list[str]]:
    """A module ``__dir__`` that lists the lazy names too (tab completion, ``dir(module)``).

    ``namespace`` is the module's ``globals()``, read at each call.
    """

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __dir__

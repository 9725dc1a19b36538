"""Pickling an object that holds live resources (a client, a lock, a worker process).

Envs are pickled to reach worker processes and cloned by ``copy``; what cannot travel is left
behind, and the copy makes its own: on first use (a cleared attribute) or in ``__setstate__``
(a dropped one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["state_without"]


def state_without(
    obj: object, *, cleared: Iterable[str] = (), dropped: Iterable[str] = ()
) -> dict[str, Any]:
    """A copy of ``obj.__dict__`` for ``__getstate__``: ``cleared`` attributes set to None
    (the copy builds them again on first use), ``dropped`` ones left out."""
    state = dict(obj.__dict__)
    for name in cleared:
        state[name] = None
    for name in dropped:
        state.pop(name, None)
    return state

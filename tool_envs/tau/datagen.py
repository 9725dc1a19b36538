"""What every domain's seeded data generator shares: drawing ids that are not taken yet, reading
the fixed catalogues written as text tables, and the tables of the shipped env (seed 0) built
once per process."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def new_id(rng: random.Random, taken: set[str], make: Callable[[random.Random], str]) -> str:
    """``make(rng)`` drawn again until it is not in ``taken``; the id is added to ``taken``."""
    while True:
        value = make(rng)
        if value not in taken:
            taken.add(value)
            return value


def table_rows(table: str) -> list[list[str]]:
    """The stripped ``;``-separated cells of each row of a text table; a line that starts with a
    space continues the row above (so a long row can wrap)."""
    rows: list[str] = []
    for line in table.strip().splitlines():
        if line.startswith(" "):
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    return [[cell.strip() for cell in row.split(";")] for row in rows]


@dataclass(frozen=True)
class SeedTables:
    """A domain's ``load_tables``: the tables ``generate(0)`` builds, once per process.

    The result is shared: treat it as read-only (episodes change records through
    :class:`~tool_envs.tau.db.Database`, never these dicts).
    """

    generate: Callable[[int], Any]

    def __call__(self) -> Any:
        return _generated(self.generate)


@functools.cache
def _generated(generate: Callable[[int], Any]) -> Any:
    return generate(0)

"""Pick drafts from every family, split them, and assemble problems and rows.

Splitting is by parameters: every (family, variant) pair is one task and lands in exactly one
split, so a test task shares its family with train tasks but never its parameters (a different
k, tie rule, base, direction or edge rule). Each family's variants are shuffled and
spread evenly over one sequence; the splits take consecutive stretches of it, so every split
draws on every family in proportion to its size.
"""

from __future__ import annotations

import random
from typing import Any

from tool_envs.code.problems.assemble import assemble
from tool_envs.code.problems.families import FAMILIES
from tool_envs.code.problems.model import CodeProblem, Draft, Family
from tool_envs.core.once import built_once

DEFAULT_SIZES: dict[str, int] = {"train": 320, "test": 72}


def draft_pool() -> list[tuple[Family, Draft]]:
    """Every (family, draft) pair, in a fixed order; raises on a repeated name or variant."""
    pool: list[tuple[Family, Draft]] = []
    names: set[str] = set()
    for fam in FAMILIES:
        if fam.name in names:
            raise ValueError(f"two problem families are named {fam.name!r}")
        names.add(fam.name)
        keys: set[str] = set()
        for draft in fam.drafts():
            if draft.key in keys:
                raise ValueError(f"family {fam.name!r} has two variants keyed {draft.key!r}")
            keys.add(draft.key)
            pool.append((fam, draft))
    return pool


def _spread(pool: list[tuple[Family, Draft]], rng: random.Random) -> list[tuple[Family, Draft]]:
    """Shuffle each family's drafts and interleave families evenly (a stratified order)."""
    by_family: dict[str, list[tuple[Family, Draft]]] = {}
    for fam, draft in pool:
        by_family.setdefault(fam.name, []).append((fam, draft))
    placed: list[tuple[float, str, tuple[Family, Draft]]] = []
    for name, members in by_family.items():
        rng.shuffle(members)
        offset = rng.random()
        for index, member in enumerate(members):
            placed.append(((index + offset) / len(members), name, member))
    placed.sort(key=lambda item: (item[0], item[1]))
    return [member for _, _, member in placed]


def generate_code_problems(
    sizes: dict[str, int] | None = None, seed: int = 0
) -> dict[str, list[CodeProblem]]:
    """Problems per split (with their broken variants); the same arguments give the same output."""
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    if any(not isinstance(n, int) or n < 0 for n in sizes.values()):
        raise ValueError(f"split sizes must be non-negative integers, got {sizes}")
    rng = random.Random(seed)
    order = _spread(draft_pool(), rng)
    if sum(sizes.values()) > len(order):
        raise ValueError(
            f"asked for {sum(sizes.values())} tasks ({sizes}) but the {len(FAMILIES)} families "
            f"have only {len(order)} distinct variants"
        )
    splits: dict[str, list[CodeProblem]] = {}
    start = 0
    for split, size in sizes.items():
        chosen = order[start : start + size]
        start += size
        splits[split] = [
            assemble(fam, draft, seed=seed, split=split, number=number)
            for number, (fam, draft) in enumerate(chosen)
        ]
    return splits


def generate_splits(
    sizes: dict[str, int] | None = None, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """CodeExec task rows per split (no broken variants in them)."""
    problems = generate_code_problems(sizes, seed)
    return {split: [p.row() for p in items] for split, items in problems.items()}


@built_once
def default_problems() -> dict[str, list[CodeProblem]]:
    """The shipped problems, with their broken variants (for tests and audits)."""
    return generate_code_problems()


@built_once
def default_splits() -> dict[str, list[dict[str, Any]]]:
    """The task set shipped with the env (also written to ``datasets/code_tasks``)."""
    return {split: [p.row() for p in items] for split, items in default_problems().items()}

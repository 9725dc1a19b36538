"""The env seed of a GRPO group: one formula for every path that plays groups.

Every episode of a group plays the same task state (so rewards differ only by the policy), and
groups differ by training step, process and position. The GRPO ``rollout_func`` and the
asynchronous rollout worker both seed their groups here.
"""

from __future__ import annotations

SEED_RANGE = 2**31
"""Seeds stay below this (what NumPy, Python's ``random`` and vLLM all accept)."""


def group_seed(seed: int, group: int, *, step: int = 0, rank: int = 0) -> int:
    """The env seed of group ``group`` at training step ``step`` on process ``rank``, from the
    run's ``seed``; distinct for neighbouring groups, steps and ranks."""
    return (seed * 1_000_003 + step * 10_007 + rank * 101 + group) % SEED_RANGE


def group_seeds(
    count: int, group_size: int, seed: int, *, step: int = 0, rank: int = 0
) -> list[int]:
    """One seed per episode of ``count``, the same for each block of ``group_size`` (a group)."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    return [group_seed(seed, i // group_size, step=step, rank=rank) for i in range(count)]

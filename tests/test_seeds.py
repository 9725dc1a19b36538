"""One seeding formula for GRPO groups, the GRPO rollout_func's and the async worker's alike."""

from types import SimpleNamespace

import pytest

from tool_envs.integrations.trl.rollout_func import group_seeds as trainer_group_seeds
from tool_envs.rollout.seeds import group_seed, group_seeds


def test_the_formula_gives_the_seeds_both_paths_gave_before():
    # rollout_func: (seed * 1_000_003 + step * 10_007 + rank * 101) % 2**31 plus the group index;
    # the async worker: (seed * 1_000_003 + group_id) % 2**31. Resumed runs replay the same tasks.
    for seed, step, rank, group in [(0, 0, 0, 0), (42, 7, 3, 5), (2**30, 10**6, 1, 2**31 - 1)]:
        base = (seed * 1_000_003 + step * 10_007 + rank * 101) % 2**31
        assert group_seed(seed, group, step=step, rank=rank) == (base + group) % 2**31
    assert [group_seed(9, g) for g in range(3)] == [(9 * 1_000_003 + g) % 2**31 for g in range(3)]


def test_a_group_shares_its_seed_and_groups_differ():
    seeds = group_seeds(6, 3, seed=1, step=2, rank=1)
    assert seeds[:3] == [seeds[0]] * 3 and seeds[3:] == [seeds[3]] * 3 and seeds[0] != seeds[3]
    assert group_seeds(2, 1, seed=1, step=3) != group_seeds(2, 1, seed=1, step=2)
    with pytest.raises(ValueError, match="group_size"):
        group_seeds(2, 0, seed=1)


def test_the_rollout_func_seeds_its_groups_with_the_formula():
    trainer = SimpleNamespace(
        state=SimpleNamespace(global_step=4),
        accelerator=SimpleNamespace(process_index=1),
        args=SimpleNamespace(seed=11),
    )
    assert trainer_group_seeds(8, 4, trainer) == group_seeds(8, 4, 11, step=4, rank=1)

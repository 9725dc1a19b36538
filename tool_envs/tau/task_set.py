"""Write a generated task set of a tau domain, of any size, as a dataset folder.

The shipped splits (600 train, 120 test) are enough to test with; GRPO needs new tasks at every
step (a model that memorises a few hundred tasks teaches nothing), and a fair held-out score
needs customers and orders no training task used. ``tool-envs tau-tasks`` writes both.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from tool_envs.data import DatasetCardInfo, write_dataset
from tool_envs.tau.taskgen import TaskSource

DOMAINS = ("retail", "airline", "healthcare", "doordash", "telecom")


def task_source(domain: str) -> TaskSource:
    """The :class:`TaskSource` of a shipped tau domain, by its short name."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown tau domain {domain!r}; choose from {list(DOMAINS)}")
    return importlib.import_module(f"tool_envs.tau.domains.{domain}.tasks").TASKS


def write_task_set(
    folder: str | os.PathLike[str],
    domain: str,
    sizes: Mapping[str, int],
    *,
    categories: Sequence[str] | None = None,
    heldout_splits: Sequence[str] = (),
    heldout_share: float = 0.2,
    seed: int = 0,
) -> Path:
    """Generate ``sizes`` (split name -> tasks) of ``domain`` and write them to ``folder``.

    No task is in two splits; customers of ``heldout_splits`` appear in no other split. The
    folder loads with ``tool_envs.data.load_tasks(folder, split=...)``, the recipes'
    ``tasks: [folder]`` and ``datasets.load_dataset``.
    """
    for split, size in sizes.items():
        if size < 1:
            raise ValueError(f"split {split!r} needs at least 1 task, got {size}")
    source = task_source(domain)
    splits = source.generate(
        dict(sizes),
        seed,
        categories=categories,
        heldout_splits=heldout_splits,
        heldout_share=heldout_share,
    )
    chosen = "all categories" if categories is None else "categories " + ", ".join(categories)
    held = (
        f"; customers of {', '.join(heldout_splits)} ({heldout_share:.0%} of them, by hashed id) "
        "appear in no other split"
        if heldout_splits
        else ""
    )
    card = DatasetCardInfo(
        pretty_name=f"tool-envs {source.env_id.split('/')[-1]} generated tasks",
        description=(
            f"Customer-service tasks of the {domain} domain for `{source.env_id}` ({chosen}), "
            f"each with a simulated user's scenario, gold actions and required outputs; no task "
            f"occurs in two splits{held}."
        ),
        tags=("tool-use", "agents", "reinforcement-learning", "customer-service", "tau-bench"),
        how_built=(
            f"`tool-envs tau-tasks` (`generate({dict(sizes)}, seed={seed}, "
            f"categories={None if categories is None else list(categories)}, "
            f"heldout_splits={list(heldout_splits)}, heldout_share={heldout_share})`)."
        ),
    )
    return write_dataset(folder, splits, card=card)

"""Write a generated Calculator-v0 task set of any size as a dataset folder.

The shipped set (``datasets/calculator``) has 369 single-operation training tasks: enough to
test with, too few to train on. A model fitted on them memorises them (greedy success on them
was 0.52 against 0.32 on unseen tasks), and GRPO on the same tasks then rewards recall instead of
the skill. ``tool-envs calculator-tasks`` writes as many distinct tasks as a run needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tool_envs.calculator.tasks import generate_splits
from tool_envs.data import DatasetCardInfo, write_dataset


def write_task_set(
    folder: str | os.PathLike[str],
    sizes: Mapping[str, int],
    *,
    difficulty: int | None = None,
    seed: int = 0,
) -> Path:
    """Generate ``sizes`` (split name -> tasks) and write them, with a dataset card, to ``folder``.

    No expression appears in two splits, so a ``heldout`` split is unseen by ``train`` and
    ``test``. The folder loads with ``tool_envs.data.load_tasks(folder, split=...)``, the
    recipes' ``tasks: [folder]``, and ``datasets.load_dataset``.
    """
    for split, size in sizes.items():
        if size < 1:
            raise ValueError(f"split {split!r} needs at least 1 task, got {size}")
    splits = generate_splits(dict(sizes), seed, difficulty=difficulty)
    operations = "a mix of 1-3" if difficulty is None else str(difficulty)
    card = DatasetCardInfo(
        pretty_name="tool-envs Calculator-v0 generated tasks",
        description=(
            f"Arithmetic questions of {operations} operation(s) on small integers for "
            "`tool_envs/Calculator-v0`, with gold tool calls and the answer; no expression "
            "occurs in two splits."
        ),
        tags=("tool-use", "agents", "reinforcement-learning", "arithmetic"),
        how_built=(
            f"`tool-envs calculator-tasks` (`generate_splits({dict(sizes)}, seed={seed}, "
            f"difficulty={difficulty})`)."
        ),
    )
    return write_dataset(folder, splits, card=card)

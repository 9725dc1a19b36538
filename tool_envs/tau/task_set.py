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


def compact_policy(domain: str) -> str:
    """The domain's compact policy: the same rules in far fewer tokens, for small-model runs.

    A tiny model's tokenizer spends about 2,000 tokens on retail's full policy, most of every
    prompt; the compact wording (``policy_compact.md``) keeps every rule. The env does not read
    the policy, so its tools, rules and reward are the same either way.
    """
    task_source(domain)  # an unknown domain is named with the known ones
    path = Path(__file__).parent / "domains" / domain / "policy_compact.md"
    if not path.is_file():
        raise ValueError(f"the {domain} domain has no compact policy (policy_compact.md)")
    return path.read_text(encoding="utf-8")


def write_task_set(
    folder: str | os.PathLike[str],
    domain: str,
    sizes: Mapping[str, int],
    *,
    categories: Sequence[str] | None = None,
    heldout_splits: Sequence[str] = (),
    heldout_share: float = 0.2,
    prompt: str = "full",
    seed: int = 0,
    databases: int = 1,
) -> Path:
    """Generate ``sizes`` (split name -> tasks) of ``domain`` and write them to ``folder``.

    No task is in two splits; customers of ``heldout_splits`` appear in no other split. The
    folder loads with ``tool_envs.data.load_tasks(folder, split=...)``, the recipes'
    ``tasks: [folder]`` and ``datasets.load_dataset``. ``prompt="compact"`` gives the rows the
    domain's :func:`compact_policy` as their system prompt. ``databases`` > 1 draws the tasks
    from that many generated databases (see :meth:`TaskSource.generate`).
    """
    if prompt not in ("full", "compact"):
        raise ValueError(f"prompt must be 'full' or 'compact', got {prompt!r}")
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
        policy=compact_policy(domain) if prompt == "compact" else None,
        databases=databases,
    )
    chosen = "all categories" if categories is None else "categories " + ", ".join(categories)
    held = (
        f"; customers of {', '.join(heldout_splits)} ({heldout_share:.0%} of them, by hashed id) "
        "appear in no other split"
        if heldout_splits
        else ""
    )
    if databases > 1:
        held += (
            f"; tasks are drawn from {databases} generated databases (extra_info.db_seed; "
            "0 is the env's shipped database)"
        )
    card = DatasetCardInfo(
        pretty_name=f"tool-envs {source.env_id.split('/')[-1]} generated tasks",
        description=(
            f"Customer-service tasks of the {domain} domain for `{source.env_id}` ({chosen}), "
            f"each with a simulated user's scenario, gold actions and required outputs; no task "
            f"occurs in two splits{held}. System prompt: the domain's {prompt} policy."
        ),
        tags=("tool-use", "agents", "reinforcement-learning", "customer-service", "tau-bench"),
        how_built=(
            f"`tool-envs tau-tasks` (`generate({dict(sizes)}, seed={seed}, "
            f"categories={None if categories is None else list(categories)}, "
            f"heldout_splits={list(heldout_splits)}, heldout_share={heldout_share}, "
            f"prompt={prompt!r}{f', databases={databases}' if databases > 1 else ''})`)."
        ),
    )
    return write_dataset(folder, splits, card=card)

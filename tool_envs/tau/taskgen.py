"""Pieces every tau task generator shares."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from typing import Any

from tool_envs.tau.task import tau_task_row


def category_quotas(weights: Mapping[str, float], size: int) -> dict[str, int]:
    """Tasks per category for a split of ``size``: proportional to ``weights``, rounded by the
    largest remainder (ties in table order), so every split has exactly ``size`` tasks and the
    same mix of categories."""
    total = sum(weights.values())
    exact = {category: size * weight / total for category, weight in weights.items()}
    counts = {category: int(value) for category, value in exact.items()}
    order = list(exact)
    by_remainder = sorted(exact, key=lambda c: (counts[c] - exact[c], order.index(c)))
    for category in by_remainder[: size - sum(counts.values())]:
        counts[category] += 1
    return counts


Finished = tuple[dict[str, Any], list[dict[str, Any]], list[str], list[str]]
"""A drawn task: (user scenario, gold actions, required outputs, tags)."""


def generate_task_rows(
    *,
    sizes: Mapping[str, int],
    seed: int,
    weights: Mapping[str, float],
    draw: Callable[[random.Random, str], Finished | None],
    accept: Callable[[list[dict[str, Any]], list[str]], list[str] | None],
    env_id: str,
    domain: str,
    policy: str,
    attempts_per_task: int = 200,
) -> dict[str, list[dict[str, Any]]]:
    """Task rows per split, every category in the proportions of ``weights``; no task (same
    gold actions and outputs) in two splits, rows of a split shuffled.

    ``draw(rng, category)`` proposes a task or None; ``accept(actions, outputs)`` checks it on
    the database and returns its final outputs, or None to reject it. Row ids are
    ``<domain>-<split>-<number>``; ``extra_info`` names the split, category and tags.
    """
    rng = random.Random(seed)
    seen: set[str] = set()
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, size in sizes.items():
        drafts: list[tuple[str, Finished]] = []
        for category, quota in category_quotas(weights, size).items():
            made, attempts = 0, 0
            while made < quota:
                attempts += 1
                if attempts > attempts_per_task * (quota + 1):
                    raise RuntimeError(f"cannot generate enough '{category}' tasks")
                finished = draw(rng, category)
                if finished is None:
                    continue
                scenario, actions, outputs, tags = finished
                key = json.dumps([actions, outputs], sort_keys=True)
                if key in seen:
                    continue
                accepted = accept(actions, outputs)
                if accepted is None:
                    continue
                seen.add(key)
                drafts.append((category, (scenario, actions, accepted, tags)))
                made += 1
        rng.shuffle(drafts)
        splits[split] = [
            tau_task_row(
                env_id=env_id,
                domain=domain,
                task_id=f"{domain}-{split}-{number:04d}",
                policy=policy,
                scenario=scenario,
                actions=actions,
                outputs=outputs,
                extra_info={"split": split, "category": category, "tags": tags},
            )
            for number, (category, (scenario, actions, outputs, tags)) in enumerate(drafts)
        ]
    return splits

"""``tool-envs tau-tasks``: a generated task set of a tau domain, any size, offline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tool_envs.commands._task_sets import add_task_set_output


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from tool_envs.tau.task_set import DOMAINS

    tasks = subparsers.add_parser(
        "tau-tasks",
        help="write a generated task set of a tau domain, any size, customers held out (offline)",
    )
    tasks.add_argument("--domain", required=True, choices=DOMAINS, help="which tau domain")
    add_task_set_output(tasks, default="train=2000 test=100 heldout=200")
    tasks.add_argument(
        "--category",
        action="append",
        metavar="NAME",
        help="a task category to draw, repeatable (default: all, in the domain's shares)",
    )
    tasks.add_argument(
        "--heldout-split",
        action="append",
        metavar="NAME",
        help="a split whose customers no other split uses (default: heldout, if it is a split)",
    )
    tasks.add_argument(
        "--heldout-share",
        type=float,
        default=0.2,
        help="share of the customers kept for the held-out splits (default 0.2)",
    )
    tasks.add_argument(
        "--prompt",
        choices=("full", "compact"),
        default="full",
        help="the rows' system prompt: the domain's policy, or its compact wording of the same "
        "rules (for small models; the env, its rules and reward are the same)",
    )
    tasks.add_argument(
        "--databases",
        type=int,
        default=1,
        metavar="N",
        help="draw tasks from N generated databases (default 1: the env's own); one holds a few "
        "thousand distinct tasks of a category, many hold as many as a training run needs",
    )
    tasks.add_argument("--seed", type=int, default=0)
    return tasks


def run(args: argparse.Namespace) -> int:
    from tool_envs.tau.task_set import write_task_set

    sizes = dict(args.split or [("train", 2000), ("test", 100), ("heldout", 200)])
    heldout = args.heldout_split or [name for name in ("heldout",) if name in sizes]
    try:
        folder = write_task_set(
            args.out,
            args.domain,
            sizes,
            categories=args.category,
            heldout_splits=heldout,
            heldout_share=args.heldout_share,
            prompt=args.prompt,
            seed=args.seed,
            databases=args.databases,
        )
    except (ValueError, RuntimeError) as exc:
        print(f"tool-envs tau-tasks: error: {exc}", file=sys.stderr)
        return 2
    shown = ", ".join(f"{name} {count}" for name, count in sizes.items())
    print(f"wrote {shown} {args.domain} tasks to {folder}")
    return 0

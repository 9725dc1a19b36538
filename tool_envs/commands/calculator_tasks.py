"""``tool-envs calculator-tasks``: a generated Calculator-v0 task set of any size, offline."""

from __future__ import annotations

import argparse
from typing import Any

from tool_envs.commands._task_sets import add_task_set_output


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    tasks = subparsers.add_parser(
        "calculator-tasks", help="write a generated Calculator-v0 task set of any size (offline)"
    )
    add_task_set_output(tasks, default="train=8000 test=100 heldout=200")
    tasks.add_argument(
        "--difficulty", type=int, choices=(1, 2, 3), help="operations per task (default: a mix)"
    )
    tasks.add_argument("--seed", type=int, default=0)
    return tasks


def run(args: argparse.Namespace) -> int:
    from tool_envs.calculator.task_set import write_task_set

    sizes = dict(args.split or [("train", 8000), ("test", 100), ("heldout", 200)])
    folder = write_task_set(args.out, sizes, difficulty=args.difficulty, seed=args.seed)
    shown = ", ".join(f"{name} {count}" for name, count in sizes.items())
    print(f"wrote {shown} Calculator-v0 tasks to {folder}")
    return 0

"""Options shared by the commands that write a generated task set."""

from __future__ import annotations

import argparse

from tool_envs._argtypes import split_size


def add_task_set_output(parser: argparse.ArgumentParser, default: str) -> None:
    """``--out`` and ``--split NAME=COUNT``, shared by the task-set commands."""
    parser.add_argument("--out", required=True, help="dataset folder to write")
    parser.add_argument(
        "--split",
        action="append",
        type=split_size,
        metavar="NAME=COUNT",
        help=f"a split and its size, repeatable (default: {default})",
    )

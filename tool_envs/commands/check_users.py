"""``tool-envs check-users``: re-check the simulated users of a saved eval run, no replay."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    check_users = subparsers.add_parser(
        "check-users",
        help="re-check the simulated users of a saved eval run (no replay); faults to "
        "RUN/user_faults.jsonl",
    )
    check_users.add_argument("run", help="the eval run's folder (its --out)")
    return check_users


def run(args: argparse.Namespace) -> int:
    from tool_envs.eval.commands import check_users_command

    return check_users_command(args.run)

"""``tool-envs check``: gymnasium's ``check_env`` and one gold episode on an env."""

from __future__ import annotations

import argparse
from typing import Any

from tool_envs._argtypes import json_object


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    check = subparsers.add_parser(
        "check", help="run gymnasium's check_env and one gold episode on an env"
    )
    check.add_argument("env_id", help="registered env id, e.g. tool_envs/Calculator-v0")
    check.add_argument(
        "--env-kwargs",
        type=json_object,
        default={},
        metavar="JSON",
        help="gymnasium.make arguments for the env",
    )
    return check


def run(args: argparse.Namespace) -> int:
    from tool_envs.eval.commands import check_command

    return check_command(args.env_id, args.env_kwargs)

"""``tool-envs list``: the registered environments, one line each."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    return subparsers.add_parser("list", help="list the registered environments")


def run(args: argparse.Namespace) -> int:
    import tool_envs

    for env_id, description in tool_envs.list_envs().items():
        print(f"{env_id:32} {description}")
    return 0

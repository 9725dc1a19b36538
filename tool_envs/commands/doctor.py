"""``tool-envs doctor``: the code sandbox's isolation level here, and one check run."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    return subparsers.add_parser(
        "doctor", help="report the code sandbox's isolation level here and run one check"
    )


def run(args: argparse.Namespace) -> int:
    from tool_envs.code.sandbox import doctor

    print(doctor())
    return 0

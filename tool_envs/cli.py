"""The ``tool-envs`` command: list the envs, run the offline demo, evaluate and check envs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from tool_envs._argtypes import json_object as json_object  # its old import path
from tool_envs.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    """The ``tool-envs`` parser with every command of :data:`tool_envs.commands.COMMANDS`."""
    parser = argparse.ArgumentParser(prog="tool-envs", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command_parser = command.add_parser(subparsers)
        command_parser.set_defaults(command_run=command.run, command_parser=command_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.command_run(args)


if __name__ == "__main__":
    raise SystemExit(main())

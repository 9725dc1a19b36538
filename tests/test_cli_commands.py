"""The ``tool-envs`` command's one pattern: each subcommand is a module of
:mod:`tool_envs.commands` with ``add_parser(subparsers)`` and ``run(args) -> int``, and
``tool_envs.cli`` only registers and dispatches them."""

from __future__ import annotations

import argparse
import inspect
import pkgutil

import pytest

import tool_envs.commands as commands
from tool_envs.cli import build_parser, main
from tool_envs.commands import COMMANDS


def test_every_command_module_is_registered_and_has_the_two_functions():
    modules = {
        f"tool_envs.commands.{info.name}"
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    }
    assert modules == {command.__name__ for command in COMMANDS}
    for command in COMMANDS:
        assert list(inspect.signature(command.add_parser).parameters) == ["subparsers"], command
        assert list(inspect.signature(command.run).parameters) == ["args"], command


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_parser_lists_the_commands_in_order_and_no_option_takes_the_dispatch_names():
    subparsers = _subcommands(build_parser())
    assert list(subparsers) == [
        "list", "demo", "tiny-model", "calculator-tasks", "tau-tasks", "eval", "check",
        "check-users", "doctor", "serve", "serve-mcp",
    ]  # fmt: skip
    for name, parser in subparsers.items():
        dests = {action.dest for action in parser._actions}
        assert not dests & {"command_run", "command_parser"}, name


def test_main_dispatches_to_the_commands_run_and_returns_its_status(capsys):
    assert main(["list"]) == 0
    assert "tool_envs/Calculator-v0" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--episodes", "0"])  # a usage mistake found by run: its own parser says it
    assert exit_info.value.code == 2
    assert "tool-envs demo: error: --episodes must be at least 1" in capsys.readouterr().err

"""The ``tool-envs`` subcommands, one module each.

A command module has two functions, and :func:`tool_envs.cli.main` only registers and
dispatches them:

- ``add_parser(subparsers) -> argparse.ArgumentParser``: adds the command's parser (its name,
  help and options) and returns it. Module-level imports stay light: what the command needs to
  run is imported inside ``run``, so ``tool-envs --help`` imports no torch, TRL or MCP.
- ``run(args) -> int``: runs the command with the parsed arguments and returns the exit status
  (0 done, 2 bad input, 130 stopped by Ctrl-C). A usage mistake found after parsing is reported
  with ``args.command_parser.error(...)``: the command's own parser, which ``main`` sets
  (with ``args.command_run``, the command's ``run``; no option may use those two names).

To add a command, write its module here and list it in :data:`COMMANDS` (the order is the order
of ``tool-envs --help``).
"""

from __future__ import annotations

from tool_envs.commands import (
    calculator_tasks,
    check,
    check_users,
    demo,
    doctor,
    list_envs,
    serve,
    serve_mcp,
    tau_tasks,
    tiny_model,
)
from tool_envs.commands import eval as eval_

COMMANDS = (
    list_envs,
    demo,
    tiny_model,
    calculator_tasks,
    tau_tasks,
    eval_,
    check,
    check_users,
    doctor,
    serve,
    serve_mcp,
)
"""Every command module, in the order ``tool-envs --help`` lists them."""

__all__ = ["COMMANDS"]

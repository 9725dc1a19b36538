"""``tool-envs serve-mcp``: a built-in MCP server (python sandbox, search) over stdio or HTTP.

Its options and its run live with the servers (:mod:`tool_envs.mcp.servers.cli`), which
``python -m tool_envs.mcp.servers`` runs too; this module only registers them here.
"""

from __future__ import annotations

import argparse
from typing import Any

from tool_envs.mcp.servers.cli import HELP, add_arguments  # argparse only, no mcp import


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    return add_arguments(subparsers.add_parser("serve-mcp", help=HELP, description=HELP))


def run(args: argparse.Namespace) -> int:
    from tool_envs.mcp.servers.cli import serve_mcp_command

    return serve_mcp_command(args)

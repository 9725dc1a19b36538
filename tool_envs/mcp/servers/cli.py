"""The ``serve-mcp`` command: ``tool-envs serve-mcp NAME [--transport stdio|http] [--port N]``.

Shared by the ``tool-envs`` command (:mod:`tool_envs.commands.serve_mcp` registers it) and
``python -m tool_envs.mcp.servers``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from tool_envs._argtypes import json_object
from tool_envs.mcp.servers import BUILTIN_SERVERS, DEFAULT_PORT, TRANSPORTS

HELP = "serve a built-in MCP server (python sandbox, search) over stdio or streamable HTTP"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("name", choices=sorted(BUILTIN_SERVERS), help="which server")
    parser.add_argument("--transport", default="stdio", choices=TRANSPORTS)
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP: port (path /mcp)")
    python = parser.add_argument_group("python server")
    python.add_argument("--time-limit", type=float, help="seconds per run (default 5)")
    python.add_argument("--memory-limit-mb", type=int, help="memory per run (default 512)")
    search = parser.add_argument_group("search server (defaults: $TOOL_ENVS_SEARCH_*)")
    search.add_argument("--provider", help="corpus (default), tavily, serper, bing, ddgs, http")
    search.add_argument(
        "--provider-kwargs", type=json_object, metavar="JSON", help="provider arguments"
    )
    search.add_argument("--cache", help="sqlite file of the search cache")
    search.add_argument("--cache-mode", choices=["read_write", "replay", "off"])
    return parser


def _options(args: argparse.Namespace) -> dict[str, Any]:
    if args.name == "python":
        pairs = {"time_limit_s": args.time_limit, "memory_limit_mb": args.memory_limit_mb}
    else:
        pairs = {
            "provider": args.provider,
            "provider_kwargs": args.provider_kwargs,
            "cache_path": args.cache,
            "cache_mode": args.cache_mode,
        }
    return {key: value for key, value in pairs.items() if value is not None}


def serve_mcp_command(args: argparse.Namespace) -> int:
    """Run the server the parsed arguments name; returns the exit status."""
    from tool_envs.errors import EnvConfigError, SandboxUnavailable
    from tool_envs.mcp.servers import serve

    try:
        serve(args.name, args.transport, args.host, args.port, **_options(args))
    except (EnvConfigError, SandboxUnavailable) as exc:
        print(f"serve-mcp: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tool_envs.mcp.servers", description=HELP)
    return serve_mcp_command(add_arguments(parser).parse_args(argv))

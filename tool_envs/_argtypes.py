"""argparse types shared by the ``tool-envs`` commands and ``python -m tool_envs.mcp.servers``.

At the bottom of the package (it imports nothing of it), so a family's own command line can use
them without importing the CLI that sits on top.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def json_object(text: str) -> dict[str, Any]:
    """argparse type for flags that take a JSON object (the ``tool-envs`` subcommands' too)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {type(value).__name__}")
    return value


def split_size(text: str) -> tuple[str, int]:
    """argparse type for ``NAME=COUNT``."""
    name, sep, count = text.partition("=")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=COUNT with COUNT >= 1, got {text!r}")
    return name, int(count)

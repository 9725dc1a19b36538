"""Server configuration in the common ``mcpServers`` JSON format (Claude Desktop, Cursor, ...).

.. code-block:: json

    {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "git":  {"command": "python", "args": ["-m", "mcp_server_git", "--repository", "."],
                 "env": {"GIT_AUTHOR_NAME": "bot"}, "cwd": "/tmp"},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}
    }}

An entry with ``command`` is a stdio server (a subprocess speaking MCP on stdin/stdout); an entry
with ``url`` is a streamable-HTTP server. :func:`load_servers` takes that dict or the path of a
JSON file holding it, and validates it with pydantic: errors name the server and the field. A
relative ``cwd`` in a file is taken relative to the file's folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tool_envs.errors import EnvConfigError

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")


class StdioServerSpec(BaseModel):
    """A server started as a subprocess that speaks MCP over its stdin and stdout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1, description="Executable to run (looked up on PATH).")
    args: tuple[str, ...] = Field(default=(), description="Command-line arguments.")
    env: dict[str, str] | None = Field(
        default=None, description="Extra environment variables, merged over a safe default set."
    )
    cwd: str | None = Field(default=None, description="Working directory of the server process.")
    type: Literal["stdio"] | None = Field(default=None, description="Optional transport tag.")
    disabled: bool = Field(default=False, description="Skip this server.")
    description: str | None = Field(default=None, description="Free text, for people.")

    @property
    def transport(self) -> str:
        return "stdio"


class HttpServerSpec(BaseModel):
    """A server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(pattern=r"^https?://", description="Endpoint URL, http:// or https://.")
    headers: dict[str, str] = Field(default_factory=dict, description="Sent with every request.")
    type: Literal["http", "streamable-http", "streamableHttp", "streamable_http"] | None = Field(
        default=None, description="Optional transport tag."
    )
    disabled: bool = Field(default=False, description="Skip this server.")
    description: str | None = Field(default=None, description="Free text, for people.")

    @property
    def transport(self) -> str:
        return "streamable-http"


ServerSpec = StdioServerSpec | HttpServerSpec


def spec_key(spec: ServerSpec) -> str:
    """What identifies a server process: the fields that change how it is started or reached."""
    return spec.model_dump_json(exclude={"disabled", "description", "type"})


EPISODE_DIR = "{episode_dir}"
"""Placeholder in a stdio server's ``args``, ``env`` values and ``cwd``: the folder of the
episode (with ``fresh_state``) or of the process (without), where a server can keep its files."""


def uses_episode_dir(spec: ServerSpec) -> bool:
    """Whether a stdio spec mentions :data:`EPISODE_DIR` anywhere."""
    if not isinstance(spec, StdioServerSpec):
        return False
    texts = [*spec.args, *(spec.env or {}).values(), spec.cwd or ""]
    return any(EPISODE_DIR in text for text in texts)


def with_episode_dir(spec: ServerSpec, folder: str, *, working_dir: bool = False) -> ServerSpec:
    """``spec`` with :data:`EPISODE_DIR` replaced by ``folder``; with ``working_dir``, the
    server also runs in ``folder`` unless its config sets ``cwd``. HTTP specs are unchanged."""
    if not isinstance(spec, StdioServerSpec):
        return spec

    def fill(text: str) -> str:
        return text.replace(EPISODE_DIR, folder)

    cwd = fill(spec.cwd) if spec.cwd is not None else (folder if working_dir else None)
    return spec.model_copy(
        update={
            "args": tuple(fill(arg) for arg in spec.args),
            "env": {k: fill(v) for k, v in spec.env.items()} if spec.env is not None else None,
            "cwd": cwd,
        }
    )


def load_servers(source: Mapping[str, Any] | str | Path) -> dict[str, ServerSpec]:
    """Validate an ``mcpServers`` config (a dict, or the path of a JSON file) into server specs.

    Disabled servers are left out. Raises EnvConfigError naming the server and field at fault.
    """
    base: Path | None = None
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        if not path.is_file():
            raise EnvConfigError(
                f"MCP server config {str(source)!r} is not a file; pass a dict "
                '{"mcpServers": {...}} or the path of a JSON file holding one'
            )
        try:
            source = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise EnvConfigError(
                f"MCP server config {str(path)!r} is not valid JSON: {exc}"
            ) from exc
        base = path.resolve().parent
    if not isinstance(source, Mapping) or not isinstance(source.get("mcpServers"), Mapping):
        raise EnvConfigError(
            'an MCP server config must be {"mcpServers": {"<name>": {"command": ..., "args": '
            '[...]} or {"url": ...}}}; got ' + _preview(source)
        )
    extra = sorted(set(source) - {"mcpServers"})
    if extra:
        raise EnvConfigError(f"unknown top-level keys {extra} in the MCP server config")
    servers: dict[str, ServerSpec] = {}
    for name, entry in source["mcpServers"].items():
        spec = _parse_server(str(name), entry, base)
        if not spec.disabled:
            servers[str(name)] = spec
    if not servers:
        raise EnvConfigError("the MCP server config names no (enabled) server")
    return servers


def _parse_server(name: str, entry: Any, base: Path | None) -> ServerSpec:
    if not SERVER_NAME.match(name):
        raise EnvConfigError(
            f"MCP server name {name!r} must be 1-48 letters, digits, '_' or '-' "
            "(it may become a prefix of tool names)"
        )
    if not isinstance(entry, Mapping):
        raise EnvConfigError(f"MCP server '{name}': expected an object, got {_preview(entry)}")
    if "command" in entry and "url" in entry:
        raise EnvConfigError(
            f"MCP server '{name}': give either 'command' (stdio) or 'url' (streamable HTTP), "
            "not both"
        )
    if "command" in entry:
        model: type[BaseModel] = StdioServerSpec
    elif "url" in entry:
        model = HttpServerSpec
    else:
        raise EnvConfigError(
            f"MCP server '{name}': needs 'command' (a stdio server) or 'url' (a streamable-HTTP "
            f"server); got keys {sorted(entry)}"
        )
    try:
        spec = model.model_validate(dict(entry))
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in error['loc'])}': {error['msg']}"
            for error in exc.errors()
        )
        allowed = ", ".join(model.model_fields)
        raise EnvConfigError(
            f"MCP server '{name}': {problems} (allowed fields: {allowed})"
        ) from exc
    if isinstance(spec, StdioServerSpec) and spec.cwd and base is not None:
        cwd = Path(spec.cwd).expanduser()
        if not cwd.is_absolute():
            spec = spec.model_copy(update={"cwd": str(base / cwd)})
    return spec  # type: ignore[return-value]


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

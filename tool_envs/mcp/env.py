"""``tool_envs/MCP-v0``: solve a task with the tools of any MCP servers.

The servers come from an ``mcpServers`` config (see :mod:`tool_envs.mcp.config`); their tools are
listed once, exposed to the model with the servers' own JSON schemas, and called through the
process-wide bridge in :mod:`tool_envs.mcp.client`, so a server starts once per process, not per
episode. The reward comes from the task's ``reward_spec["ground_truth"]`` (see
:mod:`tool_envs.mcp.reward`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tool_envs.core import options
from tool_envs.core.answers import EndsOnAnswer
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.tools import Tool, Toolset
from tool_envs.errors import EnvConfigError, TaskRowError
from tool_envs.mcp.client import (
    MCPCallError,
    MCPServerConnection,
    MCPToolError,
    get_connection,
    result_text,
    shared_state_dir,
)
from tool_envs.mcp.config import ServerSpec, load_servers, uses_episode_dir, with_episode_dir
from tool_envs.mcp.reward import (
    GroundTruth,
    RewardConfig,
    RewardWeights,
    compute_reward,
    parse_ground_truth,
)

NAMESPACES = ("auto", "always", "never")
ANSWER_FORMATS = ("reply", "tag")
SEPARATOR = "__"
NUDGE = "Use the tools, or give your final answer as <answer>...</answer>."


@dataclass(frozen=True)
class _RemoteTool:
    """The Python side of one MCP tool: a picklable callable taking the call's arguments."""

    env: MCPEnv
    server: str
    tool: str

    def __call__(self, **arguments: Any) -> str:
        return self.env._invoke(self.server, self.tool, arguments)


class MCPEnv(EndsOnAnswer, ToolEnv):
    """Use the tools of one or more MCP servers to solve a task, then give the final answer.

    **Tools.** Every tool of every configured server, with its own input schema, minus those
    ``allow_tools`` leaves out. A task row may name the servers it needs
    (``extra_info["servers"]``): the other servers' tools are hidden (and not started) for that
    episode. Names are the servers' own, prefixed ``<server>__<tool>`` only where two visible
    servers share a tool name (``namespace="auto"``), always (``"always"``) or never
    (``"never"``: a clash is an error).

    **Calls.** Arguments are checked against the schema, then sent to the server with a
    ``call_timeout_s`` timeout. A result with ``is_error``, a timeout, a crashed server and a
    rejected request all become ``Error: ...`` observations. A server that died (or could not be
    reached) is restarted and the call retried up to ``retries`` times; timeouts are not retried
    (the server may still be running the call). ``info["mcp_calls"]`` is the episode's call log:
    ``[{"server", "tool", "name", "arguments", "error", "seconds", "attempts"}]``.

    **Servers** start on first use and are shared by every env and episode in the process (see
    :func:`tool_envs.mcp.client.get_connection`); ``close()`` leaves them running for other envs,
    :meth:`stop_servers` stops this env's, and all are stopped at interpreter exit. Servers that
    keep state (files, databases, git repositories) carry it across episodes and envs.

    **fresh_state=True** gives every episode servers of its own: at each reset the env makes a
    new, empty folder for the episode, and the stdio servers the episode uses are started anew
    for it alone (about a second each, not shared with other envs), with that folder as their
    working directory (unless the config sets ``cwd``) and ``{episode_dir}`` in their ``args``,
    ``env`` and ``cwd`` replaced by its path. They are stopped and the folder is deleted when the
    episode ends (next reset, ``close()``, garbage collection or exit). So every episode starts
    from the server's initial state, provided the server keeps its state in memory, in files
    under its working directory (a relative ``--db-path``), or in files the config places under
    ``{episode_dir}`` (e.g. ``"env": {"MEMORY_FILE_PATH": "{episode_dir}/memory.json"}``). Not
    covered: files the config names elsewhere (an absolute database path, a repository
    outside the folder) and servers reached over HTTP, which are only reconnected. Without
    ``fresh_state``, ``{episode_dir}`` is one folder per process.

    **End and reward.** The episode ends with the final answer: any turn without tool calls
    (``answer_format="reply"``), or the first such turn holding ``<answer>...</answer>``
    (``"tag"``; a turn with neither gets a reminder). The reward follows
    ``reward_spec["ground_truth"]``: required tools, the expected tool sequence, call limits and
    the answer, combined as ``reward`` configures (see :mod:`tool_envs.mcp.reward`).

    Args:
        tasks: Task rows or a source for :func:`tool_envs.data.load_tasks`; by default the task
            set of :mod:`tool_envs.mcp.tasks` (``datasets/mcp_tasks``).
        servers: ``{"mcpServers": {...}}`` or the path of a JSON file holding it; by default
            the servers of that task set.
        allow_tools: Shell-style patterns (``"get_*"``, ``"git__*"``, ``"time/convert_time"``)
            matched against ``tool``, ``server__tool`` and ``server/tool``; None allows all.
        call_timeout_s: Per-call timeout in seconds.
        connect_timeout_s: Seconds a server gets to start and answer ``initialize`` (and to list
            its tools); one that does not is stopped and the call fails with an error.
        retries: Retries of a call whose server died or could not be reached.
        namespace: ``"auto"``, ``"always"`` or ``"never"`` (see above).
        answer_format: ``"reply"`` or ``"tag"`` (see above).
        reward: A :class:`RewardConfig` or a dict of its fields (``weights`` may be a dict).
        fresh_state: Servers and a working folder of its own for every episode (see above).
        parser: As for every ToolEnv.
        render_mode: As for every ToolEnv.
    """

    nudge = NUDGE

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        servers: Mapping[str, Any] | str | Path | None = None,
        allow_tools: Sequence[str] | None = None,
        call_timeout_s: float = 30.0,
        connect_timeout_s: float = 60.0,
        retries: int = 1,
        namespace: str = "auto",
        answer_format: str = "reply",
        reward: RewardConfig | Mapping[str, Any] | None = None,
        fresh_state: bool = False,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        for name, value, allowed in (
            ("namespace", namespace, NAMESPACES),
            ("answer_format", answer_format, ANSWER_FORMATS),
        ):
            if value not in allowed:
                raise EnvConfigError(f"{name}={value!r} is not one of {allowed}")
        call_timeout_s = options.number("call_timeout_s", call_timeout_s, above=0)
        connect_timeout_s = options.number("connect_timeout_s", connect_timeout_s, above=0)
        retries = options.integer("retries", retries, minimum=0)
        if isinstance(allow_tools, str):
            raise EnvConfigError("allow_tools must be a list of patterns, not one string")
        if allow_tools is not None and not (
            isinstance(allow_tools, (list, tuple)) and all(isinstance(p, str) for p in allow_tools)
        ):
            raise EnvConfigError(f"allow_tools={allow_tools!r} must be a list of patterns or None")
        self._server_source = servers
        self._servers: dict[str, ServerSpec] | None = (
            load_servers(servers) if servers is not None else None
        )
        self.allow_tools = list(allow_tools) if allow_tools is not None else None
        self.call_timeout_s = call_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.retries = retries
        self.namespace = namespace
        self.answer_format = answer_format
        self.reward_config = _reward_config(reward)
        self.fresh_state = options.flag("fresh_state", fresh_state)
        self._connections: dict[str, MCPServerConnection] = {}
        self._episode = _EpisodeServers()
        self._finalizer = weakref.finalize(self, _EpisodeServers.stop, self._episode)
        self._toolsets: dict[tuple[str, ...], tuple[Toolset, dict[str, tuple[str, str]]]] = {}
        self._truth: GroundTruth | None = None
        self._episode_servers: tuple[str, ...] = ()
        self._mcp_calls: list[dict[str, Any]] = []
        self._answer: str | None = None

    # ----------------------------------------------------------------------- servers

    @property
    def servers(self) -> dict[str, ServerSpec]:
        """The validated server specs, by name."""
        if self._servers is None:
            try:
                from tool_envs.mcp.tasks import default_servers
            except ImportError:
                raise EnvConfigError(
                    'MCPEnv needs servers=: an {"mcpServers": {...}} dict or the path of a JSON '
                    "file holding one"
                ) from None
            self._servers = load_servers(default_servers())
        return dict(self._servers)

    def connection(self, server: str) -> MCPServerConnection:
        """The connection to the configured server ``server``: the process-wide one, or with
        ``fresh_state`` this episode's own."""
        specs = self.servers
        if server not in specs:
            raise EnvConfigError(f"no MCP server '{server}'; configured: {sorted(specs)}")
        if self.fresh_state:
            return self._episode.connection(server, specs[server], self.connect_timeout_s)
        found = self._connections.get(server)
        if found is None:
            spec = specs[server]
            if uses_episode_dir(spec):
                spec = with_episode_dir(spec, shared_state_dir())
            found = self._connections[server] = get_connection(server, spec)
        return found

    def stop_servers(self) -> None:
        """Stop the servers this env used (shared: other envs' next calls restart them); returns
        once their processes, and the processes they started, are gone (wedged ones included)."""
        for connection in self._connections.values():
            connection.close()
        self._episode.stop()

    # ----------------------------------------------------------------------- tools

    def toolset_for(self, servers: Iterable[str] | None = None) -> Toolset:
        """The tools the model sees when ``servers`` (default: all) are visible."""
        return self._toolset_and_routes(self._visible(servers))[0]

    def _visible(self, servers: Iterable[str] | None) -> tuple[str, ...]:
        configured = self.servers
        if servers is None:
            return tuple(configured)
        names = tuple(dict.fromkeys(servers))
        unknown = [name for name in names if name not in configured]
        if unknown:
            raise TaskRowError(
                f"names servers {unknown} that are not configured; configured servers: "
                f"{sorted(configured)}",
                field="extra_info.servers",
            )
        return names

    def _toolset_and_routes(
        self, servers: tuple[str, ...]
    ) -> tuple[Toolset, dict[str, tuple[str, str]]]:
        cached = self._toolsets.get(servers)
        if cached is not None:
            return cached
        listed = []
        patterns_used: set[str] = set()
        for server in servers:
            for remote in self.connection(server).list_tools(
                connect_timeout_s=self.connect_timeout_s
            ):
                matched = self._allowed(server, remote.name)
                if matched is None:
                    continue
                patterns_used.update(matched)
                listed.append((server, remote))
        counts: dict[str, int] = {}
        for _, remote in listed:
            counts[remote.name] = counts.get(remote.name, 0) + 1
        clashes = sorted(name for name, count in counts.items() if count > 1)
        if clashes and self.namespace == "never":
            raise EnvConfigError(
                f"tools {clashes} exist on more than one server; use namespace='auto' or "
                "'always', or leave one out with allow_tools"
            )
        tools, routes = [], {}
        for server, remote in listed:
            prefixed = self.namespace == "always" or (
                self.namespace == "auto" and counts[remote.name] > 1
            )
            name = f"{server}{SEPARATOR}{remote.name}" if prefixed else remote.name
            tools.append(_build_tool(name, remote, _RemoteTool(self, server, remote.name)))
            routes[name] = (server, remote.name)
        if self.allow_tools is not None and servers == tuple(self.servers):
            unused = [p for p in self.allow_tools if p not in patterns_used]
            if unused:
                available = [
                    f"{s}/{t.name}" for s in servers for t in self.connection(s).list_tools()
                ]
                raise EnvConfigError(
                    f"allow_tools patterns {unused} match no tool; available: {available}"
                )
        if not tools:
            raise EnvConfigError(
                f"no tools to offer from servers {list(servers)} (allow_tools={self.allow_tools!r})"
            )
        self._toolsets[servers] = (Toolset(tools), routes)
        return self._toolsets[servers]

    def _allowed(self, server: str, tool: str) -> list[str] | None:
        """The allow-list patterns that let ``server``'s ``tool`` through (None: blocked)."""
        if self.allow_tools is None:
            return []
        names = (tool, f"{server}{SEPARATOR}{tool}", f"{server}/{tool}")
        hits = [p for p in self.allow_tools if any(fnmatch.fnmatchcase(n, p) for n in names)]
        return hits or None

    def _invoke(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        """Call one tool, retrying transient failures; log it; raise MCPCallError on failure."""
        record: dict[str, Any] = {
            "server": server,
            "tool": tool,
            "arguments": json.loads(json.dumps(arguments)),
            "error": None,
            "seconds": 0.0,
            "attempts": 0,
        }
        self._mcp_calls.append(record)
        started = time.perf_counter()
        try:
            while True:
                record["attempts"] += 1
                try:
                    result = self.connection(server).call_tool(
                        tool,
                        arguments,
                        timeout=self.call_timeout_s,
                        connect_timeout_s=self.connect_timeout_s,
                    )
                    text = result_text(result)
                    if result.is_error:
                        raise MCPToolError(text or f"the tool {tool!r} reported an error")
                    return text
                except MCPCallError as exc:
                    if exc.transient and record["attempts"] <= self.retries:
                        continue
                    record["error"] = f"{type(exc).__name__}: {exc}"
                    raise
        finally:
            record["seconds"] = time.perf_counter() - started

    # ----------------------------------------------------------------------- ToolEnv hooks

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return self.task_splits()["train"]

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        try:
            from tool_envs.mcp.tasks import default_splits
        except ImportError:
            raise EnvConfigError(
                "MCPEnv has no default task set yet: pass tasks= (task rows, a dataset folder "
                "or JSONL file), e.g. the rows of datasets/mcp_tasks"
            ) from None
        return default_splits()

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """The ordered ``tool_sequence`` calls (with their params), then the first answer.

        None when a step has ``match="ignore"`` and no params (its arguments are unknown).
        """
        truth = parse_ground_truth(task.get("reward_spec") or {})
        if not truth.tool_sequence and not truth.gold_answers:
            return None
        servers = self._visible((task.get("extra_info") or {}).get("servers"))
        routes = self._toolset_and_routes(servers)[1]
        by_target = {target: name for name, target in routes.items()}
        turns = []
        for step in truth.steps:
            if (step.match or truth.param_match) == "ignore" and not step.params:
                return None
            candidates = [
                name
                for (server, tool), name in by_target.items()
                if tool == step.tool and step.server in (None, server)
            ]
            if not candidates:
                return None
            call = {"name": candidates[0], "arguments": step.params}
            turns.append(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
        answer = truth.gold_answers[0] if truth.gold_answers else "Done."
        turns.append(f"<answer>{answer}</answer>" if self.answer_format == "tag" else answer)
        return turns

    def check_task(self, task: dict[str, Any]) -> None:
        parse_ground_truth(task["reward_spec"])
        servers = task["extra_info"].get("servers")
        if servers is not None:
            if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
                raise TaskRowError(
                    f"must be a list of server names, got {servers!r}"[:200],
                    field="extra_info.servers",
                )
            self._visible(servers)

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._truth = parse_ground_truth(task["reward_spec"])
        servers = self._visible(task["extra_info"].get("servers"))
        self._episode_servers = servers
        self._mcp_calls = []
        self._answer = None
        return self._toolset_and_routes(servers)[0]

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        assert self._truth is not None
        reward, info = compute_reward(
            self._truth, self._mcp_calls, self._answer, self.reward_config
        )
        info["mcp_calls"] = [dict(call) for call in self._mcp_calls]
        info["servers"] = list(self._episode_servers)
        return reward, info

    def _step_info(self) -> dict[str, Any]:
        return {"mcp_calls": [dict(call) for call in self._mcp_calls]}

    def _end_episode(self) -> None:
        """With fresh_state: stop the episode's own servers and delete its folder."""
        self._episode.stop()

    # ----------------------------------------------------------------------- lifecycle

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration, not the connections: a copy finds (or starts) its own."""
        state = dict(self.__dict__)
        state["_connections"] = {}
        state["_toolsets"] = {}
        state["_toolset"] = Toolset()
        state.pop("_episode", None)
        state.pop("_finalizer", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._episode = _EpisodeServers()
        self._finalizer = weakref.finalize(self, _EpisodeServers.stop, self._episode)
        if self._task is not None and not self._needs_reset:
            self._toolset = self._toolset_and_routes(self._episode_servers)[0]


class _EpisodeServers:
    """With ``fresh_state``: the episode's folder and its private server connections.

    Kept apart from the env so that a finalizer can stop the servers and delete the folder when
    an env that was never closed is garbage collected (or at exit) without keeping it alive.
    """

    def __init__(self) -> None:
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._connections: dict[str, MCPServerConnection] = {}

    def connection(
        self, server: str, spec: ServerSpec, connect_timeout_s: float
    ) -> MCPServerConnection:
        found = self._connections.get(server)
        if found is None:
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="tool-envs-mcp-episode-")
            found = MCPServerConnection(
                server,
                with_episode_dir(spec, self._folder.name, working_dir=True),
                connect_timeout_s=connect_timeout_s,
            )
            self._connections[server] = found
        return found

    def stop(self) -> None:
        """Stop every server of the episode (waiting for each), then delete its folder."""
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            with contextlib.suppress(Exception):
                connection.close()
        folder, self._folder = self._folder, None
        if folder is not None:
            folder.cleanup()


def _build_tool(name: str, remote: Any, function: _RemoteTool) -> Tool:
    """An OpenAI-format tool from an MCP tool listing; the server's schema is kept as is."""
    parameters = dict(remote.input_schema or {})
    parameters.setdefault("type", "object")
    if parameters.get("type") == "object":
        parameters.setdefault("properties", {})
    schema = {
        "type": "function",
        "function": {
            "name": name,
            "description": remote.description or remote.title or "",
            "parameters": parameters,
        },
    }
    tool = Tool(name=name, function=function, schema=schema)
    try:
        _ = tool.check  # compile now: a schema fastjsonschema cannot compile must not fail a step
    except Exception:
        loose = {"type": "object", "properties": parameters.get("properties", {})}
        tool = Tool(
            name=name,
            function=function,
            schema={**schema, "function": {**schema["function"], "parameters": loose}},
        )
        try:
            _ = tool.check
        except Exception:
            tool = Tool(
                name=name,
                function=function,
                schema={
                    **schema,
                    "function": {**schema["function"], "parameters": {"type": "object"}},
                },
            )
    return tool


def _reward_config(value: RewardConfig | Mapping[str, Any] | None) -> RewardConfig:
    if value is None:
        return RewardConfig()
    if isinstance(value, RewardConfig):
        return value
    fields = dict(value)
    known = set(RewardConfig.__dataclass_fields__)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise EnvConfigError(f"unknown reward settings {unknown}; known: {sorted(known)}")
    weights = fields.get("weights")
    if isinstance(weights, Mapping):
        allowed = set(asdict(RewardWeights()))
        if set(weights) - allowed:
            raise EnvConfigError(
                f"unknown reward weights {sorted(set(weights) - allowed)}; known: {sorted(allowed)}"
            )
        fields["weights"] = RewardWeights(**weights)
    return RewardConfig(**fields)

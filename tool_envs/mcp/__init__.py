"""Any MCP (Model Context Protocol) server as a tool environment: ``tool_envs/MCP-v0``.

- :mod:`tool_envs.mcp.config`: the ``mcpServers`` config (stdio and streamable HTTP servers);
- :mod:`tool_envs.mcp.client`: a sync bridge over the official async SDK; one server process per
  config for the whole process, reconnecting after crashes;
- :mod:`tool_envs.mcp.reward`: rewards from required tools, tool sequences, limits and answers;
- :mod:`tool_envs.mcp.env`: :class:`MCPEnv`.

Importing this package does not import the ``mcp`` SDK; the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "MCPEnv": "tool_envs.mcp.env",
    "MCPServerConnection": "tool_envs.mcp.client",
    "MCPCallError": "tool_envs.mcp.client",
    "MCPConnectionError": "tool_envs.mcp.client",
    "MCPProtocolError": "tool_envs.mcp.client",
    "MCPTimeoutError": "tool_envs.mcp.client",
    "MCPToolError": "tool_envs.mcp.client",
    "close_all": "tool_envs.mcp.client",
    "get_connection": "tool_envs.mcp.client",
    "load_servers": "tool_envs.mcp.config",
    "RewardConfig": "tool_envs.mcp.reward",
    "RewardWeights": "tool_envs.mcp.reward",
    "compute_reward": "tool_envs.mcp.reward",
    "parse_ground_truth": "tool_envs.mcp.reward",
}

if TYPE_CHECKING:
    from tool_envs.mcp.client import MCPCallError as MCPCallError
    from tool_envs.mcp.client import MCPConnectionError as MCPConnectionError
    from tool_envs.mcp.client import MCPProtocolError as MCPProtocolError
    from tool_envs.mcp.client import MCPServerConnection as MCPServerConnection
    from tool_envs.mcp.client import MCPTimeoutError as MCPTimeoutError
    from tool_envs.mcp.client import MCPToolError as MCPToolError
    from tool_envs.mcp.client import close_all as close_all
    from tool_envs.mcp.client import get_connection as get_connection
    from tool_envs.mcp.config import load_servers as load_servers
    from tool_envs.mcp.env import MCPEnv as MCPEnv
    from tool_envs.mcp.reward import RewardConfig as RewardConfig
    from tool_envs.mcp.reward import RewardWeights as RewardWeights
    from tool_envs.mcp.reward import compute_reward as compute_reward
    from tool_envs.mcp.reward import parse_ground_truth as parse_ground_truth

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
__dir__ = lazy_dir(globals(), _EXPORTS)

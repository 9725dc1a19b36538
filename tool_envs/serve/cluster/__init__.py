"""Env servers on a Ray cluster: ``tool-envs serve ENV_ID --ray N`` and ``ray_env_servers``.

Ray only places, starts, watches and stops the servers; each is the ``tool-envs serve`` app
(:class:`~tool_envs.serve.EnvServer`) running inside a Ray actor, and every env step goes
straight from the trainer's :class:`~tool_envs.serve.RemoteEnv` to it over WebSocket, never
through Ray. Needs the ``ray`` extra (``pip install 'tool-envs[serve,ray]'``).

Errors (both :class:`~tool_envs.errors.ToolEnvsError`):

* :class:`RayVersionError`: the cluster runs another Ray than this process;
* :class:`EnvServerLostError`: a server died more often than its restarts allow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "EnvServerLostError": "tool_envs.serve.cluster.errors",
    "RayEnvServers": "tool_envs.serve.cluster.launcher",
    "RayVersionError": "tool_envs.serve.cluster.errors",
    "ServerSpec": "tool_envs.serve.cluster.launcher",
    "check_ray_version": "tool_envs.serve.cluster.versions",
    "cluster_ray_version": "tool_envs.serve.cluster.versions",
    "parse_server_specs": "tool_envs.serve.cluster.launcher",
}

if TYPE_CHECKING:
    from tool_envs.serve.cluster.errors import EnvServerLostError as EnvServerLostError
    from tool_envs.serve.cluster.errors import RayVersionError as RayVersionError
    from tool_envs.serve.cluster.launcher import RayEnvServers as RayEnvServers
    from tool_envs.serve.cluster.launcher import ServerSpec as ServerSpec
    from tool_envs.serve.cluster.launcher import parse_server_specs as parse_server_specs
    from tool_envs.serve.cluster.versions import check_ray_version as check_ray_version
    from tool_envs.serve.cluster.versions import cluster_ray_version as cluster_ray_version

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""Envs as network services: ``tool-envs serve`` and :class:`RemoteEnv` (OpenEnv's protocol).

Needs the ``serve`` extra (``pip install 'tool-envs[serve]'``: starlette, uvicorn, websockets).
Servers placed, restarted and stopped by Ray: :mod:`tool_envs.serve.cluster` (the ``ray`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "RemoteEnv": "tool_envs.serve.client",
    "EnvServerPool": "tool_envs.serve.pool",
    "EnvServer": "tool_envs.serve.server",
    "EnvServerProcess": "tool_envs.serve.process",
    "ServeConfig": "tool_envs.serve.server",
    "build_app": "tool_envs.serve.server",
    "serve": "tool_envs.serve.server",
}

if TYPE_CHECKING:
    from tool_envs.serve.client import RemoteEnv as RemoteEnv
    from tool_envs.serve.pool import EnvServerPool as EnvServerPool
    from tool_envs.serve.process import EnvServerProcess as EnvServerProcess
    from tool_envs.serve.server import EnvServer as EnvServer
    from tool_envs.serve.server import ServeConfig as ServeConfig
    from tool_envs.serve.server import build_app as build_app
    from tool_envs.serve.server import serve as serve

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""Envs as network services: ``tool-envs serve`` and :class:`RemoteEnv` (OpenEnv's protocol).

Needs the ``serve`` extra (``pip install 'tool-envs[serve]'``: starlette, uvicorn, websockets).
Servers placed, restarted and stopped by Ray: :mod:`tool_envs.serve.cluster` (the ``ray`` extra).
"""

from __future__ import annotations

from tool_envs._lazy import lazy_exports

_LAZY = {
    "RemoteEnv": "tool_envs.serve.client",
    "EnvServerPool": "tool_envs.serve.pool",
    "EnvServer": "tool_envs.serve.server",
    "EnvServerProcess": "tool_envs.serve.process",
    "ServeConfig": "tool_envs.serve.server",
    "build_app": "tool_envs.serve.server",
    "serve": "tool_envs.serve.server",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_exports(__name__, _LAZY)

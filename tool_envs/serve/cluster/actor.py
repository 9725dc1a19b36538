"""The Ray actor that holds one env server: ``tool-envs serve``'s app in a thread of the actor.

The server lives and dies with the actor's process, so a killed actor or a lost node takes its
server down with it (nothing is left listening), and a restarted actor serves again at the same
address when its node still has the port (Ray re-runs ``__init__`` with the same arguments).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
from typing import Any

from tool_envs.serve.limits import raise_open_file_limit
from tool_envs.serve.server import EnvServer, ServeConfig

logger = logging.getLogger(__name__)


class EnvServerActor:
    """One env server; Ray makes it an actor (see :class:`~.launcher.RayEnvServers`).

    Args:
        config: What to serve. ``host=None``-like behaviour: an empty ``host`` means the node's
            own address (reachable from the trainer's node), which needs ``config.token``.
    """

    def __init__(self, config: ServeConfig):
        import ray

        context = ray.get_runtime_context()
        self.restarted = context.was_current_actor_reconstructed
        self.node_id = context.get_node_id()
        if not config.host:
            config = dataclasses.replace(config, host=ray.util.get_node_ip_address())
        raise_open_file_limit()  # the actor's process is the server's, as with `tool-envs serve`
        try:
            self.server = EnvServer(config).start()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or config.port == 0:
                raise
            # The port is taken on this node (a restart on another node): serve at a new one.
            logger.warning("port %s is taken on this node; serving on a free port", config.port)
            self.server = EnvServer(dataclasses.replace(config, port=0)).start()

    def info(self) -> dict[str, Any]:
        """Where it serves and how it is: url, node_id, pid, restarted, active_sessions."""
        return {
            "url": self.server.url,
            "node_id": self.node_id,
            "pid": os.getpid(),
            "restarted": self.restarted,
            "active_sessions": self.server.manager.active,
        }

    def stop(self) -> None:
        """Close every session's env and stop listening (before the actor is killed)."""
        self.server.stop()

"""The two ways env servers on Ray fail that a user must act on."""

from __future__ import annotations

from tool_envs.errors import ToolEnvsError


class RayVersionError(ToolEnvsError, RuntimeError):
    """Raised when the Ray cluster was started with another Ray version than this process has.

    Ray refuses mixed versions across a cluster (its wire formats change between releases);
    this says so before Ray's own, vaguer failure, naming both versions and the fix.

    Attributes:
        cluster: The cluster's Ray version.
        installed: This process's Ray version.
    """

    def __init__(self, cluster: str, installed: str, address: str | None = None):
        self.cluster, self.installed = cluster, installed
        where = f" at {address}" if address else ""
        super().__init__(
            f"the Ray cluster{where} runs Ray {cluster}, but this process has Ray {installed}: "
            f"a cluster needs one Ray version everywhere. Install ray=={cluster} here (the "
            f"'ray' extra of tool-envs accepts {SUPPORTED_RANGE}), or start the cluster with "
            f"ray=={installed}."
        )


class EnvServerLostError(ToolEnvsError, RuntimeError):
    """Raised when an env server actor is dead for good: it died more often than
    ``max_restarts`` allows, or it failed to start.

    Attributes:
        env_id: The served env.
        index: Which of its servers (0-based).
        cause: What Ray said.
    """

    def __init__(self, env_id: str, index: int, max_restarts: int, cause: str):
        self.env_id, self.index, self.cause = env_id, index, cause
        super().__init__(
            f"env server {index} of {env_id} is gone for good (Ray restarts it at most "
            f"{max_restarts} times): {cause}. Its episodes were void; find why it died (its "
            "node's logs under /tmp/ray/session_latest/logs), then start the servers again."
        )


SUPPORTED_RANGE = ">=2.60,<2.61"
"""The Ray versions tool-envs' ``ray`` extra accepts (pyproject.toml says the same)."""

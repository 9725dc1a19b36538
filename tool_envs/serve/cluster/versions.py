"""One Ray version across a cluster: read the cluster's before connecting, and compare."""

from __future__ import annotations

import json

from tool_envs.errors import RayVersionError
from tool_envs.serve.cluster.errors import SUPPORTED_RANGE


def check_ray_version(cluster: str, installed: str | None = None, address: str | None = None):
    """Raise :class:`RayVersionError`, naming both, unless ``cluster`` is this process's Ray
    (``installed``, default ``ray.__version__``). Ray needs the exact same release everywhere."""
    if installed is None:
        import ray

        installed = ray.__version__
    if cluster != installed:
        raise RayVersionError(cluster, installed, address, supported=SUPPORTED_RANGE)


def cluster_ray_version(address: str) -> str | None:
    """The Ray version a running cluster was started with (its GCS's metadata), read without
    joining it; None when the cluster does not say (Ray's own check then runs at connect).

    Uses Ray's GCS client and the metadata key ``ray.init`` itself checks; both are Ray
    internals, so anything unexpected here means "unknown", never a failure.
    """
    try:
        from ray._raylet import GcsClient

        raw = GcsClient(address=address).internal_kv_get(b"CLUSTER_METADATA", namespace=b"cluster")
        return json.loads(raw)["ray_version"] if raw else None
    except Exception:
        return None

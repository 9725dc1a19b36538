"""Task sources: env ids and dataset sources, read into one list of rows.

Training recipes and ``tool-envs eval`` both name their tasks the same way (an env id plays its
own task set; a folder, files or a Hub id are read by :func:`~tool_envs.data.load_tasks`), so the
reading lives here, beside the row schema, and neither borrows it from the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tool_envs.data.loading import load_tasks
from tool_envs.data.schema import ENV_ID_PATTERN
from tool_envs.errors import EnvConfigError
from tool_envs.registration import register_envs, resolve_env_id

__all__ = ["env_id_of_source", "load_task_sources"]


def env_id_of_source(source: str) -> str | None:
    """The registered id when a task source names an env (``namespace/Name-vN``, or
    ``module:namespace/Name-vN``), None for a dataset source (a folder, files, a Hub id).

    Raises:
        UnknownEnvError: the source has an env id's form but no such env is registered, so a
            typo says "did you mean" instead of failing to reach the Hub.
    """
    if Path(source).expanduser().exists() or not ENV_ID_PATTERN.match(source):
        return None
    return resolve_env_id(source)


def load_task_sources(
    sources: Sequence[str],
    split: str,
    limit: int | None = None,
    where: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows from each source, concatenated (mixed envs allowed).

    A source is an env id (its own task set; ``split`` picks train or test where the env ships
    splits; ``module:namespace/Name-vN`` imports the module that registers it first, and its
    rows carry that form so worker processes import it too), or anything
    :func:`tool_envs.data.load_tasks` reads: a dataset folder, data files, or a Hub id.
    ``where`` keeps rows whose ``extra_info`` has those values (a list value means any of
    them), e.g. ``{"difficulty": [1, 2]}``.
    """
    rows: list[dict[str, Any]] = []
    for source in sources:
        if env_id_of_source(source) is not None:
            rows.extend(_env_tasks(source, split))
        else:
            rows.extend(load_tasks(source, split=split))
    for key, wanted in (where or {}).items():
        allowed = wanted if isinstance(wanted, list) else [wanted]
        rows = [row for row in rows if row["extra_info"].get(key) in allowed]
    if not rows:
        raise EnvConfigError(
            f"no task rows in {list(sources)} (split {split!r}, where {dict(where or {})})"
        )
    return rows[:limit] if limit is not None else rows


def _env_tasks(env_id: str, split: str) -> list[dict[str, Any]]:
    """The rows of ``split`` of the task set that env ``env_id`` ships."""
    import gymnasium as gym

    register_envs()  # as `import tool_envs` does, without importing the package from below
    env = gym.make(env_id)
    try:
        available = env.unwrapped.own_task_splits()
        if split not in available:
            raise EnvConfigError(f"{env_id} has no split {split!r}; it has {sorted(available)}")
        rows = load_tasks(list(available[split]))
    finally:
        env.close()
    if ":" in env_id:  # the module that registers the env travels with each row
        rows = [{**row, "env_id": env_id} for row in rows]
    return rows

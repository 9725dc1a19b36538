"""The one place envs come from: :class:`EnvPool`, in-process or on env servers, reused.

The rollout engines, ``tool-envs eval`` and the gold exports all take envs from here: an env id
in :attr:`RolloutConfig.env_servers <tool_envs.rollout.config.RolloutConfig.env_servers>` is a
:class:`~tool_envs.serve.RemoteEnv` on its servers, any other a ``gymnasium.make`` with its
``env_kwargs``; ``max_turns`` and ``env_wrappers`` apply to both alike. Envs are reused across
episodes (servers and sandboxes outlive one episode), never one whose step hung.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import gymnasium as gym

import tool_envs
from tool_envs.errors import EnvConfigError
from tool_envs.registration import env_kwargs_for, registered_id
from tool_envs.rollout.config import RolloutConfig
from tool_envs.serve.pool import as_pool

if TYPE_CHECKING:
    from tool_envs.serve.client import RemoteEnv

gym.register_envs(tool_envs)


class EnvPool:
    """Reusable env instances per env id, so servers and sandboxes outlive single episodes."""

    def __init__(self, config: RolloutConfig):
        if config.ray_env_servers:
            raise EnvConfigError(
                f"the ray_env_servers {sorted(config.ray_env_servers)} are not started: play "
                "with the config that `with ray_servers_started(config) as config:` gives "
                "(tool_envs.rollout.config)"
            )
        self.config = config
        self._free: dict[str, list[gym.Env]] = defaultdict(list)
        self._all: list[gym.Env] = []
        self._lock = threading.Lock()
        self._servers: dict[str, Any] = {}  # env id -> EnvServerPool, shared by its envs
        # Served ids by registered id, so ``module:EnvId`` keys and rows name the same env.
        self._served = {registered_id(k): urls for k, urls in config.env_servers.items()}

    def acquire(self, env_id: str) -> gym.Env:
        with self._lock:  # episodes start from worker threads
            if self._free[env_id]:
                return self._free[env_id].pop()
        served = registered_id(env_id)
        if served in self._served:
            env = self._remote(served)
        else:
            kwargs = env_kwargs_for(self.config.env_kwargs, env_id)
            if self.config.max_turns is not None:
                kwargs["max_episode_steps"] = self.config.max_turns
            env = gym.make(env_id, **kwargs)
        for wrapper in self.config.env_wrappers:
            env = wrapper(env)
        with self._lock:
            self._all.append(env)
        return env

    def _remote(self, env_id: str) -> gym.Env:
        """A RemoteEnv on ``env_id``'s servers (the turn limit applied here, as in-process)."""
        from tool_envs.serve.client import RemoteEnv

        with self._lock:
            if env_id not in self._servers:
                self._servers[env_id] = as_pool(self._served[env_id])
            servers = self._servers[env_id]
        return RemoteEnv(servers, timeout=self.config.step_timeout, max_turns=self.config.max_turns)

    def serves(self, env_id: str) -> bool:
        """Whether ``env_id``'s envs are on env servers (making one then does no I/O)."""
        return registered_id(env_id) in self._served

    def remote(self, env: gym.Env) -> RemoteEnv | None:
        """``env`` when it is a RemoteEnv with no wrapper around it (``env_wrappers``): then its
        resets and steps can be awaited on an event loop with no thread waiting on them."""
        if not self._served:
            return None
        from tool_envs.serve.client import RemoteEnv

        return env if isinstance(env, RemoteEnv) else None

    def release(self, env_id: str, env: gym.Env) -> None:
        with self._lock:
            self._free[env_id].append(env)

    def abandon(self, env: gym.Env, running: Future | None = None) -> None:
        """Never reuse ``env`` (its step hung); close it once ``running`` (that step) returns."""
        with self._lock:
            if env in self._all:
                self._all.remove(env)

        def close(_: object = None) -> None:
            with contextlib.suppress(Exception):  # a hung env may be broken; it is discarded
                env.close()

        if running is None:
            close()
        else:
            running.add_done_callback(close)

    def close(self) -> None:
        with self._lock:
            envs, self._all = self._all, []
        for env in envs:
            env.close()
        self._free.clear()

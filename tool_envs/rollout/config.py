"""The settings of playing episodes, in one validated object: :class:`RolloutConfig`.

Built once per run and read by everything that plays task rows: both GRPO recipes (from their
:class:`~tool_envs.integrations.trl.recipes.EpisodeArguments`), the asynchronous rollout worker,
the held-out evaluator, and ``tool-envs eval`` (its env options). Each field carries its ``help``
(:meth:`RolloutConfig.help`), so the recipes' and the CLI's option texts are the fields' own; a
bad value raises naming the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from typing_extensions import Self

from tool_envs.registration import check_env_kwargs
from tool_envs.serve.pool import EnvServerPool, check_env_servers


def _field(default: Any = dataclasses.MISSING, *, factory: Any = None, help: str) -> Any:
    if factory is not None:
        return field(default_factory=factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class RolloutConfig:
    """Budgets and env settings of a rollout.

    Attributes:
        max_completion_length: Cap on the WHOLE multi-turn completion (policy and env tokens),
            as TRL's ``max_completion_length``; an episode that would exceed it ends truncated.
        max_tokens_per_turn: Cap on one policy turn; a turn that hits it ends the episode
            truncated (the completion then does not end on a stop token).
        max_turns: Assistant turns per episode; None keeps each env's registered limit.
        env_workers: Most env steps running at once; None: one per live episode (env steps
            mostly wait on I/O, so a thread each costs little and no step waits for a free one).
            The asynchronous engine awaits the resets and steps of envs on env servers
            (``env_servers``) instead: they take no thread.
        env_kwargs: Constructor arguments per env id, e.g. ``{"tool_envs/Calculator-v0":
            {"parser": "hermes"}}``.
        env_wrappers: Applied in order to every env the engine makes (``gym.make`` result), e.g.
            a logging or latency wrapper: ``env_wrappers=(MyWrapper,)``.
        step_timeout: Seconds an env step may take before its episode ends void (the hung env
            is abandoned and closed when its step returns); None waits forever.
        max_concurrent_requests: Asynchronous engine only: most generation requests in flight.
        max_void_fraction: Raise :class:`RolloutVoidError` when more than this fraction of a
            batch's episodes are void (1.0: never). A batch is one
            :func:`~tool_envs.rollout.player.play`: the GRPO batch of ``rollout_func``, one
            group of the asynchronous worker (which then stops), one held-out check.
        chat_template: Template to use instead of the tokenizer's own.
        template_kwargs: Extra template variables (e.g. ``{"enable_thinking": False}``).
        env_servers: Env id -> one or more ``tool-envs serve`` URLs: episodes of those ids run
            on the servers (:class:`~tool_envs.serve.RemoteEnv`; each episode on the least
            loaded live server), the others in this process. Constructor arguments of a served
            env are the server's (``tool-envs serve --env-kwargs``), not ``env_kwargs``;
            ``max_turns`` and ``env_wrappers`` apply here as to any env. A server that dies or
            hangs voids its episodes (``void_cause="env_server"``); when none is left, the run
            raises :class:`~tool_envs.errors.EnvServerUnavailableError` naming the URLs. A value
            may also be an :class:`~tool_envs.serve.pool.EnvServerPool`, shared as it is (e.g.
            :meth:`RayEnvServers.pools() <tool_envs.serve.cluster.RayEnvServers.pools>`, whose
            pools follow a server Ray restarts at a new address).
        ray_env_servers: Env id -> servers to start on the Ray cluster at ``$RAY_ADDRESS`` (or a
            local one) for the run: a count, or a :class:`~tool_envs.serve.cluster.ServerSpec`'s
            fields. Checked here (an env in both this and ``env_servers`` is refused); started by
            :func:`ray_servers_started`, which gives the config whose ``env_servers`` hold their
            pools. The engines refuse a config whose Ray servers were not started.
    """

    max_completion_length: int = _field(
        1024, help="Cap on the whole multi-turn completion (policy and env tokens)."
    )
    max_tokens_per_turn: int = _field(256, help="Cap on one assistant turn.")
    max_turns: int | None = _field(
        None, help="Assistant turns per episode (default: each env's registered limit)."
    )
    env_workers: int | None = _field(
        None, help="Most env steps running at once (default: one per live episode)."
    )
    env_kwargs: Mapping[str, Mapping[str, Any]] = _field(
        factory=dict, help='Constructor arguments per env id: {"env id": {kwarg: value}}.'
    )
    env_wrappers: Sequence[Callable[[gym.Env], gym.Env]] = _field(
        (), help="Wrappers applied in order to every env made (env -> wrapped env)."
    )
    step_timeout: float | None = _field(
        600.0,
        help="Seconds an env step may take; past it the episode is void (not trained on).",
    )
    max_concurrent_requests: int = _field(
        256, help="Asynchronous engine: most generation requests in flight."
    )
    max_void_fraction: float = _field(
        0.5,
        help="Stop when more than this fraction of a batch's episodes are void (a batch: the "
        "GRPO batch, or one group of the asynchronous worker; 1.0: never).",
    )
    chat_template: str | None = _field(None, help="Chat template instead of the tokenizer's.")
    template_kwargs: Mapping[str, Any] = _field(factory=dict, help="Extra template variables.")
    env_servers: Mapping[str, str | Sequence[str] | EnvServerPool] = _field(
        factory=dict,
        help='{"env id": "http://127.0.0.1:8000" or [URLs]}: episodes of those envs run on '
        "`tool-envs serve` servers (each on the least loaded live one).",
    )
    ray_env_servers: Mapping[str, int | Mapping[str, Any]] = _field(
        factory=dict,
        help='{"env id": N} or {"env id": {"servers": N, "num_cpus": 1, "resources": '
        '{"sandbox": 1}, "max_restarts": 3}}: N `tool-envs serve` servers per env on the Ray '
        "cluster at $RAY_ADDRESS (or a local one) for this run; their URLs join env_servers, "
        "and they stop when the run ends.",
    )

    @classmethod
    def help(cls, name: str) -> str:
        """The ``help`` of field ``name``: what the recipes' and the CLI's options say of it."""
        return next(f.metadata["help"] for f in dataclasses.fields(cls) if f.name == name)

    def replace(self, **settings: Any) -> Self:
        """A copy with ``settings`` (fields of this class) changed and checked again; an
        unknown name is a TypeError listing the fields."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(settings) - names)
        if unknown:
            raise TypeError(
                f"RolloutConfig has no fields {unknown}; its fields are {sorted(names)}"
            )
        return dataclasses.replace(self, **settings)

    def __post_init__(self) -> None:
        check_env_kwargs(self.env_kwargs, "RolloutConfig.env_kwargs")
        check_env_servers(self.env_servers, self.env_kwargs, option="RolloutConfig.env_servers")
        if self.ray_env_servers:  # Ray's launcher is imported only by runs that use it
            from tool_envs.serve.cluster.launcher import check_ray_env_servers

            check_ray_env_servers(self.ray_env_servers, self.env_servers)
        for name in ("max_completion_length", "max_tokens_per_turn", "max_concurrent_requests"):
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_turns", "env_workers"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1 or None, got {value}")
        if self.step_timeout is not None and self.step_timeout <= 0:
            raise ValueError(
                f"RolloutConfig.step_timeout must be > 0 seconds or None, got {self.step_timeout}"
            )
        if not 0 <= self.max_void_fraction <= 1:
            raise ValueError(
                f"RolloutConfig.max_void_fraction must be in [0, 1], got {self.max_void_fraction}"
            )
        if not all(callable(w) for w in self.env_wrappers):
            raise TypeError("RolloutConfig.env_wrappers must be callables env -> wrapped env")


@contextmanager
def ray_servers_started(config: RolloutConfig) -> Iterator[RolloutConfig]:
    """``config`` with its ``ray_env_servers`` running for the block: the config yielded has
    their pools in ``env_servers`` and no ``ray_env_servers`` left to start (the same config
    when it has none). The servers stop when the block ends, however it ends."""
    if not config.ray_env_servers:
        yield config
        return
    from tool_envs.serve.cluster.launcher import started_on_ray

    with started_on_ray(config.ray_env_servers, config.env_servers) as env_servers:
        yield config.replace(env_servers=env_servers, ray_env_servers={})

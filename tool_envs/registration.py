"""The registry of tool_envs environments.

Importing :mod:`tool_envs` registers every env below with Gymnasium; entry points are strings,
so an env's module (and its dependencies) is imported only when the env is made.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tool_envs.errors import UnknownEnvError


@dataclass(frozen=True)
class EnvEntry:
    """One registered environment.

    Attributes:
        id: Versioned id ``tool_envs/Name-vN``; bump N when tools, dynamics or reward change.
        entry_point: ``"module:Class"``, imported lazily by ``gymnasium.make``.
        description: One line for ``tool_envs.list_envs()`` and ``tool-envs list``.
        max_episode_steps: Assistant turns before ``TimeLimit`` truncates the episode.
        kwargs: Default constructor arguments.
    """

    id: str
    entry_point: str
    description: str
    max_episode_steps: int
    kwargs: dict[str, Any] = field(default_factory=dict)


ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="tool_envs/Calculator-v0",
        entry_point="tool_envs.calculator.env:CalculatorEnv",
        description="Arithmetic questions answered with add/subtract/multiply/divide tools.",
        max_episode_steps=8,
    ),
    EnvEntry(
        id="tool_envs/CodeExec-v0",
        entry_point="tool_envs.code.env:CodeExecEnv",
        description="Write Python in a sandbox, run it on visible tests, submit for hidden tests.",
        max_episode_steps=10,
    ),
    EnvEntry(
        id="tool_envs/WebSearch-v0",
        entry_point="tool_envs.search.env:WebSearchEnv",
        description="Answer questions by searching (offline corpus, Tavily, Serper, Bing, ...).",
        max_episode_steps=10,
    ),
    EnvEntry(
        id="tool_envs/MCP-v0",
        entry_point="tool_envs.mcp.env:MCPEnv",
        description="Tools from any MCP server (stdio or HTTP), graded on a ground-truth sequence.",
        max_episode_steps=10,
    ),
    EnvEntry(
        id="tool_envs/TauRetail-v0",
        entry_point="tool_envs.tau.domains.retail:TauRetailEnv",
        description="Retail customer service (orders, returns, exchanges) with a simulated user.",
        max_episode_steps=20,
    ),
    EnvEntry(
        id="tool_envs/TauAirline-v0",
        entry_point="tool_envs.tau.domains.airline:TauAirlineEnv",
        description="Airline customer service (bookings, changes, cancellations) with a user.",
        max_episode_steps=20,
    ),
    EnvEntry(
        id="tool_envs/TauHealthcare-v0",
        entry_point="tool_envs.tau.domains.healthcare:TauHealthcareEnv",
        description="Clinic support: appointments, refills, coverage, claims; privacy rules.",
        max_episode_steps=20,
    ),
    EnvEntry(
        id="tool_envs/TauDoordash-v0",
        entry_point="tool_envs.tau.domains.doordash:TauDoordashEnv",
        description="Food-delivery support: order changes, cancellations, refunds and credits.",
        max_episode_steps=20,
    ),
    EnvEntry(
        id="tool_envs/TauTelecom-v0",
        entry_point="tool_envs.tau.domains.telecom:TauTelecomEnv",
        description="Telecom support with dual control: the user fixes their phone as guided.",
        max_episode_steps=30,
    ),
    EnvEntry(
        id="tool_envs/Tau2Airline-v0",
        entry_point="tool_envs.tau2.env:Tau2AirlineEnv",
        description="tau2-bench airline (official tasks and policy), graded as tau2 grades it.",
        max_episode_steps=50,
    ),
    EnvEntry(
        id="tool_envs/Tau2Retail-v0",
        entry_point="tool_envs.tau2.env:Tau2RetailEnv",
        description="tau2-bench retail (official tasks and policy), graded as tau2 grades it.",
        max_episode_steps=50,
    ),
    EnvEntry(
        id="tool_envs/Tau2Telecom-v0",
        entry_point="tool_envs.tau2.env:Tau2TelecomEnv",
        description="tau2-bench telecom with the user's phone tools, graded as tau2 grades it.",
        max_episode_steps=50,
    ),
)


def register_envs() -> None:
    """Register every env in :data:`ENVS` with Gymnasium (idempotent)."""
    for entry in ENVS:
        if entry.id not in gym.registry:
            gym.register(
                id=entry.id,
                entry_point=entry.entry_point,
                max_episode_steps=entry.max_episode_steps,
                kwargs=dict(entry.kwargs),
            )


def list_envs() -> dict[str, str]:
    """Registered env ids with a one-line description each."""
    return {entry.id: entry.description for entry in ENVS}


def registered_id(env_id: str) -> str:
    """The registry id of ``env_id``: without the ``module:`` of Gymnasium's ``module:EnvId``
    form, so a row written either way names the same env. Imports nothing."""
    return env_id.partition(":")[2] or env_id


def resolve_env_id(env_id: str) -> str:
    """The registered id of ``env_id``, importing the module of the ``module:EnvId`` form first
    (as ``gymnasium.make`` does), so an env registered by the user's own module works wherever
    an env id is accepted.

    Raises:
        UnknownEnvError: the module cannot be imported, or the id is not registered (the message
            suggests the closest registered ids).
    """
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UnknownEnvError(
                f"cannot import {module!r}, the module of env id {env_id!r}: {exc}. It must be "
                "importable (installed, or on PYTHONPATH) and register the env when imported"
            ) from exc
    if name in gym.registry:
        return name
    known = sorted(
        (key for key, spec in gym.registry.items() if not _gymnasium_own(spec)),
        key=lambda key: (not key.startswith("tool_envs/"), key),
    )
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.8)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    where = f"module {module!r} did not register it." if module else (
        "An env registered by your own module is named 'module:namespace/Name-vN', so that "
        "the module is imported first."
    )  # fmt: skip
    raise UnknownEnvError(
        f"unknown env id {name!r}.{hint} {where} Registered: {', '.join(known)} "
        "(`tool-envs list` describes this package's envs)"
    )


def for_env(by_env: Mapping[str, Any], env_id: str) -> Any:
    """The value ``by_env`` (env id -> value: ``env_kwargs``, ``env_servers``) gives ``env_id``,
    or None; keys and id may each be written with or without Gymnasium's ``module:`` prefix."""
    wanted = registered_id(env_id)
    return next((value for key, value in by_env.items() if registered_id(key) == wanted), None)


def env_kwargs_for(env_kwargs: Mapping[str, Mapping[str, Any]], env_id: str) -> dict[str, Any]:
    """The constructor arguments ``env_kwargs`` gives ``env_id`` (see :func:`for_env`)."""
    return dict(for_env(env_kwargs, env_id) or {})


def check_env_kwargs(env_kwargs: Mapping[str, Any], option: str = "env_kwargs") -> None:
    """Raise ValueError, naming ``option`` and the env id, unless ``env_kwargs`` maps env ids to
    mappings of constructor arguments."""
    if not isinstance(env_kwargs, Mapping):
        raise ValueError(f"{option} maps env ids to objects, got {type(env_kwargs).__name__}")
    for env_id, kwargs in env_kwargs.items():
        if not isinstance(kwargs, Mapping):
            raise ValueError(
                f"{option} maps env ids to objects of constructor arguments; {env_id!r} maps to "
                f"{type(kwargs).__name__}"
            )


def _gymnasium_own(spec: Any) -> bool:
    """Gymnasium's bundled envs (CartPole, ...), left out of suggestions for tool-use envs."""
    entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
    return entry.startswith("gymnasium.") or "/" not in spec.id

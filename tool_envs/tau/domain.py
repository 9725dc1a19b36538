"""What makes a domain: its database, its tools over it, its policy and its tasks.

A domain module builds one :class:`Domain`; :class:`~tool_envs.tau.env.TauEnv` does the rest
(episodes, users, reward), so adding a domain is data and tools, not env code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tool_envs.tau.db import BaseTables, Database, Tables
from tool_envs.tau.tools import DatabaseTools, DomainTools

__all__ = ["DatabaseTools", "Domain", "DomainTools"]


@dataclass(frozen=True)
class Domain:
    """One customer-service domain.

    Attributes:
        name: Short name (``retail``), used in task rows' ``extra_info["domain"]``.
        env_id: The registered env id of the domain.
        policy: Markdown policy shown to the agent as the system prompt.
        tools: The :class:`DomainTools` subclass.
        load_tables: Returns the initial database tables (called once per process).
        load_splits: Returns the domain's own task splits (``{"train": rows, "test": rows}``).
        user_keywords: Extra words a scripted user recognises per ``known_info`` field.
        user_tools: Tools the *user* can call on their own device (dual control, as in tau2's
            telecom domain); they act on the same episode database, so the reward's hash
            covers the device state too. None for domains where only the agent acts.
    """

    name: str
    env_id: str
    policy: str
    tools: type[DomainTools]
    load_tables: Callable[[], Tables]
    load_splits: Callable[[], Mapping[str, Sequence[dict[str, Any]]]]
    user_keywords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    user_tools: type[DatabaseTools] | None = None

    def base(self) -> BaseTables:
        """The immutable starting state, loaded and hashed once per process."""
        return _base_tables(self.load_tables)

    def new_database(self) -> Database:
        return Database(self.base())


@functools.cache
def _base_tables(load: Callable[[], Tables]) -> BaseTables:
    return BaseTables(load())

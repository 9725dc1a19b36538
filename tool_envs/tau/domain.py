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
        identity_ask: The identity fields the gold conversation asks for first, whichever ones
            the task's user knows (retail: the email). A user who does not know one offers the
            identity it does know, so the gold's first question depends only on what the agent
            has seen. Empty: the gold asks for exactly the fields the user knows.
    """

    name: str
    env_id: str
    policy: str
    tools: type[DomainTools]
    load_tables: Callable[[], Tables]
    load_splits: Callable[[], Mapping[str, Sequence[dict[str, Any]]]]
    user_keywords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    user_tools: type[DatabaseTools] | None = None
    identity_ask: tuple[str, ...] = ()

    def base(self, db_seed: int = 0) -> BaseTables:
        """The immutable starting state of database ``db_seed`` (0: the shipped one), built and
        hashed once per process."""
        if db_seed == 0:
            return _base_tables(self.load_tables)
        return _seeded_base_tables(seeded_generator(self.load_tables, self.name), db_seed)

    def new_database(self, db_seed: int = 0) -> Database:
        return Database(self.base(db_seed))


def seeded_generator(load_tables: Callable[[], Tables], domain: str) -> Callable[[int], Tables]:
    """The generator behind ``load_tables`` that builds a database for any seed (a
    :class:`~tool_envs.tau.datagen.SeedTables` has one; tables read from files do not)."""
    generate = getattr(load_tables, "generate", None)
    if generate is None:
        raise ValueError(
            f"the {domain} domain's database is not generated from a seed, so only db_seed 0 "
            "(the shipped database) exists"
        )
    return generate


@functools.cache
def _base_tables(load: Callable[[], Tables]) -> BaseTables:
    return BaseTables(load())


@functools.cache
def _seeded_base_tables(generate: Callable[[int], Tables], db_seed: int) -> BaseTables:
    return BaseTables(generate(db_seed))

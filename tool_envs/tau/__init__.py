"""tau-style customer-service domains: a policy, tools over a database, a simulated user.

:mod:`tool_envs.tau.db` (copy-on-write database with an incremental hash),
:mod:`tool_envs.tau.domain` (what a domain provides), :mod:`tool_envs.tau.env` (the env all
domains share), :mod:`tool_envs.tau.users` (scripted, LLM and human users),
:mod:`tool_envs.tau.domains` (retail, airline, ...).

The domain kit: :mod:`~tool_envs.tau.tools` (tools base: record lookup, cached JSON answers,
write tools from ``@tool(writes=True)``), :mod:`~tool_envs.tau.records` (shared record types),
:mod:`~tool_envs.tau.drafts` (parts, drafts, identities, the task writer),
:mod:`~tool_envs.tau.wording` (openings, amounts), :mod:`~tool_envs.tau.taskgen` (task
context, generation into splits). A domain adds ``records.py``, ``data.py``, ``tools.py``,
``tasks.py`` and ``policy.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "BaseTables": "tool_envs.tau.db",
    "Database": "tool_envs.tau.db",
    "Domain": "tool_envs.tau.domain",
    "DomainTools": "tool_envs.tau.tools",
    "DatabaseTools": "tool_envs.tau.tools",
    "write_tool_names": "tool_envs.tau.tools",
    "TauEnv": "tool_envs.tau.env",
    "GoldAction": "tool_envs.tau.task",
    "TauRewardSpec": "tool_envs.tau.task",
    "UserScenario": "tool_envs.tau.task",
    "tau_task_row": "tool_envs.tau.task",
}

if TYPE_CHECKING:
    from tool_envs.tau.db import BaseTables as BaseTables
    from tool_envs.tau.db import Database as Database
    from tool_envs.tau.domain import Domain as Domain
    from tool_envs.tau.env import TauEnv as TauEnv
    from tool_envs.tau.task import GoldAction as GoldAction
    from tool_envs.tau.task import TauRewardSpec as TauRewardSpec
    from tool_envs.tau.task import UserScenario as UserScenario
    from tool_envs.tau.task import tau_task_row as tau_task_row
    from tool_envs.tau.tools import DatabaseTools as DatabaseTools
    from tool_envs.tau.tools import DomainTools as DomainTools
    from tool_envs.tau.tools import write_tool_names as write_tool_names

__all__ = sorted(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

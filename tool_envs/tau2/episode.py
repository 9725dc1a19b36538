"""Setting up a tau2 task's initial state, and the gold state its reward compares with.

Both follow tau2's ``EnvironmentEvaluator`` step for step (fresh databases, the task's
initialization data and actions, a final ``sync_tools``; gold actions run with
``make_tool_call`` and errors ignored), but on copy-on-write views of the shared databases.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from tool_envs.errors import TaskRowError
from tool_envs.tau2.domains import READ_ONLY_TYPES, Tau2Domain, import_tau2
from tool_envs.tau2.state import BaseSnapshot, DatabaseDelta, WriteGate


@dataclass
class EpisodeState:
    """The databases of one episode and the snapshots they grew from."""

    db: Any
    user_db: Any | None
    base: BaseSnapshot
    user_base: BaseSnapshot | None

    def deltas(self) -> tuple[DatabaseDelta, DatabaseDelta | None]:
        user = (
            DatabaseDelta.of(self.user_db, self.user_base)
            if self.user_db is not None and self.user_base is not None
            else None
        )
        return DatabaseDelta.of(self.db, self.base), user

    def same_as(self, gold: tuple[DatabaseDelta, DatabaseDelta | None]) -> tuple[bool, bool]:
        """(agent DB equal, user DB equal) to the gold, as tau2's hash comparison decides."""
        mine, user = self.deltas()
        agent_ok = mine.same_as(gold[0], self.base)
        user_ok = user is None or (
            gold[1] is not None
            and self.user_base is not None
            and user.same_as(gold[1], self.user_base)
        )
        return agent_ok, user_ok


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def _updated_base(domain_name: str, side: str, data_json: str) -> BaseSnapshot:
    """A task-specific base for tasks with ``initialization_data`` (none of tau2's own)."""
    from tool_envs.tau2.domains import load_domain

    utils = import_tau2("tau2.utils.pydantic_utils")
    domain = load_domain(domain_name)
    base = domain.base if side == "agent" else domain.user_base
    assert base is not None
    return BaseSnapshot.of(utils.update_pydantic_model_with_dict(base.db, json.loads(data_json)))


def prepare(domain: Tau2Domain, task: Any, environment: Any, gate: WriteGate) -> EpisodeState:
    """Bind fresh episode databases to ``environment`` and bring them to the task's start."""
    initial = task.initial_state
    if initial is not None and initial.message_history:
        raise TaskRowError(
            "tau2 tasks that start from a message history are not supported (the agent would "
            "not see that history)",
            field="reward_spec.initial_state.message_history",
        )
    base, user_base = domain.base, domain.user_base
    data = initial.initialization_data if initial is not None else None
    if data is not None and data.agent_data:
        base = _updated_base(domain.name, "agent", json.dumps(data.agent_data, sort_keys=True))
    if data is not None and data.user_data and user_base is not None:
        user_base = _updated_base(domain.name, "user", json.dumps(data.user_data, sort_keys=True))
    state = EpisodeState(
        db=base.episode(gate),
        user_db=user_base.episode(gate) if user_base is not None else None,
        base=base,
        user_base=user_base,
    )
    domain.bind(environment, state.db, state.user_db)
    gate.open = True
    try:
        for action in (initial.initialization_actions or []) if initial is not None else []:
            try:
                environment.run_env_function_call(action)
            except Exception as exc:
                raise TaskRowError(
                    f"initialization action {action.env_type}.{action.func_name} failed: {exc}",
                    field="reward_spec.initial_state.initialization_actions",
                ) from exc
        environment.sync_tools()
    finally:
        gate.open = False
    return state


_gold_cache: dict[tuple[str, str], tuple[DatabaseDelta, DatabaseDelta | None]] = {}
_gold_lock = threading.Lock()


def clear_gold_cache() -> None:
    """Forget the gold states computed so far (memory; benchmarks timing a first reward)."""
    with _gold_lock:
        _gold_cache.clear()


def gold_deltas(domain: Tau2Domain, task: Any) -> tuple[DatabaseDelta, DatabaseDelta | None]:
    """The databases after the task's gold actions, computed once per task and process."""
    criteria = task.evaluation_criteria
    key = (
        domain.name,
        _digest(
            [
                task.initial_state.model_dump(mode="json") if task.initial_state else None,
                [a.model_dump(mode="json") for a in (criteria.actions or [])] if criteria else [],
            ]
        ),
    )
    cached = _gold_cache.get(key)
    if cached is not None:
        return cached
    gate = WriteGate()
    environment = domain.new_environment()
    state = prepare(domain, task, environment, gate)
    for action in (criteria.actions or []) if criteria is not None else []:
        types = domain.tool_types[action.requestor]
        gate.open = types.get(action.name) not in READ_ONLY_TYPES
        # tau2 logs and ignores failing gold actions (some fail by design)
        with contextlib.suppress(Exception):
            environment.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
        gate.open = False
    deltas = state.deltas()
    with _gold_lock:
        _gold_cache[key] = deltas
    return deltas

"""Re-check a stored eval run's simulated users without replaying it (``tool-envs check-users``).

A run made before the user check existed, with it turned off (``check_user=False``), or with an
older version of it, holds trials a spoiled user scored as the agent's. Every saved trial of
``trajectories.jsonl`` (and ``void.jsonl``) is read again: its task row is found from the run's
``run.json``, and its env's :meth:`~tool_envs.tau.env.TauEnv.recheck_user` checks each user turn
of the stored conversation as the env checks them while it plays. Nothing in the run's folder
is changed; the faults go to ``user_faults.jsonl`` beside it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from tool_envs.errors import EvalError
from tool_envs.eval.metrics import user_fault_of, user_strategy_of
from tool_envs.eval.runner import RUN_FILE, TRAJECTORIES, VOID_LOG
from tool_envs.eval.store import TrajectoryStore
from tool_envs.eval.tasks import load_eval_tasks

__all__ = ["USER_FAULTS", "RecheckResult", "recheck_run"]

USER_FAULTS = "user_faults.jsonl"


@dataclass
class RecheckResult:
    """What a re-check found.

    Attributes:
        rows: Per (env, user strategy): ``trials`` checked, ``user_faults`` found now,
            ``flagged_when_run`` (faults the run itself recorded) and ``by_kind``.
        faults: One entry per trial with a fault: its key, strategy and the fault.
        skipped: Trials not checked, and why (``{"no simulated user": 3}``).
        path: Where the faults were written.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    path: Path | None = None


def recheck_run(folder: str | Path) -> RecheckResult:
    """Re-check every saved trial of the eval run in ``folder``; write ``user_faults.jsonl``.

    Raises:
        EvalError: ``folder`` is not an eval run (no ``run.json``) or its tasks cannot load.
    """
    folder = Path(folder)
    run_file = folder / RUN_FILE
    if not run_file.is_file():
        raise EvalError(f"{folder} is not a tool-envs eval run: it has no {RUN_FILE}")
    run = json.loads(run_file.read_text(encoding="utf-8"))
    split = (run.get("identity") or {}).get("split") or "test"
    tasks = {
        (task.env_id, task.task_id): task.row
        for env_tasks in load_eval_tasks(run.get("envs") or [], split).values()
        for task in env_tasks
    }
    records = TrajectoryStore(folder / TRAJECTORIES).load()
    records += TrajectoryStore(folder / VOID_LOG).load()
    result = RecheckResult()
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    envs: dict[str, Any] = {}
    for record in records:
        env_id, task_id = str(record["env_id"]), str(record["task_id"])
        task = tasks.get((env_id, task_id))
        if task is None:
            result.skipped["task not in the run's task set"] = (
                result.skipped.get("task not in the run's task set", 0) + 1
            )
            continue
        env = envs.get(env_id)
        if env is None:
            env = envs[env_id] = gym.make(env_id).unwrapped
        if not hasattr(env, "recheck_user"):
            result.skipped["no simulated user"] = result.skipped.get("no simulated user", 0) + 1
            continue
        info = record.get("reward_info") or {}
        fault = env.recheck_user(
            task, record.get("messages") or [], info.get("user_device_calls") or []
        )
        strategy = user_strategy_of(record)
        if strategy == "unknown":
            strategy = str((run.get("identity") or {}).get("user") or "scripted")
        group = groups.setdefault(
            (env_id, strategy),
            {"trials": 0, "user_faults": 0, "flagged_when_run": 0, "by_kind": {}},
        )
        group["trials"] += 1
        group["flagged_when_run"] += bool(user_fault_of(record))
        if fault is None:
            continue
        group["user_faults"] += 1
        group["by_kind"][fault.kind] = group["by_kind"].get(fault.kind, 0) + 1
        result.faults.append(
            {
                "env_id": env_id,
                "task_id": task_id,
                "trial": record["trial"],
                "user_strategy": strategy,
                "user_fault": fault.as_dict(),
                "flagged_when_run": user_fault_of(record),
            }
        )
    for env in envs.values():
        env.close()
    result.rows = [
        {"env": env_id, "user_strategy": strategy, **group}
        for (env_id, strategy), group in sorted(groups.items())
    ]
    result.path = folder / USER_FAULTS
    with open(result.path, "w", encoding="utf-8") as out:
        for entry in result.faults:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return result


def format_recheck(result: RecheckResult) -> str:
    """The re-check as a table: per env and user strategy, trials and faults found."""
    header = ["env", "user", "trials", "user_faults", "rate", "when run", "by kind"]
    lines = [
        [
            str(row["env"]).removeprefix("tool_envs/"),
            str(row["user_strategy"]),
            str(row["trials"]),
            str(row["user_faults"]),
            f"{row['user_faults'] / row['trials']:.3f}" if row["trials"] else "-",
            str(row["flagged_when_run"]),
            ", ".join(f"{k} {n}" for k, n in sorted(row["by_kind"].items())) or "-",
        ]
        for row in result.rows
    ]
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:2], widths[:2], strict=True)]
        right = [c.rjust(w) for c, w in zip(cells[2:6], widths[2:6], strict=True)]
        return "  ".join([*left, *right, cells[6]]).rstrip()

    out = [line(header), "-" * len(line(header)), *(line(r) for r in lines)]
    out += [f"not checked: {n} ({why})" for why, n in result.skipped.items()]
    return "\n".join(out)


def describe(entry: Mapping[str, Any]) -> str:
    """One fault in one line: where, what, and the evidence."""
    fault = entry["user_fault"]
    return (
        f"{entry['env_id']} {entry['task_id']} trial {entry['trial']}: {fault['kind']} at turn "
        f"{fault['turn']} ({fault['evidence']})"
    )

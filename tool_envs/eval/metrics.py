"""Pass@k, pass^k and the per-env / overall aggregates of an evaluation (pure functions).

Two questions people ask of k trials per task, and the estimators that answer them without bias
from n >= k trials with c successes:

- pass@k, "does at least one of k attempts succeed?" (Chen et al., 2021):
  ``1 - C(n - c, k) / C(n, k)``;
- pass^k, "do all k attempts succeed?", the reliability measure tau-bench reports:
  ``C(c, k) / C(n, k)``.

Both are averaged over tasks, so every task weighs the same whatever its trial count.

A trial the simulated user spoiled (``reward_info["user_fault"]``, see
:mod:`tool_envs.tau.users.faults`) is kept with its run but never scored: it counts in
``user_fault_trials`` and ``user_fault_rate``, per env and per user strategy, and in no
success rate, reward or pass^k.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tool_envs.core.outcome import VOID

__all__ = [
    "is_success",
    "pass_at_k",
    "pass_hat_k",
    "summarize",
    "task_counts",
    "user_fault_of",
    "user_fault_rows",
    "user_strategy_of",
]


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 1:
        raise ValueError(f"need at least one trial, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got c={c}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got k={k}")
    if k > n:
        raise ValueError(f"k={k} needs at least k trials per task, but a task has only n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from the n run succeeds."""
    _check_counts(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k trials drawn from the n run succeed (tau-bench's pass^k)."""
    _check_counts(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def is_success(record: Mapping[str, Any], threshold: float = 1.0) -> bool:
    """A trial succeeds when its reward reaches ``threshold`` (tau-bench: reward 1)."""
    return float(record.get("reward") or 0.0) >= threshold - 1e-9


def task_counts(
    records: Iterable[Mapping[str, Any]], threshold: float = 1.0
) -> dict[tuple[str, str], tuple[int, int]]:
    """(env_id, task_id) -> (trials n, successes c)."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for record in records:
        key = (record["env_id"], record["task_id"])
        n, c = counts.get(key, (0, 0))
        counts[key] = (n + 1, c + is_success(record, threshold))
    return counts


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _helper_usage(records: Sequence[Mapping[str, Any]], helper: str) -> dict[str, Any]:
    """Calls and tokens of a helper model (``user`` simulator, ``judge``) over the records.

    None where no record made a call (a scripted user costs nothing and shows nothing).
    """
    used = [
        (r.get("helper_usage") or {}).get(helper) or {}
        for r in records
        if ((r.get("helper_usage") or {}).get(helper) or {}).get("calls")
    ]
    keys = ("calls", "prompt_tokens", "completion_tokens")
    totals = {f"{helper}_{k}": (sum(u.get(k) or 0 for u in used) if used else None) for k in keys}
    if helper == "user":
        totals["user_cost_usd"] = sum(u.get("cost_usd") or 0.0 for u in used) if used else None
    return totals


def user_fault_of(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The user fault that voided a trial, or None."""
    return (record.get("reward_info") or {}).get("user_fault")


def _user_checked(record: Mapping[str, Any]) -> bool:
    info = record.get("reward_info") or {}
    return bool(info.get("user_checks") or info.get("user_fault"))


def _user_faults(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How many trials the simulated user spoiled, and how (None where no user was checked)."""
    if not any(_user_checked(r) for r in records):
        return {"user_fault_trials": None, "user_fault_rate": None, "user_faults": {}}
    kinds: dict[str, int] = {}
    for record in records:
        fault = user_fault_of(record)
        if fault:
            kinds[fault["kind"]] = kinds.get(fault["kind"], 0) + 1
    faults = sum(kinds.values())
    return {
        "user_fault_trials": faults,
        "user_fault_rate": faults / len(records),
        "user_faults": dict(sorted(kinds.items())),
    }


def user_strategy_of(record: Mapping[str, Any]) -> str:
    """How the trial's simulated user played (``scripted``, ``llm``, ``verify``, ...)."""
    return str((record.get("reward_info") or {}).get("user_strategy") or "unknown")


def user_fault_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (env, user strategy) with a checked user: trials, faults, rate, kinds."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        if _user_checked(record):
            key = (str(record["env_id"]), user_strategy_of(record))
            groups.setdefault(key, []).append(record)
    return [
        {"env": env, "user_strategy": strategy, "trials": len(rows), **_user_faults(rows)}
        for (env, strategy), rows in sorted(groups.items())
    ]


def _void_counts(void: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    causes: dict[str, int] = {}
    for record in void:
        cause = (record.get("reward_info") or {}).get("void_cause", "unknown")
        causes[cause] = causes.get(cause, 0) + 1
    return {"void_trials": len(void), "void_causes": causes}


def _group(
    records: Sequence[Mapping[str, Any]],
    threshold: float,
    prices: tuple[float, float] | None,
    void: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    saved = records
    records = [r for r in saved if r.get("outcome") != VOID]  # scored: the agent's own
    counts = list(task_counts(records, threshold).values())
    k_max = min((n for n, _ in counts), default=0)
    ks = range(1, k_max + 1)
    stats = [record.get("stats") or {} for record in records]
    usage = [record["usage"] for record in saved if record.get("usage")]  # voided ones cost too
    prompt_tokens = completion_tokens = None  # unknown without API usage (scripted agents)
    if usage:
        prompt_tokens = sum(u.get("prompt_tokens") or 0 for u in usage)
        completion_tokens = sum(u.get("completion_tokens") or 0 for u in usage)
    cost = None
    if prices is not None and prompt_tokens is not None and completion_tokens is not None:
        cost = (prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000
    return {
        "tasks": len(counts),
        "trials": len(saved),
        "scored_trials": len(records),
        "min_trials_per_task": k_max,
        "success_rate": _mean([float(is_success(r, threshold)) for r in records]),
        "mean_reward": _mean([float(r.get("reward") or 0.0) for r in records]),
        "pass_at_k": {str(k): _mean([pass_at_k(n, c, k) for n, c in counts]) for k in ks},
        "pass_hat_k": {str(k): _mean([pass_hat_k(n, c, k) for n, c in counts]) for k in ks},
        "mean_turns": _mean([float(r.get("turns") or 0) for r in records]),
        "mean_tool_calls": _mean([float(s.get("tool_calls", 0)) for s in stats]),
        "tool_calls": sum(s.get("tool_calls", 0) for s in stats),
        "parse_errors": sum(s.get("parse_errors", 0) for s in stats),
        "env_errors": sum(s.get("tool_errors", 0) for s in stats),
        "failed_trials": sum(1 for r in records if r.get("error")),
        "truncated_rate": _mean([float(bool(r.get("truncated"))) for r in records]),
        "requests": sum(u.get("requests") or 0 for u in usage),
        "usage_missing": sum(
            1 for u in usage if u.get("prompt_tokens") is None or u.get("completion_tokens") is None
        ),
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": cost,
        **_helper_usage(saved, "user"),
        **_helper_usage(saved, "judge"),
        **_void_counts(void),
        **_user_faults(saved),
    }


def summarize(
    records: Sequence[Mapping[str, Any]],
    *,
    threshold: float = 1.0,
    prices: tuple[float, float] | None = None,
    void: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Metrics per env and overall (overall averages over all tasks of all envs).

    ``pass_at_k`` / ``pass_hat_k`` are given for k = 1 .. the smallest trial count of any task,
    so a partly finished run still reports what its trials support. ``prices`` is
    (input, output) price per million tokens; without it ``cost`` is None. The simulated
    user's and the judge's calls and tokens (``user_*``, ``judge_*``) are counted beside the
    agent's. ``void`` are the trials voided by infrastructure: only counted (``void_trials``,
    ``void_causes``), never scored.
    """
    by_env: dict[str, list[Mapping[str, Any]]] = {}
    void_by_env: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_env.setdefault(record["env_id"], []).append(record)
    for record in void:
        by_env.setdefault(record["env_id"], [])
        void_by_env.setdefault(record["env_id"], []).append(record)
    return {
        "user_faults": user_fault_rows(records),
        "overall": _group(records, threshold, prices, void),
        "envs": {
            env_id: _group(rows, threshold, prices, void_by_env.get(env_id, ()))
            for env_id, rows in by_env.items()
        },
    }

"""Episode metrics: what every path that plays episodes logs of them, computed one way.

The GRPO ``rollout_func`` logs them per training step (gathered over processes), the async
rollout worker per group: ``env/success_rate``, ``env/void_rate``, ``env/void/<cause>``, the
counters, and per env when a batch mixes several.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tool_envs.rollout.episode import Episode

_COUNTERS = ("tool_calls", "tool_errors", "parse_errors", "empty_responses")


def episode_summary(rollout: Episode) -> dict[str, Any]:
    """The numbers metrics need from one episode (small, so it can be gathered across ranks).

    ``void_rate`` counts infrastructure failures; ``void/<cause>`` names them. Where a simulated
    user is checked, ``user_fault_rate`` counts the episodes it spoiled (void too, cause
    ``user_simulator``) and ``user_fault/<kind>`` how. Success and reward average over every
    episode (a void one counts as 0, as it earned nothing). ``turns`` counts the policy turns
    played, a last one cut by the token budget included: an episode truncated in its first turn
    played one, which the env never counted (it was not stepped).
    """
    summary = {
        "env": rollout.env_id.split("/")[-1],
        "success_rate": float(rollout.success),
        "reward": rollout.reward,
        "turns": rollout.policy_turns,
        "truncated_rate": float(rollout.truncated),
        "void_rate": float(rollout.void),
        **{name: rollout.stats.get(name, 0) for name in _COUNTERS},
    }
    info = rollout.reward_info or {}
    if rollout.void:
        summary[f"void/{info.get('void_cause', 'unknown')}"] = 1.0
    if info.get("user_checks") or info.get("user_fault"):  # an env with a checked user
        fault = info.get("user_fault")
        summary["user_fault_rate"] = float(bool(fault))
        if fault:
            summary[f"user_fault/{fault.get('kind', 'unknown')}"] = 1.0
    return summary


def episode_metrics(summaries: list[dict[str, Any]]) -> dict[str, float]:
    """Means over episode summaries, overall and, with several envs, per env."""
    by_env: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for summary in summaries:
        by_env[summary["env"]].append(summary)
    metrics = _means("env", summaries)
    if len(by_env) > 1:
        for name, group in sorted(by_env.items()):
            metrics.update(_means(f"env/{name}", group))
    return metrics


def _means(prefix: str, summaries: list[dict[str, Any]]) -> dict[str, float]:
    """Means of each key; a key some summaries lack (a void cause) counts 0 in those."""
    count = max(len(summaries), 1)
    keys = dict.fromkeys(key for s in summaries for key in s if key != "env")
    return {f"{prefix}/{key}": sum(s.get(key, 0) for s in summaries) / count for key in keys}

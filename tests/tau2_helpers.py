"""Driving tau2 envs through whole episodes, and grading the same episodes with tau2 itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from http_helpers import chat_completion

from tool_envs.tau2.env import Tau2Env


def play(env: Tau2Env, row: Mapping[str, Any], turns: list[str]) -> dict[str, Any]:
    """Reset on ``row``, play ``turns`` until the episode ends; returns the final reward_info."""
    env.reset(options={"task": row})
    for turn in turns:
        _, _, terminated, _, info = env.step(turn)
        if terminated:
            return info["reward_info"]
    raise AssertionError(f"{row['extra_info']['id']}: the episode did not end after {turns!r}")


def empty_turns() -> list[str]:
    """An agent that does nothing: says goodbye, and the scripted user stops."""
    return ["Thank you for contacting us. Goodbye."]


def perturbed_turns(env: Tau2Env, row: Mapping[str, Any]) -> list[str]:
    """The gold turns with one argument of one action changed (a write if there is one), or,
    for a task without arguments to change, without the information it must communicate."""
    spec = row["reward_spec"].get("evaluation_criteria") or {}
    actions = spec.get("actions") or []
    types = env.domain.tool_types
    ranked = sorted(
        (i for i, a in enumerate(actions) if a.get("arguments")),
        key=lambda i: (
            types[actions[i].get("requestor", "assistant")].get(actions[i]["name"]) != "write",
            actions[i].get("requestor", "assistant") != "assistant",
        ),
    )
    changed = copy.deepcopy(dict(row))
    if ranked:
        action = changed["reward_spec"]["evaluation_criteria"]["actions"][ranked[0]]
        key = next(iter(action["arguments"]))
        action["arguments"][key] = _perturb(action["arguments"][key])
        return env.gold_turns(changed)  # type: ignore[return-value]
    turns = env.gold_turns(row) or []
    return [*turns[:-1], "All done."]


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "X"
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, *value]
    if isinstance(value, dict) and value:
        key = next(iter(value))
        return {**value, key: _perturb(value[key])}
    return "X"


def tau2_verdicts(domain: str, episodes: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """tau2's ``evaluate_simulation`` on finished episodes given as (SimulationRun JSON, Task
    JSON), as comparable fields. Runs in worker processes: tau2 needs ~1 s per airline episode."""
    from tool_envs.tau2.domains import import_tau2

    evaluation = import_tau2("tau2.evaluator.evaluator")
    simulation = import_tau2("tau2.data_model.simulation")
    tasks = import_tau2("tau2.data_model.tasks")
    verdicts = []
    for run_json, task_json in episodes:
        result = evaluation.evaluate_simulation(
            simulation=simulation.SimulationRun.model_validate_json(run_json),
            task=tasks.Task.model_validate_json(task_json),
            evaluation_type=evaluation.EvaluationType.ALL,
            solo_mode=False,
            domain=domain,
        )
        verdicts.append(_verdict(result))
    return verdicts


def _verdict(result: Any) -> dict[str, Any]:
    return {
        "reward": result.reward,
        "db_match": result.db_check.db_match if result.db_check is not None else None,
        "env_assertions": [c.met for c in result.env_assertions or []],
        "actions": [c.action_match for c in result.action_checks or []],
        "communicate": [c.met for c in result.communicate_checks or []],
    }


def our_verdict(reward_info: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "reward": reward_info["reward"],
        "db_match": reward_info.get("db_match"),
        "env_assertions": [c["met"] for c in reward_info.get("env_assertions", [])],
        "actions": [c["matched"] for c in reward_info.get("actions", [])],
        "communicate": [c["met"] for c in reward_info.get("communicate", [])],
    }


def describe(row: Mapping[str, Any], kind: str, ours: Any, theirs: Any) -> str:
    return (
        f"{row['extra_info']['id']} ({kind}): ours {json.dumps(ours)} vs tau2 {json.dumps(theirs)}"
    )


def chat_reply(request: Any, text: str) -> tuple[int, dict[str, Any]]:
    """A chat-completions answer (for search_helpers.json_server) whose message is ``text``."""
    message = {"role": "assistant", "content": text}
    tokens = {"prompt_tokens": 20, "completion_tokens": 5}
    return 200, chat_completion(request.body["model"], message, number="judge", **tokens)

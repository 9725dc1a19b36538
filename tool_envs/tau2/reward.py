"""tau2's reward for one finished episode, basis by basis, as ``evaluate_simulation`` computes it.

- termination other than a user (or agent) stop gives 0;
- a task without evaluation criteria gives 1;
- otherwise the product of the bases: ``DB`` (agent and user databases equal the gold replay's),
  ``ENV_ASSERTION`` (tau2's assertion functions on the final environment), ``ACTION`` (every
  gold action matched by a call, tau2's ``compare_args`` rule), ``COMMUNICATE`` (every
  ``communicate_info`` string in some agent message), ``NL_ASSERTION`` (an LLM judge, see
  :mod:`tool_envs.tau2.judge`; without one it is reported as not scored, left out of the product
  and named as such in the reason; a judge that fails raises
  :class:`~tool_envs.errors.InfrastructureError` with cause ``"judge"``, which voids the episode:
  its failure is never scored as the agent's).

DB equality is decided on copy-on-write deltas (:mod:`tool_envs.tau2.state`); ACTION and
COMMUNICATE are tau2's own evaluators, run on the episode's tau2 messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tool_envs.errors import EnvConfigError, InfrastructureError
from tool_envs.tau2.domains import import_tau2
from tool_envs.tau2.episode import EpisodeState
from tool_envs.tau2.state import DatabaseDelta, WriteGate

BASES = ("DB", "ENV_ASSERTION", "COMMUNICATE", "ACTION", "NL_ASSERTION")
STOPS = ("user_stop", "agent_stop")

NLJudge = Callable[[Sequence[str], Sequence[dict[str, Any]]], Sequence[bool]]
"""Given the NL assertions and the conversation (chat messages), whether each one holds."""


def resolve_basis(option: str | Sequence[str], task_basis: Sequence[str]) -> tuple[str, ...]:
    """``"task"``: the task's own basis; ``"strict"``: the task's plus ``ACTION`` (so doing
    nothing cannot pass tasks whose gold only reads); or an explicit list of basis names."""
    if option == "task":
        return tuple(task_basis)
    if option == "strict":
        return (*task_basis, "ACTION") if "ACTION" not in task_basis else tuple(task_basis)
    if (
        isinstance(option, str)
        or not isinstance(option, (list, tuple))
        or not option
        or any(b not in BASES for b in option)
    ):
        raise EnvConfigError(
            f"reward_basis={option!r} must be 'task', 'strict' or a non-empty list drawn from "
            f"{BASES}"
        )
    return tuple(option)


def compute_reward(
    *,
    task: Any,
    basis_option: str | Sequence[str],
    termination: str,
    state: EpisodeState,
    gold: tuple[DatabaseDelta, DatabaseDelta | None],
    environment: Any,
    gate: WriteGate,
    tau2_messages: list[Any],
    conversation: Sequence[dict[str, Any]],
    nl_judge: NLJudge | None,
) -> tuple[float, dict[str, Any]]:
    """The reward and its ``reward_info`` breakdown."""
    info: dict[str, Any] = {"termination": termination}
    if termination not in STOPS:
        info.update(reward=0.0, reason=f"the episode ended by {termination}, not by a stop")
        return 0.0, info
    criteria = task.evaluation_criteria
    if criteria is None:
        info.update(reward=1.0, reason="the task has no evaluation criteria")
        return 1.0, info
    basis = resolve_basis(basis_option, [b.value for b in criteria.reward_basis])
    info["basis"] = list(basis)
    breakdown: dict[str, float | None] = {}

    # DB and ENV_ASSERTION (tau2's EnvironmentEvaluator)
    if criteria.actions is None and criteria.env_assertions is None:
        breakdown["DB"] = breakdown["ENV_ASSERTION"] = 1.0
        info["db_match"] = True
    else:
        agent_ok, user_ok = state.same_as(gold)
        info["db_match"] = agent_ok and user_ok
        info["user_db_match"] = user_ok if state.user_db is not None else None
        breakdown["DB"] = 1.0 if info["db_match"] else 0.0
        checks = []
        gate.open = True
        try:
            for assertion in criteria.env_assertions or []:
                try:
                    met = environment.run_env_assertion(assertion, raise_assertion_error=False)
                except Exception as exc:  # a broken assertion fails, it does not crash the run
                    met, checks_error = False, f"{type(exc).__name__}: {exc}"
                else:
                    checks_error = None
                check = {
                    "env_type": assertion.env_type,
                    "func_name": assertion.func_name,
                    "arguments": assertion.arguments,
                    "met": bool(met),
                }
                if checks_error:
                    check["error"] = checks_error
                checks.append(check)
        finally:
            gate.open = False
        info["env_assertions"] = checks
        breakdown["ENV_ASSERTION"] = 1.0 if all(c["met"] for c in checks) else 0.0

    # ACTION and COMMUNICATE: tau2's own evaluators on the tau2 trajectory
    evaluators = (
        import_tau2("tau2.evaluator.evaluator_action"),
        import_tau2("tau2.evaluator.evaluator_communicate"),
    )
    action_info = evaluators[0].ActionEvaluator.calculate_reward(
        task=task, full_trajectory=tau2_messages
    )
    breakdown["ACTION"] = action_info.reward
    info["actions"] = [
        {
            "name": c.action.name,
            "arguments": c.action.arguments,
            "requestor": c.action.requestor,
            "matched": c.action_match,
        }
        for c in action_info.action_checks or []
    ]
    communicate_info = evaluators[1].CommunicateEvaluator.calculate_reward(
        task=task, full_trajectory=tau2_messages
    )
    breakdown["COMMUNICATE"] = communicate_info.reward
    info["communicate"] = [
        {"info": c.info, "met": c.met} for c in communicate_info.communicate_checks or []
    ]

    # NL_ASSERTION: only with a judge
    assertions = list(criteria.nl_assertions or [])
    if "NL_ASSERTION" in basis and assertions and nl_judge is not None:
        verdicts = _judge(nl_judge, assertions, conversation)
        info["nl_assertions"] = [
            {"assertion": a, "met": v} for a, v in zip(assertions, verdicts, strict=True)
        ]
        breakdown["NL_ASSERTION"] = 1.0 if all(verdicts) else 0.0
    elif "NL_ASSERTION" in basis:
        breakdown["NL_ASSERTION"] = None if assertions else 1.0
        if assertions:
            info["not_scored"] = ["NL_ASSERTION"]

    reward = _product(basis, breakdown)
    info["breakdown"] = breakdown
    info.update(reward=reward, reason=_reason(basis, breakdown))
    return reward, info


def _judge(
    nl_judge: NLJudge, assertions: list[str], conversation: Sequence[dict[str, Any]]
) -> list[bool]:
    """The judge's verdicts; any failure of the judge voids the episode (cause "judge")."""
    try:
        verdicts = [bool(v) for v in nl_judge(assertions, conversation)]
    except InfrastructureError:
        raise
    except Exception as exc:  # a custom judge's bug or outage is still not the agent's doing
        raise InfrastructureError(
            f"the nl_judge raised {type(exc).__name__}: {exc}", cause="judge"
        ) from exc
    if len(verdicts) != len(assertions):
        raise InfrastructureError(
            f"the nl_judge gave {len(verdicts)} verdicts for {len(assertions)} assertions",
            cause="judge",
        )
    return verdicts


def _reason(basis: Sequence[str], breakdown: dict[str, float | None]) -> str:
    """Which bases failed, or that all scored ones passed; never counts an unscored one."""
    failed = [b for b in basis if breakdown.get(b) == 0.0]
    unscored = [b for b in basis if breakdown.get(b) is None]
    scored = [b for b in basis if b not in unscored]
    if failed:
        reason = "failed: " + ", ".join(failed)
    elif scored:
        reason = f"all of {', '.join(scored)} passed"
    else:
        reason = "nothing in the basis was scored"
    if unscored:
        reason += f"; not scored: {', '.join(unscored)} (no nl_judge given)"
    return reason


def _product(basis: Sequence[str], breakdown: dict[str, float | None]) -> float:
    """tau2 multiplies the DB/ENV_ASSERTION group once, then ACTION, NL and COMMUNICATE."""
    reward = 1.0
    for name in basis:
        value = breakdown.get(name)
        if value is not None:
            reward *= value
    return reward

"""Evaluate agents on the env suite through any OpenAI-compatible chat API.

    from tool_envs.eval import EvalConfig, run_eval

    result = run_eval(EvalConfig(envs=["tool_envs/Calculator-v0"], out="runs/gpt", model="gpt-x"))
    result.summary["overall"]["pass_hat_k"]

The command line is ``tool-envs eval`` (and ``tool-envs check <env id>``); ``metrics`` holds
the pure pass@k / pass^k estimators. ``heldout`` scores a local (transformers) model greedily
on held-out tasks, for the training recipes: periodic checks, and a before/after comparison
with McNemar's exact test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "EvalConfig": "tool_envs.eval.runner",
    "EvalResult": "tool_envs.eval.result",
    "run_eval": "tool_envs.eval.runner",
    "EvalError": "tool_envs.errors",
    "GoldAgent": "tool_envs.rollout.agents",
    "NoopAgent": "tool_envs.rollout.agents",
    "OpenAIAgent": "tool_envs.rollout.agents",
    "pass_at_k": "tool_envs.eval.metrics",
    "pass_hat_k": "tool_envs.eval.metrics",
    "summarize": "tool_envs.eval.metrics",
    "HeldoutComparison": "tool_envs.eval.heldout",
    "HeldoutEvaluator": "tool_envs.eval.heldout",
    "mcnemar_exact": "tool_envs.eval.heldout",
    "check_env_id": "tool_envs.eval.check",
    "eval_command": "tool_envs.eval.commands",
    "check_command": "tool_envs.eval.commands",
}

if TYPE_CHECKING:
    from tool_envs.errors import EvalError as EvalError
    from tool_envs.eval.check import check_env_id as check_env_id
    from tool_envs.eval.commands import check_command as check_command
    from tool_envs.eval.commands import eval_command as eval_command
    from tool_envs.eval.heldout import HeldoutComparison as HeldoutComparison
    from tool_envs.eval.heldout import HeldoutEvaluator as HeldoutEvaluator
    from tool_envs.eval.heldout import mcnemar_exact as mcnemar_exact
    from tool_envs.eval.metrics import pass_at_k as pass_at_k
    from tool_envs.eval.metrics import pass_hat_k as pass_hat_k
    from tool_envs.eval.metrics import summarize as summarize
    from tool_envs.eval.result import EvalResult as EvalResult
    from tool_envs.eval.runner import EvalConfig as EvalConfig
    from tool_envs.eval.runner import run_eval as run_eval
    from tool_envs.rollout.agents import GoldAgent as GoldAgent
    from tool_envs.rollout.agents import NoopAgent as NoopAgent
    from tool_envs.rollout.agents import OpenAIAgent as OpenAIAgent

__all__ = list(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

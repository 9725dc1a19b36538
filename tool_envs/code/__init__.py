"""Code-execution family: ``tool_envs/CodeExec-v0``, its task format, judge and sandbox.

The sandbox (:mod:`tool_envs.code.sandbox`) is usable on its own; the judge runs a solution
against a task's tests inside it; the env wraps both as ``code_exec`` and ``submit`` tools.
"""

from __future__ import annotations

from tool_envs._lazy import lazy_exports

_LAZY = {
    "CodeExecEnv": "tool_envs.code.env",
    "extract_code": "tool_envs.code.answer",
    "submission_from_reply": "tool_envs.code.answer",
    "format_report": "tool_envs.code.env",
    "JudgeReport": "tool_envs.code.judge",
    "TestResult": "tool_envs.code.judge",
    "run_tests": "tool_envs.code.judge",
    "StdioCase": "tool_envs.code.spec",
    "TestSuite": "tool_envs.code.spec",
    "code_task_row": "tool_envs.code.spec",
    "parse_reward_spec": "tool_envs.code.spec",
    "load_code_tasks": "tool_envs.code.loaders",
    "default_splits": "tool_envs.code.problems",
    "generate_splits": "tool_envs.code.problems",
}

__all__ = sorted(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)

"""Code-execution family: ``tool_envs/CodeExec-v0``, its task format, judge and sandbox.

The sandbox (:mod:`tool_envs.code.sandbox`) is usable on its own; the judge runs a solution
against a task's tests inside it; the env wraps both as ``code_exec`` and ``submit`` tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

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

if TYPE_CHECKING:
    from tool_envs.code.answer import extract_code as extract_code
    from tool_envs.code.answer import submission_from_reply as submission_from_reply
    from tool_envs.code.env import CodeExecEnv as CodeExecEnv
    from tool_envs.code.env import format_report as format_report
    from tool_envs.code.judge import JudgeReport as JudgeReport
    from tool_envs.code.judge import TestResult as TestResult
    from tool_envs.code.judge import run_tests as run_tests
    from tool_envs.code.loaders import load_code_tasks as load_code_tasks
    from tool_envs.code.problems import default_splits as default_splits
    from tool_envs.code.problems import generate_splits as generate_splits
    from tool_envs.code.spec import StdioCase as StdioCase
    from tool_envs.code.spec import TestSuite as TestSuite
    from tool_envs.code.spec import code_task_row as code_task_row
    from tool_envs.code.spec import parse_reward_spec as parse_reward_spec

__all__ = sorted(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

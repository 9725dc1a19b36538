"""``tool_envs/CodeExec-v0``: write Python, run it against visible tests, submit a solution.

Every run happens in :mod:`tool_envs.code.sandbox` (a warm worker inside the strongest isolation
the host offers), kept across episodes and closed with the env.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tool_envs.code.answer import extract_code, submission_from_reply
from tool_envs.code.judge import JudgeReport, Runner, run_tests
from tool_envs.code.sandbox import IsolationLevel, Sandbox, SandboxPool, SandboxUnavailable
from tool_envs.code.sandbox.isolation import GUARANTEES
from tool_envs.code.spec import CodeRewardSpec, parse_reward_spec
from tool_envs.core import options
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.messages import Message
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.pickling import state_without
from tool_envs.core.tools import Toolset, tool
from tool_envs.errors import EnvConfigError

__all__ = ["CodeExecEnv", "extract_code", "format_report"]

_REPORTED_FAILURES = 5


def _unfence(code: str, entry_point: str | None) -> str:
    """Models often wrap a tool's code argument in a fence (or several): run what the reply
    rule picks (:mod:`tool_envs.code.answer`)."""
    stripped = code.strip()
    if stripped.startswith("```"):
        text = stripped if stripped.endswith("```") else stripped + "\n```"
        inner = submission_from_reply(text, entry_point)
        if inner is not None:
            return inner
    return code


class CodeExecEnv(ToolEnv):
    """Solve a programming task; tools: ``code_exec(code)`` and ``submit(code)``.

    ``code_exec`` runs the code against the task's visible tests (or just runs it when there are
    none) and answers with a compact report. ``submit`` hands in the solution and ends the
    episode; a turn without tool calls also ends it, and (if ``answer_from_reply``) the code it
    holds is the submission: the last fenced block that defines the task's entry point, with
    the definitions it uses from the reply's other blocks, so that a usage example after the
    solution is not what gets graded; when no block defines it (or the task reads stdin), the
    last block (:mod:`tool_envs.code.answer`). The reward runs the hidden tests (the visible
    ones when a task has none hidden):

    - all pass: ``success_reward``;
    - some fail: ``success_reward * fraction_passed`` with ``partial_credit``, else 0, minus
      ``timeout_penalty`` if a test ran out of time, else minus ``failure_penalty``;
    - nothing submitted: ``-no_submission_penalty``.

    Args:
        tasks: Task rows or a source for :func:`tool_envs.data.load_tasks`; default: the
            generated task set (``datasets/code_tasks``, train split).
        parser: Tool-call parser name or instance.
        render_mode: None or ``"ansi"``.
        sandbox: A started or unstarted :class:`Sandbox` / :class:`SandboxPool` to share
            between envs (the caller closes it). Default: the env owns one warm worker.
        isolation: ``"bwrap"``, ``"namespaces"``, ``"rlimits"`` or ``"none"``; default: the
            strongest available (see ``tool-envs doctor``). What model code can see at the
            level in use is in ``info["isolation_guarantees"]`` after reset: at ``bwrap`` and
            ``namespaces`` nothing of the host but the interpreter and system libraries (no
            task data); at ``rlimits`` every world-readable file, task data included.
        allow_unisolated: Required to run model-written code with no isolation at all.
        success_reward: The reward, as above.
        failure_penalty: Subtracted, as above (give it >= 0).
        timeout_penalty: Subtracted, as above (give it >= 0).
        no_submission_penalty: Subtracted, as above (give it >= 0).
        partial_credit: The reward, as above.
        answer_from_reply: Take a final message's code (as above) as the submission.
    """

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
        sandbox: Sandbox | SandboxPool | None = None,
        isolation: str | None = None,
        allow_unisolated: bool = False,
        success_reward: float = 1.0,
        failure_penalty: float = 0.0,
        timeout_penalty: float = 0.0,
        no_submission_penalty: float = 0.0,
        partial_credit: bool = False,
        answer_from_reply: bool = True,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        for name, value in (
            ("failure_penalty", failure_penalty),
            ("timeout_penalty", timeout_penalty),
            ("no_submission_penalty", no_submission_penalty),
        ):
            if not isinstance(value, bool) and isinstance(value, (int, float)) and value < 0:
                raise EnvConfigError(f"{name}={value} must be >= 0 (penalties are subtracted)")
        self.success_reward = options.number("success_reward", success_reward)
        self.failure_penalty = options.number("failure_penalty", failure_penalty, minimum=0)
        self.timeout_penalty = options.number("timeout_penalty", timeout_penalty, minimum=0)
        self.no_submission_penalty = options.number(
            "no_submission_penalty", no_submission_penalty, minimum=0
        )
        self.partial_credit = options.flag("partial_credit", partial_credit)
        self.answer_from_reply = options.flag("answer_from_reply", answer_from_reply)
        if sandbox is not None and not callable(getattr(sandbox, "run", None)):
            raise EnvConfigError(
                f"sandbox={sandbox!r} is not valid: expected a Sandbox or SandboxPool (or None)"
            )
        self._shared_runner = sandbox
        self._level = _parse_level(isolation)
        self._allow_unisolated = options.flag("allow_unisolated", allow_unisolated)
        self._owned: Sandbox | None = None
        if sandbox is None:
            self._owned = self._new_sandbox()  # fail at construction if the level is missing
        self._tools = Toolset.from_object(self)
        self._spec: CodeRewardSpec | None = None
        self._submission: str | None = None
        self._submitted_via: str | None = None
        self._code_exec_runs = 0

    # ----------------------------------------------------------------------- tools

    @tool
    def code_exec(self, code: str) -> str:
        """Run Python code against the task's visible tests and report what happened.

        Args:
            code: The complete Python source to run (your whole solution so far).
        """
        spec = self._require_spec()
        self._code_exec_runs += 1
        report = run_tests(
            self._runner(),
            _unfence(code, spec.tests.entry_point),
            spec.tests,
            spec.tests.visible,
            time_limit_s=spec.time_limit_s,
            memory_limit_mb=spec.memory_limit_mb,
        )
        return format_report(report)

    @tool(terminates=True)
    def submit(self, code: str) -> str:
        """Submit your final solution; this ends the episode and your code is graded.

        Args:
            code: The complete Python source of the solution.
        """
        self._submission = _unfence(code, self._require_spec().tests.entry_point)
        self._submitted_via = "submit"
        return "Submitted."

    # ----------------------------------------------------------------------- ToolEnv hooks

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return self.task_splits()["train"]

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        from tool_envs.code.problems import default_splits

        return default_splits()

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """Run the reference solution once with ``code_exec``, then submit it."""
        reference = task.get("extra_info", {}).get("reference_solution")
        if not reference:
            return None
        return [
            _hermes_call("code_exec", {"code": reference}),
            _hermes_call("submit", {"code": reference}),
        ]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        observation, info = super().reset(seed=seed, options=options)
        info["isolation"] = self.isolation
        info["isolation_guarantees"] = GUARANTEES[IsolationLevel[self.isolation.upper()]]
        return observation, info

    def check_task(self, task: dict[str, Any]) -> None:
        parse_reward_spec(task["reward_spec"])

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._spec = parse_reward_spec(task["reward_spec"])
        self._submission = None
        self._submitted_via = None
        self._code_exec_runs = 0
        return self._tools

    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        if self.answer_from_reply and self._submission is None:
            code = submission_from_reply(content, self._require_spec().tests.entry_point)
            if code is not None:
                self._submission = code
                self._submitted_via = "reply"
        return [], True

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        spec = self._require_spec()
        info: dict[str, Any] = {
            "isolation": self.isolation,
            "submitted_via": self._submitted_via,
            "code_exec_runs": self._code_exec_runs,
        }
        if self._submission is None:
            reward = -self.no_submission_penalty
            return reward, {**info, "reward": reward, "reason": "no submission", "passed": 0,
                            "total": len(spec.tests.graded)}  # fmt: skip
        report = run_tests(
            self._runner(),
            self._submission,
            spec.tests,
            spec.tests.graded,
            time_limit_s=spec.time_limit_s,
            memory_limit_mb=spec.memory_limit_mb,
        )
        if report.all_passed:
            reward, reason = self.success_reward, "all tests passed"
        else:
            base = self.success_reward * report.fraction if self.partial_credit else 0.0
            if report.timed_out:
                reward, reason = base - self.timeout_penalty, "a test ran out of time"
            elif report.load_error is not None:
                reward, reason = base - self.failure_penalty, "the solution failed to load"
            else:
                reward, reason = base - self.failure_penalty, "some tests failed"
        failures = [
            f"test {index}: {result.status}: {result.detail}"
            for index, result in enumerate(report.results, 1)
            if not result.passed
        ]
        return reward, {
            **info,
            "reward": reward,
            "reason": reason,
            "passed": report.passed,
            "total": report.total,
            "fraction": report.fraction,
            "counts": report.counts(),
            "load_error": report.load_error,
            "failures": failures[:_REPORTED_FAILURES],
            "judge_seconds": report.duration_s,
        }

    def close(self) -> None:
        super().close()
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    # ----------------------------------------------------------------------- sandbox

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the worker process: a copy starts its own on first use."""
        return state_without(self, cleared=("_owned", "_shared_runner"))

    @property
    def isolation(self) -> str:
        """The isolation level model-written code runs under (see ``tool-envs doctor``)."""
        runner = self._shared_runner if self._shared_runner is not None else self._runner()
        return runner.isolation

    def _new_sandbox(self) -> Sandbox:
        try:
            return Sandbox(self._level, allow_unisolated=self._allow_unisolated)
        except SandboxUnavailable as exc:
            raise EnvConfigError(f"CodeExec-v0 cannot run code here: {exc}") from exc

    def _runner(self) -> Runner:
        if self._shared_runner is not None:
            return self._shared_runner
        if self._owned is None:  # closed earlier; a later reset gets a fresh worker
            self._owned = self._new_sandbox()
        return self._owned

    def _require_spec(self) -> CodeRewardSpec:
        if self._spec is None:
            raise RuntimeError("no episode in progress; call reset() first")
        return self._spec


def format_report(report: JudgeReport) -> str:
    """The compact text ``code_exec`` answers with: verdicts, failures, then what was printed."""
    lines: list[str] = []
    if report.load_error is not None:
        lines.append(f"Your code failed to run: {report.load_error}")
    elif report.total == 0:
        lines.append("This task has no visible tests; your code ran without errors.")
    else:
        summary = ", ".join(f"{count} {status}" for status, count in report.counts().items())
        lines.append(f"Visible tests: {report.passed}/{report.total} passed ({summary}).")
        for index, result in enumerate(report.results, 1):
            if not result.passed:
                lines.append(f"- test {index} {result.status}: {result.detail}")
    if report.stdout.strip():
        lines.append(f"stdout:\n{report.stdout.rstrip()}")
    if report.stderr.strip():
        lines.append(f"stderr:\n{report.stderr.rstrip()}")
    return "\n".join(lines)


def _hermes_call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _parse_level(isolation: str | None) -> IsolationLevel | None:
    if isolation is None:
        return None
    if not isinstance(isolation, str):
        raise EnvConfigError(f"isolation={isolation!r} is not a level name (a string) or None")
    try:
        return IsolationLevel[isolation.upper()]
    except KeyError:
        names = ", ".join(level.name.lower() for level in IsolationLevel)
        raise EnvConfigError(f"isolation={isolation!r} is not one of: {names}") from None

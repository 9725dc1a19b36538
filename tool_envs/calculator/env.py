"""``tool_envs/Calculator-v0``: arithmetic questions answered with calculator tools.

The smallest real env of the suite: it exercises parsing, tool execution, error observations and
a verifiable reward, and trains in minutes on a CPU.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tool_envs.calculator.tasks import default_splits, gold_turns
from tool_envs.calculator.tools import CALCULATOR_TOOLS
from tool_envs.core import options
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.messages import Message
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.tools import Toolset
from tool_envs.errors import TaskRowError

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def final_number(text: str) -> float | None:
    """The last number in ``text`` (thousands separators ignored), or None."""
    found = _NUMBER.findall(text.replace(",", ""))
    return float(found[-1]) if found else None


class CalculatorEnv(ToolEnv):
    """Answer an arithmetic question; tools: add, subtract, multiply, divide.

    The first turn without a tool call is the final answer and ends the episode. Reward is 1.0
    when the last number in it equals ``reward_spec["answer"]`` (within ``tolerance``, relative)
    and, if ``require_tool_use`` (default), at least one tool call succeeded; else 0.0.

    Args:
        tasks: Task rows, or a source for :func:`tool_envs.data.load_tasks`; default: the
            1,000 generated training tasks.
        parser: Tool-call parser name or instance (default ``"auto"``).
        render_mode: None or ``"ansi"``.
        require_tool_use: A correct answer without any successful tool call earns 0.
        tolerance: Relative tolerance when comparing the answer.
    """

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
        require_tool_use: bool = True,
        tolerance: float = 1e-6,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        self.require_tool_use = options.flag("require_tool_use", require_tool_use)
        self.tolerance = options.number("tolerance", tolerance, minimum=0.0)
        self._calculator = Toolset(CALCULATOR_TOOLS)
        self._expected: float = math.nan
        self._final_answer: str | None = None

    @property
    def steps_wait(self) -> bool:
        return False

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return default_splits()["train"]

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        return default_splits()

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        return gold_turns(dict(task))

    def check_task(self, task: dict[str, Any]) -> None:
        answer = task["reward_spec"].get("answer")
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            raise TaskRowError(
                f"Calculator tasks need a number here, got {answer!r}", field="reward_spec.answer"
            )
        if not math.isfinite(answer):
            raise TaskRowError(
                f"must be a finite number, got {answer!r}", field="reward_spec.answer"
            )

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._expected = float(task["reward_spec"]["answer"])
        self._final_answer = None
        return self._calculator

    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        self._final_answer = content
        return [], True

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        given = final_number(self._final_answer or "")
        correct = given is not None and math.isclose(
            given, self._expected, rel_tol=self.tolerance, abs_tol=self.tolerance
        )
        used_tools = sum(outcome.error is None for _, outcome in self._call_log)
        if not correct:
            reason = "no number in the final answer" if given is None else "wrong answer"
        elif self.require_tool_use and used_tools == 0:
            reason = "correct answer but no successful tool call (require_tool_use=True)"
        else:
            reason = "correct answer"
        reward = 1.0 if reason == "correct answer" else 0.0
        return reward, {
            "reward": reward,
            "reason": reason,
            "expected": self._expected,
            "given": given,
            "successful_tool_calls": used_tools,
        }

"""Envs whose episode ends on the agent's final answer (web search, MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from tool_envs.core.messages import Message
from tool_envs.core.messages import user as user_message
from tool_envs.core.tagged import last_tagged

__all__ = ["EndsOnAnswer"]


class EndsOnAnswer:
    """Mixin for a :class:`~tool_envs.core.env.ToolEnv` whose episode ends when the agent answers.

    With ``answer_format == "reply"`` the agent's first reply to the user is the answer; with
    ``"tag"`` it is the last ``<answer>...</answer>`` block of the first reply that has one, and
    a reply without one gets ``nudge`` back as the user's turn. :meth:`_on_reply` keeps the
    answer in ``_answer`` for the reward.
    """

    answer_format: str
    nudge: ClassVar[str]
    _answer: str | None

    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        if self.answer_format == "reply":
            self._answer = content.strip()
            return [], True
        answer = last_tagged(content, "answer")
        if answer is None:
            return [user_message(self.nudge)], False
        self._answer = answer
        return [], True

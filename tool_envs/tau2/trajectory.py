"""An episode as tau2 messages, in the order tau2's orchestrator would have recorded them.

The agent's conversation (``env.messages``) lacks what the user did on their own device, so
the env logs every executed call (:class:`~tool_envs.tau2.tools.Executed`) with the index of
the conversation message it came before. Rebuilding tau2's trajectory from the two lets tau2's
own evaluators grade the episode, and lets a run be saved in tau2's format.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from tool_envs.core.messages import Message
from tool_envs.tau2.domains import import_tau2
from tool_envs.tau2.tools import Executed


def to_tau2_messages(
    conversation: Sequence[Message], calls: Sequence[tuple[int, Executed]]
) -> list[Any]:
    """tau2 ``Message`` objects for ``conversation`` (system messages left out: tau2 keeps the
    policy outside the trajectory).

    ``calls`` are the executed calls in order, as (index in ``conversation``, call): a user's
    device call was made just before that message; an agent's call belongs to an assistant
    message (a call that never ran, e.g. a malformed one, has no tau2 counterpart). Agent calls
    are matched to messages in order, so ids a model repeats across turns cannot mix them up.
    """
    message = import_tau2("tau2.data_model.message")
    out: list[Any] = []
    pending = deque(pair for pair in calls if pair[1].requestor == "user")
    queue = deque(call for _, call in calls if call.requestor == "assistant")
    awaiting: deque[Executed] = deque()
    for index, item in enumerate(conversation):
        while pending and pending[0][0] <= index:
            out.extend(_user_call(message, pending.popleft()[1]))
        role = item["role"]
        if role == "user":
            out.append(message.UserMessage(role="user", content=item.get("content") or ""))
        elif role == "assistant":
            awaiting = deque()
            for part in item.get("tool_calls") or []:
                if queue and queue[0].call_id == part.get("id"):
                    awaiting.append(queue.popleft())
            calls = [
                message.ToolCall(
                    id=c.call_id, name=c.name, arguments=c.arguments, requestor="assistant"
                )
                for c in awaiting
            ]
            content = item.get("content") or None
            out.append(
                message.AssistantMessage(
                    role="assistant", content=content, tool_calls=calls or None
                )
            )
        elif role == "tool" and awaiting and awaiting[0].call_id == item.get("tool_call_id"):
            out.append(_tool_message(message, awaiting.popleft()))
    for _, call in pending:  # device calls after the last message
        out.extend(_user_call(message, call))
    return out


def _user_call(message: Any, call: Executed) -> list[Any]:
    """A user turn that is one device tool call, and its result."""
    tool_call = message.ToolCall(
        id=call.call_id, name=call.name, arguments=call.arguments, requestor="user"
    )
    return [message.UserMessage(role="user", tool_calls=[tool_call]), _tool_message(message, call)]


def _tool_message(message: Any, call: Executed) -> Any:
    return message.ToolMessage(
        id=call.call_id,
        role="tool",
        content=call.content,
        requestor=call.requestor,
        error=call.error,
    )

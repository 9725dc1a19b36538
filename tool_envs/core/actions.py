"""Turn one assistant action (raw text or a chat-API message) into calls, failures and a message.

Raw text goes through the env's tool-call parser. An assistant message dict from a chat API with
native tool calling is taken as given, except that JSON-string arguments are decoded (and a call
whose arguments are not a JSON object becomes a failure the model is told about).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gymnasium.error import InvalidAction

from tool_envs.core import messages
from tool_envs.core.messages import Message, ToolCallMessagePart
from tool_envs.core.parsers.base import ToolCall, ToolCallParser


@dataclass(frozen=True)
class CallFailure:
    """A call attempt that could not be turned into a ToolCall; the model gets ``message``."""

    message: str
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class InterpretedAction:
    """What the env does with one assistant turn.

    Attributes:
        message: The assistant message appended to the conversation (content without call markup,
            structured ``tool_calls`` with ids).
        calls: Well-formed calls, each with an id.
        failures: Malformed call attempts.
        content: The text meant for the user.
    """

    message: Message
    calls: list[ToolCall] = field(default_factory=list)
    failures: list[CallFailure] = field(default_factory=list)

    @property
    def content(self) -> str:
        return self.message["content"]

    @property
    def is_reply(self) -> bool:
        """No call and no call attempt: the turn is a message to the user."""
        return not self.calls and not self.failures


def interpret_action(
    action: Any, parser: ToolCallParser, tool_names: frozenset[str], turn: int
) -> InterpretedAction:
    """Interpret ``action``; raises InvalidAction only for values no model could have produced."""
    if isinstance(action, str):
        return _from_text(action, parser, tool_names, turn)
    if isinstance(action, dict) and action.get("role", "assistant") == "assistant":
        return _from_message(action, turn)
    raise InvalidAction(
        "step() takes the assistant's raw text (str) or an assistant message dict "
        "({'role': 'assistant', 'content': ..., 'tool_calls': [...]}); "
        f"got {type(action).__name__}"
        + (f" with role {action.get('role')!r}" if isinstance(action, dict) else "")
    )


def _call_part(call: ToolCall) -> ToolCallMessagePart:
    return {
        "id": call.id or "",
        "type": "function",
        "function": {"name": call.name, "arguments": dict(call.arguments)},
    }


def _from_text(
    text: str, parser: ToolCallParser, tool_names: frozenset[str], turn: int
) -> InterpretedAction:
    parsed = parser.parse(text, tool_names=tool_names)
    calls = [
        ToolCall(name=c.name, arguments=dict(c.arguments), id=c.id or f"call_{turn}_{i}")
        for i, c in enumerate(parsed.tool_calls)
    ]
    failures = []
    if parsed.error is not None:
        failures.append(
            CallFailure(
                f"could not parse your tool call ({parsed.error.format} format): "
                f"{parsed.error.message}"
            )
        )
    # After a malformed call the raw text stays in the conversation, so the error message the
    # model gets next refers to something it can still see.
    content = parsed.content if parsed.error is None else text
    message = messages.assistant(content, [_call_part(c) for c in calls])
    return InterpretedAction(message=message, calls=calls, failures=failures)


def _from_message(action: dict[str, Any], turn: int) -> InterpretedAction:
    content = action.get("content") or ""
    if not isinstance(content, str):
        raise InvalidAction(
            f"assistant message content must be a string, got {type(content).__name__}"
        )
    calls: list[ToolCall] = []
    failures: list[CallFailure] = []
    parts: list[ToolCallMessagePart] = []
    for i, part in enumerate(action.get("tool_calls") or []):
        call_id = (part.get("id") if isinstance(part, dict) else None) or f"call_{turn}_{i}"
        function = part.get("function") if isinstance(part, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        raw_arguments = function.get("arguments", {}) if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            failures.append(CallFailure("tool call has no function name", call_id))
            parts.append(
                {"id": call_id, "type": "function", "function": {"name": "", "arguments": {}}}
            )
            continue
        arguments, problem = _decode_arguments(raw_arguments)
        if problem is not None:
            failures.append(CallFailure(f"arguments of {name} {problem}", call_id, name))
            kept = raw_arguments if isinstance(raw_arguments, (str, dict)) else str(raw_arguments)
            parts.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": kept}}
            )
            continue
        call = ToolCall(name=name, arguments=arguments, id=call_id)
        calls.append(call)
        parts.append(_call_part(call))
    return InterpretedAction(
        message=messages.assistant(content, parts), calls=calls, failures=failures
    )


def _decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return dict(raw), None
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError as exc:
            return {}, f"are not valid JSON ({exc.msg} at position {exc.pos})"
        if isinstance(decoded, dict):
            return decoded, None
        return {}, f"must be a JSON object, got {type(decoded).__name__}"
    return {}, f"must be a JSON object, got {type(raw).__name__}"

"""Turn one assistant action (raw text or a chat-API message) into calls, failures and a message.

Raw text goes through the env's tool-call parser. An assistant message dict from a chat API with
native tool calling is taken as given, except that JSON-string arguments are decoded (and a call
whose arguments are not a JSON object becomes a failure the model is told about).

This is the boundary where what a model wrote enters an env, so everything after it may trust
the shapes: every call has a string id and a name, and its arguments are a fresh plain-JSON
object (:func:`tool_envs.core.json_values.plain_json`: nested at most 64 deep, integers short
enough to print). Whatever breaks those rules (arguments nested thousands deep, a 5,000-digit
integer, ``"tool_calls": 5``, an integer call id) becomes a failure the model is told about, or
is normalised (an integer id becomes its string), never an exception. At most
:data:`MAX_TOOL_CALLS` calls of one turn are run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gymnasium.error import InvalidAction

from tool_envs.core import messages
from tool_envs.core.json_values import describe, plain_json
from tool_envs.core.messages import Message, ToolCallMessagePart
from tool_envs.core.parsers._common import call_id as normalise_call_id
from tool_envs.core.parsers._common import decode_whole
from tool_envs.core.parsers.base import ToolCall, ToolCallParser

MAX_TOOL_CALLS = 64
"""Most tool calls run in one turn; further calls get one error message instead.

Real agents make a handful of calls a turn; without a cap, one turn of thousands of calls would
hold the env (and every tool behind it) for minutes.
"""


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
        return _text_call_in_native(_from_message(action, turn), parser, tool_names, turn)
    raise InvalidAction(
        "step() takes the assistant's raw text (str) or an assistant message dict "
        "({'role': 'assistant', 'content': ..., 'tool_calls': [...]}); "
        f"got {type(action).__name__}"
        + (f" with role {action.get('role')!r}" if isinstance(action, dict) else "")
    )


def _text_call_in_native(
    interpreted: InterpretedAction, parser: ToolCallParser, tool_names: frozenset[str], turn: int
) -> InterpretedAction:
    """A chat-API message without calls whose text holds a call attempt: a failure, not a reply.

    A server that cannot parse a call the model wrote (malformed JSON, a format its tool parser
    does not know) returns it as plain text; taken as a message to the user it would end the
    episode as a final answer. The env's parser recognises the attempt. Nothing runs (in native
    mode the server parses calls, and it did not), the model is told to call again, and the kept
    message gets a tool-call part so that the error observation answers a call id, as chat APIs
    require.
    """
    if not interpreted.is_reply or not interpreted.content.strip():
        return interpreted
    parsed = parser.parse(interpreted.content, tool_names=tool_names)
    if not parsed.tool_calls and parsed.error is None:
        return interpreted
    name = parsed.tool_calls[0].name if parsed.tool_calls else ""
    call_id = f"call_{turn}_0"
    detail = parsed.error.message if parsed.error is not None else f"a call of {name}"
    failure = CallFailure(
        f"your reply holds a tool call written as text ({detail}); the chat server did not turn "
        "it into a structured tool call, so nothing ran. Make the call again.",
        call_id,
        name or None,
    )
    part: ToolCallMessagePart = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": {}},
    }
    message = messages.assistant(interpreted.content, [part])
    return InterpretedAction(message=message, failures=[failure])


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
    calls: list[ToolCall] = []
    failures: list[CallFailure] = []
    if parsed.error is not None:
        failures.append(
            CallFailure(
                f"could not parse your tool call ({parsed.error.format} format): "
                f"{parsed.error.message}"
            )
        )
    for i, parsed_call in enumerate(parsed.tool_calls[:MAX_TOOL_CALLS]):
        call_id = parsed_call.id or f"call_{turn}_{i}"
        arguments, problem = plain_json(parsed_call.arguments)
        if problem is not None:
            failures.append(_arguments_failure(parsed_call.name, problem, call_id))
            continue
        calls.append(ToolCall(name=parsed_call.name, arguments=arguments, id=call_id))
    _cap_failure(len(parsed.tool_calls), failures)
    # After a malformed call the raw text stays in the conversation, so the error message the
    # model gets next refers to something it can still see.
    content = parsed.content if not failures else text
    message = messages.assistant(content, [_call_part(c) for c in calls])
    return InterpretedAction(message=message, calls=calls, failures=failures)


def _from_message(action: dict[str, Any], turn: int) -> InterpretedAction:
    content = _message_content(action.get("content"))
    raw_calls = action.get("tool_calls")
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, (list, tuple)):
        failure = CallFailure(
            f'"tool_calls" must be a list of calls like [{_CALL_SHAPE}]; got {describe(raw_calls)}'
        )
        return InterpretedAction(message=messages.assistant(content), failures=[failure])
    calls: list[ToolCall] = []
    failures: list[CallFailure] = []
    parts: list[ToolCallMessagePart] = []
    for i, part in enumerate(raw_calls[:MAX_TOOL_CALLS]):
        call, failure, message_part = _native_call(part, f"call_{turn}_{i}")
        parts.append(message_part)
        if call is not None:
            calls.append(call)
        if failure is not None:
            failures.append(failure)
    _cap_failure(len(raw_calls), failures)
    return InterpretedAction(
        message=messages.assistant(content, parts), calls=calls, failures=failures
    )


_CALL_SHAPE = '{"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}'


def _native_call(
    part: Any, default_id: str
) -> tuple[ToolCall | None, CallFailure | None, ToolCallMessagePart]:
    """One item of ``tool_calls``: the call or why it failed, and what the conversation keeps.

    The kept message part always has a string id, a string name and arguments that are a plain
    JSON object or a string, so the conversation stays valid for chat templates and APIs.
    """
    if not isinstance(part, dict):
        failure = CallFailure(f"each tool call must be {_CALL_SHAPE}; got {describe(part)}")
        return None, failure, _part(default_id, "", {})
    call_id = normalise_call_id(part.get("id")) or default_id
    function = part.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name.strip():
        failure = CallFailure(f"tool call has no function name; write {_CALL_SHAPE}", call_id)
        return None, failure, _part(call_id, "", {})
    raw_arguments = function.get("arguments")
    arguments, problem = _decode_arguments(raw_arguments)
    if problem is not None:
        kept = raw_arguments if isinstance(raw_arguments, str) else f"<{describe(raw_arguments)}>"
        return None, _arguments_failure(name, problem, call_id), _part(call_id, name, kept)
    call = ToolCall(name=name, arguments=arguments, id=call_id)
    return call, None, _call_part(call)


def _part(call_id: str, name: str, arguments: dict[str, Any] | str) -> ToolCallMessagePart:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _message_content(content: Any) -> str:
    """The text of an assistant message: a string, None, or a list of text parts (the OpenAI
    content-part form some servers return); anything else is the caller's mistake."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        return "".join(p["text"] for p in content)
    raise InvalidAction(
        "assistant message content must be a string, None or a list of "
        f'{{"type": "text", "text": ...}} parts; got {type(content).__name__}'
    )


def _decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a fresh plain-JSON object, or a problem phrased for "arguments of X ..."."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, str):
        decoded = decode_whole(raw)
        if not decoded.ok:
            return {}, f"are not valid JSON ({decoded.message})"
        raw = decoded.value
        if not isinstance(raw, dict):
            return {}, f"must be a JSON object, got {describe(raw)}"
    elif not isinstance(raw, dict):
        return {}, f"must be a JSON object, got {describe(raw)}"
    arguments, problem = plain_json(raw)
    if problem is not None:
        return {}, f"are not plain JSON: {problem}"
    return arguments, None


def _arguments_failure(name: str, problem: str, call_id: str) -> CallFailure:
    if not problem.startswith(("are ", "must ")):
        problem = f"are not plain JSON: {problem}"
    return CallFailure(f"arguments of {name} {problem}", call_id, name)


def _cap_failure(count: int, failures: list[CallFailure]) -> None:
    if count > MAX_TOOL_CALLS:
        failures.append(
            CallFailure(
                f"{count} tool calls in one turn; only the first {MAX_TOOL_CALLS} were "
                f"considered, make at most {MAX_TOOL_CALLS} per turn"
            )
        )

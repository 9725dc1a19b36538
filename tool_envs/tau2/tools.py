"""tau2's toolkits behind our Toolset interface, executed exactly as tau2 executes them.

Arguments go to tau2 untouched (no schema check of ours first): a call that tau2 would reject
gets tau2's own ``Error: ...`` text, so the conversation is one tau2's evaluator can replay.
Two shortcuts over ``Environment.get_response``, neither changing a result: no log line is
formatted (tau2 builds an f-string of every response even when logging is off), and a known
tool's method is called directly instead of through ``make_tool_call``'s dispatch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Tool, ToolOutcome, Toolset
from tool_envs.tau2.domains import READ_ONLY_TYPES, Tau2Domain
from tool_envs.tau2.state import WriteGate

# make_tool_call's and use_tool's own parameter names: such an argument makes tau2 fail there
_DISPATCH_ARGUMENTS = frozenset({"tool_name", "requestor"})


class Executed(NamedTuple):
    """One tool call as tau2 records it: the call and the ``ToolMessage`` content/error (a
    tuple: one is made per call, and a frozen dataclass costs several times more to build)."""

    requestor: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    content: str
    error: bool


def execute(
    environment: Any, gate: WriteGate, tool_types: dict[str, str], call: ToolCall, requestor: str
) -> tuple[str, bool]:
    """Run one call on a tau2 environment; returns (tool message content, error flag)."""
    gate.open = tool_types.get(call.name) not in READ_ONLY_TYPES
    try:
        if call.name in tool_types and not _DISPATCH_ARGUMENTS & call.arguments.keys():
            # A known tool is the toolkit's own method, which is what make_tool_call ends up
            # calling; going there directly skips its rebuilding a dict of every tool twice.
            toolkit = environment.tools if requestor == "assistant" else environment.user_tools
            response = getattr(toolkit, call.name)(**call.arguments)
        else:  # unknown tools and odd argument names get exactly tau2's own error
            response = environment.make_tool_call(call.name, requestor=requestor, **call.arguments)
        gate.open = True  # sync_tools writes whatever the call was (telecom: line, bills, phone)
        environment.sync_tools()
        error = False
    except Exception as exc:  # tau2 turns every failure into an "Error: ..." tool message
        response, error = f"Error: {exc}", True
    finally:
        gate.open = False
    try:
        return environment.to_json_str(response), error
    except (TypeError, ValueError) as exc:  # tau2 itself would crash here; the model must not
        return f"Error: the tool returned something that is not JSON ({exc})", True


class Tau2Toolset(Toolset):
    """The agent's (or the user's) tools of a tau2 domain; ``call`` runs them through ``run``,
    which returns the executed call and whether the episode must end."""

    def __init__(
        self,
        domain: Tau2Domain,
        requestor: str,
        run: Callable[[ToolCall, str], tuple[Executed, bool]],
    ):
        super().__init__()
        self.requestor = requestor
        self._run = run
        types = domain.tool_types[requestor]
        for schema in domain.tool_schemas(requestor):
            name = schema["function"]["name"]
            self._tools[name] = Tool(
                name=name,
                function=_not_called_directly,
                schema=schema,
                writes=types.get(name) not in READ_ONLY_TYPES,
            )

    def call(self, call: ToolCall) -> ToolOutcome:
        executed, stop = self._run(call, self.requestor)
        error = "tool error" if executed.error else None
        return ToolOutcome(content=executed.content, error=error, terminates=stop)


def _not_called_directly(**_: Any) -> Any:
    raise RuntimeError("tau2 tools run through Tau2Toolset.call")

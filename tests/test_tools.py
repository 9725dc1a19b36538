"""Tools from typed functions, and the toolset boundary that turns model mistakes into messages."""

import dataclasses
import inspect

import pydantic
import pytest

from tool_envs.core.parsers import ToolCall
from tool_envs.core.tools import Tool, Toolset, format_result, tool
from tool_envs.errors import ToolDefinitionError


def lookup(email: str, limit: int = 3) -> dict:
    """Find users by email.

    Args:
        email: The user's email address.
        limit: How many users to return at most.
    """
    if "@" not in email:
        raise ValueError("email must contain '@'")
    return {"email": email, "limit": limit}


def explode(x: int) -> int:
    """Always fails.

    Args:
        x: Anything.
    """
    return 1 // 0


def test_schema_comes_from_hints_and_docstring():
    schema = Tool.from_function(lookup).schema
    assert schema == {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Find users by email.",
            "parameters": {
                "type": "object",
                "properties": {
                    "email": {"type": "string", "description": "The user's email address."},
                    "limit": {
                        "type": "integer",
                        "description": "How many users to return at most.",
                    },
                },
                "required": ["email"],
                "additionalProperties": False,
            },
        },
    }


def test_undocumented_function_is_rejected_with_the_fix():
    def bare(x):
        return x

    with pytest.raises(ToolDefinitionError, match="type hints"):
        Tool.from_function(bare)


def test_duplicate_names_are_rejected():
    with pytest.raises(ToolDefinitionError, match="two tools are named 'lookup'"):
        Toolset([lookup, lookup])


def test_decorator_keeps_function_intact_and_collects_methods():
    class Desk:
        def __init__(self):
            self.calls = 0

        @tool(writes=True)
        def bump(self, by: int) -> int:
            """Increase the counter.

            Args:
                by: Amount to add.
            """
            self.calls += by
            return self.calls

        @tool(terminates=True, name="hand_over")
        def transfer(self, summary: str) -> str:
            """Transfer to a human.

            Args:
                summary: What the human should know.
            """
            return "Transferred"

        def helper(self) -> None:
            """Not a tool."""

    assert list(inspect.signature(Desk.bump).parameters) == ["self", "by"]
    assert Desk.bump.__doc__.startswith("Increase the counter.")
    desk = Desk()
    tools = Toolset.from_object(desk)
    assert tools.names == ["bump", "hand_over"]
    assert tools["bump"].writes and tools["hand_over"].terminates
    assert tools.call(ToolCall("bump", {"by": 2})).content == "2"
    assert desk.calls == 2
    assert tools.call(ToolCall("hand_over", {"summary": "x"})).terminates


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            ToolCall("lokup", {"email": "a@b"}),
            "Error: unknown tool 'lokup'. Did you mean 'lookup'?",
        ),
        (ToolCall("lookup", {}), "'email' is a required property"),
        (ToolCall("lookup", {"email": 5}), "'email': 5 is not of type 'string'"),
        (
            ToolCall("lookup", {"email": "a@b", "sort": 1}),
            "unexpected argument ('sort' was unexpected)",
        ),
        (ToolCall("lookup", {"email": "nobody"}), "Error: email must contain '@'"),
        (
            ToolCall("explode", {"x": 1}),
            "Error: ZeroDivisionError: integer division or modulo by zero",
        ),
    ],
)
def test_every_model_mistake_becomes_an_error_message(call, expected):
    outcome = Toolset([lookup, explode]).call(call)
    assert outcome.error is not None
    assert outcome.content.startswith("Error: ")
    assert expected in outcome.content


def test_invalid_arguments_message_lists_expected_arguments():
    outcome = Toolset([lookup]).call(ToolCall("lookup", {}))
    assert outcome.content.endswith("Expected arguments: email, limit.")


def test_results_are_formatted_consistently():
    class Model(pydantic.BaseModel):
        name: str

    @dataclasses.dataclass
    class Point:
        x: int

    assert format_result("plain text") == "plain text"
    assert format_result({"b": 1, "a": "é"}) == '{"b": 1, "a": "é"}'
    assert format_result([1, 2.5, None]) == "[1, 2.5, null]"
    assert format_result(Model(name="n")) == '{"name": "n"}'
    assert format_result(Point(3)) == '{"x": 3}'
    assert Toolset([lookup]).call(ToolCall("lookup", {"email": "a@b"})).content == (
        '{"email": "a@b", "limit": 3}'
    )


def test_schemas_are_fresh_copies():
    tools = Toolset([lookup])
    tools.schemas[0]["function"]["name"] = "changed"
    assert tools.schemas[0]["function"]["name"] == "lookup"


def test_a_function_schema_is_made_once_and_each_tool_gets_its_own_copy(monkeypatch):
    """Every env instance builds its tools again (a served env, once a session): the
    docstring is parsed once per function, methods are keyed by their function (no instance is
    kept), and a tool that changes its schema changes no other tool's."""
    import gc
    import weakref

    from tool_envs.core import tools as tools_module

    parsed = []
    real = tools_module.get_json_schema
    monkeypatch.setattr(
        tools_module, "get_json_schema", lambda f: parsed.append(f.__qualname__) or real(f)
    )

    def probe(city: str) -> str:
        """Weather.

        Args:
            city: Where.
        """
        return city

    class Desk:
        @tool()
        def ring(self, times: int) -> str:
            """Ring the bell.

            Args:
                times: How often.
            """
            return "ding" * times

    first, second = Tool.from_function(probe), Tool.from_function(probe)
    desks = [Desk(), Desk()]
    ringers = [Toolset.from_object(desk)["ring"] for desk in desks]
    assert len(parsed) == 2  # probe once, ring once
    first.schema["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    assert second.schema["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert ringers[0].schema == ringers[1].schema
    assert "self" not in ringers[0].schema["function"]["parameters"]["properties"]
    gone = weakref.ref(desks[0])
    del desks[0], ringers[0]
    gc.collect()
    assert gone() is None  # the cache keeps no instance of Desk

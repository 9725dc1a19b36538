"""Tools as typed Python functions, and the toolset that runs a model's calls against them.

A tool is an ordinary function (or bound method) with type hints and a Google-style docstring;
``transformers.utils.get_json_schema`` turns it into the OpenAI function schema that chat
templates and APIs expect. ``Toolset.call`` is the ONE boundary where anything a model asks for
(unknown tool, wrong or missing arguments, an exception inside the tool) becomes an error message
for the model instead of an exception for the caller.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import fastjsonschema
import jsonschema
import pydantic_core
from transformers.utils import get_json_schema
from transformers.utils.chat_template_utils import (
    DocstringParsingException,
    TypeHintParsingException,
)

from tool_envs.core.messages import copy_json
from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.pickling import state_without
from tool_envs.errors import InfrastructureError, ToolDefinitionError

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_OPTIONS = "__tool_envs_options__"


@functools.lru_cache(maxsize=1024)
def _compiled_check(parameters_json: str) -> Callable[[Any], Any]:
    """fastjsonschema's compiled check for one schema, shared by every env instance (compiling
    costs ~1 ms; an env server makes an env per session and its tools per env)."""
    return fastjsonschema.compile(json.loads(parameters_json), use_default=False)


@dataclass(frozen=True)
class ToolOptions:
    """Per-tool settings given with the :func:`tool` decorator.

    Attributes:
        name: Name shown to the model; defaults to the function's name.
        terminates: Calling this tool ends the episode (e.g. ``transfer_to_human_agents``).
        writes: The tool changes environment state (documentation, and for envs that care).
    """

    name: str | None = None
    terminates: bool = False
    writes: bool = False


def tool(
    fn: F | None = None, *, name: str | None = None, terminates: bool = False, writes: bool = False
) -> Any:
    """Mark a function or method as a tool, keeping it otherwise untouched.

    The function itself is returned (signature and docstring intact), so it stays callable and
    testable as plain Python. Usable bare (``@tool``) or with options (``@tool(terminates=True)``).
    """

    def mark(function: F) -> F:
        setattr(
            function, _TOOL_OPTIONS, ToolOptions(name=name, terminates=terminates, writes=writes)
        )
        return function

    return mark(fn) if fn is not None else mark


def _options_of(function: Callable[..., Any]) -> ToolOptions:
    target = getattr(function, "__func__", function)
    return getattr(target, _TOOL_OPTIONS, ToolOptions())


@dataclass(frozen=True)
class Tool:
    """A callable with its OpenAI function schema and a compiled argument validator."""

    name: str
    function: Callable[..., Any]
    schema: dict[str, Any]
    terminates: bool = False
    writes: bool = False

    @functools.cached_property
    def validator(self) -> Any:
        """JSON-schema validator of the arguments, compiled on first use (not pickled).

        Used to explain what is wrong; the yes/no check on every call is :attr:`check`.
        """
        parameters = self.schema["function"]["parameters"]
        return jsonschema.validators.validator_for(parameters)(parameters)

    @functools.cached_property
    def check(self) -> Callable[[Any], Any]:
        """The same schema compiled to Python by fastjsonschema: ~3 us a call instead of ~80.

        Raises ``fastjsonschema.JsonSchemaException`` on invalid arguments; never fills in
        defaults, so the arguments reach the tool exactly as the model wrote them.
        """
        return _compiled_check(json.dumps(self.schema["function"]["parameters"], sort_keys=True))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the compiled validators: a copy compiles its own on first use."""
        return state_without(self, dropped=("validator", "check"))

    @classmethod
    def from_function(
        cls, function: Callable[..., Any], options: ToolOptions | None = None
    ) -> Tool:
        """Build a tool from a typed, documented function; ToolDefinitionError if it is not."""
        options = options or _options_of(function)
        function_schema = copy_json(_function_schema(function))
        name = options.name or function_schema["name"]
        schema = {
            "type": "function",
            "function": {
                "name": name,
                "description": function_schema.get("description", ""),
                "parameters": function_schema["parameters"],
            },
        }
        return cls(
            name=name,
            function=function,
            schema=schema,
            terminates=options.terminates,
            writes=options.writes,
        )


# The schemas made so far, of plain functions and of methods (keyed by their function, so no
# instance is kept); weak, so a tool function made per instance (a closure) is not kept either.
_SCHEMAS: dict[bool, weakref.WeakKeyDictionary[Any, dict[str, Any]]] = {
    False: weakref.WeakKeyDictionary(),
    True: weakref.WeakKeyDictionary(),
}


def _function_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The function part of ``function``'s schema, made once per function: every env instance
    builds its tools again (a served env, once per session), and transformers' docstring parser
    took ~0.2 ms a tool. Read it, never change it (:meth:`Tool.from_function` copies it)."""
    schemas = _SCHEMAS[hasattr(function, "__self__")]
    key = getattr(function, "__func__", function)
    try:
        cached = schemas.get(key)
    except TypeError:  # a callable that takes no weak reference: made each time
        return _generate_function_schema(function)
    if cached is None:
        cached = schemas[key] = _generate_function_schema(function)
    return cached


def _generate_function_schema(function: Callable[..., Any]) -> dict[str, Any]:
    label = getattr(function, "__qualname__", repr(function))
    try:
        generated = get_json_schema(function)
    except (DocstringParsingException, TypeHintParsingException, ValueError) as exc:
        raise ToolDefinitionError(
            f"cannot build a tool schema for {label}: {exc}. A tool needs type hints on every "
            "argument and a Google-style docstring with an 'Args:' section describing each one."
        ) from exc
    function_schema = generated["function"]
    parameters = dict(function_schema.get("parameters") or {"type": "object", "properties": {}})
    accepts_extra = any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        for p in inspect.signature(function).parameters.values()
    )
    if not accepts_extra:
        parameters["additionalProperties"] = False
    return {**function_schema, "parameters": parameters}


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one call, already formatted for the model.

    Attributes:
        content: The text of the tool message.
        error: None on success, else a short description (also the start of ``content``).
        terminates: The called tool ends the episode.
    """

    content: str
    error: str | None = None
    terminates: bool = False


def format_result(value: Any) -> str:
    """Format a tool's return value consistently: strings as is, everything else as JSON."""
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):  # pydantic models
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _describe_validation_error(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unexpected argument")
    return f"'{path}': {error.message}" if path else error.message


class Toolset:
    """The tools of one environment (or one episode), keyed by name."""

    def __init__(self, tools: Iterable[Callable[..., Any] | Tool] = ()):
        self._tools: dict[str, Tool] = {}
        for item in tools:
            built = item if isinstance(item, Tool) else Tool.from_function(item)
            if built.name in self._tools:
                raise ToolDefinitionError(f"two tools are named '{built.name}'")
            self._tools[built.name] = built

    @classmethod
    def from_object(cls, obj: object) -> Toolset:
        """Collect the methods of ``obj`` marked with :func:`tool`, in definition order."""
        members = []
        for klass in reversed(type(obj).__mro__):
            for attr, value in vars(klass).items():
                if callable(value) and hasattr(value, _TOOL_OPTIONS) and attr not in members:
                    members.append(attr)
        return cls(getattr(obj, attr) for attr in members)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @functools.cached_property
    def name_set(self) -> frozenset[str]:
        """The tool names as a set, built once (parsers get it on every turn)."""
        return frozenset(self._tools)

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas, ready for ``apply_chat_template(tools=...)`` (fresh copies).

        Copied through JSON by pydantic-core (a third of the stdlib round trip's time: every
        reset of a served env pays it); the stdlib takes what it refuses (a lone surrogate)."""
        schemas = [t.schema for t in self._tools.values()]
        try:
            return pydantic_core.from_json(pydantic_core.to_json(schemas))
        except ValueError:
            return json.loads(json.dumps(schemas))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def call(self, call: ToolCall) -> ToolOutcome:
        """Run one call. Never raises for anything the model wrote."""
        found = self._tools.get(call.name)
        if found is None:
            return ToolOutcome(
                content=f"Error: {self._unknown_tool_message(call.name)}", error="unknown tool"
            )
        try:
            found.check(call.arguments)
            problems = []
        except fastjsonschema.JsonSchemaException:  # rare: let jsonschema say exactly what
            problems = [
                _describe_validation_error(e)
                for e in sorted(found.validator.iter_errors(call.arguments), key=lambda e: e.path)
            ]
        if problems:
            expected = ", ".join(found.schema["function"]["parameters"].get("properties", {}))
            message = (
                f"invalid arguments for {found.name}: {'; '.join(problems)}. "
                f"Expected arguments: {expected or 'none'}."
            )
            return ToolOutcome(content=f"Error: {message}", error="invalid arguments")
        try:
            value = found.function(**call.arguments)
            content = format_result(value)
        except InfrastructureError:
            raise  # not the model's doing: the env voids the episode
        except Exception as exc:
            detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            return ToolOutcome(content=f"Error: {detail}", error=type(exc).__name__)
        return ToolOutcome(content=content, terminates=found.terminates)

    def _unknown_tool_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, self._tools, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        available = ", ".join(self._tools) or "none"
        return f"unknown tool '{name}'.{hint} Available tools: {available}."

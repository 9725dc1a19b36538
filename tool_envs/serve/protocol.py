"""OpenEnv's wire protocol, as ``tool-envs serve`` and :class:`~tool_envs.serve.RemoteEnv` speak it.

Read from OpenEnv 0.10.0's own code (``openenv/core/env_server/types.py``, ``http_server.py``,
``serialization.py`` and ``env_client.py``); these are the shapes we rely on, nothing more.

**Session.** One WebSocket connection to ``/ws`` is one session with its own env instance,
created when the connection opens and released when it closes. Every frame is one JSON text
message; the client sends, the server answers each with exactly one frame, in order:

=====================================================  ===========================================
client sends                                           server answers
=====================================================  ===========================================
``{"type": "reset", "data": {<reset kwargs>}}``        ``{"type": "observation", "data": <result>}``
``{"type": "step", "data": {<action>}}``               ``{"type": "observation", "data": <result>}``
``{"type": "state"}``                                  ``{"type": "state", "data": {<state>}}``
``{"type": "close"}``                                  (nothing: the server closes the session)
=====================================================  ===========================================

A result is ``{"observation": {<fields>}, "reward": float | None, "done": bool}`` plus an optional
``"metadata"`` object (OpenEnv's ``serialize_observation``). A failure is
``{"type": "error", "data": {"message": str, "code": <WSErrorCode>, ...}}`` with the codes
``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``EXECUTION_ERROR``,
``CAPACITY_REACHED`` (then also ``active_sessions`` and ``max_sessions``; the server closes the
connection after it), ``FACTORY_ERROR`` and ``SESSION_ERROR``. OpenEnv's ``EnvClient`` raises on
any error frame; the session stays open after every error but a capacity or factory one.

HTTP: ``GET /health`` -> ``{"status": "healthy"}``; ``GET /metadata`` -> ``{"name",
"description", "version", ...}`` (OpenEnv's ``EnvironmentMetadata``); ``GET /schema`` ->
``{"action", "observation", "state"}`` JSON schemas. Task routes, as OpenEnv's: ``GET
/<Name-vN>/splits``; ``POST /<Name-vN>/tasks`` and ``/num_tasks`` with ``{"split": name}``,
``POST /<Name-vN>/task`` with ``{"split": name, "index": i}``.

**What tool-envs puts in it.** Reset data: ``{"seed": int | None, "options": {"task": <row>}}``
(``episode_id`` is accepted and echoed in the state). A step's action is
``{"text": "<the assistant's raw text>"}`` or ``{"message": {<assistant message with
tool_calls>}}`` (:class:`Action`). The observation fields are :class:`Observation`: the new chat
messages, the tool schemas (at reset), ``terminated`` / ``truncated``, the env's ``info`` (the
:class:`~tool_envs.core.ToolEnv` keys: ``turn``, ``tool_calls``, ``parse_error``,
``tool_errors``, ``stats``, ``reward_info`` with ``outcome`` / ``void_cause``), and the
assistant message as the env recorded it, so a client can keep ``env.messages`` without asking.
Errors add ``"exception"``: the name of the Python exception the env raised (``TaskRowError``,
``ResetNeeded``, ...), so a client can raise the same kind. Extensions of ours: ``/health``
adds ``active_sessions`` / ``max_sessions``; error frames add ``env_id`` (the env served) and, for a
``TaskRowError``, ``field``; ``POST /<Name-vN>/gold_turns`` with ``{"task": <row>}`` answers
``{"gold_turns": [...] | null}`` (OpenEnv clients ignore what they do not read).
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, model_validator

# OpenEnv's WSErrorCode values.
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"

MESSAGE_TYPES = ("reset", "step", "state", "close")


class ResetData(BaseModel):
    """The ``data`` of a reset frame: ``env.reset(seed=..., options=...)``'s arguments."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(default=None, ge=0, description="seed of env.reset")
    episode_id: str | None = Field(
        default=None, max_length=255, description="OpenEnv's optional episode id, echoed in state"
    )
    options: dict[str, Any] | None = Field(
        default=None, description='env.reset options, e.g. {"task": <task row>}'
    )


class Action(BaseModel):
    """A step's action: the assistant's raw text, or a message dict with ``tool_calls``."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, description="the assistant's raw text")
    message: dict[str, Any] | None = Field(
        default=None, description="an assistant message with OpenAI-style tool_calls"
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's action field")

    @model_validator(mode="after")
    def _one_of(self) -> Action:
        if (self.text is None) == (self.message is None):
            raise ValueError("an action has exactly one of 'text' and 'message'")
        return self

    @property
    def value(self) -> str | dict[str, Any]:
        return self.text if self.text is not None else self.message  # type: ignore[return-value]


class Observation(BaseModel):
    """The ``observation`` object of a result (reward and done travel beside it)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(
        description="the chat messages the env added (the gymnasium observation)"
    )
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="tool schemas in OpenAI function format (at reset)"
    )
    assistant_message: dict[str, Any] | None = Field(
        default=None, description="the step's assistant message as the env recorded it"
    )
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict")
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's field")


class State(BaseModel):
    """The ``data`` of a state frame."""

    model_config = ConfigDict(extra="allow")

    episode_id: str | None = None
    step_count: int = 0
    env_id: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class Metadata(BaseModel):
    """``GET /metadata`` (OpenEnv's ``EnvironmentMetadata``)."""

    name: str
    description: str
    version: str | None = None
    readme_content: str | None = None
    author: str | None = None
    documentation_url: str | None = None


def observation(
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    assistant_message: dict[str, Any] | None = None,
    terminated: bool = False,
    truncated: bool = False,
    info: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An :class:`Observation` as a plain dict, built without validating what the env made
    (it is the env's own output; validating it would cost more than the step)."""
    return {
        "messages": messages,
        "tools": tools,
        "assistant_message": assistant_message,
        "terminated": terminated,
        "truncated": truncated,
        "info": info or {},
        "metadata": {},
    }


def parse_action(data: Any) -> Action:
    """The step's action; the usual ``{"text": str}`` skips pydantic (a step's hot path)."""
    if type(data) is dict and len(data) == 1 and type(data.get("text")) is str:
        return Action.model_construct(text=data["text"], message=None, metadata={})
    return Action.model_validate(data)


def frame(kind: Literal["observation", "state", "error"], data: dict[str, Any]) -> str:
    """One server frame as JSON text."""
    return dumps({"type": kind, "data": data})


def error_frame(code: str, message: str, **extra: Any) -> str:
    return frame("error", {"message": message, "code": code, **extra})


def result(observation: dict[str, Any], reward: float | None, done: bool) -> dict[str, Any]:
    """A step or reset result, as OpenEnv's ``serialize_observation`` lays it out."""
    return {"observation": observation, "reward": reward, "done": done}


def dumps(value: Any) -> str:
    """JSON text of ``value``; what JSON cannot hold (numpy scalars, sets, ...) becomes its
    closest JSON value or its ``str``, so an info key never breaks a session.

    pydantic-core's encoder (Rust) writes a frame in a third of the stdlib's time, and every
    message pays it on both ends; what it refuses (a lone surrogate in a string, bytes that are
    not UTF-8) goes to the stdlib, which writes it as before or raises as before."""
    try:
        return pydantic_core.to_json(value, fallback=_jsonable).decode()
    except ValueError:
        return json.dumps(value, default=_jsonable, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The value of a JSON frame: pydantic-core's parser (Rust, a third of the stdlib's time);
    what it refuses (a lone surrogate escape, nesting past its depth limit, invalid JSON) is read
    by the stdlib, so a frame parses, or fails with ``json.JSONDecodeError`` /
    ``RecursionError``, exactly as it did with ``json.loads``."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def _jsonable(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        value = item()
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)

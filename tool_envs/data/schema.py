"""The one task-row schema shared by every environment in the package.

A task row is what an environment's ``reset`` needs to start an episode::

    prompt       list of chat messages: system (policy/instructions) + first user message
    env_id       registered gymnasium id, e.g. "tool_envs/Calculator-v0"
    reward_spec  dict: the ground truth the reward needs (gold actions, answers, tests, ...)
    extra_info   dict: anything else (task id, domain, split, difficulty, user scenario, ...)

``reward_spec`` and ``extra_info`` differ from env to env, so Arrow would infer conflicting struct
types for them; in dataset files they are therefore stored as JSON strings (see `encode_row`)
and decoded back to dicts by `validate_row`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from tool_envs.errors import TaskRowError

__all__ = ["ChatMessage", "TaskRow", "encode_row", "task_id_of", "validate_row"]

ENV_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]+/[A-Za-z0-9_.:-]+-v\d+$")
"""``namespace/Name-vN``: the gymnasium id form with both a namespace and a version."""

ENV_ID_FORM = (
    "namespace/Name-vN, e.g. 'tool_envs/Calculator-v0', or Gymnasium's module:namespace/Name-vN"
)

# Keys that verl / SkyRL rows carry at top level. They are moved into extra_info so that no
# information is lost and the normalised row still has exactly four keys.
PASSTHROUGH_KEYS = ("data_source", "ability", "index")

_ROW_KEYS = ("prompt", "env_id", "env_class", "reward_spec", "extra_info", *PASSTHROUGH_KEYS)
_JSON_FIELDS = ("reward_spec", "extra_info")


class _RowProblem(ValueError):
    """A rule violation that knows the exact field path, finer than pydantic's location."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


class ChatMessage(BaseModel):
    """One message of a task prompt; only plain text turns belong in a prompt."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"] = Field(
        description="Who speaks: 'system' (policy, instructions), 'user' or 'assistant'."
    )
    content: StrictStr = Field(description="The message text.")


class TaskRow(BaseModel):
    """A validated task row. Accepts the storage form (JSON strings) and SkyRL's ``env_class``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    prompt: list[ChatMessage] = Field(
        min_length=1,
        description=(
            "Chat messages that open the episode: an optional system message first, then at "
            "least one user message."
        ),
    )
    env_id: str = Field(
        validation_alias=AliasChoices("env_id", "env_class"),
        description=(
            "Registered gymnasium id of the environment that runs this row "
            "(form namespace/Name-vN); 'env_class' is accepted as an alias."
        ),
    )
    reward_spec: dict[str, Any] = Field(
        default_factory=dict,
        description="Ground truth the reward needs (gold actions, answers, tests, ...).",
    )
    extra_info: dict[str, Any] = Field(
        default_factory=dict,
        description="Anything else about the task (id, domain, split, difficulty, scenario, ...).",
    )

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        """Decode storage form and fold alias/passthrough keys, before field validation."""
        if not isinstance(data, Mapping):
            return data
        row = dict(data)
        unknown = [key for key in row if key not in _ROW_KEYS]
        if unknown:
            names = ", ".join(repr(key) for key in unknown)
            raise _RowProblem(
                str(unknown[0]),
                f"unknown key(s) {names}; a row has prompt, env_id (or env_class), reward_spec, "
                f"extra_info and optionally {', '.join(PASSTHROUGH_KEYS)}",
            )

        env_class = row.pop("env_class", None)
        if env_class is not None:
            if row.get("env_id") is None:
                row["env_id"] = env_class
            elif row["env_id"] != env_class:
                raise _RowProblem(
                    "env_class",
                    f"env_class {env_class!r} disagrees with env_id {row['env_id']!r}",
                )

        for name in _JSON_FIELDS:
            row[name] = _decode_json_object(name, row.get(name))

        passthrough = {key: row.pop(key) for key in PASSTHROUGH_KEYS if key in row}
        passthrough = {key: value for key, value in passthrough.items() if value is not None}
        if passthrough and isinstance(row["extra_info"], dict):
            extra = dict(row["extra_info"])
            for key, value in passthrough.items():
                if key in extra and extra[key] != value:
                    raise _RowProblem(
                        key,
                        f"top-level {key}={value!r} disagrees with extra_info[{key!r}]="
                        f"{extra[key]!r}",
                    )
                extra[key] = value
            row["extra_info"] = extra
        return row

    @field_validator("env_id")
    @classmethod
    def _check_env_id(cls, value: str) -> str:
        """Reject ids gymnasium could not register, so typos fail at load time, not at reset."""
        if not ENV_ID_PATTERN.match(value):
            raise _RowProblem("env_id", f"expected the form {ENV_ID_FORM}; got {value!r}")
        return value

    @field_validator("prompt")
    @classmethod
    def _check_prompt(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        """Chat templates expect the system message first and a user turn to answer."""
        for position, message in enumerate(messages):
            if message.role == "system" and position > 0:
                raise _RowProblem(
                    f"prompt[{position}].role",
                    "a system message may only be the first message of the prompt",
                )
        if not any(message.role == "user" for message in messages):
            raise _RowProblem("prompt", "the prompt needs at least one user message")
        return messages

    @model_validator(mode="after")
    def _check_serialisable(self) -> TaskRow:
        """Rows are stored as JSON, so a row that cannot be written must not validate."""
        for name in _JSON_FIELDS:
            try:
                json.dumps(getattr(self, name), ensure_ascii=False, sort_keys=True)
            except (TypeError, ValueError) as exc:
                raise _RowProblem(name, f"must be JSON-serialisable: {exc}") from exc
        return self

    def to_row(self) -> dict[str, Any]:
        """The normalised plain-dict form that environments consume."""
        return {
            "prompt": [{"role": m.role, "content": m.content} for m in self.prompt],
            "env_id": self.env_id,
            "reward_spec": self.reward_spec,
            "extra_info": self.extra_info,
        }


def _decode_json_object(name: str, value: Any) -> Any:
    """Turn the stored JSON string back into a dict; None means 'nothing', i.e. {}."""
    if value is None:
        return {}
    if isinstance(value, (str, bytes)):
        try:
            decoded = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise _RowProblem(name, f"is not valid JSON: {exc}") from exc
        if not isinstance(decoded, dict):
            raise _RowProblem(name, f"JSON must encode an object, got {type(decoded).__name__}")
        return decoded
    return value


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _field_path(loc: tuple[int | str, ...]) -> str | None:
    """('prompt', 2, 'role') -> 'prompt[2].role'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or None


def _to_task_row_error(exc: ValidationError, index: int | None) -> TaskRowError:
    """Condense pydantic's multi-line report into one line that names row and field."""
    errors = exc.errors()
    first = errors[0]
    problem = (first.get("ctx") or {}).get("error")
    if isinstance(problem, _RowProblem):
        field, message = problem.path, problem.message
    else:
        field = _field_path(first["loc"])
        kind = first["type"]
        if kind == "missing":
            message = "is required"
            if field == "env_id":
                message += " (or its alias env_class)"
        elif kind == "too_short" and field == "prompt":
            message = "the prompt is empty; it needs at least one user message"
        elif kind == "extra_forbidden":
            message = "unknown key"
            if first["loc"][:1] == ("prompt",):
                message += "; a prompt message has only 'role' and 'content'"
        else:
            message = first["msg"].removeprefix("Value error, ")
            message += f" (got {_short_repr(first.get('input'))})"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem(s) in this row)"
    return TaskRowError(message, index=index, field=field)


def validate_row(row: Mapping[str, Any], index: int | None = None) -> dict[str, Any]:
    """Check a task row and return its normalised form.

    Accepts ``reward_spec``/``extra_info`` as dicts or JSON strings (None means {}), and
    ``env_class`` in place of ``env_id``; top-level ``data_source``, ``ability`` and ``index``
    are moved into ``extra_info``. Returns ``{"prompt", "env_id", "reward_spec", "extra_info"}``.
    Raises `TaskRowError` naming ``index`` and the offending field.
    """
    if not isinstance(row, Mapping):
        raise TaskRowError(f"a task row must be a mapping, got {type(row).__name__}", index=index)
    try:
        return TaskRow.model_validate(row).to_row()
    except ValidationError as exc:
        raise _to_task_row_error(exc, index) from None


def encode_row(row: Mapping[str, Any], index: int | None = None) -> dict[str, Any]:
    """Validate a row and return its storage form, with JSON-string reward_spec/extra_info.

    JSON is written with ``sort_keys`` so the same row always gives the same bytes.
    """
    normalised = validate_row(row, index=index)
    for name in _JSON_FIELDS:
        normalised[name] = json.dumps(normalised[name], ensure_ascii=False, sort_keys=True)
    return normalised


def task_id_of(row: Mapping[str, Any]) -> str:
    """A row's stable id: ``extra_info["id"]``, or a digest of the prompt for rows that have none
    (so an id never depends on how a run was started; ``tool-envs eval`` matches trials by it)."""
    given = (row.get("extra_info") or {}).get("id")
    if given is not None:
        return str(given)
    digest = hashlib.sha1(
        json.dumps(row["prompt"], sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    return f"prompt-{digest[:12]}"

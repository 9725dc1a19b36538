"""What a code task is, in the shared task-row schema, and how rows for it are built.

A ``tool_envs/CodeExec-v0`` row keeps the tests in ``reward_spec`` (the reward needs them) and
everything about the problem's origin in ``extra_info``::

    reward_spec = {
        "tests": {
            "kind": "assert" | "stdio",
            "entry_point": "add" | None,    # the function assert tests call (assert kind)
            "setup": "",                    # code run before every assert test (helpers, imports)
            "prelude": "",                  # code run before the solution, in its namespace
            "returns": "data" | "any",      # what the entry point may return (assert kind)
            "data_types": [],               # more types counted as plain data ("datetime.date")
            "visible": [...],               # what code_exec runs; the agent may see these
            "hidden": [...],                # what the reward runs (all tests when empty)
        },
        "time_limit_s": 5.0,                # per test
        "memory_limit_mb": 512,
    }

An assert test is Python source run after the solution in the solution's namespace (it passes
when it raises nothing). What the entry point returns to a test must be plain data (``returns:
"data"``, the default): None, bool, int, float, complex, str, bytes, and lists, tuples, sets and
dicts of them (exact types, so that no ``__eq__`` of the solution's own takes part in a
comparison), plus a few standard-library value types and the row's ``data_types``; anything else
(an object whose ``__eq__`` says True to everything) fails the test. A task whose function
legitimately returns objects says ``returns: "any"``.

A stdio test is ``{"input": str, "output": str}``: the solution runs as a script with that stdin
and passes when it exits 0 and its output matches, line by line, with trailing whitespace
ignored (printed text, which no object can fake).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, model_validator

from tool_envs.errors import TaskRowError

ENV_ID = "tool_envs/CodeExec-v0"

SYSTEM_PROMPT = (
    "You are a careful Python programmer. Solve the task with Python 3 code.\n"
    "Tools: code_exec(code) runs your code against the visible tests and shows what happened; "
    "submit(code) hands in your final solution and ends the episode. Submit the complete "
    "solution (all imports and helper functions), not a diff."
)


class StdioCase(BaseModel):
    """One stdin/stdout test case."""

    model_config = ConfigDict(extra="forbid")

    input: StrictStr = Field(default="", description="Text fed to the program's stdin.")
    output: StrictStr = Field(description="Expected stdout (trailing whitespace is ignored).")


class TestSuite(BaseModel):
    """The tests of one task, split into those the agent may run and those the reward runs."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["assert", "stdio"] = Field(
        description="'assert': Python snippets run after the solution; 'stdio': input/output."
    )
    entry_point: StrictStr | None = Field(
        default=None, description="Name of the function the assert tests call."
    )
    setup: StrictStr = Field(default="", description="Code run before each assert test.")
    prelude: StrictStr = Field(
        default="",
        description=(
            "Code run in the solution's namespace before the solution (assert kind): the "
            "helpers and imports a prompt gives, so that a solution need not repeat them "
            "(HumanEval's prompts define helpers the tests and the function call)."
        ),
    )
    returns: Literal["data", "any"] = Field(
        default="data",
        description=(
            "What the entry point may return to an assert test: 'data' (plain data only; the "
            "harness refuses objects of any other class, such as one whose __eq__ is always "
            "True) or 'any' (the task's function legitimately returns objects)."
        ),
    )
    data_types: list[StrictStr] = Field(
        default_factory=list,
        description=(
            "Further types counted as plain data, by import path ('datetime.date'); their "
            "values are compared as they are."
        ),
    )
    visible: list[StrictStr] | list[StdioCase] = Field(
        default_factory=list, description="Tests code_exec runs; shown to the agent."
    )
    hidden: list[StrictStr] | list[StdioCase] = Field(
        default_factory=list, description="Tests the reward runs (visible ones when empty)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> TestSuite:
        expected = str if self.kind == "assert" else StdioCase
        for name in ("visible", "hidden"):
            for case in getattr(self, name):
                if not isinstance(case, expected):
                    what = (
                        "Python source strings"
                        if self.kind == "assert"
                        else ("{'input', 'output'} objects")
                    )
                    raise ValueError(f"{name}: {self.kind} tests must be {what}")
        if not self.visible and not self.hidden:
            raise ValueError("a task needs at least one test (visible or hidden)")
        if self.kind == "stdio" and (self.setup or self.prelude):
            raise ValueError("setup and prelude only apply to assert tests")
        if self.kind == "stdio" and (self.returns != "data" or self.data_types):
            raise ValueError(
                "returns and data_types only apply to assert tests (stdio tests compare text)"
            )
        for name in self.data_types:
            module, _, attribute = name.rpartition(".")
            if not attribute.isidentifier() or not all(
                part.isidentifier() for part in module.split(".")
            ):
                raise ValueError(f"data_types: {name!r} is not an import path like 'datetime.date'")
        return self

    @property
    def graded(self) -> list[Any]:
        """The tests the reward runs: the hidden ones, or the visible ones if none are hidden."""
        return list(self.hidden or self.visible)


class CodeRewardSpec(BaseModel):
    """``reward_spec`` of a CodeExec task."""

    model_config = ConfigDict(extra="forbid")

    tests: TestSuite
    time_limit_s: float = Field(default=5.0, gt=0, le=600, description="Per-test time limit.")
    memory_limit_mb: int = Field(default=512, ge=32, description="Address-space limit.")


def parse_reward_spec(reward_spec: Mapping[str, Any]) -> CodeRewardSpec:
    """Validate a row's ``reward_spec``; errors name the field that is wrong."""
    try:
        return CodeRewardSpec.model_validate(dict(reward_spec))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        field = f"reward_spec.{where}" if where else "reward_spec"
        raise TaskRowError(f"invalid code task: {first['msg']}", field=field) from exc


def problem_prompt(statement: str, starter_code: str = "", entry_point: str | None = None) -> str:
    """The first user message: the statement, what to write, and the starter code if any."""
    parts = [statement.strip()]
    if entry_point:
        parts.append(f"Write the function `{entry_point}`.")
    else:
        parts.append("Write a complete program that reads standard input and prints the answer.")
    if starter_code.strip():
        parts.append(f"Starter code:\n```python\n{starter_code.rstrip()}\n```")
    return "\n\n".join(parts)


def code_task_row(
    *,
    task_id: str,
    statement: str,
    tests: Mapping[str, Any],
    starter_code: str = "",
    reference_solution: str | None = None,
    time_limit_s: float = 5.0,
    memory_limit_mb: int = 512,
    system_prompt: str = SYSTEM_PROMPT,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated CodeExec task row; every loader and generator builds rows through this."""
    spec = parse_reward_spec(
        {"tests": dict(tests), "time_limit_s": time_limit_s, "memory_limit_mb": memory_limit_mb}
    )
    info: dict[str, Any] = {"id": task_id, "starter_code": starter_code}
    if reference_solution is not None:
        info["reference_solution"] = reference_solution
    info.update(extra_info or {})
    return {
        "prompt": [
            {"role": "system", "content": system_prompt},
            {
                "role": "user",
                "content": problem_prompt(statement, starter_code, spec.tests.entry_point),
            },
        ],
        "env_id": ENV_ID,
        # Fields at their defaults that older rows lack are left out, so those stay identical.
        "reward_spec": spec.model_dump(mode="json", exclude={"tests": _defaults_left_out(spec)}),
        "extra_info": info,
    }


def _defaults_left_out(spec: CodeRewardSpec) -> set[str]:
    tests = spec.tests
    left_out = {"prelude"} if not tests.prelude else set()
    if tests.returns == "data":
        left_out.add("returns")
    if not tests.data_types:
        left_out.add("data_types")
    return left_out

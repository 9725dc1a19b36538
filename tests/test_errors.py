"""The exception tree: every public exception of the package is a ToolEnvsError, reachable from
tool_envs.errors and drawn in its docstring, so ``except ToolEnvsError`` misses none.

The package's modules are walked in a subprocess (importing all of them pulls in TRL, vLLM, MCP
and tau2; their import-time state stays out of this test process).
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tool_envs.errors as errors
from tool_envs.errors import ToolEnvsError

_WALK = r"""
import importlib, inspect, json, pkgutil, warnings
warnings.simplefilter("ignore")
import tool_envs
import tool_envs.errors as errors
found = {}
for info in pkgutil.walk_packages(tool_envs.__path__, "tool_envs."):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue  # runs a command line when imported
    module = importlib.import_module(info.name)
    for value in vars(module).values():
        if not (inspect.isclass(value) and issubclass(value, BaseException)):
            continue
        if value.__module__ != module.__name__ or issubclass(value, Warning):
            continue  # imported from elsewhere; warnings are not raised
        if value.__qualname__.startswith("_"):
            continue  # private control flow, never raised out of its module
        found[f"{value.__module__}.{value.__qualname__}"] = {
            "name": value.__name__,
            "in_tree": issubclass(value, errors.ToolEnvsError),
            "reachable": getattr(errors, value.__name__, None) is value,
        }
    # Names a module re-exports from tool_envs.errors must be the class defined there.
    for name, value in vars(module).items():
        if inspect.isclass(value) and value.__module__ == "tool_envs.errors":
            assert getattr(errors, name) is value, (info.name, name)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def exceptions() -> dict[str, dict]:
    result = subprocess.run(
        [sys.executable, "-c", _WALK], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _drawn_tree() -> dict[str, tuple[str | None, str | None]]:
    """Name -> (drawn parent, built-in drawn as "(also X)"), read from the errors docstring."""
    drawn: dict[str, tuple[str | None, str | None]] = {"ToolEnvsError": (None, None)}
    parents = ["ToolEnvsError"]
    for line in (errors.__doc__ or "").splitlines():
        match = re.match(r"^ {4}((?:[│ ] {3})*)[├└]── (\w+)(?:\s+\(also (\w+)\))?", line)
        if match:
            depth = len(match.group(1)) // 4 + 1
            del parents[depth:]
            drawn[match.group(2)] = (parents[-1], match.group(3))
            parents.append(match.group(2))
    return drawn


def test_every_public_exception_is_defined_in_errors_in_the_tree_and_reachable(exceptions):
    defined_elsewhere = sorted(k for k in exceptions if not k.startswith("tool_envs.errors."))
    assert not defined_elsewhere, (
        f"define these in tool_envs/errors.py and import them where they are raised: "
        f"{defined_elsewhere}"
    )
    outside = sorted(k for k, v in exceptions.items() if not v["in_tree"])
    assert not outside, f"not ToolEnvsError subclasses: {outside}"
    hidden = sorted(k for k, v in exceptions.items() if not v["reachable"])
    assert not hidden, f"not reachable as tool_envs.errors.<name>: {hidden}"
    drawn = _drawn_tree()
    undrawn = {v["name"] for k, v in exceptions.items()} - drawn.keys()
    assert not undrawn, f"missing from the tree in tool_envs/errors.py's docstring: {undrawn}"


def test_the_drawn_tree_is_the_class_tree():
    drawn = _drawn_tree()
    assert drawn.keys() == set(errors.__all__), sorted(set(errors.__all__) ^ drawn.keys())
    for name, (parent, also) in drawn.items():
        cls = getattr(errors, name)
        assert issubclass(cls, ToolEnvsError), name
        if parent is not None:
            assert parent in {base.__name__ for base in cls.__bases__}, (name, parent)
        if also is not None:
            assert issubclass(cls, getattr(builtins, also)), (name, also)


def test_errors_module_stays_light():
    script = (
        "import json, sys, tool_envs.errors\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tool_envs'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    loaded = json.loads(result.stdout)
    assert loaded == ["tool_envs", "tool_envs._lazy", "tool_envs.errors", "tool_envs.registration"]


def test_errors_imports_nothing_of_the_package():
    """The bottom layer: a module that imports upward to re-export (lazily or not) would make
    every importer of an exception part of an import circle."""
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    upward = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom | ast.Import)
        and any(
            name.startswith("tool_envs")
            for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            + [alias.name for alias in node.names if isinstance(node, ast.Import)]
        )
    ]
    assert not upward, upward

"""Lazy exports: visible to type checkers, listed by ``dir()``, and light to import.

Every module that builds its ``__getattr__`` with ``tool_envs._lazy.lazy_exports`` mirrors its
table in an ``if TYPE_CHECKING:`` block of ``from module import Name as Name`` lines (the
explicit re-export form type checkers accept). Read from source, so nothing heavy is imported.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tool_envs

ROOT = Path(tool_envs.__file__).parent

# Packages in folders other branches own; the lead adds their blocks at merge. Strict: the test
# fails once a block is added, until the entry is removed.


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_modules() -> dict[str, Path]:
    """Every module of the package that calls ``lazy_exports``."""
    return {
        _module_name(path): path
        for path in sorted(ROOT.rglob("*.py"))
        if "lazy_exports(" in path.read_text() and path.name != "_lazy.py"
    }


def _read(path: Path) -> tuple[dict[str, str], dict[str, str], bool]:
    """(lazy table, TYPE_CHECKING re-exports as name -> module, whether ``__dir__`` is set)."""
    tree = ast.parse(path.read_text())
    assigned = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    call = assigned["__getattr__"]
    assert isinstance(call, ast.Call) and isinstance(call.args[1], ast.Name), path
    table = ast.literal_eval(assigned[call.args[1].id])
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname == alias.name, f"{path}: write `{alias.name} as ...`"
                    typed[alias.name] = str(statement.module)
    has_dir = ast.unparse(assigned.get("__dir__", ast.Constant(None))).startswith("lazy_dir(")
    return table, typed, has_dir


LAZY = _lazy_modules()
CHECKED = [pytest.param(name, id=name) for name in LAZY]


def test_the_walk_finds_the_lazy_packages():
    assert {
        "tool_envs",
        "tool_envs.rollout",
        "tool_envs.tau",
        "tool_envs.serve",
    } <= LAZY.keys()


@pytest.mark.parametrize("module", CHECKED)
def test_type_checking_imports_mirror_the_lazy_table(module):
    table, typed, has_dir = _read(LAZY[module])
    assert typed == table, {
        "lazy only": sorted(table.keys() - typed.keys()),
        "TYPE_CHECKING only": sorted(typed.keys() - table.keys()),
        "other module": sorted(n for n in table.keys() & typed.keys() if table[n] != typed[n]),
    }
    assert has_dir, f"{module}: add `__dir__ = lazy_dir(globals(), <table>)`"


def _defined_names(module: str) -> set[str]:
    """Names a module binds at its top level (definitions, assignments, imports, lazy tables)."""
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    names: set[str] = set(_read(path)[0]) if module in LAZY else set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize("module", CHECKED)
def test_lazy_names_are_listed_and_point_at_their_definitions(module):
    table, _, _ = _read(LAZY[module])
    package = importlib.import_module(module)
    assert set(table) <= set(package.__all__), module
    assert set(table) <= set(dir(package)), module
    missing = sorted(
        f"{name} -> {target}"
        for name, target in table.items()
        if name not in _defined_names(target)
    )
    assert not missing, missing


def test_importing_the_packages_stays_light():
    packages = [name for name in LAZY if ".integrations" not in name]
    script = (
        "import json, sys\n"
        + "".join(f"import {name}\n" for name in packages)
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    heavy = {"torch", "transformers", "trl", "vllm", "httpx", "mcp", "datasets", "openai"}
    assert not heavy & {m.split(".")[0] for m in loaded}
    ours = {m for m in loaded if m.startswith("tool_envs")}
    # the packages themselves, their parents, and what `import tool_envs` needs to register envs
    allowed = {*packages, "tool_envs._lazy", "tool_envs.errors", "tool_envs.registration"}
    allowed |= {name.rsplit(".", 1)[0] for name in packages if "." in name}
    allowed |= {"tool_envs.rollout.backends", "tool_envs.rollout.backends.base"}
    assert ours <= allowed, sorted(ours - allowed)

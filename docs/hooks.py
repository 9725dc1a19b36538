"""MkDocs hooks: the API reference pages, written from the export tables of the code.

Each public package names what it exports in ``__all__`` (often ``sorted(_LAZY)``, its table of
lazy exports). The pages are built from those tables read as source, never by importing the
package, so the docs build needs neither torch nor any extra, and a name added to a table is on
its page at the next build.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]

# (module, page), in the order of the navigation; each page opens with its module's docstring.
PACKAGES = [
    ("tool_envs", "api/index.md"),
    ("tool_envs.core", "api/core.md"),
    ("tool_envs.data", "api/data.md"),
    ("tool_envs.calculator", "api/calculator.md"),
    ("tool_envs.code", "api/code.md"),
    ("tool_envs.search", "api/search.md"),
    ("tool_envs.mcp", "api/mcp.md"),
    ("tool_envs.tau", "api/tau.md"),
    ("tool_envs.tau2", "api/tau2.md"),
    ("tool_envs.rollout", "api/rollout.md"),
    ("tool_envs.serve", "api/serve.md"),
    ("tool_envs.eval", "api/eval.md"),
    ("tool_envs.integrations.trl", "api/trl.md"),
    ("tool_envs.errors", "api/errors.md"),
]


def _source(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def exports(module: str) -> list[str]:
    """The names ``module``'s ``__all__`` lists, read from its source (dunder names left out)."""
    tree = ast.parse(_source(module).read_text(encoding="utf-8"))
    tables: dict[str, list[str]] = {}
    value = None
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
                tables[target.id] = [key.value for key in node.value.keys]
            if isinstance(target, ast.Name) and target.id == "__all__":
                value = node.value
    if value is None:
        raise ValueError(f"{module} has no __all__: the API reference lists what __all__ names")
    if isinstance(value, ast.Call) and isinstance(value.args[0], ast.Name):  # sorted(_LAZY)
        names = tables[value.args[0].id]
    elif isinstance(value, ast.List):
        names = []
        for item in value.elts:
            if isinstance(item, ast.Starred):  # [..., *_LAZY]
                names += tables[item.value.id]
            else:
                names.append(item.value)
    else:
        raise ValueError(f"{module}: cannot read __all__ = {ast.unparse(value)} from source")
    return [name for name in dict.fromkeys(names) if not name.startswith("__")]


def page(module: str) -> str:
    names = exports(module)
    summary = ""
    if module == "tool_envs":
        # The core names it re-exports are documented where they live; link them there.
        core = set(exports("tool_envs.core")) | set(exports("tool_envs.data"))
        again = [name for name in names if name in core]
        names = [name for name in names if name not in core]
        home = {name: "core" if name in exports("tool_envs.core") else "data" for name in again}
        links = ", ".join(f"[`{n}`][tool_envs.{home[n]}.{n}]" for n in again)
        summary = f"\n## Also exported here\n\nDocumented where they live: {links}.\n"
    members = "\n".join(f"        - {name}" for name in names)
    return (
        f"# `{module}`\n\n"
        f"::: {module}\n    options:\n      show_root_heading: false\n"
        f"      members:\n{members}\n{summary}"
    )


def on_files(files, config):
    for module, uri in PACKAGES:
        files.append(File.generated(config, uri, content=page(module)))
    return files

"""The architecture of DESIGN.md, checked: the import-linter contracts of pyproject.toml (the
layers, the families that stay in their rooms, no import circle) run on this checkout, one
test per contract, so a change that breaks one fails a test named for it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tool_envs

ROOT = Path(tool_envs.__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter (the dev extra) is not installed"
)


def lint_imports(contract: str, package_parent: Path = ROOT) -> subprocess.CompletedProcess:
    """``lint-imports`` for one contract, on the ``tool_envs`` found in ``package_parent``."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--contract", contract,
         "--no-cache"],
        cwd=package_parent, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("contract", ["layers", "no-circles"])
def test_the_contract_holds(contract):
    result = lint_imports(contract)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


@pytest.fixture(scope="module")
def broken_copy(tmp_path_factory):
    """A copy of the package in which the bottom layer imports the top (and so forms a circle)."""
    parent = tmp_path_factory.mktemp("broken")
    skipped = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "tool_envs", parent / "tool_envs", ignore=skipped)
    errors = parent / "tool_envs" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\nimport tool_envs.cli\n")
    return parent


@pytest.mark.parametrize(
    ("contract", "said"),
    [
        ("layers", "tool_envs.errors is not allowed to import tool_envs.cli"),
        ("no-circles", "No cycles are allowed in tool_envs"),
    ],
)
def test_a_broken_contract_fails_naming_the_import(broken_copy, contract, said):
    result = lint_imports(contract, broken_copy)
    assert result.returncode != 0 and said in result.stdout, result.stdout[-4000:]

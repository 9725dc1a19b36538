"""Running the recipes in tests: as a user does (a subprocess), or in the test's own process.

A recipe subprocess spends 10-20 s importing torch, transformers, TRL and vLLM before it reads
its first option (more under CI's load). Tests that only check what a recipe says before it
trains (a dry run, a preview, a refusal) run it with :func:`run_here` instead: the same script,
``__main__`` block and ``sys.argv``, in the test process, whose imports are already done.
Tests of the console a user sees (warnings printed once, nothing after an error) and every
training run keep :func:`run`.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]


def load_recipe(name: str):
    """Import ``recipes/NAME.py`` as module ``NAME`` (for its dataclasses and functions)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def run(script, *args, timeout=300, with_stderr=False, exit_code=0, cwd=REPO, env=None):
    """``python recipes/SCRIPT ARGS`` in a subprocess (``env``: variables added to this
    process's); returns stdout (and stderr)."""
    # No TRL_EXPERIMENTAL_SILENCE here: the recipes set it themselves, as a user runs them.
    command = [sys.executable, str(REPO / "recipes" / script), *map(str, args)]
    environ = {**os.environ, **(env or {})}
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=environ
    )
    assert result.returncode == exit_code, result.stdout[-3000:] + result.stderr[-3000:]
    return (result.stdout, result.stderr) if with_stderr else result.stdout


def run_here(script, *args, exit_code=0, cwd=REPO) -> tuple[str, str]:
    """``python recipes/SCRIPT ARGS`` in this process; returns (stdout, stderr).

    The exit code is the one the interpreter would give: ``SystemExit``'s code, or 1 with the
    traceback on stderr for any other exception. The environment and working folder are
    restored afterwards (the recipes set ``TRL_EXPERIMENTAL_SILENCE``).
    """
    path = str(REPO / "recipes" / script)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with (
        mock.patch.object(sys, "argv", [path, *map(str, args)]),
        mock.patch.dict(os.environ),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except Exception:
            traceback.print_exc()
            code = 1
    assert code == exit_code, out.getvalue()[-3000:] + err.getvalue()[-3000:]
    return out.getvalue(), err.getvalue()


def assert_a_quiet_console(stdout, stderr, steps):
    """One short line per step, no Trainer dict, no warning printed twice."""
    step_lines = [line for line in stdout.splitlines() if line.startswith("[step ")]
    assert [line.split("]")[0] for line in step_lines] == [
        f"[step {n}" for n in range(1, steps + 1)
    ]
    assert "{'loss'" not in stdout + stderr and "{'train_runtime'" not in stdout + stderr
    assert "experimental" not in stderr.lower(), stderr[-2000:]
    warnings = [line for line in stderr.splitlines() if "Warning:" in line]
    messages = [line.split("Warning:", 1)[1] for line in warnings]
    assert len(messages) == len(set(messages)), "\n".join(warnings)

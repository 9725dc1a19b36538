"""What ``tool-envs eval`` and ``tool-envs check`` do once their arguments are parsed.

Kept apart from argument parsing so that scripts and tests get the same behaviour, exit codes
and messages as the command line.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from tool_envs.errors import ToolEnvsError
from tool_envs.eval.check import check_env_id
from tool_envs.eval.report import format_table
from tool_envs.eval.runner import EvalConfig, run_eval

__all__ = ["check_command", "check_users_command", "eval_command"]

EXIT_INTERRUPTED = 130  # the shell's code for "stopped by Ctrl-C"


def _error(command: str, exc: BaseException) -> int:
    print(f"tool-envs {command}: error: {exc}", file=sys.stderr)
    return 2


def eval_command(config: EvalConfig) -> int:
    """Run the evaluation, print the table and where the files are; 0 when every trial ran.

    1 when the run stopped on an error (the agent's API, void trials that persisted) or left
    void trials to replay; 130 on Ctrl-C.
    """
    try:
        result = run_eval(config)
    except ToolEnvsError as exc:
        return _error("eval", exc)
    print(format_table(result.summary))
    print()
    for name, path in result.files.items():
        print(f"{name:13} {path}")
    run = result.summary["run"]
    void = run.get("void_trials", 0)
    print(
        f"{result.new_trials} trials run now, {result.skipped_trials} found from earlier runs; "
        f"{run['finished_trials']}/{run['expected_trials']} finished"
        + (f"; {void} void (not saved, replayed by a rerun)" if void else "")
    )
    if result.interrupted:
        print(
            "interrupted: finished trials are saved; run the same command again to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if result.error is not None:
        print(f"tool-envs eval: stopped: {result.error}", file=sys.stderr)
        print("finished trials are saved; run the same command again to resume", file=sys.stderr)
        return 1
    if void:
        causes = result.summary["overall"].get("void_causes", {})
        named = ", ".join(f"{cause}: {n}" for cause, n in causes.items())
        print(
            f"tool-envs eval: {void} void trials ({named}): infrastructure failed, not the "
            "agent; they are not saved as finished trials. "
            "Run the same command again to replay them",
            file=sys.stderr,
        )
        return 1
    return 0


def check_command(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> int:
    """Check one env (``check_env`` and a gold episode); 0 when both pass."""
    try:
        ok = check_env_id(env_id, env_kwargs)
    except ToolEnvsError as exc:
        return _error("check", exc)
    return 0 if ok else 1


def check_users_command(folder: str) -> int:
    """Re-check a stored run's simulated users; print the table and where the faults went.

    0 when no trial has a user fault, 1 when some do (they are listed), 2 on an error.
    """
    from tool_envs.eval.user_faults import describe, format_recheck, recheck_run

    try:
        result = recheck_run(folder)
    except ToolEnvsError as exc:
        return _error("check-users", exc)
    print(format_recheck(result))
    for entry in result.faults:
        print(describe(entry))
    print(f"\nuser faults: {result.path}")
    return 1 if result.faults else 0

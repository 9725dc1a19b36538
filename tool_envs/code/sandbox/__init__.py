"""Run untrusted Python quickly: warm workers inside the strongest isolation this host offers.

``Sandbox().run("print(1)")`` returns a :class:`RunResult`; :func:`doctor` explains the level.
"""

from __future__ import annotations

import time

from tool_envs.code.sandbox.api import RunRequest, RunResult
from tool_envs.code.sandbox.isolation import IsolationLevel, IsolationReport, detect_isolation
from tool_envs.code.sandbox.pool import Sandbox, SandboxPool, SandboxUnavailable, WorkerDied

__all__ = [
    "IsolationLevel",
    "IsolationReport",
    "RunRequest",
    "RunResult",
    "Sandbox",
    "SandboxPool",
    "SandboxUnavailable",
    "WorkerDied",
    "detect_isolation",
    "doctor",
]


def doctor(run_check: bool = True) -> str:
    """Text for a ``doctor`` command: the level, why, and (optionally) one timed trivial run."""
    report = detect_isolation()
    lines = [report.describe()]
    if run_check and report.level > IsolationLevel.NONE:
        try:
            with Sandbox() as sandbox:
                sandbox.start()
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    result = sandbox.run("print('ok')")
                    times.append(time.perf_counter() - t0)
            status = "ok" if result.ok and result.stdout == "ok\n" else f"FAILED: {result}"
            lines.append(f"check run: {status}, {min(times) * 1000:.1f} ms per trivial run")
        except Exception as exc:
            lines.append(f"check run: FAILED ({exc})")
    return "\n".join(lines)

"""Detect the strongest isolation this machine offers, and say why the stronger ones are missing.

Ladder, strongest first: bubblewrap (no network, read-only host filesystem, private /tmp, pid
namespace) -> Linux namespaces via ``unshare`` (no network, pid namespace; files protected by
uid permissions only) -> rlimits under an unprivileged uid -> none (explicit opt-in only).
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

WORKER_PATH = Path(__file__).with_name("worker.py")
# Jobs run under uids far above any real account, one per worker, so RLIMIT_NPROC and the
# end-of-run "kill every process of this uid" sweep never touch anything else.
UID_BASE = 1_500_000_000
PROBE_UID = UID_BASE - 1
BWRAP_WORKER = "/tmp/.tool_envs_worker.py"
BWRAP_WORK_ROOT = "/tmp/jobs"
_PROBE_IMPORTS = "import base64, ctypes, json, resource, selectors, socket, tempfile"


class IsolationLevel(enum.IntEnum):
    """Higher is stronger; comparisons are meaningful."""

    NONE = 0
    RLIMITS = 1
    NAMESPACES = 2
    BWRAP = 3


@dataclass
class IsolationReport:
    """The detected level, the interpreter the workers use, and one line per check."""

    level: IsolationLevel
    interpreter: str | None
    uid_switch: bool
    available: dict[str, bool] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"isolation level: {self.level.name.lower()}"]
        lines.append(f"interpreter: {self.interpreter or 'none usable'}")
        lines.append(f"unprivileged uid per worker: {'yes' if self.uid_switch else 'no'}")
        for name, ok in self.available.items():
            lines.append(f"  {name}: {'available' if ok else 'not available'}")
        lines.extend(f"  - {reason}" for reason in self.reasons)
        return "\n".join(lines)

    def as_info(self) -> dict[str, object]:
        """Small dict for an env's ``info``."""
        return {
            "isolation": self.level.name.lower(),
            "uid_switch": self.uid_switch,
            "interpreter": self.interpreter,
        }


def _probe(cmd: list[str], uid: int | None = None) -> tuple[bool, str]:
    kwargs: dict[str, object] = {}
    if uid is not None:
        kwargs = {"user": uid, "group": uid, "extra_groups": []}
    try:
        proc = subprocess.run(
            cmd, capture_output=True, timeout=20, env={"PATH": "/usr/bin:/bin"}, **kwargs
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    detail = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
    return proc.returncode == 0, detail[-1] if detail else f"exit {proc.returncode}"


def bwrap_args(work_root_host: str | None = None) -> list[str]:
    """bwrap flags for a worker: everything read-only, fresh /tmp, no network, own pid space."""
    args = [
        "bwrap",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--ro-bind", "/", "/",
        "--tmpfs", "/tmp",
        "--dev", "/dev",
        "--proc", "/proc",
        "--ro-bind", str(WORKER_PATH), BWRAP_WORKER,
        "--die-with-parent",
    ]  # fmt: skip
    # --die-with-parent fires when the *thread* that started bwrap exits, so pool.py starts
    # every worker from one long-lived thread.
    if os.geteuid() != 0:
        args.insert(1, "--unshare-user")
    return args


UNSHARE_ARGS = [
    "unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts",
]  # fmt: skip


def _pick_interpreter(preferred: str | None, root: bool, reasons: list[str]) -> str | None:
    candidates = [preferred] if preferred else []
    candidates += [sys.executable, "/usr/local/bin/python3", "/usr/bin/python3"]
    seen: set[str] = set()
    for cand in candidates:
        if not cand or cand in seen or not os.path.exists(cand):
            continue
        seen.add(cand)
        ok, why = _probe([cand, "-I", "-S", "-c", _PROBE_IMPORTS], PROBE_UID if root else None)
        if ok:
            return cand
        who = f"uid {PROBE_UID}" if root else "this user"
        reasons.append(f"{cand} not usable by {who}: {why}")
    return None


@lru_cache(maxsize=8)
def detect_isolation(interpreter: str | None = None) -> IsolationReport:
    """Probe once per interpreter (a few tens of ms, cached) and return the strongest level."""
    reasons: list[str] = []
    available = {"bwrap": False, "namespaces": False, "rlimits": False}
    if not sys.platform.startswith("linux"):
        reasons.append(f"sandboxing needs Linux (this is {sys.platform})")
        return IsolationReport(IsolationLevel.NONE, None, False, available, reasons)
    root = os.geteuid() == 0
    if not root:
        reasons.append("not root: jobs cannot switch to a uid of their own")
    interp = _pick_interpreter(interpreter, root, reasons)
    if interp is None:
        reasons.append("no Python interpreter the sandbox uid can run")
        return IsolationReport(IsolationLevel.NONE, None, False, available, reasons)
    if interp != (interpreter or sys.executable):
        reasons.append(f"using {interp}: the current interpreter is not readable by the sandbox")
    test = [interp, "-I", "-S", "-c", "pass"]
    if shutil.which("bwrap"):
        ok, why = _probe([*bwrap_args(), *test])
        available["bwrap"] = ok
        if not ok:
            reasons.append(f"bwrap present but failed: {why}")
    else:
        reasons.append("bwrap not installed (Debian: apt-get install bubblewrap)")
    if shutil.which("unshare"):
        ok, why = _probe([*UNSHARE_ARGS, *test])
        available["namespaces"] = ok
        if not ok:
            reasons.append(f"unshare failed: {why}")
    else:
        reasons.append("unshare not found (util-linux)")
    available["rlimits"] = root
    if available["bwrap"]:
        level = IsolationLevel.BWRAP
    elif available["namespaces"]:
        level = IsolationLevel.NAMESPACES
    elif root:
        level = IsolationLevel.RLIMITS
    else:
        level = IsolationLevel.NONE
        reasons.append("rlimits alone under the caller's own uid is no isolation")
    return IsolationReport(level, interp, root, available, reasons)

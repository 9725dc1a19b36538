"""Detect the strongest isolation this machine offers, and say why the stronger ones are missing.

Ladder, strongest first:

- ``bwrap``: bubblewrap builds the worker a root filesystem of its own (:func:`filesystem_plan`),
  with no network, its own pid, IPC and UTS namespaces, and jobs under an unprivileged uid;
- ``namespaces``: the same root filesystem and namespaces built with ``unshare`` and mount(2)
  (``rootfs.py``) where bubblewrap is missing; needs root;
- ``rlimits``: resource limits under an unprivileged uid, on the host's own filesystem;
- ``none``: no isolation (explicit opt-in only).

What model code can see and touch at each level is :data:`GUARANTEES`, printed by
``tool-envs doctor`` and reported in the CodeExec env's ``info``.
"""

from __future__ import annotations

import enum
import glob
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

WORKER_PATH = Path(__file__).with_name("worker.py")
ROOTFS_PATH = Path(__file__).with_name("rootfs.py")
# Jobs run under uids far above any real account, one per worker, so RLIMIT_NPROC and the
# end-of-run "kill every process of this uid" sweep never touch anything else.
UID_BASE = 1_500_000_000
PROBE_UID = UID_BASE - 1
SANDBOX_WORKER = "/.tool_envs/worker.py"
"""Where the worker script is inside a built root filesystem (bwrap and namespaces levels)."""
SANDBOX_WORK_ROOT = "/tmp/jobs"
"""Where job folders are made inside a built root filesystem (on its private /tmp)."""
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""Writable by every job and emptied after each job (private tmpfs in a built root; the host's
own folders at the rlimits and none levels, where only the job uid's leftovers are removed)."""
# Kept for callers of the old names.
BWRAP_WORKER = SANDBOX_WORKER
BWRAP_WORK_ROOT = SANDBOX_WORK_ROOT

_PROBE_CODE = (
    "import base64, ctypes, json, os, resource, selectors, socket, sys, sysconfig, tempfile\n"
    "paths = sysconfig.get_paths()\n"
    "print(json.dumps({'executable': os.path.realpath(sys.executable),\n"
    "    'stdlib': paths['stdlib'], 'platstdlib': paths['platstdlib'],\n"
    "    'purelib': paths['purelib'], 'platlib': paths['platlib'],\n"
    "    'libdir': sysconfig.get_config_var('LIBDIR') or ''}))\n"
)
# Top-level folders that hold what an interpreter needs to start (merged /usr: symlinks).
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime")
_SITE_GLOBS = (
    "/usr/lib/python3*/site-packages",
    "/usr/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
)


class IsolationLevel(enum.IntEnum):
    """Higher is stronger; comparisons are meaningful."""

    NONE = 0
    RLIMITS = 1
    NAMESPACES = 2
    BWRAP = 3


_PRIVATE_VIEW = (
    "model code sees only the interpreter, its standard library (no site-packages) and the "
    "system libraries, its own work dir, and private /tmp, /var/tmp and /dev/shm emptied after "
    "every run; no network; no project, task-data or home files; nothing it writes reaches the "
    "host"
)
GUARANTEES: dict[IsolationLevel, str] = {
    IsolationLevel.BWRAP: _PRIVATE_VIEW + " (bubblewrap)",
    IsolationLevel.NAMESPACES: _PRIVATE_VIEW + " (unshare and mount namespaces)",
    IsolationLevel.RLIMITS: (
        "WEAK: model code runs on the host's filesystem under an unprivileged uid: it can READ "
        "every world-readable file, task data and reference solutions included, can use the "
        "network, and can write world-writable folders (the files it leaves in /tmp, /var/tmp "
        "and /dev/shm are removed after each run; elsewhere they stay). Install bubblewrap "
        "for real isolation"
    ),
    IsolationLevel.NONE: (
        "NO ISOLATION: model code runs as this user, with this user's access to every file, "
        "the network and every process; only CPU, memory, file-size and output limits apply"
    ),
}
"""What model code can see and touch at each level, in plain words."""


@dataclass(frozen=True)
class InterpreterPaths:
    """Where the sandbox interpreter's files are (from the interpreter itself)."""

    executable: str
    stdlib: str
    platstdlib: str
    libdir: str
    site_dirs: tuple[str, ...]


@dataclass(frozen=True)
class Mount:
    """One step of building a root filesystem, applied in order.

    Kinds: ``ro-bind`` (``source`` read-only at ``path``), ``symlink`` (``path`` -> ``source``),
    ``tmpfs`` (a private, empty, writable folder), ``hide`` (an empty read-only folder over
    ``path``), ``dev`` (minimal /dev), ``proc`` (a /proc of the sandbox's pid namespace).
    """

    kind: str
    path: str
    source: str = ""


@dataclass
class IsolationReport:
    """The detected level, the interpreter the workers use, and one line per check."""

    level: IsolationLevel
    interpreter: str | None
    uid_switch: bool
    available: dict[str, bool] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    paths: InterpreterPaths | None = None
    causes: dict[str, str] = field(default_factory=dict)
    """Per level that is not available, the check that decided it, with its fix."""

    @property
    def guarantees(self) -> str:
        """What model code can see and touch at the detected level."""
        return GUARANTEES[self.level]

    def describe(self) -> str:
        lines = [f"isolation level: {self.level.name.lower()}"]
        lines.append(f"what model code can reach: {self.guarantees}")
        lines.append(f"interpreter: {self.interpreter or 'none usable'}")
        lines.append(f"unprivileged uid per worker: {'yes' if self.uid_switch else 'no'}")
        for name, ok in self.available.items():
            lines.append(f"  {name}: {'available' if ok else 'not available'}")
        lines.extend(f"  - {reason}" for reason in self.reasons)
        return "\n".join(lines)

    def why_not(self, level: IsolationLevel | str) -> str | None:
        """Why ``level`` cannot run here, the deciding cause (and its fix) first, then the
        other notes of the probe; None when it can run."""
        name = level.name.lower() if isinstance(level, IsolationLevel) else level
        if self.available.get(name):
            return None
        cause = self.causes.get(name) or (self.reasons[0] if self.reasons else "unknown")
        others = [reason for reason in self.reasons if reason != cause]
        notes = f" (other notes: {'; '.join(others)})" if others else ""
        return f"{name} not available: {cause}{notes}"

    def as_info(self) -> dict[str, object]:
        """Small dict for an env's ``info``."""
        return {
            "isolation": self.level.name.lower(),
            "isolation_guarantees": self.guarantees,
            "uid_switch": self.uid_switch,
            "interpreter": self.interpreter,
        }


def _probe(cmd: list[str], uid: int | None = None) -> tuple[bool, str, str]:
    """Run ``cmd`` (as ``uid``); (succeeded, last line of its complaint, its stdout)."""
    kwargs: dict[str, object] = {}
    if uid is not None:
        kwargs = {"user": uid, "group": uid, "extra_groups": []}
    try:
        proc = subprocess.run(
            cmd, capture_output=True, timeout=20, env={"PATH": "/usr/bin:/bin"}, **kwargs
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc), ""
    detail = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
    why = detail[-1] if detail else f"exit {proc.returncode}"
    return proc.returncode == 0, why, proc.stdout.decode(errors="replace")


def _interpreter_paths(reported: str) -> InterpreterPaths | None:
    try:
        found = json.loads(reported.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    sites = {found["purelib"], found["platlib"]}
    for pattern in (*_SITE_GLOBS, f"{found['libdir']}/python3*/site-packages"):
        sites.update(glob.glob(pattern))
    return InterpreterPaths(
        executable=found["executable"],
        stdlib=found["stdlib"],
        platstdlib=found["platstdlib"],
        libdir=found["libdir"],
        site_dirs=tuple(sorted(path for path in sites if path and os.path.isdir(path))),
    )


def _pick_interpreter(
    preferred: str | None, root: bool, reasons: list[str]
) -> tuple[str, InterpreterPaths | None] | None:
    candidates = [preferred] if preferred else []
    candidates += [sys.executable, "/usr/local/bin/python3", "/usr/bin/python3"]
    seen: set[str] = set()
    for cand in candidates:
        if not cand or cand in seen or not os.path.exists(cand):
            continue
        seen.add(cand)
        ok, why, out = _probe([cand, "-I", "-S", "-c", _PROBE_CODE], PROBE_UID if root else None)
        if ok:
            return cand, _interpreter_paths(out)
        who = f"uid {PROBE_UID}" if root else "this user"
        reasons.append(f"{cand} not usable by {who}: {why}")
    return None


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both absolute)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _host_private_paths() -> list[str]:
    """Host folders model code must never see, even where they lie under a bound system folder
    (a project checked out in /usr/src, a package installed in /usr/local): the package and
    the folder above it (the repository, with ``datasets/``), this process's working directory
    and virtual environment."""
    package = Path(__file__).resolve().parents[2]
    return [str(package), str(package.parent), os.getcwd(), sys.prefix]


def filesystem_plan(paths: InterpreterPaths | None) -> list[Mount]:
    """The root filesystem a worker gets at the bwrap and namespaces levels, step by step.

    System folders are bound read-only (the interpreter and the libraries it loads live there),
    then every site-packages folder and every host folder of this project is covered with an
    empty one, then the interpreter's own folders are bound where they lie outside /usr, then
    /dev, /proc and private, empty /tmp, /var/tmp and /dev/shm are made, and the worker script
    is bound at :data:`SANDBOX_WORKER`. Nothing else of the host exists inside.
    """
    plan: list[Mount] = []
    bound: list[str] = []
    for folder in _SYSTEM_DIRS:
        if os.path.islink(folder):
            plan.append(Mount("symlink", folder, os.readlink(folder)))
        elif os.path.isdir(folder):
            plan.append(Mount("ro-bind", folder, folder))
            bound.append(folder)
    plan += [Mount("ro-bind", path, path) for path in _SYSTEM_FILES if os.path.exists(path)]
    needed = [str(WORKER_PATH)]
    extra: list[str] = []
    if paths is not None:
        needed += [paths.executable, paths.stdlib, paths.platstdlib, paths.libdir]
        for path in (paths.executable, paths.libdir, paths.stdlib, paths.platstdlib):
            real = os.path.realpath(path) if path else ""
            covered = any(_inside(real, b) for b in [*bound, *extra])
            if real and os.path.exists(real) and not covered:
                extra.append(real)
    hidden = [*(paths.site_dirs if paths is not None else ()), *_host_private_paths()]
    for path in dict.fromkeys(os.path.realpath(p) for p in hidden):
        holds_needed = any(_inside(os.path.realpath(n), path) for n in needed if n)
        if os.path.isdir(path) and not holds_needed and any(_inside(path, b) for b in bound):
            plan.append(Mount("hide", path))
    plan += [Mount("ro-bind", path, path) for path in extra]
    if paths is not None:  # site-packages inside the interpreter's own folders
        plan += [Mount("hide", p) for p in paths.site_dirs if any(_inside(p, e) for e in extra)]
    plan += [
        Mount("dev", "/dev"),
        Mount("proc", "/proc"),
        *(Mount("tmpfs", path) for path in PRIVATE_DIRS),
        Mount("ro-bind", SANDBOX_WORKER, str(WORKER_PATH)),
    ]
    return plan


def bwrap_args(plan: list[Mount] | None = None) -> list[str]:
    """bwrap flags that build ``plan`` (default: for the detected interpreter), no network,
    own pid, IPC and UTS namespaces, dying with the thread that started it."""
    if plan is None:
        plan = filesystem_plan(detect_isolation().paths)
    args = [
        "bwrap",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
    ]
    # --die-with-parent fires when the *thread* that started bwrap exits, so pool.py starts
    # every worker from one long-lived thread.
    if os.geteuid() != 0:
        args.insert(1, "--unshare-user")
    for mount in plan:
        args += _bwrap_flags(mount)
    return args


def _bwrap_flags(mount: Mount) -> list[str]:
    if mount.kind == "ro-bind":
        return ["--ro-bind", mount.source, mount.path]
    if mount.kind == "symlink":
        return ["--symlink", mount.source, mount.path]
    if mount.kind == "tmpfs":
        return ["--tmpfs", mount.path]
    if mount.kind == "hide":
        return ["--tmpfs", mount.path, "--remount-ro", mount.path]
    if mount.kind == "dev":
        return ["--dev", mount.path]
    if mount.kind == "proc":
        return ["--proc", mount.path]
    raise ValueError(f"unknown mount kind {mount.kind!r}")


UNSHARE_ARGS = [
    "unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts",
    "--mount", "--propagation", "private",
]  # fmt: skip


def namespaces_command(
    interpreter: str, plan: list[Mount], new_root: str, worker_args: list[str]
) -> list[str]:
    """``unshare`` running ``rootfs.py``, which builds ``plan`` on ``new_root`` (an empty host
    folder that only this mount namespace sees filled), enters it and execs the worker."""
    spec = {
        "new_root": new_root,
        "plan": [[m.kind, m.path, m.source] for m in plan],
        "exec": [interpreter, "-I", "-S", SANDBOX_WORKER, *worker_args],
    }
    return [*UNSHARE_ARGS, interpreter, "-I", "-S", str(ROOTFS_PATH), json.dumps(spec)]


def _probe_namespaces(interp: str, paths: InterpreterPaths | None) -> tuple[bool, str]:
    """Build the root filesystem once for real and run the interpreter in it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tool-envs-probe-") as folder:
        new_root = os.path.join(folder, "root")
        os.mkdir(new_root)
        spec = {
            "new_root": new_root,
            "plan": [[m.kind, m.path, m.source] for m in filesystem_plan(paths)],
            "exec": [interp, "-I", "-S", "-c", "import json, decimal, tempfile"],
        }
        cmd = [*UNSHARE_ARGS, interp, "-I", "-S", str(ROOTFS_PATH), json.dumps(spec)]
        ok, why, _ = _probe(cmd)
        return ok, why


@lru_cache(maxsize=8)
def detect_isolation(interpreter: str | None = None) -> IsolationReport:
    """Probe once per interpreter (tens of ms, cached) and return the strongest level."""
    reasons: list[str] = []
    causes: dict[str, str] = {}
    available = {"bwrap": False, "namespaces": False, "rlimits": False}

    def missing(levels: Iterable[str], cause: str) -> None:
        reasons.append(cause)
        for name in levels:
            causes.setdefault(name, cause)

    if not sys.platform.startswith("linux"):
        missing(available, f"sandboxing needs Linux (this is {sys.platform})")
        return IsolationReport(IsolationLevel.NONE, None, False, available, reasons, None, causes)
    root = os.geteuid() == 0
    if not root:
        reasons.append("not root: jobs cannot switch to a uid of their own")
        causes["rlimits"] = "not root: jobs cannot switch to a uid of their own (run as root)"
    picked = _pick_interpreter(interpreter, root, reasons)
    if picked is None:
        missing(available, "no Python interpreter the sandbox uid can run")
        return IsolationReport(IsolationLevel.NONE, None, False, available, reasons, None, causes)
    interp, paths = picked
    if interp != (interpreter or sys.executable):
        reasons.append(f"using {interp}: the current interpreter is not readable by the sandbox")
    test = [interp, "-I", "-S", "-c", "import json, decimal, tempfile"]
    if shutil.which("bwrap"):
        ok, why, _ = _probe([*bwrap_args(filesystem_plan(paths)), *test])
        available["bwrap"] = ok
        if not ok:
            missing(["bwrap"], f"bwrap present but failed: {why}")
    else:
        missing(["bwrap"], "bubblewrap is not installed: apt-get install bubblewrap (Debian)")
    if not root:
        missing(["namespaces"], "namespaces level needs root (it mounts the sandbox's filesystem)")
    elif shutil.which("unshare"):
        ok, why = _probe_namespaces(interp, paths)
        available["namespaces"] = ok
        if not ok:
            missing(["namespaces"], f"unshare failed: {why}")
    else:
        missing(["namespaces"], "unshare not found: apt-get install util-linux (Debian)")
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
    return IsolationReport(level, interp, root, available, reasons, paths, causes)

"""Stdio server processes that stop when told and die with their owner (Linux).

The MCP SDK starts a stdio server in a session of its own and, when its transport closes, shuts
it down (stdin closed, a grace period, SIGTERM and SIGKILL to the group). Two gaps are left: a
wedged server is stopped in the background, so the process that owns it may exit (or be killed)
first and leave it running, re-parented to init; and a killed process runs no shutdown at all.
So on Linux every stdio server is started through :mod:`tool_envs.mcp.supervisor` (it dies, with
its whole group, when the thread that started it ends), and the client keeps the group's id to
stop it itself (:meth:`ProcessGroup.stop`: terminate, wait, kill, wait, each wait bounded) after
the SDK has had its turn. Elsewhere servers are started directly and only the SDK stops them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("supervisor.py")
SUPERVISED = sys.platform.startswith("linux") and bool(sys.executable)
# How long a group gets after SIGTERM, and how long the kernel gets to end it after SIGKILL.
GRACE_S = 2.0
KILL_WAIT_S = 2.0
_POLL_S = 0.02


@dataclass(frozen=True)
class Launch:
    """How to start a server under the supervisor, and where it writes the group's id."""

    command: str
    args: list[str]
    pid_file: str

    def group(self) -> ProcessGroup | None:
        """The server's process group, once the supervisor has written its pid (else None)."""
        try:
            text = Path(self.pid_file).read_text(encoding="ascii").strip()
        except OSError:
            return None
        return ProcessGroup.of(int(text)) if text.isdigit() else None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.pid_file)


def supervised(command: str, args: list[str], env: dict[str, str] | None) -> Launch | None:
    """The supervisor's command line for ``command args`` (None where there is no supervisor).

    Raises FileNotFoundError, as starting it directly would, when ``command`` is not on the
    server's PATH (a missing command would otherwise surface only as the server's own output).
    """
    if not SUPERVISED:
        return None
    path = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    if os.sep not in command and shutil.which(command, path=path) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    handle, pid_file = tempfile.mkstemp(prefix="tool-envs-mcp-", suffix=".pid")
    os.close(handle)
    supervisor = [str(SUPERVISOR), str(os.getpid()), pid_file, command, *args]
    return Launch(sys.executable, ["-I", "-S", *supervisor], pid_file)


@dataclass(frozen=True)
class ProcessGroup:
    """A server's process group: the supervisor's pid, and its start time, so that a pid the
    kernel has since given to another process is never signalled."""

    pgid: int
    started: str | None

    @classmethod
    def of(cls, pid: int) -> ProcessGroup:
        stat = _stat(pid)
        return cls(pid, stat[19] if stat else None)

    def members(self) -> list[int]:
        """The group's processes that still run (zombies count as gone)."""
        leader = _stat(self.pgid)
        if leader is not None and leader[19] != self.started:
            return []  # the pid is another process's now: this group ended long ago
        found = []
        for entry in os.listdir("/proc"):
            stat = _stat(int(entry)) if entry.isdigit() else None
            if stat is not None and stat[0] != "Z" and int(stat[2]) == self.pgid:
                found.append(int(entry))
        return found

    def signal(self, sig: int) -> bool:
        """Send ``sig`` to the group if anything of it still runs; False if nothing does."""
        if not self.members():
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)
        return True

    def stop(self, grace_s: float = GRACE_S, kill_wait_s: float = KILL_WAIT_S) -> bool:
        """SIGTERM the group, wait up to ``grace_s``, SIGKILL what is left, wait up to
        ``kill_wait_s``; True when nothing of it runs any more."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
            if not self.signal(sig):
                return True
            deadline = time.monotonic() + wait_s
            while self.members() and time.monotonic() < deadline:
                time.sleep(_POLL_S)
        return not self.members()


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None

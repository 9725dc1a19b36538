"""Starts a stdio MCP server that dies with the process that started it, even when that is killed.

Run as ``python -I -S supervisor.py PARENT_PID PID_FILE COMMAND [ARGS...]`` (stdlib only: it
runs before, and apart from, any virtualenv). The MCP SDK starts it in a new session, so it
leads the process group the server runs in. It asks the kernel for SIGHUP when the thread that
started it ends (``prctl(PR_SET_PDEATHSIG)``, Linux: the parent exited or was killed), writes
its pid to PID_FILE (the group's id, for the parent's own stop), then runs the server as its
child and waits:

- the server exits: the supervisor exits with its status, which is what the SDK waits for;
- SIGHUP (the parent is gone): it kills the whole group, server and server's children included;
- SIGTERM or SIGINT sent to the group reach the server; the supervisor stays until the server
  has gone, so the SDK's escalation to SIGKILL still happens for a server that ignores them.

The supervisor holds none of the server's pipes, so the server still sees end-of-file on stdin
when the client closes it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _kill_group(signum: int, frame: object) -> None:
    os.killpg(0, signal.SIGKILL)


def main() -> None:
    parent, pid_file, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    signal.signal(signal.SIGHUP, _kill_group)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    with open(pid_file, "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        try:
            for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]!r}: {exc.strerror}\n".encode())
        os._exit(127)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()

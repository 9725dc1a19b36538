"""Warm sandbox worker: started once inside the isolation, forks a fresh child per job.

Run as ``python -I -S worker.py CONFIG_JSON``; stdlib only, because it runs under whichever
interpreter the sandbox uid can read (often the system one, not the project's virtualenv).
Forking from an already-started interpreter is what makes a run cost ~2 ms instead of ~20 ms.

Protocol on stdin/stdout: 4-byte big-endian length, then a JSON object, in both directions.
The worker first writes ``{"ready": true, ...}``, then answers each job with one result.

After every job the worker empties the folders every job may write (``scrub_dirs``: /tmp,
/var/tmp and /dev/shm): all of them where they are the sandbox's private ones, and only what the
job's uid owns where they are the host's (the rlimits and none levels), so no run sees what an
earlier one left and nothing is left behind.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import ctypes
import gc
import json
import linecache
import os
import resource
import selectors
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback

_PR_SET_CHILD_SUBREAPER = 36
_MEMORY_MARK = b"M"
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


def _read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int) -> dict:
    (size,) = struct.unpack(">I", _read_exact(fd, 4))
    return json.loads(_read_exact(fd, size))


def _send(fd: int, message: dict) -> None:
    data = json.dumps(message).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _become_subreaper() -> None:
    """Orphans (double-forked daemons) reparent to us, so we can reap and account for them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _safe_relpath(name: str) -> str:
    norm = os.path.normpath(name)
    if os.path.isabs(norm) or norm == ".." or norm.startswith("../") or norm in ("", "."):
        raise ValueError(f"file name must stay inside the work dir: {name!r}")
    return norm


def _prepare_workdir(root: str, files: dict, uid: int | None, gid: int | None) -> str:
    workdir = tempfile.mkdtemp(prefix="job-", dir=root)
    for name, b64 in files.items():
        rel = _safe_relpath(name)
        path = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(b64))
    if uid is not None:
        for dirpath, _dirnames, filenames in os.walk(workdir):
            os.chown(dirpath, uid, gid)
            for entry in filenames:
                os.chown(os.path.join(dirpath, entry), uid, gid)
    os.chmod(workdir, 0o700)
    return workdir


def _set_limits(job: dict) -> None:
    cpu = int(job["time_limit_s"]) + 1
    mem = int(job["memory_limit_mb"]) * 1024 * 1024
    limits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (job["file_size_limit_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (job["open_files_limit"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if job.get("process_limit"):
        limits.append((resource.RLIMIT_NPROC, (job["process_limit"],) * 2))
    for which, value in limits:
        resource.setrlimit(which, value)


def _child(job: dict, workdir: str, stdin_r: int, out_w: int, err_w: int, mark_w: int) -> None:
    """Runs in the forked child: lock down, then execute the untrusted code. Never returns."""
    code = 1
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(mark_w, 3)
        os.closerange(4, 65536)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(workdir)
        os.umask(0o077)
        uid, gid = job.get("uid"), job.get("gid")
        if uid is not None:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        _set_limits(job)
        os.environ.clear()
        os.environ.update(
            {"PATH": _SAFE_PATH, "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"}
        )
        tempfile.tempdir = None
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.argv = ["main.py"]
        sys.path.insert(0, workdir)
    except BaseException:
        os.write(2, traceback.format_exc().encode(errors="replace"))
        os._exit(125)
    try:
        scope = {"__name__": "__main__", "__builtins__": builtins, "__file__": "main.py"}
        # Tracebacks then quote the offending lines, as they would for a file on disk.
        lines = job["code"].splitlines(keepends=True)
        linecache.cache["main.py"] = (len(job["code"]), None, lines, "main.py")
        # dont_inherit: the program runs as under plain `python`, not with this module's
        # `from __future__ import annotations` (which would leave its type hints unevaluated).
        exec(compile(job["code"], "main.py", "exec", dont_inherit=True), scope)
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except MemoryError:
        os.write(3, _MEMORY_MARK)
        traceback.print_exc()
        code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _warm_up(modules: list[str]) -> None:
    """Do once in the parent what every child would otherwise pay for again (~3 ms each).

    The first ``compile`` of a process, opening text streams, and imports that tests commonly
    use are all inherited through fork when done here.
    """
    # ``-S`` skips site, which is what defines exit() and quit(); programs expect them.
    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            setattr(builtins, name, sys.exit)
    for name in modules:
        with contextlib.suppress(Exception):
            __import__(name)
    scope: dict = {"__builtins__": builtins}
    exec(compile("import sys\nx = [i * i for i in range(3)]\nassert x\n", "warm", "exec"), scope)
    with open(os.devnull, "w", encoding="utf-8", errors="backslashreplace") as sink:
        print("warm", file=sink)
    traceback.format_exception_only(ValueError, ValueError("warm"))
    # Keep the collector away from everything inherited, so children copy fewer pages.
    gc.collect()
    gc.freeze()


def _remove(path: str, is_dir: bool) -> None:
    if is_dir:
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


class Worker:
    """Serves jobs one at a time; everything a job started or wrote is gone before its result
    is sent (processes swept, private folders emptied)."""

    def __init__(self, config: dict) -> None:
        self.uid = config.get("uid")
        self.gid = config.get("gid")
        self.work_root = config["work_root"]
        self.scrub_dirs = [d for d in config.get("scrub_dirs", ()) if os.path.isdir(d)]
        self.scrub_owned_only = bool(config.get("scrub_owned_only", True))
        if not self.scrub_owned_only:  # private tmpfs folders: every job may write them
            for folder in self.scrub_dirs:
                os.chmod(folder, 0o1777)
        os.makedirs(self.work_root, exist_ok=True)
        self.keep = {os.path.normpath(self.work_root)}
        self.has_pidfd = hasattr(os, "pidfd_open")
        _become_subreaper()
        _warm_up(config.get("preload", ()))

    def run(self, job: dict) -> dict:
        job = {**job, "uid": self.uid, "gid": self.gid}
        workdir = _prepare_workdir(self.work_root, job.get("files", {}), self.uid, self.gid)
        try:
            return self._run_in(job, workdir)
        except BaseException:
            self._sweep()
            raise
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            self._scrub()

    def _scrub(self) -> None:
        """Remove what jobs left in the folders every job may write (see the module doc)."""
        for folder in self.scrub_dirs:
            self._scrub_folder(folder, depth=0)

    def _scrub_folder(self, folder: str, depth: int) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.path in self.keep:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if not self.scrub_owned_only or info.st_uid == self.uid:
                _remove(entry.path, is_dir)
            elif is_dir and info.st_mode & 0o002 and depth < 8:
                # Someone else's world-writable folder: the job may have written inside it.
                self._scrub_folder(entry.path, depth + 1)

    def _run_in(self, job: dict, workdir: str) -> dict:
        stdin_data = base64.b64decode(job.get("stdin", ""))
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        mark_r, mark_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(job, workdir, stdin_r, out_w, err_w, mark_w)
        for fd in (stdin_r, out_w, err_w, mark_w):
            os.close(fd)
        limit = int(job["output_limit_bytes"])
        deadline = start + float(job["time_limit_s"])
        out, err = bytearray(), bytearray()
        truncated = timed_out = False
        status = None
        sel = selectors.DefaultSelector()
        os.set_blocking(stdin_w, False)
        pending = memoryview(stdin_data)
        if pending:
            sel.register(stdin_w, selectors.EVENT_WRITE, "in")
        else:
            os.close(stdin_w)
        sel.register(out_r, selectors.EVENT_READ, out)
        sel.register(err_r, selectors.EVENT_READ, err)
        pidfd = os.pidfd_open(pid) if self.has_pidfd else None
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        while status is None:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                if not timed_out:
                    timed_out = True
                    self._kill_group(pid)
                timeout = 0.05
            if pidfd is None:
                timeout = min(timeout, 0.01)
            for key, _ in sel.select(timeout):
                if key.data == "exit":
                    continue
                if key.data == "in":
                    try:
                        pending = pending[os.write(stdin_w, pending[:65536]) :]
                    except OSError:
                        pending = pending[:0]
                    if not pending:
                        sel.unregister(stdin_w)
                        os.close(stdin_w)
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                room = limit - len(key.data)
                key.data.extend(chunk[: max(0, room)])
                if len(chunk) > room and not truncated:
                    truncated = True
                    self._kill_group(pid)
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
        duration = time.monotonic() - start
        self._sweep()
        for key in list(sel.get_map().values()):
            if key.data in ("exit", "in"):
                continue
            while True:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    break
                if len(key.data) + len(chunk) > limit:
                    truncated = True
                key.data.extend(chunk[: max(0, limit - len(key.data))])
        sel.close()
        for fd in (out_r, err_r, pidfd):
            if fd is not None:
                os.close(fd)
        if pending:
            os.close(stdin_w)
        os.set_blocking(mark_r, False)
        try:
            memory_mark = os.read(mark_r, 16)
        except BlockingIOError:
            memory_mark = b""
        os.close(mark_r)
        exit_code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        if exit_code == -signal.SIGXCPU:
            timed_out = True
        memory_exceeded = _MEMORY_MARK in memory_mark or (
            exit_code != 0 and b"MemoryError" in bytes(err[-2000:])
        )
        return {
            "stdout": base64.b64encode(bytes(out)).decode(),
            "stderr": base64.b64encode(bytes(err)).decode(),
            "exit_code": exit_code,
            "timed_out": timed_out,
            "memory_exceeded": memory_exceeded,
            "output_truncated": truncated,
            "duration_s": duration,
        }

    def _kill_group(self, pid: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)

    def _sweep(self) -> None:
        """Kill every process the job left behind (daemons, fork-bomb leftovers) and reap them.

        We are a child subreaper, so anything the job left running is our child by now; when we
        have no children at all there is nothing to sweep (the common case, kept cheap).
        """
        give_up = time.monotonic() + 10.0
        while True:
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return
            if time.monotonic() > give_up:
                return
            if self.uid is not None:
                self._kill_uid()
            else:
                self._kill_descendants()
            time.sleep(0.001)

    def _kill_uid(self) -> None:
        """kill(-1) from a helper with the job's uid: every process of that uid, in one call."""
        helper = os.fork()
        if helper == 0:
            try:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                os.kill(-1, signal.SIGKILL)
            except BaseException:
                pass
            os._exit(0)
        os.waitpid(helper, 0)

    def _kill_descendants(self) -> None:
        """Without a uid of its own, the job's orphans are found as our children (subreaper)."""
        me = os.getpid()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                with contextlib.suppress(OSError):
                    os.kill(int(entry), signal.SIGKILL)


def main() -> None:
    config = json.loads(sys.argv[1])
    worker = Worker(config)
    infd, outfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    _send(
        outfd,
        {
            "ready": True,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "uid": worker.uid,
            "pidfd": worker.has_pidfd,
        },
    )
    while True:
        try:
            job = _recv(infd)
        except EOFError:
            return
        try:
            result = worker.run(job)
        except Exception:
            result = {"error": traceback.format_exc()}
        _send(outfd, result)


if __name__ == "__main__":
    main()

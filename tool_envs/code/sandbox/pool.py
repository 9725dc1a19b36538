"""Host side: keeps warm workers alive, sends them jobs, replaces any worker that dies.

A sandbox that is never closed still leaves nothing behind: its worker process, the processes
of its uid and its host folder are released by a finalizer when the sandbox is garbage
collected, and at interpreter exit.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import selectors
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tool_envs.code.sandbox.api import RunRequest, RunResult
from tool_envs.code.sandbox.isolation import (
    PRIVATE_DIRS,
    SANDBOX_WORK_ROOT,
    SANDBOX_WORKER,
    UID_BASE,
    WORKER_PATH,
    IsolationLevel,
    bwrap_args,
    detect_isolation,
    filesystem_plan,
    namespaces_command,
)
from tool_envs.core.closing import ClosedOnExit
from tool_envs.errors import SandboxUnavailable as SandboxUnavailable
from tool_envs.errors import WorkerDied as WorkerDied

_uid_counter = itertools.count()
_uid_lock = threading.Lock()
# Slack on top of the job's own time limit before the host gives up on a silent worker.
_HOST_GRACE_S = 15.0
_START_TIMEOUT_S = 30.0
# Imported once in each worker so that a job importing them pays nothing (fork shares them).
DEFAULT_PRELOAD = (
    "math", "re", "collections", "itertools", "functools", "heapq", "bisect", "string",
    "typing", "random", "fractions", "decimal", "statistics", "copy", "operator",
)  # fmt: skip


# bwrap's --die-with-parent (and any PR_SET_PDEATHSIG) is tied to the thread that spawned the
# process; spawning from this one never-exiting thread keeps workers alive across caller threads.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


def _next_uid() -> int:
    with _uid_lock:
        slot = next(_uid_counter) % 1024
    return UID_BASE + (os.getpid() % 500_000) * 1024 + slot


def _sweep_uid(uid: int, interpreter: str) -> None:
    """Kill whatever a dead worker's jobs left under its uid (needed outside a pid namespace)."""
    code = (
        "import os, signal\n"
        "try:\n    [os.kill(-1, signal.SIGKILL) for _ in range(100)]\n"
        "except ProcessLookupError:\n    pass\n"
    )
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [interpreter, "-I", "-S", "-c", code],
            user=uid, group=uid, extra_groups=[], timeout=10, capture_output=True,
        )  # fmt: skip


class _Resources:
    """What a sandbox holds on the host, kept apart from it so a finalizer can release it."""

    def __init__(self, uid: int | None, interpreter: str, sweep_uid: bool) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.host_root: str | None = None
        self.uid = uid
        self.interpreter = interpreter
        self.sweep_uid = sweep_uid

    def stop_worker(self) -> None:
        """Kill the worker's process group, reap it, and kill what its uid left running."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.uid is not None and self.sweep_uid:
            _sweep_uid(self.uid, self.interpreter)

    def release(self) -> None:
        """Everything: the worker, its uid's processes and the host folder (idempotent)."""
        self.stop_worker()
        root, self.host_root = self.host_root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


class Sandbox(ClosedOnExit):
    """One warm worker, used by one caller at a time (thread-safe through a lock).

    The worker starts lazily, inside the chosen isolation; if it dies (for instance the job
    killed it, or it stopped answering), the run in flight reports that and the next run starts
    a fresh worker.
    """

    def __init__(
        self,
        level: IsolationLevel | None = None,
        *,
        allow_unisolated: bool = False,
        interpreter: str | None = None,
        defaults: dict[str, Any] | None = None,
        preload: tuple[str, ...] = DEFAULT_PRELOAD,
    ) -> None:
        report = detect_isolation(interpreter)
        if level is None:
            level = report.level
        if level > report.level or (
            level > IsolationLevel.RLIMITS and not report.available[level.name.lower()]
        ):
            raise SandboxUnavailable(
                f"isolation level {level.name.lower()} is not available here:\n{report.describe()}"
            )
        if level == IsolationLevel.RLIMITS and not report.uid_switch:
            raise SandboxUnavailable("rlimits level needs root to switch to a sandbox uid")
        if level == IsolationLevel.NONE and not allow_unisolated:
            raise SandboxUnavailable(
                "no isolation available; pass allow_unisolated=True to run untrusted code "
                f"anyway:\n{report.describe()}"
            )
        if report.interpreter is None:
            raise SandboxUnavailable(report.describe())
        self.level = level
        self.report = report
        self.interpreter = report.interpreter
        switch = report.uid_switch and level > IsolationLevel.NONE
        self.uid = _next_uid() if switch else None
        self.defaults = dict(defaults or {})
        self.preload = tuple(preload)
        self._lock = threading.Lock()
        # Outside a pid namespace, what a dead worker's jobs left must be killed by uid.
        sweep = level in (IsolationLevel.RLIMITS, IsolationLevel.NAMESPACES)
        self._resources = _Resources(self.uid, self.interpreter, sweep)
        self._finalizer = weakref.finalize(self, _Resources.release, self._resources)
        self._closed = False
        self.restarts = 0

    @property
    def _proc(self) -> subprocess.Popen[bytes] | None:
        return self._resources.proc

    @_proc.setter
    def _proc(self, proc: subprocess.Popen[bytes] | None) -> None:
        self._resources.proc = proc

    @property
    def _host_root(self) -> str | None:
        """The host folder of this sandbox (job folders at the rlimits and none levels, the
        root filesystem's mount point at the namespaces level); None at the bwrap level."""
        return self._resources.host_root

    @property
    def isolation(self) -> str:
        return self.level.name.lower()

    # -- worker lifecycle -------------------------------------------------------------------
    def _config(self, work_root: str) -> dict[str, Any]:
        private = self.level >= IsolationLevel.NAMESPACES
        return {
            "uid": self.uid,
            "gid": self.uid,
            "preload": list(self.preload),
            "work_root": work_root,
            # Private folders are emptied whole; the host's only of what the job uid owns (at
            # the none level the job has the caller's uid: nothing can be told apart).
            "scrub_dirs": list(PRIVATE_DIRS) if private or self.uid is not None else [],
            "scrub_owned_only": not private,
        }

    def _host_folder(self) -> str:
        if self._resources.host_root is None:
            # The pid in the name tells whose folder it is (a leak is traced to its process).
            self._resources.host_root = tempfile.mkdtemp(prefix=f"tool-envs-sandbox-{os.getpid()}-")
            os.chmod(self._resources.host_root, 0o711)
        return self._resources.host_root

    def _command(self) -> list[str]:
        py = [self.interpreter, "-I", "-S"]
        if self.level >= IsolationLevel.NAMESPACES:
            config = json.dumps(self._config(SANDBOX_WORK_ROOT))
            plan = filesystem_plan(self.report.paths)
            if self.level == IsolationLevel.BWRAP:
                return [*bwrap_args(plan), *py, SANDBOX_WORKER, config]
            new_root = os.path.join(self._host_folder(), "root")
            os.makedirs(new_root, exist_ok=True)
            return namespaces_command(self.interpreter, plan, new_root, [config])
        config = json.dumps(self._config(self._host_folder()))
        return [*py, str(WORKER_PATH), config]

    def _start(self) -> None:
        cmd = self._command()
        self._proc = _spawner.submit(
            subprocess.Popen,
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            start_new_session=True,
        ).result()
        hello = self._recv(time.monotonic() + _START_TIMEOUT_S)
        if not hello.get("ready"):
            raise WorkerDied(f"worker did not start: {hello}")

    def _kill_worker(self) -> None:
        if self._resources.proc is None:
            return
        self._resources.stop_worker()
        root = self._resources.host_root
        if root is not None and self.level < IsolationLevel.NAMESPACES:
            for entry in os.listdir(root):  # job dirs of runs the dead worker never finished
                shutil.rmtree(os.path.join(root, entry), ignore_errors=True)

    def start(self) -> Sandbox:
        """Start the worker now rather than on the first run (start-up costs ~20-60 ms)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("sandbox is closed")
            if self._proc is None or self._proc.poll() is not None:
                self._kill_worker()
                self._start()
        return self

    def close(self) -> None:
        """Stop the worker and remove the sandbox's host folder (what the finalizer does)."""
        with self._lock:
            self._closed = True
            self._finalizer()

    # -- protocol ---------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        data = json.dumps(message).encode()
        try:
            self._proc.stdin.write(struct.pack(">I", len(data)) + data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(f"cannot reach worker: {exc}") from exc

    def _recv(self, deadline: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        buf = bytearray()
        need = 4
        size = None
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while len(buf) < need:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise WorkerDied("worker stopped answering")
                chunk = os.read(fd, need - len(buf))
                if not chunk:
                    raise WorkerDied("worker exited")
                buf.extend(chunk)
                if size is None and len(buf) >= 4:
                    (size,) = struct.unpack(">I", buf[:4])
                    need = 4 + size
        return json.loads(bytes(buf[4:need]))

    # -- running ----------------------------------------------------------------------------
    def run(self, request: RunRequest | str, **overrides: Any) -> RunResult:
        """Run one job. A string is shorthand for ``RunRequest(code=...)``."""
        if isinstance(request, str):
            request = RunRequest(code=request, **{**self.defaults, **overrides})
        elif overrides:
            raise TypeError("pass limits inside the RunRequest")
        job = _job_message(request)
        with self._lock:
            if self._closed:
                raise RuntimeError("sandbox is closed")
            restarted = False
            if self._proc is None or self._proc.poll() is not None:
                restarted = self._proc is not None
                self._kill_worker()
                self._start()
            started = time.monotonic()
            try:
                self._send(job)
                reply = self._recv(started + request.time_limit_s + _HOST_GRACE_S)
            except WorkerDied as exc:
                self.restarts += 1
                self._kill_worker()
                return RunResult(
                    stdout="",
                    stderr=f"[sandbox] worker lost during the run ({exc}); it will be restarted",
                    exit_code=-signal.SIGKILL,
                    timed_out=time.monotonic() - started >= request.time_limit_s,
                    memory_exceeded=False,
                    output_truncated=False,
                    duration_s=time.monotonic() - started,
                    isolation=self.isolation,
                    worker_restarted=True,
                )
        if "error" in reply:
            raise RuntimeError(f"sandbox worker failed: {reply['error']}")
        return RunResult(
            stdout=base64.b64decode(reply["stdout"]).decode("utf-8", errors="replace"),
            stderr=base64.b64decode(reply["stderr"]).decode("utf-8", errors="replace"),
            exit_code=reply["exit_code"],
            timed_out=reply["timed_out"],
            memory_exceeded=reply["memory_exceeded"],
            output_truncated=reply["output_truncated"],
            duration_s=reply["duration_s"],
            isolation=self.isolation,
            worker_restarted=restarted,
        )


def _job_message(req: RunRequest) -> dict[str, Any]:
    def b64(value: str | bytes) -> str:
        raw = value.encode() if isinstance(value, str) else value
        return base64.b64encode(raw).decode()

    return {
        "code": req.code,
        "stdin": b64(req.stdin),
        "files": {name: b64(content) for name, content in req.files.items()},
        "time_limit_s": req.time_limit_s,
        "memory_limit_mb": req.memory_limit_mb,
        "output_limit_bytes": req.output_limit_bytes,
        "file_size_limit_bytes": req.file_size_limit_bytes,
        "open_files_limit": req.open_files_limit,
        "process_limit": req.process_limit,
    }


class SandboxPool(ClosedOnExit):
    """``size`` warm workers for concurrent episodes; each run takes whichever is idle."""

    def __init__(self, size: int = 2, level: IsolationLevel | None = None, **kwargs: Any) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.sandboxes = [Sandbox(level, **kwargs) for _ in range(size)]
        self._idle: queue.SimpleQueue[Sandbox] = queue.SimpleQueue()
        for sandbox in self.sandboxes:
            self._idle.put(sandbox)
        self.size = size

    @property
    def isolation(self) -> str:
        return self.sandboxes[0].isolation

    def start(self) -> SandboxPool:
        """Start every worker now, in parallel."""
        with ThreadPoolExecutor(self.size) as ex:
            list(ex.map(Sandbox.start, self.sandboxes))
        return self

    def run(self, request: RunRequest | str, **overrides: Any) -> RunResult:
        sandbox = self._idle.get()
        try:
            return sandbox.run(request, **overrides)
        finally:
            self._idle.put(sandbox)

    def map(self, requests: Iterable[RunRequest | str]) -> list[RunResult]:
        """Run many jobs on all workers at once; results come back in request order."""
        items: Sequence[RunRequest | str] = list(requests)
        with ThreadPoolExecutor(self.size) as ex:
            return list(ex.map(self.run, items))

    def close(self) -> None:
        for sandbox in self.sandboxes:
            sandbox.close()

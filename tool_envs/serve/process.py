"""``tool-envs serve`` in a child process: for scripts, benchmarks and tests that need servers."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class EnvServerProcess:
    """Starts ``tool-envs serve ENV_ID --port 0 ...`` and waits until it listens.

    Args:
        env_id: Registered env id.
        env_kwargs: ``--env-kwargs`` (JSON-serialisable).
        args: Further ``tool-envs serve`` flags, e.g. ``("--max-sessions", "8")``.
        env: Extra environment variables of the child.
        startup_timeout: Seconds to wait for the server to listen.
        command: Another server's command line instead (one that also prints ``serving ... on
            URL`` once listening): a comparison's server, started and stopped alike.

    Attributes:
        url: ``http://127.0.0.1:PORT`` once started.
        banner: The line the server printed once listening (its workers, where steps run, ...).
        pid: The server's process id.
    """

    def __init__(
        self,
        env_id: str,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 120.0,
        command: Sequence[str] | None = None,
    ):
        if command is None:
            command = [sys.executable, "-m", "tool_envs.cli", "serve", env_id, "--port", "0"]
            if env_kwargs:
                command = [*command, "--env-kwargs", json.dumps(dict(env_kwargs))]
        # A file, not a pipe: a chatty server must never block on a full pipe.
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        self.pid = self.process.pid
        self._log: str | None = None  # what the server wrote to stderr, kept once it stopped
        ready, _, _ = select.select([self.process.stdout], [], [], startup_timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("serving "):
            self.stop()
            raise RuntimeError(
                f"`tool-envs serve {env_id}` did not start within {startup_timeout} s: "
                f"{line!r} {self._stderr_tail()}"
            )
        self.banner = line.strip()
        self.url = line.split(" on ", 1)[1].split()[0]

    def health(self, timeout: float = 5.0) -> dict[str, Any]:
        """``GET /health``: status, active_sessions, max_sessions."""
        with urllib.request.urlopen(f"{self.url}/health", timeout=timeout) as answer:
            return json.loads(answer.read())

    def kill(self) -> None:
        """SIGKILL, as a crash would end it (a stopped process is continued first)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGCONT)
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM (every session's env is closed), SIGKILL after 30 s; idempotent."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is None:
            self._log = self.log()
            self._stderr.close()

    def log(self) -> str:
        """Everything the server wrote to stderr (its log) so far."""
        if self._log is not None:
            return self._log
        self._stderr.seek(0)
        return self._stderr.read()

    def _stderr_tail(self) -> str:
        return self.log()[-2000:]

    def __enter__(self) -> EnvServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

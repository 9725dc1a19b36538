"""The one request/result shape every isolation level shares, so callers never branch on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RunRequest:
    """Python source to run, with its stdin, extra files (relative to the work dir) and limits.

    ``memory_limit_mb`` caps the address space, which includes the interpreter's own ~20 MB.
    Exceeding ``output_limit_bytes`` on stdout or stderr stops the run (``output_truncated``).
    """

    code: str
    stdin: str | bytes = ""
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    time_limit_s: float = 5.0
    memory_limit_mb: int = 512
    output_limit_bytes: int = 64 * 1024
    file_size_limit_bytes: int = 16 * 1024 * 1024
    open_files_limit: int = 64
    process_limit: int = 32


@dataclass(frozen=True)
class RunResult:
    """What happened; ``exit_code`` is negative (-signal) when the process was killed."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    memory_exceeded: bool
    output_truncated: bool
    duration_s: float
    isolation: str
    worker_restarted: bool = False

    @property
    def ok(self) -> bool:
        """True when the code ran to completion with exit status 0 inside every limit."""
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.memory_exceeded
            and not self.output_truncated
        )

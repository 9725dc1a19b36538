"""The trajectories file: one JSON line per finished trial, durable as soon as it is written.

A run can die anywhere (Ctrl-C, a killed job, a full disk). Each line goes out in a single write
and is fsynced before the next trial is counted as done, so the file never holds a trial twice
and never loses one that was reported finished. A line torn by a crash mid-write is the only
possible damage; it is cut off when the file is opened again, and that trial simply reruns.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["TrajectoryStore", "trial_key"]

TrialKey = tuple[str, str, int]


def trial_key(record: Mapping[str, Any]) -> TrialKey:
    """What identifies a trial across reruns: (env_id, task_id, trial)."""
    return (str(record["env_id"]), str(record["task_id"]), int(record["trial"]))


class TrajectoryStore:
    """Append-only JSONL of trial records at ``path``."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def load(self) -> list[dict[str, Any]]:
        """Every complete record; repairs a torn last line; the first copy of a key wins."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            warnings.warn(
                f"{self.path}: dropping an unfinished last line ({len(data) - cut} bytes) "
                "left by an interrupted write; that trial will run again",
                stacklevel=2,
            )
            with open(self.path, "r+b") as handle:
                handle.truncate(cut)
                handle.flush()
                os.fsync(handle.fileno())
            data = data[:cut]
        records: list[dict[str, Any]] = []
        seen: set[TrialKey] = set()
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = trial_key(record)
            except (ValueError, KeyError, TypeError) as exc:
                warnings.warn(f"{self.path}:{number}: skipping a bad line ({exc})", stacklevel=2)
                continue
            if key not in seen:
                seen.add(key)
                records.append(record)
        return records

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line, durably, in a single write call."""
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode("utf-8")
            written = os.write(fd, data)
            while written < len(data):  # a short write is rare on local files, but possible
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)

"""What an evaluation run produced.

Its own module because both the runner (which makes it) and the reports (which read it) need
it: defined in either, the other would import back and close a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class EvalResult:
    """What a run produced: records of the selected trials, their summary, and where files are."""

    records: list[dict[str, Any]]
    summary: dict[str, Any]
    out: Path
    new_trials: int
    skipped_trials: int
    interrupted: bool = False
    error: str | None = None
    files: dict[str, Path] = field(default_factory=dict)

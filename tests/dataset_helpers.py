"""The committed datasets under ``datasets/``: each is what its builder writes, and loads back."""

from __future__ import annotations

import runpy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tool_envs.data import load_tasks, validate_row

REPO = Path(__file__).resolve().parents[1]


def check_committed_dataset(
    tmp_path: Path,
    name: str,
    test_rows: Iterable[Mapping[str, Any]],
    extra_files: tuple[str, ...] = (),
) -> Path:
    """``datasets/<name>`` is what its builder writes, byte for byte (its README, its splits and
    ``extra_files``), and its test split loads as ``test_rows``; the committed folder."""
    build = runpy.run_path(str(REPO / f"datasets/{name}/build.py"))["build"]
    build(tmp_path)
    committed = REPO / f"datasets/{name}"
    for file in ("README.md", "data/train.jsonl", "data/test.jsonl", *extra_files):
        assert (tmp_path / file).read_bytes() == (committed / file).read_bytes(), file
    rows = load_tasks(str(committed), split="test")
    assert rows == [validate_row(r) for r in test_rows]
    return committed

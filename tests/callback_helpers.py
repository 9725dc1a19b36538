"""Driving a training callback the way a Trainer does, without training, in tests."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any


@dataclass
class FixedEvaluator:
    """What ``EnvSuccessCallback`` reads of an evaluator: the same success rate and the same
    departures from the gold at every check, over four tasks."""

    rate: float
    found: list[Any] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=lambda: [{}] * 4)

    def success(self, model: Any) -> float:
        return self.rate

    def departures(self) -> list[Any]:
        return self.found


def end_steps(callback: Any, output_dir: Path, steps: Iterable[int], model: Any) -> None:
    """The callback's ``on_step_end`` at each of ``steps``, with ``model`` as the weights."""
    from transformers import TrainerControl

    args = SimpleNamespace(output_dir=str(output_dir), process_index=0)
    control = TrainerControl()
    for step in steps:
        callback.on_step_end(args, SimpleNamespace(global_step=step), control, model=model)

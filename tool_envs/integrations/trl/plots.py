"""The reward curve of a run, from its metrics file, with held-out success beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tool_envs.eval.heldout import HeldoutComparison


def plot_reward_curve(
    metrics_path: str | os.PathLike[str],
    png_path: str | os.PathLike[str],
    key: str = "env/reward",
    window: int = 5,
    heldout: HeldoutComparison | None = None,
) -> Path:
    """Draw ``key`` per training step from a :class:`MetricsFile`, with a moving average.

    Per-step rewards of small batches are noisy; the moving average over ``window`` steps is
    the line to read. If the file holds several runs (steps that start again, as files written
    before :func:`start_new_run` can), only the last run is drawn. With ``heldout``, greedy
    success before and after training is drawn beside the curve.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in Path(metrics_path).read_text().splitlines() if line]
    points = _last_run([(r["step"], r[key]) for r in records if r.get(key) is not None])
    if heldout is None:
        figure, axis = plt.subplots(figsize=(6, 3.5))
    else:
        figure, (axis, bars) = plt.subplots(
            1, 2, figsize=(9, 3.5), gridspec_kw={"width_ratios": [2, 1]}
        )
        _draw_heldout(bars, heldout)
    if points:
        steps, values = zip(*points, strict=True)
        axis.plot(steps, values, marker="o", markersize=3, alpha=0.35, label=f"{key} per step")
        smoothed = [
            sum(values[max(0, i - window + 1) : i + 1])
            / len(values[max(0, i - window + 1) : i + 1])
            for i in range(len(values))
        ]
        axis.plot(steps, smoothed, linewidth=2.2, label=f"moving average ({window} steps)")
    axis.set_xlabel("training step")
    axis.set_ylabel(key)
    axis.set_ylim(-0.05, 1.05)
    axis.grid(alpha=0.3)
    axis.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(png_path, dpi=120)
    plt.close(figure)
    return Path(png_path)


def _draw_heldout(axis: Any, heldout: HeldoutComparison) -> None:
    """Two bars: greedy held-out success of the starting and the trained model."""
    heights = [heldout.success_before, heldout.success_after]
    axis.bar(["before", "after"], heights, color=["tab:gray", "tab:blue"])
    for index, height in enumerate(heights):
        axis.text(index, height + 0.02, f"{height:.1%}", ha="center")
    axis.set_ylim(0, 1.1)
    axis.set_title(f"held-out greedy success\n{heldout.n_tasks} tasks, p = {heldout.p_value:.1e}")


def _last_run(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The points after the last place where the step goes back (a new run began there)."""
    start = 0
    for index in range(1, len(points)):
        if points[index][0] <= points[index - 1][0]:
            start = index
    return points[start:]

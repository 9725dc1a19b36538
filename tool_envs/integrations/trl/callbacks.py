"""Trainer callbacks: metrics on disk as they happen, env success checks, a reward curve."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from tool_envs.eval.heldout import HeldoutComparison, HeldoutEvaluator
from tool_envs.rollout.engine import RolloutConfig


class MetricsFile(TrainerCallback):
    """Writes every log dict to a JSONL file and flushes it, so a dead run loses nothing.

    One file holds one run. A run that starts from step 0 moves a file left by an earlier run
    to ``metrics.<its last write time>.jsonl`` beside it and starts a new one, so the reward
    curve never joins two runs into one line. A run resumed from a checkpoint
    (``resume_from_checkpoint``) keeps the file's records up to the checkpoint's step and drops
    the later ones: the resumed run logs those steps again.

    With ``echo`` (default), also prints one short line per log (loss and the episode
    metrics), through tqdm so the progress bar stays whole; :func:`one_line_logs` removes the
    Trainer's own print of the whole dict.
    """

    ECHO = (
        "loss",
        "env/reward",
        "env/success_rate",
        "env/turns",
        "env/tool_errors",
        "env/truncated_rate",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        echo: bool = True,
        resume_from_checkpoint: str | bool | None = None,
    ):
        self.path = Path(path)
        self.echo = echo
        self.resume_from_checkpoint = resume_from_checkpoint

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any):
        # The Trainer calls this before it loads a checkpoint's state, so the checkpoint is
        # read here: ours, or the one in the training arguments (what the recipes pass on).
        if state.is_world_process_zero:
            checkpoint = self.resume_from_checkpoint or args.resume_from_checkpoint
            start_new_run(self.path, resumed_at=_checkpoint_step(checkpoint, args.output_dir))

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any):
        if logs is None or not state.is_world_process_zero:
            return
        if self.echo:
            line = _echo_line(state.global_step, logs, self.ECHO)
            if line:
                from tqdm.auto import tqdm

                tqdm.write(line)
                sys.stdout.flush()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": state.global_step, **logs}, default=float) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def _echo_line(step: int, logs: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    shown = [
        f"{key.split('/')[-1]} {logs[key]:.3g}"
        for key in keys
        if isinstance(logs.get(key), int | float)
    ]
    if shown:
        return f"[step {step}] " + "  ".join(shown)
    if "train_runtime" in logs:
        return f"[done] {step} steps in {logs['train_runtime']:.0f} s"
    return None


def _checkpoint_step(checkpoint: str | bool | None, output_dir: str | None) -> int:
    """The global step of the checkpoint a run resumes from; 0 for a new run."""
    if checkpoint in (None, False, "", "false", "False"):
        return 0
    if checkpoint is True or str(checkpoint).lower() == "true":
        from transformers.trainer_utils import get_last_checkpoint

        found = None
        if output_dir and Path(output_dir).is_dir():
            found = get_last_checkpoint(output_dir)
        if found is None:
            return 0
        checkpoint = found
    state = Path(str(checkpoint)) / "trainer_state.json"
    try:
        return int(json.loads(state.read_text(encoding="utf-8"))["global_step"])
    except (OSError, ValueError, KeyError):
        return 0


def start_new_run(path: str | os.PathLike[str], resumed_at: int = 0) -> Path | None:
    """Prepare ``path`` (a :class:`MetricsFile`) for a run; returns where an old run went.

    ``resumed_at == 0``: a new run; an existing file is renamed to
    ``<stem>.<last write time>.jsonl`` (never overwritten). ``resumed_at > 0``: the run resumes
    from a checkpoint at that step; records after it are dropped, earlier ones kept.
    """
    path = Path(path)
    if not path.is_file():
        return None
    if resumed_at > 0:
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                step = json.loads(line)["step"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line of a killed run
            if step <= resumed_at:
                kept.append(line + "\n")
        path.write_text("".join(kept), encoding="utf-8")
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(path.stat().st_mtime))
    moved = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    number = 1
    while moved.exists():
        number += 1
        moved = path.with_name(f"{path.stem}.{stamp}-{number}{path.suffix}")
    path.rename(moved)
    return moved


class _BarOnly(ProgressCallback):
    """The Trainer's progress bar without its print of every log dict."""

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs):
        return control


def one_line_logs(trainer: Any) -> None:
    """Keep ``trainer``'s progress bar but not its print of the whole log dict each step, so
    a :class:`MetricsFile`'s short line is the one line per step (the dict is in its file)."""
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_BarOnly())


class EnvSuccessCallback(TrainerCallback):
    """Measures greedy success on held-out tasks every ``every_steps``; can stop training early.

    SFT warm starts for RL should stop mid-learning (a fully trained policy leaves GRPO groups
    with equal rewards and nothing to learn), so ``stop_at`` ends training once success reaches it.
    The checks are :class:`~tool_envs.eval.heldout.HeldoutEvaluator`'s, as the GRPO recipe's
    before/after comparison; :meth:`write_summary` records them (``sft_summary.json``).
    """

    def __init__(
        self,
        tokenizer: Any,
        tasks: Sequence[Mapping[str, Any]],
        *,
        every_steps: int = 10,
        stop_at: float | None = None,
        config: RolloutConfig | None = None,
    ):
        self.evaluator = HeldoutEvaluator(tokenizer, tasks, config)
        self.tasks = self.evaluator.tasks
        self.every_steps = every_steps
        self.stop_at = stop_at
        self.history: list[tuple[int, float]] = []

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any):
        if model is None or state.global_step % self.every_steps:
            return control
        success = self.evaluator.success(model)
        self.history.append((state.global_step, success))
        print(
            f"step {state.global_step}: greedy success on {len(self.tasks)} tasks = {success:.2f}"
        )
        if self.stop_at is not None and success >= self.stop_at:
            control.should_training_stop = True
        return control

    @property
    def reached(self) -> bool | None:
        """Whether a check reached ``stop_at`` (None without a target)."""
        if self.stop_at is None:
            return None
        return any(success >= self.stop_at for _, success in self.history)

    def shortfall(self, steps: int) -> str | None:
        """A plain account of a target not reached within ``steps``, or None if it was.

        A warm start that never got there is a different starting point from the one asked for
        (GRPO from a near-zero policy gets all-zero groups): say so instead of handing it on.
        """
        if self.reached is not False:
            return None
        best_step, best = max(self.history, key=lambda point: point[1], default=(0, 0.0))
        return (
            f"greedy success never reached {self.stop_at:.2f} on the {len(self.tasks)} check "
            f"tasks within {steps} steps (best {best:.2f} at step {best_step}). The saved model "
            f"is not the warm start asked for: raise max_steps or change the seed."
        )

    def write_summary(self, path: str | os.PathLike[str], steps: int) -> Path:
        """The checks as JSON: ``steps``, ``stop_at_success``, ``reached`` and ``checks``."""
        summary = {
            "steps": steps,
            "stop_at_success": self.stop_at,
            "reached": self.reached,
            "checks": self.history,
        }
        path = Path(path)
        path.write_text(json.dumps(summary, indent=1))
        return path


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

"""Trainer callbacks: metrics on disk as they happen, env success checks, a reward curve."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from tool_envs.rollout.backends.base import SamplingSettings
from tool_envs.rollout.backends.hf import TransformersBackend
from tool_envs.rollout.engine import RolloutConfig, RolloutEngine


class MetricsFile(TrainerCallback):
    """Appends every log dict to a JSONL file and flushes it, so a dead run loses nothing.

    With ``echo`` (default), also prints one short line of the episode metrics per log.
    """

    ECHO = ("env/reward", "env/success_rate", "env/turns", "env/tool_errors", "env/truncated_rate")

    def __init__(self, path: str | os.PathLike[str], echo: bool = True):
        self.path = Path(path)
        self.echo = echo

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any):
        if logs is None or not state.is_world_process_zero:
            return
        shown = [f"{key.split('/')[-1]} {logs[key]:.3g}" for key in self.ECHO if key in logs]
        if self.echo and shown:
            print(f"[step {state.global_step}] " + "  ".join(shown), flush=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": state.global_step, **logs}, default=float) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def greedy_success(
    model: Any, tokenizer: Any, tasks: Sequence[Mapping[str, Any]], config: RolloutConfig
) -> float:
    """Share of ``tasks`` the model solves with greedy decoding."""
    backend = TransformersBackend(model, pad_token_id=tokenizer.pad_token_id)
    was_training = model.training
    model.eval()
    try:
        with RolloutEngine(tokenizer, backend, SamplingSettings(temperature=0.0), config) as engine:
            rollouts = engine.run(tasks)
    finally:
        model.train(was_training)
    return sum(r.success for r in rollouts) / max(len(rollouts), 1)


class EnvSuccessCallback(TrainerCallback):
    """Measures greedy success on held-out tasks every ``every_steps``; can stop training early.

    SFT warm starts for RL should stop mid-learning (a fully trained policy leaves GRPO groups
    with equal rewards and nothing to learn), so ``stop_at`` ends training once success reaches it.
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
        self.tokenizer = tokenizer
        self.tasks = list(tasks)
        self.every_steps = every_steps
        self.stop_at = stop_at
        self.config = config or RolloutConfig(max_completion_length=256, max_tokens_per_turn=64)
        self.history: list[tuple[int, float]] = []

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any):
        if model is None or state.global_step % self.every_steps:
            return control
        success = greedy_success(model, self.tokenizer, self.tasks, self.config)
        self.history.append((state.global_step, success))
        print(
            f"step {state.global_step}: greedy success on {len(self.tasks)} tasks = {success:.2f}"
        )
        if self.stop_at is not None and success >= self.stop_at:
            control.should_training_stop = True
        return control


def plot_reward_curve(
    metrics_path: str | os.PathLike[str],
    png_path: str | os.PathLike[str],
    key: str = "env/reward",
    window: int = 5,
) -> Path:
    """Draw ``key`` per training step from a :class:`MetricsFile`, with a moving average.

    Per-step rewards of small batches are noisy; the moving average over ``window`` steps is
    the line to read.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in Path(metrics_path).read_text().splitlines() if line]
    points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
    figure, axis = plt.subplots(figsize=(6, 3.5))
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

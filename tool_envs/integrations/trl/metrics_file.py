"""Training metrics as they happen: a JSONL file flushed per log, one short line per step, and
a word when GRPO has nothing to learn from (every group's rewards equal)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback


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
            start_new_run(self.path, resumed_at=checkpoint_step(checkpoint, args.output_dir))

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


class RewardSignalWatch(TrainerCallback):
    """Says when GRPO has had no reward signal for ``steps`` steps in a row, and what to do.

    GRPO learns from differences between the completions of one prompt: a group whose rewards
    are all equal has zero advantage, and a step where every group is like that changes nothing
    (``loss 0`` each step). A cold model that never solves a task gets exactly that, step after
    step, and nothing else on the console would say why. This reads TRL's own log keys:
    ``frac_reward_zero_std`` (the share of such groups; 1 means none had a signal), or
    ``reward_std`` (0: none) where a trainer logs only that (TRL's async GRPO). It warns once
    per quiet stretch, after ``steps`` steps, and at the end of a run that never had a signal
    but was shorter than that. ``echo`` prints through tqdm by default, so the bar stays whole.
    """

    def __init__(self, steps: int = 10, echo: Callable[[str], Any] | None = None):
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self.steps = steps
        self.echo = echo
        self._quiet_since: int | None = None  # first step of the current quiet stretch
        self._last_step = 0
        self._warned = False
        self._had_signal = False

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs):
        if not logs or not state.is_world_process_zero:
            return
        quiet = _no_signal(logs)
        if quiet is None:
            return
        previous, self._last_step = self._last_step, state.global_step
        if not quiet:
            self._had_signal, self._quiet_since, self._warned = True, None, False
            return
        if self._quiet_since is None:
            self._quiet_since = previous + 1
        length = state.global_step - self._quiet_since + 1
        if length >= self.steps and not self._warned:
            self._warned = True
            self._say(f"in steps {self._quiet_since}-{state.global_step}")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any):
        never = self._quiet_since is not None and not self._had_signal
        if state.is_world_process_zero and never and not self._warned:
            self._say(f"in any of this run's {state.global_step} steps")

    def _say(self, when: str) -> None:
        self._echo(
            f"WARNING: no reward signal {when}: in every group the completions of a prompt got "
            "the same reward, so GRPO had nothing to learn from. A model that never solves a "
            "task gets here: warm-start it with SFT on the env's gold turns first "
            "(recipes/train_sft.py, as `make demo` does), or sample more (num_generations, "
            "temperature)."
        )

    def _echo(self, line: str) -> None:
        if self.echo is not None:
            self.echo(line)
            return
        from tqdm.auto import tqdm

        tqdm.write(line)
        sys.stdout.flush()


def _no_signal(logs: Mapping[str, Any]) -> bool | None:
    """Whether a logged step had no reward signal in any group; None when it does not say."""
    share = logs.get("frac_reward_zero_std")
    if isinstance(share, int | float):
        return share >= 1.0 - 1e-9
    spread = logs.get("reward_std")
    if isinstance(spread, int | float):
        return spread <= 1e-12
    return None


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


def checkpoint_step(
    checkpoint: str | bool | os.PathLike[str] | None, output_dir: str | None
) -> int:
    """The global step of the checkpoint a run resumes from; 0 for a new run."""
    folder = resumed_checkpoint(checkpoint, output_dir)
    if folder is None:
        return 0
    try:
        return int(json.loads((folder / "trainer_state.json").read_text("utf-8"))["global_step"])
    except (OSError, ValueError, KeyError):
        return 0


def resumed_checkpoint(
    checkpoint: str | bool | os.PathLike[str] | None, output_dir: str | None
) -> Path | None:
    """The checkpoint folder a run resumes from (``resume_from_checkpoint`` as the Trainer
    reads it: a path, or true for the newest in ``output_dir``); None for a new run."""
    if checkpoint in (None, False, "", "false", "False"):
        return None
    if checkpoint is True or str(checkpoint).lower() == "true":
        from transformers.trainer_utils import get_last_checkpoint

        found = None
        if output_dir and Path(output_dir).is_dir():
            found = get_last_checkpoint(output_dir)
        return None if found is None else Path(found)
    return Path(str(checkpoint))


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

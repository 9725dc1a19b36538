"""Stop SFT at a target env success, and rewind to the best weights seen when it overshoots.

:class:`EnvSuccessCallback` plays held-out episodes every so many steps; :class:`WeightSnapshot`
keeps the trainable weights of the best check so a run can be put back to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from tool_envs.eval.departures import departure_counts
from tool_envs.eval.heldout import HeldoutEvaluator
from tool_envs.eval.teacher_forced import GoldScores
from tool_envs.integrations.trl.metrics_file import (
    checkpoint_step,
    resumed_checkpoint,
    start_new_run,
)
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.episode import TaskRows

SNAPSHOT_MEMORY_LIMIT = 1 << 30  # bytes of trainable weights 'auto' keeps in RAM; more go to disk


class WeightSnapshot:
    """The trainable weights of one moment of training, kept to be put back later.

    Only parameters that train (``requires_grad``) are kept: frozen ones cannot change, so a LoRA
    run keeps its adapters, not the base model. ``where`` is ``"memory"`` (a CPU copy), ``"disk"``
    (the safetensors file ``path``, read back one tensor at a time) or ``"auto"`` (memory up to
    :data:`SNAPSHOT_MEMORY_LIMIT` bytes, else disk): a RAM copy of a 7B model's weights is not a
    default anyone wants.
    """

    def __init__(self, where: str = "auto", path: str | os.PathLike[str] | None = None):
        if where not in ("auto", "memory", "disk"):
            raise ValueError(f"snapshot must be 'auto', 'memory' or 'disk', not {where!r}")
        self.where = where
        self.path = Path(path) if path is not None else None
        self.point: tuple[int, float] | None = None  # the check whose weights are kept
        self._memory: dict[str, Any] | None = None

    @staticmethod
    def _trainable(model: Any) -> list[tuple[str, Any]]:
        return [(name, p) for name, p in model.named_parameters() if p.requires_grad]

    def save(self, model: Any, point: tuple[int, float]) -> None:
        """Keep ``model``'s trainable weights as those of the check ``point`` (step, success)."""
        params = self._trainable(model)
        size = sum(p.numel() * p.element_size() for _, p in params)
        where = self.where
        if where == "auto":
            where = "memory" if size <= SNAPSHOT_MEMORY_LIMIT else "disk"
        if where == "memory":
            self._memory = {name: p.detach().to("cpu", copy=True) for name, p in params}
        else:
            from safetensors.torch import save_file

            if self.path is None:
                raise ValueError("a disk snapshot needs a path")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tensors = {name: p.detach().cpu().contiguous() for name, p in params}
            partial = self.path.with_name(self.path.name + ".partial")
            save_file(tensors, str(partial))
            os.replace(partial, self.path)
            self._memory = None
        self.point = point

    def restore(self, model: Any) -> None:
        """Copy the kept weights back into ``model`` (in place: the optimizer keeps its tensors)."""
        import torch

        if self.point is None:
            raise RuntimeError("no snapshot to restore")
        params = self._trainable(model)
        with torch.no_grad():
            if self._memory is not None:
                for name, p in params:
                    p.copy_(self._memory[name])
                return
            from safetensors import safe_open

            assert self.path is not None
            with safe_open(str(self.path), framework="pt") as handle:
                for name, p in params:
                    p.copy_(handle.get_tensor(name))

    def export(self, path: str | os.PathLike[str]) -> None:
        """Write the kept weights to the safetensors file ``path`` (a checkpoint's copy)."""
        if self.point is None:
            raise RuntimeError("no snapshot to export")
        if self._memory is not None:
            from safetensors.torch import save_file

            save_file({name: t.contiguous() for name, t in self._memory.items()}, str(path))
        else:
            assert self.path is not None
            shutil.copyfile(self.path, path)

    def load(self, path: str | os.PathLike[str], point: tuple[int, float]) -> None:
        """Keep the weights of the file ``path`` (an :meth:`export`) as those of ``point``."""
        where = self.where
        if where == "auto":
            where = "memory" if Path(path).stat().st_size <= SNAPSHOT_MEMORY_LIMIT else "disk"
        if where == "memory":
            from safetensors.torch import load_file

            self._memory = load_file(str(path))
        else:
            if self.path is None:
                raise ValueError("a disk snapshot needs a path")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, self.path)
            self._memory = None
        self.point = point

    def discard(self) -> None:
        """Free the copy: its file, and its folder once empty."""
        self._memory = None
        self.point = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path.with_name(self.path.name + ".partial").unlink(missing_ok=True)
            # Left if not empty (another rank's file, or the user's), or already gone.
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()


class EnvSuccessCallback(TrainerCallback):
    """Measures greedy success on held-out tasks every ``every_steps``; can stop training early.

    SFT warm starts for RL should stop mid-learning (a fully trained policy leaves GRPO groups
    with equal rewards and nothing to learn), so ``stop_at`` ends training once success reaches it.
    The checks are :class:`~tool_envs.eval.heldout.HeldoutEvaluator`'s, as the GRPO recipe's
    before/after comparison; :meth:`write_summary` records them (``sft_summary.json``).

    Success can jump by tens of points between two checks (Calculator SFT: 0.28 at step 340,
    0.70 at step 360), so landing near ``stop_at`` takes more than a stop rule:

    - checks come every ``every_steps_near`` steps once the last check is within ``near_margin``
      below ``stop_at``, or the line through the last two checks gets there by the next coarse
      check;
    - the weights of the last check below ``stop_at`` are kept (:class:`WeightSnapshot`). A check
      above ``stop_at + overshoot`` puts them back and training goes on from there with fine
      checks (at most ``max_rewinds`` times): success is found again, in small steps;
    - when training ends after reaching ``stop_at``, the model holds the weights of the check
      nearest ``stop_at`` (the last one, or the kept one below it; a tie goes to the last).

    ``snapshot=None`` keeps none: the model ends with the weights of the last step (the rule
    before). ``evaluator`` (default a :class:`HeldoutEvaluator` of ``tasks``) is anything with
    ``success(model) -> float``. ``gold_probe`` (``model -> GoldScores``, e.g. teacher-forced
    :func:`~tool_envs.eval.teacher_forced.gold_scores` on the check tasks' gold) runs at each
    check too; its scores move while greedy success still reads 0 (``gold_history``).

    With checkpoints (``save_strategy``), each checkpoint also holds this rule's state (the
    checks, rewinds, when the next check is due, the kept weights: :data:`STATE_FILE`,
    :data:`SNAPSHOT_FILE`), and a run resumed from it (``resume_from_checkpoint``) goes on as if
    never stopped. The Trainer writes ``trainer_state.json`` after them, so a checkpoint that
    has it has them too.
    """

    STATE_FILE = "env_success_state.json"
    SNAPSHOT_FILE = "env_success_snapshot.safetensors"

    def __init__(
        self,
        tokenizer: Any,
        tasks: TaskRows,
        *,
        every_steps: int = 10,
        stop_at: float | None = None,
        config: RolloutConfig | None = None,
        every_steps_near: int | None = None,
        near_margin: float = 0.1,
        overshoot: float = 0.1,
        snapshot: str | None = "auto",
        snapshot_dir: str | os.PathLike[str] | None = None,
        max_rewinds: int = 3,
        evaluator: Any = None,
        gold_probe: Callable[[Any], GoldScores] | None = None,
        resume_from_checkpoint: str | bool | None = None,
    ):
        if evaluator is None:
            evaluator = HeldoutEvaluator(tokenizer, tasks, config)
        self.evaluator = evaluator
        self.tasks = self.evaluator.tasks if hasattr(self.evaluator, "tasks") else list(tasks)
        self.every_steps = every_steps
        self.every_steps_near = every_steps_near or every_steps
        self.stop_at = stop_at
        self.near_margin = near_margin
        self.overshoot = overshoot
        self.snapshot_where = snapshot
        self.snapshot_dir = snapshot_dir
        self.max_rewinds = max_rewinds
        self.history: list[tuple[int, float]] = []
        self.gold_probe = gold_probe
        self.gold_history: list[tuple[int, dict[str, Any]]] = []
        self.rewinds: list[dict[str, Any]] = []
        self.saved: dict[str, Any] | None = None  # the check whose weights the model ends with
        self._snapshot: WeightSnapshot | None = None
        self._next_check: int | None = None  # None: at multiples of every_steps
        self._current: tuple[int, float] | None = None  # the check the model's weights are from
        self._current_at = -1  # the step at which the model last held exactly those weights
        self.resume_from_checkpoint = resume_from_checkpoint
        self._resumed_at: int | None = None  # the step of the checkpoint taken up; None: unknown

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self.stop_at is not None and self.snapshot_where is not None:
            folder = self.snapshot_dir or Path(args.output_dir or ".", "target-snapshot")
            name = f"weights-rank{getattr(args, 'process_index', 0)}.safetensors"
            self._snapshot = WeightSnapshot(self.snapshot_where, Path(folder, name))
        # The Trainer calls this before it loads a checkpoint's state, so the checkpoint is
        # read here: ours, or the one in the training arguments (what the recipes pass on).
        wanted = self.resume_from_checkpoint or args.resume_from_checkpoint
        checkpoint = resumed_checkpoint(wanted, args.output_dir)
        self._resumed_at = checkpoint_step(checkpoint, args.output_dir)
        if checkpoint is not None:
            self._resume(checkpoint)
        if args.output_dir and getattr(args, "process_index", 0) == 0:
            checks = Path(args.output_dir, "greedy_checks.jsonl")
            start_new_run(checks, resumed_at=self._resumed_at)  # one run's checks per file
        return control

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any):
        if self._resumed_at is not None and state.global_step > self._resumed_at:
            raise ValueError(
                f"EnvSuccessCallback: the Trainer resumed at step {state.global_step} from a "
                "checkpoint this callback was not told of, so its checks would start over: pass "
                "it as resume_from_checkpoint (here or in the TrainingArguments)"
            )
        self._resumed_at = None  # checked once, at the first step
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any):
        # The Trainer's flow callback, which runs first, has said whether this step saves.
        self._check(args, state, control, model)
        if control.should_save and args.output_dir and getattr(args, "process_index", 0) == 0:
            self._save_state(Path(args.output_dir, f"checkpoint-{state.global_step}"))
        return control

    def _save_state(self, checkpoint: Path) -> None:
        """Write the rule's state into the checkpoint folder the Trainer is about to fill."""
        checkpoint.mkdir(parents=True, exist_ok=True)
        kept = self._snapshot.point if self._snapshot is not None else None
        if kept is not None:
            assert self._snapshot is not None
            self._snapshot.export(checkpoint / self.SNAPSHOT_FILE)
        record = {
            "history": self.history,
            "gold_history": self.gold_history,
            "rewinds": self.rewinds,
            "next_check": self._next_check,
            "current": self._current,
            "current_at": self._current_at,
            "kept": kept,
        }
        (checkpoint / self.STATE_FILE).write_text(json.dumps(record), encoding="utf-8")

    def _resume(self, checkpoint: Path) -> None:
        """Take up the rule's state from a checkpoint :meth:`_save_state` wrote."""
        path = checkpoint / self.STATE_FILE
        if not path.is_file():
            raise ValueError(
                f"resume_from_checkpoint {checkpoint}: no {self.STATE_FILE} there, so the greedy "
                "success checks cannot go on where they stopped (the checkpoint was saved "
                "without them: by another recipe, or a tool_envs before they were saved)"
            )
        record = json.loads(path.read_text(encoding="utf-8"))
        self.history = [(step, success) for step, success in record["history"]]
        self.gold_history = [(step, gold) for step, gold in record["gold_history"]]
        self.rewinds = record["rewinds"]
        self._next_check = record["next_check"]
        self._current = None if record["current"] is None else tuple(record["current"])
        self._current_at = record["current_at"]
        if record["kept"] is not None and self._snapshot is not None:
            self._snapshot.load(checkpoint / self.SNAPSHOT_FILE, tuple(record["kept"]))

    def _check(self, args: Any, state: Any, control: Any, model: Any) -> None:
        """A greedy check if one is due, and what it decides: go on, rewind or stop."""
        step = state.global_step
        due = step % self.every_steps == 0 if self._next_check is None else step >= self._next_check
        if model is None or not due:
            return
        started = time.perf_counter()
        success = self.evaluator.success(model)
        seconds = time.perf_counter() - started
        self.history.append((step, success))
        self._current, self._current_at = (step, success), step
        print(
            f"step {step}: greedy success on {len(self.tasks)} tasks = {success:.2f} "
            f"({seconds:.0f} s)"
        )
        gold = None
        if self.gold_probe is not None:
            scores = self.gold_probe(model)
            gold = scores.as_dict()
            self.gold_history.append((step, gold))
            print(f"step {step}: teacher-forced on the gold: {scores.summary()}")
        self._record_check(args, step, success, gold, seconds)
        if self.stop_at is not None and success < self.stop_at:
            if self._snapshot is not None:
                self._snapshot.save(model, (step, success))
        elif self.stop_at is not None:
            if success > self.stop_at + self.overshoot and self._can_rewind():
                self._rewind(model, step, success)
            else:
                control.should_training_stop = True
        self._next_check = step + self.every_steps_near if self._near() else None

    def _record_check(
        self, args: Any, step: int, success: float, gold: dict[str, Any] | None, seconds: float
    ) -> None:
        """Where the failed check episodes left their gold: one line printed, and every
        departure appended to ``OUTPUT_DIR/greedy_checks.jsonl`` (main process only), with the
        gold probe's scores (``gold``) when there is a probe."""
        if not hasattr(self.evaluator, "departures"):
            return
        found = self.evaluator.departures()
        if found:
            print(f"step {step}: first departures from the gold: {departure_counts(found)}")
        if args.output_dir and getattr(args, "process_index", 0) == 0:
            path = Path(args.output_dir, "greedy_checks.jsonl")
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {"step": step, "success": success, "seconds": round(seconds, 2)}
            record["departures"] = [d.as_dict() for d in found]
            if gold is not None:
                record["gold"] = gold
            with path.open("a", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")

    def _can_rewind(self) -> bool:
        return (
            self._snapshot is not None
            and self._snapshot.point is not None
            and len(self.rewinds) < self.max_rewinds
        )

    def _rewind(self, model: Any, step: int, success: float) -> None:
        """Put back the weights of the last check below the target; go on from there."""
        assert self._snapshot is not None and self._snapshot.point is not None
        self._snapshot.restore(model)
        back_step, back_success = self._snapshot.point
        self.rewinds.append(
            {"step": step, "success": success, "back_to": back_step, "back_success": back_success}
        )
        self._current, self._current_at = self._snapshot.point, step
        print(
            f"step {step}: {success:.2f} overshot {self.stop_at:.2f} + {self.overshoot:.2f}; "
            f"back to the weights of step {back_step} ({back_success:.2f}), checking every "
            f"{self.every_steps_near} steps"
        )

    def _near(self) -> bool:
        """Whether the next check should come soon: the target is close, or was overshot."""
        if self.stop_at is None or not self.history:
            return False
        if self.rewinds:
            return True
        step, success = self.history[-1]
        predicted = success
        if len(self.history) >= 2:
            before_step, before = self.history[-2]
            slope = max(success - before, 0.0) / max(step - before_step, 1)
            predicted = success + slope * self.every_steps
        return predicted >= self.stop_at - self.near_margin

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any):
        """Leave the model with the weights of the check nearest the target."""
        current = self._current if self._current_at == state.global_step else None
        kept = self._snapshot.point if self._snapshot is not None else None
        if self.reached and model is not None and kept is not None:
            assert self.stop_at is not None
            if current is None or abs(kept[1] - self.stop_at) < abs(current[1] - self.stop_at):
                assert self._snapshot is not None
                self._snapshot.restore(model)
                current = kept
                print(
                    f"kept the weights of step {kept[0]} (greedy success {kept[1]:.2f}): "
                    f"nearest the target {self.stop_at:.2f}"
                )
        self.saved = self._point(current, state.global_step)
        if self._snapshot is not None:
            self._snapshot.discard()
        return control

    def _point(self, check: tuple[int, float] | None, steps: int) -> dict[str, Any]:
        """A check as ``{step, success, updates}``; updates leave out steps undone by rewinds."""
        step = check[0] if check is not None else steps
        undone = sum(r["step"] - r["back_to"] for r in self.rewinds if r["step"] < step)
        return {
            "step": step,
            "success": check[1] if check is not None else None,
            "updates": step - undone,
        }

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
        """The checks as JSON: ``steps``, ``stop_at_success``, ``reached``, ``checks`` (every
        (step, success)), ``gold_checks`` (every (step, gold probe scores)), ``saved`` (the check
        the saved weights are from), ``rewinds``."""
        summary = {
            "steps": steps,
            "stop_at_success": self.stop_at,
            "reached": self.reached,
            "saved": self.saved or self._point(None, steps),
            "checks": self.history,
            "gold_checks": self.gold_history,
            "rewinds": self.rewinds,
            "every_steps": self.every_steps,
            "every_steps_near": self.every_steps_near,
            "near_margin": self.near_margin,
            "overshoot": self.overshoot,
            "snapshot": self.snapshot_where,
        }
        path = Path(path)
        path.write_text(json.dumps(summary, indent=1))
        return path

"""Greedy success of a local model on held-out tasks: the one answer to "how good is it?".

Both training recipes ask it. The SFT recipe checks it every few steps and stops once a target
is reached (a warm start for RL should stop mid-learning); the GRPO recipe scores the model
before and after training on the same tasks. Both use :class:`HeldoutEvaluator`, with the same
budgets, so the SFT recipe's last check and the GRPO recipe's "before" measure the same thing.

A reward curve of sampled rollouts is noisy and can rise while the greedy policy stays where it
was (sampling sharpens toward what greedy already does). What a user wants to know is whether
the trained model solves more unseen tasks than the one it started from; the paired per-task
outcomes of the two models on the same tasks answer that, and McNemar's exact test says how
likely the difference is under no change.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tool_envs.eval.departures import Departure, departures
from tool_envs.rollout.backends.base import GenerationBackend, SamplingSettings
from tool_envs.rollout.backends.hf import TransformersBackend
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.episode import TaskRows
from tool_envs.rollout.player import Policy, play
from tool_envs.rollout.sft import gold_turns_of

__all__ = [
    "EVAL_CONFIG",
    "HeldoutComparison",
    "HeldoutEvaluator",
    "count_seen",
    "discordant",
    "greedy_outcomes",
    "greedy_rollouts",
    "mcnemar_exact",
    "play_greedily",
]

# Short budgets: a held-out check runs in the middle of training, on every task, greedily.
EVAL_CONFIG = RolloutConfig(max_completion_length=256, max_tokens_per_turn=64)


def greedy_outcomes(
    model: Any,
    tokenizer: Any,
    tasks: TaskRows,
    config: RolloutConfig = EVAL_CONFIG,
) -> list[int]:
    """Per-task greedy success (1 or 0) of ``model``, in task order (paired across models)."""
    return successes(greedy_rollouts(model, tokenizer, tasks, config))


def greedy_rollouts(
    model: Any,
    tokenizer: Any,
    tasks: TaskRows,
    config: RolloutConfig = EVAL_CONFIG,
) -> list[Rollout]:
    """``model``'s greedy episodes of ``tasks``, in task order."""
    import torch

    backend = TransformersBackend(model, pad_token_id=tokenizer.pad_token_id)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            return play_greedily(backend, tokenizer, tasks, config)
    finally:
        model.train(was_training)


def play_greedily(
    backend: GenerationBackend,
    tokenizer: Any,
    tasks: TaskRows,
    config: RolloutConfig = EVAL_CONFIG,
) -> list[Rollout]:
    """Greedy episodes of ``tasks`` from any generation backend (a vLLM server's, say, which
    caches the shared prompt prefix), in task order; each env draws its own seed."""
    policy = Policy(tokenizer, backend, SamplingSettings(temperature=0.0), engine="lockstep")
    return play(list(tasks), None, policy, config).rollouts


def successes(rollouts: Sequence[Rollout]) -> list[int]:
    """Per-episode success as 1 or 0, in order: the paired outcomes McNemar's test reads."""
    return [int(bool(rollout.success)) for rollout in rollouts]


def count_seen(tasks: TaskRows, seen: Sequence[Mapping[str, Any]]) -> int:
    """How many of ``tasks`` have the prompt of a row in ``seen`` (held out only in name)."""
    prompts = {json.dumps(row["prompt"], sort_keys=True) for row in seen}
    return sum(json.dumps(row["prompt"], sort_keys=True) in prompts for row in tasks)


class HeldoutEvaluator:
    """A fixed list of held-out tasks, scored greedily for any model given to it.

    The tasks and budgets are fixed when it is made, so every score it gives (a periodic check,
    a before/after pair) is on the same footing and can be compared or paired.
    """

    def __init__(self, tokenizer: Any, tasks: TaskRows, config: RolloutConfig | None = None):
        self.tokenizer = tokenizer
        self.tasks = list(tasks)
        self.config = config or EVAL_CONFIG
        self.last_rollouts: list[Rollout] = []  # the last scored model's episodes
        self._golds: list[list[str] | None] | None = None

    def outcomes(self, model: Any, which: str | None = None) -> list[int]:
        """Per-task greedy outcomes of ``model``; with ``which``, says what is being scored."""
        if which:
            print(f"held-out: scoring {which} greedily on {len(self.tasks)} tasks", flush=True)
        self.last_rollouts = self.play(model)
        return successes(self.last_rollouts)

    def play(self, model: Any) -> list[Rollout]:
        """``model``'s greedy episodes of the tasks, in order (here through transformers; a
        subclass may play them on another engine given the model's weights)."""
        return greedy_rollouts(model, self.tokenizer, self.tasks, self.config)

    def outcomes_of(self, backend: GenerationBackend) -> list[int]:
        """Per-task greedy outcomes of the model ``backend`` generates with (a vLLM server, say)."""
        self.last_rollouts = play_greedily(backend, self.tokenizer, self.tasks, self.config)
        return successes(self.last_rollouts)

    def departures(self) -> list[Departure]:
        """Where the last scored model's failed episodes first left their gold conversation."""
        if self._golds is None:
            self._golds = gold_turns_of(self.tasks)
        return departures(self.last_rollouts, self._golds)

    def success(self, model: Any) -> float:
        """Share of the tasks ``model`` solves greedily."""
        outcomes = self.outcomes(model)
        return sum(outcomes) / max(len(outcomes), 1)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: discordant pairs b and c under Binomial(b + c, 1/2)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def discordant(first: Sequence[int], second: Sequence[int]) -> tuple[int, int]:
    """(b, c): tasks only ``first`` solves, and tasks only ``second`` solves."""
    if len(first) != len(second):
        raise ValueError(f"paired outcomes differ in length: {len(first)} and {len(second)}")
    b = sum(1 for x, y in zip(first, second, strict=True) if x and not y)
    c = sum(1 for x, y in zip(first, second, strict=True) if y and not x)
    return b, c


@dataclass(frozen=True)
class HeldoutComparison:
    """Paired greedy outcomes of the starting and the trained model on the same tasks."""

    success_before: float
    success_after: float
    n_tasks: int
    only_after: int  # tasks the trained model solves and the starting one does not
    only_before: int
    p_value: float

    @classmethod
    def of(cls, before: Sequence[int], after: Sequence[int]) -> HeldoutComparison:
        if not before:
            raise ValueError("no held-out outcomes to compare")
        only_after, only_before = discordant(after, before)
        return cls(
            success_before=sum(before) / len(before),
            success_after=sum(after) / len(after),
            n_tasks=len(before),
            only_after=only_after,
            only_before=only_before,
            p_value=mcnemar_exact(only_after, only_before),
        )

    def table(self) -> str:
        """A small table a person reads at the end of a run."""
        gain = 100 * (self.success_after - self.success_before)
        return "\n".join(
            [
                f"Held-out greedy success ({self.n_tasks} tasks no training step saw):",
                f"  {'before (starting model)':26} {self.success_before:6.1%}",
                f"  {'after (trained model)':26} {self.success_after:6.1%}   ({gain:+.1f} points)",
                f"  {'solved only after':26} {self.only_after:6d}",
                f"  {'solved only before':26} {self.only_before:6d}",
                f"  {'exact McNemar p-value':26} {self.p_value:9.2e}",
            ]
        )

    def write(self, path: str | os.PathLike[str], **extra: Any) -> Path:
        """The comparison as JSON (``extra``: e.g. ``steps`` and ``seconds`` of the run)."""
        path = Path(path)
        path.write_text(json.dumps({**asdict(self), **extra}, indent=1) + "\n", encoding="utf-8")
        return path

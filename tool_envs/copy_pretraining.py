"""Teach a randomly initialised tiny model to copy, as pretraining teaches an LLM to.

An agent in a tau domain copies all the time: the email the user gave, the user id a lookup
returned, the order id said three turns earlier. A pretrained LLM brings the circuit that does
this (induction heads: find the earlier occurrence of the current token, predict the token that
followed it). A tiny model built from random weights has to grow it during SFT on tau
conversations, and there it forms only after a long plateau: thousands of steps on a GPU,
beyond a CPU's budget (benchmarks/README.md, learning.py).

The circuit forms much sooner on data made for it: random token sequences whose first part
repeats. The repeat starts at a different offset in every sequence, so copying from a fixed
distance does not work; only matching the earlier occurrence does. With grouped digits
(``build_tokenizer(digits_per_token=3)``) an order id is a few rare tokens, which such a model
copies as it copies any other token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CopyPretraining",
    "copy_accuracy",
    "copyable_token_ids",
    "pretrain_copying",
    "repeated_sequences",
]

MIN_REPEAT = 8  # the shortest repeated part of a sequence


@dataclass(frozen=True)
class CopyPretraining:
    """What :func:`pretrain_copying` did: steps run and the copy accuracy they ended at."""

    steps: int
    copy_accuracy: float  # over the repeated tokens of the last ``check_every`` steps
    reached_target: bool


def repeated_sequences(
    token_ids: Sequence[int], batch_size: int, length: int, generator: Any
) -> tuple[Any, Any]:
    """``(ids, mask)`` of shape ``(batch_size, 2 * length)``: random tokens whose first ``k``
    (``MIN_REPEAT <= k <= length``, drawn per row) come again right after them. ``mask`` marks
    the repeated tokens a copying model can predict (all but the first of the repeat)."""
    import torch

    if length < MIN_REPEAT:
        raise ValueError(f"length must be at least {MIN_REPEAT}, got {length}")
    if len(token_ids) < 2:
        raise ValueError(f"token_ids needs at least 2 tokens to draw from, got {len(token_ids)}")
    table = torch.as_tensor(list(token_ids), dtype=torch.long)
    ids = table[torch.randint(len(table), (batch_size, 2 * length), generator=generator)]
    mask = torch.zeros_like(ids, dtype=torch.bool)
    repeats = torch.randint(MIN_REPEAT, length + 1, (batch_size,), generator=generator).tolist()
    for row, repeat in enumerate(repeats):
        ids[row, repeat : 2 * repeat] = ids[row, :repeat]
        mask[row, repeat + 1 : 2 * repeat] = True
    return ids, mask


def pretrain_copying(
    model: Any,
    token_ids: Sequence[int],
    *,
    max_steps: int,
    batch_size: int = 16,
    length: int = 64,
    learning_rate: float = 1e-3,
    warmup_steps: int = 30,
    target: float = 0.95,
    check_every: int = 50,
    seed: int = 0,
) -> CopyPretraining:
    """Train ``model`` in place on :func:`repeated_sequences` of ``token_ids`` until its copy
    accuracy over the last ``check_every`` steps reaches ``target``, or ``max_steps``.

    The loss covers the predictable repeated tokens only: the rest is noise by construction.
    """
    import torch

    for name, value in (("max_steps", max_steps), ("batch_size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / max(1, warmup_steps))
    )
    model.train()
    right = counted = 0
    accuracy, step = 0.0, 0
    for step in range(1, max_steps + 1):
        ids, mask = repeated_sequences(token_ids, batch_size, length, generator)
        logits = model(input_ids=ids).logits[:, :-1][mask[:, 1:]]
        targets = ids[:, 1:][mask[:, 1:]]
        torch.nn.functional.cross_entropy(logits, targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        right += int((logits.argmax(-1) == targets).sum())
        counted += len(targets)
        if step % check_every == 0 or step == max_steps:
            accuracy, right, counted = right / counted, 0, 0
            if accuracy >= target:
                break
    model.eval()
    return CopyPretraining(steps=step, copy_accuracy=accuracy, reached_target=accuracy >= target)


def copy_accuracy(
    model: Any,
    token_ids: Sequence[int],
    *,
    batches: int = 4,
    batch_size: int = 16,
    length: int = 64,
    seed: int = 1,
) -> float:
    """Share of the predictable repeated tokens ``model`` predicts (argmax) on fresh
    :func:`repeated_sequences`; about ``1 / len(token_ids)`` for a model that cannot copy."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    right = counted = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for _ in range(batches):
                ids, mask = repeated_sequences(token_ids, batch_size, length, generator)
                predicted = model(input_ids=ids).logits[:, :-1].argmax(-1)
                right += int((predicted == ids[:, 1:])[mask[:, 1:]].sum())
                counted += int(mask[:, 1:].sum())
    finally:
        model.train(was_training)
    return right / counted


def copyable_token_ids(tokenizer: Any) -> list[int]:
    """The tokens to draw sequences from: the whole vocabulary but the special tokens."""
    special = set(tokenizer.all_special_ids)
    return [token_id for token_id in range(len(tokenizer)) if token_id not in special]

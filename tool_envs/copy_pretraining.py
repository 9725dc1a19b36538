"""Teach a randomly initialised tiny model to copy, as pretraining teaches an LLM to.

An agent in a tau domain copies all the time: the email the user gave, the user id a lookup
returned, the order id said three turns earlier. A pretrained LLM brings the circuit that does
this (induction heads: find the earlier occurrence of the current token, predict the token that
followed it). A tiny model built from random weights has to grow it during SFT on tau
conversations, and there it forms only after a long plateau: thousands of steps on a GPU,
beyond a CPU's budget (benchmarks/HISTORY.md, learning.py).

The circuit forms much sooner on data made for it: random token sequences whose first part
repeats. The repeat starts at a different offset in every sequence, so copying from a fixed
distance does not work; only matching the earlier occurrence does. With grouped digits
(``build_tokenizer(digits_per_token=3)``) an order id is a few rare tokens, which such a model
copies as it copies any other token.

What :func:`pretrain_copying` grows reaches about as far back as its repeats (64 tokens), but a
tau agent copies from 300-700 tokens back: the order id it confirms was last written before a
400-token order record. :func:`stretch_copying` then trains on short spans copied from up to
900 tokens back, with the short repeats kept in every step so the near copies are not lost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CopyPretraining",
    "CopyStretch",
    "copy_accuracy",
    "copyable_token_ids",
    "far_spans",
    "pretrain_copying",
    "repeated_sequences",
    "span_copy_accuracy",
    "stretch_copying",
]

MIN_REPEAT = 8  # the shortest repeated part of a sequence
SPAN_LENGTHS = (2, 6)  # a far span: 2-6 tokens, like an id or a name in a tau conversation
MIN_DISTANCE = 8  # the nearest a far span's copy starts after its source


@dataclass(frozen=True)
class CopyPretraining:
    """What :func:`pretrain_copying` did: steps run and the copy accuracy they ended at."""

    steps: int
    copy_accuracy: float  # over the repeated tokens of the last ``check_every`` steps
    reached_target: bool


@dataclass(frozen=True)
class CopyStretch:
    """What :func:`stretch_copying` did: its steps, and the copy accuracy it left near (short
    repeats, as :func:`pretrain_copying` scores them) and far (spans ``far_distance`` back)."""

    steps: int
    near_accuracy: float
    far_accuracy: float
    far_distance: int


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
    for _ in range(batches):
        ids, mask = repeated_sequences(token_ids, batch_size, length, generator)
        right += int((_predicted(model, ids) == ids[:, 1:])[mask[:, 1:]].sum())
        counted += int(mask[:, 1:].sum())
    return right / counted


def _predicted(model: Any, ids: Any) -> Any:
    """``model``'s argmax prediction of each next token of ``ids``, in eval mode, no grad."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(input_ids=ids).logits[:, :-1].argmax(-1)
    finally:
        model.train(was_training)


def far_spans(
    token_ids: Sequence[int],
    batch_size: int,
    length: int,
    generator: Any,
    *,
    max_distance: int,
    spans: int = 8,
    distance: int | None = None,
) -> tuple[Any, Any]:
    """``(ids, mask)`` of shape ``(batch_size, length)``: random tokens in which up to ``spans``
    short spans (``SPAN_LENGTHS``) come again later, each copy ``distance`` tokens after its
    source, or a distance drawn per span (half uniform, half log-uniform in
    ``MIN_DISTANCE``-``max_distance``: far copies and near ones in every row). Spans never
    overlap; ``mask`` marks each copy's tokens after its first, the ones copying predicts."""
    import torch

    if len(token_ids) < 2:
        raise ValueError(f"token_ids needs at least 2 tokens to draw from, got {len(token_ids)}")
    longest = distance or max_distance
    if longest < MIN_DISTANCE or longest + SPAN_LENGTHS[1] >= length:
        raise ValueError(
            f"the copy distance must be in {MIN_DISTANCE}-{length - SPAN_LENGTHS[1] - 1} for "
            f"length {length}, got {longest}"
        )
    table = torch.as_tensor(list(token_ids), dtype=torch.long)
    ids = table[torch.randint(len(table), (batch_size, length), generator=generator)]
    mask = torch.zeros_like(ids, dtype=torch.bool)
    for row in range(batch_size):
        taken = torch.zeros(length, dtype=torch.bool)
        for _ in range(spans):
            size = int(
                torch.randint(SPAN_LENGTHS[0], SPAN_LENGTHS[1] + 1, (1,), generator=generator)
            )
            gap = distance or _draw_distance(max_distance, generator)
            start = int(torch.randint(gap, length - size + 1, (1,), generator=generator))
            source, copy = slice(start - gap, start - gap + size), slice(start, start + size)
            if taken[source].any() or taken[copy].any():
                continue  # an overlap would make some copied tokens unpredictable
            taken[source] = taken[copy] = True
            ids[row, copy] = ids[row, source]
            mask[row, start + 1 : start + size] = True
    return ids, mask


def _draw_distance(max_distance: int, generator: Any) -> int:
    import torch

    share, pick = torch.rand(2, generator=generator).tolist()
    if share < 0.5:
        return int(MIN_DISTANCE + pick * (max_distance - MIN_DISTANCE))
    return int(math.exp(math.log(MIN_DISTANCE) + pick * math.log(max_distance / MIN_DISTANCE)))


def stretch_copying(
    model: Any,
    token_ids: Sequence[int],
    *,
    steps: int,
    length: int = 1024,
    max_distance: int = 900,
    batch_size: int = 2,
    near_batch_size: int = 8,
    near_length: int = 64,
    learning_rate: float = 5e-4,
    seed: int = 0,
) -> CopyStretch:
    """Train a model that already copies (:func:`pretrain_copying`) in place to copy from up to
    ``max_distance`` tokens back: each step's loss is that of :func:`far_spans` rows plus that
    of short :func:`repeated_sequences`, which keeps the near copying it has.

    Measured on the tau-retail family's tiny model (hidden 128, 4 layers, one thread): 1,500
    steps (~15-20 minutes) take spans 600 tokens back from 0.00 to 0.70 while short repeats stay
    at ~0.92-0.95 (benchmarks/HISTORY.md, learning.py). Stretched on long repeats instead, the
    model lost much of the near copying a tau warm start needs first.
    """
    import torch

    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        far = far_spans(token_ids, batch_size, length, generator, max_distance=max_distance)
        near = repeated_sequences(token_ids, near_batch_size, near_length, generator)
        loss = sum(_copy_loss(model, ids, mask) for ids, mask in (far, near))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    far_distance = min(600, max_distance)
    return CopyStretch(
        steps=steps,
        near_accuracy=copy_accuracy(model, token_ids, length=near_length),
        far_accuracy=span_copy_accuracy(model, token_ids, distance=far_distance, length=length),
        far_distance=far_distance,
    )


def _copy_loss(model: Any, ids: Any, mask: Any) -> Any:
    import torch

    logits = model(input_ids=ids).logits[:, :-1][mask[:, 1:]]
    return torch.nn.functional.cross_entropy(logits, ids[:, 1:][mask[:, 1:]])


def span_copy_accuracy(
    model: Any,
    token_ids: Sequence[int],
    *,
    distance: int,
    length: int = 1024,
    rows: int = 8,
    seed: int = 5,
) -> float:
    """Share of the predictable tokens of :func:`far_spans` copied ``distance`` tokens back
    that ``model`` predicts (argmax), on fresh rows."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    ids, mask = far_spans(
        token_ids, rows, length, generator, max_distance=distance, spans=6, distance=distance
    )
    return float((_predicted(model, ids) == ids[:, 1:])[mask[:, 1:]].float().mean())


def copyable_token_ids(tokenizer: Any) -> list[int]:
    """The tokens to draw sequences from: the whole vocabulary but the special tokens."""
    special = set(tokenizer.all_special_ids)
    return [token_id for token_id in range(len(tokenizer)) if token_id not in special]

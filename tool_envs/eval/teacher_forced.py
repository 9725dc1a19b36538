"""How close a model is to the gold conversations, token by token, before greedy success moves.

A tiny model's greedy success on tau tasks stays at 0.00 for thousands of SFT steps: an episode
succeeds only when every one of its seven turns is right, and one wrong digit of an email fails
it. Comparing two warm starts by that number tells nothing until one of them gets there. Scoring
the gold conversations under teacher forcing (the gold history as context, the model's argmax at
each of the agent's tokens) moves smoothly instead, and says where the model is short:

- ``token_accuracy``: the agent's tokens predicted right;
- ``digit_accuracy``: the same for the agent's digit tokens. In the tau domains every digit the
  agent writes (an email's, a user id's, an order id's, an amount's) is copied from earlier in
  the conversation, so this is how well the model copies ids;
- ``turns_exact``: the agent's turns with every token right, the closest of the three to greedy
  success (a greedy episode succeeds when all of its turns are exact, as long as it stays on the
  gold's path).

One forward pass per conversation, no generation: on a GPU it costs little next to a greedy check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["GoldScores", "digit_token_ids", "gold_scores"]


@dataclass(frozen=True)
class GoldScores:
    """Teacher-forced scores of one model on gold SFT rows (see the module docstring)."""

    token_accuracy: float
    digit_accuracy: float | None  # None: the agent writes no digit in these conversations
    turns_exact: float
    tokens: int
    digits: int
    turns: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        digits = "-" if self.digit_accuracy is None else f"{self.digit_accuracy:.3f}"
        return (
            f"agent tokens {self.token_accuracy:.3f}, digits {digits}, "
            f"turns exact {self.turns_exact:.3f}"
        )


def digit_token_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokens that are digits only (byte-level BPE's leading-space mark aside)."""
    ids = set()
    for token, token_id in tokenizer.get_vocab().items():
        text = tokenizer.convert_tokens_to_string([token]).strip()
        if text and text.isascii() and text.isdigit():
            ids.add(token_id)
    return ids


def gold_scores(
    model: Any, rows: Sequence[Mapping[str, Sequence[int]]], digit_ids: set[int]
) -> GoldScores:
    """Score ``model`` on ``rows`` (``input_ids`` and ``assistant_masks``, as
    :func:`~tool_envs.rollout.sft.sft_rows` makes them), one row per forward pass."""
    import torch

    if not rows:
        raise ValueError("gold_scores needs at least one gold row")
    device = next(model.parameters()).device
    digit_table = torch.tensor(sorted(digit_ids), dtype=torch.long, device=device)
    right = tokens = digits_right = digits = turns = turns_right = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for row in rows:
                ids = torch.tensor([list(row["input_ids"])], device=device)
                targets = ids[0, 1:]
                scored = torch.tensor(list(row["assistant_masks"][1:]), device=device).bool()
                correct = model(input_ids=ids).logits[0, :-1].argmax(-1) == targets
                is_digit = torch.isin(targets, digit_table) & scored
                right += int(correct[scored].sum())
                tokens += int(scored.sum())
                digits_right += int(correct[is_digit].sum())
                digits += int(is_digit.sum())
                for start, end in _runs(scored.tolist()):
                    turns += 1
                    turns_right += bool(correct[start:end].all())
    finally:
        model.train(was_training)
    if not tokens:
        raise ValueError("the gold rows have no agent tokens (assistant_masks are all 0)")
    return GoldScores(
        token_accuracy=right / tokens,
        digit_accuracy=digits_right / digits if digits else None,
        turns_exact=turns_right / turns,
        tokens=tokens,
        digits=digits,
        turns=turns,
    )


def _runs(mask: Sequence[bool]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of True: one agent turn each."""
    runs, start = [], None
    for index, value in enumerate([*mask, False]):
        if value and start is None:
            start = index
        elif not value and start is not None:
            runs.append((start, index))
            start = None
    return runs

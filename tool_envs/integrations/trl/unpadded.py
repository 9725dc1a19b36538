"""Score a padded batch one sequence at a time, its padding cut off (for GRPO on a CPU).

TRL 1.16 pads a generation batch's sequences to one length (prompts on the left, completions on
the right) and scores them with that attention mask, micro-batch by micro-batch. On a CPU,
PyTorch's scaled-dot-product attention with a mask takes its general (math) kernel, which
builds the whole attention matrix; a lone sequence with no padding gets the fused causal
kernel. Over 16 tau-retail-sized sequences of the tiny model, one forward and backward pass
took 8.2 s padded and 3.7 s one by one (benchmarks/README.md, "tau_grpo_backends.py").

Cutting a row's left padding shifts its positions; rotary position embeddings, which the
models here use, depend only on the distance between tokens, so the scores agree up to float
rounding. On a GPU, padded batches are the fast way: this is opt-in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

# (input_ids, attention_mask, logits_to_keep) of one row -> (logps, entropies or None), each of
# shape (1, logits_to_keep).
RowScorer = Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, Any]]


# Keywords of TRL 1.16's ``_get_per_token_logps_and_entropies`` that the row-by-row path passes
# on; any other one set (images, an MoE aux loss) leaves the call to TRL.
ROW_KEYWORDS = ("batch_size", "compute_entropy")


def handles_unpadded(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether a TRL scoring call's extra arguments leave it to the row-by-row path: none given
    positionally, and every keyword outside :data:`ROW_KEYWORDS` unset (None or False; a tensor
    such as ``pixel_values`` counts as set, and is never compared by value)."""
    extra = (value for key, value in kwargs.items() if key not in ROW_KEYWORDS)
    return not args and all(value is None or value is False for value in extra)


def score_rows_unpadded(
    score_row: RowScorer,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropies, if ``score_row`` gives them) of the last
    ``logits_to_keep`` positions of every row, each row scored alone without its padding.

    Positions that were padding come back as 0, as masked positions do elsewhere: the loss
    multiplies them by the completion mask. A row whose mask has a gap inside (not padding)
    keeps its mask.
    """
    if input_ids.shape != attention_mask.shape or input_ids.dim() != 2:
        raise ValueError(
            f"input_ids {tuple(input_ids.shape)} and attention_mask "
            f"{tuple(attention_mask.shape)} must be the same (batch, length) shape"
        )
    length = input_ids.size(1)
    logps_rows: list[torch.Tensor | None] = []
    entropy_rows: list[torch.Tensor | None] = []
    for ids, mask in zip(input_ids, attention_mask, strict=True):
        kept = mask.nonzero().flatten()
        if len(kept) == 0 or int(kept[-1]) < length - logits_to_keep:  # no completion token
            logps_rows.append(None)
            entropy_rows.append(None)
            continue
        start = min(int(kept[0]), length - logits_to_keep - 1)  # keep a token before the completion
        end = int(kept[-1]) + 1
        cut = length - end  # right padding: the completion's last positions
        row_logps, row_entropies = score_row(
            ids[None, start:end], mask[None, start:end], logits_to_keep - cut
        )
        logps_rows.append(F.pad(row_logps[0], (0, cut)))
        entropy_rows.append(None if row_entropies is None else F.pad(row_entropies[0], (0, cut)))
    scored = next((row for row in logps_rows if row is not None), None)
    zeros = torch.zeros(logits_to_keep) if scored is None else scored.new_zeros(logits_to_keep)
    logps = torch.stack([zeros if row is None else row for row in logps_rows])
    if all(row is None for row in entropy_rows):
        return logps, None
    return logps, torch.stack([zeros if row is None else row for row in entropy_rows])

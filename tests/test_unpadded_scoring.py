"""Scoring a padded GRPO batch row by row with its padding cut off gives the padded scores."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from tool_envs.integrations.trl.unpadded import handles_unpadded, score_rows_unpadded

PAD = 0


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        pad_token_id=PAD, attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaForCausalLM(config).eval()


def scorer(model, calls=None):
    """Log-probs of each row's last ``to_keep`` tokens, as TRL's scorer computes them."""

    def score(ids, mask, to_keep):
        if calls is not None:
            calls.append((ids.clone(), mask.clone()))
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -to_keep - 1 : -1]
        logps = logits.log_softmax(-1).gather(-1, ids[:, -to_keep:, None])[..., 0]
        return logps, -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)

    return score


def padded_batch():
    """Left-padded prompts (6 positions) and right-padded completions (5 positions)."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 64, (3, 11), generator=g)
    mask = torch.ones(3, 11, dtype=torch.long)
    mask[0, :2] = 0  # a shorter prompt
    mask[0, 8:] = 0  # a 2-token completion
    mask[2, 6:] = 0  # no completion at all (an empty reply)
    return ids.masked_fill(mask == 0, PAD), mask


def test_rows_scored_alone_match_the_padded_batch(model):
    ids, mask = padded_batch()
    calls = []
    with torch.no_grad():
        expected, expected_entropy = scorer(model)(ids, mask, 5)
        got, entropy = score_rows_unpadded(scorer(model, calls), ids, mask, 5)
    completion = mask[:, -5:].bool()
    # Rotary positions: cutting the left padding shifts a row, and only distances count.
    assert torch.allclose(got[completion], expected[completion], atol=1e-5)
    assert torch.allclose(entropy[completion], expected_entropy[completion], atol=1e-5)
    assert (got[~completion] == 0).all() and (entropy[~completion] == 0).all()
    # Each scored row went in alone, without padding; the empty completion was not scored.
    assert [tuple(c[0].shape) for c in calls] == [(1, 6), (1, 11)]
    assert all(bool(c[1].all()) for c in calls)


def test_gradients_flow_through_the_cut_rows(model):
    ids, mask = padded_batch()
    got, _ = score_rows_unpadded(scorer(model), ids, mask, 5)
    got.sum().backward()
    grad = model.model.embed_tokens.weight.grad
    assert grad is not None and grad.abs().sum() > 0
    model.zero_grad()


def test_a_row_keeps_one_token_before_its_completion(model):
    ids, mask = padded_batch()
    mask[1, :6] = 0  # a prompt that is all padding: its last position still comes along
    calls = []
    with torch.no_grad():
        score_rows_unpadded(scorer(model, calls), ids, mask, 5)
    assert tuple(calls[1][0].shape) == (1, 6) and calls[1][1][0].tolist() == [0, 1, 1, 1, 1, 1]


def test_mismatched_shapes_are_refused(model):
    ids, mask = padded_batch()
    with pytest.raises(ValueError, match=r"input_ids \(3, 11\) and attention_mask \(3, 10\)"):
        score_rows_unpadded(scorer(model), ids, mask[:, 1:], 5)


def test_only_text_calls_take_the_row_by_row_path():
    """Images or an MoE aux loss stay TRL's; a pixel tensor is seen as set, not compared (that
    comparison raised for a tensor of more than one value)."""
    text = {"batch_size": 4, "compute_entropy": True, "pixel_values": None, "num_images": None}
    assert handles_unpadded((), text)
    assert handles_unpadded((), {**text, "compute_aux_loss": False})
    assert not handles_unpadded((), {**text, "pixel_values": torch.ones(2, 3)})
    assert not handles_unpadded((), {**text, "compute_aux_loss": True})
    assert not handles_unpadded((4,), {})

"""Copy pretraining gives a random tiny model the copying a tau warm start needs.

A model built from random weights predicts a repeated token at chance; after pretraining on
repeated random sequences it predicts most of them on sequences it never saw, at offsets that
differ from row to row (so a fixed-distance shortcut would not score).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

import torch

from tool_envs.cli import main as cli
from tool_envs.copy_pretraining import (
    MIN_REPEAT,
    copy_accuracy,
    copyable_token_ids,
    pretrain_copying,
    repeated_sequences,
)
from tool_envs.tiny_models import COPY_REPORT, build_model, build_tiny_model, build_tokenizer

TEXTS = [f"word{i} alpha{i % 37} beta{i % 91} gamma {i * 7919 % 1000}" for i in range(400)]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(TEXTS, vocab_size=512)


def test_the_first_part_of_each_row_repeats_and_only_its_predictable_tokens_are_marked():
    generator = torch.Generator().manual_seed(0)
    tokens = list(range(100, 300))
    ids, mask = repeated_sequences(tokens, batch_size=32, length=20, generator=generator)
    assert ids.shape == mask.shape == (32, 40)
    assert set(ids.flatten().tolist()) <= set(tokens)
    repeats = set()
    for row, marked in zip(ids.tolist(), mask.tolist(), strict=True):
        repeat = marked.index(True) - 1  # the repeat's first token is not predictable
        assert MIN_REPEAT <= repeat <= 20
        assert row[repeat : 2 * repeat] == row[:repeat]
        assert marked == [repeat < i < 2 * repeat for i in range(40)]
        repeats.add(repeat)
    assert len(repeats) > 5  # offsets differ between rows


def test_pretraining_teaches_a_random_model_to_copy_sequences_it_never_saw(tokenizer):
    torch.manual_seed(0)
    model = build_model(tokenizer, hidden_size=64, num_layers=2, intermediate_size=128)
    tokens = copyable_token_ids(tokenizer)
    assert not set(tokens) & set(tokenizer.all_special_ids)
    before = copy_accuracy(model, tokens, length=32)
    report = pretrain_copying(model, tokens, max_steps=1500, length=32, target=0.9, seed=0)
    after = copy_accuracy(model, tokens, length=32, seed=123)  # fresh sequences
    assert before < 0.05, before
    assert report.reached_target and report.steps < 1500, report
    assert after > 0.8, after


def test_a_pretraining_that_misses_its_target_says_so(tokenizer):
    model = build_model(tokenizer, hidden_size=16, num_layers=1)
    report = pretrain_copying(model, copyable_token_ids(tokenizer), max_steps=3, length=8)
    assert report.steps == 3 and not report.reached_target
    assert 0 <= report.copy_accuracy < 0.9


def test_bad_settings_are_refused_naming_the_setting(tokenizer, tmp_path, capsys):
    model = build_model(tokenizer, hidden_size=16, num_layers=1)
    tokens = copyable_token_ids(tokenizer)
    generator = torch.Generator()
    with pytest.raises(ValueError, match="length must be at least 8, got 4"):
        repeated_sequences(tokens, 2, 4, generator)
    with pytest.raises(ValueError, match="token_ids needs at least 2 tokens"):
        repeated_sequences([5], 2, 8, generator)
    with pytest.raises(ValueError, match="max_steps must be at least 1, got 0"):
        pretrain_copying(model, tokens, max_steps=0)
    with pytest.raises(ValueError, match=r"target must be in \(0, 1\], got 1.5"):
        pretrain_copying(model, tokens, max_steps=1, target=1.5)
    with pytest.raises(ValueError, match="copy_steps must be 0 \\(none\\) or more, got -1"):
        build_tiny_model(tmp_path / "m", TEXTS, copy_steps=-1)
    with pytest.raises(SystemExit) as exit_info:
        cli(["tiny-model", "--out", str(tmp_path / "cli"), "--copy-steps", "-5"])
    assert exit_info.value.code == 2
    assert "--copy-steps must be 0 (none) or more, got -5" in capsys.readouterr().err
    assert not (tmp_path / "m").exists() and not (tmp_path / "cli").exists()


def test_the_saved_folder_says_what_copy_pretraining_reached(tmp_path):
    folder = build_tiny_model(
        tmp_path / "m", TEXTS, copy_steps=4, hidden_size=16, num_layers=1, num_heads=2
    )
    report = json.loads((folder / COPY_REPORT).read_text())
    assert report["steps"] == 4 and report["reached_target"] is False
    plain = build_tiny_model(tmp_path / "plain", TEXTS, hidden_size=16, num_layers=1)
    assert not (plain / COPY_REPORT).exists()

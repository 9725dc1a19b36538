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
    MIN_DISTANCE,
    MIN_REPEAT,
    SPAN_LENGTHS,
    copy_accuracy,
    copyable_token_ids,
    far_spans,
    pretrain_copying,
    repeated_sequences,
    span_copy_accuracy,
    stretch_copying,
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


def _copies(row: list[int], marked: list[bool]) -> list[tuple[int, int]]:
    """(start, distance back to its source) of each marked copy in a row of unique tokens."""
    found = []
    for i in range(1, len(row)):
        if marked[i] and not marked[i - 1]:
            start = i - 1  # the copy's first token is not marked
            found.append((start, start - row.index(row[start])))
    return found


def test_far_spans_copy_short_spans_from_near_and_far_and_mark_what_copying_predicts():
    generator = torch.Generator().manual_seed(0)
    tokens = list(range(1_000_000))  # so random tokens do not repeat by chance
    ids, mask = far_spans(tokens, 64, 1024, generator, max_distance=900, spans=4)
    assert ids.shape == mask.shape == (64, 1024)
    distances = []
    for row, marked in zip(ids.tolist(), mask.tolist(), strict=True):
        copies = _copies(row, marked)
        assert 1 <= len(copies) <= 4
        for start, distance in copies:
            size = next(i for i in range(start + 1, 1025) if i == 1024 or not marked[i]) - start
            assert SPAN_LENGTHS[0] <= size <= SPAN_LENGTHS[1]
            assert row[start : start + size] == row[start - distance : start - distance + size]
            distances.append(distance)
    assert min(distances) >= MIN_DISTANCE and max(distances) <= 900
    # near copies and far ones alike
    assert sum(d < 64 for d in distances) > len(distances) / 5
    assert sum(d > 400 for d in distances) > len(distances) / 5
    fixed, fixed_mask = far_spans(tokens, 8, 512, generator, max_distance=300, distance=300)
    assert {
        d
        for row, m in zip(fixed.tolist(), fixed_mask.tolist(), strict=True)
        for _, d in _copies(row, m)
    } == {300}


def test_stretching_copies_from_far_back_and_keeps_the_near_copies(tokenizer):
    torch.manual_seed(0)
    model = build_model(tokenizer, hidden_size=64, num_layers=2, intermediate_size=128)
    tokens = copyable_token_ids(tokenizer)
    near = pretrain_copying(model, tokens, max_steps=1500, length=32, target=0.9, seed=0)
    assert near.reached_target, near
    before = span_copy_accuracy(model, tokens, distance=200, length=256)
    stretch = stretch_copying(
        model, tokens, steps=300, length=256, max_distance=220, near_length=32, seed=1
    )
    after = span_copy_accuracy(model, tokens, distance=200, length=256, seed=9)
    assert before < 0.3, before
    assert after > before + 0.3, (before, after)
    assert stretch.near_accuracy > 0.8, stretch
    assert stretch.far_distance == 220 and stretch.steps == 300


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
    with pytest.raises(ValueError, match="the copy distance must be in 8-1017 for length 1024"):
        far_spans(tokens, 2, 1024, generator, max_distance=1020)
    with pytest.raises(ValueError, match="the copy distance must be in 8-57 for length 64, got 4"):
        far_spans(tokens, 2, 64, generator, max_distance=50, distance=4)
    with pytest.raises(ValueError, match="steps must be at least 1, got 0"):
        stretch_copying(model, tokens, steps=0)
    with pytest.raises(ValueError, match="copy_steps must be 0 \\(none\\) or more, got -1"):
        build_tiny_model(tmp_path / "m", TEXTS, copy_steps=-1)
    with pytest.raises(ValueError, match="copy_reach_steps must be 0 \\(none\\) or more, got -2"):
        build_tiny_model(tmp_path / "m", TEXTS, copy_steps=1, copy_reach_steps=-2)
    with pytest.raises(ValueError, match="copy_reach_steps needs copy_steps"):
        build_tiny_model(tmp_path / "m", TEXTS, copy_reach_steps=10)
    with pytest.raises(SystemExit) as exit_info:
        cli(["tiny-model", "--out", str(tmp_path / "cli"), "--copy-steps", "-5"])
    assert exit_info.value.code == 2
    assert "--copy-steps must be 0 (none) or more, got -5" in capsys.readouterr().err
    for flags, error in (
        (["--copy-reach-steps", "5"], "--copy-reach-steps needs --copy-steps"),
        (["--copy-steps", "5", "--copy-reach-steps", "-1"], "got -1"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            cli(["tiny-model", "--out", str(tmp_path / "cli"), *flags])
        assert exit_info.value.code == 2
        assert error in capsys.readouterr().err
    assert not (tmp_path / "m").exists() and not (tmp_path / "cli").exists()


def test_the_saved_folder_says_what_copy_pretraining_reached(tmp_path):
    folder = build_tiny_model(
        tmp_path / "m", TEXTS, copy_steps=4, hidden_size=16, num_layers=1, num_heads=2
    )
    report = json.loads((folder / COPY_REPORT).read_text())
    assert report["steps"] == 4 and report["reached_target"] is False
    assert "reach" not in report
    stretched = build_tiny_model(
        tmp_path / "far",
        TEXTS,
        copy_steps=2,
        copy_reach_steps=3,
        hidden_size=16,
        num_layers=1,
        num_heads=2,
    )
    reach = json.loads((stretched / COPY_REPORT).read_text())["reach"]
    assert reach["steps"] == 3 and reach["far_distance"] == 600
    assert 0 <= reach["near_accuracy"] <= 1 and 0 <= reach["far_accuracy"] <= 1
    plain = build_tiny_model(tmp_path / "plain", TEXTS, hidden_size=16, num_layers=1)
    assert not (plain / COPY_REPORT).exists()

"""Which tokens SFT on gold trains on (``loss_on``), read from the labels TRL's SFTTrainer builds.

The recipe's rows carry ``assistant_masks``; TRL turns them into labels (-100 off the mask). A
policy warm start trains on the agent's turns only; ``transcript`` trains on every token.
"""

from __future__ import annotations

import pytest
from rollout_helpers import tau_gold_rows

pytest.importorskip("trl", reason="SFT needs the 'train' extra (trl)")

from tool_envs.rollout.sft import with_loss_on
from tool_envs.tiny_models import build_model


@pytest.fixture(scope="module")
def gold_rows():
    tokenizer, _, rows = tau_gold_rows(2)
    return tokenizer, rows


def trained_labels(tokenizer, rows, tmp_path) -> list[list[int]]:
    import datasets
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", max_length=None)
    args.assistant_only_loss = False  # as the recipe: the masks are in the rows
    trainer = SFTTrainer(
        model=build_model(tokenizer),
        processing_class=tokenizer,
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
    )
    return list(trainer.train_dataset["labels"])


@pytest.mark.parametrize("loss_on", ["policy", "transcript"])
def test_the_loss_covers_the_agents_turns_or_the_whole_transcript(gold_rows, loss_on, tmp_path):
    tokenizer, rows = gold_rows
    labels = trained_labels(tokenizer, with_loss_on(rows, loss_on), tmp_path)
    for row, row_labels in zip(rows, labels, strict=True):
        trained = [label for label in row_labels if label != -100]
        policy = [t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if m]
        if loss_on == "policy":
            assert trained == policy
            assert 0 < len(trained) < len(row["input_ids"]) / 4  # the env's lines dominate
        else:
            assert trained == row["input_ids"]
            text = tokenizer.decode(trained)
            assert "<tool_response>" in text  # tool results
            replies = text.count("<|im_start|>user\n") - text.count("user\n<tool_response>")
            assert replies >= 2  # the user's replies, not the opening only


def test_an_unknown_loss_on_is_refused_by_name(gold_rows):
    _, rows = gold_rows
    with pytest.raises(ValueError, match="loss_on must be one of policy, transcript, got 'all'"):
        with_loss_on(rows, "all")

"""The tiny models' tokenizer gives the same ids in memory as its saved folder does once loaded.

transformers 5 loads a ``qwen2`` folder's tokenizer as ``Qwen2Tokenizer``, which applies its own
normaliser and pre-tokenizer; a tokenizer built with other ones split some texts differently in
memory than everywhere the folder is loaded (SFT, GRPO, vLLM): 42 of 402 tau texts did.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from transformers import AutoTokenizer

from tool_envs.tiny_models import (
    COMPACT_CHAT_TEMPLATE,
    build_model,
    build_tokenizer,
    env_texts,
)

# Texts where pre-tokenizers disagree: contractions in capitals, runs of spaces before a word,
# line breaks after punctuation, digits inside words, non-NFC accents.
TRICKY = [
    "I'LL check. It'S fine, DON'T worry.",
    "a   b\n\n  c\r\n d",
    "order #W1234567 costs $54.04; zip 19122!\n",
    "Caf\u0065\u0301 and caf\u00e9",
    'end.)\n\nNext:   {"name": "x"}',
]


def test_the_built_tokenizer_splits_like_the_loaded_folder(tmp_path):
    texts = env_texts("tool_envs/TauRetail-v0", limit=10)
    built = build_tokenizer(texts, vocab_size=512, chat_template=COMPACT_CHAT_TEMPLATE)
    build_model(built, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1).save_pretrained(
        tmp_path
    )
    built.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)

    messages = [
        {"role": "system", "content": texts[0]},
        {"role": "user", "content": TRICKY[0]},
        {"role": "assistant", "content": TRICKY[2]},
    ]
    rendered = built.apply_chat_template(messages, tokenize=False)
    assert rendered == loaded.apply_chat_template(messages, tokenize=False)
    for text in [*texts[:200], *TRICKY, rendered]:
        assert built(text)["input_ids"] == loaded(text)["input_ids"], text[:80]

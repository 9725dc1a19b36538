"""The tiny models' tokenizer gives the same ids in memory as its saved folder does once loaded.

transformers 5 loads a ``qwen2`` folder's tokenizer as ``Qwen2Tokenizer``, which applies its own
normaliser and pre-tokenizer; a tokenizer built with other ones split some texts differently in
memory than everywhere the folder is loaded (SFT, GRPO, vLLM): 42 of 402 tau texts did.
A tokenizer that groups digits (``digits_per_token=3``) is saved in a ``llama`` folder, which
loads ``tokenizer.json`` as written; a ``qwen2`` one would load back one digit per token.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from transformers import AutoTokenizer

from tool_envs.cli import main as cli
from tool_envs.tiny_models import (
    COMPACT_CHAT_TEMPLATE,
    build_model,
    build_tiny_model,
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


def save_tiny(folder, texts, architecture="qwen2", digits_per_token=1, bare_words=False):
    built = build_tokenizer(
        texts,
        vocab_size=512,
        chat_template=COMPACT_CHAT_TEMPLATE,
        digits_per_token=digits_per_token,
        bare_words=bare_words,
    )
    model = build_model(
        built, architecture=architecture, hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1
    )
    model.save_pretrained(folder)
    built.save_pretrained(folder)
    return built


@pytest.mark.parametrize(
    ("architecture", "digits", "bare_words"),
    [("qwen2", 1, False), ("llama", 3, False), ("llama", 1, True)],
)
def test_the_built_tokenizer_splits_like_the_loaded_folder(
    tmp_path, architecture, digits, bare_words
):
    texts = env_texts("tool_envs/TauRetail-v0", limit=10)
    built = save_tiny(tmp_path, texts, architecture, digits, bare_words)
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
    # The loaded pre-tokenizer cuts a 7-digit order id into groups of `digits` (BPE then merges
    # a group into one token where the vocabulary has room).
    pieces = [p for p, _ in loaded.backend_tokenizer.pre_tokenizer.pre_tokenize_str("#W1234567")]
    numbers = [p for p in pieces if p.isdigit()]
    assert "".join(numbers) == "1234567" and max(map(len, numbers)) == digits, pieces
    assert loaded.decode(loaded(TRICKY[2])["input_ids"]) == TRICKY[2]


def test_grouped_digits_in_a_qwen2_folder_are_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="digits_per_token=3 needs architecture='llama'"):
        build_tiny_model(tmp_path / "m", ["a 123"], digits_per_token=3)
    with pytest.raises(ValueError, match="architecture must be one of"):
        build_model(build_tokenizer(["a 1"]), architecture="gpt2")
    with pytest.raises(SystemExit) as exit_info:
        cli(["tiny-model", "--out", str(tmp_path / "cli"), "--digits-per-token", "3"])
    assert exit_info.value.code == 2
    assert "--digits-per-token 3 needs --arch llama" in capsys.readouterr().err
    with pytest.raises(ValueError, match="bare_words needs architecture='llama'"):
        build_tiny_model(tmp_path / "m", ["a 123"], bare_words=True)
    with pytest.raises(SystemExit) as exit_info:
        cli(["tiny-model", "--out", str(tmp_path / "cli"), "--bare-words"])
    assert exit_info.value.code == 2
    assert "--bare-words needs --arch llama" in capsys.readouterr().err
    assert not (tmp_path / "m").exists() and not (tmp_path / "cli").exists()


@pytest.mark.parametrize("bare_words", [False, True])
def test_bare_words_make_a_name_one_token_wherever_it_is_written(tmp_path, bare_words):
    texts = env_texts("tool_envs/TauRetail-v0", limit=10)
    names = ["My email is keiko.mbeki@example.com.", '{"email": "keiko.mbeki@example.com"}']
    save_tiny(tmp_path, [*texts, *names * 50], "llama", 3, bare_words=bare_words)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    said = loaded.tokenize("My email is keiko.mbeki5288@example.com.")
    written = loaded.tokenize('{"email": "keiko.mbeki5288@example.com"}')
    name_said = next(token for token in said if "keiko" in token)
    name_written = next(token for token in written if "keiko" in token)
    # Byte-level BPE marks a leading space as "Ġ": attached, the two are different tokens.
    assert (name_said == name_written == "keiko") is bare_words, (said, written)
    assert loaded.decode(loaded(texts[0])["input_ids"]) == texts[0]

"""Tiny, locally built language models for tests, the CPU demo and the learning benchmark.

No weights are downloaded: a byte-level BPE tokenizer is trained on the given texts and a small
Qwen2 config is initialised at random. The result is saved in the same folder format as a Hub
model, so the code that loads real models (``from_pretrained(path)``) is the code exercised.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tool_envs.errors import MissingDependencyError

COPY_REPORT = "copy_pretraining.json"  # what build_tiny_model(copy_steps=...) reached

# Tokens a ChatML / Qwen2.5-style template uses. `<tool_call>` and friends are ordinary added
# tokens (not "special"), as in Qwen's tokenizers, so decoding keeps them.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
ADDED_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)


# A compact ChatML template for tiny models: tools are listed as one line of signatures instead
# of full JSON schemas (a ~100-token prompt instead of ~1,100 makes CPU training ~10x cheaper);
# calls use the Hermes <tool_call> format, tool results come back as <tool_response> user turns.
# Built by concatenation with no whitespace between tags; a newline right after a block tag is
# written as {{ '\\n' }} because chat templates run with trim_blocks, which would drop it.
COMPACT_CHAT_TEMPLATE = (
    "{% set has_system = messages and messages[0].role == 'system' %}"
    "{% if has_system or tools %}<|im_start|>system\n"
    "{% if has_system %}{{ messages[0].content }}{% endif %}"
    "{% if tools %}{% if has_system %}{{ '\\n' }}{% endif %}Tools: "
    "{% for t in tools %}{{ t.function.name }}"
    "({{ (t.function.parameters.properties or {}) | list | join(', ') }})"
    "{% if not loop.last %}, {% endif %}{% endfor %}. "
    'Call a tool as <tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
    "{% endif %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'system' %}"
    "{% elif m.role == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{% elif m.role == 'assistant' %}"
    "<|im_start|>assistant\n{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}"
    "{% if not loop.first or m.content %}{{ '\\n' }}{% endif %}"
    '<tool_call>\n{"name": "{{ c.function.name }}", "arguments": '
    "{% if c.function.arguments is string %}{{ c.function.arguments }}"
    "{% else %}{{ c.function.arguments | tojson }}{% endif %}"
    "}\n</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def trl_chat_template(name: str = "qwen2_5") -> str:
    """A chat template that TRL ships (``trl/chat_templates/<name>.jinja``)."""
    try:
        import trl
    except ImportError as exc:
        raise MissingDependencyError("trl", "train", "Loading TRL's chat templates") from exc
    path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
    if not path.exists():
        available = sorted(p.stem for p in path.parent.glob("*.jinja"))
        raise ValueError(f"TRL ships no chat template {name!r}; available: {', '.join(available)}")
    return path.read_text(encoding="utf-8")


def build_tokenizer(
    texts: Iterable[str],
    *,
    vocab_size: int = 512,
    chat_template: str | None = None,
    digits_per_token: int = 1,
    bare_words: bool = False,
) -> Any:
    """Train a byte-level BPE tokenizer on ``texts`` (digits split one per token by default).

    With ``digits_per_token=1`` it is built for the Qwen2 models of :func:`build_model`, and it
    tokenizes as the saved folder loads: transformers 5 loads a ``qwen2`` folder's tokenizer as
    ``Qwen2Tokenizer``, which keeps the vocabulary and merges but applies its own normaliser and
    pre-tokenizer, not the ones in ``tokenizer.json``. Training keeps its own pre-tokenizer (the
    merges every tiny model has had); the returned tokenizer then uses Qwen2's, so the one in
    memory, the folder loaded by ``AutoTokenizer`` and vLLM give the same ids for the same text.

    ``digits_per_token=3`` splits numbers into groups of up to three digits, as Llama 3's
    tokenizer does, so a 7-digit order id is 3 tokens to copy instead of 7. Each group is one
    token once the vocabulary has room for all 1,110 of them beside the text's own merges (a
    ``vocab_size`` of 4096 held all 1,000 three-digit groups for TauRetail, 2048 only 311; the
    rest stay in pieces, split the same way wherever they occur). A ``qwen2`` folder would load
    it back one digit per token, so such a tokenizer goes with ``architecture="llama"`` (see
    :func:`build_model`), whose folders load ``tokenizer.json`` as written.

    ``bare_words`` keeps the space or punctuation mark before a word out of the word's token
    (``" keiko"`` is ``" "`` and ``"keiko"``), so a name is the same token in ``my email is
    keiko...`` as in ``{"email": "keiko...``, and a model that copies tokens can copy it; a
    ``llama`` folder too.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    if digits_per_token < 1:
        raise ValueError(f"digits_per_token must be at least 1, got {digits_per_token}")
    backend = Tokenizer(models.BPE())
    if digits_per_token == 1 and not bare_words:
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False),
            ]
        )
        final_regex = PRETOKENIZE_REGEX
    else:
        final_regex = pretokenize_regex(digits_per_token, bare_words=bare_words)
        backend.pre_tokenizer = _split_then_bytes(final_regex)
        # Every group once, so that BPE has the merges for groups the texts happen to lack
        # (a held-out order id's); they are learnt once the text's own merges run out.
        texts = [*texts, *_digit_groups(digits_per_token)]
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = _split_then_bytes(final_regex)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.add_tokens(list(ADDED_TOKENS))
    tokenizer.chat_template = chat_template if chat_template is not None else trl_chat_template()
    return tokenizer


def pretokenize_regex(digits_per_token: int, *, bare_words: bool = False) -> str:
    """Qwen2's pre-tokenizer pattern, numbers split into groups of ``digits_per_token``; with
    ``bare_words`` a word does not take the space or punctuation mark before it."""
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    pattern = _replaced(PRETOKENIZE_REGEX, r"|\p{N}|", rf"|\p{{N}}{{1,{digits_per_token}}}|")
    if bare_words:
        pattern = _replaced(pattern, r"[^\r\n\p{L}\p{N}]?\p{L}+", r"\p{L}+")
    return pattern


def _replaced(pattern: str, old: str, new: str) -> str:
    if old not in pattern:  # a transformers release with another pattern
        raise ValueError(f"Qwen2's pre-tokenizer pattern has no {old!r}: {pattern}")
    return pattern.replace(old, new)


def _digit_groups(digits_per_token: int) -> list[str]:
    """Every number of 1 to ``digits_per_token`` digits, leading zeros included (1,110 for 3)."""
    return [f"{n:0{width}d}" for width in range(1, digits_per_token + 1) for n in range(10**width)]


def _split_then_bytes(pattern: str) -> Any:
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


ARCHITECTURES = ("qwen2", "llama")


def build_model(
    tokenizer: Any,
    *,
    architecture: str = "qwen2",
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 256,
    tie_word_embeddings: bool = True,
    seed: int = 0,
) -> Any:
    """A randomly initialised Qwen2 (or Llama) causal LM sized for ``tokenizer``.

    ``tie_word_embeddings`` shares the input embedding with the output head, as Qwen2.5-1.5B and
    Qwen3-4B do; weight syncs must handle both layouts, so tests build both. ``"llama"`` is for
    tokenizers a ``qwen2`` folder cannot keep (grouped digits, :func:`build_tokenizer`).
    """
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig, Qwen2Config

    configs = {"qwen2": Qwen2Config, "llama": LlamaConfig}
    if architecture not in configs:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
    config = configs[architecture](
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=4096,
        tie_word_embeddings=tie_word_embeddings,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    return model


def env_texts(env_id: str, limit: int = 1000) -> list[str]:
    """Prompts, tool names and gold turns of an env's tasks: what its tokenizer must know."""
    import gymnasium as gym

    import tool_envs

    gym.register_envs(tool_envs)
    env = gym.make(env_id)
    try:
        texts = []
        for task in env.unwrapped.tasks[:limit]:
            texts.extend(message["content"] for message in task["prompt"])
            texts.extend(env.unwrapped.gold_turns(task) or [])
        env.reset(seed=0)
        texts.extend(tool["function"]["name"] for tool in env.unwrapped.tools)
    finally:
        env.close()
    return texts


def build_tiny_model_for_env(
    env_id: str,
    folder: str | Path,
    *,
    template: str = "compact",
    vocab_size: int = 512,
    digits_per_token: int = 1,
    bare_words: bool = False,
    copy_steps: int = 0,
    copy_reach_steps: int = 0,
    **model_kwargs: Any,
) -> Path:
    """A tiny model whose tokenizer is trained on ``env_id``'s texts, saved to ``folder``.

    ``env_id`` may be Gymnasium's ``module:namespace/Name-vN`` (the module is imported first).
    A larger ``vocab_size`` shortens long prompts (a tau policy) at the cost of a larger
    embedding and output layer; ``digits_per_token`` > 1 (with ``architecture="llama"``)
    shortens the numbers in them (:func:`build_tokenizer`). ``copy_steps`` > 0 teaches the
    model to copy first (:mod:`tool_envs.copy_pretraining`), which a tau warm start needs;
    ``copy_reach_steps`` > 0 then stretches that copying to 900 tokens back.
    """
    from tool_envs.registration import resolve_env_id

    _check_tokenizer_fits(digits_per_token, bare_words, model_kwargs.get("architecture", "qwen2"))
    resolve_env_id(env_id)  # an unknown id is named with the closest ones
    chat_template = COMPACT_CHAT_TEMPLATE if template == "compact" else trl_chat_template(template)
    texts = env_texts(env_id)
    # Rendered conversations teach the tokenizer the template's own text (tool lists, markup).
    draft = build_tokenizer(
        texts,
        vocab_size=vocab_size,
        chat_template=chat_template,
        digits_per_token=digits_per_token,
        bare_words=bare_words,
    )
    texts += _rendered_examples(env_id, draft, count=50)
    return build_tiny_model(
        folder,
        texts,
        chat_template=chat_template,
        vocab_size=vocab_size,
        digits_per_token=digits_per_token,
        bare_words=bare_words,
        copy_steps=copy_steps,
        copy_reach_steps=copy_reach_steps,
        **model_kwargs,
    )


def _check_tokenizer_fits(digits_per_token: int, bare_words: bool, architecture: str) -> None:
    if bare_words and architecture == "qwen2":
        raise ValueError(
            "bare_words needs architecture='llama': transformers loads a qwen2 folder's "
            "tokenizer as Qwen2Tokenizer, which attaches the space before a word to it"
        )
    if digits_per_token > 1 and architecture == "qwen2":
        raise ValueError(
            f"digits_per_token={digits_per_token} needs architecture='llama': transformers loads "
            "a qwen2 folder's tokenizer as Qwen2Tokenizer, which splits digits one per token"
        )


def _rendered_examples(env_id: str, tokenizer: Any, count: int) -> list[str]:
    import gymnasium as gym

    env = gym.make(env_id)
    try:
        rendered = []
        for task in env.unwrapped.tasks[:count]:
            env.reset(options={"task": task})
            rendered.append(
                tokenizer.apply_chat_template(
                    env.unwrapped.messages, tools=env.unwrapped.tools, tokenize=False
                )
            )
    finally:
        env.close()
    return rendered


def build_tiny_model(
    folder: str | Path,
    texts: Iterable[str],
    *,
    chat_template: str | None = None,
    vocab_size: int = 512,
    digits_per_token: int = 1,
    bare_words: bool = False,
    copy_steps: int = 0,
    copy_reach_steps: int = 0,
    **model_kwargs: Any,
) -> Path:
    """Build tokenizer + model from ``texts`` and save both to ``folder``; return the folder.

    ``copy_steps`` > 0: at most that many steps of :func:`~tool_envs.copy_pretraining.
    pretrain_copying` before saving, then ``copy_reach_steps`` of :func:`~tool_envs.
    copy_pretraining.stretch_copying`; what they reached is saved as ``COPY_REPORT`` beside
    the weights.
    """
    _check_tokenizer_fits(digits_per_token, bare_words, model_kwargs.get("architecture", "qwen2"))
    for name, value in (("copy_steps", copy_steps), ("copy_reach_steps", copy_reach_steps)):
        if value < 0:
            raise ValueError(f"{name} must be 0 (none) or more, got {value}")
    if copy_reach_steps and not copy_steps:
        raise ValueError(
            "copy_reach_steps needs copy_steps: stretching starts from a model that copies "
            "(from random weights far spans alone do not get going)"
        )
    folder = Path(folder)
    tokenizer = build_tokenizer(
        texts,
        vocab_size=vocab_size,
        chat_template=chat_template,
        digits_per_token=digits_per_token,
        bare_words=bare_words,
    )
    model = build_model(tokenizer, **model_kwargs)
    report: dict[str, Any] | None = None
    if copy_steps:
        from tool_envs.copy_pretraining import (
            copyable_token_ids,
            pretrain_copying,
            stretch_copying,
        )

        seed = model_kwargs.get("seed", 0)
        tokens = copyable_token_ids(tokenizer)
        report = asdict(pretrain_copying(model, tokens, max_steps=copy_steps, seed=seed))
        if copy_reach_steps:
            stretch = stretch_copying(model, tokens, steps=copy_reach_steps, seed=seed)
            report["reach"] = asdict(stretch)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if report is not None:
        (folder / COPY_REPORT).write_text(json.dumps(report, indent=2) + "\n")
    return folder


def fit_to_gold(
    folder: str | Path,
    tasks: Sequence[Mapping[str, Any]],
    *,
    steps: int = 80,
    batch_size: int | None = None,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> float:
    """Fit the model saved in ``folder`` to the gold trajectories of ``tasks``, in place.

    A randomly initialised model almost never writes a tool call, so its episodes end after one
    turn. A few dozen AdamW steps on gold rows (the rollout engine's exact token layout, loss on
    the assistant tokens only) make greedy decoding call tools turn after turn, which is what
    tests and benchmarks of multi-turn generation need; whether the answers are right does not
    matter. ``batch_size`` None trains on every row each step; otherwise on a seeded random
    batch. Returns the last step's loss.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tool_envs.rollout.config import RolloutConfig
    from tool_envs.rollout.sft import gold_sft_rows

    folder = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    # Gold of code or search tasks is long in a tiny vocabulary: no budget cuts it short.
    config = RolloutConfig(max_completion_length=16384, max_tokens_per_turn=16384)
    rows = gold_sft_rows(tokenizer, tasks, config)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        if batch_size is None:
            batch = rows
        else:
            picks = torch.randint(len(rows), (batch_size,), generator=generator).tolist()
            batch = [rows[i] for i in picks]
        loss = model(**_padded_sft_batch(batch, tokenizer.pad_token_id)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    model.save_pretrained(folder)
    return float(loss)


def _padded_sft_batch(rows: Sequence[Mapping[str, list[int]]], pad_id: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 off the assistant)."""
    import torch

    width = max(len(row["input_ids"]) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        ids[i, :n] = torch.tensor(row["input_ids"])
        attention[i, :n] = 1
        mask = torch.tensor(row["assistant_masks"], dtype=torch.bool)
        labels[i, :n] = torch.where(mask, ids[i, :n], -100)
    return {"input_ids": ids, "attention_mask": attention, "labels": labels}

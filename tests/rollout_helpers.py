"""Shared pieces for the rollout/TRL tests: a tiny local model and a gold-playing backend."""

from __future__ import annotations

from tool_envs.calculator import default_splits, gold_turns
from tool_envs.rollout.backends.base import Generation, SamplingSettings
from tool_envs.tiny_models import build_model, build_tokenizer


def calculator_texts(count: int = 200) -> list[str]:
    rows = default_splits()["train"][:count]
    return [m["content"] for r in rows for m in r["prompt"]] + [
        turn for r in rows for turn in gold_turns(r)
    ]


def tiny_tokenizer_and_model(seed: int = 0):
    # Shrunk on purpose: 2 layers, hidden 64, vocab ~450 keeps a GRPO step well under a second.
    tokenizer = build_tokenizer(calculator_texts())
    return tokenizer, build_model(tokenizer, seed=seed)


class GoldPolicyBackend:
    """A GenerationBackend that writes each calculator task's gold turns.

    It reads the question and the number of tool results from the token context, so it speaks
    only through the protocol the engine uses with every backend. Used where a test needs real
    multi-turn episodes, which a randomly initialised model cannot produce.
    """

    def __init__(self, tokenizer, tasks):
        self.tokenizer = tokenizer
        self.turns = {t["prompt"][-1]["content"]: gold_turns(t) for t in tasks}
        self.calls = 0

    def generate(self, prompts, max_tokens, settings: SamplingSettings):
        self.calls += 1
        out = []
        for ids, limit in zip(prompts, max_tokens, strict=True):
            text = self.tokenizer.decode(ids)
            question = next(q for q in self.turns if f"user\n{q}<|im_end|>" in text)
            turn = self.turns[question][text.count("<tool_response>")]
            tokens = [
                *self.tokenizer.encode(turn, add_special_tokens=False),
                settings.stop_token_ids[0],
            ]
            reason = "stop" if len(tokens) <= limit else "length"
            tokens = tokens[:limit]
            out.append(Generation(tokens, [-0.5] * len(tokens), reason))
        return out

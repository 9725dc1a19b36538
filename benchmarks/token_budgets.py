"""Token budgets of the GPU recipes, measured on gold episodes instead of guessed.

    python benchmarks/token_budgets.py [--per-env 200] [--family tau] [--out DIR]

Each family's gold episodes (for tau: the gold agent turns and the scripted user's replies
between them) are played through the rollout engine, as SFT export plays them, with the chat
template of the family's config and a tokenizer of the Qwen family, and their lengths printed as
p95 and max of: completion tokens (policy and env tokens after the prompt: TRL's
``max_completion_length``), policy tokens in one turn (``max_tokens_per_turn``), policy turns
(``max_turns``) and the whole conversation (SFT's ``max_length``). The configs set their budgets
from these (see each config's header); ``tests/test_recipe_setups.py`` checks that no config
cuts more than 2% of the gold episodes of a sample.

The tokenizer. The Hub is out of reach here, so Qwen2.5's and Qwen3's own tokenizers are not.
:func:`qwen_like_tokenizer` builds one from OpenAI's ``cl100k_base`` ranks (the file litellm
ships for offline use), with Qwen2's pre-tokenizer (digits one per token, as Qwen splits them),
ChatML's special tokens and the Hermes tool tags as single tokens, and TRL's Qwen chat
template. Qwen's 151,643-token vocabulary was grown from ``cl100k_base``, so English, JSON and
ids should split nearly alike; the larger vocabulary can only merge more, so counts here lean
high. ``--compare`` prints characters per token of the same texts with the DeepSeek-V3
tokenizer litellm also ships (another byte-level BPE of 128k tokens), as a measure of how far
two tokenizers of this size differ on these texts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # tiktoken's cache name for cl100k_base
DEEPSEEK_FILE = "deepseek_tokenizer.json"
TAU_ENVS = tuple(
    f"tool_envs/Tau{name}-v0" for name in ("Retail", "Airline", "Telecom", "Healthcare", "Doordash")
)


@dataclass(frozen=True)
class Family:
    """The tasks one recipe family trains on, and the template its configs use."""

    envs: tuple[str, ...]
    chat_template: str
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    configs: tuple[str, ...] = ()


FAMILIES: dict[str, Family] = {
    "tau": Family(
        TAU_ENVS,
        "qwen2_5",
        configs=("tau_mixed_qwen2.5_3b_colocate.yaml", "tau_mixed_qwen2.5_3b_server.yaml"),
    ),
    "mcp": Family(
        ("tool_envs/MCP-v0",),
        "qwen3_training",
        {"enable_thinking": False},
        configs=(
            "mcp_qwen3_4b_lora.yaml",
            "mcp_qwen3_8b_lora_deepspeed.yaml",
            "mcp_cpu_grpo.yaml",
            "mcp_research_qwen3_4b.yaml",
        ),
    ),
    "code_search": Family(
        ("tool_envs/CodeExec-v0", "tool_envs/WebSearch-v0"),
        "qwen2_5",
        configs=("code_search_qwen2.5_7b_async.yaml",),
    ),
}


def _litellm_tokenizers() -> Path:
    """litellm's folder of tokenizer files, found without importing litellm (its import
    reaches for the network)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed (the dev extra): it ships the cl100k ranks")
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


def qwen_like_tokenizer(chat_template: str = "qwen2_5") -> Any:
    """A fast tokenizer of the Qwen family built offline (see the module docstring)."""
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    from tool_envs.integrations.trl.recipes import resolve_chat_template
    from tool_envs.tiny_models import ADDED_TOKENS, SPECIAL_TOKENS

    converter = TikTokenConverter(
        vocab_file=str(_litellm_tokenizers() / CL100K_FILE),
        pattern=PRETOKENIZE_REGEX,
        extra_special_tokens=list(SPECIAL_TOKENS),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=converter.converted(), eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.add_tokens(list(ADDED_TOKENS))
    resolve_chat_template(tokenizer, chat_template)
    return tokenizer


@dataclass(frozen=True)
class Lengths:
    """One gold episode, in tokens."""

    env_id: str
    prompt: int
    completion: int  # policy and env tokens after the prompt
    turn: int  # the longest policy turn (its stop token included)
    turns: int  # policy turns
    chars: int  # characters of the rendered conversation (for characters per token)

    @property
    def total(self) -> int:
        return self.prompt + self.completion


def gold_rows(envs: Sequence[str], per_env: int, split: str = "train") -> list[dict[str, Any]]:
    """``per_env`` rows of each env's ``split``, evenly spaced over it (a split's rows come
    grouped by task category, and categories differ in length)."""
    from tool_envs.data import load_task_sources

    rows = []
    for env_id in envs:
        every = load_task_sources([env_id], split, None, {})
        step = max(1, len(every) // per_env)
        rows.extend(every[::step][:per_env])
    return rows


def play_gold(
    tokenizer: Any,
    rows: Sequence[Mapping[str, Any]],
    template_kwargs: Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Lengths]:
    """Play every row's gold turns with no budget in the way; returns each episode's lengths.

    A gold episode that fails its task is an error: its length would not be a solution's."""
    from tool_envs.rollout.engine import RolloutConfig, RolloutEngine
    from tool_envs.rollout.sft import gold_scripts

    config = RolloutConfig(
        max_completion_length=10**6,
        max_tokens_per_turn=10**5,
        env_kwargs=dict(env_kwargs or {}),
        template_kwargs=dict(template_kwargs or {}),
    )
    with RolloutEngine(tokenizer, None, config=config) as engine:
        rollouts = engine.run(list(rows), scripts=gold_scripts(rows))
    failed = [r.task_id for r in rollouts if not r.success]
    if failed:
        raise ValueError(f"{len(failed)} gold episodes failed their task, e.g. {failed[0]}")
    lengths = []
    for r in rollouts:
        runs = _policy_runs(r.env_mask)
        text = tokenizer.decode(r.prompt_ids + r.completion_ids)
        lengths.append(
            Lengths(
                r.env_id, len(r.prompt_ids), len(r.completion_ids), max(runs), len(runs), len(text)
            )
        )
    return lengths


def _policy_runs(mask: Sequence[int]) -> list[int]:
    """Lengths of the runs of 1s in an env mask: one per policy turn."""
    runs, current = [], 0
    for bit in [*mask, 0]:
        if bit:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return runs


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (a value that occurred, never an interpolation)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summary(lengths: Sequence[Lengths]) -> dict[str, dict[str, float]]:
    """p50, p95 and max of each measure, and characters per token."""
    measures = {
        "completion": [x.completion for x in lengths],
        "turn": [x.turn for x in lengths],
        "turns": [x.turns for x in lengths],
        "total": [x.total for x in lengths],
        "prompt": [x.prompt for x in lengths],
    }
    table = {
        name: {"p50": percentile(v, 0.5), "p95": percentile(v, 0.95), "max": max(v)}
        for name, v in measures.items()
    }
    chars = sum(x.chars for x in lengths)
    table["chars_per_token"] = {"all": round(chars / sum(x.total for x in lengths), 3)}
    return table


def cut_share(lengths: Sequence[Lengths], budgets: Mapping[str, int | None]) -> float:
    """The share of episodes a config's budgets would cut: ``max_completion_length``,
    ``max_tokens_per_turn``, ``max_turns`` and ``max_length`` (SFT), each where given."""
    limits = {
        "max_completion_length": lambda x: x.completion,
        "max_tokens_per_turn": lambda x: x.turn,
        "max_turns": lambda x: x.turns,
        "max_length": lambda x: x.total,
    }
    cut = 0
    for episode in lengths:
        if any(
            budgets.get(key) is not None and measure(episode) > budgets[key]
            for key, measure in limits.items()
        ):
            cut += 1
    return cut / max(len(lengths), 1)


def measure_family(
    name: str, per_env: int, env_kwargs: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Lengths]:
    """The gold episodes of family ``name``, ``per_env`` tasks of each of its envs."""
    family = FAMILIES[name]
    tokenizer = qwen_like_tokenizer(family.chat_template)
    rows = gold_rows(family.envs, per_env)
    return play_gold(tokenizer, rows, family.template_kwargs, env_kwargs)


def deepseek_chars_per_token(texts: Sequence[str]) -> float:
    """Characters per token of ``texts`` with the DeepSeek-V3 tokenizer litellm ships."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_litellm_tokenizers() / DEEPSEEK_FILE))
    tokens = sum(len(tokenizer.encode(text).ids) for text in texts)
    return sum(len(text) for text in texts) / tokens


def _print_table(name: str, lengths: Sequence[Lengths], seconds: float) -> dict[str, Any]:
    table = summary(lengths)
    print(f"\n{name}: {len(lengths)} gold episodes ({seconds:.0f} s)")
    print("| measure | p50 | p95 | max |\n|---|--:|--:|--:|")
    for measure, row in table.items():
        if measure != "chars_per_token":
            print(f"| {measure} | {row['p50']} | {row['p95']} | {row['max']} |")
    print(f"characters per token: {table['chars_per_token']['all']}")
    for env_id in sorted({x.env_id for x in lengths}):
        part = summary([x for x in lengths if x.env_id == env_id])
        print(
            f"  {env_id}: completion p95 {part['completion']['p95']} max "
            f"{part['completion']['max']}; turn max {part['turn']['max']}; "
            f"turns max {part['turns']['max']}; total max {part['total']['max']}"
        )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-env", type=int, default=200, help="gold tasks per env")
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append")
    parser.add_argument("--compare", action="store_true", help="DeepSeek-V3 chars per token too")
    parser.add_argument("--out", type=Path, help="write the tables as JSON here")
    args = parser.parse_args(argv)
    import gymnasium as gym

    import tool_envs

    gym.register_envs(tool_envs)
    results = {}
    for name in args.family or sorted(FAMILIES):
        started = time.perf_counter()
        lengths = measure_family(name, args.per_env)
        results[name] = _print_table(name, lengths, time.perf_counter() - started)
        if args.compare:
            family = FAMILIES[name]
            tokenizer = qwen_like_tokenizer(family.chat_template)
            rows = gold_rows(family.envs, min(args.per_env, 20))
            texts = _rendered(tokenizer, rows, family.template_kwargs)
            here = sum(map(len, texts)) / sum(len(tokenizer.encode(t)) for t in texts)
            there = deepseek_chars_per_token(texts)
            print(
                f"chars per token on {len(texts)} episodes: {here:.3f} here, "
                f"{there:.3f} DeepSeek-V3"
            )
            results[name]["deepseek_chars_per_token"] = {"here": here, "deepseek": there}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "token_budgets.json").write_text(json.dumps(results, indent=2))
    return 0


def _rendered(tokenizer: Any, rows: Sequence[Mapping[str, Any]], template_kwargs: Any) -> list[str]:
    from tool_envs.rollout.engine import RolloutConfig, RolloutEngine
    from tool_envs.rollout.sft import gold_scripts

    config = RolloutConfig(10**6, 10**5, template_kwargs=dict(template_kwargs))
    with RolloutEngine(tokenizer, None, config=config) as engine:
        rollouts = engine.run(list(rows), scripts=gold_scripts(rows))
    return [tokenizer.decode(r.prompt_ids + r.completion_ids) for r in rollouts]


__all__ = ["FAMILIES", "Lengths", "cut_share", "measure_family", "qwen_like_tokenizer", "summary"]

if __name__ == "__main__":
    # Run as a script, this folder comes first on sys.path, and its mcp.py (a benchmark) would
    # shadow the MCP SDK that MCP-v0 imports.
    if Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    sys.exit(main())

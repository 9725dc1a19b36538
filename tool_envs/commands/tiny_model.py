"""``tool-envs tiny-model``: a tiny random model and tokenizer for an env's tasks, offline."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from tool_envs.tiny_models import ARCHITECTURES  # no torch: it imports that per call

    tiny = subparsers.add_parser(
        "tiny-model", help="build a tiny random model + tokenizer for an env's tasks (offline)"
    )
    tiny.add_argument(
        "--env", default="tool_envs/Calculator-v0", help="env whose texts train the tokenizer"
    )
    tiny.add_argument("--out", required=True, help="folder to save the model and tokenizer to")
    tiny.add_argument("--template", default="compact", help="'compact' or a TRL template name")
    tiny.add_argument("--layers", type=int, default=4)
    tiny.add_argument("--hidden", type=int, default=128)
    tiny.add_argument(
        "--vocab-size", type=int, default=512, help="BPE vocabulary (larger: shorter prompts)"
    )
    tiny.add_argument("--arch", choices=ARCHITECTURES, default="qwen2", help="model architecture")
    tiny.add_argument(
        "--digits-per-token",
        type=int,
        choices=(1, 2, 3),
        default=1,
        help="split numbers into groups of up to this many digits (2 or 3 need --arch llama)",
    )
    tiny.add_argument(
        "--bare-words",
        action="store_true",
        help="words do not take the space or mark before them, so a name is one token "
        "wherever it appears (needs --arch llama)",
    )
    tiny.add_argument(
        "--copy-steps",
        type=int,
        default=0,
        help="first teach the model to copy, for at most this many steps on repeated random "
        "tokens (it stops once it copies: 900-1,550 steps for hidden 128), as pretraining does "
        "for an LLM: tau tasks copy ids from the conversation",
    )
    tiny.add_argument(
        "--copy-reach-steps",
        type=int,
        default=0,
        help="then this many steps of copying short spans from up to 900 tokens back, as a tau "
        "agent does (needs --copy-steps; 1,500 steps: 15-20 min on one core for hidden 128)",
    )
    tiny.add_argument("--seed", type=int, default=0)
    return tiny


def _usage_mistake(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of options, or None."""
    if args.digits_per_token > 1 and args.arch == "qwen2":
        return (
            f"--digits-per-token {args.digits_per_token} needs --arch llama (a qwen2 "
            "folder's tokenizer loads back one digit per token)"
        )
    if args.bare_words and args.arch == "qwen2":
        return (
            "--bare-words needs --arch llama (a qwen2 folder's tokenizer loads "
            "back with the spaces attached)"
        )
    if args.copy_steps < 0:
        return f"--copy-steps must be 0 (none) or more, got {args.copy_steps}"
    if args.copy_reach_steps < 0:
        return f"--copy-reach-steps must be 0 (none) or more, got {args.copy_reach_steps}"
    if args.copy_reach_steps and not args.copy_steps:
        return "--copy-reach-steps needs --copy-steps (it stretches a model that copies)"
    return None


def run(args: argparse.Namespace) -> int:
    from tool_envs.errors import ToolEnvsError
    from tool_envs.tiny_models import COPY_REPORT, build_tiny_model_for_env

    mistake = _usage_mistake(args)
    if mistake:
        args.command_parser.error(mistake)
    try:
        folder = build_tiny_model_for_env(
            args.env,
            args.out,
            template=args.template,
            num_layers=args.layers,
            hidden_size=args.hidden,
            vocab_size=args.vocab_size,
            digits_per_token=args.digits_per_token,
            architecture=args.arch,
            bare_words=args.bare_words,
            copy_steps=args.copy_steps,
            copy_reach_steps=args.copy_reach_steps,
            seed=args.seed,
        )
    except ToolEnvsError as exc:
        print(f"tool-envs tiny-model: error: {exc}", file=sys.stderr)
        return 2
    print(f"saved a tiny model for {args.env} to {folder}")
    if args.copy_steps:
        print(f"copy pretraining: {(folder / COPY_REPORT).read_text().strip()}")
    return 0

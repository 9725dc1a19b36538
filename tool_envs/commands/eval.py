"""``tool-envs eval``: play tasks x trials against an OpenAI-compatible API (or a baseline)."""

from __future__ import annotations

import argparse
from typing import Any

from tool_envs._argtypes import json_object


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from tool_envs.rollout.config import RolloutConfig  # the env options' help is its fields'

    run = subparsers.add_parser(
        "eval",
        help="evaluate a model behind an OpenAI-compatible API (or a baseline) on envs",
        description="Play tasks x trials, save every trajectory as it finishes (a rerun resumes), "
        "report success, pass@k, pass^k, tokens and errors per env.",
    )
    run.add_argument(
        "--env",
        action="append",
        required=True,
        metavar="ID",
        help="env id (its own tasks of --split) or task dataset source; repeat for several",
    )
    run.add_argument("--split", default="test", help="task split of each env (default: test)")
    run.add_argument("--out", required=True, help="run folder: trajectories, summary, report")
    run.add_argument(
        "--agent",
        default="openai",
        choices=["openai", "gold", "noop"],
        help="openai: a chat API; gold: replay gold solutions; noop: empty replies",
    )
    run.add_argument("--model", help="model name the API serves (openai agent)")
    run.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    run.add_argument("--api-key", help="default: $OPENAI_API_KEY (any value for local servers)")
    run.add_argument(
        "--mode",
        default="native",
        choices=["native", "text"],
        help="native: tools= and structured tool_calls; text: tools in the prompt, calls parsed "
        "from the reply's text",
    )
    run.add_argument("--trials", type=int, default=1, help="trials per task (k of pass^k)")
    run.add_argument("--concurrency", type=int, default=8, help="episodes played at once")
    run.add_argument("--limit", type=int, help="first N tasks of each env")
    run.add_argument(
        "--where",
        type=json_object,
        default={},
        help='filter on extra_info, e.g. {"difficulty": 1}',
    )
    for name in ("env_kwargs", "env_servers", "ray_env_servers"):  # RolloutConfig's fields
        run.add_argument(
            "--" + name.replace("_", "-"),
            type=json_object,
            default={},
            metavar="JSON",
            help=RolloutConfig.help(name),
        )
    run.add_argument(
        "--user",
        help="user= for the envs that have a simulated user (scripted, llm, human); other envs "
        "of the run are made without it",
    )
    run.add_argument("--parser", help="tool-call parser of the envs (text mode), default auto")
    run.add_argument("--max-turns", type=int, help=RolloutConfig.help("max_turns"))
    run.add_argument("--temperature", type=float, help="sampling temperature (default: server's)")
    run.add_argument("--max-tokens", type=int, help="completion tokens per turn")
    run.add_argument("--seed", type=int, default=0, help="base of the per-trial reset seeds")
    run.add_argument("--timeout", type=float, default=120.0, help="seconds per API request")
    run.add_argument("--max-retries", type=int, default=2, help="API client retries per request")
    run.add_argument(
        "--price-per-million",
        type=float,
        nargs=2,
        metavar=("IN", "OUT"),
        help="price per million prompt / completion tokens, for the cost column",
    )
    run.add_argument(
        "--void-limit",
        type=int,
        default=3,
        help="stop after this many void trials in a row (a simulated user's or judge's API "
        "failing: not the agent's doing, never saved, replayed by a rerun); 0: never stop",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    return run


def run(args: argparse.Namespace) -> int:
    from tool_envs.eval.commands import eval_command
    from tool_envs.eval.runner import EvalConfig

    return eval_command(
        EvalConfig(
            envs=args.env,
            out=args.out,
            agent=args.agent,
            model=args.model,
            base_url=args.base_url,
            api_key=args.api_key,
            mode=args.mode,
            split=args.split,
            trials=args.trials,
            concurrency=args.concurrency,
            limit=args.limit,
            where=args.where,
            env_kwargs=args.env_kwargs,
            env_servers=args.env_servers,
            ray_env_servers=args.ray_env_servers,
            user=args.user,
            parser=args.parser,
            max_turns=args.max_turns,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            seed=args.seed,
            timeout=args.timeout,
            max_retries=args.max_retries,
            price_per_million=tuple(args.price_per_million) if args.price_per_million else None,
            void_limit=args.void_limit,
            progress=not args.no_progress,
        )
    )

"""``tool-envs demo``: real episodes played by scripted agents, offline."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    demo = subparsers.add_parser("demo", help="play real episodes with scripted agents (offline)")
    demo.add_argument("--episodes", type=int, default=1, help="episodes per scripted agent")
    demo.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    return demo


def run(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        args.command_parser.error("--episodes must be at least 1")
    from tool_envs.demo import run_demo

    run_demo(episodes_per_agent=args.episodes, seed=args.seed)
    return 0

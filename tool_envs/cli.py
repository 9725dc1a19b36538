"""The ``tool-envs`` command: list the envs and run the offline demo."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tool-envs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the registered environments")
    demo = commands.add_parser("demo", help="play real episodes with scripted agents (offline)")
    demo.add_argument("--episodes", type=int, default=1, help="episodes per scripted agent")
    demo.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    args = parser.parse_args(argv)

    if args.command == "list":
        import tool_envs

        for env_id, description in tool_envs.list_envs().items():
            print(f"{env_id:32} {description}")
    elif args.command == "demo":
        if args.episodes < 1:
            parser.error("--episodes must be at least 1")
        from tool_envs.demo import run_demo

        run_demo(episodes_per_agent=args.episodes, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

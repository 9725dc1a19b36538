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
    tiny = commands.add_parser(
        "tiny-model", help="build a tiny random model + tokenizer for an env's tasks (offline)"
    )
    tiny.add_argument(
        "--env", default="tool_envs/Calculator-v0", help="env whose texts train the tokenizer"
    )
    tiny.add_argument("--out", required=True, help="folder to save the model and tokenizer to")
    tiny.add_argument("--template", default="compact", help="'compact' or a TRL template name")
    tiny.add_argument("--layers", type=int, default=4)
    tiny.add_argument("--hidden", type=int, default=128)
    tiny.add_argument("--seed", type=int, default=0)
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
    elif args.command == "tiny-model":
        from tool_envs.tiny_models import build_tiny_model_for_env

        folder = build_tiny_model_for_env(
            args.env,
            args.out,
            template=args.template,
            num_layers=args.layers,
            hidden_size=args.hidden,
            seed=args.seed,
        )
        print(f"saved a tiny model for {args.env} to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

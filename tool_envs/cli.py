"""The ``tool-envs`` command: list the envs, run the offline demo, evaluate and check envs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def json_object(text: str) -> dict[str, Any]:
    """argparse type for flags that take a JSON object (the ``tool-envs`` subcommands' too)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {type(value).__name__}")
    return value


def _split_size(text: str) -> tuple[str, int]:
    """argparse type for ``NAME=COUNT``."""
    name, sep, count = text.partition("=")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=COUNT with COUNT >= 1, got {text!r}")
    return name, int(count)


def _add_task_set_output(parser: argparse.ArgumentParser, default: str) -> None:
    """``--out`` and ``--split NAME=COUNT``, shared by the task-set commands."""
    parser.add_argument("--out", required=True, help="dataset folder to write")
    parser.add_argument(
        "--split",
        action="append",
        type=_split_size,
        metavar="NAME=COUNT",
        help=f"a split and its size, repeatable (default: {default})",
    )


def _add_tau_tasks_parser(commands: Any) -> None:
    from tool_envs.tau.task_set import DOMAINS

    tasks = commands.add_parser(
        "tau-tasks",
        help="write a generated task set of a tau domain, any size, customers held out (offline)",
    )
    tasks.add_argument("--domain", required=True, choices=DOMAINS, help="which tau domain")
    _add_task_set_output(tasks, default="train=2000 test=100 heldout=200")
    tasks.add_argument(
        "--category",
        action="append",
        metavar="NAME",
        help="a task category to draw, repeatable (default: all, in the domain's shares)",
    )
    tasks.add_argument(
        "--heldout-split",
        action="append",
        metavar="NAME",
        help="a split whose customers no other split uses (default: heldout, if it is a split)",
    )
    tasks.add_argument(
        "--heldout-share",
        type=float,
        default=0.2,
        help="share of the customers kept for the held-out splits (default 0.2)",
    )
    tasks.add_argument(
        "--prompt",
        choices=("full", "compact"),
        default="full",
        help="the rows' system prompt: the domain's policy, or its compact wording of the same "
        "rules (for small models; the env, its rules and reward are the same)",
    )
    tasks.add_argument(
        "--databases",
        type=int,
        default=1,
        metavar="N",
        help="draw tasks from N generated databases (default 1: the env's own); one holds a few "
        "thousand distinct tasks of a category, many hold as many as a training run needs",
    )
    tasks.add_argument("--seed", type=int, default=0)


def _tau_tasks_command(args: Any) -> int:
    from tool_envs.tau.task_set import write_task_set

    sizes = dict(args.split or [("train", 2000), ("test", 100), ("heldout", 200)])
    heldout = args.heldout_split or [name for name in ("heldout",) if name in sizes]
    try:
        folder = write_task_set(
            args.out,
            args.domain,
            sizes,
            categories=args.category,
            heldout_splits=heldout,
            heldout_share=args.heldout_share,
            prompt=args.prompt,
            seed=args.seed,
            databases=args.databases,
        )
    except (ValueError, RuntimeError) as exc:
        print(f"tool-envs tau-tasks: error: {exc}", file=sys.stderr)
        return 2
    shown = ", ".join(f"{name} {count}" for name, count in sizes.items())
    print(f"wrote {shown} {args.domain} tasks to {folder}")
    return 0


def _add_eval_parser(commands: Any) -> None:
    run = commands.add_parser(
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
    run.add_argument(
        "--env-kwargs",
        type=json_object,
        default={},
        metavar="JSON",
        help='gymnasium.make arguments per env, e.g. {"tool_envs/X-v0": {"k": 1}}',
    )
    run.add_argument(
        "--env-servers",
        type=json_object,
        default={},
        metavar="JSON",
        help='play these envs on `tool-envs serve` servers: {"tool_envs/X-v0": "http://'
        '127.0.0.1:8000" or [URLs]}',
    )
    run.add_argument(
        "--user",
        help="user= for the envs that have a simulated user (scripted, llm, human); other envs "
        "of the run are made without it",
    )
    run.add_argument("--parser", help="tool-call parser of the envs (text mode), default auto")
    run.add_argument("--max-turns", type=int, help="override each env's turn limit")
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


_SERVE_EXAMPLES = """\
examples:
  tool-envs serve tool_envs/TauRetail-v0 --port 8001 --env-kwargs '{"user": "scripted"}'
  PYTHONPATH=. tool-envs serve unitconv:unitconv/UnitConv-v0 --port 8002   # your own env
  TOOL_ENVS_SERVE_TOKEN=... tool-envs serve tool_envs/CodeExec-v0 --host 0.0.0.0
"""


def _add_serve_parser(commands: Any) -> argparse.ArgumentParser:
    serve = commands.add_parser(
        "serve",
        help="serve a registered env over OpenEnv's protocol (WebSocket sessions on /ws)",
        description="One env per WebSocket session on /ws (reset / step / state / close), plus "
        "/health, /metadata, /schema and the task endpoints. Needs the serve extra.",
        epilog=_SERVE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "env_id",
        help="registered env id, e.g. tool_envs/TauRetail-v0, or module:namespace/Name-vN for "
        "an env your own module registers (the module is imported first)",
    )
    serve.add_argument(
        "--host",
        help="interface to bind (default 127.0.0.1; with --ray: 127.0.0.1 when every node is "
        "this machine, else each node's address); any but loopback needs a bearer token",
    )
    serve.add_argument("--port", type=int, default=8000, help="TCP port (0: any free port)")
    serve.add_argument("--max-sessions", type=int, default=64, help="sessions (envs) at once")
    serve.add_argument(
        "--session-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="close a session silent for this long and release its env (default 600)",
    )
    serve.add_argument(
        "--max-message-bytes", type=int, default=16 * 2**20, help="largest frame accepted"
    )
    serve.add_argument(
        "--env-kwargs",
        type=json_object,
        default={},
        metavar="JSON",
        help='gymnasium.make arguments of every session\'s env, e.g. {"user": "scripted"}',
    )
    serve.add_argument(
        "--inline-steps",
        action="store_true",
        help="run env steps on the event loop, not a thread per session: less CPU a step for "
        "short pure-Python envs; a step that waits (sandbox, LLM user, MCP) stalls every session",
    )
    serve.add_argument(
        "--token",
        help="bearer token clients must send (default: $TOOL_ENVS_SERVE_TOKEN); required to "
        "bind anything but a loopback address",
    )
    serve.add_argument(
        "--handshake-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="close a connection that has not sent its whole first request (HTTP request or "
        "WebSocket upgrade) within this long (default 10)",
    )
    serve.add_argument(
        "--max-handshakes",
        type=int,
        default=256,
        metavar="N",
        help="connections still sending their first request (no token checked yet) held at "
        "once; the next is answered 503 (default 256)",
    )
    ray = serve.add_argument_group(
        "on a Ray cluster (the ray extra)",
        "Start N servers as Ray actors on the cluster at $RAY_ADDRESS (or a local one started "
        "here), print their URLs, serve until SIGINT/SIGTERM, then stop them (and that local "
        "cluster). --port is ignored: each server gets a free one.",
    )
    ray.add_argument("--ray", type=int, metavar="N", help="serve on N Ray actors")
    ray.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS)")
    ray.add_argument("--num-cpus", type=float, default=1.0, help="CPUs per server (default 1)")
    ray.add_argument(
        "--resources",
        type=json_object,
        default={},
        metavar="JSON",
        help='custom Ray resources per server, e.g. {"sandbox": 1}',
    )
    ray.add_argument(
        "--max-restarts", type=int, default=3, help="restarts of a dead server (default 3)"
    )
    return serve


def _serve_command(parser: argparse.ArgumentParser, args: Any) -> int:
    import os

    import tool_envs
    from tool_envs.errors import EnvConfigError
    from tool_envs.serve.server import TOKEN_VARIABLE, ServeConfig, serve

    tool_envs.register_envs()
    try:
        config = ServeConfig(
            env_id=args.env_id,
            env_kwargs=args.env_kwargs,
            host=args.host or "127.0.0.1",
            port=args.port,
            max_sessions=args.max_sessions,
            session_timeout=args.session_timeout,
            max_message_bytes=args.max_message_bytes,
            token=args.token or os.environ.get(TOKEN_VARIABLE) or None,
            inline_steps=args.inline_steps,
            handshake_timeout=args.handshake_timeout,
            max_handshakes=args.max_handshakes,
        )
    except EnvConfigError as exc:
        parser.error(str(exc))
    if args.ray is not None:
        return _serve_on_ray(parser, args, config)
    try:
        serve(config)
    except EnvConfigError as exc:  # found at run time (a taken port, refused kwargs): no usage
        print(f"tool-envs serve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the server took over its signals
        print(f"tool-envs serve: stopped before serving {config.env_id}", file=sys.stderr)
        return 130
    return 0


def _serve_on_ray(parser: argparse.ArgumentParser, args: Any, config: Any) -> int:
    from tool_envs.errors import EnvConfigError
    from tool_envs.serve.cluster.cli import serve_on_ray
    from tool_envs.serve.cluster.launcher import ServerSpec

    try:
        spec = ServerSpec(
            config.env_id,
            servers=args.ray,
            num_cpus=args.num_cpus,
            resources=args.resources,
            max_sessions=args.max_sessions,
            env_kwargs=args.env_kwargs,
            max_restarts=args.max_restarts,
            session_timeout=args.session_timeout,
            inline_steps=args.inline_steps,
            handshake_timeout=args.handshake_timeout,
            max_handshakes=args.max_handshakes,
        )
    except EnvConfigError as exc:
        parser.error(str(exc))
    return serve_on_ray(spec, address=args.ray_address, host=args.host, token=config.token)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tool-envs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the registered environments")
    demo = commands.add_parser("demo", help="play real episodes with scripted agents (offline)")
    demo.add_argument("--episodes", type=int, default=1, help="episodes per scripted agent")
    demo.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    from tool_envs.tiny_models import ARCHITECTURES  # no torch: it imports that per call

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
    tasks = commands.add_parser(
        "calculator-tasks", help="write a generated Calculator-v0 task set of any size (offline)"
    )
    _add_task_set_output(tasks, default="train=8000 test=100 heldout=200")
    tasks.add_argument(
        "--difficulty", type=int, choices=(1, 2, 3), help="operations per task (default: a mix)"
    )
    tasks.add_argument("--seed", type=int, default=0)
    _add_tau_tasks_parser(commands)
    _add_eval_parser(commands)
    check = commands.add_parser(
        "check", help="run gymnasium's check_env and one gold episode on an env"
    )
    check.add_argument("env_id", help="registered env id, e.g. tool_envs/Calculator-v0")
    check.add_argument(
        "--env-kwargs",
        type=json_object,
        default={},
        metavar="JSON",
        help="gymnasium.make arguments for the env",
    )
    check_users = commands.add_parser(
        "check-users",
        help="re-check the simulated users of a saved eval run (no replay); faults to "
        "RUN/user_faults.jsonl",
    )
    check_users.add_argument("run", help="the eval run's folder (its --out)")
    commands.add_parser(
        "doctor", help="report the code sandbox's isolation level here and run one check"
    )
    serve_parser = _add_serve_parser(commands)
    from tool_envs.mcp.servers.cli import add_serve_mcp_parser  # argparse only, no mcp import

    add_serve_mcp_parser(commands)
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
        from tool_envs.errors import ToolEnvsError
        from tool_envs.tiny_models import COPY_REPORT, build_tiny_model_for_env

        if args.digits_per_token > 1 and args.arch == "qwen2":
            parser.error(
                f"--digits-per-token {args.digits_per_token} needs --arch llama (a qwen2 "
                "folder's tokenizer loads back one digit per token)"
            )
        if args.bare_words and args.arch == "qwen2":
            parser.error(
                "--bare-words needs --arch llama (a qwen2 folder's tokenizer loads "
                "back with the spaces attached)"
            )
        if args.copy_steps < 0:
            parser.error(f"--copy-steps must be 0 (none) or more, got {args.copy_steps}")
        if args.copy_reach_steps < 0:
            parser.error(
                f"--copy-reach-steps must be 0 (none) or more, got {args.copy_reach_steps}"
            )
        if args.copy_reach_steps and not args.copy_steps:
            parser.error("--copy-reach-steps needs --copy-steps (it stretches a model that copies)")
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
    elif args.command == "calculator-tasks":
        from tool_envs.calculator.task_set import write_task_set

        sizes = dict(args.split or [("train", 8000), ("test", 100), ("heldout", 200)])
        folder = write_task_set(args.out, sizes, difficulty=args.difficulty, seed=args.seed)
        shown = ", ".join(f"{name} {count}" for name, count in sizes.items())
        print(f"wrote {shown} Calculator-v0 tasks to {folder}")
    elif args.command == "tau-tasks":
        return _tau_tasks_command(args)
    elif args.command == "eval":
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
    elif args.command == "check":
        from tool_envs.eval.commands import check_command

        return check_command(args.env_id, args.env_kwargs)
    elif args.command == "check-users":
        from tool_envs.eval.commands import check_users_command

        return check_users_command(args.run)
    elif args.command == "doctor":
        from tool_envs.code.sandbox import doctor

        print(doctor())
    elif args.command == "serve":
        return _serve_command(serve_parser, args)
    elif args.command == "serve-mcp":
        from tool_envs.mcp.servers.cli import serve_mcp_command

        return serve_mcp_command(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

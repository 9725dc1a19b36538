"""``tool-envs serve``: a registered env over OpenEnv's protocol, here or on a Ray cluster."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tool_envs._argtypes import json_object

_SERVE_EXAMPLES = """\
examples:
  tool-envs serve tool_envs/TauRetail-v0 --port 8001 --env-kwargs '{"user": "scripted"}'
  PYTHONPATH=. tool-envs serve unitconv:unitconv/UnitConv-v0 --port 8002   # your own env
  TOOL_ENVS_SERVE_TOKEN=... tool-envs serve tool_envs/CodeExec-v0 --host 0.0.0.0
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    serve = subparsers.add_parser(
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
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run env steps on the event loop (less CPU a step), or with --no-inline-steps on "
        "the step threads; default: inline when the env's steps never wait (Calculator, tau "
        "with the scripted user), threads when they may (sandbox, LLM user, MCP)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="processes serving behind the one port; --max-sessions and /health count all of "
        "them (default 0: one per CPU core; 1 with --ray, which starts a server per actor)",
    )
    serve.add_argument(
        "--step-threads",
        type=int,
        default=128,
        metavar="N",
        help="threads the sessions' env calls run on, at most: one per call in flight, none for "
        "an idle session; calls past N wait their turn (raise it for steps that wait long, "
        "e.g. an LLM user; default 128)",
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
        help="slow connections (no whole first request a second after they were accepted, "
        "no token checked yet) held at once; while that many wait, the next is answered 503 "
        "(default 256)",
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


def run(args: argparse.Namespace) -> int:
    import tool_envs
    from tool_envs.errors import EnvConfigError
    from tool_envs.serve.server import TOKEN_VARIABLE, ServeConfig, serve

    tool_envs.register_envs()
    try:
        config = ServeConfig(
            env_id=args.env_id,
            host=args.host or "127.0.0.1",
            port=args.port,
            max_message_bytes=args.max_message_bytes,
            token=args.token or os.environ.get(TOKEN_VARIABLE) or None,
            workers=_workers(args),
            **_server_options(args),
        )
    except EnvConfigError as exc:
        args.command_parser.error(str(exc))
    if args.ray is not None and args.workers not in (None, 1):
        args.command_parser.error(
            "--workers serves one server from several processes here; on Ray, --ray N "
            "starts N servers"
        )
    if args.ray is not None:
        return _serve_on_ray(args, config)
    try:
        serve(config)
    except EnvConfigError as exc:  # found at run time (a taken port, refused kwargs): no usage
        print(f"tool-envs serve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the server took over its signals
        print(f"tool-envs serve: stopped before serving {config.env_id}", file=sys.stderr)
        return 130
    return 0


def _serve_on_ray(args: argparse.Namespace, config: Any) -> int:
    from tool_envs.errors import EnvConfigError
    from tool_envs.serve.cluster.cli import serve_on_ray
    from tool_envs.serve.cluster.launcher import ServerSpec

    try:
        spec = ServerSpec(
            config.env_id,
            servers=args.ray,
            num_cpus=args.num_cpus,
            resources=args.resources,
            max_restarts=args.max_restarts,
            **_server_options(args),
        )
    except EnvConfigError as exc:
        args.command_parser.error(str(exc))
    return serve_on_ray(spec, address=args.ray_address, host=args.host, token=config.token)


def _workers(args: argparse.Namespace) -> int:
    """``--workers``: 0 (the default) is one per core; a server on Ray is one process."""
    if args.workers is None:
        return 1 if args.ray is not None else _cores()
    return args.workers if args.workers != 0 else _cores()


def _cores() -> int:
    """The cores this process may run on (a container's or ``taskset``'s share), not the
    machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _server_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options a server here (``ServeConfig``) and each server on Ray (``ServerSpec``) take
    alike."""
    names = ("env_kwargs", "max_sessions", "session_timeout", "inline_steps", "step_threads")
    names += ("handshake_timeout", "max_handshakes")
    return {name: getattr(args, name) for name in names}

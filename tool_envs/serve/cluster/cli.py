"""``tool-envs serve ENV_ID --ray N``: N servers on a Ray cluster until SIGINT or SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading

from tool_envs.errors import ToolEnvsError
from tool_envs.serve.cluster.errors import EnvServerLostError
from tool_envs.serve.cluster.launcher import RayEnvServers, ServerSpec
from tool_envs.serve.server import TOKEN_VARIABLE


def serve_on_ray(
    spec: ServerSpec,
    *,
    address: str | None = None,
    host: str | None = None,
    token: str | None = None,
    watch_every: float = 2.0,
) -> int:
    """Start the servers, print their URLs, report restarts, and stop everything it started
    (servers, and the local cluster when there was no cluster to join) on a signal.

    Returns the exit status: 0 after a signal, 1 when a server was lost for good, 2 when the
    servers could not start (no ``ray``, another Ray version, resources no node has).
    """
    stop, serving = threading.Event(), threading.Event()

    def on_signal(number: int, frame: object) -> None:
        stop.set()
        if not serving.is_set():  # still starting (placement may wait): abandon the start
            raise KeyboardInterrupt

    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, on_signal) for number in signals}
    servers = RayEnvServers([spec], address=address, host=host, token=token)
    try:
        servers.start()
        for number in signals:  # ray.init may have put its own handlers in
            signal.signal(number, on_signal)
        for url in servers.urls[spec.env_id]:
            print(f"serving {spec.env_id} on {url} (ws /ws, max {spec.max_sessions} sessions)")
        if servers.new_token:  # the servers listen beyond loopback: clients need the token
            print(f"clients must send a bearer token: {TOKEN_VARIABLE}={servers.new_token}")
        cluster = "the local Ray cluster started for them" if servers.started_cluster else ""
        serving.set()  # from here on a signal ends the loop below
        print(
            f"{spec.servers} servers on Ray; Ctrl-C or SIGTERM stops them"
            + (f" and {cluster}" if cluster else ""),
            flush=True,
        )
        while not stop.wait(watch_every):
            for change in servers.check():
                print(change, flush=True)
    except ToolEnvsError as exc:  # lost for good, no ray, another Ray, nowhere to place
        print(f"tool-envs serve: error: {exc}", file=sys.stderr, flush=True)
        return 1 if isinstance(exc, EnvServerLostError) else 2
    except KeyboardInterrupt:
        print("interrupted while starting; stopping", file=sys.stderr, flush=True)
    finally:
        servers.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
    print("stopped", flush=True)
    return 0

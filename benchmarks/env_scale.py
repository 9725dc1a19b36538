"""How many once-a-second sessions one ``tool-envs serve`` holds, by serving mode, in one run.

    python benchmarks/env_scale.py [--sessions 256 1024] [--seconds 20] [--arms default inline ...]
        [--openenv-python .venv-openenv/bin/python]
    python benchmarks/env_scale.py --client [--episodes 256 1024]

S sessions of Calculator-v0 are opened at once on a server that has just started (no warm-up
episode from the client: the server's own start-up is what is measured), then each steps once a
second for ``--seconds`` (three tool calls, an answer, a reset, and again), from one asyncio
process (on uvloop, as the servers are, its collector off while it measures) speaking the raw
WebSocket protocol. Each arm is a fresh server:

- ``default``: ``tool-envs serve tool_envs/Calculator-v0 --max-sessions 20000`` as it is: a
  worker process per core, Calculator's steps on the event loop (its ``steps_wait`` is False);
- ``default-fd1024``: the same at a soft open-file limit of 1,024 (the hard one as it is), the
  common default that a server must lift itself;
- ``one-process``: ``--workers 1``;
- ``threads``: ``--workers 1 --no-inline-steps``, env calls on the step threads (the server's
  default before, the baseline of the same run);
- ``openenv``: OpenEnv 0.10's own reference server (``create_app(...,
  max_concurrent_envs=20000)`` under uvicorn) serving an OpenEnv ``Environment`` that plays
  Calculator-v0's tasks with its prompt and tool schemas (``openenv_calculator_server.py``, run by
  ``--openenv-python``, the OpenEnv venv's interpreter; the arm is skipped, saying so, without
  it), warmed by one episode from the client first.

Reported per arm: sessions held (opened and reset), steps lost (an error or no answer within
30 s), steps/s, step latency p50 / p99, the server's resident MB per session and threads
(all its processes, read from ``/proc`` while every session is open), its CPU microseconds per
message (all its processes' CPU over the run, opening the sessions included, over the frames
answered), the lines it logged, and this client's own CPU share and its lag (how late its
once-a-second sends went out, p99): a client that lags is saturated, and its latencies say
nothing of the server.

``--client`` measures the trainer's side instead: the async engine (``play`` with
``Policy(engine="async")`` and a ``VLLMServerBackend``) playing N concurrent Calculator episodes
(256 tasks' gold turns, a GRPO group of N / 256 each) whose envs live on 2 ``tool-envs serve
--inline-steps`` servers, against a fake vLLM server on 127.0.0.1 that answers each request at
once with the episode's next gold turn (``fake_vllm_server.py``, its own process): generation
costs nothing, so what is left is the client's own work. Reported per N: all succeeded, wall
seconds, the trainer process's peak threads (Python threads / OS threads of ``/proc``, sampled
every 5 ms by a thread of its own, counted in, from before the engine is built until after the
run, while every session is still held), its CPU ms per env step (the engine's
``process_cpu_seconds / env_steps``: everything the process did, resets and requests
included), the CPU shares of the client, the fake vLLM server and the 2 env servers (CPU over
the run's wall time: near 100%, that process is what limits), and env steps/s; a batch of 16
episodes warms the player (its imports, first requests and sessions) first and is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import random
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tool_envs.serve import EnvServerProcess

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = "tool_envs/Calculator-v0"
ANSWER_WITHIN = 30.0
START_AFTER = 0.5  # seconds from the last session's reset to the first second of steps
ROOMY = ("--max-sessions", "20000")  # room for every session; the rest as the server starts
ARMS: dict[str, tuple[str, ...]] = {
    "default": (),
    "default-fd1024": (),
    "one-process": ("--workers", "1"),
    "threads": ("--workers", "1", "--no-inline-steps"),
}
SOFT_FILES = {"default-fd1024": 1024}  # the server's soft RLIMIT_NOFILE at start, by arm
OPENENV = "openenv"
WARM_UP = 16  # --client: episodes played first by the same player (not counted)
TURNS = [
    *(
        f'<tool_call>\n{{"name": "{name}", "arguments": {{"a": 6, "b": 3}}}}\n</tool_call>'
        for name in ("add", "multiply", "divide")
    ),
    "The answer is 2.",
]


def server_stats(pid: int) -> tuple[float, int]:
    """Resident MB and threads of ``pid`` and its children (the workers)."""
    pids = [pid, *_children(pid)]
    rss = threads = 0
    for each in pids:
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        rss += int(fields["VmRSS"].split()[0])
        threads += int(fields["Threads"])
    return rss / 1024, threads


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


async def play(url: str, sessions: int, seconds: float, pid: int) -> dict[str, Any]:
    from pydantic_core import from_json  # a third of json.loads's CPU: the client is measured too
    from ws_probe import connect

    ws_url = url.replace("http://", "ws://") + "/ws"
    frames = [json.dumps({"type": "step", "data": {"text": turn}}) for turn in TURNS]
    frames.append(json.dumps({"type": "reset", "data": {}}))
    latencies: list[float] = []
    lags: list[float] = []
    lost = held = 0
    opened, go = asyncio.Event(), asyncio.Event()  # all sessions answered; the clock started
    settled = 0

    def settle() -> None:
        nonlocal settled
        settled += 1
        if settled == sessions:
            opened.set()

    async def ask(ws: Any, frame: str) -> dict[str, Any]:
        async with asyncio.timeout(ANSWER_WITHIN):  # wait_for would make a task per frame
            return from_json(await ws.ask(frame))

    async def session(seed: int) -> None:
        nonlocal lost, held
        try:
            ws = await connect(ws_url, ANSWER_WITHIN)
        except Exception:
            settle()
            return
        try:
            try:
                reset = await ask(ws, json.dumps({"type": "reset", "data": {"seed": seed}}))
            except Exception:
                settle()
                return
            held += reset["type"] == "observation"
            settle()
            await go.wait()
            loop = asyncio.get_running_loop()
            due = start + random.random()
            turn = 0
            while due < start + seconds:
                await asyncio.sleep(max(0.0, due - loop.time()))
                lags.append(loop.time() - due)
                sent = time.perf_counter()
                try:
                    answer = await ask(ws, frames[turn])
                except Exception:
                    lost += 1
                    return
                latencies.append(time.perf_counter() - sent)
                lost += answer["type"] != "observation"
                turn = (turn + 1) % (len(TURNS) + 1)
                due += 1.0
        finally:
            ws.close()

    async def measure() -> tuple[float, int]:
        await opened.wait()
        await asyncio.sleep(min(2.0, seconds / 2))
        return await asyncio.to_thread(server_stats, pid)

    start = float("inf")
    server_cpu = cpu_seconds([pid, *_children(pid)])
    tasks = [asyncio.create_task(session(i)) for i in range(sessions)]
    stats = asyncio.create_task(measure())
    await opened.wait()
    start = asyncio.get_running_loop().time() + START_AFTER
    go.set()
    began, stepping_cpu = time.monotonic(), time.process_time()
    await asyncio.gather(*tasks)
    wall, stepping_cpu = time.monotonic() - began, time.process_time() - stepping_cpu
    server_cpu = cpu_seconds([pid, *_children(pid)]) - server_cpu
    mb, threads = await stats
    latencies.sort()
    lags.sort()

    def quantile(values: list[float], q: float) -> float:
        return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else 0.0

    return {
        "held": held,
        "lost": lost,
        # over the time the steps took: a server that falls behind stretches the run
        "steps_per_s": len(latencies) / max(seconds, wall - START_AFTER, 1e-9),
        "p50_ms": quantile(latencies, 0.5),
        "p99_ms": quantile(latencies, 0.99),
        "mb": mb,
        "threads": threads,
        "server_us_per_message": server_cpu / max(held + len(latencies), 1) * 1e6,
        "client_cpu": stepping_cpu / max(wall, 1e-9),  # the steps' share, not the opening's
        "client_lag_p99_ms": quantile(lags, 0.99),
    }


def run_arm(arm: str, sessions: int, seconds: float, openenv_python: Path) -> dict[str, Any]:
    # The probe keeps its own collector out of the measurement: with thousands of sessions, a
    # collection stalled the client by 20-35 ms every ~5 s, and every reply it held back counted
    # as the server's latency. What it leaves uncollected is bounded by one arm's run.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        return _run_arm(arm, sessions, seconds, openenv_python)
    finally:
        gc.enable()
        gc.unfreeze()


def _run_arm(arm: str, sessions: int, seconds: float, openenv_python: Path) -> dict[str, Any]:
    run = uvloop_run()
    if arm == OPENENV:
        with openenv_server(openenv_python) as (url, pid, log):
            run(warm_up(url))
            base_mb, _ = server_stats(pid)
            logged = log()
            result = run(play(url, sessions, seconds, pid))
            result["log_lines"] = len(log().splitlines()) - len(logged.splitlines())
    else:
        args = (*ROOMY, *ARMS[arm])
        command = None
        if arm in SOFT_FILES:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            hard_text = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
            command = [
                "prlimit",
                f"--nofile={SOFT_FILES[arm]}:{hard_text}",
                *(sys.executable, "-m", "tool_envs.cli", "serve", CALCULATOR, "--port", "0"),
            ]
        with EnvServerProcess(CALCULATOR, args=args, cwd=ROOT, command=command) as server:
            base_mb, _ = server_stats(server.pid)
            result = run(play(server.url, sessions, seconds, server.pid))
            result["log_lines"] = len(server.log().splitlines())
    result["mb_per_session"] = (result.pop("mb") - base_mb) / max(result["held"], 1)
    return {"arm": arm, "sessions": sessions, **result}


def uvloop_run() -> Any:
    """``asyncio.run`` on uvloop (the servers' loop; its sockets cost the client less CPU), or
    on asyncio's own loop where uvloop is missing."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


@contextlib.contextmanager
def openenv_server(python: Path) -> Iterator[tuple[str, int, Callable[[], str]]]:
    """OpenEnv's reference server of Calculator-v0's tasks, prompt and tools (written here
    from the real env, for the OpenEnv venv, which cannot import tool_envs): (URL, pid, its
    log so far)."""
    import gymnasium as gym

    import tool_envs

    gym.register_envs(tool_envs)
    env = gym.make(CALCULATOR)
    spec = {"tasks": env.unwrapped.own_task_splits()["train"], "tools": env.unwrapped.tools}
    env.close()
    with tempfile.TemporaryDirectory(prefix="env-scale-openenv-") as folder:
        spec_path = Path(folder, "spec.json")
        spec_path.write_text(json.dumps(spec))
        script = ROOT / "benchmarks" / "openenv_calculator_server.py"
        # -P: benchmarks/ (its mcp.py) is not put first on the path
        command = [str(python), "-P", str(script), str(spec_path), "0"]
        with EnvServerProcess(CALCULATOR, command=command, startup_timeout=60) as server:
            yield server.url, server.pid, server.log


async def warm_up(url: str) -> None:
    """One episode (a reset, the turns, a close) before the measured run, as a client of the
    issue's table did: OpenEnv's server has no warm start of its own."""
    from websockets.asyncio.client import connect

    async with connect(url.replace("http://", "ws://") + "/ws", compression=None) as ws:
        for frame in [
            {"type": "reset", "data": {"seed": 0}},
            *({"type": "step", "data": {"text": turn}} for turn in TURNS),
        ]:
            await ws.send(json.dumps(frame))
            answer = json.loads(await asyncio.wait_for(ws.recv(), ANSWER_WITHIN))
            if answer["type"] != "observation":
                raise RuntimeError(f"OpenEnv's server refused the warm-up {frame}: {answer}")
        await ws.send(json.dumps({"type": "close"}))


class ThreadPeak:
    """The most threads this process had (Python's count, and the OS's from ``/proc``), sampled
    every 5 ms by a thread of its own (counted in) while the block runs."""

    def __init__(self) -> None:
        self.python = self.os = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="thread-peak", daemon=True)

    def sample(self) -> None:
        status = Path("/proc/self/status").read_text()
        threads = next(int(line.split()[1]) for line in status.splitlines() if "Threads:" in line)
        self.python = max(self.python, threading.active_count())
        self.os = max(self.os, threads)

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.sample()

    def __enter__(self) -> ThreadPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.sample()
        self._stop.set()
        self._thread.join()


def client_run(episodes: int, tasks: int = 256) -> dict[str, Any]:
    """``episodes`` concurrent remote episodes through the async engine (see ``--client``)."""
    import gymnasium as gym
    from fake_vllm_server import FakeVLLMServer

    import tool_envs
    from tool_envs.rollout import Player, Policy, RolloutConfig
    from tool_envs.rollout.backends.vllm import VLLMServerBackend
    from tool_envs.tiny_models import build_tokenizer, env_texts

    gym.register_envs(tool_envs)
    env = gym.make(CALCULATOR)
    rows, scripts = [], {}
    for task in env.unwrapped.tasks:
        question = task["prompt"][-1]["content"]
        if question not in scripts:
            scripts[question] = env.unwrapped.gold_turns(task)
            rows.append(task)
        if len(rows) == min(tasks, episodes):
            break
    env.close()
    rows = [rows[i % len(rows)] for i in range(episodes)]  # groups of episodes // tasks
    tokenizer = build_tokenizer(env_texts(CALCULATOR, limit=200))
    args = ("--workers", "1", *ROOMY, "--inline-steps")
    with (
        FakeVLLMServer(tokenizer, scripts) as generation,
        EnvServerProcess(CALCULATOR, args=args, cwd=ROOT) as a,
        EnvServerProcess(CALCULATOR, args=args, cwd=ROOT) as b,
        ThreadPeak() as peak,
    ):
        config = RolloutConfig(max_completion_length=4096, env_servers={CALCULATOR: [a.url, b.url]})
        with (
            VLLMServerBackend(generation.url) as backend,
            Player(Policy(tokenizer, backend, engine="async"), config) as player,
        ):
            player.play(rows[:WARM_UP], seeds=list(range(WARM_UP)))  # imports, first requests
            servers = {"generation": [generation.pid], "env": [a.pid, b.pid]}
            before = {name: cpu_seconds(pids) for name, pids in servers.items()}
            played = player.play(rows, seeds=list(range(episodes)))
            spent = {name: cpu_seconds(pids) - before[name] for name, pids in servers.items()}
            engine = player.engine
            held = a.health()["active_sessions"] + b.health()["active_sessions"]
            peak.sample()
    return {
        "episodes": episodes,
        "succeeded": sum(r.success for r in played.rollouts),
        "held": held,
        "wall_s": engine.wall_seconds,
        "threads_python": peak.python,
        "threads_os": peak.os,
        "cpu_ms_per_step": 1000 * engine.process_cpu_seconds / max(engine.env_steps, 1),
        "env_steps": engine.env_steps,
        "steps_per_s": engine.env_steps / max(engine.wall_seconds, 1e-9),
        "client_cpu": engine.process_cpu_seconds / max(engine.wall_seconds, 1e-9),
        "generation_server_cpu": spent["generation"] / max(engine.wall_seconds, 1e-9),
        "env_servers_cpu": spent["env"] / max(engine.wall_seconds, 1e-9),
    }


def cpu_seconds(pids: Sequence[int]) -> float:
    """User and system CPU seconds of ``pids`` so far (``/proc``)."""
    import os

    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def client_main(episodes: Sequence[int], json_path: Path | None) -> None:
    print(
        "| episodes | all succeeded | sessions held | wall s | peak threads (Python / OS) "
        "| client CPU ms per env step | CPU: client / generation server / env servers "
        "| env steps/s |\n|---:|---|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    rows = []
    for count in episodes:
        row = client_run(count)
        rows.append(row)
        print(
            f"| {count:,} | {'yes' if row['succeeded'] == count else 'NO'} ({row['succeeded']:,}) "
            f"| {row['held']:,} | {row['wall_s']:.1f} "
            f"| {row['threads_python']} / {row['threads_os']} | {row['cpu_ms_per_step']:.2f} "
            f"| {row['client_cpu']:.0%} / {row['generation_server_cpu']:.0%} / "
            f"{row['env_servers_cpu']:.0%} | {row['steps_per_s']:,.0f} |",
            flush=True,
        )
    if json_path:
        json_path.write_text(json.dumps(rows, indent=2))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--client", action="store_true", help="the trainer's side: the async engine (see above)"
    )
    parser.add_argument("--episodes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--sessions", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--seconds", type=float, default=20.0)
    arms = [*ARMS, OPENENV]
    parser.add_argument("--arms", nargs="+", choices=sorted(arms), default=arms)
    parser.add_argument(
        "--openenv-python",
        type=Path,
        default=ROOT / ".venv-openenv" / "bin" / "python",
        help="the interpreter of a venv with openenv==0.10 (the openenv arm's server)",
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.client:
        client_main(args.episodes, args.json)
        return
    if OPENENV in args.arms and not args.openenv_python.exists():
        print(
            f"skipping the openenv arm: no OpenEnv interpreter at {args.openenv_python} (`make "
            "test` builds .venv-openenv; or pass --openenv-python PATH)",
            file=sys.stderr,
            flush=True,
        )
        args.arms = [arm for arm in args.arms if arm != OPENENV]
    rows = []
    print(
        "| arm | S | held | lost steps | steps/s | p50 / p99 ms | MB per session | threads "
        "| server CPU us per message | log lines | client CPU | client lag p99 ms |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    for sessions in args.sessions:
        for arm in args.arms:
            row = run_arm(arm, sessions, args.seconds, args.openenv_python)
            rows.append(row)
            print(
                f"| {arm} | {sessions:,} | {row['held']:,} | {row['lost']} "
                f"| {row['steps_per_s']:,.0f} | {row['p50_ms']:.1f} / {row['p99_ms']:.1f} "
                f"| {row['mb_per_session']:.3f} | {row['threads']} "
                f"| {row['server_us_per_message']:.0f} | {row['log_lines']} "
                f"| {row['client_cpu']:.0%} | {row['client_lag_p99_ms']:.0f} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

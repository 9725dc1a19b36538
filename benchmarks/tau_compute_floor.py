"""The training compute a tau-retail seed needs, from the cost of one conversation (issue 32).

    python benchmarks/tau_compute_floor.py --model PATH [--conversations 8] [--repeats 3]
        [--sft-steps 500] [--grpo-steps 100]

A seed of ``benchmarks/learning.py --family tau-retail`` trains on whole conversations of
~2,300 tokens: SFT takes 4 gold conversations a step (400-680 steps to its target on seeds
4-9), and each GRPO arm 16 sampled episodes a step for 100 steps, two arms at once. Whatever
else a run does, it cannot be faster than one forward and backward pass over each of those
conversations. This times that pass on real gold conversations of the family's task set, one
conversation at a time as both CPU configs train (no padding), on 1 thread (what an arm gets)
and 2 (what SFT gets), and prints the minutes of training compute a seed needs at that rate:
SFT's passes on 2 threads, then the two arms' on one thread each in parallel, with TRL's
importance-sampling forward pass where it is on.

Next to the recipes' pass (fp32, logits at every position) it times what would cut it without
changing the conversations: the language-model head only at the trained (policy) tokens, and
bfloat16 autocast; and the same conversations cut to their first half, to show how the cost
grows with length (time linear in length: the weights' matmuls; faster than linear: attention).
GRPO's sampled episodes are about as long as gold ones (7-8 policy turns), so the gold cost
stands for them. ``--model`` is a tau-retail model folder (``tool-envs tiny-model``, an SFT
output). Not part of CI: about two minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from learning import FAMILIES

SFT_CONVERSATIONS_PER_STEP = 4
GRPO_EPISODES_PER_STEP = 16


def gold_conversations(model: Path, out: Path, count: int) -> list[dict[str, list[int]]]:
    """``count`` gold conversations of the family's task set, as SFT rows (ids and policy mask)."""
    from transformers import AutoTokenizer

    from tool_envs.data import load_tasks
    from tool_envs.rollout import RolloutConfig
    from tool_envs.rollout.sft import gold_sft_rows

    family = FAMILIES["tau-retail"]
    folder = family.write_tasks(out, {"train": count, "test": 1, "heldout": 1})
    tasks = load_tasks(folder, split="train")
    config = RolloutConfig(
        max_completion_length=family.max_completion_length,
        max_tokens_per_turn=family.max_tokens_per_turn,
    )
    return gold_sft_rows(AutoTokenizer.from_pretrained(model), tasks, config)


def pass_fn(model: torch.nn.Module, head_at_policy: bool, bf16: bool) -> Callable:
    """One forward and backward pass over a conversation, with the loss on its policy tokens."""

    def run(ids: torch.Tensor, policy: torch.Tensor) -> float:
        targets = ids[0, 1:][policy[1:]]
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with autocast:
            if head_at_policy:
                hidden = model.model(input_ids=ids).last_hidden_state[0, :-1]
                logits = model.lm_head(hidden[policy[1:]])
            else:
                logits = model(input_ids=ids).logits[0, :-1][policy[1:]]
        loss = F.cross_entropy(logits.float(), targets)
        loss.backward()
        model.zero_grad(set_to_none=True)
        return loss.item()

    return run


def forward_fn(model: torch.nn.Module) -> Callable:
    """A forward pass without gradients: TRL's importance-sampling scoring of an episode."""

    def run(ids: torch.Tensor, policy: torch.Tensor) -> None:
        with torch.no_grad():
            model(input_ids=ids)

    return run


def seconds_per_conversation(
    run: Callable, rows: list[tuple[torch.Tensor, torch.Tensor]], repeats: int
) -> float:
    """Median over ``repeats`` of the mean time of ``run`` over the conversations (one warm-up)."""
    run(*rows[0])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for ids, policy in rows:
            run(ids, policy)
        times.append((time.perf_counter() - start) / len(rows))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a tau-retail model folder")
    parser.add_argument("--conversations", type=int, default=8, help="gold conversations timed")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over them")
    parser.add_argument("--sft-steps", type=int, default=500, help="SFT steps a seed takes")
    parser.add_argument("--grpo-steps", type=int, default=100, help="GRPO steps an arm takes")
    args = parser.parse_args()
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no config.json there (a saved model folder?)")
    for flag in ("conversations", "repeats", "sft_steps", "grpo_steps"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    from transformers import AutoModelForCausalLM

    with tempfile.TemporaryDirectory(prefix="bench-compute-floor-") as out:
        rows = gold_conversations(args.model, Path(out) / "tasks", args.conversations)
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="sdpa").train()
    full = [
        (torch.tensor([r["input_ids"]]), torch.tensor(r["assistant_masks"], dtype=torch.bool))
        for r in rows
    ]
    half = [(ids[:, : ids.shape[1] // 2], policy[: ids.shape[1] // 2]) for ids, policy in full]
    lengths = [ids.shape[1] for ids, _ in full]
    policy_tokens = [int(policy.sum()) for _, policy in full]
    print(
        f"{len(full)} gold conversations: {statistics.mean(lengths):,.0f} tokens "
        f"({min(lengths):,}-{max(lengths):,}), {statistics.mean(policy_tokens):.0f} of them the "
        f"policy's; model {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters"
    )
    variants = {
        "fp32, logits everywhere (the recipes)": (pass_fn(model, False, False), full),
        "fp32, head at policy tokens only": (pass_fn(model, True, False), full),
        "bf16 autocast, logits everywhere": (pass_fn(model, False, True), full),
        "bf16 autocast, head at policy only": (pass_fn(model, True, True), full),
        "recipes' pass, first half of each": (pass_fn(model, False, False), half),
    }
    scoring = forward_fn(model)
    print(
        f"\nA seed: SFT {args.sft_steps} steps x {SFT_CONVERSATIONS_PER_STEP} conversations "
        f"on 2 threads; two GRPO arms at once, {args.grpo_steps} steps x "
        f"{GRPO_EPISODES_PER_STEP} episodes each on 1 thread (+ IS: TRL's scoring forward pass)"
    )
    print(
        f"{'pass':40s} | s, 1 thread | s, 2 threads | SFT min | GRPO min | "
        "+ IS min | seed min (no IS) | loss gap"
    )
    forward_one = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        forward_one[threads] = seconds_per_conversation(scoring, full, args.repeats)
    scoring_min = args.grpo_steps * GRPO_EPISODES_PER_STEP * forward_one[1] / 60
    reference = variants["fp32, logits everywhere (the recipes)"][0](*full[0])
    for name, (run, conversations) in variants.items():
        # How far the pass's loss is from the recipes' on the same conversation (cut: none).
        loss = run(*conversations[0])
        gap = f"{abs(loss - reference) / reference:.1e}" if conversations is full else "-"
        seconds = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            seconds[threads] = seconds_per_conversation(run, conversations, args.repeats)
        sft = args.sft_steps * SFT_CONVERSATIONS_PER_STEP * seconds[2] / 60
        grpo = args.grpo_steps * GRPO_EPISODES_PER_STEP * seconds[1] / 60
        print(
            f"{name:40s} | {seconds[1]:11.3f} | {seconds[2]:12.3f} | {sft:7.1f} | {grpo:8.1f} | "
            f"{scoring_min:8.1f} | {sft + grpo:16.1f} | {gap}"
        )
    print(
        f"forward pass alone (TRL's IS scoring): {forward_one[1]:.3f} s on 1 thread, "
        f"{forward_one[2]:.3f} s on 2"
    )


if __name__ == "__main__":
    main()

"""One SFT stop check, played by transformers and by a colocated vLLM engine (issue 32).

    python benchmarks/sft_checks.py --model PATH --tasks TASK_SET [--split test] [--count 50]
                                    [--threads 1] [--repeats 2]

The SFT recipe's stop rule plays greedy episodes of its check tasks every few steps. On
tau-retail a check is ~50 conversations of ~8 policy turns over a ~750-token prompt, and the
transformers backend encodes each turn's whole context again; ``--eval_backend vllm`` plays
them on an in-process vLLM engine (prefix caching) that takes the model's weights before each
check (:class:`~tool_envs.eval.colocated.ColocatedVLLMEvaluator`). This times the same check
both ways on one model, with the budgets of ``recipes/configs/tau_retail_cpu_sft.yaml``, and
says whether the two gave the same outcome and the same policy tokens on every task. The vLLM
side is timed twice or more: the first check builds the engine (the recipe pays that once);
the later ones are what every further check costs (weights reloaded, then played).

``--model`` should play multi-turn conversations (an SFT checkpoint of a tau warm start, such
as ``benchmarks/learning.py``'s ``sft`` folder): a random model ends its episodes after one
turn. Not part of CI: a transformers check of 50 tau tasks takes minutes on one core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

# benchmarks/vllm.py would shadow the vllm package: this script's folder is first on sys.path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

REPO = Path(__file__).resolve().parents[1]
SFT_CONFIG = REPO / "recipes/configs/tau_retail_cpu_sft.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a model folder")
    parser.add_argument("--tasks", type=Path, required=True, help="a task-set folder")
    parser.add_argument("--split", default="test", help="the split the checks play")
    parser.add_argument("--count", type=int, default=50, help="tasks a check plays")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--repeats", type=int, default=2, help="vLLM checks (the first builds)")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tool_envs.data import load_tasks
    from tool_envs.eval.colocated import ColocatedVLLMEvaluator
    from tool_envs.eval.heldout import HeldoutEvaluator
    from tool_envs.rollout import RolloutConfig

    torch.set_num_threads(args.threads)
    config = yaml.safe_load(SFT_CONFIG.read_text())
    budget = RolloutConfig(
        max_completion_length=config["eval_max_completion_length"],
        max_tokens_per_turn=config["eval_max_tokens_per_turn"],
    )
    tasks = load_tasks(args.tasks, split=args.split, limit=args.count)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

    by_vllm = ColocatedVLLMEvaluator(tokenizer, tasks, budget, model_path=args.model)
    vllm_seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        vllm_outcomes = by_vllm.outcomes(model)
        vllm_seconds.append(time.perf_counter() - start)
    by_transformers = HeldoutEvaluator(tokenizer, tasks, budget)
    start = time.perf_counter()
    transformers_outcomes = by_transformers.outcomes(model)
    transformers_seconds = time.perf_counter() - start

    pairs = list(zip(by_vllm.last_rollouts, by_transformers.last_rollouts, strict=True))
    same_tokens = sum(a.completion_ids == b.completion_ids for a, b in pairs)
    turns = sum(len(b.policy_texts) for _, b in pairs) / len(pairs)
    tokens = sum(len(b.completion_ids) for _, b in pairs) / len(pairs)
    print(f"\n{len(tasks)} {args.split} tasks of {args.tasks}, model {args.model}")
    print(f"{args.threads} torch thread(s); {turns:.1f} policy turns, {tokens:.0f} tokens each")
    print("| backend | check s | success | same outcome | same tokens |")
    print("|---|---:|---:|---:|---:|")
    same_outcome = sum(a == b for a, b in zip(vllm_outcomes, transformers_outcomes, strict=True))
    print(
        f"| transformers | {transformers_seconds:.1f} | {sum(transformers_outcomes)}/{len(tasks)} "
        "| - | - |"
    )
    for index, seconds in enumerate(vllm_seconds):
        what = "vLLM colocate, engine built" if index == 0 else "vLLM colocate, later check"
        print(
            f"| {what} | {seconds:.1f} | {sum(vllm_outcomes)}/{len(tasks)} | "
            f"{same_outcome}/{len(tasks)} | {same_tokens}/{len(tasks)} |"
        )
    later = min(vllm_seconds[1:] or vllm_seconds)
    print(f"a later vLLM check is {transformers_seconds / later:.1f}x as fast as transformers")


if __name__ == "__main__":
    main()

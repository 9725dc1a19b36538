"""Train a tool-using agent with GRPO on tool_envs environments.

    accelerate launch recipes/train_grpo.py --config recipes/configs/calculator_cpu_grpo.yaml
    python recipes/train_grpo.py --config CONFIG --dry_run          # check everything, no training
    python recipes/train_grpo.py --config CONFIG --preview_tasks 2  # print 2 prompts, no training

Every GRPOConfig and ModelConfig option works as a YAML key or a --flag (``--help`` lists them).
Episodes are played by tool_envs' rollout engine (transformers generation, or vLLM with
``use_vllm: true``); the env reward comes back as the ``env_reward`` reward function.

vLLM weight sync (``ToolEnvsGRPOTrainer``): TRL's own where it works (colocate on CUDA; server
mode with NCCL), otherwise vLLM's ``reload_weights`` (colocate on a CPU; server mode over HTTP,
which needs the server started with ``VLLM_SERVER_DEV_MODE=1`` and, for a model with tied
embeddings, ``--worker-extension-cls tool_envs.rollout.backends.vllm.worker.WeightSyncExtension``).
CPU configs: ``recipes/configs/calculator_cpu_grpo_vllm_{colocate,server}.yaml``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_envs.integrations.trl.recipes import EpisodeArguments, quiet_console, run_recipe

quiet_console()  # before TRL is imported: it reads TRL_EXPERIMENTAL_SILENCE then

from trl import GRPOConfig, ModelConfig, TrlParser  # noqa: E402

# The checkout these recipes are in: its configs and Makefile name the commands that make a
# missing local model or task set (tool_envs reads no checkout of its own).
PROJECT = Path(__file__).resolve().parent.parent


@dataclass
class EnvArguments(EpisodeArguments):
    """Which tasks to train on and how episodes run."""

    vllm_server_model: str | None = field(
        default=None,
        metadata={"help": "vllm_mode=server: model name to request (default: the served one)."},
    )
    rollout_engine: str = field(
        default="auto",
        metadata={
            "help": "auto | lockstep | async. async: each episode sends its next request as soon "
            "as its env step returns (vllm_mode=server); auto: async in server mode, else lockstep."
        },
    )
    vllm_weight_sync: str = field(
        default="auto",
        metadata={
            "help": "auto | load_weights | reload_weights (colocate) | nccl | http (server); "
            "auto: TRL's sync where it works (CUDA / NCCL), vLLM's reload_weights otherwise."
        },
    )
    vllm_sync_dir: str | None = field(
        default=None,
        metadata={"help": "http sync: folder the vLLM server can read (default: a temp dir)."},
    )
    unpadded_scoring: bool = field(
        default=False,
        metadata={
            "help": "Score log-probs one sequence at a time, padding cut off: on a CPU a padded "
            "batch takes the slow attention kernel (tool_envs.integrations.trl.unpadded)."
        },
    )
    heldout_split: str | None = field(
        default=None,
        metadata={
            "help": "Split of the task sources (e.g. 'heldout') to score greedily before and "
            "after training: success of both models, and an exact McNemar p-value."
        },
    )
    heldout_tasks: int = field(default=200, metadata={"help": "Most tasks from heldout_split."})
    heldout_summary: str | None = field(
        default=None,
        metadata={
            "help": "File in output_dir for the before/after comparison (default: named for "
            "the run, <output_dir's name>-summary.json, e.g. calculator-grpo-summary.json)."
        },
    )
    dry_run: bool = field(
        default=False, metadata={"help": "Validate config, tasks, envs, template."}
    )
    preview_tasks: int = field(
        default=0,
        metadata={"help": "Check the setup, print this many rendered prompts; no training."},
    )


def main(env_args: EnvArguments, training_args: GRPOConfig, model_args: ModelConfig) -> None:
    from tool_envs.rollout.config import ray_servers_started

    config = env_args.rollout_config(training_args.max_completion_length)
    with ray_servers_started(config) as config:  # servers on Ray, if asked, stop after
        train(env_args, training_args, model_args, config)


def train(
    env_args: EnvArguments,
    training_args: GRPOConfig,
    model_args: ModelConfig,
    config: Any,
) -> None:
    from trl import get_peft_config

    from tool_envs.eval.heldout import HeldoutComparison, HeldoutEvaluator, count_seen
    from tool_envs.integrations.trl import TaskRowEnvironment, make_rollout_func
    from tool_envs.integrations.trl.metrics_file import MetricsFile, one_line_logs
    from tool_envs.integrations.trl.plots import plot_reward_curve
    from tool_envs.integrations.trl.recipes import preview, to_dataset
    from tool_envs.integrations.trl.trainer import ToolEnvsGRPOTrainer
    from tool_envs.integrations.trl.user_faults import UserFaultWatch

    started = time.perf_counter()
    split = env_args.heldout_split
    rows, heldout, tokenizer = env_args.start(
        model_args.model_name_or_path,
        heldout=(split, env_args.heldout_tasks) if split else None,
        project=PROJECT,
    )
    reward_funcs = env_args.reward_functions()
    if heldout:
        overlap = count_seen(heldout, rows)
        print(
            f"held-out: {len(heldout)} tasks of split {split!r}, scored greedily before and "
            "after training"
            + (f"; WARNING: {overlap} of them are also training tasks" if overlap else "")
        )
    config = env_args.check_episodes(tokenizer, rows, config)
    if env_args.preview_tasks:
        print(preview(tokenizer, rows, env_args.preview_tasks))
    if env_args.dry_run or env_args.preview_tasks:
        what = "dry run" if env_args.dry_run else "preview"
        print(f"{what}: {len(rows)} tasks and the setup are valid; not training")
        return

    metrics_path = Path(training_args.output_dir) / "metrics.jsonl"
    resume = training_args.resume_from_checkpoint
    trainer = ToolEnvsGRPOTrainer(
        model=model_args.model_name_or_path,
        processing_class=tokenizer,
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=to_dataset(rows),
        peft_config=get_peft_config(model_args),
        rollout_func=make_rollout_func(
            config,
            vllm_server_model=env_args.vllm_server_model,
            rollout_engine=env_args.rollout_engine,
        ),
        environment_factory=TaskRowEnvironment,
        callbacks=[
            MetricsFile(metrics_path, resume_from_checkpoint=resume),
            UserFaultWatch(),
            *env_args.signal_watch(),
        ],
        vllm_weight_sync=env_args.vllm_weight_sync,
        vllm_sync_dir=env_args.vllm_sync_dir,
        unpadded_scoring=env_args.unpadded_scoring,
    )
    one_line_logs(trainer)
    main_process = trainer.accelerator.is_main_process
    if training_args.use_vllm and main_process:
        print(f"vLLM weight sync: {trainer.vllm_generation.weight_sync}", flush=True)
    # Held-out episodes run under the training episodes' budgets: a fixed short one cut every
    # tau episode (about 1,400 completion tokens with a tiny tokenizer) and scored it 0.
    evaluator = HeldoutEvaluator(tokenizer, heldout, config) if main_process and heldout else None
    unwrap = trainer.accelerator.unwrap_model
    before = evaluator.outcomes(unwrap(trainer.model), "the starting model") if evaluator else None
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(training_args.output_dir)
    if main_process:
        output = Path(training_args.output_dir)
        after = (
            evaluator.outcomes(unwrap(trainer.model), "the trained model") if evaluator else None
        )
        comparison = HeldoutComparison.of(before, after) if evaluator else None
        curve = plot_reward_curve(metrics_path, output / "reward_curve.png", heldout=comparison)
        print(f"saved the model to {training_args.output_dir} and the reward curve to {curve}")
        if comparison:
            print(comparison.table())
            seconds = round(time.perf_counter() - started, 1)
            steps = trainer.state.global_step
            name = env_args.heldout_summary or f"{output.resolve().name}-summary.json"
            summary = comparison.write(output / name, steps=steps, seconds=seconds)
            print(f"held-out comparison: {summary}")


if __name__ == "__main__":
    run_recipe(main, TrlParser((EnvArguments, GRPOConfig, ModelConfig)))

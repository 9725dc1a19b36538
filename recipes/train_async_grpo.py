"""Asynchronous GRPO on tool_envs episodes with TRL's ``AsyncGRPOTrainer`` (GPU only).

Generation and training overlap: a rollout worker (:class:`ToolEnvsRolloutWorker`) plays GRPO
groups against a vLLM server while the trainer learns from the groups already played, and
samples more than ``max_staleness`` policy versions old are dropped. TRL 1.16's trainer needs a
GPU: it forces a FlashAttention-3 kernel and pushes weights to vLLM over NCCL. On a CPU, use
``recipes/train_grpo.py`` in ``vllm_mode=server`` (per-episode async rollouts, synchronous
training).

Usage, one GPU for vLLM and one for training:

    CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Qwen2.5-1.5B-Instruct --port 8000 \\
        --logprobs-mode processed_logprobs --weight-transfer-config '{"backend":"nccl"}'
    CUDA_VISIBLE_DEVICES=0 accelerate launch recipes/train_async_grpo.py \\
        --config recipes/configs/calculator_qwen2.5_1.5b_async.yaml

``--dry_run`` checks the config, the tasks, the envs, the chat template and that the worker's
settings can be sent to its process, without a server (on a machine without a GPU, add
``--use_cpu --bf16 false``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tool_envs.integrations.trl.recipes import EpisodeArguments, quiet_console, run_recipe

quiet_console()  # before TRL is imported: the async trainer is experimental in TRL

from trl import TrlParser  # noqa: E402
from trl.experimental.async_grpo import AsyncGRPOConfig  # noqa: E402

# The checkout these recipes are in: its configs and Makefile name the commands that make a
# missing local model or task set (tool_envs reads no checkout of its own).
PROJECT = Path(__file__).resolve().parent.parent


@dataclass
class AsyncEnvArguments(EpisodeArguments):
    """The model, which tasks to train on and how the rollout worker plays them.

    (The model is named here: TRL's ``ModelConfig`` and ``AsyncGRPOConfig`` both define
    ``--dtype``; the trainer's own ``dtype`` and ``model_init_kwargs`` apply.)
    """

    model_name_or_path: str = field(
        default="Qwen/Qwen2.5-1.5B-Instruct", metadata={"help": "Hub id or local folder."}
    )
    max_inflight_groups: int = field(
        default=8, metadata={"help": "GRPO groups the worker plays at once."}
    )
    dry_run: bool = field(
        default=False, metadata={"help": "Validate config, tasks, envs, template; no training."}
    )


def build_worker(env_args: AsyncEnvArguments, args: AsyncGRPOConfig, rows: list[dict], config):
    """The rollout worker that plays ``rows`` with the episodes' ``config`` (a RolloutConfig)."""
    from tool_envs.integrations.trl.async_worker import ToolEnvsRolloutWorker
    from tool_envs.integrations.trl.rollout_func import sampling_settings

    return ToolEnvsRolloutWorker(
        tasks=rows,
        tokenizer=env_args.model_name_or_path,
        vllm_server_url=args.vllm_server_base_url,
        num_generations=args.num_generations,
        sampling=sampling_settings(args),
        config=config,
        reward_funcs=env_args.reward_functions(),
        max_staleness=args.max_staleness,
        max_inflight_groups=env_args.max_inflight_groups,
        queue_maxsize=args.queue_maxsize,
        seed=args.seed,
    )


def main(env_args: AsyncEnvArguments, args: AsyncGRPOConfig) -> None:
    from tool_envs.rollout.config import ray_servers_started

    config = env_args.rollout_config(args.max_completion_length)
    with ray_servers_started(config) as config:  # servers on Ray, if asked, stop after
        train(env_args, args, config)


def train(env_args: AsyncEnvArguments, args: AsyncGRPOConfig, config) -> None:
    from tool_envs.integrations.trl.recipes import to_dataset

    rows, _, tokenizer = env_args.start(env_args.model_name_or_path, project=PROJECT)
    # The worker loads the tokenizer itself (in its own process): the chat template travels in
    # the config, so the worker renders what the check above checked.
    template = tokenizer.chat_template if env_args.chat_template else None
    config = env_args.check_episodes(tokenizer, rows, config.replace(chat_template=template))
    worker = build_worker(env_args, args, rows, config)
    worker.check_picklable()  # what start() sends to the worker's process
    if env_args.dry_run:
        print(
            f"dry run: {len(rows)} tasks, the setup and the rollout worker are valid; not training"
        )
        return

    from trl.experimental.async_grpo import AsyncGRPOTrainer

    from tool_envs.integrations.trl.user_faults import UserFaultWatch

    trainer = AsyncGRPOTrainer(
        model=env_args.model_name_or_path,
        reward_funcs=worker.reward_funcs,  # the worker scores; the trainer's are the same
        args=args,
        train_dataset=to_dataset(rows),
        processing_class=tokenizer,
        rollout_worker=worker,
        callbacks=[UserFaultWatch(), *env_args.signal_watch()],
    )
    trainer.train()
    trainer.save_model(args.output_dir)


if __name__ == "__main__":
    run_recipe(main, TrlParser((AsyncEnvArguments, AsyncGRPOConfig)))

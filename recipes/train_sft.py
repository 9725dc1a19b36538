"""Warm-start a policy with SFT on the gold trajectories of tool_envs tasks.

    python recipes/train_sft.py --config recipes/configs/calculator_cpu_sft.yaml

Gold turns are played through each env by the rollout engine, so SFT trains on exactly the token
layout GRPO uses later, with the loss on assistant tokens only. With ``stop_at_success`` training
stops once greedy success on held-out tasks reaches it: a warm start for RL should stop
mid-learning, or every GRPO group gets equal rewards and nothing is left to learn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import ModelConfig, SFTConfig, TrlParser


@dataclass
class GoldArguments:
    """Which tasks' gold trajectories to learn from, and when to stop."""

    tasks: list[str] = field(
        default_factory=lambda: ["tool_envs/Calculator-v0"],
        metadata={
            "help": "Task sources: env ids (their own tasks), dataset folders, files or Hub ids."
        },
    )
    task_split: str = field(default="train", metadata={"help": "Split to learn from."})
    eval_split: str = field(default="test", metadata={"help": "Split for greedy success checks."})
    eval_tasks: int = field(default=50, metadata={"help": "Held-out tasks per success check."})
    eval_every: int = field(default=20, metadata={"help": "Steps between success checks."})
    stop_at_success: float | None = field(
        default=None, metadata={"help": "Stop once greedy success reaches this (e.g. 0.3)."}
    )
    max_tasks: int | None = field(default=None, metadata={"help": "Use at most this many tasks."})
    tasks_where: str = field(
        default="{}", metadata={"help": 'JSON filter on extra_info, e.g. {"difficulty": [1, 2]}.'}
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "'compact', a TRL template name, or a .jinja file."}
    )


def main(gold_args: GoldArguments, training_args: SFTConfig, model_args: ModelConfig) -> None:
    import datasets
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    from tool_envs.integrations.trl.callbacks import EnvSuccessCallback, MetricsFile
    from tool_envs.integrations.trl.recipes import (
        load_task_sources,
        parse_json_argument,
        resolve_chat_template,
    )
    from tool_envs.rollout import RolloutConfig, RolloutEngine, gold_sft_rows

    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    resolve_chat_template(tokenizer, gold_args.chat_template)
    where = parse_json_argument("tasks_where", gold_args.tasks_where)
    rows = load_task_sources(gold_args.tasks, gold_args.task_split, gold_args.max_tasks, where)
    held_out = load_task_sources(gold_args.tasks, gold_args.eval_split, gold_args.eval_tasks, where)
    with RolloutEngine(tokenizer, None, config=RolloutConfig(max_completion_length=4096)) as engine:
        train_rows = gold_sft_rows(engine, rows)
    tokens = sum(len(row["input_ids"]) for row in train_rows)
    print(f"{len(train_rows)} gold trajectories, {tokens} tokens")

    training_args.assistant_only_loss = False  # the masks are already in the rows
    success = EnvSuccessCallback(
        tokenizer, held_out, every_steps=gold_args.eval_every, stop_at=gold_args.stop_at_success
    )
    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        processing_class=tokenizer,
        args=training_args,
        train_dataset=datasets.Dataset.from_list(train_rows),
        peft_config=get_peft_config(model_args),
        callbacks=[success, MetricsFile(f"{training_args.output_dir}/metrics.jsonl")],
    )
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    tokenizer.save_pretrained(training_args.output_dir)
    print(f"saved to {training_args.output_dir}; greedy success checks: {success.history}")


if __name__ == "__main__":
    parser = TrlParser((GoldArguments, SFTConfig, ModelConfig))
    main(*parser.parse_args_and_config())

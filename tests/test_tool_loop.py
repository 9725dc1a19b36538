"""Tool-only envs inside TRL's own tool loop (environment_factory), with a real GRPO step."""

import datasets
import pytest
from rollout_helpers import tiny_grpo_config, tiny_tokenizer_and_model
from transformers.utils import get_json_schema

from tool_envs.calculator import default_splits, gold_turns
from tool_envs.calculator.tools import add
from tool_envs.data import encode_row
from tool_envs.integrations.trl.tool_loop import tool_loop_environment

trl = pytest.importorskip("trl", reason="the TRL integration needs the 'train' extra (trl)")
TASK = default_splits()["train"][0]


def test_methods_are_the_env_tools_and_run_through_the_env():
    environment_class, reward = tool_loop_environment("tool_envs/Calculator-v0")
    environment = environment_class()
    environment.reset(**TASK)
    # TRL builds each tool's schema from the bound method: it must equal the tool's own.
    assert get_json_schema(environment.add) == get_json_schema(add)
    assert environment.add(a=2, b=3) == "5"
    assert environment.divide(a=1, b=0) == "Error: cannot divide by zero"
    assert environment.add(a="x", b=1).startswith("Error: invalid arguments for add")
    answer = [{"role": "assistant", "content": gold_turns(TASK)[-1]}]
    assert reward([answer], [environment]) == [1.0]
    assert environment.reward_info["reason"] == "correct answer"
    environment.reset(**TASK)
    assert reward([[{"role": "assistant", "content": "no idea"}]], [environment]) == [0.0]


def test_grpo_step_in_trls_tool_loop(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer, model = tiny_tokenizer_and_model()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    environment_class, reward = tool_loop_environment("tool_envs/Calculator-v0")
    rows = [encode_row(r) for r in default_splits()["train"][:4]]
    config = tiny_grpo_config(tmp_path / "out", max_tool_calling_iterations=2, logging_steps=1)
    trainer = trl.GRPOTrainer(
        model=str(tmp_path / "model"),
        processing_class=tokenizer,
        args=config,
        train_dataset=datasets.Dataset.from_list(rows),
        environment_factory=environment_class,
        reward_funcs=[reward],
    )
    assert sorted(t.__name__ for t in trainer.tools) == ["add", "divide", "multiply", "subtract"]
    trainer.train()
    logged = trainer.state.log_history[0]
    assert f"rewards/{reward.__name__}/mean" in logged

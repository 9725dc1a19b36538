"""benchmarks/learning.py's ``--warm-start``: GRPO arms from an SFT model trained elsewhere."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from vllm_helpers import requires_vllm

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "learning.py"


@pytest.fixture(scope="module")
def learning():
    spec = importlib.util.spec_from_file_location("learning_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_warm_start_that_is_no_model_folder_is_named(learning, tmp_path, capsys):
    missing = tmp_path / "sft-leg"
    missing.mkdir()  # a folder, but no model in it
    with pytest.raises(SystemExit):
        learning.parse_args(["--family", "tau-retail", "--warm-start", str(missing)])
    error = capsys.readouterr().err
    assert f"--warm-start {missing}" in error and "config.json" in error


def test_every_arm_starts_from_the_warm_start(learning, tmp_path):
    warm = tmp_path / "carried-sft"
    warm.mkdir()
    (warm / "config.json").write_text("{}")
    out = tmp_path / "run"
    args = learning.parse_args(
        ["--family", "tau-retail", "--warm-start", str(warm), "--arms", "treated", "placebo"]
    )
    _, sft, arms = learning.stages(args, learning.FAMILIES["tau-retail"], out)
    assert sft.folder == warm.resolve()
    assert sorted(arms) == ["placebo", "treated"]
    for stage in arms.values():
        flag = stage.command.index("--model_name_or_path")
        assert stage.command[flag + 1] == str(warm.resolve())
        assert stage.folder.parent == out  # the arms still write into the run's folder

    without = learning.parse_args(["--family", "tau-retail"])
    _, sft, arms = learning.stages(without, learning.FAMILIES["tau-retail"], out)
    assert sft.folder == out / "sft"
    assert str(out / "sft") in arms["treated"].command


def last_value(command, flag):
    return command[len(command) - 1 - command[::-1].index(flag) + 1]


def test_the_retail_tiny_model_copies_before_sft_and_groups_digits(learning, tmp_path):
    family = learning.FAMILIES["tau-retail"]
    tiny, _, _ = learning.stages(learning.parse_args(["--family", "tau-retail"]), family, tmp_path)
    assert last_value(tiny.command, "--arch") == "llama"
    assert last_value(tiny.command, "--digits-per-token") == "3"
    assert last_value(tiny.command, "--copy-steps") == "3000"
    assert last_value(tiny.command, "--copy-reach-steps") == "1500"
    assert "--bare-words" in tiny.command
    quick = learning.parse_args(["--family", "tau-retail", "--quick"])
    tiny, _, _ = learning.stages(quick, family, tmp_path)
    assert last_value(tiny.command, "--copy-steps") == "20"  # a smoke run's few steps
    assert last_value(tiny.command, "--copy-reach-steps") == "5"
    without = "--tiny-args=--copy-steps 0 --copy-reach-steps 0"
    mine = learning.parse_args(["--family", "tau-retail", "--quick", without])
    tiny, _, _ = learning.stages(mine, family, tmp_path)
    assert last_value(tiny.command, "--copy-steps") == "0"  # the user's flags come last
    assert last_value(tiny.command, "--copy-reach-steps") == "0"
    calculator, _, _ = learning.stages(quick, learning.FAMILIES["calculator"], tmp_path)
    assert "--copy-steps" not in calculator.command


def test_a_warm_start_is_not_scored_on_customers_it_trained_on(learning, tmp_path, capsys):
    from tool_envs.data import load_tasks
    from tool_envs.tau.task_set import write_task_set

    family = learning.FAMILIES["tau-retail"]
    # Trained elsewhere on a set that held no customers out: some are the held-out ones here.
    trained_on = write_task_set(
        tmp_path / "sft-tasks", "retail", {"train": 300}, categories=["cancel"]
    )
    ours = write_task_set(
        tmp_path / "tasks",
        "retail",
        {"train": 10, "heldout": 40},
        categories=["cancel"],
        heldout_splits=["heldout"],
    )
    heldout = load_tasks(ours, split="heldout")
    kept = learning.unseen_by(family, heldout, trained_on)
    seen = set().union(*(family.customers(task) for task in load_tasks(trained_on, split="train")))
    assert 0 < len(kept) < len(heldout)  # some held-out customers were trained on, some not
    for task in heldout:
        assert (task in kept) == (not family.customers(task) & seen)
    assert all(family.customers(task) for task in heldout)  # every task names its customer

    warm = tmp_path / "sft"
    warm.mkdir()
    (warm / "config.json").write_text("{}")
    flags = ["--family", "tau-retail", "--warm-start-tasks", str(trained_on)]
    with pytest.raises(SystemExit):
        learning.parse_args(flags)  # no model said to have trained on them
    assert "needs --warm-start" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        learning.parse_args([*flags[:3], str(tmp_path / "nowhere"), "--warm-start", str(warm)])
    assert "no task set there" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        learning.parse_args(["--warm-start", str(warm), *flags[2:]])  # calculator: no customers
    assert "calculator family's tasks have no customers" in capsys.readouterr().err
    args = learning.parse_args([*flags, "--warm-start", str(warm)])
    assert args.warm_start_tasks == trained_on.resolve()


def test_the_curves_say_how_each_family_samples(learning, capsys):
    """The header once said 32 completions a step for every family; tau-retail samples 16."""
    assert learning.sampling(learning.FAMILIES["calculator"].grpo_config) == "32 per step, T=0.7"
    retail = learning.sampling(learning.FAMILIES["tau-retail"].grpo_config)
    assert retail == "16 per step, T=0.7"
    learning.print_curves({"treated": [(1, 0.0), (2, 0.5)]}, 1, retail)
    assert "(env/success_rate, 16 per step, T=0.7)" in capsys.readouterr().out


def test_a_warm_start_without_a_stage_marker_is_scored_once(learning, tmp_path):
    """A model trained elsewhere has no stage.json: its score is tied to its weights instead."""
    import numpy as np
    from safetensors.numpy import save_file

    warm = tmp_path / "carried-sft"
    warm.mkdir()
    save_file({"w": np.zeros(4, dtype=np.float32)}, str(warm / "model.safetensors"))
    key = learning.model_key(warm)
    assert key is not None and key.startswith("sha256:")
    assert learning.model_key(warm) == key  # the same weights, the same key

    evals = tmp_path / "eval"
    evals.mkdir()
    tasks = [{"extra_info": {"id": "retail-heldout-0003"}}]
    saved = {"model_stage": key, "task_ids": ["retail-heldout-0003"], "success": [1]}
    (evals / "sft.json").write_text(json.dumps(saved | {"seconds": 700.0}))
    # A hit returns the saved score; a miss would try to play episodes with a folder that holds
    # no model, and fail.
    family = learning.FAMILIES["tau-retail"]
    assert learning.evaluate_cached(family, "sft", warm, tasks, 1, evals) == ([1], 700.0)

    # Scored by another backend: not the same measurement. A miss loads the folder, which holds
    # no tokenizer: transformers says so with a ValueError.
    with pytest.raises(ValueError, match="tokenizer"):
        learning.evaluate_cached(family, "sft", warm, tasks, 1, evals, backend="vllm")

    save_file({"w": np.ones(4, dtype=np.float32)}, str(warm / "model.safetensors"))
    assert learning.model_key(warm) != key  # new weights: the old score is not reused
    (warm / "stage.json").write_text('{"command": ["train_sft"]}')
    assert learning.model_key(warm) == '{"command": ["train_sft"]}'  # a stage's marker wins
    assert learning.model_key(tmp_path / "empty") is None


def test_each_family_names_its_scoring_backend_and_steps(learning):
    tau = learning.parse_args(["--family", "tau-retail"])
    calculator = learning.parse_args(["--family", "calculator"])
    assert (tau.eval_backend, tau.grpo_steps) == ("vllm", 100)
    assert (calculator.eval_backend, calculator.grpo_steps) == ("transformers", 300)
    chosen = ["--family", "tau-retail", "--eval-backend", "transformers", "--grpo-steps", "64"]
    assert (
        vars(learning.parse_args(chosen)).items()
        >= {
            "eval_backend": "transformers",
            "grpo_steps": 64,
        }.items()
    )


@pytest.mark.vllm
@requires_vllm
def test_scoring_through_a_vllm_server_gives_the_transformers_outcomes(
    learning, vllm_tiny_model, tmp_path
):
    """The benchmark's ``--eval-backend vllm`` path: a server of its own, the same episodes."""
    import torch

    from tool_envs.calculator import default_splits

    family = learning.FAMILIES["calculator"]
    rows = default_splits()["test"][:6]
    threads = torch.get_num_threads()
    model = Path(vllm_tiny_model)
    served, departed = learning.evaluate(family, model, rows, threads, backend="vllm")
    local, _ = learning.evaluate(family, model, rows, threads)
    assert served == local
    assert len(departed) == len(rows) - sum(served)  # every failure says where it left the gold

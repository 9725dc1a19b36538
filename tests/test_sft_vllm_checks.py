"""The SFT recipe's stop checks on a colocated vLLM engine (``--eval_backend vllm``).

Each check must score the weights of its own step: the engine is built once, from the folder
training started from, and takes the model's weights before every check. So two runs of the
recipe that differ only in the backend must record the same checks, episode for episode (what
each failed episode said where it left the gold), while the two checks of a run differ (the
model changed between them): an engine left with stale weights would repeat its first check.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from recipe_helpers import REPO, run, run_here
from vllm_helpers import build_vllm_tiny_model, requires_vllm


@pytest.fixture(scope="module")
def calculator(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sft-vllm-checks")
    tasks = folder / "tasks"
    command = [sys.executable, "-m", "tool_envs.cli", "calculator-tasks", "--out", str(tasks)]
    subprocess.run([*command, "--difficulty", "1"], check=True, capture_output=True)
    return build_vllm_tiny_model(folder / "model"), tasks


def sft_args(model: Path, tasks: Path, out: Path, backend: str) -> list[object]:
    """40 SFT steps with checks at steps 20 and 40 (a target no tiny model reaches: exit 1)."""
    return [
        "train_sft.py",
        "--config", REPO / "recipes/configs/calculator_cpu_sft.yaml",
        "--model_name_or_path", model,
        "--tasks", tasks,
        "--output_dir", out,
        "--max_tasks", "200",
        "--max_steps", "40",
        "--eval_every", "20",
        "--eval_every_near", "0",
        "--eval_tasks", "8",
        "--stop_at_success", "1.0",
        "--eval_backend", backend,
    ]  # fmt: skip


def checks(out: Path) -> list[dict]:
    """The run's greedy check records, less their durations."""
    lines = (out / "greedy_checks.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in lines]


@pytest.mark.vllm
@requires_vllm
def test_checks_on_vllm_score_each_steps_weights_as_transformers_does(calculator, tmp_path):
    model, tasks = calculator
    # One thread each: at torch's default (two) these two runs took 157 s instead of 32 s on a
    # 2-core machine whose other core was busy, as it is under pytest's two workers.
    one = {"OMP_NUM_THREADS": "1"}
    on_vllm = run(*sft_args(model, tasks, tmp_path / "vllm", "vllm"), exit_code=1, env=one)
    run(*sft_args(model, tasks, tmp_path / "transformers", "transformers"), exit_code=1, env=one)
    assert "step 40: greedy success on 8 tasks = " in on_vllm
    by_vllm, by_transformers = checks(tmp_path / "vllm"), checks(tmp_path / "transformers")
    assert [check["step"] for check in by_vllm] == [20, 40]
    assert by_vllm[0]["departures"] != by_vllm[1]["departures"]  # the model moved between them
    assert by_vllm == by_transformers
    durations = [json.loads(line)["seconds"] for line in (tmp_path / "vllm/greedy_checks.jsonl")
                 .read_text().splitlines()]  # fmt: skip
    assert all(seconds > 0 for seconds in durations)


def test_checks_on_vllm_refuse_an_adapter_model_before_any_work(calculator, tmp_path):
    model, tasks = calculator
    args = sft_args(model, tasks, tmp_path / "peft", "vllm")
    out, err = run_here(*args, "--use_peft", "true", exit_code=1)
    assert "eval_backend vllm takes the full model's weights" in err
    assert "--eval_backend transformers" in err
    assert "gold trajectories" not in out  # refused before the gold episodes were played

"""benchmarks/learning.py's ``--warm-start``: GRPO arms from an SFT model trained elsewhere."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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

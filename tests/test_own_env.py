"""A user's own env, outside this repository: the docs' "Your own env" page, run as written,
and the ``module:namespace/Name-vN`` form wherever an env id is accepted."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from recipe_helpers import run, run_here
from serve_helpers import http_call

import tool_envs
from tool_envs.core.info_contract import info_problems
from tool_envs.errors import TaskRowError, UnknownEnvError
from tool_envs.eval.check import check_env_id
from tool_envs.registration import env_kwargs_for, registered_id, resolve_env_id

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
gym.register_envs(tool_envs)


def own_env_page() -> tuple[str, list[str]]:
    """The module and the commands of the docs' "Your own env" page."""
    text = (REPO / "docs" / "own-env.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```(python|bash)\n(.*?)```", text, re.S))
    commands = blocks["bash"].replace("\\\n", " ").splitlines()
    return blocks["python"], [c for c in commands if c.strip()]


@pytest.fixture(scope="module")
def own_module(tmp_path_factory):
    """``unitconv.py`` from the "Your own env" page in a folder of its own, importable here."""
    folder = tmp_path_factory.mktemp("own-env")
    (folder / "unitconv.py").write_text(own_env_page()[0], encoding="utf-8")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("unitconv", None)


def test_own_env_page_runs_as_written(own_module):
    """check, eval, tiny-model and 2 GRPO steps, from the folder that holds the module."""
    _, commands = own_env_page()
    assert commands[0] == "export PYTHONPATH=$PWD"
    # The module's folder goes in front of the PYTHONPATH there is (a checkout run from it).
    path = os.pathsep.join(filter(None, [str(own_module), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PATH": f"{BIN}:{os.environ['PATH']}"}
    outputs = []
    for command in commands[1:]:
        words = shlex.split(command)
        if words[0] == "python":
            words[0] = sys.executable
        words = [str(REPO / w) if w.startswith("recipes/") else w for w in words]
        if words[:2] == ["tool-envs", "eval"]:
            words.append("--no-progress")
        result = subprocess.run(
            words, cwd=own_module, env=env, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
        outputs.append(result.stdout)
    check, evaluation, tiny, grpo = outputs
    assert "ok   info contract held" in check and "reward 1.0" in check
    assert "30/30 finished" in evaluation
    summary = json.loads((own_module / "runs/unitconv/summary.json").read_text())
    assert summary["overall"]["success_rate"] == 1.0
    assert "saved a tiny model for unitconv:unitconv/UnitConv-v0" in tiny
    assert "unitconv/UnitConv-v0: 120 tasks" in grpo and "[done] 2 steps" in grpo
    records = (own_module / "outputs/unitconv-grpo/metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in records if "env/reward" in r] == [1, 2]
    # A cold model: no group has a reward signal, and the run says so and what to do; the
    # turns it played are counted, and the held-out summary is named for the run.
    assert "WARNING: no reward signal in any of this run's 2 steps" in grpo
    assert "recipes/train_sft.py" in grpo
    steps = [line for line in grpo.splitlines() if line.startswith("[step ")]
    assert len(steps) == 2 and not any(" turns 0 " in line for line in steps), steps
    assert (own_module / "outputs/unitconv-grpo/unitconv-grpo-summary.json").is_file()


def test_a_row_may_name_the_env_with_or_without_its_module(own_module):
    env = gym.make("unitconv:unitconv/UnitConv-v0")
    row = dict(env.unwrapped.task_splits()["test"][0])
    for env_id in ("unitconv/UnitConv-v0", "unitconv:unitconv/UnitConv-v0"):
        env.reset(options={"task": {**row, "env_id": env_id}})
        for turn in env.unwrapped.gold_turns(row):
            _, reward, terminated, _, _ = env.step(turn)
        assert terminated and reward == 1.0
    with pytest.raises(TaskRowError, match="this env is 'unitconv/UnitConv-v0'"):
        env.reset(options={"task": {**row, "env_id": "unitconv:unitconv/Other-v0"}})
    env.close()


def test_env_ids_resolve_in_either_form_and_mistakes_are_named(own_module):
    assert resolve_env_id("unitconv:unitconv/UnitConv-v0") == "unitconv/UnitConv-v0"
    assert registered_id("unitconv:unitconv/UnitConv-v0") == "unitconv/UnitConv-v0"
    kwargs = {"unitconv:unitconv/UnitConv-v0": {"parser": "hermes"}}
    assert env_kwargs_for(kwargs, "unitconv/UnitConv-v0") == {"parser": "hermes"}
    with pytest.raises(UnknownEnvError, match=r"Did you mean 'tool_envs/Calculator-v0'\?"):
        resolve_env_id("tool_envs/Calculater-v0")
    with pytest.raises(UnknownEnvError, match="cannot import 'no_such_module'"):
        resolve_env_id("no_such_module:ns/Env-v0")
    with pytest.raises(UnknownEnvError, match="module 'unitconv' did not register it"):
        resolve_env_id("unitconv:unitconv/UnitConverter-v0")


def test_the_recipes_load_an_env_source_in_module_form_and_name_a_typo(own_module):
    from tool_envs.data import load_task_sources
    from tool_envs.integrations.trl.recipes import TaskArguments, check_setup

    rows = load_task_sources(["unitconv:unitconv/UnitConv-v0"], "train")
    assert len(rows) == 120 and {r["env_id"] for r in rows} == {"unitconv:unitconv/UnitConv-v0"}
    with pytest.raises(UnknownEnvError, match="Did you mean 'tool_envs/Calculator-v0'"):
        TaskArguments(tasks=["tool_envs/Calculater-v0"]).load()

    class Tokenizer:  # check_setup fails on the env kwargs before it needs a real tokenizer
        pad_token_id = 0

    with pytest.raises(UnknownEnvError, match="cannot import 'nope'"):
        check_setup(Tokenizer(), rows, {"nope:ns/Env-v0": {}})


def test_a_recipe_names_an_unknown_config_key_and_a_task_typo_in_one_line(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        f"model_name_or_path: {tmp_path}\noutput_dir: {tmp_path / 'out'}\nuse_cpu: true\n"
        "bf16: false\ntasks: [tool_envs/Calculater-v0]\nmax_turn: 4\n"
    )
    _, err = run("train_grpo.py", "--config", config, "--dry_run", with_stderr=True, exit_code=2)
    assert err.strip() == (
        "train_grpo.py: error: unknown option 'max_turn' in the config file; "
        "did you mean 'max_turns'?"
    )
    # The console above is a user's, import warnings included; the typo is checked in this
    # process (the recipe's own code: recipe_helpers.run_here), saving a second import of TRL.
    config.write_text(config.read_text().replace("max_turn: 4\n", ""))
    _, err = run_here("train_grpo.py", "--config", config, "--dry_run", exit_code=2)
    assert "Traceback" not in err and "huggingface" not in err.lower()
    typo = "unknown env id 'tool_envs/Calculater-v0'. Did you mean 'tool_envs/Calculator-v0'?"
    assert typo in err


# -- the info contract ---------------------------------------------------------------------------


def test_check_names_a_final_reward_info_without_reward(own_module):
    import unitconv

    class Forgetful(unitconv.UnitConvEnv):
        def task_splits(self):
            splits = super().task_splits().items()
            return {k: [{**r, "env_id": "unitconv/Forgetful-v0"} for r in v] for k, v in splits}

        def default_tasks(self):
            return self.task_splits()["train"]

        def _compute_reward(self):
            reward, info = super()._compute_reward()
            del info["reward"]
            return reward, info

    gym.register("unitconv/Forgetful-v0", entry_point=Forgetful, max_episode_steps=4)
    lines: list[str] = []
    try:
        assert check_env_id("unitconv/Forgetful-v0", echo=lines.append) is False
    finally:
        del gym.registry["unitconv/Forgetful-v0"]
    assert (
        "FAIL info contract at step 2 of the gold episode: info['reward_info'] has no 'reward'"
        in (lines)
    )


def test_info_problems_name_each_broken_promise():
    good = {
        "turn": 1, "tool_calls": [], "parse_error": None, "tool_errors": [], "stats": {},
        "reward_info": {"reward": 1.0, "reason": "ok", "outcome": "success"},
    }  # fmt: skip
    assert info_problems(good, 1.0, True, False) == []
    assert info_problems({**good, "reward_info": None}, 0.0, False, False) == []
    broken = {k: v for k, v in good.items() if k != "stats"}
    broken["reward_info"] = {"reward": 0.5, "outcome": "maybe"}
    assert info_problems(broken, 1.0, True, False) == [
        "info has no 'stats'",
        "info['reward_info'] has no 'reason'",
        "info['reward_info']['reward'] is 0.5, the step's reward 1.0",
        "info['reward_info']['outcome'] 'maybe' is not one of ('success', 'failure', 'void')",
    ]
    assert info_problems({**good, "reward_info": None}, 0.0, True, False) == [
        "the episode terminated but info['reward_info'] is None"
    ]


# -- one of our env classes under another id -----------------------------------------------------


@pytest.fixture
def my_calculator():
    """CalculatorEnv registered as ``my/Calc-v0`` with other defaults (a Gymnasium habit)."""
    gym.register(
        "my/Calc-v0",
        entry_point="tool_envs.calculator.env:CalculatorEnv",
        max_episode_steps=3,
        kwargs={"parser": "hermes"},
    )
    yield "my/Calc-v0"
    del gym.registry["my/Calc-v0"]


def test_a_class_registered_under_another_id_plays_its_own_tasks(my_calculator):
    from tool_envs.data import load_task_sources

    env = gym.make(my_calculator)
    env.reset(seed=0)  # a task drawn from the class's own set
    task = env.unwrapped.task
    assert task["env_id"] == my_calculator
    for turn in env.unwrapped.gold_turns(task):
        _, reward, terminated, _, _ = env.step(turn)
    assert terminated and reward == 1.0
    splits = env.unwrapped.own_task_splits()
    assert {row["env_id"] for rows in splits.values() for row in rows} == {my_calculator}
    # Rows given explicitly still route by their env_id: one for Calculator-v0 is not its.
    theirs = gym.make("tool_envs/Calculator-v0").unwrapped.task_splits()["test"][0]
    with pytest.raises(TaskRowError, match="this env is 'my/Calc-v0'"):
        env.reset(options={"task": theirs})
    env.close()
    # Its own tasks, as eval and the recipes load them, route to it (and its defaults).
    rows = load_task_sources([my_calculator], "test", limit=3)
    assert {row["env_id"] for row in rows} == {my_calculator}
    lines: list[str] = []
    assert check_env_id(my_calculator, echo=lines.append), lines


def test_a_served_class_under_another_id_serves_its_own_tasks(my_calculator):
    from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

    with EnvServer(ServeConfig(my_calculator)) as server:
        _, answer, _ = http_call(
            f"{server.url}/Calc-v0/task", "POST", {"split": "test", "index": 0}
        )
        row = answer["task"]
        assert row["env_id"] == my_calculator
        remote = RemoteEnv(server.url)
        try:
            remote.reset(options={"task": row})
            remote.reset(seed=0)
        finally:
            remote.close()

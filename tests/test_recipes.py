"""The training recipes as users run them: configs parse, dry runs validate, short runs train."""

import json

import pytest
from recipe_helpers import REPO, assert_a_quiet_console, load_recipe, run, run_here

pytest.importorskip("trl", reason="the recipes need the 'train' extra (trl)")
from trl import GRPOConfig, ModelConfig, SFTConfig, TrlParser

from tool_envs.calculator import default_splits
from tool_envs.tiny_models import build_tiny_model_for_env

CONFIGS = sorted((REPO / "recipes/configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    # 2 layers, hidden 64: the recipes' code paths, not learning, are under test here.
    folder = tmp_path_factory.mktemp("tiny")
    return build_tiny_model_for_env("tool_envs/Calculator-v0", folder, num_layers=2, hidden_size=64)


@pytest.fixture(scope="module")
def calculator_tasks(tmp_path_factory):
    """A small generated task set in the layout of the demo's outputs/calculator-tasks."""
    from tool_envs.calculator.task_set import write_task_set

    folder = tmp_path_factory.mktemp("calculator-tasks")
    return write_task_set(folder, {"train": 64, "test": 16, "heldout": 8}, difficulty=1)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_config_names_only_known_options(config):
    import dataclasses

    import yaml

    recipe = "train_sft" if "_sft" in config.name else "train_grpo"
    recipe = "train_async_grpo" if "_async" in config.name else recipe
    module = load_recipe(recipe)
    if recipe == "train_sft":
        arg_types = (module.GoldArguments, SFTConfig, ModelConfig)
    elif recipe == "train_async_grpo":
        arg_types = (module.AsyncEnvArguments, module.AsyncGRPOConfig)
    else:
        arg_types = (module.EnvArguments, GRPOConfig, ModelConfig)
    known = {f.name for cls in arg_types for f in dataclasses.fields(cls)}
    options = yaml.safe_load(config.read_text())
    assert set(options) <= known, f"unknown options: {sorted(set(options) - known)}"
    if "cpu" in config.name:  # GPU configs cannot be instantiated on a CPU machine (bf16 checks)
        script_args, _, model_args = TrlParser(arg_types).parse_args_and_config(
            ["--config", str(config)]
        )
        assert model_args.model_name_or_path and script_args.tasks


def test_the_async_recipe_dry_run_checks_tasks_and_the_worker(tiny_model, tmp_path):
    """The GPU-only async recipe: its config, tasks, template and worker, checked on a CPU."""
    out, _ = run_here(
        "train_async_grpo.py",
        "--config",
        REPO / "recipes/configs/calculator_qwen2.5_1.5b_async.yaml",
        "--model_name_or_path",
        tiny_model,
        "--output_dir",
        tmp_path,
        "--use_cpu",
        "--bf16",
        "false",
        "--dry_run",
    )
    count = len(default_splits()["train"])
    assert f"dry run: {count} tasks, the setup and the rollout worker are valid" in out


def calculator_grpo_args(model, tasks, output_dir) -> list:
    """``train_grpo.py``'s options for the CPU calculator config on ``tasks`` with ``model``."""
    config = REPO / "recipes/configs/calculator_cpu_grpo.yaml"
    return [
        *("--config", config, "--tasks", tasks),
        *("--model_name_or_path", model, "--output_dir", output_dir),
    ]


def calculator_grpo(model, tasks, output_dir, *options, exit_code=0):
    """``train_grpo.py`` in this process with :func:`calculator_grpo_args` and ``options``:
    (stdout, stderr)."""
    arguments = calculator_grpo_args(model, tasks, output_dir)
    return run_here("train_grpo.py", *arguments, *options, exit_code=exit_code)


def test_dry_run_validates_without_training(tiny_model, calculator_tasks, tmp_path):
    out, _ = calculator_grpo(
        tiny_model, calculator_tasks, tmp_path, "--dry_run", "--preview_tasks", "1"
    )
    assert "tool_envs/Calculator-v0: 64 tasks, 4 tools, chat template OK" in out
    assert "held-out: 8 tasks of split 'heldout', scored greedily before and after" in out
    assert "WARNING" not in out  # the held-out split shares no task with the training split
    assert "prompt tokens)" in out and "<|im_start|>assistant" in out
    assert "dry run: 64 tasks" in out and not (tmp_path / "metrics.jsonl").exists()


def test_preview_tasks_prints_prompts_and_exits(tiny_model, calculator_tasks, tmp_path):
    out, _ = calculator_grpo(tiny_model, calculator_tasks, tmp_path, "--preview_tasks", 2)
    assert out.count("prompt tokens)") == 2 and "<|im_start|>assistant" in out
    assert "preview: " in out and "not training" in out
    assert not (tmp_path / "metrics.jsonl").exists() and not list(tmp_path.iterdir())


def test_a_missing_local_model_folder_names_the_command_that_makes_it(tmp_path, monkeypatch):
    from tool_envs.errors import EnvConfigError
    from tool_envs.integrations.trl.recipes import check_model_path, looks_like_local_path

    for hub_id in ["Qwen/Qwen2.5-1.5B-Instruct", "gpt2", "HuggingFaceTB/SmolLM2-135M"]:
        assert not looks_like_local_path(hub_id)
        check_model_path(hub_id)  # a Hub id is left to from_pretrained
    monkeypatch.chdir(REPO)  # "tests/nope" is a path because tests/ is a folder here
    for path in ["outputs/calculator-sft", "./model", "/no/such/model", "a/b/c", "tests/nope"]:
        assert looks_like_local_path(path), path

    # Relative paths resolve against the working folder: run in an empty one of the test's own,
    # so the demo's outputs/ in the user's checkout (after `make demo`) cannot make them exist.
    fresh = tmp_path / "fresh-checkout"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    check_model_path(str(tmp_path))  # an existing folder passes
    with pytest.raises(EnvConfigError, match=r"'/no/such/model' is a local folder") as error:
        check_model_path("/no/such/model")
    assert "Hub id" in str(error.value)

    # The recipe fails before any download attempt, naming the path and the demo's commands.
    _, err = run_here(
        "train_grpo.py",
        *("--config", REPO / "recipes/configs/calculator_cpu_grpo.yaml"),
        *("--model_name_or_path", "outputs/no-such-sft", "--output_dir", tmp_path / "out"),
        "--dry_run",
        exit_code=2,
        cwd=fresh,
    )
    assert "huggingface.co" not in err and "'outputs/no-such-sft' is a local folder" in err
    # The commands come from the project the recipes pass (their checkout), never from a checkout
    # the library looks for itself: without one, the message says to make or download it.
    with pytest.raises(EnvConfigError) as error:
        check_model_path("outputs/calculator-sft", project=REPO)
    message = str(error.value)
    assert "recipes/configs/calculator_cpu_sft.yaml" in message and "make demo" in message
    with pytest.raises(EnvConfigError, match="tool-envs tiny-model"):
        check_model_path("outputs/tiny-calculator", project=REPO)
    with pytest.raises(EnvConfigError) as error:
        check_model_path("outputs/calculator-sft")
    assert "recipes/configs" not in str(error.value) and "Make or download" in str(error.value)

    # The demo's task set, missing: named, with the command that writes it (not a Hub error).
    from tool_envs.integrations.trl.recipes import TaskArguments

    with pytest.raises(EnvConfigError) as error:
        TaskArguments(tasks=["outputs/calculator-tasks"]).load(project=REPO)
    message = str(error.value)
    assert "--tasks 'outputs/calculator-tasks' is a local folder" in message
    assert "tool-envs calculator-tasks --out outputs/calculator-tasks" in message


def test_dry_run_rejects_a_template_that_drops_tool_calls(tiny_model, calculator_tasks, tmp_path):
    template = tmp_path / "bad.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}")
    _, err = calculator_grpo(
        tiny_model,
        calculator_tasks,
        tmp_path,
        "--chat_template",
        template,
        "--dry_run",
        exit_code=2,
    )
    assert "chat template cannot be used" in err


@pytest.mark.parametrize(
    "option, value, expected",
    [
        (
            "--env_servers",
            '{"tool_envs/Calculator-v0": "DEAD"}',
            "no env server can take an episode (DEAD: cannot connect",
        ),
        (
            "--env_kwargs",
            '{"tool_envs/Calculator-v0": {"colour": 1}}',
            'cannot make tool_envs/Calculator-v0 with env_kwargs {"colour": 1}: ',
        ),
        (
            "--env_servers",
            '{"tool_envs/TauRetail-v0": "DEAD"}',
            "env_servers names ['tool_envs/TauRetail-v0'], which no task of this run uses "
            "(their envs: ['tool_envs/Calculator-v0'])",
        ),
    ],
    ids=["dead-servers", "unknown-env-kwarg", "servers-of-no-task"],
)
def test_a_dry_run_names_bad_env_settings_in_one_line(
    tiny_model, calculator_tasks, tmp_path, option, value, expected
):
    from failing_servers import killed_url

    dead = killed_url().removesuffix("/v1")
    setting = (option, value.replace("DEAD", dead))
    _, err = calculator_grpo(
        tiny_model, calculator_tasks, tmp_path, *setting, "--dry_run", exit_code=2
    )
    assert "Traceback" not in err, err
    [line] = [line for line in err.splitlines() if "error" in line.lower()]  # datasets' bars aside
    assert line.startswith("train_grpo.py: error: " + expected.replace("DEAD", dead)), err


def test_sft_then_grpo_short_runs(tiny_model, calculator_tasks, tmp_path):
    sft_dir, grpo_dir = tmp_path / "sft", tmp_path / "grpo"
    out, err = run(
        "train_sft.py",
        "--config",
        REPO / "recipes/configs/calculator_cpu_sft.yaml",
        "--tasks",
        calculator_tasks,
        "--model_name_or_path",
        tiny_model,
        "--output_dir",
        sft_dir,
        "--max_tasks",
        32,
        "--max_steps",
        2,
        "--logging_steps",
        1,
        "--eval_every",
        2,
        "--eval_tasks",
        4,
        "--per_device_train_batch_size",
        4,
        with_stderr=True,
        exit_code=1,  # 2 steps cannot reach the config's stop_at_success 0.3: said, not hidden
    )
    assert_a_quiet_console(out, err, steps=2)
    assert "32 gold trajectories" in out and "greedy success checks: [(2, " in out
    assert "SFT stopped short of its target: greedy success never reached 0.30" in err
    assert "within 2 steps" in err and "raise max_steps" in err
    summary = json.loads((sft_dir / "sft_summary.json").read_text())
    assert summary["reached"] is False and summary["steps"] == 2
    assert summary["stop_at_success"] == 0.3 and summary["checks"][0][0] == 2
    # Short of the target nothing is put back: the saved weights are the last step's.
    assert summary["saved"]["step"] == 2 and summary["rewinds"] == []
    assert summary["overshoot"] == 0.05 and summary["every_steps_near"] == 2
    assert not (sft_dir / "target-snapshot").exists()
    # The model is still saved (no work lost), for a user who wants it anyway.
    assert (sft_dir / "model.safetensors").exists() and (sft_dir / "tokenizer.json").exists()

    grpo_dir.mkdir()  # metrics of an earlier run in the same folder: moved aside, not mixed in
    (grpo_dir / "metrics.jsonl").write_text('{"step": 1, "env/reward": 0.9}\n')
    out, err = run(
        "train_grpo.py",
        *calculator_grpo_args(sft_dir, calculator_tasks, grpo_dir),
        "--max_steps",
        2,
        "--per_device_train_batch_size",
        8,
        "--num_generations",
        4,
        "--max_tasks",
        16,
        with_stderr=True,
    )
    assert_a_quiet_console(out, err, steps=2)
    assert "it/s]" in err or "s/it]" in err  # the progress bar
    [old] = grpo_dir.glob("metrics.*.jsonl")
    assert json.loads(old.read_text())["env/reward"] == 0.9
    records = [json.loads(line) for line in (grpo_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "env/success_rate" in r] == [1, 2]
    assert (grpo_dir / "reward_curve.png").stat().st_size > 1000
    assert (grpo_dir / "model.safetensors").exists()
    # Held-out greedy success before and after, paired on the same 8 unseen tasks.
    assert "Held-out greedy success (8 tasks no training step saw)" in out
    assert "exact McNemar p-value" in out
    summary = json.loads((grpo_dir / "grpo-summary.json").read_text())  # named for the run
    assert summary["n_tasks"] == 8 and summary["steps"] == 2 and summary["seconds"] > 0
    assert 0 <= summary["success_before"] <= 1 and 0 <= summary["success_after"] <= 1
    assert 0 < summary["p_value"] <= 1


def test_grpo_with_lora_saves_an_adapter(tiny_model, calculator_tasks, tmp_path):
    run(
        "train_grpo.py",
        *calculator_grpo_args(tiny_model, calculator_tasks, tmp_path),
        "--max_steps",
        1,
        "--per_device_train_batch_size",
        4,
        "--num_generations",
        4,
        "--max_tasks",
        8,
        "--max_completion_length",
        64,
        "--use_peft",
        "true",
        "--lora_r",
        4,
    )
    assert (tmp_path / "adapter_model.safetensors").exists()
    assert json.loads((tmp_path / "adapter_config.json").read_text())["r"] == 4


def test_grpo_checkpoint_resume_with_a_synced_reference_model(
    tiny_model, calculator_tasks, tmp_path
):
    common = [
        *calculator_grpo_args(tiny_model, calculator_tasks, tmp_path),
        "--per_device_train_batch_size",
        4,
        "--num_generations",
        4,
        "--max_tasks",
        8,
        "--max_completion_length",
        64,
        "--beta",
        0.04,
        "--sync_ref_model",
        "true",
        "--ref_model_sync_steps",
        1,
        "--save_strategy",
        "steps",
        "--save_steps",
        1,
    ]
    run("train_grpo.py", *common, "--max_steps", 1)
    assert (tmp_path / "checkpoint-1" / "trainer_state.json").exists()
    run(
        "train_grpo.py",
        *common,
        "--max_steps",
        2,
        "--resume_from_checkpoint",
        tmp_path / "checkpoint-1",
    )
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # Run 1 logged step 1; the resumed run continued at step 2 (not from scratch).
    assert [r["step"] for r in records if "env/reward" in r] == [1, 2]
    assert (tmp_path / "checkpoint-2").exists()


def test_reward_functions_are_named_by_import_path(tmp_path):
    from tool_envs.errors import EnvConfigError
    from tool_envs.integrations.trl import env_reward
    from tool_envs.integrations.trl.recipes import import_function

    assert import_function("tool_envs.integrations.trl:env_reward") is env_reward
    script = tmp_path / "my_rewards.py"
    script.write_text(  # a dataclass in the file: it needs the module registered while loading
        "from __future__ import annotations\nfrom dataclasses import dataclass\n\n"
        "@dataclass\nclass Weight:\n    value: float = 1.0\n\n"
        "def brevity(completion_ids, **kwargs):\n"
        "    return [-len(c) * Weight().value for c in completion_ids]\n"
    )
    assert import_function(f"{script}:brevity")(completion_ids=[[1, 2], [3]]) == [-2, -1]
    for bad, message in [
        ("env_reward", "must look like"),
        ("tool_envs.integrations.trl:nope", "has no function 'nope'"),
        (f"{tmp_path}/missing.py:f", "no file"),
    ]:
        with pytest.raises(EnvConfigError, match=message):
            import_function(bad)


def test_metrics_file_starts_a_new_file_per_run_and_a_resumed_run_continues_its_own(tmp_path):
    from types import SimpleNamespace

    from tool_envs.integrations.trl.callbacks import MetricsFile
    from tool_envs.integrations.trl.plots import _last_run

    path = tmp_path / "metrics.jsonl"
    args = SimpleNamespace(resume_from_checkpoint=None, output_dir=str(tmp_path))

    def train(steps, callback, start=0):
        state = SimpleNamespace(is_world_process_zero=True, global_step=0)
        callback.on_train_begin(args, state, None)
        for step in range(start + 1, steps + 1):
            state.global_step = step
            callback.on_log(args, state, None, logs={"env/reward": step / 10})

    train(3, MetricsFile(path, echo=False))
    train(2, MetricsFile(path, echo=False))  # a second run into the same folder
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2]
    [first] = tmp_path.glob("metrics.*.jsonl")
    assert [json.loads(line)["step"] for line in first.read_text().splitlines()] == [1, 2, 3]

    # Resumed from checkpoint-1 of the second run: step 2 is logged again, once.
    checkpoint = tmp_path / "checkpoint-1"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text('{"global_step": 1}')
    train(3, MetricsFile(path, echo=False, resume_from_checkpoint=str(checkpoint)), start=1)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3]
    assert len(list(tmp_path.glob("metrics.*.jsonl"))) == 1

    # A file that mixes runs (written before this rule) is drawn as its last run only.
    assert _last_run([(1, 0.1), (2, 0.2), (1, 0.5), (2, 0.6)]) == [(1, 0.5), (2, 0.6)]


def test_an_env_option_means_the_same_in_sft_and_grpo_configs():
    """One definition of each env option (``EnvOptions``): the same name, default and help
    (its RolloutConfig field's) in the SFT, GRPO and async GRPO recipes, read into the run's
    RolloutConfig the same way."""
    import dataclasses

    from tool_envs.integrations.trl.recipes import EnvOptions, TaskArguments
    from tool_envs.rollout.config import RolloutConfig

    names = {f.name for f in dataclasses.fields(EnvOptions)}
    names -= {f.name for f in dataclasses.fields(TaskArguments)}
    assert {"env_kwargs", "env_servers", "ray_env_servers", "max_turns", "step_timeout"} <= names

    def env_options(cls):
        fields = dataclasses.fields(cls)
        return {f.name: (f.default, f.metadata["help"]) for f in fields if f.name in names}

    gold = load_recipe("train_sft").GoldArguments
    grpo = load_recipe("train_grpo").EnvArguments
    asynchronous = load_recipe("train_async_grpo").AsyncEnvArguments
    assert env_options(gold) == env_options(grpo) == env_options(asynchronous)
    for name, (_, help_text) in env_options(gold).items():
        assert help_text.endswith(RolloutConfig.help(name)), name
    kwargs = '{"tool_envs/Calculator-v0": {"parser": "hermes"}}'
    config = gold(max_turns=3, env_kwargs=kwargs).rollout_config(256, max_tokens_per_turn=64)
    assert (config.max_turns, config.max_tokens_per_turn) == (3, 64)
    assert config.env_kwargs == {"tool_envs/Calculator-v0": {"parser": "hermes"}}
    assert grpo(max_turns=3, env_kwargs=kwargs).rollout_config(256).env_kwargs == config.env_kwargs

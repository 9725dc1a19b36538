"""benchmarks/learning.py's ``--warm-start``: GRPO arms from an SFT model trained elsewhere."""

from __future__ import annotations

import importlib.util
import json
import sys
from itertools import takewhile
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


def test_sft_starts_from_a_shared_base_instead_of_a_tiny_model_of_its_own(learning, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    out = tmp_path / "run"
    args = learning.parse_args(["--family", "tau-retail", "--seed", "9", "--base", str(base)])
    _, sft, _ = learning.stages(args, learning.FAMILIES["tau-retail"], out)
    assert last_value(sft.command, "--model_name_or_path") == str(base.resolve())
    assert last_value(sft.command, "--seed") == "9"  # SFT and GRPO still follow the seed
    without = learning.parse_args(["--family", "tau-retail"])
    _, sft, _ = learning.stages(without, learning.FAMILIES["tau-retail"], out)
    assert last_value(sft.command, "--model_name_or_path") == str(out / "tiny-model")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--base", "{empty}"], "config.json"),
        (["--base", "{model}", "--warm-start", "{model}"], "--warm-start skips SFT"),
        (["--base", "{model}", "--tiny-args", "--hidden 256"], "--tiny-args builds"),
    ],
)
def test_a_base_that_cannot_be_used_is_named(learning, tmp_path, capsys, flags, named):
    (tmp_path / "empty").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    flags = [flag.format(empty=tmp_path / "empty", model=tmp_path / "model") for flag in flags]
    with pytest.raises(SystemExit):
        learning.parse_args(["--family", "tau-retail", *flags])
    assert named in capsys.readouterr().err


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
    # A warm start trained on this very task set never saw its heldout split.
    assert learning.unseen_by(family, heldout, ours) == heldout

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


def test_each_family_names_its_scoring_backend_and_steps(learning, tmp_path):
    tau = learning.parse_args(["--family", "tau-retail"])
    calculator = learning.parse_args(["--family", "calculator"])
    assert (tau.eval_backend, tau.grpo_steps) == ("vllm", 100)
    assert (calculator.eval_backend, calculator.grpo_steps) == ("transformers", 300)
    for args in (tau, calculator):  # the SFT stop checks play on the scoring's kind of engine
        _, sft, _ = learning.stages(args, learning.FAMILIES[args.family], tmp_path)
        assert last_value(sft.command, "--eval_backend") == args.eval_backend
    chosen = ["--family", "tau-retail", "--eval-backend", "transformers", "--grpo-steps", "64"]
    assert (
        vars(learning.parse_args(chosen)).items()
        >= {
            "eval_backend": "transformers",
            "grpo_steps": 64,
        }.items()
    )


def test_each_family_names_what_plays_its_grpo_episodes(learning, tmp_path, capsys):
    """By default both families' arms play through transformers (tau-retail: the protocol of
    seeds 4-8, which has a verdict); --grpo-backend vllm plays them through TRL's colocated
    engine, sized for the whole episode, and for tau-retail says that this faster protocol is
    not validated yet."""
    for flags in (["--family", "calculator"], ["--family", "tau-retail"]):
        args = learning.parse_args(flags)
        assert args.grpo_backend == "transformers"
        _, _, arms = learning.stages(args, learning.FAMILIES[args.family], tmp_path)
        assert all("--use_vllm" not in stage.command for stage in arms.values())
    assert "not yet validated" not in capsys.readouterr().err
    tau = learning.FAMILIES["tau-retail"]
    args = learning.parse_args(["--family", "tau-retail", "--grpo-backend", "vllm"])
    assert "faster protocol, not yet validated" in capsys.readouterr().err
    _, _, arms = learning.stages(args, tau, tmp_path)
    for stage in arms.values():
        assert last_value(stage.command, "--use_vllm") == "true"
        assert last_value(stage.command, "--vllm_mode") == "colocate"
        context = int(last_value(stage.command, "--vllm_max_model_length"))
        assert context > tau.max_completion_length  # the prompt and the whole episode fit


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


# ---------------------------------------------------------------------------- resuming an arm


def test_the_arms_and_sft_save_checkpoints_to_resume_from(learning, tmp_path):
    family = learning.FAMILIES["tau-retail"]
    args = learning.parse_args(["--family", "tau-retail"])
    _, sft, arms = learning.stages(args, family, tmp_path)
    for stage, every in [*((arm, "10") for arm in arms.values()), (sft, "50")]:
        flags = list(stage.checkpoint_flags)
        assert last_value(flags, "--save_steps") == every
        assert last_value(flags, "--save_total_limit") == "1"
        assert "--save_steps" not in stage.command  # not what a finished stage is matched by
    args = learning.parse_args(["--family", "tau-retail", "--checkpoint-every", "0"])
    _, sft, arms = learning.stages(args, family, tmp_path)
    assert not any(stage.checkpoint_flags for stage in arms.values()) and sft.checkpoint_flags


def test_a_stage_finished_without_checkpoints_is_reused_by_a_run_with_them(
    learning, tmp_path, capsys
):
    """A warm start trained before stages saved checkpoints is the same stage: its marker, which
    has the command without them, still matches."""
    stage = learning.Stage("sft", ["train", "--seed", "1"], tmp_path / "sft")
    stage.folder.mkdir()
    (stage.folder / "stage.json").write_text(
        json.dumps({"command": stage.command, "env": {}, "seconds": 7000.0})
    )
    flagged = stage._replace(checkpoint_flags=learning.checkpoint_flags(50))
    assert learning.run_stage(flagged, 1, True, tmp_path) == (7000.0, True)


def test_an_edited_config_makes_a_new_stage(learning, tmp_path):
    """--reuse once kept a finished stage whose YAML had changed: the command's text had not."""
    config = tmp_path / "sft.yaml"
    config.write_text("learning_rate: 1.0e-4\n")
    stage = learning.Stage("sft", ["train", "--config", str(config)], tmp_path / "sft")
    record = {**learning.stage_identity(stage), "seconds": 1.0}
    assert learning.is_record_of(record, stage)
    config.write_text("learning_rate: 2.0e-4\n")
    assert not learning.is_record_of(record, stage)


def test_the_sft_checks_of_a_resumed_run_are_counted_once(learning, tmp_path):
    log = tmp_path / "sft.log"
    lines = [
        f"step {step}: greedy success on 50 tasks = {value}"
        for step, value in [
            (50, 0.0),
            (100, 0.02),
            (110, 0.1),  # the killed leg; its checkpoint was step 100
            (110, 0.12),
            (120, 0.3),  # the resumed leg redoes 110
        ]
    ]
    log.write_text("\n".join(lines))
    assert learning.sft_stop_history(log) == [(50, 0.0), (100, 0.02), (110, 0.12), (120, 0.3)]


def test_a_negative_checkpoint_interval_is_named(learning, capsys):
    with pytest.raises(SystemExit):
        learning.parse_args(["--checkpoint-every", "-5"])
    assert "--checkpoint-every -5" in capsys.readouterr().err


def test_only_a_complete_checkpoint_of_the_same_command_is_resumed(learning, tmp_path):
    flags = learning.checkpoint_flags(10)
    stage = learning.Stage(
        "grpo-treated", ["train", "--seed", "1"], tmp_path, checkpoint_flags=flags
    )
    started = {"command": stage.command, "env": {}, "legs": [{"started": 0.0, "from_step": 0}]}
    (tmp_path / "stage-started.json").write_text(json.dumps(started))
    for step in (10, 20):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-10" / "trainer_state.json").write_text("{}")
    # checkpoint-20 has no trainer_state.json (written last): the kill came mid-save.
    assert learning.unfinished_checkpoint(stage) == tmp_path / "checkpoint-10"
    assert learning.unfinished_checkpoint(stage._replace(checkpoint_flags=())) is None
    assert learning.unfinished_checkpoint(stage._replace(command=["train", "--seed", "2"])) is None
    assert learning.unfinished_checkpoint(stage._replace(env={"X": "1"})) is None


STALLING_REWARD = '''
import time
from pathlib import Path

HERE = Path(__file__).parent


def stall_after_checkpoint_2(completion_ids, **kwargs):
    """Length as the reward (advantages that move the weights); in the run to be killed, the
    first batch after checkpoint-2 is complete announces it and waits to be killed."""
    saved = HERE / "arm" / "checkpoint-2" / "trainer_state.json"
    if (HERE / "stall").exists() and saved.exists():
        (HERE / "stalled").touch()
        time.sleep(600)
    return [-float(len(ids)) for ids in completion_ids]
'''


def test_a_killed_arm_resumes_from_its_checkpoint_to_the_same_weights(learning, tmp_path, capsys):
    """An arm killed after its step-2 checkpoint, rerun with --reuse, ends bit-identical to an
    arm never killed: the kill cost only the steps after the checkpoint."""
    from concurrent.futures import ThreadPoolExecutor, wait

    import psutil
    from safetensors.numpy import load_file

    from tool_envs.calculator.task_set import write_task_set
    from tool_envs.tiny_models import build_tiny_model_for_env

    model = build_tiny_model_for_env(
        "tool_envs/Calculator-v0", tmp_path / "model", num_layers=2, hidden_size=64
    )
    tasks = write_task_set(tmp_path / "tasks", {"train": 32, "test": 8}, difficulty=1)
    (tmp_path / "rewards.py").write_text(STALLING_REWARD)

    def arm(folder):
        command = [sys.executable, "recipes/train_grpo.py", "--config"]
        command += [str(BENCHMARK.parents[1] / "recipes/configs/calculator_cpu_grpo.yaml")]
        command += ["--model_name_or_path", str(model), "--tasks", str(tasks)]
        command += ["--output_dir", str(folder), "--heldout_split", "", "--max_tasks", "16"]
        command += ["--per_device_train_batch_size", "4", "--num_generations", "4"]
        command += ["--max_completion_length", "64", "--max_steps", "4"]
        command += ["--reward_funcs", f"{tmp_path / 'rewards.py'}:stall_after_checkpoint_2"]
        flags = learning.checkpoint_flags(2)
        return learning.Stage(folder.name, command, folder, checkpoint_flags=flags)

    logs = tmp_path / "logs"
    logs.mkdir()
    learning.run_stage(arm(tmp_path / "never-killed"), 1, False, logs)

    killed = arm(tmp_path / "arm")
    (tmp_path / "stall").touch()
    with ThreadPoolExecutor(1) as pool:
        first_leg = pool.submit(learning.run_stage, killed, 1, False, logs)
        for _ in range(300):  # the event, not a time, decides when to kill
            if (tmp_path / "stalled").exists() or first_leg.done():
                break
            wait([first_leg], timeout=1)
        assert (tmp_path / "stalled").exists(), "the first leg never reached its step-3 batch"
        for child in psutil.Process().children(recursive=True):
            if str(killed.folder) in child.cmdline():  # not a session's vLLM server
                child.kill()
        with pytest.raises(SystemExit, match="failed"):  # the leg died: no stage.json
            first_leg.result(timeout=60)
    assert not (killed.folder / "stage.json").exists()
    assert (killed.folder / "checkpoint-2" / "trainer_state.json").is_file()

    (tmp_path / "stall").unlink()
    capsys.readouterr()
    seconds, reused = learning.run_stage(killed, 1, True, logs)
    assert not reused and seconds > 0
    printed = capsys.readouterr().out
    assert f"resuming the unfinished run from {killed.folder / 'checkpoint-2'}" in printed
    assert f"--resume_from_checkpoint {killed.folder / 'checkpoint-2'}" in printed
    marker = json.loads((killed.folder / "stage.json").read_text())
    assert marker["legs"] == 2 and marker["command"] == killed.command
    assert not list(killed.folder.glob("checkpoint-*"))  # done: the final model is the folder
    steps = [
        json.loads(line)["step"]
        for line in (killed.folder / "metrics.jsonl").read_text().splitlines()
        if "env/reward" in json.loads(line)
    ]
    assert steps == [1, 2, 3, 4]
    resumed = load_file(str(killed.folder / "model.safetensors"))
    never = load_file(str(tmp_path / "never-killed" / "model.safetensors"))
    start = load_file(str(Path(model) / "model.safetensors"))
    assert resumed.keys() == never.keys()
    assert all((resumed[name] == never[name]).all() for name in never)
    assert any((never[name] != start[name]).any() for name in never)  # the steps moved weights

    # Reused from here on, as any finished stage.
    assert learning.run_stage(killed, 1, True, logs) == (marker["seconds"], True)


def test_the_stages_that_run_alone_may_use_more_threads(learning):
    assert learning.parse_args(["--threads", "1"]).sft_threads == 1
    chosen = learning.parse_args(["--threads", "1", "--sft-threads", "2"])
    assert (chosen.threads, chosen.sft_threads) == (1, 2)


def test_the_placebo_shuffles_every_reward_term_of_a_rollout_together(learning, tmp_path):
    def placebo_rewards(*flags: str) -> list[str]:
        args = learning.parse_args(["--family", "tau-retail", "--arms", "placebo", *flags])
        _, _, arms = learning.stages(args, learning.FAMILIES["tau-retail"], tmp_path)
        command = arms["placebo"].command
        start = len(command) - 1 - command[::-1].index("--reward_funcs")
        return list(takewhile(lambda word: not word.startswith("--"), command[start + 1 :]))

    # The family's config trains on the env's reward plus env_progress: both are shuffled.
    assert placebo_rewards() == [
        "benchmarks/learning.py:shuffled_env_reward",
        "benchmarks/learning.py:shuffled_env_progress",
    ]
    # A variant's --reward_funcs replaces the config's, and so does its placebo.
    alone = "--reward_funcs tool_envs.integrations.trl:env_reward --reward_weights 1.0"
    assert placebo_rewards("--variant", "plain", "--grpo-args", alone) == [
        "benchmarks/learning.py:shuffled_env_reward"
    ]

    shares = [i / 10 for i in range(10)]  # rollout i: reward i, share i / 10
    state = type("State", (), {"global_step": 7})()
    rewards = learning.shuffled_env_reward([None] * 10, list(range(10)), trainer_state=state)
    moved = learning.shuffled_env_progress([None] * 10, env_progress=shares, trainer_state=state)
    assert rewards != list(range(10)), "a shuffle that moves nothing is no placebo"
    assert moved == [reward / 10 for reward in rewards]


def test_a_reward_function_without_a_placebo_is_named(learning, tmp_path):
    args = learning.parse_args(
        ["--family", "tau-retail", "--variant", "mine", "--grpo-args", "--reward_funcs my.py:score"]
    )
    with pytest.raises(SystemExit, match=r"my\.py:score"):
        learning.stages(args, learning.FAMILIES["tau-retail"], tmp_path)


def test_a_quick_run_scores_each_arm_and_adds_up_its_time(learning, tmp_path):
    """The whole pipeline, shrunk (--quick), on Calculator from a shared base: SFT starts from the
    base, each arm is scored as soon as it has trained (inside the arms' wall time), and the
    total is the sum of the stages this run ran, the base's build not among them."""
    from tool_envs.tiny_models import build_tiny_model_for_env

    base = build_tiny_model_for_env(
        "tool_envs/Calculator-v0", tmp_path / "base", num_layers=2, hidden_size=64
    )
    out = tmp_path / "run"
    flags = ["--family", "calculator", "--quick", "--base", str(base), "--out", str(out)]
    assert learning.main([*flags, "--threads", "1", "--parallel", "2"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["base"] == str(Path(base).resolve())
    assert list(summary["commands"]) == ["sft", "grpo-treated-2", "grpo-placebo-2"]  # no tiny
    sft_command = summary["commands"]["sft"]
    assert sft_command[sft_command.index("--model_name_or_path") + 1] == summary["base"]
    assert [row["arm"] for row in summary["rows"]] == ["treated", "placebo"]
    timings = summary["timings_s"]
    ran = ("task set", "SFT", "eval SFT", "GRPO arms, scored (wall)")
    assert timings["total"] == pytest.approx(sum(timings[name] for name in ran))
    for arm in ("treated", "placebo"):
        assert 0 < timings[f"eval {arm} (in wall)"] < timings["GRPO arms, scored (wall)"]
        assert (out / "eval" / f"grpo-{arm}-2.json").is_file()

"""The GRPO recipe with real vLLM on a CPU: both modes train, and the sampler follows the trainer.

Every run is ``recipes/train_grpo.py`` in its own process (vLLM allows one in-process engine per
process), with TRL's real GRPOTrainer and a real vLLM engine: colocated, or a server on
127.0.0.1 started here. The check is TRL's own: ``sampling/sampling_logp_difference/mean`` is the
mean |trainer logprob - sampler logprob| over the step's policy tokens, so after every weight
sync it is ~0 when vLLM holds the trainer's current weights. Measured on 2 cores (float32):
~2e-7 synced; with no sync 0.11 and 0.15 on steps 2-3; with only a tied head left stale
0.007-0.014. The bound SYNCED (1e-3) separates all three.

Shrunk values, and why: 3 steps (two syncs after real updates), 4 rollouts of one task group
per step, 128 completion tokens (each run well under a minute). The learning rate is 1e-3 so
one step moves the policy enough for a stale engine to show, and the reward counts odd token
ids, so every group has reward variance and every step really updates the weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from vllm_helpers import MAX_MODEL_LEN, build_vllm_tiny_model, vllm_test

pytestmark = vllm_test

REPO = Path(__file__).resolve().parents[1]
SYNCED = 1e-3
DIFF = "sampling/sampling_logp_difference/mean"
REWARD = """
def odd_tokens(completion_ids, **kwargs):
    return [sum(t % 2 for t in c) / max(len(c), 1) for c in completion_ids]
"""


# The reward above, also noting the rendezvous port of the run's colocated engine beside itself.
PORT_NOTING_REWARD = (
    REWARD
    + """
import os
from pathlib import Path

def odd_tokens_noting_the_port(completion_ids, **kwargs):
    Path(__file__).with_suffix(".port").write_text(os.environ["MASTER_PORT"])
    return odd_tokens(completion_ids)
"""
)
TRL_FIXED_PORTS = {29500, 23456, 12355, 12345}  # trl.trainer.utils._find_free_port's candidates


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trl-vllm")
    reward = folder / "odd_reward.py"
    reward.write_text(REWARD)
    return SimpleNamespace(
        tied=build_vllm_tiny_model(folder / "tied", tied=True),
        untied=build_vllm_tiny_model(folder / "untied", tied=False),
        reward=f"{reward}:odd_tokens",
    )


@pytest.fixture(scope="module")
def untied_server(models):
    """A server over the untied model, WITHOUT tool_envs' worker extension (plain reload)."""
    from tool_envs.rollout.backends.vllm.launch import VLLMServerProcess

    with VLLMServerProcess(
        models.untied, served_model_name="tiny-untied", max_model_len=MAX_MODEL_LEN
    ) as server:
        yield server


def train(model: Path, output_dir: Path, reward: str, *extra: object, ok: bool = True):
    """One short recipe run; returns (stdout + stderr, metrics records, seconds)."""
    command = [
        sys.executable,
        str(REPO / "recipes/train_grpo.py"),
        "--config",
        str(REPO / "recipes/configs/calculator_cpu_grpo_vllm_colocate.yaml"),
        "--model_name_or_path",
        str(model),
        "--output_dir",
        str(output_dir),
        "--max_steps",
        "3",
        "--per_device_train_batch_size",
        "4",
        "--num_generations",
        "4",
        "--max_completion_length",
        "128",
        "--max_tasks",
        "16",
        "--learning_rate",
        "1e-3",
        "--reward_funcs",
        reward,
        *map(str, extra),
    ]
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=400, cwd=REPO, env=env)
    seconds = time.monotonic() - start
    log = result.stdout + result.stderr
    if not ok:
        assert result.returncode != 0, log[-3000:]
        return log, [], seconds
    assert result.returncode == 0, log[-6000:]
    metrics = output_dir / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    return log, records, seconds


def train_on_server(model: Path, url: str, output_dir: Path, reward: str, *extra: object, **kw):
    """``train`` in ``vllm_mode=server`` against the server at ``url``."""
    server = ("--vllm_mode", "server", "--vllm_server_base_url", url)
    return train(model, output_dir, reward, *server, *extra, **kw)


def assert_sampler_follows_trainer(records: list[dict], model: Path, output_dir: Path) -> None:
    """Every step logged a near-zero sampler/trainer gap, and the weights really moved."""
    from safetensors.torch import load_file

    steps = [r for r in records if DIFF in r]
    assert [r["step"] for r in steps] == [1, 2, 3]
    gaps = [r[DIFF] for r in steps]
    print(f"{output_dir.name}: sampling_logp_difference/mean per step {gaps}")
    assert all(gap < SYNCED for gap in gaps), gaps
    # Steps 1 and 2 updated the policy, so the syncs before steps 2 and 3 carried new weights.
    assert all(r["grad_norm"] > 0 for r in steps[:2]), [r["grad_norm"] for r in steps]
    before, after = (
        load_file(model / "model.safetensors"),
        load_file(output_dir / "model.safetensors"),
    )
    moved = max((after[name] - before[name]).abs().max().item() for name in before)
    assert moved > 1e-4, moved


def check_server_recipe(model: Path, url: str, tmp_path: Path, reward: str, label: str) -> None:
    """A server-mode run syncs its weights over HTTP and keeps the sampler in step."""
    log, records, seconds = train_on_server(model, url, tmp_path / "out", reward)
    assert "vLLM weight sync: http" in log
    assert_sampler_follows_trainer(records, model, tmp_path / "out")
    print(f"server {label}: {seconds:.1f} s")


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_colocate_recipe_keeps_the_sampler_in_step(models, tmp_path, tied):
    model = models.tied if tied else models.untied
    log, records, seconds = train(model, tmp_path / "out", models.reward)
    assert "vLLM weight sync: reload_weights" in log
    assert_sampler_follows_trainer(records, model, tmp_path / "out")
    print(f"colocate {'tied' if tied else 'untied'}: {seconds:.1f} s")


def test_two_colocate_runs_started_together_both_train(models, tmp_path):
    """TRL 1.16 gives a single-process colocated engine port 29500 whenever it looks free, so two
    runs started together (learning.py's GRPO arms) collided and one died with EADDRINUSE. Each
    run now takes a port of its own from the OS's ephemeral range."""
    from concurrent.futures import ThreadPoolExecutor

    folders = [tmp_path / "first", tmp_path / "second"]
    for folder in folders:
        folder.mkdir()
        (folder / "reward.py").write_text(PORT_NOTING_REWARD)

    def run(folder: Path) -> list[dict]:
        reward = f"{folder / 'reward.py'}:odd_tokens_noting_the_port"
        return train(models.untied, folder / "out", reward)[1]

    with ThreadPoolExecutor(len(folders)) as pool:
        for records, folder in zip(pool.map(run, folders), folders, strict=True):
            assert [r["step"] for r in records if DIFF in r] == [1, 2, 3], folder.name
    ports = [int((folder / "reward.port").read_text()) for folder in folders]
    assert ports[0] != ports[1]
    assert not TRL_FIXED_PORTS & set(ports), ports


def test_server_recipe_with_the_worker_extension_keeps_a_tied_head_in_step(models, tmp_path):
    from tool_envs.rollout.backends.vllm.launch import VLLMServerProcess
    from tool_envs.rollout.backends.vllm.worker import EXTENSION_PATH

    with VLLMServerProcess(
        models.tied,
        served_model_name="tiny-tied",  # not the folder name: the served name must be asked for
        max_model_len=MAX_MODEL_LEN,
        extra_args=["--worker-extension-cls", EXTENSION_PATH],
    ) as server:
        check_server_recipe(models.tied, server.url, tmp_path, models.reward, "tied")


def test_server_recipe_untied_with_plain_reload(models, untied_server, tmp_path):
    check_server_recipe(models.untied, untied_server.url, tmp_path, models.reward, "untied")


def test_a_tied_model_is_refused_by_a_server_without_the_extension(models, untied_server, tmp_path):
    log, _, _ = train_on_server(
        models.tied, untied_server.url, tmp_path / "out", models.reward, "--max_steps", 1, ok=False
    )
    assert "WeightSyncError" in log and "--worker-extension-cls" in log
    assert "tool_envs.rollout.backends.vllm.worker.WeightSyncExtension" in log


def test_a_wrong_server_model_name_fails_naming_both(models, untied_server, tmp_path):
    log, _, _ = train_on_server(
        models.untied,
        untied_server.url,
        tmp_path / "out",
        models.reward,
        *("--vllm_server_model", "not-served", "--max_steps", 1),
        ok=False,
    )
    assert "not-served" in log and "tiny-untied" in log


# --------------------------------------------------------------------------- choosing the sync


def test_without_nccl_the_sync_is_http_and_nccl_is_refused_clearly():
    from tool_envs.rollout.backends.vllm.launch import on_cpu
    from tool_envs.rollout.backends.vllm.weight_sync import (
        WeightSyncError,
        choose_weight_sync,
        nccl_available,
    )

    if nccl_available() or not on_cpu():
        pytest.skip("this machine has CUDA: TRL's own syncs are chosen there")
    assert choose_weight_sync("server") == "http"
    assert choose_weight_sync("colocate") == "reload_weights"
    with pytest.raises(WeightSyncError, match="needs CUDA and torch's NCCL backend"):
        choose_weight_sync("server", "nccl")
    with pytest.raises(WeightSyncError, match="weight_loader"):
        choose_weight_sync("colocate", "load_weights")
    with pytest.raises(WeightSyncError, match="does not exist for vllm_mode='colocate'"):
        choose_weight_sync("colocate", "http")


def test_sleep_mode_on_a_cpu_is_refused_before_vllm_starts(models, tmp_path):
    from tool_envs.rollout.backends.vllm.launch import on_cpu

    if not on_cpu():
        pytest.skip("vLLM has sleep mode on a GPU")
    log, _, _ = train(
        models.tied, tmp_path / "out", models.reward, "--vllm_enable_sleep_mode", "true", ok=False
    )
    assert "vllm_enable_sleep_mode=True needs a GPU" in log
    assert "Loading safetensors checkpoint" not in log  # refused before vLLM loaded anything


def test_sleep_mode_wakes_the_kv_cache_around_rollouts():
    """The GPU path, in order (a recording engine: vLLM has no sleep mode on a CPU)."""
    from tool_envs.integrations.trl.rollout_func import engine_awake

    calls = []

    class Engine:
        def wake_up(self, tags):
            calls.append(("wake_up", tags))

        def sleep(self, level):
            calls.append(("sleep", level))

    class Generation:
        llm = Engine()
        _llm_weights_sleeping = True

        def sync_weights(self):
            calls.append(("sync_weights",))

    args = SimpleNamespace(use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True)
    trainer = SimpleNamespace(args=args, vllm_generation=Generation())
    with engine_awake(trainer):
        calls.append(("rollouts",))
    assert calls == [
        ("sync_weights",),
        ("wake_up", ["kv_cache"]),
        ("rollouts",),
        ("sleep", 2),
    ]
    assert trainer.vllm_generation._llm_weights_sleeping is True


# --------------------------------------------------------------------------- sampling options


def _grpo_args(**overrides):
    from trl import GRPOConfig

    return GRPOConfig(output_dir="unused", use_cpu=True, bf16=False, report_to="none", **overrides)


def test_trl_sampling_options_reach_the_rollouts():
    from tool_envs.integrations.trl.rollout_func import sampling_settings

    args = _grpo_args(
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        min_p=0.05,
        repetition_penalty=1.1,
        generation_kwargs={"presence_penalty": 0.5},
    )
    settings = sampling_settings(args, stop_token_ids=[2])
    assert (settings.temperature, settings.top_p, settings.top_k) == (0.7, 0.9, 20)
    assert (settings.min_p, settings.repetition_penalty) == (0.05, 1.1)
    assert dict(settings.generation_kwargs) == {"presence_penalty": 0.5}
    assert settings.stop_token_ids == (2,)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"vllm_structured_outputs_regex": r"\d+"}, "vllm_structured_outputs_regex"),
        ({"generation_kwargs": {"structured_outputs": {"regex": "a"}}}, "structured outputs"),
        ({"generation_kwargs": {"guided_json": {}}}, "structured outputs"),
        ({"generation_kwargs": {"max_tokens": 9, "n": 2}}, r"\['max_tokens', 'n'\]"),
    ],
)
def test_sampling_options_the_engine_cannot_honour_are_refused(overrides, message):
    from tool_envs.integrations.trl.rollout_func import sampling_settings

    with pytest.raises(ValueError, match=message):
        sampling_settings(_grpo_args(**overrides))


def test_structured_outputs_are_refused_before_vllm_starts(models, tmp_path):
    log, _, _ = train(
        models.untied,
        tmp_path / "out",
        models.reward,
        "--vllm_structured_outputs_regex",
        r"\d+",
        ok=False,
    )
    assert "cannot be used with the tool_envs rollout_func" in log
    assert "Loading safetensors checkpoint" not in log

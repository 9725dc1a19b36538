"""Both vLLM backends against the real engine: multi-turn Calculator episodes through RolloutEngine.

The engines are the session fixtures of tests/conftest.py: ``colocate_llm`` (an in-process
``vllm.LLM``, built as TRL's colocate mode builds it) and ``vllm_server`` (a real OpenAI-compatible
server on 127.0.0.1), both serving one tiny model fitted briefly to gold trajectories, so greedy
episodes call tools and take several turns. The transformers backend and a plain forward pass of
the same weights are the references.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import pytest
import torch
from vllm_helpers import ENV_ID, MAX_MODEL_LEN, reference_logprobs, vllm_test

from tool_envs.calculator import default_splits
from tool_envs.rollout import RolloutConfig, RolloutEngine, SamplingSettings, TransformersBackend
from tool_envs.rollout.backends.base import Generation, GenerationServerError
from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend
from tool_envs.rollout.backends.vllm.server import VLLMServerBackend
from tool_envs.rollout.template import ChatTemplateRenderer

pytestmark = vllm_test

ROWS = default_splits()["train"][:4]
CONFIG = RolloutConfig(max_completion_length=240, max_tokens_per_turn=40)
GREEDY = SamplingSettings(temperature=0.0)
# float32 on both sides (vLLM's CPU kernels vs transformers' eager ops): seen up to ~1e-5.
LOGPROB_TOLERANCE = 5e-5
SAMPLED = {
    "plain": SamplingSettings(temperature=0.7, seed=3),
    "filtered": SamplingSettings(
        temperature=0.7, top_k=8, top_p=0.8, min_p=0.05, repetition_penalty=1.1, seed=3
    ),
}


@pytest.fixture(scope="module")
def tokenizer(vllm_tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(vllm_tiny_model)


@pytest.fixture(scope="module")
def hf_model(vllm_tiny_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(vllm_tiny_model, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def server_backend(vllm_server):
    with VLLMServerBackend(vllm_server.url, timeout=120) as backend:
        yield backend


@pytest.fixture(params=["colocate", "server"])
def vllm_backend(request):
    if request.param == "colocate":
        return VLLMColocateBackend(request.getfixturevalue("colocate_llm"))
    return request.getfixturevalue("server_backend")


def play(tokenizer, backend, rows, settings, config=CONFIG):
    torch.manual_seed(0)  # the transformers backend samples with torch's global generator
    with RolloutEngine(tokenizer, backend, settings, config) as engine:
        return engine.run(rows)


@pytest.fixture(scope="module")
def hf_greedy(tokenizer, hf_model):
    return play(tokenizer, TransformersBackend(hf_model), ROWS, GREEDY)


def policy_spans(rollout) -> list[list[int]]:
    spans: list[list[int]] = []
    for i, (token, mask) in enumerate(zip(rollout.completion_ids, rollout.env_mask, strict=True)):
        if mask and (i == 0 or not rollout.env_mask[i - 1]):
            spans.append([])
        if mask:
            spans[-1].append(token)
    return spans


def check_contract(tokenizer, rollout, config) -> None:
    """Masks, per-turn budgets, stop tokens and finish reasons as RolloutEngine documents them."""
    n = len(rollout.completion_ids)
    assert len(rollout.env_mask) == n and len(rollout.logprobs) == n
    assert set(rollout.env_mask) <= {0, 1} and rollout.env_mask[0] == 1
    spans = policy_spans(rollout)
    assert len(spans) == len(rollout.policy_texts)
    eos = tokenizer.eos_token_id
    for k, span in enumerate(spans):
        assert 0 < len(span) <= config.max_tokens_per_turn
        assert eos not in span[:-1]  # a stop token ends its turn
        if k < len(spans) - 1:
            assert span[-1] == eos  # turns the env answered ended on a stop token, kept
    # Env tokens carry logprob 0; policy tokens a real, non-positive logprob.
    for lp, mask in zip(rollout.logprobs, rollout.env_mask, strict=True):
        assert lp == 0.0 if not mask else lp <= 0.0
    if rollout.finish in ("terminated", "turn_limit"):
        assert spans[-1][-1] == eos
    elif rollout.finish == "turn_tokens":
        assert len(spans[-1]) == config.max_tokens_per_turn and spans[-1][-1] != eos
    else:
        assert rollout.finish == "completion_budget" and n <= config.max_completion_length


def test_greedy_multi_turn_episodes_keep_the_contract_and_match_transformers(
    tokenizer, vllm_backend, hf_greedy
):
    rollouts = play(tokenizer, vllm_backend, ROWS, GREEDY)
    for rollout, reference in zip(rollouts, hf_greedy, strict=True):
        check_contract(tokenizer, rollout, CONFIG)
        assert len(rollout.policy_texts) >= 2, "the fitted model should call tools"
        assert rollout.completion_ids == reference.completion_ids
        assert rollout.env_mask == reference.env_mask and rollout.finish == reference.finish


def test_a_turn_that_hits_its_token_cap_ends_the_episode(tokenizer, vllm_backend):
    config = RolloutConfig(max_completion_length=240, max_tokens_per_turn=6)
    rollouts = play(tokenizer, vllm_backend, ROWS[:2], GREEDY, config)
    for rollout in rollouts:
        check_contract(tokenizer, rollout, config)
        assert rollout.finish == "turn_tokens" and rollout.reward == 0.0


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_sampled_logprobs_equal_a_forward_pass(tokenizer, hf_model, vllm_backend, name):
    """Processed logprobs (base.py's definition) of a real engine vs ONE forward pass."""
    settings = SAMPLED[name]
    rollouts = play(tokenizer, vllm_backend, ROWS, settings)
    assert max(len(r.policy_texts) for r in rollouts) >= 2
    for rollout in rollouts:
        check_contract(tokenizer, rollout, CONFIG)
        ids = rollout.prompt_ids + rollout.completion_ids
        expected = reference_logprobs(hf_model, ids, len(rollout.prompt_ids), settings)
        got = [lp for lp, m in zip(rollout.logprobs, rollout.env_mask, strict=True) if m]
        want = [lp for lp, m in zip(expected, rollout.env_mask, strict=True) if m]
        assert got == pytest.approx(want, abs=LOGPROB_TOLERANCE)


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_transformers_backend_logprobs_equal_the_same_forward_pass(tokenizer, hf_model, name):
    settings = SAMPLED[name]
    rollouts = play(tokenizer, TransformersBackend(hf_model), ROWS, settings)
    for rollout in rollouts:
        ids = rollout.prompt_ids + rollout.completion_ids
        expected = reference_logprobs(hf_model, ids, len(rollout.prompt_ids), settings)
        got = [lp for lp, m in zip(rollout.logprobs, rollout.env_mask, strict=True) if m]
        want = [lp for lp, m in zip(expected, rollout.env_mask, strict=True) if m]
        assert got == pytest.approx(want, abs=LOGPROB_TOLERANCE)


# --------------------------------------------------------------------------- context length


def padded_task(tokenizer, row, prompt_tokens: int) -> dict:
    """``row`` with its question padded until the rendered prompt has ``prompt_tokens`` tokens."""
    renderer = ChatTemplateRenderer(tokenizer)
    env = gym.make(ENV_ID)
    try:
        words = 0
        while True:
            prompt = [dict(m) for m in row["prompt"]]
            prompt[-1]["content"] = "x " * words + prompt[-1]["content"]
            task = {**row, "prompt": prompt}
            env.reset(options={"task": task})
            n = len(renderer.prompt_ids(env.unwrapped.messages, env.unwrapped.tools))
            if n >= prompt_tokens:
                return task
            words += max(1, (prompt_tokens - n) // 2)
    finally:
        env.close()


def test_an_overlong_context_ends_only_its_own_episode(tokenizer, vllm_backend, hf_greedy):
    assert vllm_backend.max_model_len == MAX_MODEL_LEN
    too_long = padded_task(tokenizer, ROWS[0], MAX_MODEL_LEN + 10)
    near_limit = padded_task(tokenizer, ROWS[1], MAX_MODEL_LEN - 8)
    rollouts = play(tokenizer, vllm_backend, [too_long, ROWS[2], near_limit, ROWS[3]], GREEDY)

    over, normal_a, near, normal_b = rollouts
    assert over.finish == "context_length" and over.completion_ids == [] and over.reward == 0.0
    assert "max_model_len of 1024" in over.reward_info["reason"]
    assert near.finish == "context_length" and near.reward == 0.0
    assert len(near.prompt_ids) + len(near.completion_ids) <= MAX_MODEL_LEN
    # The rest of the batch plays on as it does alone.
    for rollout, alone in ((normal_a, hf_greedy[2]), (normal_b, hf_greedy[3])):
        assert rollout.completion_ids == alone.completion_ids and len(rollout.policy_texts) >= 2


# --------------------------------------------------------------------------- construction


def test_server_backend_asks_the_server_for_its_model(vllm_server, server_backend):
    assert server_backend.model == "tiny" and server_backend.max_model_len == MAX_MODEL_LEN
    with pytest.raises(GenerationServerError, match=r"'nope' is not served .*\['tiny'\]"):
        VLLMServerBackend(vllm_server.url, "nope")
    with VLLMServerBackend(vllm_server.url + "/v1/", "tiny") as named:
        assert named.generate([[1, 2, 3]], [2], GREEDY)[0].finish_reason in ("stop", "length")


def test_colocate_backend_reads_the_engine_and_sends_every_setting(colocate_llm):
    backend = VLLMColocateBackend(colocate_llm)
    assert backend.max_model_len == MAX_MODEL_LEN
    settings = SamplingSettings(
        temperature=0.5,
        min_p=0.1,
        repetition_penalty=1.2,
        seed=7,
        # logit_bias as JSON gives it (a YAML config, a flag): string keys, sent as token ids.
        generation_kwargs={"top_k": 5, "presence_penalty": 0.5, "logit_bias": {"3": 1}},
    )
    kwargs = backend.sampling_kwargs(16, settings, 2)
    assert kwargs["min_p"] == 0.1 and kwargs["repetition_penalty"] == 1.2
    assert kwargs["top_k"] == 5 and kwargs["presence_penalty"] == 0.5 and kwargs["seed"] == 9
    assert kwargs["logit_bias"] == {3: 1.0}
    with pytest.raises(ValueError, match="logit_bias must map token ids"):
        bad = SamplingSettings(generation_kwargs={"logit_bias": {"im_end": 5}})
        backend.sampling_kwargs(16, bad, 0)
    # A prompt with no budget is not sent (vLLM rejects max_tokens=0).
    out = backend.generate([[1, 2, 3], [4, 5], [6]], [4, 1, 0], settings)
    assert [len(g.token_ids) <= m for g, m in zip(out, [4, 1, 0], strict=True)] == [True] * 3
    assert out[2] == Generation([], [], "length")
    with pytest.raises(ValueError, match=r"\['max_tokens'\] cannot be set"):
        backend.generate([[1]], [2], SamplingSettings(generation_kwargs={"max_tokens": 9}))


def test_the_engine_guard_hides_only_what_breaks_vllms_start_up_scan():
    """llvmlite's ffi ``lib`` (numba, via bm25s) has a ``__dict__`` that is no mapping."""
    pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
    import llvmlite.binding.ffi as ffi

    from tool_envs.rollout.backends.vllm.launch import (
        _unscannable_attributes,
        in_process_engine_guard,
    )

    found = {(name, type(value).__name__) for _, name, value in _unscannable_attributes()}
    assert ("lib", "_lib_wrapper") in found
    import builtins

    original = ffi.lib
    with in_process_engine_guard():
        assert "lib" not in vars(ffi)
        assert "BaseException" in vars(builtins)  # classes (mappingproxy __dict__) stay
    assert ffi.lib is original


def test_a_server_started_on_chosen_cores_runs_only_there():
    """What ``VLLMServerProcess(cpus=...)`` starts its server under: a process started in the
    block, and the processes that one starts, run on those cores; the caller keeps its own."""
    import os
    import subprocess
    import sys

    from tool_envs.rollout.backends.vllm.launch import _cpu_affinity

    allowed = os.sched_getaffinity(0)
    chosen = {min(allowed)}
    grandchild = "import os, subprocess, sys; print(sorted(os.sched_getaffinity(0)))"
    with _cpu_affinity(chosen):
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}])",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    assert child.stdout.strip() == str(sorted(chosen))
    assert os.sched_getaffinity(0) == allowed
    with pytest.raises(ValueError, match="must be a non-empty subset"), _cpu_affinity({10_000}):
        pass


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper counts as gone)."""
    from pathlib import Path

    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_server_process_dies_with_a_killed_parent():
    """A parent killed with SIGKILL runs no ``close()``; the server it started (here a cheap
    sleeper started the way ``VLLMServerProcess`` starts vLLM) must still stop."""
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    import tool_envs

    parent_code = (
        "import sys, time\n"
        "from tool_envs.rollout.backends.vllm.launch import _start_server_process\n"
        "child = _start_server_process([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    root = str(Path(tool_envs.__file__).resolve().parents[1])  # the tool_envs under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True, env=env
    )
    child = None
    try:
        line = parent.stdout.readline()  # "" if the parent failed before starting the child
        assert line.strip().isdigit(), f"the parent printed no child pid: {line!r}"
        child = int(line)
        assert _running(child)
        parent.kill()
        parent.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child), "the server process outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait(timeout=30)
        parent.stdout.close()
        if child is not None and _running(child):
            os.killpg(child, signal.SIGKILL)  # its own session: the group id is its pid


def test_vllm_tokenizes_a_grouped_digit_tiny_model_as_transformers_does(tmp_path):
    """A ``llama`` tiny model keeps its tokenizer.json (digits in groups of three) in vLLM too."""
    from transformers import AutoTokenizer
    from vllm.tokenizers import get_tokenizer

    from tool_envs.tiny_models import build_tiny_model_for_env

    folder = build_tiny_model_for_env(
        "tool_envs/TauRetail-v0",
        tmp_path / "llama-3",
        digits_per_token=3,
        architecture="llama",
        vocab_size=4096,  # room for every 3-digit group as one token
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        num_kv_heads=1,
    )
    text = "cancel #W1234567 for noah_brown_6181, 2 items at $54.04"
    ours, theirs = AutoTokenizer.from_pretrained(folder), get_tokenizer(str(folder))
    assert theirs.encode(text) == ours.encode(text)
    assert ours.tokenize("#W1234567")[-3:] == ["123", "456", "7"]


def test_held_out_scoring_through_a_server_plays_the_transformers_episodes(
    tokenizer, hf_model, server_backend
):
    """HeldoutEvaluator.outcomes_of: the same greedy episodes from a server as from the model."""
    from tool_envs.eval.heldout import HeldoutEvaluator

    evaluator = HeldoutEvaluator(tokenizer, ROWS, CONFIG)
    served = evaluator.outcomes_of(server_backend)
    served_ids = [rollout.completion_ids for rollout in evaluator.last_rollouts]
    assert served == evaluator.outcomes(hf_model)
    assert served_ids == [rollout.completion_ids for rollout in evaluator.last_rollouts]

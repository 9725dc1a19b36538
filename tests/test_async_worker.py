"""ToolEnvsRolloutWorker feeds TRL's AsyncGRPOTrainer queue from a real vLLM server on a CPU.

The trainer itself needs a GPU (FlashAttention-3 kernels, NCCL weight transfer), so the consumer
here is TRL's own ``RolloutQueueDataset``: the iterable the trainer's dataloader reads the queue
through (health checks, staleness filter and metrics included).
"""

from __future__ import annotations

import itertools
import queue
import time
from collections import defaultdict

import numpy as np
import pytest
from rollout_helpers import stub_rollout
from vllm_helpers import FaultProxy, vllm_test

from tool_envs.calculator import default_splits
from tool_envs.integrations.trl.async_worker import ToolEnvsRolloutWorker, group_samples
from tool_envs.integrations.trl.rewards import env_reward
from tool_envs.rollout import RolloutConfig, SamplingSettings
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.player import Played

pytestmark = vllm_test


def trl_async():
    """TRL's async GRPO module, imported by the tests that use it (7-8 s of imports that the
    other test worker would pay at collection for nothing)."""
    return pytest.importorskip(
        "trl.experimental.async_grpo.async_grpo_trainer", reason="needs TRL >= 1.16 (train extra)"
    )


ROWS = default_splits()["train"][:6]
CONFIG = RolloutConfig(max_completion_length=240, max_tokens_per_turn=40)


def worker(vllm_server, vllm_tiny_model, **overrides) -> ToolEnvsRolloutWorker:
    settings = {
        "tasks": ROWS,
        "tokenizer": str(vllm_tiny_model),
        "vllm_server_url": vllm_server.url,
        "num_generations": 4,
        "sampling": SamplingSettings(temperature=1.0),
        "config": CONFIG,
        "max_inflight_groups": 2,
        "in_process": True,
        **overrides,
    }
    return ToolEnvsRolloutWorker(**settings)


def consume(worker: ToolEnvsRolloutWorker, count: int, version=lambda: 0, max_staleness=3):
    """Read ``count`` samples the way AsyncGRPOTrainer's dataloader does."""
    from accelerate import PartialState

    PartialState()  # TRL's dataset logs through accelerate, which the trainer has set up
    metrics: defaultdict[str, list[float]] = defaultdict(list)
    dataset = trl_async().RolloutQueueDataset(
        rollout_queue=worker.rollout_buffer,
        model_version_fn=version,
        check_health_fn=worker.check_health,
        stale_after_s=120,
        metrics=metrics,
        max_staleness=max_staleness,
        poll_interval_s=1.0,
    )
    return list(itertools.islice(iter(dataset), count)), metrics


def test_the_worker_fills_the_trainers_queue_with_scored_tagged_samples(
    vllm_server, vllm_tiny_model
):
    rollouts = worker(vllm_server, vllm_tiny_model)
    protocol = trl_async().RolloutWorkerProtocol
    members = {n for n in vars(protocol) if not n.startswith("_")} | set(protocol.__annotations__)
    assert all(hasattr(rollouts, name) for name in members), members
    rollouts.start()
    try:
        first, _ = consume(rollouts, 8)
        rollouts.update_model_version(1)
        later, metrics = consume(rollouts, 16, version=lambda: 1)
    finally:
        rollouts.stop()
    for sample in first + later:
        mask, ids = sample["completion_mask"], sample["input_ids"]
        assert len(mask) == len(ids) == len(sample["old_log_probs"])
        assert mask.sum() > 0 and mask[0] == 0  # prompt tokens are context
        assert np.all(sample["old_log_probs"][mask == 0] == 0)
        assert np.all(sample["old_log_probs"][mask == 1] <= 0)
    assert metrics["sample/staleness_mean"]
    # Groups: advantages are TRL's (zero mean per group; std-normalised where rewards differ).
    by_group = defaultdict(list)
    for sample in first + later:
        by_group[sample["group_id"]].append(sample["advantage"])
    assert any(len(a) == 4 for a in by_group.values())
    for advantages in by_group.values():
        if len(advantages) == 4:
            assert abs(sum(advantages)) < 1e-6
    values = []
    while not rollouts.metrics_queue.empty():
        values.append(rollouts.metrics_queue.get_nowait())
    assert values and all("rollout/void_rate" in v and "env/success_rate" in v for v in values)


def test_the_sample_tag_is_the_version_its_group_started_under(vllm_server, vllm_tiny_model):
    rollouts = worker(vllm_server, vllm_tiny_model, max_inflight_groups=1)
    rollouts.update_model_version(7)
    rollouts.start()
    try:
        sample = rollouts.rollout_buffer.get(timeout=120)
    finally:
        rollouts.stop()
    assert sample.model_version == 7 and sample.enqueued_at is not None


def test_groups_older_than_max_staleness_are_dropped(vllm_server, vllm_tiny_model):
    """A group that outlives ``max_staleness`` policy versions gives no sample, and says so."""
    rollouts = worker(vllm_server, vllm_tiny_model, max_staleness=0, max_inflight_groups=1)
    rollouts.start()
    try:
        values = {}
        for version in range(1, 200):  # every group finishes after at least one bump
            rollouts.update_model_version(version)
            try:
                values = rollouts.metrics_queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if "rollout/dropped_stale" in values:
                break
    finally:
        rollouts.stop()
    assert values.get("rollout/dropped_stale", 0) > 0
    assert rollouts.rollout_buffer.empty()


# The in-process runner thread ends by raising the group's error (as a spawned one would exit).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_group_more_void_than_max_void_fraction_stops_the_worker(vllm_server, vllm_tiny_model):
    """As a GRPO batch stops the lockstep recipe: every generation request fails (a 200 that is
    not JSON), so each group is wholly void; the worker ends with the group's RolloutVoidError,
    which the trainer's health check raises, and no sample of a void group is queued."""
    proxy = FaultProxy(vllm_server.url)
    proxy.faults.extend(["malformed"] * 10_000)
    config = CONFIG.replace(max_void_fraction=0.5)
    rollouts = worker(
        vllm_server,
        vllm_tiny_model,
        vllm_server_url=proxy.url,
        config=config,
        max_inflight_groups=1,
    )
    rollouts.start()
    try:
        deadline = time.monotonic() + 300  # a bound for the old worker, which never stops
        with pytest.raises(
            RuntimeError,
            match=r"RolloutVoidError: 4 of 4 episodes are void "
            r"\(more than max_void_fraction=0\.5\): \{'generation': 4\}",
        ):
            while time.monotonic() < deadline:
                rollouts.check_health(stale_after_s=600)
                time.sleep(0.2)
    finally:
        rollouts.stop()
        proxy.close()
    assert rollouts.rollout_buffer.empty()


def test_a_spawned_worker_refuses_what_it_cannot_pickle(vllm_server, vllm_tiny_model):
    rollouts = worker(
        vllm_server, vllm_tiny_model, in_process=False, reward_funcs=[lambda **kw: [0.0]]
    )
    with pytest.raises(TypeError, match="picklable"):
        rollouts.start()


def test_a_spawned_worker_plays_in_its_own_process(vllm_server, vllm_tiny_model):
    rollouts = worker(vllm_server, vllm_tiny_model, in_process=False, max_inflight_groups=1)
    rollouts.start()
    try:
        samples, _ = consume(rollouts, 4)
        rollouts.check_health(stale_after_s=600)
    finally:
        rollouts.stop()
    assert len(samples) == 4


def rollout(reward: float, outcome: str) -> Rollout:
    info = {"outcome": outcome, "void_cause": "judge"} if outcome == "void" else {}
    return stub_rollout(reward, outcome, reward_info=info)


def test_void_episodes_give_no_sample_and_the_rest_are_scored_among_themselves():
    group = [rollout(1.0, "success"), rollout(0.0, "void"), rollout(0.0, "failure")]
    samples, values = group_samples(Played.of(group, [env_reward]), model_version=3, group_id=9)
    assert [s.advantage for s in samples] == pytest.approx([1.0, -1.0])  # (r - 0.5) / 0.5
    assert values["rollout/void_rate"] == pytest.approx(1 / 3)
    assert all(s.model_version == 3 and s.group_id == 9 for s in samples)
    assert samples[0].completion == [{"role": "assistant", "content": "a"}]
    assert list(samples[0].completion_mask) == [0, 0, 1, 1]

"""The asynchronous engine keeps the lockstep engine's books; faults void only their episode."""

import threading

import gymnasium as gym
import pytest
from rollout_helpers import ReplayBackend, tiny_tokenizer_and_model

import tool_envs
from tool_envs.rollout import (
    AsyncRolloutEngine,
    Policy,
    RolloutConfig,
    RolloutEngine,
    RolloutVoidError,
    play,
)
from tool_envs.rollout.engine import Rollout

gym.register_envs(tool_envs)
# The package's own envs: test files register test domains under the same namespace, and which
# of them are imported before this line depends on the order files are collected in.
FAMILIES = [
    env_id
    for env_id, spec in gym.registry.items()
    if env_id.startswith("tool_envs/") and str(spec.entry_point).startswith("tool_envs.")
]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer_and_model()[0]


def family_tasks(env_id: str, count: int = 2) -> tuple[list[dict], list[list[str]]]:
    """``count`` tasks of the env with gold turns and distinct first user messages."""
    env = gym.make(env_id)
    try:
        tasks, scripts, seen = [], [], set()
        for task in env.unwrapped.tasks:
            first = task["prompt"][-1]["content"]
            turns = env.unwrapped.gold_turns(task)
            if turns and first not in seen and not any(first in s or s in first for s in seen):
                tasks.append(task)
                scripts.append(turns)
                seen.add(first)
            if len(tasks) == count:
                return tasks, scripts
    finally:
        env.close()
    pytest.fail(f"{env_id} has fewer than {count} gold tasks with distinct first messages")


def untimed(value):
    """reward_info without wall-clock measurements (a judge's seconds differ run to run)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not k.endswith(("seconds", "_ms"))}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def same_books(a: Rollout, b: Rollout, logprob_tolerance: float = 0.0) -> None:
    """Same rollout; ``logprob_tolerance`` allows a real server's batch-dependent float noise."""
    for name in (
        "env_id", "task_id", "prompt_ids", "completion_ids", "env_mask", "reward",
        "finish", "outcome", "turns", "stats", "policy_texts", "messages",
    ):  # fmt: skip
        assert getattr(a, name) == getattr(b, name), name
    assert untimed(a.reward_info) == untimed(b.reward_info)
    if logprob_tolerance == 0.0 or a.logprobs is None or b.logprobs is None:
        assert a.logprobs == b.logprobs
    else:
        assert len(a.logprobs) == len(b.logprobs)
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) <= (
            logprob_tolerance
        )


@pytest.mark.parametrize("env_id", FAMILIES)
def test_async_and_lockstep_engines_give_identical_rollouts(tokenizer, env_id):
    """Every env family: same tokens, masks, logprobs, rewards, messages, whatever the order
    in which the async episodes' requests come back."""
    if env_id.startswith("tool_envs/Tau2"):
        pytest.importorskip("tau2", reason="the tau2 extra is not installed")
    tasks, scripts = family_tasks(env_id)
    tasks, scripts = tasks * 2, scripts * 2  # a group of two per task, as GRPO plays them
    config = RolloutConfig(max_completion_length=65536, max_tokens_per_turn=8192)
    with RolloutEngine(tokenizer, ReplayBackend(tokenizer, tasks, scripts), config=config) as e:
        lockstep = e.run(tasks, seeds=[1, 2, 1, 2])
    # The first task's requests come back last, so async episodes finish out of order.
    slow = ReplayBackend(tokenizer, tasks, scripts, delays=[0.05, 0.0])
    with AsyncRolloutEngine(tokenizer, slow, config=config) as engine:
        rollouts = engine.run(tasks, seeds=[1, 2, 1, 2])
    assert all(r.finish == "terminated" and r.outcome == "success" for r in lockstep)
    for a, b in zip(lockstep, rollouts, strict=True):
        same_books(a, b)
    assert engine.requests == sum(r.turns for r in rollouts)


def test_a_slow_env_step_does_not_hold_back_the_other_episodes(tokenizer):
    """While one episode's env step is blocked, the others play all their turns (in lockstep
    they would wait at every turn). Proved by events, not by a race on wall time: that step
    waits until every other episode has finished, which only an engine that does not wait for
    it lets happen (an engine that did would leave it blocked until the 60 s bound)."""
    tasks, scripts = family_tasks("tool_envs/Calculator-v0", 3)
    sleeper = tasks[0]["prompt"][-1]["content"]
    others_done = threading.Event()
    lock = threading.Lock()
    finished: list[str] = []
    released_by_the_others: list[bool] = []

    class SlowFirstTask(gym.Wrapper):
        def step(self, action):
            question = self.env.unwrapped.task["prompt"][-1]["content"]
            if question == sleeper and not released_by_the_others:
                released_by_the_others.append(others_done.wait(60))  # a bound for failures
            out = super().step(action)
            if out[2] or out[3]:
                with lock:
                    finished.append(question)
                    if len(set(finished) - {sleeper}) == len(tasks) - 1:
                        others_done.set()
            return out

    config = RolloutConfig(env_wrappers=(SlowFirstTask,))
    with AsyncRolloutEngine(
        tokenizer, ReplayBackend(tokenizer, tasks, scripts), config=config
    ) as e:
        rollouts = e.run(tasks)
    assert all(r.success for r in rollouts)
    assert released_by_the_others == [True], "the other episodes waited for the blocked step"
    assert finished[-1] == sleeper and len(finished) == len(tasks)
    assert rollouts[0].turns == len(scripts[0]) >= 3


class Faulty(gym.Wrapper):
    """Hangs (until ``release``; ``hanging`` is set meanwhile) or raises on the first step of
    the episodes whose question contains ``marker``."""

    marker = ""
    mode = "hang"
    release = threading.Event()
    hanging = threading.Event()

    def step(self, action):
        if self.marker and self.marker in self.env.unwrapped.task["prompt"][-1]["content"]:
            if self.mode == "hang":
                self.hanging.set()
                try:
                    self.release.wait(120)  # a bound for failures: the test releases it
                finally:
                    self.hanging.clear()
            else:
                raise ConnectionResetError("the tool server went away")
        return super().step(action)


@pytest.mark.parametrize("engine_class", [RolloutEngine, AsyncRolloutEngine])
@pytest.mark.parametrize("mode", ["hang", "raise"])
def test_a_hung_or_failing_env_step_voids_only_its_episode(tokenizer, engine_class, mode):
    tasks, scripts = family_tasks("tool_envs/Calculator-v0", 3)
    Faulty.marker, Faulty.mode = tasks[1]["prompt"][-1]["content"], mode
    Faulty.release.clear()
    # Healthy steps take about a millisecond; 5 s leaves a loaded machine room.
    config = RolloutConfig(env_wrappers=(Faulty,), step_timeout=5.0)
    backend = ReplayBackend(tokenizer, tasks, scripts)
    try:
        with engine_class(tokenizer, backend, config=config) as engine:
            first, broken, third = engine.run(tasks)
            # The batch is back while the step still hangs: it did not wait for it.
            assert Faulty.hanging.is_set() == (mode == "hang")
            assert first.success and third.success
            assert broken.void and broken.finish == "void" and broken.reward == 0.0
            cause = "env_timeout" if mode == "hang" else "env_error"
            assert broken.reward_info["void_cause"] == cause
            if mode == "raise":
                assert (
                    "ConnectionResetError: the tool server went away"
                    in broken.reward_info["reason"]
                )
            # The abandoned env is never handed out again: a second run plays normally.
            Faulty.marker = ""
            assert all(r.success for r in engine.run(tasks))
    finally:
        Faulty.release.set()


def test_a_batch_that_is_mostly_void_raises_with_every_rollout_kept(tokenizer):
    tasks, scripts = family_tasks("tool_envs/Calculator-v0", 2)
    Faulty.marker, Faulty.mode = "", "raise"

    class AlwaysFails(gym.Wrapper):
        def step(self, action):
            raise OSError("sandbox could not start")

    config = RolloutConfig(env_wrappers=(AlwaysFails,), max_void_fraction=0.5)
    policy = Policy(tokenizer, ReplayBackend(tokenizer, tasks, scripts), engine="lockstep")
    with pytest.raises(RolloutVoidError, match=r"2 of 2 episodes are void.*env_error") as err:
        play(tasks, None, policy, config)
    assert len(err.value.rollouts) == 2 and err.value.causes == {"env_error": 2}
    with RolloutEngine(tokenizer, policy.backend, config=config) as engine:  # the engine plays on
        assert [r.void for r in engine.run(tasks)] == [True, True]


def test_the_async_engine_refuses_a_batched_backend(tokenizer):
    class BatchedOnly:
        def generate(self, prompts, max_tokens, settings):
            return []

    with pytest.raises(TypeError, match="VLLMServerBackend"):
        AsyncRolloutEngine(tokenizer, BatchedOnly())


def test_run_works_inside_a_running_event_loop(tokenizer):
    """A notebook or an async trainer already runs a loop; run() must still work there."""
    import asyncio

    tasks, scripts = family_tasks("tool_envs/Calculator-v0", 1)

    async def inside():
        with AsyncRolloutEngine(tokenizer, ReplayBackend(tokenizer, tasks, scripts)) as engine:
            return engine.run(tasks)

    (rollout,) = asyncio.run(inside())
    assert rollout.success

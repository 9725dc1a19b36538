"""Remote episodes at GPU-batch concurrency cost no thread per connection.

Every :class:`~tool_envs.serve.RemoteEnv` of a process shares one event loop thread for its
WebSocket connection (a synchronous client held a reader thread per connection), so the async
engine playing hundreds of remote episodes runs on its bounded step pool and that one thread.
Counted while every session is still held (the engine keeps its envs, and their sessions, for
the next batch), so a thread per connection could not hide.
"""

import threading

import gymnasium as gym
import pytest
from rollout_helpers import tiny_tokenizer_and_model
from serve_helpers import ServerProcess
from test_async_engine import family_tasks

import tool_envs
from tool_envs.rollout import AsyncRolloutEngine, RolloutConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
EPISODES = 256  # enough that a thread per connection is unmistakable; 1,024 in env_scale's run
THREADS = 64  # the trainer process's bound (issue 71)


def test_the_async_engine_plays_hundreds_of_remote_episodes_on_few_threads():
    tasks, scripts = family_tasks(CALCULATOR, EPISODES)
    tokenizer = tiny_tokenizer_and_model()[0]
    with (
        ServerProcess(CALCULATOR, "--max-sessions", "1000", "--inline-steps") as a,
        ServerProcess(CALCULATOR, "--max-sessions", "1000", "--inline-steps") as b,
    ):
        config = RolloutConfig(
            max_completion_length=4096, env_servers={CALCULATOR: [a.url, b.url]}, env_workers=16
        )
        with AsyncRolloutEngine(tokenizer, None, config=config) as engine:
            rollouts = engine.run(tasks, seeds=list(range(EPISODES)), scripts=scripts)
            held = a.health()["active_sessions"] + b.health()["active_sessions"]
            threads = threading.active_count()
        assert [r for r in rollouts if not r.success] == []
        assert held == EPISODES  # every session open while the threads were counted
        assert threads <= THREADS, [t.name for t in threading.enumerate()][:20]

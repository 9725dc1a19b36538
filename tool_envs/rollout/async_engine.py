"""Per-episode asynchronous rollouts against a continuous-batching server.

In lockstep (:class:`~tool_envs.rollout.engine.RolloutEngine`) every turn waits for the slowest
env step and the longest generation of the batch. Tool-use envs are slow and uneven (a simulated
user answers in seconds, a sandbox run in hundreds of milliseconds), so the generation server
idles exactly when it should be busy. Here each episode sends its next request the moment its
env step returns; a continuous-batching server (vLLM) batches whatever requests are in flight.

Env steps are ordinary synchronous Gymnasium calls, run off the event loop on a thread pool
sized for I/O-bound work; the resets and steps of envs on env servers
(:class:`~tool_envs.serve.RemoteEnv`, unwrapped) are awaited instead, so a step that waits on a
server holds no thread (1,024 remote episodes in flight: within 64 threads). The token
bookkeeping is the lockstep engine's own (:class:`~tool_envs.rollout.engine.EpisodeRunner`), so
both produce the same :class:`Rollout` for the same turns.

Faults end only their own episode, as void (see :mod:`tool_envs.core.outcome`): an env step that
raises or outlives ``RolloutConfig.step_timeout`` (cause ``env_timeout`` / ``env_error``), a
generation request that fails after the backend's retries or times out (cause ``generation``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from tool_envs.rollout.backends.base import (
    AsyncGenerationBackend,
    Generation,
    GenerationServerError,
    SamplingSettings,
)
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import EpisodeRunner, Rollout, _Episode
from tool_envs.rollout.episode import Scripts, Seeds, TaskRows

T = TypeVar("T")


class BusyClock:
    """How long at least one generation request was in flight (the server had work), and how
    many requests and env steps a run made."""

    def __init__(self) -> None:
        self.busy_seconds = 0.0
        self.requests = 0
        self.env_steps = 0
        self._in_flight = 0
        self._since = 0.0

    def enter(self) -> None:
        if self._in_flight == 0:
            self._since = time.perf_counter()
        self._in_flight += 1
        self.requests += 1

    def leave(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self.busy_seconds += time.perf_counter() - self._since


class AsyncRolloutEngine(EpisodeRunner):
    """Plays task rows to the end, each episode on its own; returns :class:`Rollout` s in order.

    Args:
        tokenizer: The policy's tokenizer (its chat template renders prompts and env turns).
        backend: An :class:`AsyncGenerationBackend`, e.g. a ``VLLMServerBackend``.
        settings: Sampling settings; stop tokens default to the tokenizer's EOS. With a seed,
            each request is seeded from it, the episode's index and the turn.
        config: Budgets, env settings and limits: ``max_concurrent_requests`` (requests in
            flight), ``env_workers`` (env steps at once; None: one per episode),
            ``step_timeout``.

    Attributes:
        generation_busy_seconds: In the last run, wall time during which at least one request
            was in flight (divide by ``wall_seconds`` for the server's busy fraction).
        wall_seconds: Wall time of the last run.
        requests: Generation requests of the last run.
        env_steps: Env steps of the last run (resets not counted).
        process_cpu_seconds: CPU time of this whole process during the last run (every thread:
            env steps, token bookkeeping, requests, remote envs' connections; and anything else
            the process did meanwhile). Divided by ``env_steps``: the trainer's own CPU per env
            step, the cost that decides how many episodes one process can keep in flight.
    """

    step_threads = "tool-envs-async-step"

    def __init__(
        self,
        tokenizer: Any,
        backend: AsyncGenerationBackend | None,
        settings: SamplingSettings | None = None,
        config: RolloutConfig | None = None,
    ):
        if backend is not None and not isinstance(backend, AsyncGenerationBackend):
            raise TypeError(
                f"{type(backend).__name__} has no async agenerate(prompt, max_tokens, settings, "
                "seed=...); the asynchronous engine needs a continuous-batching server backend "
                "such as VLLMServerBackend (use RolloutEngine for batched backends)"
            )
        super().__init__(tokenizer, backend, settings, config)
        self.generation_busy_seconds = 0.0
        self.wall_seconds = 0.0
        self.requests = 0
        self.env_steps = 0
        self.process_cpu_seconds = 0.0
        self._active_runs = 0

    def run(self, tasks: TaskRows, seeds: Seeds = None, scripts: Scripts = None) -> list[Rollout]:
        """Play each task row once; a blocking call usable with or without a running loop."""
        return run_blocking(self.arun(tasks, seeds, scripts))

    async def arun(
        self,
        tasks: TaskRows,
        seeds: Seeds = None,
        scripts: Scripts = None,
    ) -> list[Rollout]:
        """Play each task row once, every episode concurrently (see :meth:`run`).

        Several runs may share one event loop (a rollout worker plays many GRPO groups at once);
        the timing attributes then describe the run that finished last.
        """
        seeds, scripts = self._check_inputs(tasks, seeds, scripts)
        clock = BusyClock()
        requests = asyncio.Semaphore(self.config.max_concurrent_requests)
        steps = asyncio.Semaphore(self.config.env_workers or max(len(tasks), 1))
        episodes: list[_Episode | None] = [None] * len(tasks)
        started = time.perf_counter()
        cpu = time.process_time()
        self._active_runs += 1

        async def play(index: int) -> None:
            async with steps:  # a reset may start a server or a sandbox
                episode = await self._astart(tasks[index], seeds[index], scripts[index])
            episodes[index] = episode
            while not episode.done:
                await self._turn(episode, index, requests, steps, clock)

        try:
            await asyncio.gather(*(play(i) for i in range(len(tasks))))
        except BaseException:
            self._release(episodes)
            raise
        finally:
            self.wall_seconds = time.perf_counter() - started
            self.generation_busy_seconds = clock.busy_seconds
            self.requests = clock.requests
            self.env_steps = clock.env_steps
            self.process_cpu_seconds = time.process_time() - cpu
            self._active_runs -= 1
            aclose = getattr(self.backend, "aclose", None)
            if aclose is not None and self._active_runs == 0:  # runs may share one loop's client
                await aclose()
        return self._finish([e for e in episodes if e is not None])

    # ------------------------------------------------------------------ one turn of one episode

    async def _turn(
        self,
        episode: _Episode,
        index: int,
        requests: asyncio.Semaphore,
        steps: asyncio.Semaphore,
        clock: BusyClock,
    ) -> None:
        cap = self._plan_turn(episode)
        if cap is None:
            return
        max_tokens = self._max_tokens(cap)
        if episode.script is not None:
            generation = self._scripted_turn(episode, max_tokens)
        else:
            generation = await self._generate(episode, index, max_tokens, requests, clock)
            if generation is None:
                return
        if not self._take_generation(episode, generation, cap):
            return
        async with steps:
            clock.env_steps += 1
            env_ids = await self._timed_step(episode, generation)
        if not episode.done:
            self._take_env_ids(episode, env_ids)

    async def _generate(
        self,
        episode: _Episode,
        index: int,
        max_tokens: int,
        requests: asyncio.Semaphore,
        clock: BusyClock,
    ) -> Generation | None:
        """One request for this episode's turn; a failed request voids the episode."""
        if self.backend is None:
            raise ValueError("this engine has no generation backend; pass scripts for every task")
        context = episode.rollout.prompt_ids + episode.rollout.completion_ids
        async with requests:
            clock.enter()
            try:
                return await self.backend.agenerate(
                    context, max_tokens, self.settings, seed=self._seed(index, episode)
                )
            except GenerationServerError as exc:
                episode.void("generation", str(exc))
                return None
            finally:
                clock.leave()

    def _seed(self, index: int, episode: _Episode) -> int | None:
        base = self.settings.generation_kwargs.get("seed", self.settings.seed)
        if base is None:
            return None
        return (int(base) + 7919 * index + len(episode.rollout.policy_texts)) % 2**31

    async def _astart(
        self, task: Mapping[str, Any], seed: int | None, script: Sequence[str] | None
    ) -> _Episode:
        """Start an episode: a served env's reset awaited on this loop, any other in a thread."""
        env_id = self._env_id(task)
        if not self.pool.serves(env_id):
            return await self._in_thread(self._start, task, seed, script)
        env = self.pool.acquire(env_id)  # a RemoteEnv is made without I/O
        remote = self.pool.remote(env)
        if remote is None:  # wrapped (env_wrappers): a synchronous reset, in a thread
            _, info = await self._in_thread(env.reset, seed=seed, options={"task": dict(task)})
        else:
            reset = remote.reset_future(seed=seed, options={"task": dict(task)})
            _, info = await asyncio.wrap_future(reset)
        return self._begun(env, env_id, info, seed, script)

    async def _timed_step(self, episode: _Episode, generation: Generation) -> list[int] | None:
        """The env step, bounded by ``step_timeout`` from when it starts: in a worker thread, or
        for a served env awaited on this loop (its wait on the server holds no thread)."""
        remote = self.pool.remote(episode.env)
        try:
            if remote is None:
                running = self._executor.submit(self._step, episode, generation)
            else:
                running = remote.step_future(episode.rollout.policy_texts[-1])
            result = await asyncio.wait_for(
                asyncio.shield(asyncio.wrap_future(running)), self.config.step_timeout
            )
            return result if remote is None else self._stepped(episode, generation, result)
        except asyncio.TimeoutError:
            self._step_failed(episode, TimeoutError(), running)
        except Exception as exc:  # any env failure voids only its own episode
            self._step_failed(episode, exc, None)
        return None

    async def _in_thread(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.wrap_future(self._executor.submit(function, *args, **kwargs))


def run_blocking(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to the end from synchronous code, even inside a running event loop
    (a notebook, an async trainer): then it runs on its own loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: concurrent.futures.Future[T] = concurrent.futures.Future()

    def target() -> None:
        try:
            result.set_result(asyncio.run(coroutine))
        except BaseException as exc:  # handed to the caller below
            result.set_exception(exc)

    thread = threading.Thread(target=target, name="tool-envs-rollouts")
    thread.start()
    thread.join()
    return result.result()

"""A rollout worker for TRL's ``AsyncGRPOTrainer`` that plays tool_envs episodes.

``trl.experimental.async_grpo.AsyncGRPOTrainer(rollout_worker=...)`` takes any object with
TRL's ``RolloutWorkerProtocol``: a ``rollout_buffer`` queue of scored ``RolloutSample`` s, a
``metrics_queue``, ``start``, ``stop``, ``update_model_version`` and ``check_health``. This one
plays GRPO groups of any tool_envs env (simulated users included) with the asynchronous engine
against the trainer's vLLM server, several groups at once, and:

* plays and scores each group with :class:`~tool_envs.rollout.player.Player` (the reward: the
  sum of TRL-style reward functions, as GRPOTrainer sums them; by default ``env_reward`` alone,
  the env's reward), and computes group advantages as TRL's own worker does:
  ``(r - mean) / (std + 1e-8)`` over the group's scored episodes, population std;
* leaves void episodes out (infrastructure failed; see :mod:`tool_envs.core.outcome`): no sample,
  counted in ``rollout/void_rate``; the rest of the group is scored among itself;
* stops, as ``rollout_func`` does (both play through ``Player``), when more than
  ``RolloutConfig.max_void_fraction`` of a group's episodes are void: the group's
  :class:`~tool_envs.errors.RolloutVoidError` (naming the fraction and the void causes) ends
  the worker, and the trainer's next
  :meth:`~ToolEnvsRolloutWorker.check_health` raises with it. The group is the worker's batch,
  as the GRPO batch is ``rollout_func``'s, so the option means the same in both recipes:
  something is broken, and training on what is left would hide it (1.0: never stop);
* tags every sample with the policy version its group started under, and drops a group that is
  already more than ``max_staleness`` versions old when it finishes (``rollout/dropped_stale``);
* runs in a spawned child process, as TRL's worker does, so env steps and tokenization never
  hold the trainer's GIL (``in_process=True`` runs it in a thread instead, for debugging). What
  the child needs is pickled when it starts: module-level reward functions and env wrappers,
  never lambdas.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing as mp
import pickle
import queue
import random
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from tool_envs.integrations.trl import trl_compat
from tool_envs.integrations.trl.rewards import env_reward
from tool_envs.rollout.backends.base import SamplingSettings
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.episode import TaskRows
from tool_envs.rollout.player import Played, RewardFunc, completion_messages
from tool_envs.rollout.seeds import group_seed


class ToolEnvsRolloutWorker:
    """Plays tool_envs GRPO groups for ``AsyncGRPOTrainer`` (see the module docstring).

    Args:
        tasks: Task rows (a list, or a ``datasets.Dataset`` of rows); cycled through in an order
            shuffled with ``seed``, each row played as one group.
        tokenizer: The policy's tokenizer, or its name / path (loaded in the worker).
        vllm_server_url: The trainer's vLLM server (``AsyncGRPOConfig.vllm_server_base_url``).
        num_generations: Episodes per group (G).
        sampling: Sampling settings (TRL's temperature, top_p, ...); stops default to EOS.
        config: Budgets, env settings, timeouts (``max_completion_length`` caps the episode);
            a group more void than its ``max_void_fraction`` stops the worker.
        reward_funcs: TRL-style reward functions ``f(completions, **columns)`` whose sum is an
            episode's reward, as GRPOTrainer's ``reward_funcs`` (the columns are
            :func:`tool_envs.rollout.player.columns`); default ``env_reward`` alone. A None adds
            nothing; an episode all of them give None is unscored (no advantage).
        max_staleness: Drop a finished group whose policy version is more than this behind.
        max_inflight_groups: Groups played at once.
        queue_maxsize: Bound of ``rollout_buffer`` (0: unbounded); a full buffer makes the
            worker wait (back-pressure).
        server_model: Model name to request; default: the one the server serves.
        seed: Seeds the task order and each group's env state.
        in_process: Run in a thread of this process instead of a spawned child.
    """

    def __init__(
        self,
        *,
        tasks: TaskRows,
        tokenizer: Any,
        vllm_server_url: str,
        num_generations: int = 8,
        sampling: SamplingSettings | None = None,
        config: RolloutConfig | None = None,
        reward_funcs: Sequence[RewardFunc] = (env_reward,),
        max_staleness: int = 3,
        max_inflight_groups: int = 4,
        queue_maxsize: int = 0,
        server_model: str | None = None,
        seed: int = 0,
        in_process: bool = False,
    ):
        if num_generations < 2:
            raise ValueError(f"num_generations must be >= 2 (a group), got {num_generations}")
        if not reward_funcs:
            raise ValueError("reward_funcs is empty: nothing would score the episodes")
        if max_staleness < 0 or max_inflight_groups < 1:
            raise ValueError("max_staleness must be >= 0 and max_inflight_groups >= 1")
        self.reward_funcs = list(reward_funcs)
        rows = [dict(row) for row in tasks]
        if not rows:
            raise ValueError("tasks is empty: the worker needs task rows to play")
        self._loop_kwargs = {
            "rows": rows,
            "tokenizer": tokenizer,
            "url": vllm_server_url,
            "num_generations": num_generations,
            "sampling": sampling or SamplingSettings(),
            "config": config or RolloutConfig(),
            "reward_funcs": self.reward_funcs,
            "max_staleness": max_staleness,
            "max_inflight_groups": max_inflight_groups,
            "server_model": server_model,
            "seed": seed,
        }
        self.in_process = in_process
        context = mp.get_context("spawn")
        # Shared values and flags work across threads and spawned processes alike; only the
        # queues the trainer drains differ (TRL's protocol takes either kind).
        self._shared = _Shared(context)
        if in_process:
            self.rollout_buffer: Any = queue.Queue(maxsize=queue_maxsize)
            self.metrics_queue: Any = queue.Queue(maxsize=4096)
        else:
            self.rollout_buffer = context.Queue(maxsize=queue_maxsize)
            self.metrics_queue = context.Queue(maxsize=4096)
        self._runner: threading.Thread | mp.process.BaseProcess | None = None

    # ------------------------------------------------------------------ RolloutWorkerProtocol

    @property
    def model_version(self) -> int:
        return self._shared.version

    def update_model_version(self, model_version: int) -> None:
        """The trainer's policy version after a weight sync; new groups are tagged with it."""
        self._shared.version = model_version

    def start(self) -> None:
        """Begin playing groups (called by the trainer after its first weight sync)."""
        if self._runner is not None:
            return
        self._shared.heartbeat = time.time()
        args = (self._loop_kwargs, self.rollout_buffer, self.metrics_queue, self._shared)
        if self.in_process:
            self._runner = threading.Thread(target=_run, args=args, name="tool-envs-rollouts")
        else:
            self.check_picklable()
            self._runner = mp.get_context("spawn").Process(
                target=_run, args=args, name="tool-envs-rollouts", daemon=True
            )
        self._runner.start()

    def check_picklable(self) -> None:
        """Raise a clear TypeError if what :meth:`start` sends to the worker's process cannot
        be pickled (a lambda reward function, a closure env wrapper)."""
        try:
            pickle.dumps(self._loop_kwargs)
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise TypeError(
                "ToolEnvsRolloutWorker sends its tasks, tokenizer, reward_funcs and "
                "RolloutConfig (env_wrappers included) to a spawned process, so they must be "
                "picklable: use module-level functions and classes, not lambdas or closures "
                f"({exc})"
            ) from exc

    def check_health(self, stale_after_s: float) -> None:
        """Raise if the worker failed, or finished no group for ``stale_after_s`` seconds."""
        if self._shared.failed.is_set():
            try:  # a multiprocessing queue may take a moment to deliver what was put
                detail = self._shared.errors.get(timeout=1.0)
            except queue.Empty:
                detail = "no traceback was passed on"
            raise RuntimeError(f"the tool_envs rollout worker failed:\n{detail}")
        age = time.time() - self._shared.heartbeat
        if age > stale_after_s:
            raise RuntimeError(
                f"the tool_envs rollout worker finished no group for {age:.0f} s (more than "
                f"{stale_after_s:.0f} s): is the vLLM server up, or an env stuck?"
            )

    def stop(self) -> None:
        """Stop playing and wait for the worker (groups in flight are abandoned)."""
        if self._runner is None:
            return
        self._shared.stop.set()
        self._runner.join(timeout=60)
        if isinstance(self._runner, mp.process.BaseProcess) and self._runner.is_alive():
            self._runner.terminate()
            self._runner.join(timeout=5)
        self._runner = None


class _LockedValue:
    """An attribute kept in the ``multiprocessing.Value`` at ``_<name>`` of its instance: read as
    ``cast`` of it, written under the value's lock, so the trainer and the runner agree."""

    def __init__(self, cast: Callable[[Any], Any]):
        self.cast = cast

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = f"_{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return self.cast(getattr(instance, self.field).value)

    def __set__(self, instance: Any, value: Any) -> None:
        shared = getattr(instance, self.field)
        with shared.get_lock():
            shared.value = self.cast(value)


class _Shared:
    """State shared with the runner: policy version, heartbeat, stop / failed flags, the error."""

    version = _LockedValue(int)
    heartbeat = _LockedValue(float)

    def __init__(self, context: Any):
        self._version = context.Value("i", 0)
        self._heartbeat = context.Value("d", time.time())
        self.stop = context.Event()
        self.failed = context.Event()
        self.errors = context.Queue(1)


# --------------------------------------------------------------------------- the runner


def _run(kwargs: dict[str, Any], buffer: Any, metrics: Any, shared: _Shared) -> None:
    """Entry point of the runner (thread or spawned process): play groups until stopped."""
    try:
        asyncio.run(_GroupLoop(kwargs, buffer, metrics, shared).main())
    except BaseException:
        shared.failed.set()
        with contextlib.suppress(queue.Full):
            shared.errors.put_nowait(traceback.format_exc())
        raise


class _GroupLoop:
    def __init__(self, kwargs: dict[str, Any], buffer: Any, metrics: Any, shared: _Shared):
        from tool_envs.rollout.backends.vllm.server import VLLMServerBackend
        from tool_envs.rollout.player import Player, Policy

        tokenizer = kwargs["tokenizer"]
        if isinstance(tokenizer, str):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self.kwargs = kwargs
        self.buffer = buffer
        self.metrics = metrics
        self.shared = shared
        self.error: Exception | None = None
        self.backend = VLLMServerBackend(kwargs["url"], model=kwargs["server_model"])
        policy = Policy(tokenizer, self.backend, kwargs["sampling"], engine="async")
        self.player = Player(policy, kwargs["config"], reward_funcs=kwargs["reward_funcs"])

    async def main(self) -> None:
        rows, seed = self.kwargs["rows"], self.kwargs["seed"]
        order = random.Random(seed)
        slots = asyncio.Semaphore(self.kwargs["max_inflight_groups"])
        running: set[asyncio.Task] = set()
        try:
            for group_id in itertools.count():
                if group_id % len(rows) == 0:
                    indices = list(range(len(rows)))
                    order.shuffle(indices)
                while not await self._free_slot(slots):
                    if self.shared.stop.is_set():
                        return
                row = rows[indices[group_id % len(rows)]]
                task = asyncio.create_task(self._group(row, group_id, slots))
                running.add(task)
                task.add_done_callback(running.discard)
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            self.player.close()
            self.backend.close()

    async def _free_slot(self, slots: asyncio.Semaphore) -> bool:
        """Wait up to half a second for a free group slot; a failed group's error is raised."""
        if self.error is not None:
            raise self.error
        if self.shared.stop.is_set():
            return False
        try:
            await asyncio.wait_for(slots.acquire(), timeout=0.5)
        except asyncio.TimeoutError:
            return False
        return True

    async def _group(self, row: dict[str, Any], group_id: int, slots: asyncio.Semaphore) -> None:
        try:
            version = self.shared.version
            size = self.kwargs["num_generations"]
            seed = group_seed(self.kwargs["seed"], group_id)
            # A group more void than max_void_fraction raises RolloutVoidError: the worker ends.
            played = await self.player.aplay([row] * size, seeds=[seed] * size)
            samples, values = group_samples(played, version, group_id)
            staleness = self.shared.version - version
            if staleness > self.kwargs["max_staleness"]:
                values["rollout/dropped_stale"] = float(len(samples))
                samples = []
            for sample in samples:
                sample.enqueued_at = time.time()
                await asyncio.to_thread(self._put, sample)
            with contextlib.suppress(queue.Full):
                self.metrics.put_nowait(values)
            self.shared.heartbeat = time.time()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # ends the worker; check_health reports it to the trainer
            self.error = exc
        finally:
            slots.release()

    def _put(self, sample: Any) -> None:
        """Block while the trainer's buffer is full, but give up when stopped."""
        while not self.shared.stop.is_set():
            try:
                self.buffer.put(sample, timeout=1.0)
                return
            except queue.Full:
                continue


# --------------------------------------------------------------------------- scoring


def group_samples(
    played: Played, model_version: int, group_id: int
) -> tuple[list[Any], dict[str, float]]:
    """TRL ``RolloutSample`` s for one finished, scored group, and the group's metrics.

    Void episodes give no sample. The others get TRL's group advantage over the scored ones
    (an unscored one: advantage 0). The sample's ``completion_mask`` is the episode's
    ``env_mask`` (env tokens are context), its ``old_log_probs`` the sampler's.
    """
    import numpy as np

    pairs = zip(played.rollouts, played.rewards, strict=True)
    kept = [(rollout, reward) for rollout, reward in pairs if not rollout.void]
    values = {**played.metrics, "rollout/void_rate": played.void_fraction}
    if not kept:
        return [], values
    rewards = np.array([np.nan if reward is None else reward for _, reward in kept], dtype=float)
    scored = ~np.isnan(rewards)
    advantages = np.zeros_like(rewards)
    if scored.any():
        chosen = rewards[scored]
        advantages[scored] = (chosen - chosen.mean()) / (chosen.std() + 1e-8)
        values["rollout/reward_std"] = float(chosen.std())
    samples = []
    for (rollout, _), advantage, reward in zip(kept, advantages, rewards, strict=True):
        completion = completion_messages(rollout)
        prompt_length = len(rollout.messages) - len(completion)
        policy_logprobs = rollout.logprobs or [0.0] * len(rollout.completion_ids)
        samples.append(
            trl_compat.rollout_sample(
                prompt=rollout.messages[:prompt_length],
                completion=completion,
                input_ids=np.asarray(rollout.prompt_ids + rollout.completion_ids, dtype=np.int64),
                completion_mask=np.asarray(
                    [0] * len(rollout.prompt_ids) + rollout.env_mask, dtype=np.int64
                ),
                old_log_probs=np.asarray(
                    [0.0] * len(rollout.prompt_ids) + policy_logprobs, dtype=np.float32
                ),
                advantage=float(advantage),
                model_version=model_version,
                group_id=group_id,
                metrics={"reward": float(reward), "env_reward": rollout.reward},
            )
        )
    return samples, values

"""The message-level engine: :class:`ChatEngine` plays whole episodes of an
:class:`~tool_envs.rollout.agents.Agent` (a chat API, or scripted gold or empty turns).

The token engines drive generation turn by turn and keep every token; an agent talks to its env
in chat messages, with no tokenizer, and plays a whole episode itself (``agent.play``). So here
each episode runs in a worker thread, ``RolloutConfig.max_concurrent_requests`` at once (for a
chat API the requests in flight: an episode waits on one request at a time, so the API always has
that many instead of waiting for a turn's slowest conversation), each on an env from the shared
:class:`~tool_envs.rollout.env_pool.EnvPool`, reset with its row and the seed it is given.
:meth:`ChatEngine.stream` yields each episode as it finishes, so a caller can save it at once;
:meth:`ChatEngine.run` is the batch that :func:`~tool_envs.rollout.player.play` scores.

**Stopping.** Once ``stop`` is set no episode starts, and the agents end the ones playing at
their next turn (:class:`~tool_envs.errors.EpisodeInterrupted`: dropped, never yielded); the
stream still yields what finishes meanwhile. Once ``abandon`` is set the stream ends at once,
leaving the episodes still playing to end in the background (the pool stays open for them).

**Faults.** An env (or agent) that raises while playing ends only its own episode, as void
(cause ``env_error``; its env is never reused), as in the token engines. What stops play
instead is yielded in the episode's place, for the caller to decide (:meth:`ChatEngine.run`
raises it; ``tool-envs eval`` stops the run and keeps what finished): an
:class:`~tool_envs.errors.EvalError` (the agent's API is unreachable or answers something
unusable; an env cannot be made, or cannot start its task), or another error before the episode
started (no env server left). ``RolloutConfig.step_timeout`` is not enforced here: the agent
steps its env itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from typing_extensions import Self

from tool_envs.core.chat_env import chat_env
from tool_envs.core.messages import Message
from tool_envs.core.outcome import VOID, outcome_of, void_info
from tool_envs.data.schema import task_id_of
from tool_envs.errors import EpisodeInterrupted, EvalError
from tool_envs.registration import env_kwargs_for, registered_id
from tool_envs.rollout.agents import Agent, EpisodeResult
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.env_pool import EnvPool
from tool_envs.rollout.episode import Scripts, Seeds, TaskRows

__all__ = ["ChatEngine", "ChatEpisode", "acquire_env"]


@dataclass
class ChatEpisode:
    """One finished episode of a message-level agent: an :class:`~tool_envs.rollout.episode.Episode`
    read from the agent's own record.

    It has no token ids, masks or logprobs (the agent talked to a chat API, with no tokenizer):
    :func:`~tool_envs.rollout.player.columns` leaves those columns out rather than fake them.

    Attributes:
        env_id: The row's env id.
        task_id: The env's id of the task (``reset``'s ``info["task_id"]``), if it gives one.
        seed: The reset seed it was given.
        result: The agent's record (:class:`~tool_envs.rollout.agents.EpisodeResult`): the env's
            last ``info``, its ``terminated`` and ``truncated`` flags as the env returned them,
            what the agent wrote, the API's usage and finish reasons, why it ended early.
        messages: The final conversation.
        seconds: Wall time from reset to the end.

    The rest is read from ``result``: ``reward``, ``reward_info`` (``info["reward_info"]``),
    ``outcome``, ``stats``, ``progress``; ``turns`` and ``policy_turns`` count the agent's steps
    (a voided last one included); ``finish`` is ``"void"``, ``"terminated"``, ``"turn_limit"``
    or ``"rejected"`` (the agent ended it: its chat API rejected the conversation, e.g. too long
    for the model's context; ``result.error`` says why).
    """

    env_id: str
    task_id: str | None
    seed: int | None
    result: EpisodeResult
    messages: list[Message] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def reward(self) -> float:
        return self.result.reward

    @property
    def reward_info(self) -> dict[str, Any] | None:
        return self.result.info.get("reward_info")

    @property
    def outcome(self) -> str:
        return outcome_of(self.reward, self.reward_info)

    @property
    def void(self) -> bool:
        return self.outcome == VOID

    @property
    def success(self) -> bool:
        return self.reward >= 1.0 and not self.void

    @property
    def finish(self) -> str:
        if self.void:
            return VOID
        if self.result.terminated:
            return "terminated"
        return "turn_limit" if self.result.truncated else "rejected"

    @property
    def truncated(self) -> bool:
        return self.finish != "terminated"

    @property
    def turns(self) -> int:
        return len(self.result.raw_texts)

    @property
    def policy_turns(self) -> int:
        return self.turns

    @property
    def stats(self) -> dict[str, int]:
        return self.result.info.get("stats", {})

    @property
    def progress(self) -> float | None:
        return self.result.info.get("progress")


def acquire_env(pool: EnvPool, env_id: str) -> gym.Env:
    """An env of ``env_id`` from ``pool``; an :class:`EvalError` naming the env and its arguments
    when its constructor refuses them."""
    try:
        return pool.acquire(env_id)
    except (TypeError, ValueError) as exc:
        kwargs = env_kwargs_for(pool.config.env_kwargs, env_id)
        raise EvalError(f"cannot make {registered_id(env_id)} with {kwargs}: {exc}") from exc


class ChatEngine:
    """Plays task rows with a message-level agent, ``config.max_concurrent_requests`` episodes at
    once, on envs from one pool reused across calls.

    Args:
        agent: Plays one episode of an env that has just been reset (``agent.play``).
        config: Env settings (``env_kwargs``, ``env_servers``, ``max_turns``, ``env_wrappers``)
            and ``max_concurrent_requests``; the token budgets do not apply.
    """

    threads = "tool-envs-chat"

    def __init__(self, agent: Agent, config: RolloutConfig | None = None):
        self.agent = agent
        self.config = config or RolloutConfig()
        self.pool = EnvPool(self.config)
        self._lock = threading.Lock()
        self._playing = 0

    @property
    def playing(self) -> int:
        """Episodes being played now (after an abandoned stream: those still ending)."""
        return self._playing

    def stream(
        self,
        rows: TaskRows,
        seeds: Seeds = None,
        *,
        stop: threading.Event | None = None,
        abandon: threading.Event | None = None,
    ) -> Iterator[tuple[int, ChatEpisode | Exception]]:
        """Play each row once; yield ``(row index, episode)`` as each finishes, or ``(row index,
        error)`` for a row whose play stopped on an error (see the module docstring).

        Leaving the stream early (closing it) sets ``stop``.
        """
        seeds = _checked_seeds(rows, seeds)
        stop = stop if stop is not None else threading.Event()
        return self._stream(rows, seeds, stop, abandon)

    def _stream(
        self,
        rows: TaskRows,
        seeds: list[int | None],
        stop: threading.Event,
        abandon: threading.Event | None,
    ) -> Iterator[tuple[int, ChatEpisode | Exception]]:
        if not rows:
            return
        workers = min(self.config.max_concurrent_requests, len(rows))
        executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=self.threads)
        futures = {
            executor.submit(self._play, row, seed, stop): index
            for index, (row, seed) in enumerate(zip(rows, seeds, strict=True))
        }
        pending = set(futures)
        try:
            while pending and not (abandon is not None and abandon.is_set()):
                # The timeout lets the loop notice stop and abandon within a fraction of a second.
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=futures.__getitem__):
                    if future.cancelled():
                        continue
                    try:
                        episode = future.result()
                    except EpisodeInterrupted:
                        continue
                    except Exception as exc:
                        yield futures[future], exc
                        continue
                    yield futures[future], episode
                if stop.is_set():
                    for future in pending:  # those not started; the others end at a turn
                        future.cancel()
        finally:
            if pending:
                stop.set()
            executor.shutdown(wait=False, cancel_futures=True)

    def run(
        self,
        rows: TaskRows,
        seeds: Seeds = None,
        scripts: Scripts = None,
    ) -> list[ChatEpisode]:
        """Play each row once and return the episodes in row order. The first error a row's
        play stops on is raised once the episodes in flight have ended (at their next turn)."""
        if scripts is not None and any(script is not None for script in scripts):
            raise ValueError(
                "the chat engine plays an agent's own turns; scripts are for the token engines "
                "(a GoldAgent replays gold turns)"
            )
        episodes: list[ChatEpisode | None] = [None] * len(rows)
        stop = threading.Event()
        error: Exception | None = None
        for index, played in self.stream(rows, seeds, stop=stop):
            if isinstance(played, Exception):
                error = error or played
                stop.set()
            else:
                episodes[index] = played
        if error is not None:
            raise error
        return [episode for episode in episodes if episode is not None]

    def _play(self, row: Mapping[str, Any], seed: int | None, stop: threading.Event) -> ChatEpisode:
        """One episode, in a worker thread: acquire, reset, let the agent play, release."""
        if stop.is_set():
            raise EpisodeInterrupted
        env_id = row.get("env_id") or row.get("env_class")
        if not isinstance(env_id, str):
            raise ValueError(f"task row has no env_id: {sorted(row)}")
        with self._lock:
            self._playing += 1
        try:
            env = acquire_env(self.pool, env_id)
            broken = False
            try:
                episode, broken = self._play_on(env, env_id, dict(row), seed, stop)
                return episode
            finally:
                if broken:  # its step raised: never reused
                    self.pool.abandon(env)
                else:
                    self.pool.release(env_id, env)
        finally:
            with self._lock:
                self._playing -= 1

    def _play_on(
        self,
        env: gym.Env,
        env_id: str,
        row: dict[str, Any],
        seed: int | None,
        stop: threading.Event,
    ) -> tuple[ChatEpisode, bool]:
        """The episode, and whether its env raised (void, cause ``env_error``)."""
        started = time.monotonic()
        try:
            _, info = env.reset(seed=seed, options={"task": row})
        except Exception as exc:  # a task the env cannot start is a task-set bug: say which
            raise EvalError(
                f"{registered_id(env_id)} cannot start task {task_id_of(row)!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        result = EpisodeResult()
        broken = False
        try:
            self.agent.play(env, row, stop, result)
        except (EvalError, EpisodeInterrupted):
            raise
        except Exception as exc:  # an env that raised: not the agent's doing, and not the others'
            result.error = f"{type(exc).__name__}: {exc}"
            result.reward, result.terminated, result.truncated = 0.0, False, True
            result.info = {**result.info, "reward_info": void_info("env_error", result.error)}
            broken = True
        messages = list(chat_env(env).messages)
        episode = ChatEpisode(
            env_id=env_id,
            task_id=info.get("task_id"),
            seed=seed,
            result=result,
            messages=messages,
            seconds=time.monotonic() - started,
        )
        return episode, broken

    def close(self) -> None:
        """Close the pool's envs, unless episodes of an abandoned stream still play on them
        (they end in the background; the pool is then left to them)."""
        if not self.playing:
            self.pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _checked_seeds(rows: TaskRows, seeds: Seeds) -> list[int | None]:
    if seeds is not None and len(seeds) != len(rows):
        raise ValueError(f"got {len(seeds)} seeds for {len(rows)} tasks")
    return list(seeds) if seeds is not None else [None] * len(rows)

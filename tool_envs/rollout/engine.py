"""Run batches of episodes in lockstep and keep their exact token bookkeeping.

Each turn makes ONE generation call for every live episode, then steps their envs concurrently
(a step may wait on a search API, an MCP server or a simulated user). Policy tokens are kept as
generated; the tokens between policy turns are the env's, computed from the model's own chat
template (see :mod:`tool_envs.rollout.template`) and masked out of the loss.

The per-episode bookkeeping (:class:`EpisodeRunner`) is shared with the asynchronous engine
(:mod:`tool_envs.rollout.async_engine`), so both produce the same :class:`Rollout` for the same
turns; they differ only in how they schedule generation and env steps.

**Faults.** An env step that raises, or runs past ``RolloutConfig.step_timeout``, ends only its
own episode, as *void* (``Rollout.outcome == "void"``, the cause in ``reward_info``): an
infrastructure failure is not the policy's. A generation request that fails
(:class:`~tool_envs.errors.GenerationServerError`, after the backend's own retries) voids the
episodes it was for, cause ``generation``: here the turn's one call, so every episode in it;
in the asynchronous engine the one episode that sent it. Anything else a backend raises is a
bug and propagates. The trainer never learns from a void episode (see
:func:`tool_envs.integrations.trl.rollout_func.rollouts_to_batch`). The engines return every
rollout, void ones included; :func:`tool_envs.rollout.player.play` refuses a batch more void than
``max_void_fraction``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym

import tool_envs
from tool_envs.core.chat_env import chat_env
from tool_envs.core.closing import ClosedOnExit
from tool_envs.core.messages import Message
from tool_envs.core.outcome import VOID, is_void, outcome_of, void_info
from tool_envs.rollout.backends.base import (
    Generation,
    GenerationBackend,
    GenerationServerError,
    SamplingSettings,
)
from tool_envs.rollout.config import RolloutConfig as RolloutConfig
from tool_envs.rollout.env_pool import EnvPool as EnvPool
from tool_envs.rollout.episode import Scripts, Seeds, TaskRows
from tool_envs.rollout.template import ChatTemplateRenderer

gym.register_envs(tool_envs)


@dataclass
class Rollout:
    """One finished episode, ready for a trainer (an :class:`~tool_envs.rollout.episode.Episode`
    with its tokens).

    Attributes:
        prompt_ids: The rendered prompt (system + user + tools + assistant header).
        completion_ids: Policy and env tokens after the prompt, in order.
        logprobs: Per completion token: the sampler's log-prob on policy tokens, 0.0 on env
            tokens; None if the backend gave none.
        env_mask: Per completion token: 1 = policy (trained on), 0 = env (masked out).
        reward: The env's reward (0.0 when the episode was cut short or void).
        reward_info: Why, from the env; or a reason the engine ended the episode. A void
            episode's carries ``outcome="void"``, ``void_cause`` and ``reason``.
        outcome: ``"success"``, ``"failure"`` or ``"void"`` (see :mod:`tool_envs.core.outcome`).
        finish: How the episode ended:

            * ``"terminated"``: the task ended;
            * ``"turn_limit"``: the env's max turns;
            * ``"turn_tokens"``: a turn hit ``max_tokens_per_turn``;
            * ``"completion_budget"``: ``max_completion_length`` left no room for more;
            * ``"context_length"``: the context reached the backend's ``max_model_len`` (a
              turn was cut at it, or no room was left for a policy token); reward 0, and
              ``reward_info["reason"]`` says so. Only that episode ends; the batch goes on;
            * ``"void"``: infrastructure failed (env step raised or timed out, a simulated
              user's or judge's API failed, the generation request failed): see ``outcome``.
        progress: The env's last ``info["progress"]`` (how far the episode got, in [0, 1]),
            whatever ended it; None when the env reports none.
        policy_texts: Decoded text of each policy turn (what the env received).
        messages: The final conversation.
    """

    env_id: str
    task_id: str | None
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    reward: float = 0.0
    reward_info: dict[str, Any] | None = None
    finish: str = ""
    outcome: str = ""
    turns: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    progress: float | None = None
    policy_texts: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.finish != "terminated"

    @property
    def policy_turns(self) -> int:
        """Policy turns played, a last one cut by the token budget included: an episode truncated
        in its first turn played one, which the env never counted (it was not stepped)."""
        return max(self.turns, len(self.policy_texts))

    @property
    def success(self) -> bool:
        return self.reward >= 1.0 and not self.void

    @property
    def void(self) -> bool:
        """Infrastructure failed: the episode says nothing about the policy."""
        return self.outcome == VOID


@dataclass
class _Episode:
    env: gym.Env
    rollout: Rollout
    seed: int | None
    script: list[str] | None = None
    done: bool = False
    abandoned: bool = False  # its env step hung; the env is not reused

    def add(self, ids: list[int], logprobs: list[float] | None, mask: int) -> None:
        rollout = self.rollout
        rollout.completion_ids.extend(ids)
        rollout.env_mask.extend([mask] * len(ids))
        if rollout.logprobs is not None:
            if logprobs is None:
                rollout.logprobs = None
            else:
                rollout.logprobs.extend(logprobs)

    def end(self, finish: str, reward: float = 0.0, reward_info: dict | None = None) -> None:
        if self.done:  # the first ending stands (a hung step may return after its timeout)
            return
        self.rollout.finish = finish
        self.rollout.reward = float(reward)
        self.rollout.reward_info = reward_info
        self.rollout.outcome = outcome_of(reward, reward_info)
        if not self.abandoned:  # a hung env's thread may still be changing its messages
            self.rollout.messages = chat_env(self.env).messages
        self.done = True

    def void(self, cause: str, detail: str) -> None:
        self.end(VOID, 0.0, void_info(cause, detail))


class EpisodeRunner(ClosedOnExit):
    """Per-episode bookkeeping shared by the lockstep and asynchronous engines.

    Starting an episode, the token budgets of a turn, taking a generation, stepping the env and
    appending the env's tokens: one implementation, so both engines produce the same rollout
    for the same turns. Subclasses decide only when generation and env steps happen.
    """

    step_threads: ClassVar[str] = "tool-envs-step"
    """Name prefix of the threads that step envs."""

    def __init__(
        self,
        tokenizer: Any,
        backend: Any,
        settings: SamplingSettings | None = None,
        config: RolloutConfig | None = None,
    ):
        self.tokenizer = tokenizer
        self.backend = backend
        self.config = config or RolloutConfig()
        settings = settings or SamplingSettings()
        if not settings.stop_token_ids:
            if tokenizer.eos_token_id is None:
                raise ValueError(
                    "the tokenizer has no eos_token_id; pass SamplingSettings(stop_token_ids=...)"
                )
            settings = dataclasses.replace(settings, stop_token_ids=(tokenizer.eos_token_id,))
        self.settings = settings
        self.renderer = ChatTemplateRenderer(
            tokenizer,
            chat_template=self.config.chat_template,
            template_kwargs=dict(self.config.template_kwargs),
        )
        self.pool = EnvPool(self.config)
        # Env steps run here: sized to the live episodes unless env_workers caps it; threads are
        # created only as steps need them.
        self._executor = ThreadPoolExecutor(
            max_workers=self.config.env_workers or 512, thread_name_prefix=self.step_threads
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.pool.close()

    @staticmethod
    def _check_inputs(
        tasks: TaskRows,
        seeds: Seeds,
        scripts: Scripts,
    ) -> tuple[list[int | None], list[Sequence[str] | None]]:
        count = len(tasks)
        for name, values in (("seeds", seeds), ("scripts", scripts)):
            if values is not None and len(values) != count:
                raise ValueError(f"got {len(values)} {name} for {count} tasks")
        return (
            list(seeds) if seeds is not None else [None] * count,
            list(scripts) if scripts is not None else [None] * count,
        )

    def _release(self, episodes: Sequence[_Episode | None]) -> None:
        """Return the envs of started episodes to the pool (never one whose step hung)."""
        for episode in episodes:
            if episode is not None and not episode.abandoned:
                self.pool.release(episode.rollout.env_id, episode.env)

    def _finish(self, episodes: list[_Episode]) -> list[Rollout]:
        """Return envs to the pool and the episodes' rollouts, in order."""
        self._release(episodes)
        return [e.rollout for e in episodes]

    # ------------------------------------------------------------------ one episode starts

    def _start(
        self, task: Mapping[str, Any], seed: int | None, script: Sequence[str] | None
    ) -> _Episode:
        env_id = self._env_id(task)
        env = self.pool.acquire(env_id)
        _, info = env.reset(seed=seed, options={"task": dict(task)})
        return self._begun(env, env_id, info, seed, script)

    @staticmethod
    def _env_id(task: Mapping[str, Any]) -> str:
        env_id = task.get("env_id") or task.get("env_class")
        if not isinstance(env_id, str):
            raise ValueError(f"task row has no env_id: {sorted(task)}")
        return env_id

    def _begun(
        self,
        env: gym.Env,
        env_id: str,
        info: Mapping[str, Any],
        seed: int | None,
        script: Sequence[str] | None,
    ) -> _Episode:
        """The episode of an env just reset: its prompt rendered."""
        played = chat_env(env)
        prompt_ids = self.renderer.prompt_ids(played.messages, played.tools)
        rollout = Rollout(env_id=env_id, task_id=info.get("task_id"), prompt_ids=prompt_ids)
        script_turns = list(script) if script is not None else None
        return _Episode(env=env, rollout=rollout, seed=seed, script=script_turns)

    # ------------------------------------------------------------------ budgets of a turn

    @property
    def max_model_len(self) -> int | None:
        """The backend's context length (prompt + completion), when it has one."""
        return getattr(self.backend, "max_model_len", None)

    def _room(self, episode: _Episode) -> int | None:
        """Tokens the engine's context can still take for this episode (None: unbounded)."""
        if self.max_model_len is None:
            return None
        return self.max_model_len - len(episode.rollout.prompt_ids + episode.rollout.completion_ids)

    def _end_at_context(self, episode: _Episode, need: int) -> None:
        length = len(episode.rollout.prompt_ids) + len(episode.rollout.completion_ids)
        episode.end(
            "context_length",
            reward_info={
                "reward": 0.0,
                "reason": f"context length: {length} tokens plus {need} more do not fit the "
                f"backend's max_model_len of {self.max_model_len}",
            },
        )

    def _plan_turn(self, episode: _Episode) -> tuple[int, int, int | None] | None:
        """The turn's caps (per turn, completion budget left, context room), or None if the
        episode ended because not even one policy token fits."""
        room = self._room(episode)
        if room is not None and room < 1:
            self._end_at_context(episode, 1)
            return None
        left = self.config.max_completion_length - len(episode.rollout.completion_ids)
        return self.config.max_tokens_per_turn, left, room

    @staticmethod
    def _max_tokens(cap: tuple[int, int, int | None]) -> int:
        return min(c for c in cap if c is not None)

    # ------------------------------------------------------------------ a turn's results

    def _take_generation(
        self, episode: _Episode, generation: Generation, cap: tuple[int, int, int | None]
    ) -> bool:
        """Append the policy turn; True when the env should be stepped with it."""
        episode.add(generation.token_ids, generation.logprobs, mask=1)
        episode.rollout.policy_texts.append(self._decode_policy(generation))
        if generation.finish_reason == "stop":
            return True
        turn, left, room = cap
        if room is not None and room < min(turn, left):
            self._end_at_context(episode, 1)
        else:
            episode.end("completion_budget" if left < turn else "turn_tokens")
        return False

    def _take_env_ids(self, episode: _Episode, env_ids: list[int] | None) -> None:
        """Append the env's tokens after a step, or end the episode if they do not fit."""
        if env_ids is None:
            return
        room = self._room(episode)
        if len(episode.rollout.completion_ids) + len(env_ids) >= self.config.max_completion_length:
            episode.end("completion_budget")  # no room left for a policy turn
        elif room is not None and len(env_ids) >= room:
            self._end_at_context(episode, len(env_ids) + 1)  # env turn + one policy token
        else:
            episode.add(env_ids, [0.0] * len(env_ids), mask=0)

    def _step_failed(self, episode: _Episode, exc: BaseException, running: Future | None) -> None:
        """An env step raised or hung: void the episode, never reuse its env."""
        episode.abandoned = True
        self.pool.abandon(episode.env, running)
        if isinstance(exc, TimeoutError):
            episode.void(
                "env_timeout", f"env step ran past step_timeout={self.config.step_timeout} s"
            )
        else:
            episode.void("env_error", f"env step raised {type(exc).__name__}: {exc}")

    def _scripted_turn(self, episode: _Episode, limit: int) -> Generation:
        turn = len(episode.rollout.policy_texts)
        if turn >= len(episode.script or []):
            raise ValueError(
                f"the script for task {episode.rollout.task_id!r} has {turn} turns but the "
                "episode is not over; add the turns that end it"
            )
        ids = [*self.renderer.encode(episode.script[turn]), self.settings.stop_token_ids[0]]
        if len(ids) > limit:
            return Generation(ids[:limit], [0.0] * limit, "length")
        return Generation(ids, [0.0] * len(ids), "stop")

    def _decode_policy(self, generation: Generation) -> str:
        ids = generation.token_ids
        if generation.finish_reason == "stop" and ids and ids[-1] in self.settings.stop_token_ids:
            ids = ids[:-1]
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def _step(self, episode: _Episode, generation: Generation) -> list[int] | None:
        """Step the env with the turn's text (runs in a worker thread); return the env tokens
        to append, or None when the episode ended."""
        return self._stepped(
            episode, generation, episode.env.step(episode.rollout.policy_texts[-1])
        )

    def _stepped(
        self, episode: _Episode, generation: Generation, result: tuple
    ) -> list[int] | None:
        """The episode after its env's step ``result``: the env tokens to append, or None when
        the episode ended."""
        env = episode.env
        observation, reward, terminated, truncated, info = result
        if episode.abandoned:  # returned after its timeout: the episode is already void
            return None
        episode.rollout.turns = info["turn"]
        episode.rollout.stats = info["stats"]
        episode.rollout.progress = info.get("progress")
        if is_void(info.get("reward_info")):
            episode.end(VOID, 0.0, info["reward_info"])
            return None
        if terminated:
            episode.end("terminated", reward, info["reward_info"])
            return None
        if truncated:
            episode.end("turn_limit", reward, {"reward": reward, "reason": "turn limit reached"})
            return None
        played = chat_env(env)
        messages = played.messages
        split = len(messages) - len(observation)
        stop_text = self.tokenizer.decode(generation.token_ids[-1:], skip_special_tokens=False)
        return self.renderer.env_ids(messages[:split], messages[split:], played.tools, stop_text)


class RolloutEngine(EpisodeRunner):
    """Plays task rows to the end in lockstep with a generation backend; returns Rollouts.

    Each turn makes one ``backend.generate`` call for every live episode (a colocated
    ``vllm.LLM`` or transformers batch), then steps all their envs concurrently. For a
    continuous-batching server, :class:`~tool_envs.rollout.async_engine.AsyncRolloutEngine`
    lets each episode move on its own instead.

    Args:
        tokenizer: The policy's tokenizer (its chat template renders prompts and env turns).
        backend: A :class:`~tool_envs.rollout.backends.base.GenerationBackend`; None when every
            episode is scripted (exporting gold trajectories).
        settings: Sampling settings; stop tokens default to the tokenizer's EOS.
        config: Budgets, env settings, timeouts.
    """

    def __init__(
        self,
        tokenizer: Any,
        backend: GenerationBackend | None,
        settings: SamplingSettings | None = None,
        config: RolloutConfig | None = None,
    ):
        super().__init__(tokenizer, backend, settings, config)
        self.generation_calls = 0

    def run(self, tasks: TaskRows, seeds: Seeds = None, scripts: Scripts = None) -> list[Rollout]:
        """Play each task row once (repeat rows, with equal seeds, for a GRPO group).

        ``scripts[i]``, when given, replaces generation for episode ``i``: its assistant turns are
        tokenized (plus the stop token) and played through the env in order. This exports gold
        trajectories for SFT in exactly the token layout RL uses.
        """
        seeds, scripts = self._check_inputs(tasks, seeds, scripts)
        episodes: list[_Episode] = []
        try:
            for task, seed, script in zip(tasks, seeds, scripts, strict=True):
                episodes.append(self._start(task, seed, script))
            while live := [e for e in episodes if not e.done]:
                self._turn(live)
        except BaseException:
            self._release(episodes)
            raise
        return self._finish(episodes)

    # ------------------------------------------------------------------ one turn, all live episodes

    def _turn(self, live: list[_Episode]) -> None:
        caps = {id(e): cap for e in live if (cap := self._plan_turn(e)) is not None}
        live = [e for e in live if not e.done]
        if not live:
            return
        generations = self._generate(live, [self._max_tokens(caps[id(e)]) for e in live])
        stepping = [
            (episode, generation)
            for episode, generation in zip(live, generations, strict=True)
            if generation is not None
            and self._take_generation(episode, generation, caps[id(episode)])
        ]
        for episode, env_ids in self._step_all(stepping):
            self._take_env_ids(episode, env_ids)

    def _step_all(
        self, stepping: list[tuple[_Episode, Generation]]
    ) -> list[tuple[_Episode, list[int] | None]]:
        """Step every env at once; a step that raises or outlives ``step_timeout`` voids its
        own episode only. The timeout counts from when a step starts running."""
        started: dict[int, float] = {}

        def timed(episode: _Episode, generation: Generation) -> list[int] | None:
            started[id(episode)] = time.monotonic()
            return self._step(episode, generation)

        futures = {self._executor.submit(timed, e, g): e for e, g in stepping}
        pending = set(futures)
        results: dict[int, list[int] | None] = {}
        timeout = self.config.step_timeout
        while pending:
            done, pending = wait(
                pending, timeout=0.05 if timeout else None, return_when=FIRST_COMPLETED
            )
            for future in done:
                episode = futures[future]
                try:
                    results[id(episode)] = future.result()
                except Exception as exc:  # any env failure voids only its own episode
                    self._step_failed(episode, exc, None)
            if timeout is None:
                continue
            now = time.monotonic()
            for future in list(pending):
                begun = started.get(id(futures[future]))
                if begun is not None and now - begun > timeout:
                    pending.discard(future)
                    self._step_failed(futures[future], TimeoutError(), future)
        return [(e, results.get(id(e))) for e, _ in stepping if not e.done]

    def _generate(self, live: list[_Episode], max_tokens: list[int]) -> list[Generation | None]:
        """One backend call for every unscripted episode; scripted turns are tokenized. A
        failed call voids the episodes it was for (None in their place)."""
        sampled = [i for i, e in enumerate(live) if e.script is None]
        results: list[Generation | None] = [None] * len(live)
        if sampled and self.backend is None:
            raise ValueError("this engine has no generation backend; pass scripts for every task")
        if sampled:
            contexts = [
                live[i].rollout.prompt_ids + live[i].rollout.completion_ids for i in sampled
            ]
            try:
                generations = self.backend.generate(
                    contexts, [max_tokens[i] for i in sampled], self.settings
                )
            except GenerationServerError as exc:
                for i in sampled:
                    live[i].void("generation", str(exc))
                generations = [None] * len(sampled)
            else:
                self.generation_calls += 1
            if len(generations) != len(sampled):
                raise RuntimeError(
                    f"backend returned {len(generations)} generations for {len(sampled)} prompts"
                )
            for i, generation in zip(sampled, generations, strict=True):
                results[i] = generation
        for i, episode in enumerate(live):
            if episode.script is not None:
                results[i] = self._scripted_turn(episode, max_tokens[i])
        return results

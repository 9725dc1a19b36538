"""Run batches of episodes in lockstep and keep their exact token bookkeeping.

Each turn makes ONE generation call for every live episode, then steps their envs concurrently
(a step may wait on a search API, an MCP server or a simulated user). Policy tokens are kept as
generated; the tokens between policy turns are the env's, computed from the model's own chat
template (see :mod:`tool_envs.rollout.template`) and masked out of the loss.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import tool_envs
from tool_envs.core.messages import Message
from tool_envs.rollout.backends.base import Generation, GenerationBackend, SamplingSettings
from tool_envs.rollout.template import ChatTemplateRenderer

gym.register_envs(tool_envs)


@dataclass(frozen=True)
class RolloutConfig:
    """Budgets and env settings of a rollout.

    Attributes:
        max_completion_length: Cap on the WHOLE multi-turn completion (policy and env tokens),
            as TRL's ``max_completion_length``; an episode that would exceed it ends truncated.
        max_tokens_per_turn: Cap on one policy turn; a turn that hits it ends the episode
            truncated (the completion then does not end on a stop token).
        max_turns: Assistant turns per episode; None keeps each env's registered limit.
        env_workers: Threads that step envs concurrently.
        env_kwargs: Constructor arguments per env id, e.g. ``{"tool_envs/Calculator-v0":
            {"parser": "hermes"}}``.
        chat_template: Template to use instead of the tokenizer's own.
        template_kwargs: Extra template variables (e.g. ``{"enable_thinking": False}``).
    """

    max_completion_length: int = 1024
    max_tokens_per_turn: int = 256
    max_turns: int | None = None
    env_workers: int = 8
    env_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    chat_template: str | None = None
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("max_completion_length", "max_tokens_per_turn", "env_workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"RolloutConfig.max_turns must be >= 1 or None, got {self.max_turns}")


@dataclass
class Rollout:
    """One finished episode, ready for a trainer.

    Attributes:
        prompt_ids: The rendered prompt (system + user + tools + assistant header).
        completion_ids: Policy and env tokens after the prompt, in order.
        logprobs: Per completion token: the sampler's log-prob on policy tokens, 0.0 on env
            tokens; None if the backend gave none.
        env_mask: Per completion token: 1 = policy (trained on), 0 = env (masked out).
        reward: The env's reward (0.0 when the episode was cut short).
        reward_info: Why, from the env; or a reason the engine ended the episode.
        finish: How the episode ended:

            * ``"terminated"``: the task ended;
            * ``"turn_limit"``: the env's max turns;
            * ``"turn_tokens"``: a turn hit ``max_tokens_per_turn``;
            * ``"completion_budget"``: ``max_completion_length`` left no room for more;
            * ``"context_length"``: the context reached the backend's ``max_model_len`` (a
              turn was cut at it, or no room was left for a policy token); reward 0, and
              ``reward_info["reason"]`` says so. Only that episode ends; the batch goes on.
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
    turns: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    policy_texts: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.finish != "terminated"

    @property
    def success(self) -> bool:
        return self.reward >= 1.0


@dataclass
class _Episode:
    env: gym.Env
    rollout: Rollout
    seed: int | None
    script: list[str] | None = None
    done: bool = False

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
        self.rollout.finish = finish
        self.rollout.reward = float(reward)
        self.rollout.reward_info = reward_info
        self.rollout.messages = self.env.unwrapped.messages
        self.done = True


class EnvPool:
    """Reusable env instances per env id, so servers and sandboxes outlive single episodes."""

    def __init__(self, config: RolloutConfig):
        self.config = config
        self._free: dict[str, list[gym.Env]] = defaultdict(list)
        self._all: list[gym.Env] = []

    def acquire(self, env_id: str) -> gym.Env:
        if self._free[env_id]:
            return self._free[env_id].pop()
        kwargs = dict(self.config.env_kwargs.get(env_id, {}))
        if self.config.max_turns is not None:
            kwargs["max_episode_steps"] = self.config.max_turns
        env = gym.make(env_id, **kwargs)
        self._all.append(env)
        return env

    def release(self, env_id: str, env: gym.Env) -> None:
        self._free[env_id].append(env)

    def close(self) -> None:
        for env in self._all:
            env.close()
        self._all.clear()
        self._free.clear()


class RolloutEngine:
    """Plays task rows to the end with a generation backend and returns :class:`Rollout` s.

    Args:
        tokenizer: The policy's tokenizer (its chat template renders prompts and env turns).
        backend: A :class:`~tool_envs.rollout.backends.base.GenerationBackend`; None when every
            episode is scripted (exporting gold trajectories).
        settings: Sampling settings; stop tokens default to the tokenizer's EOS.
        config: Budgets and env settings.
    """

    def __init__(
        self,
        tokenizer: Any,
        backend: GenerationBackend | None,
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
        self._executor = ThreadPoolExecutor(max_workers=self.config.env_workers)
        self.generation_calls = 0

    def run(
        self,
        tasks: Sequence[Mapping[str, Any]],
        seeds: Sequence[int | None] | None = None,
        scripts: Sequence[Sequence[str] | None] | None = None,
    ) -> list[Rollout]:
        """Play each task row once (repeat rows, with equal seeds, for a GRPO group).

        ``scripts[i]``, when given, replaces generation for episode ``i``: its assistant turns are
        tokenized (plus the stop token) and played through the env in order. This exports gold
        trajectories for SFT in exactly the token layout RL uses.
        """
        count = len(tasks)
        for name, values in (("seeds", seeds), ("scripts", scripts)):
            if values is not None and len(values) != count:
                raise ValueError(f"got {len(values)} {name} for {count} tasks")
        seeds = list(seeds) if seeds is not None else [None] * count
        scripts = list(scripts) if scripts is not None else [None] * count
        episodes = [
            self._start(task, seed, script)
            for task, seed, script in zip(tasks, seeds, scripts, strict=True)
        ]
        try:
            while live := [e for e in episodes if not e.done]:
                self._turn(live)
        finally:
            for episode in episodes:
                self.pool.release(episode.rollout.env_id, episode.env)
        return [e.rollout for e in episodes]

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.pool.close()

    def __enter__(self) -> RolloutEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one episode starts

    def _start(
        self, task: Mapping[str, Any], seed: int | None, script: Sequence[str] | None
    ) -> _Episode:
        env_id = task.get("env_id") or task.get("env_class")
        if not isinstance(env_id, str):
            raise ValueError(f"task row has no env_id: {sorted(task)}")
        env = self.pool.acquire(env_id)
        _, info = env.reset(seed=seed, options={"task": dict(task)})
        unwrapped = env.unwrapped
        prompt_ids = self.renderer.prompt_ids(unwrapped.messages, unwrapped.tools)
        rollout = Rollout(env_id=env_id, task_id=info.get("task_id"), prompt_ids=prompt_ids)
        script_turns = list(script) if script is not None else None
        return _Episode(env=env, rollout=rollout, seed=seed, script=script_turns)

    # ------------------------------------------------------------------ one turn, all live episodes

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

    def _turn(self, live: list[_Episode]) -> None:
        for episode in live:
            room = self._room(episode)
            if room is not None and room < 1:
                self._end_at_context(episode, 1)  # not even one policy token fits
        live = [e for e in live if not e.done]
        if not live:
            return
        budget = self.config.max_completion_length
        caps = [
            (self.config.max_tokens_per_turn, budget - len(e.rollout.completion_ids), self._room(e))
            for e in live
        ]
        max_tokens = [min(c for c in cap if c is not None) for cap in caps]
        generations = self._generate(live, max_tokens)

        stepping = []
        for episode, generation, cap in zip(live, generations, caps, strict=True):
            episode.add(generation.token_ids, generation.logprobs, mask=1)
            episode.rollout.policy_texts.append(self._decode_policy(generation))
            if generation.finish_reason == "stop":
                stepping.append((episode, generation))
                continue
            turn, left, room = cap
            if room is not None and room < min(turn, left):
                self._end_at_context(episode, 1)
            else:
                episode.end("completion_budget" if left < turn else "turn_tokens")
        for episode, env_ids in self._executor.map(lambda pair: self._step(*pair), stepping):
            if env_ids is None:
                continue
            room = self._room(episode)
            if len(episode.rollout.completion_ids) + len(env_ids) >= budget:
                episode.end("completion_budget")  # no room left for a policy turn
            elif room is not None and len(env_ids) >= room:
                self._end_at_context(episode, len(env_ids) + 1)  # env turn + one policy token
            else:
                episode.add(env_ids, [0.0] * len(env_ids), mask=0)

    def _generate(self, live: list[_Episode], max_tokens: list[int]) -> list[Generation]:
        """One backend call for every unscripted episode; scripted turns are tokenized."""
        sampled = [i for i, e in enumerate(live) if e.script is None]
        results: list[Generation | None] = [None] * len(live)
        if sampled and self.backend is None:
            raise ValueError("this engine has no generation backend; pass scripts for every task")
        if sampled:
            contexts = [
                live[i].rollout.prompt_ids + live[i].rollout.completion_ids for i in sampled
            ]
            generations = self.backend.generate(
                contexts, [max_tokens[i] for i in sampled], self.settings
            )
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
        return results  # type: ignore[return-value]

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

    def _step(self, episode: _Episode, generation: Generation) -> tuple[_Episode, list[int] | None]:
        """Step the env with the turn's text; return the env tokens to append, or None if done."""
        env = episode.env
        observation, reward, terminated, truncated, info = env.step(
            episode.rollout.policy_texts[-1]
        )
        episode.rollout.turns = info["turn"]
        episode.rollout.stats = info["stats"]
        if terminated:
            episode.end("terminated", reward, info["reward_info"])
            return episode, None
        if truncated:
            episode.end("turn_limit", reward, {"reward": reward, "reason": "turn limit reached"})
            return episode, None
        messages = env.unwrapped.messages
        split = len(messages) - len(observation)
        stop_text = self.tokenizer.decode(generation.token_ids[-1:], skip_special_tokens=False)
        env_ids = self.renderer.env_ids(
            messages[:split], messages[split:], env.unwrapped.tools, stop_text
        )
        return episode, env_ids

"""Play task rows with a policy and score them: :func:`play`, the one place every trainer and
evaluator goes through.

The GRPO ``rollout_func``, the asynchronous rollout worker, the held-out evaluator, SFT export
and ``tool-envs eval`` each used to choose an engine, run it, check the void episodes, score and
measure on their own, and the copies drifted. Here that is done once: the engine from
:func:`~tool_envs.rollout.choice.make_engine`, the void rule, the score (:meth:`Played.of`) and
the episode metrics (:mod:`tool_envs.rollout.metrics`). The callers keep only what is theirs:
TRL's columns, group advantages, per-task success, SFT rows, eval's trial files and resuming.

**Policies** are token-level (a tokenizer and a generation backend: the lockstep or the
asynchronous engine, episodes as :class:`~tool_envs.rollout.engine.Rollout` s with their tokens)
or message-level (``Policy(agent=...)``: an agent that talks to a chat API, or replays gold
turns, with no tokenizer; the chat engine, episodes as
:class:`~tool_envs.rollout.chat_engine.ChatEpisode` s, which have no tokens). Scoring, the void
rule and the metrics read what both have (:class:`~tool_envs.rollout.episode.Episode`).
:meth:`Player.stream` yields a message-level policy's episodes one by one as they finish, scored,
so ``tool-envs eval`` saves each trial at once and can stop between them.

**Seeds** are the caller's to give, one per row: a GRPO group's come from
:mod:`tool_envs.rollout.seeds`; None lets each env draw its own.

**Void episodes** (infrastructure failed; see :mod:`tool_envs.core.outcome`) get no reward.
An env step that raises voids its own episode only, in every engine. One rule for a failed
generation request, the same in both token engines: it voids the episodes it was for (the
lockstep engine's one call per turn is for every live episode; the asynchronous engine's for
one); a message-level agent's API that fails stops play instead (see
:mod:`~tool_envs.rollout.chat_engine`).
A batch in which more than ``RolloutConfig.max_void_fraction`` of the episodes are void raises
:class:`~tool_envs.errors.RolloutVoidError`, every episode kept on it: something is broken, and
training on what is left would hide it (a stream: once every row has its episode).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tool_envs.core.closing import ClosedOnExit
from tool_envs.core.messages import Message
from tool_envs.errors import RolloutVoidError
from tool_envs.rollout.agents import Agent
from tool_envs.rollout.async_engine import AsyncRolloutEngine
from tool_envs.rollout.backends.base import SamplingSettings
from tool_envs.rollout.chat_engine import ChatEngine, ChatEpisode
from tool_envs.rollout.choice import KINDS, EngineKind, check_choice, make_engine
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.episode import Episode, Scripts, Seeds, TaskRows
from tool_envs.rollout.metrics import episode_metrics, episode_summary

RewardFunc = Callable[..., Sequence[float | None]]
"""A TRL-style reward function: ``f(completions, **columns) -> one score (or None) per episode``,
where the columns are :func:`columns`' (the extra columns TRL hands a ``rollout_func``'s reward
functions)."""


@dataclass(frozen=True)
class Policy:
    """What writes the policy turns: a tokenizer and a backend (token-level), or an agent
    (message-level); a ValueError names what does not fit together.

    Attributes:
        tokenizer: The policy's tokenizer (its chat template renders prompts and env turns).
        backend: A :class:`~tool_envs.rollout.backends.base.GenerationBackend` or an
            :class:`~tool_envs.rollout.backends.base.AsyncGenerationBackend`; None when every
            episode is scripted (gold trajectories for SFT).
        sampling: Sampling settings; stop tokens default to the tokenizer's EOS.
        engine: ``"lockstep"``, ``"async"`` (needs a server backend), ``"chat"`` (needs an
            agent) or ``"auto"`` (chat for an agent, async for a server backend, else
            lockstep); see :func:`~tool_envs.rollout.choice.make_engine`.
        agent: A message-level :class:`~tool_envs.rollout.agents.Agent` (a chat API, gold or
            empty turns) instead of a tokenizer and backend: played by the chat engine.
    """

    tokenizer: Any = None
    backend: Any = None
    sampling: SamplingSettings | None = None
    engine: EngineKind = "auto"
    agent: Agent | None = None

    def __post_init__(self) -> None:
        if self.engine not in KINDS:
            raise ValueError(f"Policy.engine must be one of {KINDS}, got {self.engine!r}")
        check_choice(self.tokenizer, self.backend, self.sampling, self.engine, self.agent)


def completion_messages(rollout: Episode) -> list[Message]:
    """The messages after the task's prompt: every assistant turn and what the env answered."""
    first = next(
        (i for i, m in enumerate(rollout.messages) if m.get("role") == "assistant"),
        len(rollout.messages),
    )
    return rollout.messages[first:]


def columns(rollouts: Sequence[Episode]) -> dict[str, list[Any]]:
    """The episodes as columns: their tokens, and what reward functions read by name.

    ``env_reward``, ``env_success`` and ``env_progress`` are None for a void episode;
    ``reward_info`` is JSON; ``logprobs`` is None when any episode has none. Message-level
    episodes (:class:`~tool_envs.rollout.chat_engine.ChatEpisode`) have no tokens: the token
    columns (``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask``) are left out, so a
    reward function that needs them fails naming the column instead of reading made-up ids.
    """
    tokens: dict[str, Any] = {}
    if all(isinstance(r, Rollout) for r in rollouts):
        logprobs = [r.logprobs for r in rollouts]
        tokens = {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [list(r.completion_ids) for r in rollouts],
            "logprobs": None if any(lp is None for lp in logprobs) else logprobs,
            "env_mask": [list(r.env_mask) for r in rollouts],
        }
    return {
        **tokens,
        "env_reward": [None if r.void else r.reward for r in rollouts],
        "env_success": [None if r.void else float(r.success) for r in rollouts],
        "env_progress": [None if r.void else r.progress for r in rollouts],
        "reward_info": [json.dumps(r.reward_info, default=str) for r in rollouts],
        "env_id": [r.env_id for r in rollouts],
        "task_id": [r.task_id for r in rollouts],
        "num_turns": [r.turns for r in rollouts],
        "finish": [r.finish for r in rollouts],
        "outcome": [r.outcome for r in rollouts],
    }


def score(
    rollouts: Sequence[Episode],
    reward_funcs: Sequence[RewardFunc] = (),
    reward_weights: Sequence[float] | None = None,
) -> list[float | None]:
    """Each episode's reward: None when void; else the weighted sum of ``reward_funcs`` (called
    on the episodes that are not void), or with no reward functions the env's reward.

    As GRPOTrainer sums them: a function's None adds nothing (a reward that does not apply to
    this row, e.g. ``tool_sequence`` in a mixed batch), and an episode every function gives None
    is unscored (None).
    """
    _check_weights(reward_funcs, reward_weights)
    kept = [r for r in rollouts if not r.void]
    if not reward_funcs:
        totals: list[float | None] = [r.reward for r in kept]
    else:
        weights = reward_weights if reward_weights is not None else [1.0] * len(reward_funcs)
        totals = [None] * len(kept)
        named = columns(kept)
        completions = [completion_messages(r) for r in kept]
        for func, weight in zip(reward_funcs, weights, strict=True):
            scores = list(func(completions=completions, **named))
            if len(scores) != len(kept):
                name = getattr(func, "__name__", repr(func))
                raise ValueError(
                    f"reward function {name} gave {len(scores)} scores for {len(kept)} episodes"
                )
            totals = [
                total if s is None else (total or 0.0) + weight * float(s)
                for total, s in zip(totals, scores, strict=True)
            ]
    scored = iter(totals)
    return [None if r.void else next(scored) for r in rollouts]


def _check_weights(funcs: Sequence[RewardFunc], weights: Sequence[float] | None) -> None:
    if weights is not None and len(weights) != len(funcs):
        raise ValueError(f"got {len(weights)} reward_weights for {len(funcs)} reward_funcs")


def check_void(rollouts: Sequence[Episode], max_fraction: float) -> None:
    """Raise :class:`RolloutVoidError` when more than ``max_fraction`` of ``rollouts`` are void."""
    void = sum(r.void for r in rollouts)
    if rollouts and void / len(rollouts) > max_fraction:
        raise RolloutVoidError(list(rollouts), max_fraction)


@dataclass
class Played:
    """A played batch: its episodes in row order, their rewards and their metrics.

    Attributes:
        rollouts: One episode per row, void ones included: :class:`Rollout` s from the token
            engines, :class:`~tool_envs.rollout.chat_engine.ChatEpisode` s from the chat engine.
        rewards: Per rollout, :func:`score`'s reward (None: void, or unscored).
        summaries: Per rollout, :func:`~tool_envs.rollout.metrics.episode_summary` (small, so a
            trainer can gather them across processes before :attr:`metrics`).
    """

    rollouts: list[Episode]
    rewards: list[float | None]
    summaries: list[dict[str, Any]]

    @classmethod
    def of(
        cls,
        rollouts: Sequence[Episode],
        reward_funcs: Sequence[RewardFunc] = (),
        reward_weights: Sequence[float] | None = None,
    ) -> Played:
        """Score and summarise ``rollouts`` (see :func:`score`)."""
        return cls(
            rollouts=list(rollouts),
            rewards=score(rollouts, reward_funcs, reward_weights),
            summaries=[episode_summary(r) for r in rollouts],
        )

    @property
    def void(self) -> int:
        """How many episodes are void."""
        return sum(r.void for r in self.rollouts)

    @property
    def void_fraction(self) -> float:
        return self.void / max(len(self.rollouts), 1)

    @property
    def metrics(self) -> dict[str, float]:
        """``env/...`` means of this batch (:func:`~tool_envs.rollout.metrics.episode_metrics`)."""
        return episode_metrics(self.summaries)


class Finished(NamedTuple):
    """One row's end in :meth:`Player.stream`.

    Attributes:
        index: The row's position in the rows given.
        episode: Its episode; None when ``error`` stopped its play.
        reward: :func:`score`'s reward of the episode (None: void, unscored, or no episode).
        error: What stopped the row's play (the agent's API is unreachable, the env cannot be
            made or cannot start the task), or None.
    """

    index: int
    episode: ChatEpisode | None
    reward: float | None
    error: Exception | None = None


class Player(ClosedOnExit):
    """Plays batches of task rows with one policy and one settings object, reusing one engine
    (and so its env pool) across batches; :func:`play` is one batch of it, :meth:`stream` a
    message-level agent's episodes one by one.

    Args:
        policy: What writes the policy turns (tokenizer, backend, sampling, engine kind; or an
            agent).
        settings: Budgets and env settings of the episodes, ``max_void_fraction`` included.
        reward_funcs: Score each episode (see :func:`score`); none: the env's reward.
        reward_weights: One weight per reward function (default 1.0 each).
    """

    def __init__(
        self,
        policy: Policy,
        settings: RolloutConfig | None = None,
        *,
        reward_funcs: Sequence[RewardFunc] = (),
        reward_weights: Sequence[float] | None = None,
    ):
        _check_weights(reward_funcs, reward_weights)
        self.settings = settings or RolloutConfig()
        self.reward_funcs = list(reward_funcs)
        self.reward_weights = None if reward_weights is None else list(reward_weights)
        self.engine = make_engine(
            policy.tokenizer,
            policy.backend,
            policy.sampling,
            self.settings,
            policy.engine,
            agent=policy.agent,
        )

    def play(self, rows: TaskRows, seeds: Seeds = None, *, scripts: Scripts = None) -> Played:
        """Play each row once (repeat rows, with equal seeds, for a GRPO group); ``scripts[i]``,
        when given, replaces generation for episode ``i`` (gold turns, for SFT)."""
        return self._played(self.engine.run(rows, seeds, scripts))

    async def aplay(
        self,
        rows: TaskRows,
        seeds: Seeds = None,
        *,
        scripts: Scripts = None,
    ) -> Played:
        """:meth:`play` on a running event loop (asynchronous engine only; several batches may
        play at once, as the async worker's groups do)."""
        if not isinstance(self.engine, AsyncRolloutEngine):
            raise TypeError(
                f"aplay() needs the asynchronous engine, but this player's is "
                f"{type(self.engine).__name__}; use Policy(engine='async') with a server backend"
            )
        return self._played(await self.engine.arun(rows, seeds, scripts))

    def stream(
        self,
        rows: TaskRows,
        seeds: Seeds = None,
        *,
        stop: threading.Event | None = None,
        abandon: threading.Event | None = None,
    ) -> Iterator[Finished]:
        """Play each row once with a message-level agent and yield each row's :class:`Finished`
        as its episode ends, scored as :meth:`play` scores (a void episode gets None; reward
        functions are called on each episode alone).

        A row whose play stopped on an error comes with ``error`` set and no episode; the caller
        decides whether to go on (:meth:`play` raises it). Once ``stop`` is set no row starts and
        the episodes playing end at their next turn (dropped, not yielded); once ``abandon`` is
        set the stream ends at once (see :mod:`~tool_envs.rollout.chat_engine`). When every row
        has its episode, the void rule of :meth:`play` holds: more than ``max_void_fraction``
        void raises :class:`RolloutVoidError` (every episode already yielded).
        """
        if not isinstance(self.engine, ChatEngine):
            raise TypeError(
                f"stream() plays a message-level agent, but this player's engine is "
                f"{type(self.engine).__name__}; use Policy(agent=...), or play() for a batch"
            )
        stop = stop if stop is not None else threading.Event()
        played = self.engine.stream(rows, seeds, stop=stop, abandon=abandon)
        return self._scored(played, stop, len(rows))

    def _scored(
        self,
        played: Iterator[tuple[int, ChatEpisode | Exception]],
        stop: threading.Event,
        count: int,
    ) -> Iterator[Finished]:
        episodes: list[ChatEpisode] = []
        with contextlib.closing(played):  # leaving this stream leaves the engine's
            for index, item in played:
                if isinstance(item, Exception):
                    yield Finished(index, None, None, item)
                    continue
                episodes.append(item)
                reward = score([item], self.reward_funcs, self.reward_weights)[0]
                yield Finished(index, item, reward)
        if not stop.is_set() and len(episodes) == count:
            check_void(episodes, self.settings.max_void_fraction)

    def _played(self, rollouts: Sequence[Episode]) -> Played:
        check_void(rollouts, self.settings.max_void_fraction)
        return Played.of(rollouts, self.reward_funcs, self.reward_weights)

    def close(self) -> None:
        self.engine.close()


def play(
    rows: TaskRows,
    seeds: Seeds,
    policy: Policy,
    settings: RolloutConfig | None = None,
    *,
    reward_funcs: Sequence[RewardFunc] = (),
    reward_weights: Sequence[float] | None = None,
    scripts: Scripts = None,
) -> Played:
    """Play ``rows`` once each with ``policy`` under ``settings`` and score them: one batch of a
    :class:`Player` (use a Player to play several batches on one env pool)."""
    with Player(
        policy, settings, reward_funcs=reward_funcs, reward_weights=reward_weights
    ) as player:
        return player.play(rows, seeds, scripts=scripts)

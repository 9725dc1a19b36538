"""Gold trajectories as SFT data, tokenized exactly as the rollout engine tokenizes episodes.

Each env's gold turns are played through the env with the engine's scripted turns, so SFT sees the
same token layout (chat template, env turns, stop tokens) that GRPO will later train on, and the
loss covers only the assistant's tokens.
"""

from __future__ import annotations

import json
import multiprocessing
import random
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from typing import Any

import gymnasium as gym

from tool_envs.core.parsers.hermes import CLOSE_TAG, OPEN_TAG
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.episode import TaskRows
from tool_envs.rollout.player import Player, Policy


def gold_turns_of(tasks: TaskRows) -> list[list[str] | None]:
    """Each task's gold assistant turns, from its env's ``gold_turns``; None where it has none."""
    envs: dict[str, gym.Env] = {}
    golds = []
    try:
        for task in tasks:
            env_id = task["env_id"]
            if env_id not in envs:
                envs[env_id] = gym.make(env_id)
            golds.append(envs[env_id].unwrapped.gold_turns(task))
    finally:
        for env in envs.values():
            env.close()
    return golds


def gold_scripts(tasks: TaskRows) -> list[list[str]]:
    """Each task's gold assistant turns; a task whose env has no gold is an error."""
    scripts = gold_turns_of(tasks)
    for index, turns in enumerate(scripts):
        if turns is None:
            env_id = tasks[index]["env_id"]
            raise ValueError(f"task {index}: {env_id} has no gold turns to learn from")
    return [turns for turns in scripts if turns is not None]


def sft_rows(rollouts: Sequence[Rollout]) -> list[dict[str, list[int]]]:
    """TRL SFTTrainer rows: ``input_ids`` and ``assistant_masks`` (1 on policy tokens only)."""
    return [
        {
            "input_ids": r.prompt_ids + r.completion_ids,
            "assistant_masks": [0] * len(r.prompt_ids) + r.env_mask,
        }
        for r in rollouts
    ]


LOSS_ON = ("policy", "transcript")


def with_loss_on(rows: Sequence[dict[str, list[int]]], loss_on: str) -> list[dict[str, list[int]]]:
    """``rows`` whose loss covers the agent's tokens (``policy``) or every token (``transcript``).

    A pretrained model can already copy an id it was told; a tiny random one must learn to,
    and the agent's turns give it few copies to learn from (~255 of a tau cancellation's ~2,200
    tokens). The user's replies and the tool results repeat the same ids (an order id the user
    gave comes back in the order record), so a loss on the whole transcript teaches copying from
    every line. It also teaches the env's lines, which a policy never writes: an explicit choice
    for warm-starting tiny models, never the default.
    """
    if loss_on not in LOSS_ON:
        raise ValueError(f"loss_on must be one of {', '.join(LOSS_ON)}, got {loss_on!r}")
    if loss_on == "policy":
        return list(rows)
    return [{**row, "assistant_masks": [1] * len(row["input_ids"])} for row in rows]


def malformed_call(turn: str, rng: random.Random) -> str | None:
    """``turn``'s tool call cut inside its JSON (closing tag kept), or None: no call to cut."""
    start, end = turn.find("{"), turn.rfind("}")
    if OPEN_TAG not in turn or CLOSE_TAG not in turn or end - start < 2:
        return None
    return turn[: rng.randrange(start + 1, end)] + "\n" + CLOSE_TAG


def miscopied_call(turn: str, rng: random.Random) -> str | None:
    """``turn``'s tool call with one string argument miscopied (1-3 characters dropped), or None:
    no string argument of 4 or more characters. The env should answer it with a tool error."""
    start, end = turn.find(OPEN_TAG), turn.rfind(CLOSE_TAG)
    if start < 0 or end < 0:
        return None
    try:
        call = json.loads(turn[start + len(OPEN_TAG) : end])
    except json.JSONDecodeError:
        return None
    arguments = call.get("arguments") if isinstance(call, dict) else None
    names = [k for k, v in (arguments or {}).items() if isinstance(v, str) and len(v) >= 4]
    if not names:
        return None
    name = rng.choice(names)
    value = arguments[name]
    cut = rng.randrange(1, len(value) - 1)
    arguments[name] = value[:cut] + value[cut + rng.randint(1, min(3, len(value) - 1 - cut)) :]
    return (
        f"{turn[:start]}{OPEN_TAG}\n{json.dumps(call)}\n{CLOSE_TAG}{turn[end + len(CLOSE_TAG) :]}"
    )


TRIES = (malformed_call, miscopied_call)


def with_recovery(
    tasks: TaskRows, scripts: Sequence[list[str]], share: float, seed: int
) -> tuple[list[list[str]], list[set[int]]]:
    """Scripts where ``share`` of the tool-call turns follow a failed try of the same call.

    Gold episodes never go wrong, so a model trained only on them has never seen the env's
    error replies, and a sampled mistake leaves it off the data it knows: a tiny warm start
    sampled 12-18 malformed calls in a row until the turn limit, or one miscopied user id 18
    times. A try is, half of the time each, the call cut inside its JSON (the env's parse
    error) or with an argument miscopied (a tool error). The tries teach the way back (the
    gold call after the error); their turns are returned, per script, to be left out of the
    loss. Each task's draw depends only on ``seed`` and its id.
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"recovery share must be in [0, 1], got {share}")
    augmented, tries = [], []
    for task, turns in zip(tasks, scripts, strict=True):
        rng = random.Random(f"{seed}/{task['extra_info']['id']}")
        script: list[str] = []
        tried: set[int] = set()
        for turn in turns:
            if rng.random() < share:
                first, second = TRIES if rng.random() < 0.5 else TRIES[::-1]
                broken = first(turn, rng) or second(turn, rng)
                if broken is not None:
                    tried.add(len(script))
                    script.append(broken)
            script.append(turn)
        augmented.append(script)
        tries.append(tried)
    return augmented, tries


def without_turns(row: dict[str, list[int]], turns: set[int]) -> dict[str, list[int]]:
    """``row`` with the loss off the policy turns numbered ``turns`` (runs of mask 1, from 0)."""
    mask, turn, inside = list(row["assistant_masks"]), -1, False
    for index, value in enumerate(mask):
        if value and not inside:
            turn += 1
        inside = bool(value)
        if value and turn in turns:
            mask[index] = 0
    return {**row, "assistant_masks": mask}


def errors_of(rollout: Rollout) -> int:
    return rollout.stats.get("parse_errors", 0) + rollout.stats.get("tool_errors", 0)


def play_tries(
    player: Player,
    tasks: TaskRows,
    plain: Sequence[list[str]],
    scripts: Sequence[list[str]],
    tries: Sequence[set[int]],
) -> tuple[list[Rollout], list[set[int]]]:
    """Play ``scripts``; a task whose tries did not draw one env error each, or whose episode
    they spoiled (a miscopied id that names another record), is played as ``plain`` instead."""
    rollouts, tries = player.play(tasks, scripts=scripts).rollouts, list(tries)
    spoiled = [
        i
        for i, (rollout, tried) in enumerate(zip(rollouts, tries, strict=True))
        if tried and (not rollout.success or errors_of(rollout) != len(tried))
    ]
    if spoiled:
        again = [tasks[i] for i in spoiled]
        replayed = player.play(again, scripts=[plain[i] for i in spoiled]).rollouts
        for i, rollout in zip(spoiled, replayed, strict=True):
            rollouts[i], tries[i] = rollout, set()
    return rollouts, tries


def gold_sft_rows(
    tokenizer: Any,
    tasks: TaskRows,
    config: RolloutConfig | None = None,
    recovery_share: float = 0.0,
    seed: int = 0,
) -> list[dict]:
    """Play every task's gold turns and return SFT rows; gold that fails its task is an error.

    Played by :class:`~tool_envs.rollout.player.Player` with no generation backend (every turn is
    scripted) under ``config``'s budgets. ``recovery_share`` > 0 adds failed tries before gold
    tool calls (:func:`with_recovery`, :func:`play_tries`).
    """
    plain = gold_scripts(tasks)
    with Player(Policy(tokenizer), config) as player:
        if not recovery_share:
            rollouts, tries = player.play(tasks, scripts=plain).rollouts, [set() for _ in plain]
        else:
            scripts, tries = with_recovery(tasks, plain, recovery_share, seed)
            rollouts, tries = play_tries(player, tasks, plain, scripts, tries)
    failed = [(r.task_id, r.reward_info) for r in rollouts if not r.success]
    if failed:
        raise ValueError(
            f"{len(failed)} gold trajectories did not solve their task, e.g. {failed[0]}"
        )
    return [without_turns(row, tried) for row, tried in zip(sft_rows(rollouts), tries, strict=True)]


def gold_sft_rows_in_processes(
    tokenizer: Any,
    tasks: TaskRows,
    config: RolloutConfig,
    workers: int,
    min_per_worker: int = 100,
    recovery_share: float = 0.0,
    seed: int = 0,
) -> list[dict]:
    """:func:`gold_sft_rows` of ``tasks`` split over ``workers`` processes, rows in task order.

    Playing a gold episode is mostly tokenizing and template rendering, on one core: a tau
    cancellation takes ~65 ms, so 6,000 of them took minutes of a GPU run's budget before
    training began. Workers are spawned (safe after torch is loaded) and each plays one
    contiguous share of the tasks with its own player. A spawned worker costs seconds to start,
    so each gets at least ``min_per_worker`` tasks (fewer workers, or none, for small sets).
    ``recovery_share`` and ``seed``: as in :func:`gold_sft_rows`.
    """
    tasks = list(tasks)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    workers = min(workers, len(tasks) // max(min_per_worker, 1))
    if workers <= 1:
        return gold_sft_rows(tokenizer, tasks, config, recovery_share, seed)
    size = -(-len(tasks) // workers)
    shares = [tasks[start : start + size] for start in range(0, len(tasks), size)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(shares), mp_context=context) as pool:
        parts = pool.map(
            _gold_rows_of_share,
            repeat(tokenizer),
            repeat(config),
            shares,
            repeat(recovery_share),
            repeat(seed),
        )
        return [row for part in parts for row in part]


def _gold_rows_of_share(
    tokenizer: Any,
    config: RolloutConfig,
    tasks: TaskRows,
    recovery_share: float,
    seed: int,
) -> list[dict]:
    import tool_envs  # registers the env ids in the spawned process

    gym.register_envs(tool_envs)
    return gold_sft_rows(tokenizer, tasks, config, recovery_share, seed)


def check_fits(rows: Sequence[Mapping[str, list[int]]], max_length: int | None) -> None:
    """Refuse gold rows longer than SFT's ``max_length`` instead of letting TRL cut them.

    TRL truncates each row to ``max_length`` and then drops rows left without an assistant
    token, without a word: a tau episode (a ~2,500-token policy prompt with a tiny tokenizer)
    is over ``SFTConfig``'s default of 1,024, so every row vanished and training failed on an
    empty dataset, and shorter cuts would silently train on half-episodes.
    """
    if max_length is None or not rows:
        return
    longest = max(len(row["input_ids"]) for row in rows)
    too_long = sum(len(row["input_ids"]) > max_length for row in rows)
    if too_long:
        raise ValueError(
            f"{too_long} of {len(rows)} gold trajectories are longer than max_length={max_length} "
            f"tokens (the longest has {longest}); set max_length to at least {longest}, or to "
            "null, in the SFT config"
        )

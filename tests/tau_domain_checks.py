"""Helpers the tau domain test files share: write a tool-call turn, read gold actions, the
``env`` and ``tools`` fixtures, an expected tool error, play assistant turns through an env to
the end of the episode."""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter

import pytest

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Toolset
from tool_envs.tau.db import BaseTables, Database
from tool_envs.tau.task import parse_reward_spec


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def actions_of(task):
    return task["reward_spec"]["actions"]


def tool_runner(domain):
    """The domain's tools (the user's device tools first, for dual control) over one fresh
    episode database, called as the env calls them: ``run(name, **arguments)`` returns the
    tool message text; ``run.db`` is the database."""
    db = domain.new_database()
    sides = [Toolset.from_object(domain.tools(db))]
    if domain.user_tools is not None:
        sides.insert(0, Toolset.from_object(domain.user_tools(db)))

    def run(name, **arguments):
        toolset = next((side for side in sides if name in side), sides[-1])
        return toolset.call(ToolCall(name=name, arguments=arguments)).content

    run.db = db
    return run


def shipped(domain):
    """The domain's shipped splits, all their rows, and its base tables."""
    splits = domain.load_splits()
    return splits, [row for rows in splits.values() for row in rows], domain.load_tables()


def writes_in(write_tools):
    """``has_write(task)``: whether the task's gold calls one of ``write_tools``."""
    return lambda task: any(a["name"] in write_tools for a in actions_of(task))


def env_fixture(make_env):
    """A module fixture ``env``: ``make_env()`` once for the module's tests, then closed."""

    @pytest.fixture(scope="module", name="env")
    def env():
        environment = make_env()
        yield environment
        environment.close()

    return env


def fixtures(make_env, domain):
    """The fixtures ``env`` (:func:`env_fixture`) and ``tools`` (:func:`tool_runner` over a
    fresh episode database per test)."""
    return env_fixture(make_env), pytest.fixture(name="tools")(lambda: tool_runner(domain))


def fails(tools, name, message, **arguments):
    """The call is an error message that says ``message``, and it changed nothing."""
    before = tools.db.hash()
    result = tools(name, **arguments)
    assert result.startswith("Error: ") and message in result, result
    assert tools.db.hash() == before, "a failed write changed the database"


def say(env, turn):
    """Take one assistant turn; the text of the first message that comes back."""
    observation, *_ = env.step(turn)
    return observation[0]["content"]


def play(env, task, turns):
    """Play assistant turns; return (reward, info, tool results) when the episode ends."""
    env.reset(options={"task": task})
    results = []
    for number, turn in enumerate(turns, 1):
        observation, reward, terminated, truncated, info = env.step(turn)
        results += [m["content"] for m in observation if m["role"] == "tool"]
        if terminated or truncated:
            assert number == len(turns), "the episode ended before the last turn"
            return reward, info, results
    raise AssertionError("the episode did not end")


def hand_written(domain, opening, actions, outputs=(), *, task_id="handwritten", **scenario):
    """A task row written by hand: the domain's policy and the user's ``opening``, the gold
    ``actions`` and ``outputs``, and the user scenario (its reason for calling is the opening)."""
    return {
        "prompt": [
            {"role": "system", "content": domain.policy},
            {"role": "user", "content": opening},
        ],
        "env_id": domain.env_id,
        "reward_spec": {"actions": list(actions), "outputs": list(outputs)},
        "extra_info": {
            "id": f"{domain.name}-{task_id}",
            "domain": domain.name,
            "user_scenario": {"reason_for_call": opening, **scenario},
        },
    }


TAGS = {"refusal", "transfer", "multi_step", "multi_item", "outputs", "info", "declined"}
"""Tags each split of a domain drafted with parts carries (besides its write tools)."""


def check_splits(splits, categories, tags_needed):
    """Each split is full size and holds every category and ``tags_needed``; no task (its
    reward_spec) is in two splits, or twice in one."""
    keys = {}
    for split, rows in splits.items():
        assert len(rows) >= {"train": 500, "test": 100}[split]
        tags = Counter(tag for row in rows for tag in row["extra_info"]["tags"])
        print(split, dict(sorted(tags.items())))
        assert set(tags_needed) <= set(tags)
        assert {row["extra_info"]["category"] for row in rows} == set(categories)
        keys[split] = {json.dumps(row["reward_spec"], sort_keys=True) for row in rows}
        assert len(keys[split]) == len(rows)
    assert not keys["train"] & keys["test"]


def median_step(env, task, turns, *, fresh=False, prelude=()):
    """Median seconds of ``env.step`` over 300 tool-call turns (``turns`` cycled), none of them
    an error. ``fresh`` starts a new episode of ``task`` (and plays ``prelude``) before each."""
    env.reset(options={"task": task})
    times = []
    for number in range(300):
        if fresh:
            env.reset(options={"task": task})
            for turn in prelude:
                env.step(turn)
        turn = turns[number % len(turns)]
        started = time.perf_counter()
        observation, *_ = env.step(turn)
        times.append(time.perf_counter() - started)
        assert not observation[0]["content"].startswith("Error"), observation
    return statistics.median(times)


def check_overlay(env, task, write, read, status, record):
    """A write in one episode of ``task`` is gone in the next (``read`` shows ``status``
    again) and never reaches the base tables (``record`` is its (table, key))."""
    env.reset(options={"task": task})
    env.step(write)
    env.reset(options={"task": task})
    observation, *_ = env.step(read)
    assert json.loads(observation[0]["content"])["status"] == status
    assert isinstance(Database(env.domain.base()).get(*record), dict)


def check_openings(tasks, *identifiers):
    """No task's first message volunteers an identifier (the agent has to ask): none of
    ``identifiers`` and nothing the user knows."""
    for row in tasks:
        known = row["extra_info"]["user_scenario"]["known_info"]
        opening = row["prompt"][-1]["content"]
        assert not any(text in opening for text in identifiers), opening
        assert not any(value in opening for value in known.values()), opening


def one_write_each(tasks, write_tools):
    """``(number, task, position)`` for each task with a write: the position of the write to
    change, a different one from task to task."""
    for number, task in enumerate(tasks):
        writes = [i for i, a in enumerate(actions_of(task)) if a["name"] in write_tools]
        if writes:
            yield number, task, writes[number % len(writes)]


def turns_of(actions, outputs):
    """Assistant turns that make ``actions``, then state ``outputs`` (unless a transfer ends
    the episode first)."""
    turns = [call(a["name"], **a["arguments"]) for a in actions]
    if not any(a["name"] == "transfer_to_human_agents" for a in actions):
        turns.append("All done. For your information: " + "; ".join(outputs) + ".")
    return turns


def changed_text(key, value):
    """Another plausible value for a text argument of a write: a zip with its last digit
    bumped, another apartment, or another street number."""
    if key == "zip":
        return value[:-1] + str((int(value[-1]) + 1) % 10)
    if key in ("unit", "address2"):
        return "Apt 2B" if value != "Apt 2B" else "Apt 3C"
    return "12 " + value


def check_changed_write_loses(env, tasks, write_tools, perturb):
    """Playing a task's gold with one argument of one write changed (``perturb(action, key)``,
    the key drawn in turn) loses the reward on the database; returns how many were played."""
    checked = 0
    for number, task, position in one_write_each(tasks, write_tools):
        keys = sorted(actions_of(task)[position]["arguments"])
        actions = list(actions_of(task))
        actions[position] = perturb(actions[position], keys[number % len(keys)])
        spec = parse_reward_spec(task["reward_spec"])
        reward, info, _ = play(env, task, turns_of(actions, spec.outputs))
        assert reward == 0.0, (task["extra_info"]["id"], actions[position])
        assert info["reward_info"]["db_match"] is False
        checked += 1
    return checked


# The checks below are the same for every tau domain; each domain's test file calls them with
# its own generator, domain, tasks and dataset folder.

NO_OP = "Is there anything else I can help you with?"


def check_do_nothing_rate(env, splits, has_write, no_op=NO_OP):
    """A do-nothing agent passes at most 5% of each split: exactly the tasks with no write and
    no output to say, and those are under 4%."""
    for split, rows in splits.items():
        passed = 0
        for task in rows:
            env.reset(options={"task": task})
            _, reward, terminated, _, _ = env.step(no_op)
            assert terminated
            passed += reward == 1.0
        rate = passed / len(rows)
        print(f"do-nothing pass rate on {split}: {passed}/{len(rows)} = {rate:.1%}")
        assert rate <= 0.05, (split, rate)
        silent = [t for t in rows if not has_write(t) and not t["reward_spec"]["outputs"]]
        assert passed == len(silent) and len(silent) < 0.04 * len(rows)


def check_generation_is_seeded(generate_tables, generate_splits, tables, sizes):
    """Tables come back the same for seed 0 and differ for seed 1; splits are the same for the
    same seed and differ for another. Generation takes ~0.08 s; the 10 s bound only catches a
    pathological slowdown (a 1 s bound failed once in CI while vLLM servers shared the cores)."""
    started = time.perf_counter()
    again = generate_tables(0)
    elapsed = time.perf_counter() - started
    print(f"generate_tables(0): {elapsed * 1000:.0f} ms")
    assert elapsed < 10.0
    assert again == tables
    assert generate_tables(1) != tables
    small = generate_splits(sizes, seed=3)
    assert small == generate_splits(sizes, seed=3)
    assert small != generate_splits(sizes, seed=4)


def check_gold_replay_keeps_base(env, domain, generate_tables, tasks, has_write):
    """Replaying every gold raises no tool error, changes the hash exactly when the gold
    writes, and leaves the shared base tables as generated."""
    base = domain.base()
    before = BaseTables(generate_tables(0)).hash_sum
    assert base.hash_sum == before
    for task in tasks:
        db, results = env.replay(parse_reward_spec(task["reward_spec"]))
        assert not any(r.startswith("Error") for r in results)
        assert (db.hash() != f"{before:064x}") == has_write(task)
    assert BaseTables(base.tables).hash_sum == before
    assert base.tables == generate_tables(0)

"""Helpers the tau domain test files share: write a tool-call turn, read gold actions, play
assistant turns through an env to the end of the episode."""

from __future__ import annotations

import json
import runpy
import time
from pathlib import Path

from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Toolset
from tool_envs.data import load_tasks, validate_row
from tool_envs.tau.db import BaseTables
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


# The checks below are the same for every tau domain; each domain's test file calls them with
# its own generator, domain, tasks and dataset folder.

REPO = Path(__file__).resolve().parents[1]
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


def check_committed_dataset(tmp_path, name, test_rows):
    """``datasets/<name>`` is what its builder writes, byte for byte, and loads as ``test_rows``."""
    build = runpy.run_path(str(REPO / f"datasets/{name}/build.py"))["build"]
    build(tmp_path)
    committed = REPO / f"datasets/{name}"
    for file in ("README.md", "data/train.jsonl", "data/test.jsonl"):
        assert (tmp_path / file).read_bytes() == (committed / file).read_bytes(), file
    rows = load_tasks(str(committed), split="test")
    assert rows == [validate_row(r) for r in test_rows]


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

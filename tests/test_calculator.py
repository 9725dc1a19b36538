"""Calculator-v0: generated tasks are solvable by their gold calls and the reward is real."""

import runpy
from pathlib import Path

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.calculator import default_splits, final_number, generate_splits, gold_turns
from tool_envs.data import load_tasks, validate_row

gym.register_envs(tool_envs)


def play(env, task, turns):
    env.reset(options={"task": task})
    for turn in turns:
        _, reward, terminated, truncated, info = env.step(turn)
        if terminated or truncated:
            return reward, info
    raise AssertionError("episode did not end")


def test_every_shipped_task_is_valid_and_solved_by_its_gold_calls():
    env = gym.make("tool_envs/Calculator-v0")
    for split, rows in default_splits().items():
        for row in rows:
            validate_row(row)
            reward, info = play(env, row, gold_turns(row))
            assert reward == 1.0, (split, row["extra_info"], info["reward_info"])
            assert info["stats"]["tool_errors"] == 0
            # Each gold call's result feeds the next call or is the answer.
            results = [m["content"] for m in env.unwrapped.messages if m["role"] == "tool"]
            assert float(results[-1]) == row["reward_spec"]["answer"]


def test_a_wrong_or_toolless_answer_earns_nothing():
    task = default_splits()["test"][0]
    env = gym.make("tool_envs/Calculator-v0")
    wrong = [*gold_turns(task)[:-1], f"It is {task['reward_spec']['answer'] + 1}."]
    assert play(env, task, wrong)[0] == 0.0
    reward, info = play(env, task, [f"It is {task['reward_spec']['answer']}."])
    assert reward == 0.0 and "no successful tool call" in info["reward_info"]["reason"]
    lenient = gym.make("tool_envs/Calculator-v0", require_tool_use=False)
    assert play(lenient, task, [f"It is {task['reward_spec']['answer']}."])[0] == 1.0


def test_splits_are_deterministic_disjoint_and_cover_every_operation():
    splits = generate_splits({"train": 300, "test": 100}, seed=1)
    assert splits == generate_splits({"train": 300, "test": 100}, seed=1)
    train = {r["extra_info"]["expression"] for r in splits["train"]}
    test = {r["extra_info"]["expression"] for r in splits["test"]}
    assert len(train) == 300 and len(test) == 100 and not train & test
    names = {c["name"] for r in splits["train"] for c in r["reward_spec"]["gold_calls"]}
    assert names == {"add", "subtract", "multiply", "divide"}
    assert {r["extra_info"]["difficulty"] for r in splits["train"]} == {1, 2, 3}


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("The result is 1,234.", 1234.0),
        ("-7", -7.0),
        ("2.5 then 3", 3.0),
        ("none", None),
        ("", None),
    ],
)
def test_final_number(text, number):
    assert final_number(text) == number


REPO = Path(__file__).resolve().parents[1]


def test_committed_dataset_matches_its_builder_and_loads(tmp_path):
    build = runpy.run_path(str(REPO / "datasets/calculator/build.py"))["build"]
    build(tmp_path)
    committed = REPO / "datasets/calculator"
    for name in ("README.md", "data/train.jsonl", "data/test.jsonl"):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name
    rows = load_tasks(str(committed), split="test")
    assert rows == [validate_row(r) for r in default_splits()["test"]]

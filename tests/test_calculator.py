"""Calculator-v0: generated tasks are solvable by their gold calls and the reward is real."""

import gymnasium as gym
import pytest
from dataset_helpers import check_committed_dataset
from episode_helpers import play_to_end

import tool_envs
from tool_envs.calculator import default_splits, final_number, generate_splits, gold_turns
from tool_envs.data import load_tasks, validate_row

gym.register_envs(tool_envs)


def test_every_shipped_task_is_valid_and_solved_by_its_gold_calls():
    env = gym.make("tool_envs/Calculator-v0")
    for split, rows in default_splits().items():
        for row in rows:
            validate_row(row)
            reward, info = play_to_end(env, row, gold_turns(row))
            assert reward == 1.0, (split, row["extra_info"], info["reward_info"])
            assert info["stats"]["tool_errors"] == 0
            # Each gold call's result feeds the next call or is the answer.
            results = [m["content"] for m in env.unwrapped.messages if m["role"] == "tool"]
            assert float(results[-1]) == row["reward_spec"]["answer"]


def test_a_wrong_or_toolless_answer_earns_nothing():
    task = default_splits()["test"][0]
    env = gym.make("tool_envs/Calculator-v0")
    wrong = [*gold_turns(task)[:-1], f"It is {task['reward_spec']['answer'] + 1}."]
    assert play_to_end(env, task, wrong)[0] == 0.0
    reward, info = play_to_end(env, task, [f"It is {task['reward_spec']['answer']}."])
    assert reward == 0.0 and "no successful tool call" in info["reward_info"]["reason"]
    lenient = gym.make("tool_envs/Calculator-v0", require_tool_use=False)
    assert play_to_end(lenient, task, [f"It is {task['reward_spec']['answer']}."])[0] == 1.0


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


def test_committed_dataset_matches_its_builder_and_loads(tmp_path):
    check_committed_dataset(tmp_path, "calculator", default_splits()["test"])


def test_generated_sets_of_one_difficulty_exclude_given_expressions_and_stop_when_spent():
    heldout = generate_splits({"heldout": 50}, seed=5, difficulty=1)["heldout"]
    excluded = {row["extra_info"]["expression"] for row in heldout}
    splits = generate_splits({"train": 400, "test": 40}, seed=5, difficulty=1, exclude=excluded)
    expressions = [row["extra_info"]["expression"] for rows in splits.values() for row in rows]
    assert len(expressions) == len(set(expressions)) == 440 and not excluded & set(expressions)
    assert all(row["extra_info"]["difficulty"] == 1 for rows in splits.values() for row in rows)
    assert all(len(row["reward_spec"]["gold_calls"]) == 1 for row in splits["train"])
    # The default mix is the shipped stream: a difficulty argument does not perturb it.
    assert generate_splits() == default_splits()
    with pytest.raises(ValueError, match="difficulty must be 1, 2, 3 or None"):
        generate_splits({"train": 1}, difficulty=4)
    with pytest.raises(ValueError, match="distinct problems drawn"):
        generate_splits({"train": 30_000}, difficulty=1)  # ~21,000 exist


def test_the_calculator_tasks_command_writes_a_loadable_dataset(tmp_path):
    from tool_envs.cli import main

    out = tmp_path / "tasks"
    args = ["calculator-tasks", "--out", str(out), "--difficulty", "1", "--seed", "3"]
    assert main([*args, "--split", "train=30", "--split", "heldout=5"]) in (0, None)
    assert (out / "README.md").is_file()
    train, heldout = load_tasks(out, split="train"), load_tasks(out, split="heldout")
    assert len(train) == 30 and len(heldout) == 5
    seen = {row["extra_info"]["expression"] for row in train}
    assert not seen & {row["extra_info"]["expression"] for row in heldout}
    with pytest.raises(SystemExit):
        main(["calculator-tasks", "--out", str(out), "--split", "train=0"])

"""``tool-envs tau-tasks``: tau task sets whose held-out customers no training task uses."""

from __future__ import annotations

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.cli import main as cli
from tool_envs.data import load_tasks
from tool_envs.tau.domains.retail.tasks import TASKS, default_splits
from tool_envs.tau.task import parse_reward_spec, parse_scenario
from tool_envs.tau.task_set import write_task_set

gym.register_envs(tool_envs)


def customers_and_orders(rows) -> set[str]:
    """The user ids, emails and order ids that the rows' gold calls and users name."""
    named = set()
    for row in rows:
        for action in row["reward_spec"]["actions"]:
            named.update(
                value
                for key, value in action["arguments"].items()
                if key in ("user_id", "email", "order_id")
            )
        known = parse_scenario(row["extra_info"]).known_info
        named.update(str(known[key]) for key in ("email", "order_id") if key in known)
    return named


def test_the_cli_writes_splits_whose_heldout_customers_no_other_split_uses(tmp_path, capsys):
    folder = tmp_path / "retail-tasks"
    code = cli(
        ["tau-tasks", "--domain", "retail", "--out", str(folder), "--category", "cancel",
         "--category", "payment", "--split", "train=300", "--split", "test=30",
         "--split", "heldout=60"]
    )  # fmt: skip
    assert code == 0
    assert "wrote train 300, test 30, heldout 60 retail tasks" in capsys.readouterr().out
    splits = {name: load_tasks(folder, split=name) for name in ("train", "test", "heldout")}
    assert {name: len(rows) for name, rows in splits.items()} == {
        "train": 300,
        "test": 30,
        "heldout": 60,
    }
    for rows in splits.values():
        assert {row["extra_info"]["category"] for row in rows} == {"cancel", "payment"}
    seen = customers_and_orders(splits["train"]) | customers_and_orders(splits["test"])
    held = customers_and_orders(splits["heldout"])
    assert len(held) > 60 and not held & seen
    golds = [repr(row["reward_spec"]) for rows in splits.values() for row in rows]
    assert len(set(golds)) == len(golds)  # no task twice, in a split or across them


def test_generated_gold_episodes_solve_their_tasks(tmp_path):
    folder = write_task_set(
        tmp_path / "tasks", "retail", {"train": 20, "heldout": 10}, heldout_splits=["heldout"]
    )
    env = gym.make("tool_envs/TauRetail-v0").unwrapped
    for split in ("train", "heldout"):
        for task in load_tasks(folder, split=split):
            env.reset(options={"task": task})
            for turn in env.gold_turns(task):
                _, reward, terminated, _, _ = env.step(turn)
            assert terminated and reward == 1.0, task["extra_info"]["id"]
    env.close()


def test_without_new_options_the_shipped_splits_are_unchanged():
    assert TASKS.generate({"train": 600, "test": 120}, 0) == default_splits()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--domain", "retail", "--category", "nope"], "retail has no task categories ['nope']"),
        (
            ["--domain", "airline", "--split", "heldout=2"],
            "airline's tasks cannot hold customers out of splits",
        ),
        (["--domain", "retail", "--heldout-split", "dev"], "held-out splits ['dev'] are not"),
        (
            ["--domain", "retail", "--split", "heldout=2", "--heldout-share", "1.5"],
            "heldout_share must be between 0 and 1",
        ),
    ],
)
def test_bad_requests_are_refused_by_name_and_write_nothing(tmp_path, capsys, arguments, message):
    folder = tmp_path / "tasks"
    code = cli(["tau-tasks", "--out", str(folder), "--split", "train=5", *arguments])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not folder.exists()


def test_the_compact_prompt_keeps_the_env_and_its_reward(tmp_path):
    """``--prompt compact``: the rows' system prompt is the compact policy, far shorter; the same
    gold still solves the same tasks in the unchanged env."""
    from tool_envs.tau.task_set import compact_policy

    full = write_task_set(tmp_path / "full", "retail", {"train": 8}, categories=["cancel"])
    compact = write_task_set(
        tmp_path / "compact", "retail", {"train": 8}, categories=["cancel"], prompt="compact"
    )
    full_rows, compact_rows = load_tasks(full, split="train"), load_tasks(compact, split="train")
    env = gym.make("tool_envs/TauRetail-v0").unwrapped
    for row, short in zip(full_rows, compact_rows, strict=True):
        assert short["prompt"][0]["content"] == compact_policy("retail")
        assert len(short["prompt"][0]["content"]) < 0.4 * len(row["prompt"][0]["content"])
        assert short["prompt"][1:] == row["prompt"][1:]
        assert short["reward_spec"] == row["reward_spec"]
        env.reset(options={"task": short})
        for turn in env.gold_turns(short):
            _, reward, terminated, _, _ = env.step(turn)
        assert terminated and reward == 1.0
    env.close()
    with pytest.raises(ValueError, match="the airline domain has no compact policy"):
        compact_policy("airline")


def test_sft_refuses_gold_rows_longer_than_max_length():
    """TRL would cut them, and drop rows the cut leaves without an assistant token, silently."""
    from tool_envs.rollout.sft import check_fits

    rows = [{"input_ids": [1] * 900}, {"input_ids": [1] * 2600}, {"input_ids": [1] * 3000}]
    check_fits(rows, None)
    check_fits(rows, 3000)
    with pytest.raises(
        ValueError, match="2 of 3 gold trajectories are longer than max_length=1024"
    ):
        check_fits(rows, 1024)
    with pytest.raises(ValueError, match="set max_length to at least 3000"):
        check_fits(rows, 2999)


def test_tasks_from_many_databases_are_solved_on_their_own_database_only(tmp_path, capsys):
    """``--databases N``: rows name the generated database they were drawn on; the env builds it
    on reset and the gold solves the task there; its customer is not in the shipped database.
    Held-out customers stay out of the other splits."""
    folder = tmp_path / "many"
    code = cli(
        ["tau-tasks", "--domain", "retail", "--out", str(folder), "--category", "cancel",
         "--databases", "4", "--split", "train=40", "--split", "heldout=12"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    train, held = load_tasks(folder, split="train"), load_tasks(folder, split="heldout")
    seeds = [row["extra_info"].get("db_seed", 0) for row in train + held]
    assert set(seeds) == {0, 1, 2, 3}
    assert not customers_and_orders(train) & customers_and_orders(held)
    env = gym.make("tool_envs/TauRetail-v0").unwrapped
    for task in [row for row in train + held if row["extra_info"].get("db_seed")][:8]:
        env.reset(options={"task": task})
        for turn in env.gold_turns(task):
            _, reward, terminated, _, _ = env.step(turn)
        assert terminated and reward == 1.0, task["extra_info"]["id"]
        # The gold's calls work on the task's own database; on the shipped one the customer
        # is unknown.
        spec = parse_reward_spec(task["reward_spec"])
        _, results = env.replay(spec, task["extra_info"]["db_seed"])
        assert not any(result.startswith("Error") for result in results)
        _, results = env.replay(spec, 0)
        assert results[0].startswith("Error")
    env.close()


def test_one_database_keeps_the_task_sets_as_they_were():
    assert TASKS.generate({"train": 50}, 3, databases=1) == TASKS.generate({"train": 50}, 3)
    rows = TASKS.generate({"train": 50}, 3)["train"]
    assert all("db_seed" not in row["extra_info"] for row in rows)


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"db_seed": -1}, "must be a whole number >= 0"), ({"db_seed": "1"}, "got '1'")],
)
def test_a_bad_db_seed_is_refused_by_name(extra, message):
    from tool_envs.errors import TaskRowError

    row = default_splits()["train"][0]
    env = gym.make("tool_envs/TauRetail-v0").unwrapped
    with pytest.raises(TaskRowError, match=message):
        env.reset(options={"task": {**row, "extra_info": {**row["extra_info"], **extra}}})
    env.close()


def test_databases_must_be_positive():
    with pytest.raises(ValueError, match="databases must be at least 1, got 0"):
        TASKS.generate({"train": 5}, databases=0)

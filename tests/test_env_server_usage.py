"""A served env as a user meets it through its HTTP routes, RemoteEnv and ``tool-envs eval``:
the gold agent, options a served env cannot honour, a full server, a server of another env."""

import gymnasium as gym
import pytest
from serve_helpers import http_call

import tool_envs
from tool_envs.errors import EnvServerUnavailableError, TaskRowError
from tool_envs.eval.runner import EvalConfig, EvalError, run_eval
from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
RETAIL = "tool_envs/TauRetail-v0"


@pytest.fixture(scope="module")
def calculator_server():
    with EnvServer(ServeConfig(CALCULATOR, max_sessions=8)) as server:
        yield server


def test_task_endpoints_take_post_with_a_json_body_and_a_get_says_so(calculator_server):
    base = f"{calculator_server.url}/Calculator-v0"
    status, answer, headers = http_call(f"{base}/tasks")
    assert status == 405 and headers["allow"] == "POST"
    assert answer["detail"] == (
        'POST /Calculator-v0/tasks with a JSON body {"split": "<name>"} '
        "(GET /Calculator-v0/splits lists the splits)"
    )
    status, answer, _ = http_call(f"{base}/task", "POST", {"index": 0})
    assert status == 400
    assert answer["detail"].startswith('the body needs "split": one of [')
    status, answer, _ = http_call(f"{base}/task", "POST", {"split": "test", "index": 10**6})
    assert status == 400 and "index" in answer["detail"] and "10000" in answer["detail"]
    status, answer, _ = http_call(f"{base}/num_tasks", "POST", {"split": "test"})
    assert status == 200 and answer["num_tasks"] > 0
    status, answer, _ = http_call(f"{base}/splits")
    assert status == 200 and {"name": "test", "type": "test"} in answer


def test_a_served_env_gives_its_gold_turns(calculator_server):
    local = gym.make(CALCULATOR).unwrapped
    task = local.task_splits()["test"][0]
    remote = RemoteEnv(calculator_server.url)
    try:
        assert remote.gold_turns(task) == local.gold_turns(task)  # no session needed
        remote.reset(options={"task": task})
        assert remote.gold_turns(task) == local.gold_turns(task)
    finally:
        remote.close()
    status, answer, _ = http_call(
        f"{calculator_server.url}/Calculator-v0/gold_turns", "POST", {"task": {"prompt": 1}}
    )
    assert status == 400 and "prompt" in answer["detail"]


def test_the_gold_agent_plays_served_envs(tmp_path, calculator_server):
    config = EvalConfig(
        envs=[CALCULATOR], out=tmp_path / "gold", agent="gold", limit=4, progress=False,
        env_servers={CALCULATOR: calculator_server.url},
    )  # fmt: skip
    result = run_eval(config)
    assert result.error is None
    assert result.summary["overall"]["success_rate"] == 1.0
    assert result.summary["run"]["void_trials"] == 0
    assert not (tmp_path / "gold" / "void.jsonl").exists()


@pytest.mark.parametrize("option", ["user", "parser"])
def test_eval_refuses_options_a_served_env_cannot_honour(tmp_path, option):
    value = {"user": "llm", "parser": "hermes"}[option]
    config = EvalConfig(
        envs=[RETAIL], out=tmp_path / "run", agent="gold", env_servers={RETAIL: "http://127.0.0.1:1"},
        progress=False, **{option: value},
    )  # fmt: skip
    with pytest.raises(EvalError) as refused:
        run_eval(config)
    assert str(refused.value) == (
        f"--{option} {value} cannot reach {RETAIL}: it is served (--env-servers), so its "
        f"constructor arguments are the server's; start it with `tool-envs serve {RETAIL} "
        f'--env-kwargs \'{{"{option}": "{value}"}}\'` and leave --{option} out'
    )
    assert not (tmp_path / "run" / "run.json").exists()


def test_eval_refuses_env_servers_for_envs_it_does_not_evaluate(tmp_path):
    config = EvalConfig(
        envs=[CALCULATOR], out=tmp_path / "run", agent="gold", progress=False,
        env_servers={RETAIL: "http://127.0.0.1:1"},
    )  # fmt: skip
    with pytest.raises(EvalError, match=r"--env-servers names \['tool_envs/TauRetail-v0'\]"):
        run_eval(config)


def test_a_full_server_says_it_is_full_with_its_cap_and_what_to_do():
    with EnvServer(ServeConfig(CALCULATOR, max_sessions=1)) as server:
        first = RemoteEnv(server.url)
        first.reset()
        with pytest.raises(EnvServerUnavailableError) as raised:
            RemoteEnv(server.url).reset()
        first.close()
    message = str(raised.value)
    assert f"{server.url}: full, 1/1 sessions (--max-sessions 1)" in message
    assert "start more servers and add their URLs, or restart them with a larger " in message
    assert "at those URLs" not in message


def test_a_row_for_another_env_names_the_server_and_the_env_it_serves(calculator_server):
    row = gym.make(RETAIL).unwrapped.task_splits()["test"][0]
    remote = RemoteEnv(calculator_server.url)
    try:
        with pytest.raises(TaskRowError) as raised:
            remote.reset(options={"task": row})
    finally:
        remote.close()
    assert str(raised.value) == (
        f"field 'env_id': {calculator_server.url} serves '{CALCULATOR}', not the row's "
        f"'{RETAIL}': give '{RETAIL}' the URL of a `tool-envs serve {RETAIL}` server in "
        "env_servers"
    )

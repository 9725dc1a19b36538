"""Served envs play exactly as in-process ones: RemoteEnv, the CLI server, both engines."""

import contextlib
import json

import gymnasium as gym
import pytest
import torch
from eval_helpers import serve
from rollout_helpers import ReplayBackend, tiny_tokenizer_and_model
from serve_helpers import ServerProcess, http_call
from test_async_engine import FAMILIES, family_tasks, same_books

import tool_envs
from tool_envs.core.chat_env import ServableEnv
from tool_envs.errors import EnvConfigError, TaskRowError
from tool_envs.eval.runner import EvalConfig, EvalError, run_eval
from tool_envs.rollout import (
    AsyncRolloutEngine,
    RolloutConfig,
    RolloutEngine,
    SamplingSettings,
    TransformersBackend,
)
from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"


@pytest.fixture(scope="module")
def tiny():
    return tiny_tokenizer_and_model()


@pytest.fixture(scope="module")
def calculator_server():
    with EnvServer(ServeConfig(CALCULATOR, max_sessions=32)) as server:
        yield server


def get_json(url: str) -> dict:
    status, answer, _ = http_call(url)
    assert status == 200, (url, status, answer)
    return answer


def test_a_remote_env_plays_a_gold_episode_as_the_env_does(calculator_server):
    plays_as_in_process(calculator_server.url)


def test_inline_steps_play_as_in_process_on_the_event_loop():
    """``inline_steps``: no thread per session, the same answers."""
    with EnvServer(ServeConfig(CALCULATOR, inline_steps=True)) as server:
        plays_as_in_process(server.url)
        probe = RemoteEnv(server.url)
        try:
            probe.reset(seed=0)
            (session,) = server.manager.sessions.values()
            assert session._executor is None
        finally:
            probe.close()


def plays_as_in_process(url: str) -> None:
    local = gym.make(CALCULATOR)
    remote = RemoteEnv(url)
    try:
        assert remote.reset(seed=5) == local.reset(seed=5)
        assert remote.tools == local.unwrapped.tools
        for turn in local.unwrapped.gold_turns(local.unwrapped.task):
            assert remote.step(turn) == local.step(turn)
            assert remote.messages == local.unwrapped.messages
        # An assistant message dict with tool_calls, as a chat API gives it.
        task = local.unwrapped.task
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                }
            ],
        }
        remote.reset(options={"task": task})
        local.reset(options={"task": task})
        assert remote.step(message) == local.step(message)
        assert remote.messages == local.unwrapped.messages
        state = remote.state()
        assert state["step_count"] == 1 and state["messages"] == local.unwrapped.messages
    finally:
        remote.close()
        local.close()


def test_caller_mistakes_raise_what_the_env_raises(calculator_server):
    remote = RemoteEnv(calculator_server.url)
    try:
        with pytest.raises(gym.error.ResetNeeded):
            remote.step("hi")
        remote.reset(seed=0)
        with pytest.raises(TaskRowError):
            remote.reset(options={"task": {"prompt": "not a list"}})
        with pytest.raises(EnvConfigError, match="unknown reset options"):
            remote.reset(options={"colour": "red"})
        remote.reset(seed=0)
        with pytest.raises(gym.error.InvalidAction):
            remote.step(42)
        assert remote.step("The answer is 3.")[2] is True  # a reply ends a calculator episode
        with pytest.raises(gym.error.ResetNeeded):
            remote.step("again")
    finally:
        remote.close()


def test_health_metadata_schema_and_task_endpoints(calculator_server):
    url = calculator_server.url
    assert get_json(f"{url}/health")["status"] == "healthy"
    metadata = get_json(f"{url}/metadata")
    assert metadata["name"] == CALCULATOR and metadata["description"]
    schema = get_json(f"{url}/schema")
    assert {"action", "observation", "state"} <= set(schema)
    assert "text" in schema["action"]["properties"]
    assert get_json(f"{url}/list_environments") == ["Calculator-v0"]
    splits = get_json(f"{url}/Calculator-v0/splits")
    assert {"name": "train", "type": "train"} in splits
    _, answer, _ = http_call(f"{url}/Calculator-v0/task", "POST", {"split": "train", "index": 3})
    task = answer["task"]
    assert task == gym.make(CALCULATOR).unwrapped.task_splits()["train"][3]


def test_the_cli_serves_an_env_with_its_kwargs_and_its_task_splits():
    """A served env is a :class:`ServableEnv`: its own splits come from the server's task
    routes, as the in-process env gives them."""
    with ServerProcess(CALCULATOR, "--env-kwargs", '{"max_episode_steps": 1}') as server:
        remote = RemoteEnv(server.url)
        local = gym.make(CALCULATOR)
        try:
            assert isinstance(remote, ServableEnv)
            assert remote.own_task_splits() == local.unwrapped.own_task_splits()  # no session
            remote.reset(seed=0)
            _, _, terminated, truncated, _ = remote.step('<tool_call>\n{"name": "add"}')
            assert (terminated, truncated) == (False, True)  # the server's turn limit
            assert server.health()["active_sessions"] == 1
        finally:
            remote.close()
            local.close()


@pytest.mark.parametrize("engine_class", [RolloutEngine, AsyncRolloutEngine])
@pytest.mark.parametrize("env_id", FAMILIES)
def test_remote_and_in_process_rollouts_are_identical(tiny, env_id, engine_class):
    """Every env family, both engines: the same tokens, masks, rewards and messages when the
    env runs behind a server as when it runs in the trainer's process."""
    if env_id.startswith("tool_envs/Tau2"):
        pytest.importorskip("tau2", reason="the tau2 extra is not installed")
    tokenizer = tiny[0]
    tasks, scripts = family_tasks(env_id)
    tasks, scripts = tasks * 2, scripts * 2
    base = dict(max_completion_length=65536, max_tokens_per_turn=8192)
    with engine_class(
        tokenizer, ReplayBackend(tokenizer, tasks, scripts), config=RolloutConfig(**base)
    ) as engine:
        local = engine.run(tasks, seeds=[1, 2, 1, 2])
    with EnvServer(ServeConfig(env_id)) as server:
        config = RolloutConfig(**base, env_servers={env_id: server.url})
        with engine_class(
            tokenizer, ReplayBackend(tokenizer, tasks, scripts), config=config
        ) as engine:
            remote = engine.run(tasks, seeds=[1, 2, 1, 2])
        assert server.manager.opened >= 1
    assert all(r.outcome == "success" for r in local)
    for a, b in zip(local, remote, strict=True):
        same_books(a, b)


def test_greedy_model_rollouts_are_identical_remote_and_in_process(tiny, calculator_server):
    """A real (tiny) model sampling greedily: the same rollouts either way."""
    tokenizer, model = tiny
    rows = gym.make(CALCULATOR).unwrapped.tasks[:3]
    settings = SamplingSettings(temperature=0.0)
    base = dict(max_completion_length=96, max_tokens_per_turn=24, max_turns=3)
    runs = []
    for servers in ({}, {CALCULATOR: [calculator_server.url]}):
        torch.manual_seed(0)
        config = RolloutConfig(**base, env_servers=servers)
        with RolloutEngine(tokenizer, TransformersBackend(model), settings, config) as engine:
            runs.append(engine.run(rows, seeds=[0, 1, 2]))
    for a, b in zip(*runs, strict=True):
        same_books(a, b)


def test_env_kwargs_of_a_served_env_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="tool-envs serve"):
        RolloutConfig(
            env_servers={CALCULATOR: "http://127.0.0.1:1"}, env_kwargs={CALCULATOR: {"a": 1}}
        )
    with pytest.raises(ValueError, match="non-empty list"):
        RolloutConfig(env_servers={CALCULATOR: []})


def test_a_grpo_step_plays_its_episodes_on_env_servers(tmp_path, monkeypatch, calculator_server):
    """The recipes' rollout_func with env_servers: a real GRPOTrainer step, every episode on the
    server, rewards and env masks as in-process."""
    pytest.importorskip("trl", reason="the TRL integration needs the 'train' extra (trl)")
    from rollout_helpers import GoldPolicyBackend
    from test_trl_integration import make_trainer, recording

    from tool_envs.calculator import default_splits
    from tool_envs.integrations.trl import make_rollout_func
    from tool_envs.integrations.trl.recipes import check_setup

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    folder = tmp_path / "tiny"
    tokenizer, model = tiny_tokenizer_and_model()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    rows = default_splits()["train"][8:16]
    servers = {CALCULATOR: [calculator_server.url]}
    [line] = check_setup(tokenizer, rows, {}, {}, servers)
    assert line.endswith(f"chat template OK (served: {servers[CALCULATOR]})")
    opened = calculator_server.manager.opened
    gold = GoldPolicyBackend(tokenizer, rows)
    calls = []
    rollout_func = recording(
        make_rollout_func(backend_factory=lambda trainer: gold, env_servers=servers), calls
    )
    make_trainer((folder, tokenizer), tmp_path, rows, rollout_func).train()
    output = calls[0][2]
    assert output["env_reward"] == [1.0] * 8 and min(output["num_turns"]) >= 2
    assert calculator_server.manager.opened > opened  # the episodes ran on the server


def test_tool_envs_eval_plays_served_envs_as_in_process(tmp_path, calculator_server):
    """An agent behind an OpenAI-compatible API (native tool_calls) on served envs: the same
    trials, metrics and conversations as in-process."""
    from tool_envs.calculator.tasks import default_splits

    tasks = default_splits()["test"][:4]
    with contextlib.contextmanager(serve)(tasks) as chat:
        check_eval_remote_vs_local(tmp_path, chat, calculator_server)
        with pytest.raises(EvalError, match="tool-envs serve"):
            EvalConfig(
                envs=[CALCULATOR], out=tmp_path / "bad", model="m",
                env_servers={CALCULATOR: calculator_server.url},
                env_kwargs={CALCULATOR: {"parser": "hermes"}},
            ).validate()  # fmt: skip


def check_eval_remote_vs_local(tmp_path, chat, calculator_server):

    def config(out, **extra):
        return EvalConfig(
            envs=[CALCULATOR], out=tmp_path / out, model="calc-model", base_url=chat.url,
            api_key="test", limit=4, trials=2, concurrency=4, max_retries=0, timeout=10,
            progress=False, **extra,
        )  # fmt: skip

    chat.reset()
    local = run_eval(config("local"))
    chat.reset()
    remote = run_eval(config("remote", env_servers={CALCULATOR: calculator_server.url}))
    keys = ("trials", "success_rate", "pass_hat_k", "mean_turns", "tool_calls", "env_errors")
    assert {k: remote.summary["overall"][k] for k in keys} == {
        k: local.summary["overall"][k] for k in keys
    }
    assert remote.summary["overall"]["void_trials"] == 0

    def conversations(out):
        lines = (tmp_path / out / "trajectories.jsonl").read_text().splitlines()
        return sorted(
            (r["task_id"], r["trial"], json.dumps(r["messages"])) for r in map(json.loads, lines)
        )

    assert conversations("remote") == conversations("local")


def test_sessions_are_apart_and_a_served_sandbox_is_as_strict_as_in_process():
    """Two sessions of one server each see only their own conversation, and code run in a
    served CodeExec sandbox sees what it sees in-process (the same files closed, the same user,
    the same network), since the server runs the same env with the same isolation."""
    from test_code_env import ADD, SQUARE, call

    from tool_envs.code.sandbox import detect_isolation

    repo_file = str(tool_envs.__file__)
    probe = (
        "import os, socket\n"
        "def can_read(path):\n"
        "    try:\n        open(path).close(); return True\n"
        "    except OSError:\n        return False\n"
        f"print('project file readable:', can_read({repo_file!r}))\n"
        "print('root:', os.getuid() == 0, 'cwd in a job folder:', '/job' in os.getcwd())\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 9), timeout=2); print('network: open')\n"
        "except OSError as error:\n"
        "    print('network:', type(error).__name__)\n"
    )
    local = gym.make("tool_envs/CodeExec-v0", tasks=[ADD])
    local.reset(options={"task": ADD})
    expected = local.step(call("code_exec", probe))[0][0]["content"]
    local.close()
    assert "project file readable" in expected
    with ServerProcess("tool_envs/CodeExec-v0") as server:
        first, second = RemoteEnv(server.url), RemoteEnv(server.url)
        first.reset(options={"task": ADD})
        second.reset(options={"task": SQUARE})
        served = first.step(call("code_exec", probe))[0][0]["content"]
        second.step(call("code_exec", "print('second session')"))
        assert served == expected, (detect_isolation().level, served, expected)
        mine = " ".join(str(m.get("content")) for m in first.messages)
        theirs = " ".join(str(m.get("content")) for m in second.messages)
        assert "second session" not in mine and "project file readable" not in theirs
        assert ADD["prompt"][-1]["content"] in mine and SQUARE["prompt"][-1]["content"] in theirs
        assert ADD["prompt"][-1]["content"] not in theirs
        first.close()
        second.close()

"""``tool-envs serve`` as a new user meets it: one line for each mistake (naming the value and
the fix), its own usage and examples, a clean stop on Ctrl-C, and a user's env described."""

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import gymnasium as gym
import pytest
from serve_helpers import ROOT, wait_for

import tool_envs
from tool_envs.calculator.env import CalculatorEnv
from tool_envs.cli import main as cli_main
from tool_envs.serve import EnvServer, ServeConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"


def serve_errors(capsys, *args: str) -> tuple[int, str]:
    """``tool-envs serve ARGS`` in this process; its exit code and stderr."""
    try:
        code = cli_main(["serve", *args])
    except SystemExit as exit:
        code = exit.code
    return code, capsys.readouterr().err


def test_a_port_in_use_is_named_with_the_fix(capsys):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, err = serve_errors(capsys, CALCULATOR, "--port", str(port))
    assert code == 2 and "Traceback" not in err
    assert err.strip() == (
        f"tool-envs serve: error: port {port} on 127.0.0.1 is in use (another server?): pick "
        "another --port, or --port 0 for any free one"
    )


def test_a_port_out_of_range_is_a_usage_error_of_serve(capsys):
    code, err = serve_errors(capsys, CALCULATOR, "--port", "99999")
    assert code == 2 and "Traceback" not in err
    assert err.startswith("usage: tool-envs serve ")
    assert err.strip().endswith(
        "tool-envs serve: error: --port must be 0-65535 (0: any free port), got 99999"
    )
    code, err = serve_errors(capsys, CALCULATOR, "--max-sessions", "0")
    assert err.startswith("usage: tool-envs serve ") and "--max-sessions must be >= 1" in err


def test_unknown_env_kwargs_are_named_in_one_line(capsys):
    code, err = serve_errors(capsys, CALCULATOR, "--port", "0", "--env-kwargs", '{"colour": 1}')
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(
        "tool-envs serve: error: cannot make tool_envs/Calculator-v0 with --env-kwargs "
        '{"colour": 1}: '
    )
    assert "unexpected keyword argument 'colour'" in err


def test_serve_help_shows_a_module_env_id_example(capsys):
    with pytest.raises(SystemExit) as done:
        cli_main(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "module:namespace/Name-vN" in out
    assert "tool-envs serve unitconv:unitconv/UnitConv-v0" in out
    assert "--handshake-timeout" in out and "--max-handshakes" in out


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_on_an_idle_server_stops_it_cleanly(stop):
    process = subprocess.Popen(
        [sys.executable, "-m", "tool_envs.cli", "serve", CALCULATOR, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        url = process.stdout.readline().split(" on ", 1)[1].split()[0]

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    return json.loads(answer.read())["status"] == "healthy"
            except OSError:
                return False

        assert wait_for(healthy, timeout=60)
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert f"stopped serving {CALCULATOR}" in out


class AdderEnv(CalculatorEnv):
    """Sums of small numbers with the calculator's tools (a user's env for this test)."""


def test_metadata_of_a_users_env_describes_it():
    gym.register("userns/Adder-v0", entry_point=AdderEnv, max_episode_steps=4)
    try:
        with (
            EnvServer(ServeConfig("userns/Adder-v0")) as server,
            urllib.request.urlopen(f"{server.url}/metadata", timeout=10) as answer,
        ):
            metadata = json.loads(answer.read())
    finally:
        del gym.registry["userns/Adder-v0"]
    assert metadata["name"] == "userns/Adder-v0"
    assert metadata["description"] == (
        "Sums of small numbers with the calculator's tools (a user's env for this test)."
    )


class ChatOnlyEnv(gym.Env):
    """A chat env without task splits or gold turns: it can be played, not served."""

    observation_space = action_space = gym.spaces.Discrete(1)
    messages: list = []  # noqa: RUF012 - read-only here
    message_count = 0
    tools: list = []  # noqa: RUF012 - read-only here

    def messages_since(self, start: int) -> list:
        return []


def test_an_env_that_cannot_be_served_is_named_with_what_it_lacks(capsys):
    gym.register("userns/ChatOnly-v0", entry_point=ChatOnlyEnv)
    code, err = serve_errors(capsys, "userns/ChatOnly-v0", "--port", "0")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(
        "tool-envs serve: error: cannot serve userns/ChatOnly-v0: ChatOnlyEnv cannot be served "
        "(it has no own_task_splits, gold_turns): "
    )
    code, err = serve_errors(capsys, "CartPole-v1", "--port", "0")
    assert "CartPoleEnv cannot be served (it has no messages, message_count," in err
    # In a server of this process (no start-up check), the task routes say the same.
    with EnvServer(ServeConfig("userns/ChatOnly-v0")) as server:
        for route, body in (("splits", None), ("gold_turns", {"task": task_row()})):
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(f"{server.url}/ChatOnly-v0/{route}", data=data)
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(request, timeout=10)
            assert answer.value.code == 501
            assert "(it has no own_task_splits, gold_turns)" in json.load(answer.value)["detail"]


def task_row() -> dict:
    row = gym.make(CALCULATOR).unwrapped.own_task_splits()["train"][0]
    return {**row, "env_id": "userns/ChatOnly-v0"}

"""Interoperability with OpenEnv's own code (openenv 0.10.0, in the venv ``make test`` builds:
.venv-openenv, apart because openenv pulls fastmcp 3 -> mcp<2): OpenEnv's EnvClient plays full
episodes against ``tool-envs serve``, and RemoteEnv plays an env that OpenEnv's server serves."""

import json
import os
import select
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest
from serve_helpers import ServerProcess
from test_async_engine import family_tasks

import tool_envs
from tool_envs.errors import EnvServerUnavailableError
from tool_envs.serve import RemoteEnv

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
gym.register_envs(tool_envs)
ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).parent / "openenv_interop"
OPENENV_PYTHON = Path(os.environ.get("OPENENV_PYTHON", ROOT / ".venv-openenv/bin/python"))
pytestmark = pytest.mark.skipif(
    not OPENENV_PYTHON.exists(),
    reason=f"no OpenEnv venv at {OPENENV_PYTHON}: `make test` builds it (make .venv-openenv/"
    ".installed), or set OPENENV_PYTHON to a python with openenv==0.10.0",
)
CALCULATOR = "tool_envs/Calculator-v0"


def test_openenvs_envclient_plays_full_episodes_against_tool_envs_serve(tmp_path):
    tasks, scripts = family_tasks(CALCULATOR, 2)
    episodes = [
        {"seed": i, "task": task, "turns": turns}
        for i, (task, turns) in enumerate(zip(tasks, scripts, strict=True))
    ]
    (tmp_path / "episodes.json").write_text(json.dumps(episodes))
    with ServerProcess(CALCULATOR) as server:
        played = subprocess.run(
            [OPENENV_PYTHON, SCRIPTS / "play_with_envclient.py", server.url,
             tmp_path / "episodes.json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert played.returncode == 0, played.stderr[-3000:]
        results = json.loads(played.stdout)
        assert server.health()["active_sessions"] == 0  # the client's close released it
    *results, bad = results
    assert "VALIDATION_ERROR" in bad["bad_action_error"]
    for episode, result in zip(episodes, results, strict=True):
        local = gym.make(CALCULATOR)
        messages, info = local.reset(seed=episode["seed"], options={"task": episode["task"]})
        assert result["reset"]["observation"]["messages"] == messages
        assert result["reset"]["observation"]["info"] == info
        assert result["reset"]["observation"]["tools"] == local.unwrapped.tools
        for turn, step in zip(episode["turns"], result["steps"], strict=True):
            observation, reward, terminated, truncated, info = local.step(turn)
            assert step["observation"]["messages"] == observation
            assert step["observation"]["info"] == info
            assert (step["reward"], step["done"]) == (reward, terminated or truncated)
        assert result["steps"][-1]["reward"] == 1.0
        assert result["state"]["messages"] == local.unwrapped.messages
        assert result["state"]["step_count"] == len(episode["turns"])
        local.close()


def test_remote_env_plays_an_env_that_openenvs_own_server_serves():
    server = subprocess.Popen(
        [OPENENV_PYTHON, SCRIPTS / "tiny_openenv_server.py", "0", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    envs = []
    try:
        ready, _, _ = select.select([server.stdout], [], [], 120)
        line = server.stdout.readline() if ready else ""
        assert line.startswith("serving "), (line, server.poll())
        url = line.split()[1]
        remote = RemoteEnv(url)
        envs.append(remote)
        messages, info = remote.reset(seed=3)
        assert messages[-1] == {"role": "user", "content": "Episode with seed 3."}
        assert info == {"turn": 0} and remote.tools[0]["function"]["name"] == "echo"
        observation, reward, terminated, truncated, info = remote.step("hello")
        assert observation == [{"role": "user", "content": "You said: hello"}]
        assert (reward, terminated, truncated, info["turn"]) == (0.0, False, False, 1)
        observation, reward, terminated, truncated, info = remote.step("done")
        assert (reward, terminated, info["reward_info"]["outcome"]) == (1.0, True, "success")
        assert [m["content"] for m in remote.messages[2:]] == ["hello", "You said: hello", "done"]
        assert remote.state()["step_count"] == 2
        # OpenEnv's capacity error (2 sessions): the third session is refused, naming the URL.
        second = RemoteEnv(url)
        envs.append(second)
        second.reset()
        with pytest.raises(EnvServerUnavailableError, match="full"):
            RemoteEnv(url).reset()
    finally:
        for env in envs:
            env.close()
        server.terminate()
        server.wait(timeout=30)
        server.stdout.close()
        server.stderr.close()

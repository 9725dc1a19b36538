"""MCP env tests against real servers: mcp-server-time and mcp-server-git from PyPI over stdio, and
a tiny SDK-built server (crashes, hangs) over stdio and streamable HTTP.

Servers are process-wide (that is the design), so each starts once for this module; the module
stops them all at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env
from mcp_helpers import (
    call,
    free_port,
    make_git_repo,
    row,
    start_http_server,
    stdio,
    write_silent_server,
    write_tiny_server,
    write_wedged_server,
)
from thread_helpers import run_in_threads

from tool_envs.errors import EnvConfigError, TaskRowError
from tool_envs.mcp.client import MCPConnectionError, MCPTimeoutError, close_all, get_connection
from tool_envs.mcp.config import HttpServerSpec, StdioServerSpec, load_servers
from tool_envs.mcp.env import MCPEnv
from tool_envs.mcp.reward import (
    CallRecord,
    RewardConfig,
    RewardWeights,
    compute_reward,
    parse_ground_truth,
)

TOKYO = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("mcp")


@pytest.fixture(scope="module")
def repo(workdir):
    return make_git_repo(workdir / "repo")


@pytest.fixture(scope="module")
def tiny_script(workdir):
    return write_tiny_server(workdir)


@pytest.fixture(scope="module")
def config(repo, tiny_script):
    return {
        "mcpServers": {
            "time": stdio("-m", "mcp_server_time", "--local-timezone", "UTC"),
            "git": stdio("-m", "mcp_server_git", "--repository", str(repo)),
            "tiny": stdio(str(tiny_script)),
        }
    }


@pytest.fixture(scope="module", autouse=True)
def _stop_servers():
    yield
    close_all()


def _env(config, **kwargs) -> MCPEnv:
    return MCPEnv(servers=config, **kwargs)


# --------------------------------------------------------------------------- config


def test_config_accepts_stdio_and_http_and_files(tmp_path):
    servers = load_servers(
        {
            "mcpServers": {
                "a": {"command": "python", "args": ["-m", "x"], "env": {"K": "v"}},
                "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "1"}},
                "off": {"command": "nothing", "disabled": True},
            }
        }
    )
    assert isinstance(servers["a"], StdioServerSpec) and servers["a"].args == ("-m", "x")
    assert isinstance(servers["b"], HttpServerSpec) and servers["b"].headers == {"X": "1"}
    assert "off" not in servers
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "cwd": "sub"}}}))
    assert load_servers(path)["a"].cwd == str(tmp_path / "sub")
    assert load_servers(str(path))["a"].command == "x"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"servers": {}}, "mcpServers"),
        ({"mcpServers": {"a": {"args": ["x"]}}}, "server 'a': needs 'command'"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "not both"),
        ({"mcpServers": {"a": {"command": "x", "args": "not-a-list"}}}, "field 'args'"),
        ({"mcpServers": {"a": {"command": "x", "typo": 1}}}, "server 'a': field 'typo'"),
        ({"mcpServers": {"h": {"url": "ftp://x"}}}, "server 'h': field 'url'"),
        ({"mcpServers": {"bad name": {"command": "x"}}}, "'bad name'"),
        ({"mcpServers": {}}, "no (enabled) server"),
        ("/no/such/file.json", "is not a file"),
    ],
)
def test_config_errors_name_the_server_and_field(source, expected):
    with pytest.raises(EnvConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_servers(source)


def test_env_rejects_bad_arguments(config):
    with pytest.raises(EnvConfigError, match="namespace"):
        _env(config, namespace="sometimes")
    with pytest.raises(EnvConfigError, match="answer_format"):
        _env(config, answer_format="json")
    with pytest.raises(EnvConfigError, match="unknown reward settings"):
        _env(config, reward={"weight": 1})
    with pytest.raises(EnvConfigError, match="retries"):
        _env(config, retries=-1)


# --------------------------------------------------------------------------- real servers


def test_tools_are_listed_with_the_servers_schemas(config):
    env = _env(config)
    env.reset(options={"task": row({"answer": "x"})})
    tools = {t["function"]["name"]: t["function"] for t in env.tools}
    assert {"get_current_time", "convert_time", "git_status", "git_log", "echo", "crash"} <= set(
        tools
    )
    served = {t.name: t for t in env.connection("time").list_tools()}
    assert tools["convert_time"]["parameters"] == served["convert_time"].input_schema
    assert (
        "IANA"
        in tools["convert_time"]["parameters"]["properties"]["source_timezone"]["description"]
    )
    assert tools["git_status"]["parameters"]["required"] == ["repo_path"]


def test_time_episode_ordered_sequence_and_answer(config):
    truth = {
        "tool_sequence": [{"step": 1, "server": "time", "tool": "convert_time", "params": TOKYO}],
        "order": "ordered",
        "param_match": "exact",
        "answer": "21:00",
        "answer_match": "substring",
    }
    env = _env(config)
    env.reset(options={"task": row(truth, servers=["time"])})
    assert {t["function"]["name"] for t in env.tools} == {"get_current_time", "convert_time"}
    obs, reward, terminated, _, info = env.step(call("convert_time", **TOKYO))
    assert not terminated and reward == 0.0
    assert obs[0]["role"] == "tool" and "21:00" in obs[0]["content"]
    (logged,) = info["mcp_calls"]
    assert logged["server"] == "time" and logged["tool"] == "convert_time"
    assert logged["arguments"] == TOKYO and logged["error"] is None and logged["seconds"] > 0
    _, reward, terminated, _, info = env.step("It is 21:00 in Tokyo.")
    assert terminated and reward == 1.0
    assert info["reward_info"]["passed"] and info["reward_info"]["reason"] == "all checks passed"


def test_git_episode_unordered_subset_params_and_must_call(config, repo):
    truth = {
        "success": {"must_call_tool": "git/git_log"},
        "tool_sequence": [
            {"tool": "git_log", "params": {"repo_path": str(repo)}},
            {"tool": "git_status", "params": {"repo_path": str(repo)}},
        ],
        "order": "unordered",
        "param_match": "subset",
        "answers": ["first commit"],
        "answer_match": "substring",
    }
    env = _env(config)
    env.reset(options={"task": row(truth, servers=["git"])})
    obs, *_ = env.step(call("git_status", repo_path=str(repo)))
    assert "working tree clean" in obs[0]["content"]
    obs, *_ = env.step(call("git_log", repo_path=str(repo), max_count=1))
    assert "first commit" in obs[0]["content"]
    _, reward, terminated, _, info = env.step("The last commit is 'first commit'.")
    assert terminated and reward == 1.0, info["reward_info"]

    # The same calls in this order fail an *ordered* sequence half-way: partial credit.
    truth["order"] = "ordered"
    env.reset(options={"task": row(truth, servers=["git"])})
    env.step(call("git_status", repo_path=str(repo)))
    env.step(call("git_log", repo_path=str(repo)))
    _, reward, _, _, info = env.step("first commit")
    parts = info["reward_info"]["parts"]
    assert parts["tool_sequence"]["matched"] == 1 and parts["must_call_tool"]["passed"]
    assert reward == pytest.approx((0.5 + 1 + 1) / 3)
    assert "tool_sequence" in info["reward_info"]["failed"]


def test_must_call_tool_missing_and_wrong_answer(config):
    env = _env(config, reward={"partial_credit": False})
    truth = {"success": {"must_call_tool": "get_current_time"}, "answer": "noon"}
    env.reset(options={"task": row(truth, servers=["time"])})
    _, reward, terminated, _, info = env.step("I think it is midnight.")
    assert terminated and reward == 0.0
    assert info["reward_info"]["failed"] == ["must_call_tool", "answer"]
    assert "never called: get_current_time" in info["reward_info"]["reason"]


def test_is_error_becomes_an_error_observation(config):
    env = _env(config)
    env.reset(options={"task": row({"answer": "x"}, servers=["time"])})
    obs, _, terminated, _, info = env.step(call("get_current_time", timezone="Nowhere/Bad"))
    assert not terminated
    assert obs[0]["content"].startswith("Error:") and "Nowhere/Bad" in obs[0]["content"]
    assert info["tool_errors"] == ["get_current_time: MCPToolError"]
    assert info["mcp_calls"][0]["error"].startswith("MCPToolError")
    # Schema validation happens before the server is asked.
    obs, *_ = env.step(call("get_current_time", zone="UTC"))
    assert obs[0]["content"].startswith("Error: invalid arguments for get_current_time")


def test_allow_list_hides_other_tools(config):
    env = _env(config, allow_tools=["time/*", "git_status"])
    env.reset(options={"task": row({"answer": "x"})})
    assert {t["function"]["name"] for t in env.tools} == {
        "get_current_time",
        "convert_time",
        "git_status",
    }
    obs, *_ = env.step(call("git_log", repo_path="."))
    assert obs[0]["content"].startswith("Error: unknown tool 'git_log'")
    with pytest.raises(EnvConfigError, match="match no tool"):
        _env(config, allow_tools=["nope_*"]).reset(options={"task": row({"answer": "x"})})


def test_namespacing_on_a_clash(config):
    servers = {
        "mcpServers": {
            "utc": config["mcpServers"]["time"],
            "paris": stdio("-m", "mcp_server_time", "--local-timezone", "Europe/Paris"),
            "tiny": config["mcpServers"]["tiny"],
        }
    }
    env = _env(servers)
    env.reset(options={"task": row({"success": {"must_call_tool": "paris/convert_time"}})})
    names = {t["function"]["name"] for t in env.tools}
    assert {"utc__convert_time", "paris__convert_time", "paris__get_current_time"} <= names
    assert "echo" in names and "tiny__echo" not in names  # only clashing names get a prefix
    obs, *_ = env.step(call("paris__convert_time", **TOKYO))
    assert "21:00" in obs[0]["content"]
    _, reward, _, _, info = env.step("done")
    assert reward == 1.0 and info["reward_info"]["mcp_calls"][0]["server"] == "paris"

    always = _env(config, namespace="always")
    always.reset(options={"task": row({"answer": "x"}, servers=["time"])})
    assert {t["function"]["name"] for t in always.tools} == {
        "time__get_current_time",
        "time__convert_time",
    }
    with pytest.raises(EnvConfigError, match="more than one server"):
        _env(servers, namespace="never").reset(options={"task": row({"answer": "x"})})


def test_row_servers_hide_other_tools_and_unknown_servers_are_errors(config):
    env = _env(config)
    env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    assert "convert_time" not in {t["function"]["name"] for t in env.tools}
    with pytest.raises(TaskRowError, match=r"extra_info\.servers"):
        env.reset(options={"task": row({"answer": "x"}, servers=["nope"])})
    with pytest.raises(TaskRowError, match="something to check"):
        env.reset(options={"task": row({})})


# --------------------------------------------------------------------------- failures


def _pid(env: MCPEnv) -> int:
    obs, *_ = env.step(call("pid"))
    return int(obs[0]["content"])


def test_crash_mid_call_then_the_next_call_reconnects(config):
    env = _env(config, retries=0)
    env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    before = _pid(env)
    starts = env.connection("tiny").starts
    obs, _, terminated, _, info = env.step(call("crash"))
    assert not terminated
    assert obs[0]["content"].startswith("Error: server 'tiny' closed the connection")
    assert info["tool_errors"] == ["crash: MCPConnectionError"]
    after = _pid(env)
    assert after != before and env.connection("tiny").starts == starts + 1
    obs, *_ = env.step(call("add", a=2, b=3))
    assert obs[0]["content"] == "5"


def test_a_server_that_died_between_calls_is_retried_transparently(config):
    env = _env(config, retries=1)
    env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    old = _pid(env)
    os.kill(old, signal.SIGKILL)
    time.sleep(0.2)
    obs, _, _, _, info = env.step(call("echo", text="still here"))
    assert obs[0]["content"] == "still here"
    assert info["mcp_calls"][-1]["attempts"] == 2 and info["mcp_calls"][-1]["error"] is None
    assert _pid(env) != old


def test_hang_times_out_and_the_env_keeps_working(config):
    env = _env(config, call_timeout_s=2.0)  # room for the healthy call after the hang
    env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    pid = _pid(env)
    started = time.monotonic()
    obs, _, terminated, _, info = env.step(call("hang", seconds=20))
    assert time.monotonic() - started < 20  # back before the server's hang ends
    assert not terminated and "timed out" in obs[0]["content"]
    assert info["tool_errors"] == ["hang: MCPTimeoutError"]
    assert info["mcp_calls"][-1]["attempts"] == 1  # timeouts are not retried
    obs, *_ = env.step(call("echo", text="ok"))
    assert obs[0]["content"] == "ok"
    assert _pid(env) == pid  # a timeout does not kill the session
    with pytest.raises(MCPTimeoutError):
        env.connection("tiny").call_tool("hang", {"seconds": 20}, timeout=0.2)


def test_servers_are_not_restarted_per_episode(config):
    env = _env(config)
    connection = env.connection("tiny")
    pids = set()
    for _ in range(5):
        env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
        pids.add(_pid(env))
    starts = connection.starts
    other = _env(config)  # another env shares the same server process
    other.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    pids.add(_pid(other))
    assert len(pids) == 1 and connection.starts == starts


def test_fresh_state_restarts_the_rows_servers_at_reset(config):
    env = _env(config, fresh_state=True)
    pids = []
    for _ in range(2):
        env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
        pids.append(_pid(env))
    assert pids[0] != pids[1]
    env.close()
    assert not _alive(pids[1])  # an episode's own server stops with it


def test_fresh_state_gives_each_episode_its_own_files_and_leaves_none(config):
    shared = _env(config)
    shared.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    shared_pid = _pid(shared)
    env = _env(config, fresh_state=True)
    folders = []
    for episode in range(3):
        env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
        env.step(call("remember", text=f"episode {episode}"))
        obs, *_ = env.step(call("recall"))
        assert obs[0]["content"] == f"episode {episode}\n"  # nothing from earlier episodes
        folders.append(env.connection("tiny").spec.cwd)
    assert len(set(folders)) == 3 and not any(os.path.exists(f) for f in folders[:-1])
    env.close()
    assert not os.path.exists(folders[-1])
    # The shared server (other envs' state) was neither restarted nor written to.
    assert _pid(shared) == shared_pid
    obs, *_ = shared.step(call("recall"))
    assert "episode" not in obs[0]["content"]


@pytest.mark.parametrize(
    ("reward_spec", "extra_info", "field"),
    [
        ({"ground_truth": [1]}, {}, "reward_spec.ground_truth"),
        ({"ground_truth": {"answers": 5}}, {}, "reward_spec.ground_truth.answers"),
        ({"answers": 5}, {}, "reward_spec.answers"),
        ({"ground_truth": {"tool_sequence": [{"tool": 3}]}}, {}, "reward_spec.ground_truth.tool_"),
        ({"answer": "x"}, {"servers": "tiny"}, "extra_info.servers"),
        ({"answer": "x"}, {"servers": ["nope"]}, "extra_info.servers"),
    ],
)
def test_bad_row_fields_are_named_with_the_row_index(config, reward_spec, extra_info, field):
    bad = {**row({"answer": "x"}), "reward_spec": reward_spec, "extra_info": extra_info}
    with pytest.raises(TaskRowError, match=f"field '{re.escape(field)}"):
        _env(config).reset(options={"task": bad})
    env = MCPEnv(servers=config, tasks=[row({"answer": "x"}), bad])
    with pytest.raises(TaskRowError, match=f"row 1, field '{re.escape(field)}"):
        env.reset(seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"call_timeout_s": "x"}, "call_timeout_s='x'"),
        ({"connect_timeout_s": 0}, "connect_timeout_s=0"),
        ({"retries": 1.5}, "retries=1.5"),
        ({"fresh_state": "yes"}, "fresh_state='yes'"),
        ({"allow_tools": [1]}, "allow_tools"),
    ],
)
def test_bad_arguments_fail_at_construction(config, kwargs, message):
    with pytest.raises(EnvConfigError, match=re.escape(message)):
        _env(config, **kwargs)


def test_episode_dir_placeholder_is_filled_in():
    from tool_envs.mcp.config import uses_episode_dir, with_episode_dir

    spec = load_servers(
        {
            "mcpServers": {
                "db": {
                    "command": "srv",
                    "args": ["--db", "{episode_dir}/x.db"],
                    "env": {"MEMORY_FILE_PATH": "{episode_dir}/m.json"},
                }
            }
        }
    )["db"]
    assert uses_episode_dir(spec)
    filled = with_episode_dir(spec, "/e1", working_dir=True)
    assert filled.args == ("--db", "/e1/x.db") and filled.env == {"MEMORY_FILE_PATH": "/e1/m.json"}
    assert filled.cwd == "/e1" and with_episode_dir(spec, "/e1").cwd is None


def _alive(pid: int, wait_s: float = 10.0) -> bool:
    """Whether ``pid`` still runs (a zombie counts as gone) after up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


def test_a_wedged_server_is_restarted_on_the_next_call(config):
    env = _env(config, call_timeout_s=1.0, fresh_state=True)
    env.reset(options={"task": row({"answer": "x"}, servers=["tiny"])})
    before = _pid(env)
    obs, *_ = env.step(call("freeze"))
    assert "timed out" in obs[0]["content"] and "restarted on the next call" in obs[0]["content"]
    after = _pid(env)
    assert after != before
    assert not _alive(before)  # the frozen process was killed, not left behind
    env.close()


# --------------------------------------------------------------------------- wedged servers (30)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs now (a zombie, waiting to be reaped, has stopped running)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def leftovers():
    """Pids a test expects gone; any still running at the end are killed (on a failed run)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _running(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _wedged_servers(tmp_path) -> dict:
    return {"mcpServers": {"wedged": stdio(str(write_wedged_server(tmp_path)))}}


def test_stop_servers_returns_once_a_wedged_server_and_its_children_are_gone(tmp_path, leftovers):
    env = _env(_wedged_servers(tmp_path), call_timeout_s=1.0)
    env.reset(options={"task": row({"answer": "x"})})
    obs, *_ = env.step(call("pids"))
    leftovers.extend(int(pid) for pid in obs[0]["content"].split())
    obs, *_ = env.step(call("wedge"))
    assert "did not answer a ping either" in obs[0]["content"], obs[0]["content"]
    started = time.monotonic()
    env.stop_servers()
    assert time.monotonic() - started < 15
    assert [pid for pid in leftovers if _running(pid)] == []  # gone when it returned
    env.close()


_CHILD = """
import sys, threading, time
from tool_envs.mcp.client import MCPServerConnection, MCPTimeoutError
from tool_envs.mcp.config import load_servers

connection = MCPServerConnection("wedged", load_servers({servers!r})["wedged"])
print(connection.call_tool("pids", {{}}, timeout=30).structured_content["result"], flush=True)
if sys.argv[1] == "exit":  # a call times out, the server answers no ping; then exit at once
    try:
        connection.call_tool("wedge", {{}}, timeout=1)
    except MCPTimeoutError as exc:
        print(exc, flush=True)
else:  # a call wedges the server; then wait to be killed
    threading.Thread(
        target=connection.call_tool, args=("wedge", {{"marker": {marker!r}}}, 600), daemon=True
    ).start()
    time.sleep(600)
"""


def _child(tmp_path, how: str) -> subprocess.Popen[str]:
    program = _CHILD.format(servers=_wedged_servers(tmp_path), marker=str(tmp_path / "wedged"))
    return subprocess.Popen(
        [sys.executable, "-c", program, how], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )


def test_a_process_that_exits_after_a_wedge_leaves_no_server(tmp_path, leftovers):
    child = _child(tmp_path, "exit")
    out, _ = child.communicate(timeout=60)
    leftovers.extend(int(pid) for pid in out.splitlines()[0].split())
    assert child.returncode == 0 and "did not answer a ping either" in out, out
    assert [pid for pid in leftovers if _running(pid)] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a parent-death signal is Linux")
def test_a_killed_process_takes_its_wedged_server_and_children_along(tmp_path, leftovers):
    child = _child(tmp_path, "kill")
    try:
        leftovers.extend(int(pid) for pid in child.stdout.readline().split())
        deadline = time.monotonic() + 30
        while not (tmp_path / "wedged").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "wedged").exists() and len(leftovers) == 2
    finally:
        child.kill()  # SIGKILL: no atexit, no teardown of any kind
        child.wait(timeout=10)
        child.stdout.close()
    assert not any(_alive(pid, wait_s=5.0) for pid in leftovers)


def test_a_missing_command_is_named_before_anything_starts():
    connection = get_connection("nothing", StdioServerSpec(command="no-such-mcp-server-x"))
    with pytest.raises(MCPConnectionError, match=r"No such file or directory: 'no-such-mcp"):
        connection.list_tools(connect_timeout_s=10)


def test_a_server_that_never_initialises_is_stopped_and_named(tmp_path):
    import gymnasium as gym

    import tool_envs

    gym.register_envs(tool_envs)
    pid_file = tmp_path / "pid"
    script = write_silent_server(tmp_path)
    servers = {"mcpServers": {"silent": stdio(str(script), str(pid_file))}}
    env = gym.make(
        "tool_envs/MCP-v0", servers=servers, tasks=[row({"answer": "x"})], connect_timeout_s=1
    )
    # The error is the 1 s start timeout firing (no wall-clock bound: under CI's load the whole
    # reset once took 11 s, the server's start and stop included).
    with pytest.raises(MCPConnectionError, match=r"'silent' did not finish starting within 1 s"):
        env.reset(seed=0)
    assert not _runs(script, wait_s=0.5)  # stopped before the error
    env.close()


def test_a_process_that_exits_right_after_a_connect_error_leaves_no_server(tmp_path):
    pid_file = tmp_path / "pid"
    script = write_silent_server(tmp_path)
    program = (
        "from tool_envs.mcp.client import MCPConnectionError, MCPServerConnection\n"
        "from tool_envs.mcp.config import load_servers\n"
        f"spec = load_servers({{'mcpServers': {{'s': {stdio(str(script), str(pid_file))!r}}}}})\n"
        "try:\n"
        "    MCPServerConnection('s', spec['s'], connect_timeout_s=1).list_tools()\n"
        "except MCPConnectionError:\n"
        "    pass\n"  # and exit at once
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60)
    assert not _runs(script, wait_s=1.0)


def _runs(script: Path, wait_s: float) -> list[int]:
    """Live processes running ``script`` after up to ``wait_s`` s. Found by command line, not by
    the pid file: on a loaded machine the server may not have written it within the 1 s timeout
    (and then it must be gone all the same)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    words = handle.read().split(b"\0")
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    zombie = handle.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                continue
            if str(script).encode() in words and not zombie:
                found.append(int(entry))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def test_concurrent_calls_from_threads_share_one_session(config):
    connection = get_connection("tiny", load_servers(config)["tiny"])
    errors: list[str] = []

    def work(n: int) -> None:
        for i in range(10):
            result = connection.call_tool("add", {"a": n, "b": i}, timeout=10)
            if result.structured_content != {"result": n + i}:
                errors.append(f"{n}+{i} -> {result.structured_content}")

    run_in_threads(work, 8)
    assert errors == []


def test_a_server_that_cannot_start_fails_reset_with_its_name():
    env = MCPEnv(servers={"mcpServers": {"bad": stdio("-c", "import sys; sys.exit(2)")}})
    with pytest.raises(MCPConnectionError, match="cannot start MCP server 'bad'"):
        env.reset(options={"task": row({"answer": "x"})})


# --------------------------------------------------------------------------- transports, env API


def test_streamable_http_server(tiny_script):
    port = free_port()
    process = start_http_server(tiny_script, port)
    try:
        env = MCPEnv(servers={"mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp"}}})
        env.reset(options={"task": row({"success": {"must_call_tool": "web/echo"}})})
        assert "echo" in {t["function"]["name"] for t in env.tools}
        obs, *_ = env.step(call("echo", text="over http"))
        assert obs[0]["content"] == "over http"
        _, reward, terminated, _, _ = env.step("done")
        assert terminated and reward == 1.0
        env.stop_servers()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_answer_tag_format_nudges_until_an_answer(config):
    env = _env(config, answer_format="tag")
    env.reset(options={"task": row({"answer": "5"}, servers=["tiny"])})
    obs, _, terminated, _, _ = env.step("Let me think.")
    assert not terminated and "<answer>" in obs[0]["content"]
    _, reward, terminated, _, _ = env.step("<answer>5</answer>")
    assert terminated and reward == 1.0


def test_gold_turns_solve_the_task(config):
    truth = {
        "tool_sequence": [{"tool": "add", "params": {"a": 2, "b": 3}}],
        "param_match": "exact",
        "answer": "5",
    }
    task = row(truth, servers=["tiny"])
    env = _env(config)
    env.reset(options={"task": task})
    turns = env.gold_turns(task)
    assert turns is not None and len(turns) == 2
    for turn in turns:
        _, reward, terminated, _, _ = env.step(turn)
    assert terminated and reward == 1.0


def test_pickling_drops_live_connections(config):
    env = _env(config)
    env.reset(options={"task": row({"answer": "5"}, servers=["tiny"])})
    env.step(call("echo", text="a"))
    copy = pickle.loads(pickle.dumps(env))
    assert copy._connections == {} or all(  # rebuilt on unpickle mid-episode from the registry
        c is env.connection(n) for n, c in copy._connections.items()
    )
    obs, *_ = copy.step(call("add", a=2, b=3))
    assert obs[0]["content"] == "5"
    _, reward, terminated, _, _ = copy.step("5")
    assert terminated and reward == 1.0
    assert "_live" not in str(pickle.dumps(_env(config).__getstate__()))


def test_check_env_passes(config):
    env = _env(config, tasks=[row({"answer": "x"}, servers=["time"])])
    check_env(env, skip_render_check=True)


# --------------------------------------------------------------------------- reward (pure)


def _calls(*specs: tuple[str, dict], server: str = "s", error: str | None = None):
    return [CallRecord(server=server, tool=t, arguments=a, error=error) for t, a in specs]


def test_reward_sequence_orders_and_param_modes():
    steps = [
        {"tool": "a", "params": {"x": 1}},
        {"tool": "b", "params": {"y": {"z": 2}}},
    ]
    calls = _calls(("b", {"y": {"z": 2, "w": 0}}), ("noise", {}), ("a", {"x": 1, "extra": 5}))
    unordered = parse_ground_truth({"ground_truth": {"tool_sequence": steps, "order": "unordered"}})
    assert compute_reward(unordered, calls, None)[0] == 1.0
    ordered = parse_ground_truth({"ground_truth": {"tool_sequence": steps}})
    reward, info = compute_reward(ordered, calls, None)
    assert reward == 0.5 and info["parts"]["tool_sequence"]["matched"] == 1
    assert len(info["parts"]["tool_sequence"]["missing"]) == 1
    exact = parse_ground_truth({"ground_truth": {"tool_sequence": steps, "param_match": "exact"}})
    assert compute_reward(exact, calls, None)[0] == 0.0
    ignore = parse_ground_truth(
        {
            "ground_truth": {
                "tool_sequence": {"steps": steps, "order": "unordered", "param_match": "ignore"}
            }
        }
    )
    assert compute_reward(ignore, _calls(("a", {}), ("b", {})), None)[0] == 1.0
    step_override = [{"tool": "a", "params": {"x": 1}, "match": "exact"}]
    truth = parse_ground_truth({"ground_truth": {"tool_sequence": step_override}})
    assert compute_reward(truth, calls, None)[0] == 0.0
    by_step = [{"step": 2, "tool": "b"}, {"step": 1, "tool": "a"}]
    truth = parse_ground_truth({"ground_truth": {"tool_sequence": by_step}})
    assert compute_reward(truth, _calls(("a", {}), ("b", {})), None)[0] == 1.0


def test_reward_server_must_call_and_failed_calls():
    truth = parse_ground_truth(
        {"ground_truth": {"success": {"must_call_tool": ["git/git_log", "echo"]}}}
    )
    ok = [CallRecord("git", "git_log"), CallRecord("tiny", "echo")]
    assert compute_reward(truth, ok, None)[0] == 1.0
    wrong_server = [CallRecord("other", "git_log"), CallRecord("tiny", "echo")]
    assert compute_reward(truth, wrong_server, None)[1]["parts"]["must_call_tool"]["missing"] == [
        "git/git_log"
    ]
    failed = [CallRecord("git", "git_log", error="MCPToolError: x"), CallRecord("tiny", "echo")]
    assert compute_reward(truth, failed, None)[0] == 0.0
    assert compute_reward(truth, failed, None, RewardConfig(count_failed_calls=True))[0] == 1.0
    dicts = [{"server": "git", "tool": "git_log"}, {"server": "tiny", "tool": "echo"}]
    assert compute_reward(truth, dicts, None)[0] == 1.0


def test_reward_limits_fail_or_penalise():
    truth = parse_ground_truth(
        {"ground_truth": {"answer": "x", "limits": {"max_servers": 1, "max_calls": 2}}}
    )
    calls = [CallRecord("a", "t"), CallRecord("b", "t"), CallRecord("b", "u")]
    reward, info = compute_reward(truth, calls, "x")
    assert reward == 0.0 and info["failed"] == ["limits"]
    assert info["parts"]["limits"]["exceeded"] == ["max_servers=1 (used 2)", "max_calls=2 (used 3)"]
    penalised = compute_reward(truth, calls, "x", RewardConfig(limit_mode="penalty"))[0]
    assert penalised == 0.5
    assert compute_reward(truth, calls[:1], "x")[0] == 1.0
    tools = parse_ground_truth({"ground_truth": {"answer": "x", "limits": {"max_tools": 1}}})
    assert compute_reward(tools, [CallRecord("a", "t"), CallRecord("a", "t")], "x")[0] == 1.0
    assert compute_reward(tools, calls[1:], "x")[0] == 0.0


def test_reward_answers_weights_and_partial_credit():
    truth = parse_ground_truth(
        {"ground_truth": {"success": {"must_call_tool": "a"}}, "answers": ["The Eiffel Tower"]}
    )
    assert compute_reward(truth, [], "eiffel tower!")[1]["parts"]["answer"]["passed"]
    assert (
        compute_reward(truth, [], "It is the Eiffel Tower.")[1]["parts"]["answer"]["passed"]
        is False
    )
    substring = RewardConfig(answer_match="substring")
    assert compute_reward(truth, [], "It is the Eiffel Tower.", substring)[0] == 0.5
    weighted = RewardConfig(weights=RewardWeights(must_call=3.0, answer=1.0))
    assert compute_reward(truth, _calls(("a", {})), "no", weighted)[0] == 0.75
    strict = RewardConfig(partial_credit=False)
    assert compute_reward(truth, _calls(("a", {})), "no", strict)[0] == 0.0
    assert compute_reward(truth, _calls(("a", {})), None)[1]["parts"]["answer"]["passed"] is False


def test_ground_truth_validation_names_the_field():
    with pytest.raises(TaskRowError, match=r"ground_truth\.tool_sequence\.0\.tool"):
        parse_ground_truth({"ground_truth": {"tool_sequence": [{"server": "s"}]}})
    with pytest.raises(TaskRowError, match=r"ground_truth\.order"):
        parse_ground_truth({"ground_truth": {"answer": "x", "order": "sideways"}})
    with pytest.raises(TaskRowError, match="not valid JSON"):
        parse_ground_truth({"ground_truth": "{oops"})
    as_json = parse_ground_truth({"ground_truth": json.dumps({"answer": "x"})})
    assert as_json.gold_answers == ["x"]
    with pytest.raises(EnvConfigError, match="limit_penalty"):
        RewardConfig(limit_penalty=2)


def test_env_reward_settings_reach_the_reward(config):
    env = _env(config, reward={"weights": {"answer": 0.0, "must_call": 1.0}})
    env.reset(
        options={
            "task": row({"success": {"must_call_tool": "echo"}, "answer": "z"}, servers=["tiny"])
        }
    )
    env.step(call("echo", text="x"))
    _, reward, _, _, _ = env.step("wrong")
    assert reward == 1.0


def test_default_task_set_gold_episodes_earn_full_reward_on_the_real_servers():
    """The registered env with its defaults: demo repository, time/git/python servers."""
    import gymnasium as gym

    import tool_envs
    from tool_envs.mcp.tasks import default_splits

    gym.register_envs(tool_envs)
    rows = default_splits()["test"]
    sample, seen = [], {}
    for task in rows:
        category = task["extra_info"]["category"]
        if seen.get(category, 0) < 2:
            seen[category] = seen.get(category, 0) + 1
            sample.append(task)
    env = gym.make("tool_envs/MCP-v0")
    for task in sample:
        env.reset(options={"task": task})
        for turn in env.unwrapped.gold_turns(task):
            _, reward, terminated, truncated, info = env.step(turn)
            if terminated or truncated:
                break
        assert terminated and reward == 1.0, (task["extra_info"]["id"], info["reward_info"])
    assert len(seen) >= 3
    env.close()

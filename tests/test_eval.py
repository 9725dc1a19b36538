"""The evaluation CLI: metrics on fixed trial tables, real ``openai`` client runs against a local
chat server (native and text mode), resuming after Ctrl-C / a failing server / a killed process,
the gold and noop baselines, ``tool-envs check``, the error messages, and void trials (a
simulated user's server that is down) that are counted, never saved, and replayed."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import (
    COMPLETION_TOKENS,
    CalculatorChatServer,
    default_plan,
    requests_of_plan,
    serve,
)
from failing_servers import killed_url
from tau_helpers import PROMPT_TOKENS, customer_server
from vllm_helpers import requires_vllm

from tool_envs.calculator.tasks import default_splits
from tool_envs.cli import main
from tool_envs.eval.agents import EvalError
from tool_envs.eval.metrics import pass_at_k, pass_hat_k, summarize
from tool_envs.eval.report import format_table
from tool_envs.eval.runner import EvalConfig, run_eval
from tool_envs.eval.store import TrajectoryStore

CALC = "tool_envs/Calculator-v0"
TASKS = default_splits()["test"][:4]


@pytest.fixture(scope="module")
def _server() -> Iterator[CalculatorChatServer]:
    yield from serve(TASKS)


@pytest.fixture
def server(_server: CalculatorChatServer) -> CalculatorChatServer:
    _server.reset()
    return _server


def _config(server: CalculatorChatServer, out: Path, **overrides: Any) -> EvalConfig:
    settings: dict[str, Any] = {
        "envs": [CALC],
        "out": out,
        "model": "calc-model",
        "base_url": server.url,
        "api_key": "test",
        "limit": 4,
        "trials": 3,
        "concurrency": 4,
        "max_retries": 0,
        "timeout": 10,
        "progress": False,
    }
    settings.update(overrides)
    return EvalConfig(**settings)


def _lines(out: Path) -> list[dict[str, Any]]:
    text = (out / "trajectories.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _keys(records: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(r["env_id"], r["task_id"], r["trial"]) for r in records]


def _expected(trials: int, mode: str) -> dict[str, Any]:
    """The numbers the server's default plan must produce, counted by hand from the plan."""
    rights = [[default_plan(p, e) for e in range(trials)] for p in range(len(TASKS))]
    gold = [len(t["reward_spec"]["gold_calls"]) for t in TASKS]
    episodes = [(g, r) for g, plans in zip(gold, rights, strict=True) for r in plans]
    wrong = sum(not r for _, r in episodes)
    requests = [requests_of_plan(r, g) for g, r in episodes]
    return {
        "successes": [sum(plans) for plans in rights],
        "turns": sum(requests) / len(requests),  # one API request per turn
        "tool_calls": sum(g if r else (2 if mode == "native" else 1) for g, r in episodes),
        "wrong": wrong,
        "requests": sum(requests),
        # request j of an episode carries 2 + 2j messages (one result per call), 10 tokens each
        "prompt_tokens": sum(10 * n * (n + 1) for n in requests),
    }


# --------------------------------------------------------------------------- metrics


def test_pass_at_k_and_pass_hat_k_hand_computed() -> None:
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_at_k(5, 3, 2) == pytest.approx(1 - 1 / 10)  # 1 - C(2,2)/C(5,2)
    assert pass_hat_k(4, 2, 1) == pass_at_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_hat_k(6, 0, 3) == pass_at_k(6, 0, 3) == 0.0  # c = 0
    assert pass_hat_k(6, 6, 3) == pass_at_k(6, 6, 3) == 1.0  # c = n
    assert pass_hat_k(4, 3, 4) == 0.0 and pass_at_k(4, 3, 4) == 1.0  # k = n
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_at_k(4, 0, 4) == 0.0
    with pytest.raises(ValueError, match="k=5 needs at least k trials"):
        pass_hat_k(4, 2, 5)
    with pytest.raises(ValueError, match="k=5"):
        pass_at_k(4, 2, 5)
    for bad in [(4, 5, 1), (4, -1, 1), (4, 2, 0), (0, 0, 1)]:
        with pytest.raises(ValueError):
            pass_hat_k(*bad)


def test_estimators_equal_the_fraction_of_k_subsets() -> None:
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                assert pass_hat_k(n, c, k) == pytest.approx(sum(map(all, subsets)) / len(subsets))
                assert pass_at_k(n, c, k) == pytest.approx(sum(map(any, subsets)) / len(subsets))


def _table(env: str, task: str, rewards: list[float]) -> list[dict[str, Any]]:
    return [
        {"env_id": env, "task_id": task, "trial": t, "reward": r, "turns": 2, "stats": {}}
        for t, r in enumerate(rewards)
    ]


def test_summarize_fixed_trial_table() -> None:
    records = (
        _table("A", "a1", [1, 1, 1, 1])
        + _table("A", "a2", [0, 1, 0, 0.5])  # partial credit is not success
        + _table("B", "b1", [1, 0, 1, 0])
    )
    summary = summarize(records)
    overall, env_a, env_b = summary["overall"], summary["envs"]["A"], summary["envs"]["B"]
    assert overall["tasks"] == 3 and overall["trials"] == 12
    assert overall["success_rate"] == pytest.approx(7 / 12)
    assert overall["mean_reward"] == pytest.approx(7.5 / 12)
    # pass^2 per task: 1, C(1,2)/C(4,2) = 0, C(2,2)/C(4,2) = 1/6
    assert overall["pass_hat_k"]["2"] == pytest.approx((1 + 0 + 1 / 6) / 3)
    # pass@2 per task: 1, 1 - C(3,2)/6 = 1/2, 1 - C(2,2)/6 = 5/6
    assert overall["pass_at_k"]["2"] == pytest.approx((1 + 1 / 2 + 5 / 6) / 3)
    assert overall["pass_hat_k"]["4"] == pytest.approx(1 / 3)
    assert overall["pass_at_k"]["4"] == pytest.approx(1.0)
    assert env_a["pass_hat_k"]["2"] == pytest.approx(0.5)
    assert env_a["pass_at_k"]["2"] == pytest.approx(0.75)
    assert env_b["pass_hat_k"] == pytest.approx({"1": 0.5, "2": 1 / 6, "3": 0.0, "4": 0.0})
    # Uneven trial counts: k only up to the smallest n.
    uneven = summarize(_table("A", "a", [1, 0, 1]) + _table("A", "b", [1]))
    assert list(uneven["overall"]["pass_hat_k"]) == ["1"]
    assert uneven["overall"]["pass_hat_k"]["1"] == pytest.approx((2 / 3 + 1) / 2)


# --------------------------------------------------------------------------- end to end


def test_native_tools_end_to_end(server: CalculatorChatServer, tmp_path: Path) -> None:
    out = tmp_path / "native"
    result = run_eval(_config(server, out, price_per_million=(2.0, 8.0)))
    expected = _expected(3, "native")

    assert not result.interrupted and result.error is None
    assert result.new_trials == 12 and result.skipped_trials == 0
    overall = result.summary["overall"]
    assert result.summary["envs"][CALC] == overall
    # Per-task successes (3, 0, 2, 1) of 3 trials, computed by hand.
    assert expected["successes"] == [3, 0, 2, 1]
    assert overall["success_rate"] == pytest.approx(0.5)
    assert overall["mean_reward"] == pytest.approx(0.5)
    assert overall["pass_hat_k"] == pytest.approx({"1": 0.5, "2": 1 / 3, "3": 0.25})
    assert overall["pass_at_k"] == pytest.approx({"1": 0.5, "2": 2 / 3, "3": 0.75})
    assert overall["mean_turns"] == pytest.approx(expected["turns"])
    assert overall["tool_calls"] == expected["tool_calls"]
    assert overall["env_errors"] == expected["wrong"] == 6  # one unknown tool per wrong trial
    assert overall["parse_errors"] == 0 and overall["failed_trials"] == 0
    assert overall["requests"] == len(server.requests) == expected["requests"]
    assert overall["prompt_tokens"] == server.prompt_tokens == expected["prompt_tokens"]
    assert overall["completion_tokens"] == server.completion_tokens
    assert server.completion_tokens == COMPLETION_TOKENS * expected["requests"]
    cost = (server.prompt_tokens * 2.0 + server.completion_tokens * 8.0) / 1e6
    assert overall["cost"] == pytest.approx(cost)
    assert all(body["tools"] and body["model"] == "calc-model" for body in server.requests)

    lines = _lines(out)
    assert sorted(_keys(lines)) == sorted(
        (CALC, t["extra_info"]["id"], trial) for t in TASKS for trial in range(3)
    )
    by_task = Counter(line["task_id"] for line in lines if line["success"])
    assert [by_task[t["extra_info"]["id"]] for t in TASKS] == [3, 0, 2, 1]
    first = lines[0]
    assert first["usage"]["requests"] == first["turns"]
    assert first["reward_info"]["reason"] in {"correct answer", "wrong answer"}
    assert first["messages"][0]["role"] == "system" and first["messages"][1]["role"] == "user"
    assert any(m.get("tool_calls") for m in first["messages"])
    seeds = {(line["task_id"], line["trial"]): line["seed"] for line in lines}
    assert len(set(seeds.values())) == 12  # one reset seed per (task, trial)

    assert json.loads((out / "summary.json").read_text())["overall"] == overall
    assert (out / "pass_hat_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "report.html").read_text(encoding="utf-8")
    for task in TASKS:
        assert task["extra_info"]["id"] in page
    assert "3/3 passed" in page and "0/3 passed" in page
    report = _ReportStructure.of(page)
    assert "pass^3" in report.summary_headers and "per env" in report.summary_text
    assert report.has_checkbox and report.images == ["pass_hat_k.png"]
    # Tasks with a failed trial come first, the fully passed one last; failed trials first.
    assert [h.split(":")[1].strip() for h in report.task_headings][-1] == "3/3 passed"
    assert report.trial_classes[:2] == ["trial failed", "trial failed"]
    table = format_table(result.summary)
    assert "pass^3" in table and "0.250" in table and "cost" in table

    # Rerunning the finished run plays nothing and asks the API nothing.
    before = len(server.requests)
    again = run_eval(_config(server, out))
    assert again.new_trials == 0 and again.skipped_trials == 12
    assert len(server.requests) == before
    assert again.summary["overall"]["pass_hat_k"] == pytest.approx(overall["pass_hat_k"])


def test_text_mode_end_to_end_through_the_cli(
    server: CalculatorChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "text"
    code = main(
        [
            "eval",
            "--env",
            CALC,
            "--mode",
            "text",
            "--model",
            "calc-model",
            "--base-url",
            server.url,
            "--api-key",
            "test",
            "--trials",
            "2",
            "--limit",
            "4",
            "--concurrency",
            "3",
            "--max-retries",
            "0",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "pass^2" in printed and str(out / "report.html") in printed
    assert all("tools" not in body for body in server.requests)  # text mode sends no tools=

    summary = json.loads((out / "summary.json").read_text())["overall"]
    expected = _expected(2, "text")
    assert expected["successes"] == [2, 0, 1, 1]
    assert summary["success_rate"] == pytest.approx(0.5)
    assert summary["pass_hat_k"] == pytest.approx({"1": 0.5, "2": 0.25})
    assert summary["pass_at_k"] == pytest.approx({"1": 0.5, "2": 0.75})
    assert summary["parse_errors"] == expected["wrong"] == 4  # one malformed call per wrong trial
    assert summary["env_errors"] == 0
    assert summary["tool_calls"] == expected["tool_calls"]
    assert summary["requests"] == len(server.requests) == expected["requests"]
    assert summary["prompt_tokens"] == expected["prompt_tokens"]

    lines = _lines(out)
    assert len(lines) == 8 and len(set(_keys(lines))) == 8
    # Lines are in finishing order (concurrent trials): read one the model got right.
    solved = next(line for line in lines if line["reward"] == 1.0)
    assistant = next(m for m in solved["messages"] if m["role"] == "assistant")
    assert assistant.get("tool_calls")  # the env parsed the Hermes text into a call
    assert "<tool_call>" in assistant["raw"]  # and the report keeps what the model wrote
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "&lt;tool_call&gt;" in page and "<tool_call>" not in page
    for task in TASKS:
        assert task["extra_info"]["id"] in page


# --------------------------------------------------------------------------- resuming


def test_ctrl_c_keeps_finished_trials_and_a_rerun_completes_them(
    server: CalculatorChatServer, tmp_path: Path
) -> None:
    out = tmp_path / "interrupted"
    server.interrupt_after = 5
    first = run_eval(_config(server, out, concurrency=2))
    assert first.interrupted
    kept = _lines(out)
    assert 0 < len(kept) < 12 and len(set(_keys(kept))) == len(kept)
    assert first.summary["run"]["complete"] is False

    server.reset()
    second = run_eval(_config(server, out, concurrency=2))
    assert not second.interrupted and second.summary["run"]["complete"]
    lines = _lines(out)
    assert len(lines) == 12 and len(set(_keys(lines))) == 12
    assert second.skipped_trials == len(kept) and second.new_trials == 12 - len(kept)
    new = lines[len(kept) :]
    assert not set(_keys(new)) & set(_keys(kept))
    # Only the missing trials asked the API anything.
    assert len(server.requests) == sum(r["usage"]["requests"] for r in new)


def test_failing_server_stops_the_run_and_a_rerun_resumes(
    server: CalculatorChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "failing"
    server.fail_after = 6
    first = run_eval(_config(server, out, concurrency=1))
    assert first.error is not None and "HTTP 500" in first.error and server.url in first.error
    kept = _lines(out)
    assert 0 < len(kept) < 12

    server.reset()
    second = run_eval(_config(server, out, concurrency=3))
    assert second.error is None and second.new_trials == 12 - len(kept)
    assert sorted(_keys(_lines(out))) == sorted(set(_keys(_lines(out))))
    assert len(_lines(out)) == 12
    assert len(server.requests) == sum(r["usage"]["requests"] for r in _lines(out)[len(kept) :])


def test_more_trials_later_plays_only_the_new_ones(
    server: CalculatorChatServer, tmp_path: Path
) -> None:
    out = tmp_path / "grow"
    run_eval(_config(server, out, trials=1))
    server.reset()
    grown = run_eval(_config(server, out, trials=2))
    assert grown.skipped_trials == 4 and grown.new_trials == 4
    lines = _lines(out)
    assert sorted(line["trial"] for line in lines) == [0] * 4 + [1] * 4
    assert len(server.requests) == sum(r["usage"]["requests"] for r in lines[4:])


def test_a_torn_last_line_is_dropped_and_rerun(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    store = TrajectoryStore(path)
    store.append({"env_id": CALC, "task_id": "a", "trial": 0, "reward": 1.0})
    store.append({"env_id": CALC, "task_id": "a", "trial": 0, "reward": 0.0})  # duplicate key
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"env_id": "tool_envs/Calculator-v0", "task_id": "b", "tri')
    with pytest.warns(UserWarning, match="unfinished last line"):
        records = store.load()
    assert [(r["task_id"], r["reward"]) for r in records] == [("a", 1.0)]
    assert path.read_text().endswith("\n") and path.read_text().count("\n") == 2


def test_killed_process_resumes_without_duplicates(
    server: CalculatorChatServer, tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    server.hang_after = 7  # the 8th request never returns: the process is killed waiting
    command = [sys.executable, "-m", "tool_envs.cli", "eval", "--env", CALC, "--model", "m"]
    command += ["--base-url", server.url, "--api-key", "t", "--limit", "4", "--trials", "3"]
    command += ["--concurrency", "1", "--no-progress", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(server.requests) <= 7 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) > 7, "the eval process never reached the server"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    kept = _lines(out)
    assert 0 < len(kept) < 12

    server.reset()
    result = run_eval(_config(server, out, model="m", api_key="t", concurrency=2, timeout=120))
    lines = _lines(out)
    assert len(lines) == 12 and len(set(_keys(lines))) == 12
    assert result.skipped_trials == len(kept)
    assert len(server.requests) == sum(r["usage"]["requests"] for r in lines[len(kept) :])


# --------------------------------------------------------------------------- baselines, check


def test_gold_and_noop_baselines(tmp_path: Path) -> None:
    gold = run_eval(
        EvalConfig(envs=[CALC], out=tmp_path / "gold", agent="gold", limit=10, progress=False)
    )
    assert gold.summary["overall"]["success_rate"] == 1.0
    assert gold.summary["overall"]["prompt_tokens"] is None  # no API, no tokens
    noop = run_eval(
        EvalConfig(envs=[CALC], out=tmp_path / "noop", agent="noop", limit=10, progress=False)
    )
    assert noop.summary["overall"]["success_rate"] == 0.0
    assert noop.summary["overall"]["mean_turns"] == 1.0  # the empty reply is the final answer
    page = (tmp_path / "gold" / "report.html").read_text(encoding="utf-8")
    assert "&lt;tool_call&gt;" in page  # gold turns are Hermes text, escaped
    # One trial per task: a plain statement instead of a one-dot pass^k plot.
    report = _ReportStructure.of(page)
    assert "One trial per task" in report.text and report.images == []
    assert not (tmp_path / "gold" / "pass_hat_k.png").exists()
    assert {"tasks", "success", "pass^1"} <= set(report.summary_headers)
    assert report.config_keys and "agent" in report.config_keys
    noop_report = _ReportStructure.of((tmp_path / "noop" / "report.html").read_text())
    assert "10 of 10 trials failed" in noop_report.text


def test_check_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", CALC]) == 0
    printed = capsys.readouterr().out
    assert "ok   check_env passed" in printed and "ok   gold episode" in printed
    assert main(["check", "tool_envs/Calculater-v0"]) == 2
    assert "Did you mean 'tool_envs/Calculator-v0'" in capsys.readouterr().err


# --------------------------------------------------------------------------- errors


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--env", "tool_envs/Calculater-v0"], "Did you mean 'tool_envs/Calculator-v0'"),
        (["--env", CALC, "--split", "dev"], "has no split 'dev'; it has ['test', 'train']"),
        (["--env", CALC, "--trials", "0"], "--trials must be at least 1, got 0"),
        (["--env", CALC, "--env-kwargs", '{"tool_envs/Nope-v0": {}}'], "unknown env id"),
    ],
)
def test_bad_input_is_a_clear_error(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", *flags, "--model", "m", "--api-key", "k", "--out", str(tmp_path / "x")]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_unreachable_base_url_names_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    argv = ["eval", "--env", CALC, "--model", "m", "--base-url", url, "--limit", "2"]
    argv += ["--max-retries", "0", "--no-progress", "--out", str(tmp_path / "x")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"cannot reach the chat API at {url}" in err and "--base-url" in err
    assert not (tmp_path / "x" / "trajectories.jsonl").exists()


def test_a_run_folder_refuses_other_settings(server: CalculatorChatServer, tmp_path: Path) -> None:
    out = tmp_path / "mixed"
    run_eval(_config(server, out, trials=1, limit=1))
    with pytest.raises(EvalError, match=r"model: 'calc-model' -> 'other'"):
        run_eval(_config(server, out, trials=1, limit=1, model="other"))


def test_config_rejects_impossible_settings(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="needs --model"):
        EvalConfig(envs=[CALC], out=tmp_path).validate()
    with pytest.raises(EvalError, match="--concurrency"):
        EvalConfig(envs=[CALC], out=tmp_path, model="m", concurrency=0).validate()
    assert math.isclose(pass_hat_k(3, 3, 3), 1.0)


# --------------------------------------------------------------------------- helper failures

RETAIL = "tool_envs/TauRetail-v0"


def _retail_with_llm_user(user_url: str, out: Path, server: CalculatorChatServer) -> list[str]:
    """The CLI on two retail tasks: the agent chats, an LLM user behind ``user_url`` answers."""
    user = {"base_url": user_url, "api_key": "k", "max_retries": 0, "timeout": 5}
    argv = ["eval", "--env", RETAIL, "--model", "m", "--base-url", server.url, "--api-key", "k"]
    argv += ["--env-kwargs", json.dumps({RETAIL: {"user_kwargs": user}}), "--user", "llm"]
    argv += ["--limit", "2", "--concurrency", "1", "--void-limit", "2", "--max-retries", "0"]
    return [*argv, "--no-progress", "--out", str(out)]


def test_a_dead_user_simulator_voids_trials_and_the_same_command_replays_them(
    server: CalculatorChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.chatter = "How can I help you today?"
    out = tmp_path / "void"
    user_url = killed_url()  # the user simulator's server is down
    argv = _retail_with_llm_user(user_url, out, server)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "stopped: 2 trials in a row were void" in err
    assert f"user_simulator failed (cannot reach the LLM user simulator at {user_url}" in err
    assert "run the same command again to replay them" in err
    assert not (out / "trajectories.jsonl").exists()  # nothing recorded as the agent's failure
    void = [json.loads(line) for line in (out / "void.jsonl").read_text().splitlines()]
    assert [v["outcome"] for v in void] == ["void", "void"]
    # the agent was called once per trial, and the records say so
    assert [(v["usage"]["requests"], v["turns"]) for v in void] == [(1, 1), (1, 1)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["void_trials"] == 2 and summary["run"]["void_trials"] == 2
    assert summary["overall"]["void_causes"] == {"user_simulator": 2}

    port = int(user_url.rsplit(":", 1)[1].split("/")[0])
    with customer_server(port=port) as customer:  # the user's server is back, same address
        assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = _lines(out)
    assert len(lines) == 2 and {line["outcome"] for line in lines} == {"failure"}
    assert sum(line["helper_usage"]["user"]["calls"] for line in lines) == len(customer.requests)
    overall = json.loads((out / "summary.json").read_text())["overall"]
    assert overall["user_calls"] == len(customer.requests) > 0
    assert overall["user_prompt_tokens"] == PROMPT_TOKENS * len(customer.requests)
    assert overall["judge_calls"] is None and overall["void_trials"] == 0
    assert "user in/out" in printed and "judge in/out" not in printed


def test_void_trials_that_do_not_persist_are_counted_and_the_run_goes_on(
    server: CalculatorChatServer, tmp_path: Path
) -> None:
    server.chatter = "How can I help you today?"
    with customer_server(fail_first=1) as customer:  # only the first user call fails
        user = {"base_url": customer.base_url, "api_key": "k", "max_retries": 0}
        config = _config(
            server,
            tmp_path / "flaky",
            envs=[RETAIL],
            user="llm",
            env_kwargs={RETAIL: {"user_kwargs": user}},
            limit=2,
            trials=1,
            concurrency=1,
        )
        result = run_eval(config)
    assert result.error is None and result.summary["run"]["void_trials"] == 1
    assert result.summary["run"]["finished_trials"] == 1 and not result.summary["run"]["complete"]
    assert "void" in format_table(result.summary).splitlines()[0]


def test_user_goes_only_to_envs_with_a_simulated_user(tmp_path: Path) -> None:
    with customer_server() as customer:
        user = {"base_url": customer.base_url, "api_key": "k", "max_retries": 0}
        config = EvalConfig(
            envs=[CALC, RETAIL],
            out=tmp_path / "mixed",
            agent="gold",
            user="llm",
            env_kwargs={RETAIL: {"user_kwargs": user}},
            limit=1,
            progress=False,
        )
        result = run_eval(config)
    assert result.error is None and result.summary["run"]["complete"]
    assert result.summary["envs"][CALC]["success_rate"] == 1.0
    with pytest.raises(EvalError, match="--user llm applies to envs with a simulated user"):
        run_eval(EvalConfig(envs=[CALC], out=tmp_path / "x", agent="gold", user="llm"))


@pytest.mark.vllm
@requires_vllm
def test_a_model_name_typo_leaves_the_folder_free_for_the_corrected_command(
    vllm_server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "typo"
    settings: dict[str, Any] = {
        "envs": [CALC],
        "out": out,
        "base_url": vllm_server.url + "/v1",
        "api_key": "k",
        "mode": "text",
        "limit": 1,
        "max_turns": 2,
        "max_tokens": 16,
        "max_retries": 0,
        "progress": False,
    }
    typo = run_eval(EvalConfig(model="tyni", **settings))
    assert typo.error is not None and "answered 404" in typo.error and "--model" in typo.error
    fixed = run_eval(EvalConfig(model="tiny", **settings))  # the same folder is accepted
    assert fixed.error is None and fixed.new_trials == 1
    with pytest.raises(EvalError, match="holds trials of a run with other settings"):
        run_eval(EvalConfig(model="tyni", **settings))  # now it holds a trial: refused


class _ReportStructure(HTMLParser):
    """What a reader of report.html sees, parsed with the standard library."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.summary_headers: list[str] = []
        self.summary_text = ""
        self.config_keys: list[str] = []
        self.task_headings: list[str] = []
        self.trial_classes: list[str] = []
        self.images: list[str] = []
        self.has_checkbox = False
        self.text = ""

    @classmethod
    def of(cls, page: str) -> _ReportStructure:
        parser = cls()
        parser.feed(page)
        return parser

    def _inside(self, tag: str, cls: str) -> bool:
        return any(t == tag and cls in a.get("class", "") for t, a in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.images.append(values["src"])
        elif tag == "input" and values.get("type") == "checkbox":
            self.has_checkbox = True
        elif tag == "details" and "trial" in values.get("class", ""):
            self.trial_classes.append(values["class"])
        if tag not in {"img", "input", "meta", "br"}:
            self.stack.append((tag, values))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._inside("table", "summary"):
            self.summary_text += data
            if self.stack[-1][0] == "th" and self._inside("thead", ""):
                self.summary_headers.append(data.strip())
        if self._inside("table", "config") and self.stack[-1][0] == "th":
            self.config_keys.append(data.strip())
        if self.stack and self.stack[-1][0] == "h4":
            self.task_headings.append(data.strip())

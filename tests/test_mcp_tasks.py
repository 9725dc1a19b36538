"""MCP-v0 task sets: determinism, disjoint splits, the committed dataset, and gold sequences
replayed against the real servers (mcp-server-time, mcp-server-git on the demo repository, the
built-in python server); the LLM task writer against a local OpenAI-compatible server; the
conversation converter."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from dataset_helpers import check_committed_dataset
from mcp_helpers import KOLKATA_TO_TOKYO, chat_server

from tool_envs.data import validate_row
from tool_envs.mcp.tasks import (
    DEMO_REPO_PATH,
    build_demo_repository,
    default_splits,
    demo_repository_facts,
    ensure_demo_repository,
    generate_splits,
    servers_config,
    task_key,
)

REPO = Path(__file__).resolve().parents[1]


def test_generation_is_deterministic_and_splits_are_disjoint():
    splits = default_splits()
    assert {name: len(rows) for name, rows in splits.items()} == {"train": 600, "test": 120}
    assert generate_splits(seed=0) == splits
    assert generate_splits(seed=1) != splits
    train = {task_key(row) for row in splits["train"]}
    test = {task_key(row) for row in splits["test"]}
    assert len(train) == 600 and len(test) == 120 and not train & test
    for split, rows in splits.items():
        families = {row["extra_info"]["category"].split("_")[0] for row in rows}
        assert {"time", "current", "git", "python"} <= families, split
        for row in rows:
            validate_row(row)
            assert row["extra_info"]["split"] == split
            truth = row["reward_spec"]["ground_truth"]
            servers = {step["server"] for step in truth["tool_sequence"]}
            assert sorted(servers) == row["extra_info"]["servers"]
            assert truth["limits"]["max_servers"] == len(servers)
            assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    small = generate_splits({"a": 5, "b": 0}, seed=3)
    assert len(small["a"]) == 5 and small["b"] == []
    with pytest.raises(ValueError, match="non-negative"):
        generate_splits({"train": -1})


def test_committed_dataset_matches_its_builder_and_loads(tmp_path):
    check_committed_dataset(tmp_path, "mcp_tasks", default_splits()["test"])


def test_demo_repository_is_reproducible(tmp_path):
    facts = build_demo_repository(tmp_path / "one")
    assert facts == demo_repository_facts()
    assert (
        build_demo_repository(tmp_path / "two")["commits"][-1]["hash"]
        == (facts["commits"][-1]["hash"])
    )
    assert ensure_demo_repository(tmp_path / "one") == tmp_path / "one"  # already there
    with pytest.raises(FileExistsError, match="not empty"):
        build_demo_repository(tmp_path / "one")
    config = servers_config(tmp_path / "one")["mcpServers"]
    assert set(config) == {"time", "git", "python"}
    assert config["git"]["args"][-1] == str(tmp_path / "one")


def test_processes_that_ensure_the_demo_repository_at_once_all_get_the_finished_one(tmp_path):
    """Ranks of one run (or test workers) share /tmp/tool-envs-mcp/demo-repo: none may see it
    half built, and no staging folder is left behind."""
    target = tmp_path / "repo"
    program = (
        "import sys\nfrom tool_envs.mcp.tasks import ensure_demo_repository\n"
        "print(ensure_demo_repository(sys.argv[1]))"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", program, str(target)], stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    outputs = [run.communicate(timeout=120)[0].decode().strip() for run in runs]
    assert [run.returncode for run in runs] == [0] * 4
    assert outputs == [str(target)] * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]
    head = demo_repository_facts()["commits"][-1]["hash"]
    assert (
        subprocess.run(
            ["git", "rev-parse", "main"], cwd=target, capture_output=True, text=True, check=True
        ).stdout.strip()
        == head
    )


# ------------------------------------------------------------------ replay against real servers


def _sample(rows: list[dict[str, Any]], per_category: int) -> list[dict[str, Any]]:
    taken: dict[str, int] = {}
    sample = []
    for row in rows:
        category = row["extra_info"]["category"]
        if taken.get(category, 0) < per_category:
            taken[category] = taken.get(category, 0) + 1
            sample.append(row)
    return sample


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _answer_from(row: dict[str, Any], outputs: list[str]) -> str:
    """The answer a careful agent reads off the real servers' outputs."""
    category = row["extra_info"]["category"]
    truth = row["reward_spec"]["ground_truth"]
    question = row["prompt"][1]["content"]
    last = outputs[-1]
    if category in ("time_conversion", "time_chain"):
        data = json.loads(last)
        clock = data["target"]["datetime"][11:16]
        if "YYYY-MM-DD HH:MM" not in question:
            return clock
        shift = dt.date.fromisoformat(data["target"]["datetime"][:10]) - dt.date.fromisoformat(
            data["source"]["datetime"][:10]
        )
        asked = dt.date.fromisoformat(re.search(r"\d{4}-\d{2}-\d{2}", question).group())
        return f"{asked + shift} {clock}"
    if category == "current_time":
        return json.loads(last)["datetime"][-6:]
    if category.startswith("python_"):
        match = re.fullmatch(r"exit status 0\nstdout:\n(.*)\n", last, re.S)
        assert match, last
        return match.group(1).strip()
    if category == "git_diff":
        return str(last.count("diff --git "))
    if "how many commits" in question:
        author = re.search(r"authored by (.+?)\?", question)
        if author:
            return str(last.count(f"Author: {author.group(1)}\n"))
        return str(last.count("Commit: "))
    # Other git facts appear verbatim in the output: check that, then return the gold.
    gold = truth["answer"]
    pieces = gold.split(", ") if category in ("git_show", "git_branch") else [gold]
    for piece in pieces:
        assert piece in last, (question, piece, last[:500])
    return gold


@contextlib.asynccontextmanager
async def _sessions(config: dict[str, Any]):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, spec in config["mcpServers"].items():
            params = StdioServerParameters(command=spec["command"], args=spec["args"], env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[name] = session
        yield sessions


def _sandbox_available() -> bool:
    from tool_envs.code.sandbox import IsolationLevel, detect_isolation

    return detect_isolation().level > IsolationLevel.NONE


def test_gold_sequences_replayed_on_the_real_servers_give_the_gold_answers(tmp_path):
    pytest.importorskip("mcp_server_time")
    pytest.importorskip("mcp_server_git")
    repo = ensure_demo_repository(tmp_path / "demo")
    config = servers_config(repo)
    if not _sandbox_available():
        del config["mcpServers"]["python"]
    splits = default_splits()
    rows = _sample(splits["test"], 3) + _sample(splits["train"], 2)
    rows = [r for r in rows if set(r["extra_info"]["servers"]) <= set(config["mcpServers"])]
    # Every git fact kind is covered by the sample.
    categories = {row["extra_info"]["category"] for row in rows}
    assert {"time_conversion", "time_chain", "current_time", "git_log", "git_show"} <= categories

    async def replay() -> int:
        checked = 0
        async with _sessions(config) as sessions:
            tools = {
                name: {t.name for t in (await s.list_tools()).tools} for name, s in sessions.items()
            }
            for row in rows:
                outputs = []
                for step in row["reward_spec"]["ground_truth"]["tool_sequence"]:
                    assert step["tool"] in tools[step["server"]], step
                    params = dict(step["params"])
                    if params.get("repo_path") == DEMO_REPO_PATH:
                        params["repo_path"] = str(repo)
                    result = await sessions[step["server"]].call_tool(step["tool"], params)
                    assert not result.is_error, (step, _text(result))
                    outputs.append(_text(result))
                gold = row["reward_spec"]["ground_truth"]["answer"]
                assert _answer_from(row, outputs) == gold, row["prompt"][1]["content"]
                checked += 1
        return checked

    assert anyio.run(replay) == len(rows) >= 30


# ------------------------------------------------------------------ LLM-written tasks

TIME_TOOLS = {
    "time": [
        {
            "name": "convert_time",
            "description": "Convert time between timezones",
            "input_schema": {
                "type": "object",
                "properties": {
                    "source_timezone": {"type": "string"},
                    "time": {"type": "string"},
                    "target_timezone": {"type": "string"},
                },
                "required": ["source_timezone", "time", "target_timezone"],
            },
        },
        {
            "name": "get_current_time",
            "input_schema": {
                "type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"],
            },
        },
    ]
}
_GOOD = KOLKATA_TO_TOKYO
# Replies the local "model" gives, in order: good, unknown tool, unknown param, missing param,
# wrong type, unknown server, not JSON, fenced good.
_REPLIES = [
    json.dumps(_GOOD),
    json.dumps({**_GOOD, "tool_sequence": [{"server": "time", "tool": "sunrise", "params": {}}]}),
    json.dumps(
        {
            **_GOOD,
            "tool_sequence": [
                {
                    "server": "time",
                    "tool": "get_current_time",
                    "params": {"timezone": "UTC", "city": "x"},
                }
            ],
        }
    ),
    json.dumps(
        {**_GOOD, "tool_sequence": [{"server": "time", "tool": "get_current_time", "params": {}}]}
    ),
    json.dumps(
        {
            **_GOOD,
            "tool_sequence": [
                {"server": "time", "tool": "get_current_time", "params": {"timezone": 5}}
            ],
        }
    ),
    json.dumps({**_GOOD, "tool_sequence": [{"server": "weather", "tool": "x", "params": {}}]}),
    "Sorry, I cannot do that.",
    "```json\n" + json.dumps({**_GOOD, "answer": "12:30 JST"}) + "\n```",
]


def test_llm_generator_keeps_valid_tasks_and_rejects_bad_ones_with_reasons(monkeypatch):
    from openai import OpenAI

    from tool_envs.mcp.llm_tasks import generate_llm_tasks

    monkeypatch.setenv("OPENAI_MODEL", "local-writer")
    monkeypatch.setenv("DOMAINS", "travel, meetings")
    with chat_server(_REPLIES) as (url, seen):
        client = OpenAI(base_url=url, api_key="test", max_retries=0)
        result = generate_llm_tasks(TIME_TOOLS, client=client, n_samples=len(_REPLIES))
    assert len(seen) == len(_REPLIES) and seen[0]["model"] == "local-writer"
    assert "convert_time" in seen[0]["messages"][1]["content"]
    assert "travel" in seen[0]["messages"][1]["content"]
    assert "meetings" in seen[1]["messages"][1]["content"]
    assert [row["reward_spec"]["ground_truth"]["answer"] for row in result.rows] == [
        "12:30",
        "12:30 JST",
    ]
    for row in result.rows:
        validate_row(row)
        assert row["extra_info"]["servers"] == ["time"]
    reasons = dict(result.rejected)
    assert sorted(reasons) == [1, 2, 3, 4, 5, 6]
    assert "no tool 'sunrise'" in reasons[1]
    assert "no parameter(s) ['city']" in reasons[2]
    assert "missing required parameter(s) ['timezone']" in reasons[3]
    assert "'timezone' must be string" in reasons[4]
    assert "unknown server 'weather'" in reasons[5]
    assert "not a JSON task" in reasons[6]
    with chat_server([json.dumps({**_GOOD, "tool_sequence": _GOOD["tool_sequence"] * 2})]) as (
        url,
        _,
    ):
        client = OpenAI(base_url=url, api_key="test", max_retries=0)
        result = generate_llm_tasks(TIME_TOOLS, client=client, n_samples=1, max_tools=1)
    assert result.rows == [] and "at most 1" in result.rejected[0][1]
    with pytest.raises(ValueError, match="tools must map"):
        generate_llm_tasks({}, client=object())


# ------------------------------------------------------------------ conversation converter


def _conversation() -> dict[str, Any]:
    return {
        "id": "conv-1",
        "messages": [
            {"role": "user", "content": "When it is 09:00 in Kolkata, what time is it in Tokyo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {
                            "name": "time__convert_time",
                            "arguments": json.dumps(
                                {
                                    "source_timezone": "Asia/Kolkata",
                                    "time": "09:00",
                                    "target_timezone": "Asia/Tokyo",
                                }
                            ),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": '{"target": "12:30"}'},
            {"role": "user", "content": "And the offset of Tokyo?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "function": {
                            "name": "time/get_current_time",
                            "arguments": {"timezone": "Asia/Tokyo"},
                        }
                    }
                ],
            },
            {"role": "tool", "content": "+09:00"},
            {"role": "assistant", "content": "12:30, and Tokyo is at +09:00."},
        ],
    }


def test_conversation_converter_builds_compact_rows_and_names_bad_fields():
    from tool_envs.errors import TaskRowError
    from tool_envs.mcp.convert import conversation_to_row, conversations_to_rows

    row = validate_row(conversation_to_row(_conversation()))
    assert row["prompt"][1]["content"].startswith("When it is 09:00")
    truth = row["reward_spec"]["ground_truth"]
    assert [(s["server"], s["tool"]) for s in truth["tool_sequence"]] == [
        ("time", "convert_time"),
        ("time", "get_current_time"),
    ]
    assert truth["tool_sequence"][0]["params"]["time"] == "09:00"
    assert truth["answer"] == "12:30, and Tokyo is at +09:00."
    assert row["extra_info"]["id"] == "conv-1" and row["extra_info"]["servers"] == ["time"]

    bad = _conversation()
    bad["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{not json"
    with pytest.raises(
        TaskRowError, match=r"row 3.*messages\[1\]\.tool_calls\[0\]\.function\.arguments"
    ):
        conversations_to_rows([_conversation()] * 3 + [bad])
    bad = _conversation()
    bad["messages"] = bad["messages"][:-1]
    with pytest.raises(TaskRowError, match="does not end with an assistant answer"):
        conversation_to_row(bad)
    bad = _conversation()
    del bad["messages"][1]["tool_calls"][0]["function"]["name"]
    with pytest.raises(TaskRowError, match=r"messages\[1\]\.tool_calls\[0\].*function\.name"):
        conversation_to_row(bad)
    with pytest.raises(TaskRowError, match="field 'messages'"):
        conversation_to_row({"messages": []})
    with pytest.raises(TaskRowError, match="makes no tool call"):
        conversation_to_row(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                ]
            }
        )
    with pytest.raises(TaskRowError, match="unknown role 'robot'"):
        conversation_to_row({"messages": [{"role": "robot", "content": "x"}]})

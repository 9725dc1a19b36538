"""The built-in MCP servers, started as real processes and driven by the official SDK client.

Each server is started once per transport (stdio, and streamable HTTP on a free 127.0.0.1 port)
with ``python -m tool_envs.mcp.servers``; one session then checks the tools' listing, results
and error flags. Start-up is mostly imports (~2-5 s), so each test does all its calls in one
session.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tool_envs.errors import EnvConfigError
from tool_envs.mcp.servers import BUILTIN_SERVERS, build_server

REPO = Path(__file__).resolve().parents[1]
# A 1 s run limit keeps the timeout check short.
PYTHON_ARGS = ["python", "--time-limit", "1"]
SEARCH_ARGS = ["search"]


def _sandbox_available() -> bool:
    from tool_envs.code.sandbox import IsolationLevel, detect_isolation

    return detect_isolation().level > IsolationLevel.NONE


needs_sandbox = pytest.mark.skipif(not _sandbox_available(), reason="no sandbox isolation here")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


@contextlib.asynccontextmanager
async def stdio_session(args: list[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tool_envs.mcp.servers", *args], env=_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.contextmanager
def http_server(args: list[str]) -> Any:
    port = _free_port()
    command = [sys.executable, "-m", "tool_envs.mcp.servers", *args]
    command += ["--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(command, env=_env(), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def run_over(transport: str, args: list[str], check: Callable[[ClientSession], Awaitable[None]]):
    """Start the server with ``args`` over ``transport`` and run ``check`` in one session."""
    if transport == "stdio":

        async def main() -> None:
            async with stdio_session(args) as session:
                await check(session)

        anyio.run(main)
        return
    with http_server(args) as url:

        async def main_http() -> None:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await check(session)

        anyio.run(main_http)


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def check_python(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"run_python", "run_tests"}
    assert tools["run_python"].input_schema["required"] == ["code"]
    assert "stdin" in tools["run_python"].input_schema["properties"]

    result = await session.call_tool("run_python", {"code": "print(sum(range(10)))"})
    assert not result.is_error
    assert _text(result) == "exit status 0\nstdout:\n45\n"

    result = await session.call_tool(
        "run_python", {"code": "print(input()[::-1])", "stdin": "hello\n"}
    )
    assert not result.is_error and "stdout:\nolleh\n" in _text(result)

    result = await session.call_tool("run_python", {"code": "print('a')\nraise ValueError('boom')"})
    assert result.is_error
    text = _text(result)
    assert "exit status 1" in text and "stdout:\na\n" in text and "ValueError: boom" in text

    started = time.monotonic()
    result = await session.call_tool("run_python", {"code": "while True:\n    pass"})
    assert result.is_error and "timed out after 1 s" in _text(result)
    assert time.monotonic() - started < 10

    result = await session.call_tool("run_python", {"code": "  "})
    assert result.is_error and "code is empty" in _text(result)
    result = await session.call_tool("run_python", {})  # missing required argument
    assert result.is_error and "code" in _text(result)

    result = await session.call_tool(
        "run_tests", {"code": "def add(a, b):\n    return a + b", "tests": "assert add(2, 3) == 5"}
    )
    assert not result.is_error and "all tests passed" in _text(result)
    result = await session.call_tool(
        "run_tests", {"code": "def add(a, b):\n    return a - b", "tests": "assert add(2, 3) == 5"}
    )
    assert result.is_error and "AssertionError" in _text(result)

    # The session is still usable after errors and a timeout.
    result = await session.call_tool("run_python", {"code": "print('still here')"})
    assert not result.is_error and "still here" in _text(result)


async def check_search(session: ClientSession) -> None:
    from tool_envs.search import default_corpus

    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {"search", "open_page"}
    assert tools["search"].input_schema["required"] == ["query"]

    document = default_corpus()[0]
    url = document.get("url", f"corpus://{document['id']}")
    result = await session.call_tool("search", {"query": document["title"], "max_results": 3})
    assert not result.is_error
    text = _text(result)
    assert text.startswith("[1] ") and text.count("URL: ") == 3
    assert f"URL: {url}" in text

    result = await session.call_tool("open_page", {"url": url})
    assert not result.is_error and _text(result) == document["text"]

    result = await session.call_tool("open_page", {"url": "https://nowhere.invalid/page"})
    assert result.is_error and "no page text" in _text(result)
    result = await session.call_tool("search", {"query": "   "})
    assert result.is_error and "empty" in _text(result)
    result = await session.call_tool("search", {"query": "province", "max_results": 0})
    assert result.is_error and "max_results" in _text(result)
    result = await session.call_tool("search", {"query": "province", "max_results": "many"})
    assert result.is_error


@needs_sandbox
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_python_server(transport):
    run_over(transport, PYTHON_ARGS, check_python)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_search_server(transport):
    run_over(transport, SEARCH_ARGS, check_search)


def test_build_server_rejects_unknown_names_and_options():
    assert set(BUILTIN_SERVERS) == {"python", "search"}
    with pytest.raises(EnvConfigError, match="did you mean 'python'"):
        build_server("pyhton")
    with pytest.raises(EnvConfigError, match="accepts"):
        build_server("search", colour="red")
    with pytest.raises(EnvConfigError, match="unknown search provider"):
        build_server("search", provider="nosuch")


def test_command_line_rejects_bad_input():
    command = [sys.executable, "-m", "tool_envs.mcp.servers"]
    done = subprocess.run([*command, "nosuch"], env=_env(), capture_output=True, text=True)
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = subprocess.run(
        [*command, "search", "--provider", "nosuch"], env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 2 and "unknown search provider" in done.stderr


def test_cli_parser_can_be_added_to_a_parent_command():
    import argparse

    from tool_envs.commands import serve_mcp
    from tool_envs.mcp.servers.cli import _options

    parser = argparse.ArgumentParser(prog="tool-envs")
    serve_mcp.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve-mcp", "python", "--transport", "http", "--time-limit", "2"])
    assert (args.command, args.name, args.transport, args.port) == (
        "serve-mcp",
        "python",
        "http",
        8765,
    )
    assert _options(args) == {"time_limit_s": 2.0}

"""Helpers for the MCP tests and benchmark: a tiny MCP server script, configs, tool-call turns."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from http_helpers import QuietHandler, chat_completion

# A real MCP server built with the SDK's MCPServer. Its tools can misbehave on purpose: `crash`
# kills the process mid-call, `hang` sleeps past any sensible timeout, `freeze` stops the whole
# process; `remember`/`recall` keep state in a file of the working directory.
TINY_SERVER = '''
import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("tiny")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def hang(seconds: float = 30.0) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "done"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def freeze() -> str:
    """Stop the whole server process (SIGSTOP): a wedged server that answers nothing."""
    import signal

    os.kill(os.getpid(), signal.SIGSTOP)
    return "unreachable"


@server.tool()
def remember(text: str) -> str:
    """Append a line to memory.txt in the working directory (state kept in a file)."""
    with open("memory.txt", "a", encoding="utf-8") as handle:
        handle.write(text + "\\n")
    return "ok"


@server.tool()
def recall() -> str:
    """Everything remembered so far (empty when nothing was)."""
    try:
        with open("memory.txt", encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
'''


def write_tiny_server(folder: Path) -> Path:
    path = folder / "tiny_server.py"
    path.write_text(TINY_SERVER, encoding="utf-8")
    return path


def stdio(*args: str, **extra: Any) -> dict[str, Any]:
    """A stdio server entry running this interpreter (so the venv's packages are found)."""
    return {"command": sys.executable, "args": list(args), **extra}


def make_git_repo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    (folder / "README.md").write_text("hello\n", encoding="utf-8")
    subprocess.run([*git, "-C", str(folder), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-qm", "first commit"], check=True)
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server(script: Path, port: int, timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Run the tiny server over streamable HTTP and wait until its port accepts connections."""
    process = subprocess.Popen(
        [sys.executable, str(script), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP MCP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the HTTP MCP server did not open its port")


def call(name: str, **arguments: Any) -> str:
    """An assistant turn with one tool call in the Hermes format the default parser reads."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def row(
    ground_truth: dict[str, Any], question: str = "Do the task.", **extra_info: Any
) -> dict[str, Any]:
    return {
        "prompt": [
            {"role": "system", "content": "You can use MCP tools."},
            {"role": "user", "content": question},
        ],
        "env_id": "tool_envs/MCP-v0",
        "reward_spec": {"ground_truth": ground_truth},
        "extra_info": {"id": "t", **extra_info},
    }


# A program that speaks no MCP at all: it records its pid, then reads stdin and never answers,
# like a server stuck before `initialize`.
SILENT_SERVER = """
import os, sys, time
with open(sys.argv[1], "w") as handle:
    handle.write(str(os.getpid()))
while True:
    time.sleep(1)
"""


def write_silent_server(folder: Path) -> Path:
    path = folder / "silent_server.py"
    path.write_text(SILENT_SERVER, encoding="utf-8")
    return path


# A server that wedges on purpose (issue 30): `wedge` blocks the server's event loop, so it
# answers nothing after it (not even a ping) and never notices its stdin closing. At start it
# starts a child of its own, in its process group, as servers started through npx or uvx do.
# Every wait is bounded (10 minutes), so nothing outlives a failed test for long.
WEDGED_SERVER = '''
import os
import subprocess
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("wedged")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


@server.tool()
def pids() -> str:
    """The server's process id and its child's."""
    return f"{os.getpid()} {child.pid}"


@server.tool()
async def wedge(marker: str = "") -> str:
    """Block the whole server (a blocking call in async code): it answers nothing after this."""
    if marker:
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write("wedged")
    time.sleep(600)
    return "unreachable"


if __name__ == "__main__":
    server.run()
'''


def write_wedged_server(folder: Path) -> Path:
    path = folder / "wedged_server.py"
    path.write_text(WEDGED_SERVER, encoding="utf-8")
    return path


@contextmanager
def chat_server(replies: list[str]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local OpenAI-compatible ``/v1/chat/completions`` endpoint that answers in turn."""
    seen: list[dict[str, Any]] = []

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            seen.append(body)
            content = replies[(len(seen) - 1) % len(replies)]
            message = {"role": "assistant", "content": content}
            payload = json.dumps(chat_completion(body["model"], message, number=len(seen)))
            payload = payload.encode()
            self.send_response(200 if self.path == "/v1/chat/completions" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


# A task an LLM might write over mcp-server-time's tools, valid as written.
KOLKATA_TO_TOKYO = {
    "question": "What time is it in Tokyo when it is 09:00 in Kolkata?",
    "answer": "12:30",
    "tool_sequence": [
        {
            "server": "time",
            "tool": "convert_time",
            "params": {
                "source_timezone": "Asia/Kolkata",
                "time": "09:00",
                "target_timezone": "Asia/Tokyo",
            },
        }
    ],
}

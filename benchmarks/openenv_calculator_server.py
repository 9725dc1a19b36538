"""Calculator-v0 served by OpenEnv 0.10's own reference server: the comparison arm of
``env_scale.py``. Runs in the OpenEnv venv (``openenv`` pulls mcp<2, so tool_envs is not
importable there): the tasks, prompt and tool schemas come from a JSON file ``env_scale.py``
writes from the real env, and this OpenEnv ``Environment`` plays them as Calculator-v0 does
(``<tool_call>`` blocks run the four tools; any other text is the answer, scored against the
task's), with observations carrying the same fields, so its replies are the same size.

Usage: python openenv_calculator_server.py SPEC.json PORT  (prints "serving calculator on URL"
once listening)
"""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

# The observation in tool_envs' fields, as the interop tests' OpenEnv server has it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "openenv_interop"))
from tiny_openenv_server import ChatAction, ChatObservation

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
OPERATIONS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(round(value, 6))


def make_env_class(tasks: list[dict[str, Any]], tools: list[dict[str, Any]]) -> type:
    class CalculatorEnvironment(Environment):
        """Calculator-v0's episodes: reset picks a task by seed, a step runs tool calls or
        scores the answer."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(episode_id=None, step_count=0)
            self._task: dict[str, Any] = tasks[0]
            self._stats = {"tool_calls": 0, "tool_errors": 0, "parse_errors": 0}

        def reset(self, seed=None, episode_id=None, **kwargs) -> ChatObservation:
            index = (seed or 0) % len(tasks)
            self._task = tasks[index]
            self._state = State(episode_id=episode_id or f"e{index}", step_count=0)
            self._stats = {"tool_calls": 0, "tool_errors": 0, "parse_errors": 0}
            info = {"turn": 0, "task_id": self._task["extra_info"]["id"], "task_index": index}
            return ChatObservation(messages=self._task["prompt"], tools=tools, info=info)

        def step(self, action: ChatAction, timeout_s=None, **kwargs) -> ChatObservation:
            self._state.step_count += 1
            text = action.text or ""
            turn = self._state.step_count
            calls, replies, errors = [], [], []
            for number, raw in enumerate(TOOL_CALL.findall(text)):
                call_id = f"call_{turn}_{number}"
                try:
                    call = json.loads(raw)
                    result = OPERATIONS[call["name"]](**call["arguments"])
                    content = number_text(result)
                except Exception as exc:
                    call, content = {"name": "?", "arguments": {}}, f"Error: {exc}"
                    errors.append(content)
                calls.append({"id": call_id, **call})
                replies.append(
                    {
                        "role": "tool",
                        "content": content,
                        "tool_call_id": call_id,
                        "name": call["name"],
                    }
                )
            self._stats["tool_calls"] += len(calls)
            self._stats["tool_errors"] += len(errors)
            info: dict[str, Any] = {
                "turn": turn,
                "tool_calls": calls,
                "parse_error": None,
                "tool_errors": errors,
                "stats": {**self._stats, "empty_responses": 0},
                "reward_info": None,
            }
            if not calls:  # the answer: scored as Calculator-v0 scores it
                info["reward_info"] = self._score(text)
            reward = info["reward_info"]["reward"] if info["reward_info"] else 0.0
            return ChatObservation(
                messages=replies,
                assistant_message={"role": "assistant", "content": text},
                terminated=not calls,
                done=not calls,
                info=info,
                reward=reward,
            )

        def _score(self, text: str) -> dict[str, Any]:
            expected = float(self._task["reward_spec"]["answer"])
            given = [float(n) for n in NUMBER.findall(text)]
            right = bool(given) and abs(given[-1] - expected) < 1e-6
            return {
                "reward": float(right),
                "reason": "right answer" if right else "wrong answer",
                "expected": expected,
                "given": given[-1] if given else None,
                "successful_tool_calls": self._stats["tool_calls"] - self._stats["tool_errors"],
                "outcome": "success" if right else "failure",
            }

        @property
        def state(self) -> State:
            return self._state

    return CalculatorEnvironment


def main() -> None:
    with open(sys.argv[1]) as file:
        spec = json.load(file)
    port = int(sys.argv[2])
    environment = make_env_class(spec["tasks"], spec["tools"])
    app = create_app(
        environment,
        ChatAction,
        ChatObservation,
        env_name="calculator",
        max_concurrent_envs=20000,
    )
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)  # as tool-envs serve's listening socket
    print(f"serving calculator on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()

"""Run in the OpenEnv venv (openenv==0.10.0, no tool_envs): a tiny env served by OpenEnv's own
server classes (``create_fastapi_app``), with observations in tool_envs' fields, so tool_envs'
RemoteEnv can play it.

The env: reset gives a system and a user message and one tool; a step whose text contains
"done" ends the episode with reward 1.0, any other step gets the user's echo.

Usage: python tiny_openenv_server.py PORT MAX_SESSIONS  (prints "serving URL" when listening)
"""

import socket
import sys
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class ChatAction(Action):
    text: str | None = None
    message: dict[str, Any] | None = None


class ChatObservation(Observation):
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    assistant_message: dict[str, Any] | None = None
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = Field(default_factory=dict)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo the text.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]


class EchoEnv(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs) -> ChatObservation:
        self._state = State(episode_id=episode_id or "e", step_count=0)
        messages = [
            {"role": "system", "content": "Say done when you are done."},
            {"role": "user", "content": f"Episode with seed {seed}."},
        ]
        return ChatObservation(messages=messages, tools=TOOLS, info={"turn": 0})

    def step(self, action: ChatAction, timeout_s=None, **kwargs) -> ChatObservation:
        self._state.step_count += 1
        text = action.text or ""
        assistant = {"role": "assistant", "content": text}
        info = {
            "turn": self._state.step_count,
            "tool_calls": [],
            "parse_error": None,
            "tool_errors": [],
            "stats": {},
            "reward_info": None,
        }
        if "done" in text:
            info["reward_info"] = {"reward": 1.0, "reason": "said done", "outcome": "success"}
            return ChatObservation(
                messages=[],
                assistant_message=assistant,
                terminated=True,
                info=info,
                done=True,
                reward=1.0,
            )
        reply = [{"role": "user", "content": f"You said: {text}"}]
        return ChatObservation(messages=reply, assistant_message=assistant, info=info, reward=0.0)

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_fastapi_app(
        EchoEnv, ChatAction, ChatObservation, max_concurrent_envs=max_sessions, env_name="echo"
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    print(f"serving http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()

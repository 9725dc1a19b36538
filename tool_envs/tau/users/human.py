"""A person at the terminal plays the user: for trying a domain or its policy by hand."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from tool_envs.core.parsers.base import ToolCall
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.base import DeviceTools, ScenarioUser


class HumanUser(ScenarioUser):
    """Shows the scenario and each agent message, and reads the reply from ``stdin``.

    Type ``###STOP###`` (or end the input) to end the conversation.
    """

    strategy = "human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        super().__init__()

    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        super().start(scenario, opening, device)
        if device is not None:
            print(
                "Your device's tools (type  !name {json arguments}  to use one): "
                + ", ".join(device.names),
                file=self.stdout,
            )
        print(f"--- You are the user ---\n{scenario.instruction()}", file=self.stdout)
        print(f"you (opening): {opening}", file=self.stdout)

    def reply(self, agent_message: str) -> str:
        print(f"agent: {agent_message}", file=self.stdout)
        while True:
            print("you: ", end="", file=self.stdout, flush=True)
            line = self.stdin.readline()
            if not line:
                return "###STOP###"
            line = line.rstrip("\n")
            if not (line.startswith("!") and self.device is not None):
                return line
            name, _, raw = line[1:].partition(" ")
            try:
                arguments = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                print(f"(not JSON: {exc})", file=self.stdout)
                continue
            outcome = self.device.call(
                ToolCall(name, arguments if isinstance(arguments, dict) else {})
            )
            print(f"device: {outcome.content}", file=self.stdout)

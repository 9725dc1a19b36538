"""Does the user-fault check catch a spoiling LLM user, and leave a fair one alone?

    python benchmarks/user_faults.py [--tasks 120] [--strategies llm verify reflection]

A fake user model speaks the OpenAI chat-completions protocol on 127.0.0.1 (the remote end of a
paid API is the one part that cannot run here); ``LLMUser`` talks to it as to any endpoint. It
plays the customer of each TauRetail test task fairly, answering what the agent asks from the
scenario in its system prompt, except in a known share of episodes, where at the first chance
it spoils the episode in one of the four ways :mod:`tool_envs.tau.users.faults` checks:

- ``premature_stop``: it leaves (``###STOP###``) at the agent's first request for its details;
- ``invented_value``: it answers that request with an email and zip code of its own making;
- ``leaked_instructions``: it pastes its instructions at the agent's first message;
- ``contradiction``: it answers the agent's confirmation against its scenario.

The agent replays each task's gold turns (it asks for what the user knows, confirms, acts and
reports, as the policy says), so every fault is the user's. Each strategy is played twice, with
the check on (the env's default) and off (how every episode was scored before), and the table
gives per kind: spoiled episodes, those the check voided with that kind (recall), and how the
spoiled episodes were scored without the check; and for the fair episodes how many were voided
(the goal: none) and solved.

``verify`` and ``reflection`` send each reply to a second call that judges it; the fake judge
answers as a surface-level LLM judge can: "No" when the reply copies eight words of the
instructions in a row or states an id or email that neither the instructions nor the transcript
holds, else "Yes". ``verify`` then asks for the reply again (the fake spoils again: a
persistent fault), ``reflection`` asks for a corrected one (the fake gives the fair reply). The
``not spoiled`` column counts the planned spoils that never reached the agent: those the
strategy's own check caught and fixed (the fake spoils at every chance it gets); ``spoiled``
those that did.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium as gym

import tool_envs
from tool_envs.tau.task import UserScenario, parse_scenario
from tool_envs.tau.users.base import STOP
from tool_envs.tau.users.faults import FAULT_KINDS, id_values, normal_value
from tool_envs.tau.users.llm import GREETING
from tool_envs.tau.users.scripted import ScriptedUser

gym.register_envs(tool_envs)

ENV_ID = "tool_envs/TauRetail-v0"
STRATEGIES = ("llm", "verify", "reflection")
_INSTRUCTIONS = "Your instructions:\n"


class SpoilingCustomer(ThreadingHTTPServer):
    """The fake user model: ``plan`` maps a scenario's instruction text to its scenario and the
    way to spoil it (None: fair); ``spoiled`` records the episodes it did spoil."""

    daemon_threads = True

    def __init__(self, keywords: dict[str, tuple[str, ...]]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.keywords = keywords
        self.plan: dict[str, tuple[UserScenario, str | None]] = {}
        self.spoiled: set[str] = set()
        self.spoiled_turn: dict[str, int] = {}  # the agent turn each episode was spoiled at
        self.spoil_text: dict[str, str] = {}
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: SpoilingCustomer

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        content = self._answer(body["messages"])
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self, messages: list[dict[str, Any]]) -> str:
        last = messages[-1]["content"]
        if "Answer with one word: Yes or No." in last:
            return _judge(last)
        if "Reflect briefly" in last:  # a corrected reply: the fair one
            fair = self._fair(messages[:-1])
            return f"Reflection:\nI broke my instructions.\nUser Response:\n{fair}"
        return self._reply(messages)

    def _episode(self, messages: list[dict[str, Any]]) -> tuple[str, UserScenario, str | None]:
        instruction = messages[0]["content"].split(_INSTRUCTIONS, 1)[1]
        scenario, kind = self.server.plan[instruction]
        return instruction, scenario, kind

    def _user(self, messages: list[dict[str, Any]]) -> tuple[ScriptedUser, str]:
        """A scripted user brought to this point of the conversation; the agent's last message."""
        _, scenario, _ = self._episode(messages)
        user = ScriptedUser(self.server.keywords)
        opening = messages[2]["content"] if messages[1]["content"] == GREETING else ""
        user.start(scenario, opening)
        agent = [m["content"] for m in messages[3:] if m["role"] == "user"]
        for message in agent[:-1]:
            user.reply(message)
        return user, agent[-1]

    def _fair(self, messages: list[dict[str, Any]]) -> str:
        user, last = self._user(messages)
        reply = user.reply(last)
        if STOP in reply:
            return f"Thanks, that's everything. {STOP}"
        if reply.startswith("Yes"):
            return "Yes, go ahead please."
        if reply.startswith("No,"):
            return "No, please don't."
        return "Sure. " + reply if reply.startswith("My ") else reply

    def _reply(self, messages: list[dict[str, Any]]) -> str:
        key, scenario, kind = self._episode(messages)
        fair = self._fair(messages)
        if kind is None:
            return fair
        with self.server.lock:
            done = key in self.server.spoiled and not _same_turn(messages, self.server, key)
        if done:
            return fair
        user, last = self._user(messages)
        reading = user.read(last)
        known = [field for field in reading.asked if field in scenario.known_info]
        agent_turns = sum(m["role"] == "user" for m in messages[3:])
        spoil = _spoil(kind, key, scenario, reading, known, agent_turns)
        if spoil is None:
            return fair
        with self.server.lock:
            self.server.spoiled.add(key)
            self.server.spoiled_turn[key] = agent_turns
            self.server.spoil_text[key] = spoil
        return spoil


def _spoil(kind, key, scenario, reading, known, agent_turns) -> str | None:
    """The spoiled reply at this turn, or None where this kind has no chance here. Each kind
    has several forms, one per episode (picked by the scenario), as models fail in several."""
    variant = zlib.crc32(key.encode())
    number = variant % 1000
    if kind == "leaked_instructions" and agent_turns == 1:
        rules = scenario.task_instructions or scenario.reason_for_call
        return [
            f"Sure. To be clear, here is what I was told: {key}",
            f"My instructions say: {rules}",
            f"OK. ({scenario.persona} {rules})",
        ][variant % 3]
    if kind == "premature_stop" and variant % 4 == 3:  # confirms, and leaves before the change
        if reading.confirmation and scenario.confirm and not known:
            return f"Yes, go ahead. {STOP}"
        return None
    if kind == "premature_stop" and known:
        return [f"Actually, never mind. {STOP}", f"{STOP}", f"I have to go, sorry. {STOP}"][
            variant % 4
        ]
    if kind == "invented_value" and reading.asked:
        return [
            f"Sure. My email is pat.quinn{number}@example.org and my zip is 08{number:03d}.",
            f"It's 08{number:03d}, that's my zip code.",
            f"My order number is #W9{number:03d}417.",
            f"You can reach me at 555-01{number:03d}-22.",
        ][variant % 4]
    if kind == "contradiction" and reading.confirmation and not known:
        return "No, please don't." if scenario.confirm else "Yes, go ahead please."
    return None


def _same_turn(messages: list[dict[str, Any]], server: SpoilingCustomer, key: str) -> bool:
    """A retry of the turn it spoiled (verify asks again): a persistent spoiler spoils again."""
    return server.spoiled_turn.get(key) == sum(m["role"] == "user" for m in messages[3:])


_WORD = re.compile(r"[a-z0-9#@'_.-]*[a-z0-9]")


def _judge(prompt: str) -> str:
    """A surface-level judge: copied instructions or unknown ids fail, all else passes."""
    instruction = prompt.split("Instructions:\n", 1)[1].split("\n\nConversation so far", 1)[0]
    transcript = prompt.split("Conversation so far (agent and user):\n", 1)[1]
    transcript = transcript.split("\n\nProposed user reply:", 1)[0]
    reply = prompt.split("Proposed user reply:\n", 1)[1].split("\n\nDoes the reply", 1)[0]
    words = _WORD.findall(reply.lower())
    text = _WORD.findall(instruction.lower())
    runs = {tuple(text[i : i + 8]) for i in range(len(text) - 7)}
    if any(tuple(words[i : i + 8]) in runs for i in range(len(words) - 7)):
        return "No"
    known = (instruction + " " + transcript).lower()
    if any(normal_value(v) not in known for v in id_values(reply)):
        return "No"
    return "Yes"


@contextmanager
def spoiling_customer(keywords: dict[str, tuple[str, ...]]) -> Iterator[SpoilingCustomer]:
    server = SpoilingCustomer(keywords)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def plan(tasks: list[dict[str, Any]], writes: set[str], share: float) -> list[str | None]:
    """The spoil of each task: ``share`` of them, the kinds in turn (a contradiction only
    where the gold changes something, so there is a confirmation to answer)."""
    kinds: list[str | None] = []
    every = max(1, round(1 / share)) if share > 0 else 0
    turn = 0
    for number, task in enumerate(tasks):
        if not every or number % every:
            kinds.append(None)
            continue
        kind = FAULT_KINDS[turn % len(FAULT_KINDS)]
        if kind == "contradiction" and not any(
            a["name"] in writes for a in task["reward_spec"]["actions"]
        ):
            kind = FAULT_KINDS[(turn + 1) % len(FAULT_KINDS)]
            turn += 1
        turn += 1
        kinds.append(kind)
    return kinds


def play(server, tasks, kinds, strategy: str, check_user: bool) -> list[dict[str, Any]]:
    """Each task once with the gold agent; one result per episode."""
    env = gym.make(
        ENV_ID,
        user="llm",
        user_kwargs={"base_url": server.base_url, "api_key": "local", "strategy": strategy},
        check_user=check_user,
    ).unwrapped
    results = []
    server.spoiled.clear()
    server.spoiled_turn.clear()
    server.spoil_text.clear()
    for task, kind in zip(tasks, kinds, strict=True):
        scenario = parse_scenario(task["extra_info"])
        server.plan[scenario.instruction()] = (scenario, kind)
        env.reset(options={"task": task})
        info: dict[str, Any] = {}
        for turn in env.gold_turns(task):
            _, _, terminated, truncated, info = env.step(turn)
            if terminated or truncated:
                break
        reward_info = info.get("reward_info") or {}
        spoil = server.spoil_text.get(scenario.instruction())
        said = [m["content"] for m in env.messages if m["role"] == "user"]
        results.append(
            {
                "kind": kind,
                "spoiled": spoil is not None and spoil in said,  # it reached the agent
                "outcome": reward_info.get("outcome"),
                "fault": (reward_info.get("user_fault") or {}).get("kind"),
                "calls": reward_info.get("user_usage", {}).get("calls", 0),
            }
        )
    env.close()
    return results


def table(strategy: str, checked: list[dict], unchecked: list[dict]) -> list[str]:
    rows = []
    for kind in FAULT_KINDS:
        spoiled = [r for r in checked if r["kind"] == kind and r["spoiled"]]
        planned = [r for r in checked if r["kind"] == kind]
        caught = [r for r in planned if not r["spoiled"]]
        detected = [r for r in spoiled if r["fault"] == kind]
        before = Counter(r["outcome"] for r in unchecked if r["kind"] == kind and r["spoiled"])
        recall = f"{len(detected) / len(spoiled):.2f}" if spoiled else "-"
        rows.append(
            f"| {strategy} | {kind} | {len(planned)} | {len(caught)} | {len(spoiled)} | "
            f"{len(detected)} | **{recall}** | {before.get('failure', 0)} failure, "
            f"{before.get('success', 0)} success |"
        )
    fair = [r for r in checked if r["kind"] is None]
    voided = sum(r["outcome"] == "void" for r in fair)
    solved = sum(r["outcome"] == "success" for r in fair)
    rows.append(
        f"| {strategy} | fair | {len(fair)} | - | - | **{voided} voided** | - | "
        f"{solved} of {len(fair)} solved |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=120, help="TauRetail test tasks played")
    parser.add_argument("--share", type=float, default=0.5, help="share of episodes spoiled")
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    args = parser.parse_args(argv)
    probe = gym.make(ENV_ID).unwrapped
    tasks = list(probe.task_splits()["test"])[: args.tasks]
    writes = {name for name in probe._tools.names if probe._tools[name].writes}
    keywords = dict(probe.domain.user_keywords)
    probe.close()
    kinds = plan(tasks, writes, args.share)
    lines = [
        "| strategy | kind | planned | not spoiled | spoiled | voided as that kind | "
        "recall | scored without the check |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    started = time.perf_counter()
    with spoiling_customer(keywords) as server:
        for strategy in args.strategies:
            checked = play(server, tasks, kinds, strategy, check_user=True)
            unchecked = play(server, tasks, kinds, strategy, check_user=False)
            lines += table(strategy, checked, unchecked)
    print("\n".join(lines))
    print(f"\n{len(tasks)} tasks, {sum(k is not None for k in kinds)} planned spoils; "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

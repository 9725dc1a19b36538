"""An OpenAI-compatible chat server on 127.0.0.1 whose "model" solves Calculator tasks on a plan.

It speaks the real wire protocol of ``POST /v1/chat/completions`` (so the real ``openai`` client
talks to it), and answers natively (``tool_calls``) when the request has ``tools``, else in text
with Hermes ``<tool_call>`` blocks. Each task has a plan per trial, picked by how many episodes of
that task the server has already started, so per-task success counts are fixed whatever order
concurrent requests arrive in:

- "right": the gold calls one per turn, then the correct answer;
- "wrong": a bad first turn (native: an unknown tool, an env error; text: malformed JSON, a parse
  error), then the first gold call, then a wrong answer (3 requests).

The plan is written into the first assistant turn's content, so later turns of the same
conversation read it back from the history. With ``chatter`` set, a conversation that is not a
Calculator task (a customer-service env) gets that text as every reply.
"""

from __future__ import annotations

import _thread
import json
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from http_helpers import QuietHandler, chat_completion, send_json, serving

Plan = Callable[[int, int], bool]  # (task position, episode number of that task) -> right?

PROMPT_TOKENS_PER_MESSAGE = 10
COMPLETION_TOKENS = 5


def default_plan(position: int, episode: int) -> bool:
    """Task 0 always right, 1 always wrong, 2 right on even episodes, 3 only on episode 1."""
    if position == 0:
        return True
    if position == 1:
        return False
    if position == 2:
        return episode % 2 == 0
    return episode == 1


class CalculatorChatServer(ThreadingHTTPServer):
    """The server; ``url`` is the base URL to give the client (ends with ``/v1``)."""

    daemon_threads = True

    def __init__(self, tasks: list[dict[str, Any]], plan: Plan = default_plan):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tasks = {row["prompt"][-1]["content"]: (i, row) for i, row in enumerate(tasks)}
        self.plan = plan
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.episodes: dict[str, int] = {}
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.fail_after: int | None = None  # answer HTTP 500 to every request after this many
        self.interrupt_after: int | None = None  # Ctrl-C the main thread after this many
        self.hang_after: int | None = None  # never answer requests after this many
        self.chatter: str | None = None  # the reply to conversations that are not tasks
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client killed mid-request is part of the tests, not an error to print


class _Handler(QuietHandler):
    server: CalculatorChatServer

    def _send(self, status: int, body: dict[str, Any]) -> None:
        send_json(self, status, body)

    def do_POST(self) -> None:
        body = self.read_json()
        server = self.server
        with server.lock:
            server.requests.append(body)
            count = len(server.requests)
        if server.hang_after is not None and count > server.hang_after:
            server.release.wait(30)
            return
        if server.fail_after is not None and count > server.fail_after:
            self._send(500, {"error": {"message": "injected failure", "type": "server_error"}})
            return
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        status, answer = self.answer(body)
        self._send(status, answer)
        if server.interrupt_after is not None and count == server.interrupt_after:
            _thread.interrupt_main()  # what Ctrl-C does to the process running the eval

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        server = self.server
        messages = body["messages"]
        native = bool(body.get("tools"))
        if not native:
            system = messages[0]["content"] if messages[0]["role"] == "system" else ""
            if "<tools>" not in system or '"name": "add"' not in system:
                return 400, {"error": {"message": "text mode: no tool descriptions in system"}}
            if any(m["role"] == "tool" or m.get("tool_calls") for m in messages):
                return 400, {"error": {"message": "text mode history must be plain text"}}
        question = next(m["content"] for m in messages if m["role"] == "user")
        if question not in server.tasks and server.chatter is not None:
            return 200, _completion(body, {"role": "assistant", "content": server.chatter}, 0)
        if question not in server.tasks:
            return 400, {"error": {"message": f"unknown task: {question!r}"}}
        position, row = server.tasks[question]
        assistants = [m for m in messages if m["role"] == "assistant"]
        if assistants:
            right = "[plan:right]" in (assistants[0].get("content") or "")
        else:
            with server.lock:
                episode = server.episodes.get(question, 0)
                server.episodes[question] = episode + 1
            right = server.plan(position, episode)
        step = len(assistants)
        gold = row["reward_spec"]["gold_calls"]
        answer = row["reward_spec"]["answer"]
        marker = "[plan:right]" if right else "[plan:wrong]"
        call: dict[str, Any] | None = None
        text_call: str | None = None
        if right and step < len(gold):
            call = gold[step]
        elif not right and step == 0:
            call = {"name": "power", "arguments": {"a": 2, "b": 3}}
            text_call = '<tool_call>\n{"name": "add", "arguments": {"a": 1,, "b": 2}}\n</tool_call>'
        elif not right and step == 1:
            call = gold[0]
        final = f"{marker} The answer is {answer if right else answer + 1}."
        if call is None:
            message: dict[str, Any] = {"role": "assistant", "content": final}
            reason = "stop"
        elif native:
            message = {
                "role": "assistant",
                "content": marker,
                "tool_calls": [
                    {
                        "id": f"call_{step}",
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": json.dumps(call["arguments"]),
                        },
                    }
                ],
            }
            reason = "tool_calls"
        else:
            block = text_call or f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
            message = {"role": "assistant", "content": f"{marker}\n{block}"}
            reason = "stop"
        prompt_tokens = PROMPT_TOKENS_PER_MESSAGE * len(messages)
        with server.lock:
            server.prompt_tokens += prompt_tokens
            server.completion_tokens += COMPLETION_TOKENS
        return 200, _completion(body, message, len(server.requests), reason)


def _completion(
    body: dict[str, Any], message: dict[str, Any], number: int, reason: str = "stop"
) -> dict[str, Any]:
    """A chat-completion body with usage counted as the tests expect it."""
    prompt_tokens = PROMPT_TOKENS_PER_MESSAGE * len(body["messages"])
    tokens = {"prompt_tokens": prompt_tokens, "completion_tokens": COMPLETION_TOKENS}
    return chat_completion(body["model"], message, number=number, reason=reason, **tokens)


def serve(tasks: list[dict[str, Any]], plan: Plan = default_plan) -> Iterator[CalculatorChatServer]:
    """Run the server in a thread for the duration of a ``with``/fixture."""
    server = CalculatorChatServer(tasks, plan)
    with serving(server):
        yield server


def requests_of_plan(right: bool, gold_calls: int) -> int:
    """API requests one episode takes under a plan."""
    return gold_calls + 1 if right else 3

"""A user played by an LLM behind any OpenAI-compatible endpoint, with tau-bench's strategies.

The model plays the customer: in its own chat the agent's messages are ``user`` turns and its
replies are ``assistant`` turns. Strategies:

- ``llm``: reply directly;
- ``react``: think first ("Thought: ... User Response: ..."); only the response is sent on;
- ``verify``: a second call checks that the reply follows the instruction; up to
  ``max_attempts`` tries;
- ``reflection``: like ``verify``, but a failed check asks the model to reflect and rewrite.

In a dual-control domain the model also gets the user's device tools (function calling) and may
use them before it answers, for at most ``max_device_rounds`` rounds per reply; then it is asked
once more with ``tool_choice="none"`` and must answer in words. What the device showed stays in
its history.

Nothing is called at construction (the API key is checked there; the client is made on first
use). Retries with backoff and timeouts are the ``openai`` client's own (``max_retries``,
``timeout``), and ``max_tokens`` caps each reply. When a call still fails (unreachable, frozen,
HTTP error, a wrong model name, a body that is not a chat completion) or the model answers the
agent with an empty message, ``reply`` raises :class:`~tool_envs.errors.InfrastructureError` with
cause ``"user_simulator"`` and leaves the user's history as it was before the call: the env then
voids the episode (not the agent's failure). Usage and cost are summed over every call of an
episode, verification calls included, and envs report them on every step.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tool_envs.core.helper_models import (
    DEFAULT_MAX_TOKENS,
    ClientOnFirstUse,
    HelperReply,
    chat,
    require_api_key,
)
from tool_envs.core.parsers.base import ToolCall
from tool_envs.errors import EnvConfigError, InfrastructureError
from tool_envs.tau.task import UserScenario
from tool_envs.tau.users.base import STOP, DeviceTools, ScenarioUser

STRATEGIES = ("llm", "react", "verify", "reflection")
DEFAULT_MODEL = "gpt-4o"
MAX_DEVICE_ROUNDS = 6  # device-tool rounds per reply before the model must answer in words
WHO = "LLM user simulator"
GREETING = "Hi! How can I help you today?"

# USD per million (input, output) tokens, public list prices; others cost 0 unless given.
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
}

RULES = f"""You are a customer talking to a customer-service agent. Play the user described below.
Rules:
- Write one short message at a time, in the first person, as a real customer would.
- Give only the information needed for the current step; do not reveal everything at once.
- Never invent information that is not in your instructions: if the agent asks for something
  you do not know, say that you do not know it.
- Do not repeat these rules or the instructions word for word.
- When your goal is reached, or the conversation cannot go further, reply with {STOP} alone.

Your instructions:
"""

REACT_FORMAT = (
    "\nBefore each reply, think about what to say. Answer in exactly this format:\n"
    "Thought:\n<your reasoning>\nUser Response:\n<the message to send to the agent>"
)

VERIFY_PROMPT = """You check a simulated customer's reply against its instructions.
Instructions:
{instruction}

Conversation so far (agent and user):
{transcript}

Proposed user reply:
{reply}

Does the reply follow the instructions (no invented facts, one step at a time, stays in role)?
Answer with one word: Yes or No."""

REFLECT_PROMPT = """The reply below broke the customer's instructions.
Instructions:
{instruction}

Reply:
{reply}

Reflect briefly on what went wrong, then write a corrected reply. Answer in exactly this format:
Reflection:
<reflection>
User Response:
<the corrected message>"""

_RESPONSE = re.compile(r"User Response:\s*(.*)", re.DOTALL | re.IGNORECASE)


def _setting(value: Any, variable: str, default: Any = None) -> Any:
    return value if value is not None else os.environ.get(variable, default)


class LLMUser(ScenarioUser, ClientOnFirstUse):
    """A simulated user behind an OpenAI-compatible chat endpoint.

    Args:
        model: Model name (default ``$TOOL_ENVS_USER_MODEL`` or ``gpt-4o``).
        base_url: Endpoint (default ``$TOOL_ENVS_USER_BASE_URL``, then ``$OPENAI_BASE_URL``,
            then OpenAI's).
        api_key: Key (default ``$TOOL_ENVS_USER_API_KEY``, then ``$OPENAI_API_KEY``).
        temperature: Sampling temperature (default ``$TOOL_ENVS_USER_TEMPERATURE`` or 0.0).
        strategy: One of :data:`STRATEGIES`.
        max_retries: Retries per call, with the client's exponential backoff.
        timeout: Seconds per request.
        max_attempts: Tries of ``verify`` / ``reflection`` before keeping the last reply.
        price_per_million: (input, output) USD per million tokens for cost; default from
            :data:`PRICES_PER_MILLION` (0 for unknown models).
        max_tokens: Reply-length limit per call (default ``$TOOL_ENVS_USER_MAX_TOKENS`` or
            1024), so a rambling model cannot hold a step for minutes.
        max_device_rounds: Device-tool rounds per reply before the model must answer in words.

    Raises:
        EnvConfigError: at construction, for an unknown strategy or no API key (give
            ``api_key`` or set ``TOOL_ENVS_USER_API_KEY`` / ``OPENAI_API_KEY``), as the judge does.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        strategy: str = "llm",
        max_retries: int = 3,
        timeout: float = 60.0,
        max_attempts: int = 3,
        price_per_million: tuple[float, float] | None = None,
        max_tokens: int | None = None,
        max_device_rounds: int = MAX_DEVICE_ROUNDS,
    ):
        if strategy not in STRATEGIES:
            raise EnvConfigError(f"strategy={strategy!r} is not one of {STRATEGIES}")
        self.model = _setting(model, "TOOL_ENVS_USER_MODEL", DEFAULT_MODEL)
        self.base_url = (
            base_url
            or os.environ.get("TOOL_ENVS_USER_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
        )
        self.api_key = require_api_key(
            api_key or os.environ.get("TOOL_ENVS_USER_API_KEY") or os.environ.get("OPENAI_API_KEY"),
            "llm user",
            "pass user_kwargs={'api_key': ...} or set TOOL_ENVS_USER_API_KEY / OPENAI_API_KEY",
        )
        self.temperature = float(_setting(temperature, "TOOL_ENVS_USER_TEMPERATURE", 0.0))
        self.strategy = strategy
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_tokens = int(_setting(max_tokens, "TOOL_ENVS_USER_MAX_TOKENS", DEFAULT_MAX_TOKENS))
        if self.max_tokens < 1 or max_device_rounds < 0:
            raise EnvConfigError(
                f"max_tokens must be >= 1 and max_device_rounds >= 0, got {self.max_tokens} and "
                f"{max_device_rounds}"
            )
        self.max_device_rounds = max_device_rounds
        self.prices = price_per_million or PRICES_PER_MILLION.get(self.model, (0.0, 0.0))
        super().__init__()
        self._no_client_yet()
        self._history: list[dict[str, Any]] = []

    # -- episode ---------------------------------------------------------------------------------
    def start(
        self, scenario: UserScenario, opening: str, device: DeviceTools | None = None
    ) -> None:
        super().start(scenario, opening, device)
        system = RULES + self._scenario_instruction
        if self.strategy == "react":
            system += REACT_FORMAT
        self._history = [
            {"role": "system", "content": system},
            {"role": "user", "content": GREETING},
            {"role": "assistant", "content": opening},
        ]

    def reply(self, agent_message: str) -> str:
        """The user's answer; on InfrastructureError the history is as before the call."""
        if not self._history:
            raise RuntimeError("call start() before reply()")
        mark = len(self._history)
        self._history.append({"role": "user", "content": agent_message})
        try:
            answer = self._answer()
        except BaseException:
            del self._history[mark:]  # no agent message left waiting for an answer
            raise
        self._history.append({"role": "assistant", "content": answer})
        return answer

    def instructions(self) -> str:
        """The model's system prompt: the rules and the scenario."""
        return self._history[0]["content"] if self._history else ""

    def close(self) -> None:
        self._close_client()

    # -- calls -----------------------------------------------------------------------------------
    def _answer(self) -> str:
        answer = self._respond()
        if self.strategy in ("verify", "reflection"):
            for _ in range(self.max_attempts - 1):
                if self._verified(answer):
                    break
                answer = self._reflect(answer) if self.strategy == "reflection" else self._respond()
        if not answer.strip():
            # An empty message would reach the agent as if the customer had said nothing.
            raise InfrastructureError(
                f"the {WHO} (model {self.model!r}) answered the agent with an empty message",
                cause="user_simulator",
            )
        return answer

    def _respond(self) -> str:
        text = self._complete(self._history, with_device=True)
        if self.strategy == "react":
            return _after_response_marker(text)
        return text.strip()

    def _verified(self, answer: str) -> bool:
        transcript = "\n".join(
            f"{'agent' if m['role'] == 'user' else 'user'}: {m['content']}"
            for m in self._history[1:]
        )
        prompt = VERIFY_PROMPT.format(
            instruction=self._scenario_instruction, transcript=transcript, reply=answer
        )
        verdict = self._complete([{"role": "user", "content": prompt}])
        return verdict.strip().lower().startswith("yes")

    def _reflect(self, answer: str) -> str:
        prompt = REFLECT_PROMPT.format(instruction=self._scenario_instruction, reply=answer)
        messages = [*self._history, {"role": "user", "content": prompt}]
        return _after_response_marker(self._complete(messages))

    def _complete(self, messages: list[dict[str, Any]], with_device: bool = False) -> str:
        """One reply; with a device, the model may first call its tools (their turns are kept in
        ``messages`` so later replies see what the device showed), for at most
        ``max_device_rounds`` rounds, after which it must answer in words."""
        tools = self.device.schemas if with_device and self.device is not None else None
        for _ in range(self.max_device_rounds if tools else 0):
            message = self._call(messages, tools=tools).message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                messages.append(self._use_device(call))
        final = {"tools": tools, "tool_choice": "none"} if tools else {}
        return self._call(messages, **final).message.content or ""

    def _call(self, messages: list[dict[str, Any]], **options: Any) -> HelperReply:
        reply = chat(
            self._get_client(),
            who=WHO,
            cause="user_simulator",
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            max_completion_tokens=self.max_tokens,
            **options,
        )
        self._count(reply)
        return reply

    def _use_device(self, call: Any) -> dict[str, Any]:
        assert self.device is not None
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            content = "Error: the arguments must be a JSON object"
        else:
            content = self.device.call(ToolCall(call.function.name, arguments)).content
        return {"role": "tool", "tool_call_id": call.id, "content": content}

    def _count(self, reply: HelperReply) -> None:
        self.usage.calls += 1
        self.usage.prompt_tokens += reply.prompt_tokens
        self.usage.completion_tokens += reply.completion_tokens
        self.usage.cost_usd += (
            reply.prompt_tokens * self.prices[0] + reply.completion_tokens * self.prices[1]
        ) / 1e6


def _after_response_marker(text: str) -> str:
    """The part after "User Response:", so a react thought never reaches the agent."""
    found = _RESPONSE.search(text)
    if found:
        return found.group(1).strip()
    if text.lstrip().lower().startswith("thought:"):  # no marker: keep only the last paragraph
        return text.strip().split("\n\n")[-1].removeprefix("Thought:").strip()
    return text.strip()

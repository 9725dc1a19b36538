"""A message-level backend over any OpenAI-compatible chat API, for evaluation and data generation.

Unlike the token-level backends it returns assistant *messages*, so it cannot feed training (no
token ids or logprobs); it drives ``env.step`` with what a hosted or served model answers.
Retries and timeouts are the ``openai`` client's own: configure them on the client you pass
(``openai.OpenAI(base_url=..., max_retries=..., timeout=...)``). In a batch, a conversation the
API rejects (HTTP 400/422, e.g. longer than the model's context) comes back as a turn with
:attr:`ChatTurn.error` set; the other conversations' replies are kept.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tool_envs.core.helper_models import api_error_message

__all__ = ["ChatTurn", "OpenAIChatBackend", "to_api_messages"]

# Keys the chat API's message schemas define, per role; anything else (our bookkeeping, reasoning
# fields from other servers) is dropped because strict APIs reject unknown keys.
_ALLOWED_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls"},
    "tool": {"role", "content", "name", "tool_call_id"},
}


@dataclass(frozen=True)
class ChatTurn:
    """One assistant turn from the API.

    Attributes:
        message: ``{"role": "assistant", "content": str}`` plus OpenAI-style ``tool_calls`` (with
            the JSON-string ``arguments`` the API returned) when the model called tools.
        native_tools: Whether tools were sent natively; decides what :attr:`action` is.
        prompt_tokens: Prompt tokens the API billed, when it reported usage.
        completion_tokens: Completion tokens the API billed, when it reported usage.
        finish_reason: The API's finish reason (``"stop"``, ``"tool_calls"``, ``"length"``, ...).
        error: Why the API rejected this conversation (from :meth:`OpenAIChatBackend.complete`;
            the message is then empty), else None.
    """

    message: dict[str, Any]
    native_tools: bool = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None

    @property
    def text(self) -> str:
        return self.message["content"]

    @property
    def action(self) -> dict[str, Any] | str:
        """What to pass to ``env.step``: the message, or in text mode the raw text to parse."""
        return self.message if self.native_tools else self.text


def _api_tool_call(part: dict[str, Any]) -> dict[str, Any]:
    function = part.get("function") or {}
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": part.get("id", ""),
        "type": "function",
        "function": {"name": function.get("name", ""), "arguments": arguments},
    }


def to_api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our messages in the chat API's shape.

    Tool-call arguments are dicts for chat templates but JSON strings for the API; empty
    ``tool_calls`` lists are dropped (the API rejects them); unknown keys are dropped.
    """
    converted = []
    for message in messages:
        allowed = _ALLOWED_KEYS.get(message.get("role", ""), set(message))
        out = {k: v for k, v in message.items() if k in allowed}
        if out.get("tool_calls"):
            out["tool_calls"] = [_api_tool_call(part) for part in out["tool_calls"]]
        else:
            out.pop("tool_calls", None)
        if out.get("content") is None and not out.get("tool_calls"):
            out["content"] = ""
        converted.append(out)
    return converted


class OpenAIChatBackend:
    """Completes conversations through ``client.chat.completions.create``.

    Args:
        client: An ``openai.OpenAI`` client (thread-safe; it holds base URL, key, retries,
            timeout).
        model: Model name for the API.
        native_tools: Send ``tools=`` and return structured calls; otherwise send no tools and
            let the env's text parser find calls in the reply (:attr:`ChatTurn.action`).
        temperature: Sampling temperature, or None for the server's default.
        max_tokens: Completion-token limit (sent as ``max_completion_tokens``), or None.
        extra_body: Further request fields (e.g. vLLM's ``top_k``, a ``seed``).
        concurrency: Conversations in flight at once.
    """

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        native_tools: bool = True,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        concurrency: int = 8,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.client = client
        self.model = model
        self.native_tools = native_tools
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.concurrency = concurrency

    def request(
        self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """Keyword arguments of ``chat.completions.create`` for one conversation."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": to_api_messages(conversation)}
        if self.native_tools and tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_completion_tokens"] = self.max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def complete_one(
        self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ChatTurn:
        completion = self.client.chat.completions.create(**self.request(conversation, tools))
        if not completion.choices:
            raise ValueError(f"the chat API returned no choices (model {self.model!r})")
        choice = completion.choices[0]
        message: dict[str, Any] = {"role": "assistant", "content": choice.message.content or ""}
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in choice.message.tool_calls or []
            if getattr(call, "function", None) is not None  # skip non-function (custom) calls
        ]
        if calls:
            message["tool_calls"] = calls
        usage = completion.usage
        return ChatTurn(
            message=message,
            native_tools=self.native_tools,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            finish_reason=choice.finish_reason,
        )

    def complete(
        self,
        conversations: list[list[dict[str, Any]]],
        tools: list[list[dict[str, Any]]] | None = None,
    ) -> list[ChatTurn]:
        """One assistant turn per conversation, in order; ``tools[i]`` goes with conversation i.

        A conversation the API rejects (HTTP 400/422: too long for the context, a history it
        cannot read) gets a turn with ``error`` set and an empty message, and the batch's other
        replies are kept. Any other API error (unreachable, 5xx after the client's retries)
        raises once every request of the batch has finished.
        """
        if tools is not None and len(tools) != len(conversations):
            raise ValueError(f"got {len(conversations)} conversations but {len(tools)} tool lists")
        per_conversation = tools if tools is not None else [None] * len(conversations)
        if len(conversations) <= 1:
            return [
                self._complete_or_rejected(c, t)
                for c, t in zip(conversations, per_conversation, strict=True)
            ]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations))) as pool:
            futures = [
                pool.submit(self._complete_or_rejected, c, t)
                for c, t in zip(conversations, per_conversation, strict=True)
            ]
        return [future.result() for future in futures]

    def _complete_or_rejected(
        self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatTurn:
        import openai

        try:
            return self.complete_one(conversation, tools)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            return ChatTurn(
                message={"role": "assistant", "content": ""},
                native_tools=self.native_tools,
                error=f"the API rejected the conversation (HTTP {exc.status_code}): "
                + api_error_message(exc, limit=None),
            )

"""Calls to helper models: the LLMs around an episode (a simulated user, a judge, a task writer).

A helper's failure is never the agent's. This module turns every way one chat-completions call to
a helper can fail into one :class:`~tool_envs.errors.InfrastructureError` carrying the helper's
void cause, with a message that names the helper, the endpoint, the model and what to do:

- unreachable (connection refused, DNS): ``cannot reach the ... at URL``;
- frozen or too slow (no answer within the client's timeout, retries included): ``did not answer``;
- an HTTP error after the client's retries (5xx, 429), a wrong model name (404), a refused key;
- a body that is not a chat completion (not JSON, no choices, no message).

Retries with exponential backoff and the per-request timeout are the ``openai`` client's own
(``max_retries``, ``timeout``); a reply-length limit (``max_tokens``, sent as
``max_completion_tokens``) keeps one reply from running for minutes.

:func:`chat` raises (inside an episode, where the env turns the error into a void episode);
:func:`request_chat` returns the failure as a value, for callers that go on after one failed
request (the LLM task writer keeps its other samples).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tool_envs.core.pickling import state_without
from tool_envs.errors import EnvConfigError, InfrastructureError

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "ApiFailure",
    "ClientOnFirstUse",
    "HelperFailure",
    "HelperReply",
    "api_error_message",
    "api_failure",
    "chat",
    "describe_failure",
    "explain_api_failure",
    "make_client",
    "request_chat",
    "require_api_key",
]

DEFAULT_MAX_TOKENS = 1024
"""Default reply-length limit of every helper: far more than a user turn or a verdict needs, and
small enough that a model that rambles ends in seconds, not minutes."""


@dataclass(frozen=True)
class HelperReply:
    """One helper answer: the assistant message (the ``openai`` object) and what it cost."""

    message: Any
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


def require_api_key(api_key: str | None, who: str, how: str) -> str:
    """The key, or an :class:`EnvConfigError` at construction, before any episode runs.

    Checked early because a missing key is a setup mistake that no retry fixes; ``how`` says
    where a key can come from (an argument, environment variables).
    """
    if not api_key:
        raise EnvConfigError(
            f"the {who} needs an API key: {how} (any string for a local server without auth)"
        )
    return api_key


def make_client(*, api_key: str, base_url: str | None, timeout: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client with the helper's timeout and retries."""
    from openai import OpenAI

    return OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)


class ClientOnFirstUse:
    """What a helper that calls a chat API shares (the LLM user, the judge): its ``openai``
    client is made at first use from its ``api_key``, ``base_url``, ``timeout`` and
    ``max_retries``, then shared by its threads; a pickle leaves the client out (a copy makes its
    own). ``__init__`` calls :meth:`_no_client_yet`; ``_lock`` guards the client, and may guard
    the helper's own counters too."""

    api_key: str
    base_url: str | None
    timeout: float
    max_retries: int

    def _no_client_yet(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = make_client(
                    api_key=self.api_key,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            return self._client

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        return state_without(self, cleared=("_client",), dropped=("_lock",))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


@dataclass(frozen=True)
class HelperFailure:
    """Why one helper request failed after the client's retries.

    ``transient`` is True for what a later request may not meet again (unreachable, timed out,
    rate-limited, 5xx, a garbled body), False for what every request will meet (a wrong model
    name, a refused key, a request the server rejects).
    """

    message: str
    transient: bool


def request_chat(client: Any, *, who: str, **request: Any) -> HelperReply | HelperFailure:
    """``client.chat.completions.create(**request)``, with every failure as a value.

    For callers that go on after a failed request (a task writer keeps its other samples);
    inside an episode use :func:`chat`, which raises.
    """
    import openai

    try:
        completion = client.chat.completions.create(**request)
    except openai.APIError as exc:
        transient = isinstance(
            exc, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)
        ) or not isinstance(exc, openai.APIStatusError)
        return HelperFailure(describe_failure(exc, client, who, request.get("model")), transient)
    except (json.JSONDecodeError, AttributeError) as exc:  # what the client raises on a non-JSON
        return HelperFailure(_garbage(client, who, f"{type(exc).__name__}: {exc}"), True)
    choices = getattr(completion, "choices", None)
    message = getattr(choices[0], "message", None) if choices else None
    if message is None:
        return HelperFailure(_garbage(client, who, "no choice with a message"), True)
    usage = getattr(completion, "usage", None)
    return HelperReply(
        message=message,
        prompt_tokens=(getattr(usage, "prompt_tokens", None) or 0),
        completion_tokens=(getattr(usage, "completion_tokens", None) or 0),
        finish_reason=getattr(choices[0], "finish_reason", None),
    )


def chat(client: Any, *, who: str, cause: str, **request: Any) -> HelperReply:
    """``client.chat.completions.create(**request)``; any failure is an InfrastructureError.

    Args:
        client: An ``openai.OpenAI`` client.
        who: What the helper is, for messages ("LLM user simulator", "NL-assertion judge").
        cause: The void cause of its failures (see :data:`tool_envs.core.outcome.VOID_CAUSES`).
        request: The request's fields (``model``, ``messages``, ...).
    """
    reply = request_chat(client, who=who, **request)
    if isinstance(reply, HelperFailure):
        raise InfrastructureError(reply.message, cause=cause)
    return reply


def _garbage(client: Any, who: str, detail: str) -> str:
    return (
        f"the {who} at {client.base_url} answered something that is not a chat completion "
        f"({detail}); is base_url an OpenAI-compatible endpoint (often ending in '/v1')?"
    )


ApiFailure = Literal["timeout", "unreachable", "not_found", "refused", "status", "other"]
"""The kinds of ``openai`` failure a caller explains differently (:func:`api_failure`)."""


def api_failure(exc: Exception) -> ApiFailure:
    """Which kind of ``openai`` failure ``exc`` is; the most specific first (a timeout is also a
    connection error, a 404 or a refused key also an HTTP status error)."""
    import openai

    kinds: tuple[tuple[ApiFailure, type | tuple[type, ...]], ...] = (
        ("timeout", openai.APITimeoutError),
        ("unreachable", openai.APIConnectionError),
        ("not_found", openai.NotFoundError),
        ("refused", (openai.AuthenticationError, openai.PermissionDeniedError)),
        ("status", openai.APIStatusError),
    )
    return next((kind for kind, types in kinds if isinstance(exc, types)), "other")


def explain_api_failure(
    exc: Exception, url: Any, explanations: Mapping[ApiFailure, str], **fields: Any
) -> str:
    """The explanation of ``exc``'s kind (:func:`api_failure`), filled in: ``{url}``, ``{exc}``,
    ``{error}`` (its class name), ``{cause}`` (what it was raised from, else itself),
    ``{detail}`` (:func:`api_error_message`), ``{status}`` (its HTTP status) and ``fields``.

    One classification for every caller, each with the advice its own users can act on (a
    helper's settings, a CLI's flags)."""
    return explanations[api_failure(exc)].format(
        url=url,
        exc=exc,
        error=type(exc).__name__,
        cause=exc.__cause__ or exc,
        detail=api_error_message(exc),
        status=getattr(exc, "status_code", None),
        **fields,
    )


_HELPER_FAILURES: dict[ApiFailure, str] = {
    "timeout": "the {who} at {url} did not answer within {timeout} s ({tries}); if the "
    "server is slow, raise the timeout or lower max_tokens; if it is frozen, restart it",
    "unreachable": "cannot reach the {who} at {url} ({cause}; {tries}); "
    "is the server running, and is its base_url right?",
    "not_found": "the {who} at {url} answered 404 for model {model!r} ({detail}); check the model "
    "name the server serves, and that base_url ends where the API lives (often '/v1')",
    "refused": "the {who} at {url} refused the API key (HTTP {status}: {detail})",
    "status": "the {who} at {url} answered HTTP {status} ({detail}; {tries})",
    "other": "the {who} at {url} failed: {error}: {exc}",
}


def describe_failure(exc: Exception, client: Any, who: str, model: str | None) -> str:
    """What failed and what to do, for each kind of ``openai`` error."""
    attempts = client.max_retries + 1
    return explain_api_failure(
        exc,
        client.base_url,
        _HELPER_FAILURES,
        who=who,
        model=model,
        timeout=client.timeout,
        tries=f"{attempts} {'try' if attempts == 1 else 'tries'}",
    )


def api_error_message(exc: Exception, limit: int | None = 300) -> str:
    """What an ``openai`` API error says (the server's own message where it sent one), cut to
    ``limit`` characters (None: whole)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        message = body.get("message") or (error.get("message") if isinstance(error, dict) else None)
        if message:
            return str(message)[:limit]
    return str(exc)[:limit]

"""An LLM judge for tau2's natural-language assertions, behind any OpenAI-compatible endpoint.

tau2 scores ``NL_ASSERTION`` with an LLM; without a judge the env reports it as not scored.
``Tau2Env(nl_judge={"model": ..., "base_url": ..., "api_key": ...})`` (or an
:class:`OpenAIJudge`, or any callable ``(assertions, conversation) -> list[bool]``) turns it on.

A judge that fails says nothing about the agent: its configuration is checked when the env is
made (a model name, an API key; an unknown setting), and at run time every failure (unreachable,
frozen, an HTTP error such as a wrong model's 404, a reply that is not one verdict per assertion)
raises :class:`~tool_envs.errors.InfrastructureError` with cause ``"judge"``, which voids the
episode instead of scoring NL_ASSERTION 0.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from tool_envs.core.helper_models import (
    DEFAULT_MAX_TOKENS,
    ClientOnFirstUse,
    chat,
    require_api_key,
)
from tool_envs.core.messages import render_transcript
from tool_envs.errors import EnvConfigError
from tool_envs.errors import JudgeError as JudgeError

INSTRUCTIONS = (
    "You grade a conversation between a customer-service agent and a customer. For each "
    "numbered statement about the agent's behaviour, decide whether the conversation shows it "
    'to be true. Reply with JSON only: {"verdicts": [true or false, one per statement, in '
    "order]}."
)
WHO = "NL-assertion judge"
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class OpenAIJudge(ClientOnFirstUse):
    """Judges NL assertions with one chat completion per episode.

    Args:
        model: Model name the endpoint serves.
        base_url: OpenAI-compatible endpoint; default: ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: Default: ``OPENAI_API_KEY``; required (any string for a local server).
        temperature: Sampling temperature (0: as deterministic as the endpoint allows).
        timeout: Seconds per request; retries with backoff are the client's own.
        max_retries: Retries of a failed request.
        max_tokens: Reply-length limit (verdicts are short; a rambling model stops early).

    Raises:
        EnvConfigError: at construction, without a model name or an API key.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ):
        if not isinstance(model, str) or not model:
            raise EnvConfigError("nl_judge needs a model name, e.g. {'model': 'gpt-4o'}")
        if max_tokens < 1:
            raise EnvConfigError(f"nl_judge max_tokens must be >= 1, got {max_tokens}")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.api_key = require_api_key(
            api_key or os.environ.get("OPENAI_API_KEY"),
            "nl_judge",
            "pass nl_judge={'model': ..., 'api_key': ...} or set OPENAI_API_KEY",
        )
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._no_client_yet()

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> OpenAIJudge:
        """From ``nl_judge={...}``; an unknown key is an EnvConfigError naming the known ones."""
        known = list(inspect.signature(cls).parameters)
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise EnvConfigError(f"nl_judge has no setting(s) {unknown}; it takes {known}")
        if "model" not in settings:
            raise EnvConfigError("nl_judge needs a model name, e.g. {'model': 'gpt-4o'}")
        return cls(**settings)

    def __call__(
        self, assertions: Sequence[str], conversation: Sequence[dict[str, Any]]
    ) -> list[bool]:
        statements = "\n".join(f"{i}. {text}" for i, text in enumerate(assertions, 1))
        shown = [m for m in conversation if m.get("role") != "system"]
        reply = chat(
            self._get_client(),
            who=WHO,
            cause="judge",
            model=self.model,
            temperature=self.temperature,
            max_completion_tokens=self.max_tokens,
            messages=[
                {"role": "system", "content": INSTRUCTIONS},
                {
                    "role": "user",
                    "content": f"Conversation:\n{render_transcript(shown)}\n\n"
                    f"Statements:\n{statements}",
                },
            ],
        )
        with self._lock:
            self.usage["calls"] += 1
            self.usage["prompt_tokens"] += reply.prompt_tokens
            self.usage["completion_tokens"] += reply.completion_tokens
        return parse_verdicts(reply.message.content or "", len(assertions))


def parse_verdicts(text: str, expected: int) -> list[bool]:
    """``{"verdicts": [...]}`` from the judge's reply (a fenced or prose-wrapped one too)."""
    match = _JSON_OBJECT.search(text)
    try:
        verdicts = json.loads(match.group(0))["verdicts"] if match else None
    except (ValueError, KeyError, TypeError):
        verdicts = None
    if not isinstance(verdicts, list) or not all(isinstance(v, bool) for v in verdicts):
        raise JudgeError(f"the {WHO} did not answer with {{'verdicts': [...]}}: {text[:200]!r}")
    if len(verdicts) != expected:
        raise JudgeError(f"the {WHO} gave {len(verdicts)} verdicts for {expected} assertions")
    return verdicts

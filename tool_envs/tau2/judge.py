"""An LLM judge for tau2's natural-language assertions, behind any OpenAI-compatible endpoint.

tau2 scores ``NL_ASSERTION`` with an LLM; without a judge the env reports it as not scored.
``Tau2Env(nl_judge={"model": ..., "base_url": ...})`` (or an :class:`OpenAIJudge`, or any
callable ``(assertions, conversation) -> list[bool]``) turns it on.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from tool_envs.core.messages import render_transcript
from tool_envs.errors import EnvConfigError

INSTRUCTIONS = (
    "You grade a conversation between a customer-service agent and a customer. For each "
    "numbered statement about the agent's behaviour, decide whether the conversation shows it "
    'to be true. Reply with JSON only: {"verdicts": [true or false, one per statement, in '
    "order]}."
)
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class JudgeError(RuntimeError):
    """The judge's reply could not be read as one verdict per assertion."""


class OpenAIJudge:
    """Judges NL assertions with one chat completion per episode.

    Args:
        model: Model name the endpoint serves.
        base_url: OpenAI-compatible endpoint; default: the ``openai`` client's
            (``OPENAI_BASE_URL``).
        api_key: Default: ``OPENAI_API_KEY``.
        temperature: Sampling temperature (0: as deterministic as the endpoint allows).
        timeout: Seconds per request; retries with backoff are the client's own.
        max_retries: Retries of a failed request.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        timeout: float = 60.0,
        max_retries: int = 3,
    ):
        if not isinstance(model, str) or not model:
            raise EnvConfigError("nl_judge needs a model name, e.g. {'model': 'gpt-4o'}")
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self.usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._client: Any = None
        self._lock = threading.Lock()

    def __call__(
        self, assertions: Sequence[str], conversation: Sequence[dict[str, Any]]
    ) -> list[bool]:
        statements = "\n".join(f"{i}. {text}" for i, text in enumerate(assertions, 1))
        shown = [m for m in conversation if m.get("role") != "system"]
        response = self._get_client().chat.completions.create(
            model=self.model,
            temperature=self.temperature,
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
            if response.usage is not None:
                self.usage["prompt_tokens"] += response.usage.prompt_tokens
                self.usage["completion_tokens"] += response.usage.completion_tokens
        return parse_verdicts(response.choices[0].message.content or "", len(assertions))

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
            return self._client

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state.pop("_lock")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def parse_verdicts(text: str, expected: int) -> list[bool]:
    """``{"verdicts": [...]}`` from the judge's reply (a fenced or prose-wrapped one too)."""
    match = _JSON_OBJECT.search(text)
    try:
        verdicts = json.loads(match.group(0))["verdicts"] if match else None
    except (ValueError, KeyError, TypeError):
        verdicts = None
    if not isinstance(verdicts, list) or not all(isinstance(v, bool) for v in verdicts):
        raise JudgeError(f"the judge did not answer with {{'verdicts': [...]}}: {text[:200]!r}")
    if len(verdicts) != expected:
        raise JudgeError(f"the judge gave {len(verdicts)} verdicts for {expected} assertions")
    return verdicts

"""Read a vLLM server's JSON answers: its model list, and completion choices as Generations.

Pure functions, so the server client stays about requests, retries and streams, and the
conversions are tested without a server.
"""

from __future__ import annotations

from typing import Any

from tool_envs.rollout.backends.base import Generation, GenerationServerError, SamplingSettings
from tool_envs.rollout.backends.vllm.contract import enforce_contract

__all__ = ["choice_to_generation", "completion_choices_to_generations", "pick_served_model"]

_TOKEN_ID_PREFIX = "token_id:"


def pick_served_model(body: Any, requested: str | None, url: str) -> tuple[str, int | None]:
    """The model to request and its ``max_model_len``, from a ``GET /v1/models`` answer.

    ``requested`` None takes the only served model; a name that is not served is an error naming
    both, since every request for it would be an HTTP 404.
    """
    cards = body.get("data") if isinstance(body, dict) else None
    if not isinstance(cards, list) or not all(isinstance(c, dict) and "id" in c for c in cards):
        raise GenerationServerError(f"GET {url} returned no model list: {body!r:.200}", url=url)
    served = {str(card["id"]): card.get("max_model_len") for card in cards}
    if requested is None:
        if len(served) != 1:
            raise GenerationServerError(
                f"the server at {url} serves {len(served)} models ({sorted(served)}); pass "
                "model= to choose one",
                url=url,
            )
        requested = next(iter(served))
    elif requested not in served:
        raise GenerationServerError(
            f"model {requested!r} is not served at {url}; it serves {sorted(served)} (pass one "
            "of these, or model=None when there is only one)",
            url=url,
        )
    length = served[requested]
    return requested, int(length) if isinstance(length, int) else None


def _choice_token_ids(choice: dict[str, Any], where: str) -> list[int]:
    """A choice's ids: ``token_ids`` (``return_token_ids``), else ``token_id:N`` logprob tokens."""
    if choice.get("token_ids") is not None:
        return [int(t) for t in choice["token_ids"]]
    tokens = (choice.get("logprobs") or {}).get("tokens")
    if tokens is None:
        raise ValueError(
            f"{where}: the choice has neither 'token_ids' nor 'logprobs.tokens'; the server "
            "must support vLLM's return_token_ids or return_tokens_as_token_ids"
        )
    ids = []
    for token in tokens:
        if not (isinstance(token, str) and token.startswith(_TOKEN_ID_PREFIX)):
            raise ValueError(
                f"{where}: logprob token {token!r} is not in 'token_id:N' form; the server "
                "ignored return_tokens_as_token_ids"
            )
        ids.append(int(token[len(_TOKEN_ID_PREFIX) :]))
    return ids


def completion_choices_to_generations(
    body: Any, max_tokens: int, settings: SamplingSettings, n_prompts: int, where: str
) -> list[Generation]:
    """Convert a ``/v1/completions`` response body for a batch into Generations, by ``index``."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise ValueError(f"{where}: the body has no list of choice objects")
    if len(choices) != n_prompts:
        raise ValueError(f"{where}: expected {n_prompts} choices, got {len(choices)}")
    ordered = sorted(choices, key=lambda c: c.get("index", -1))
    if [c.get("index") for c in ordered] != list(range(n_prompts)):
        raise ValueError(f"{where}: choice indices are not 0..{n_prompts - 1}")
    return [choice_to_generation(choice, max_tokens, settings, where) for choice in ordered]


def choice_to_generation(
    choice: dict[str, Any], max_tokens: int, settings: SamplingSettings, where: str
) -> Generation:
    """One completion choice (answered whole, or put together from a stream) as a Generation."""
    at = f"{where}, choice {choice['index']}"
    return enforce_contract(
        _choice_token_ids(choice, at),
        (choice.get("logprobs") or {}).get("token_logprobs"),
        choice.get("finish_reason"),
        max_tokens,
        settings,
        at,
    )

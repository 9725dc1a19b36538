"""``make_rollout_func``: GRPOTrainer's generation replaced by multi-turn tool_envs episodes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tool_envs.integrations.trl import trl_compat
from tool_envs.integrations.trl.environment import TaskRowEnvironment
from tool_envs.rollout import seeds as seeding
from tool_envs.rollout.backends.base import (
    GenerationBackend,
    SamplingSettings,
)
from tool_envs.rollout.backends.hf import TransformersBackend
from tool_envs.rollout.choice import ENGINES as ENGINES
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.engine import Rollout
from tool_envs.rollout.metrics import episode_metrics
from tool_envs.rollout.player import Played, Player, Policy, columns

ROW_FIELDS = ("prompt", "env_id", "env_class", "reward_spec", "extra_info")

RolloutFunc = Callable[[list[Any], Any], dict[str, Any]]
BackendFactory = Callable[[Any], GenerationBackend]


def make_rollout_func(
    config: RolloutConfig | None = None,
    *,
    backend_factory: BackendFactory | None = None,
    vllm_server_model: str | None = None,
    rollout_engine: str = "auto",
    **settings: Any,
) -> RolloutFunc:
    """Build a ``rollout_func`` for GRPOTrainer (with ``environment_factory=TaskRowEnvironment``).

    Each call plays the batch's task rows in the env named by each row's ``env_id`` (mixed
    datasets work) and returns TRL's required ``prompt_ids``, ``completion_ids`` and ``logprobs``
    plus ``env_mask`` (0 on env tokens) and extra columns for reward functions: ``env_reward``,
    ``env_success``, ``env_progress`` (the env's ``info["progress"]``, None if it reports none),
    ``reward_info`` (JSON), ``env_id``, ``task_id``, ``num_turns``, ``finish``, ``outcome``. The
    whole completion is capped at the trainer's ``max_completion_length``.

    Void episodes (infrastructure failed: an env step raised or timed out, a simulated user's or
    judge's API failed, a generation request failed; see :mod:`tool_envs.core.outcome`) are
    never trained on: their ``env_mask`` is all 0 (no token in the loss) and ``env_reward`` is
    None, which TRL treats as unscorable (left out of the group baseline, advantage 0). They are
    counted in ``env/void_rate`` and ``env/void/<cause>``.

    With TRL's ``mask_truncated_completions`` an episode that did not terminate (Gymnasium's
    ``truncated``: the turn limit, a token budget) keeps its reward in the group baseline but
    none of its tokens in the loss. TRL alone would miss turn-limit episodes: their completion
    ends on the policy's stop token, which is what TRL checks.

    Args:
        config: Budgets and env settings of the episodes
            (:class:`~tool_envs.rollout.config.RolloutConfig`: ``max_tokens_per_turn``,
            ``max_turns``, ``env_kwargs``, ``env_servers``, ``step_timeout``,
            ``max_void_fraction``, ...); the recipes build it from their arguments
            (``EpisodeArguments.check_episodes``). Its ``max_completion_length`` is replaced by
            the trainer's.
        backend_factory: ``trainer -> GenerationBackend``; default: transformers generation with
            the trainer's model, or vLLM when ``use_vllm`` (colocate: the trainer's ``vllm.LLM``;
            server: one HTTP client per process, so ranks never wait on each other per turn).
        vllm_server_model: ``vllm_mode="server"``: the model name to request; default: the name
            the server serves (``GET /v1/models``). Set it when the server serves several.
        rollout_engine: ``"lockstep"`` (one batched generation call per turn), ``"async"`` (each
            episode sends its next request as soon as its env step returns; needs a server
            backend) or ``"auto"``: async for a server backend (vLLM server mode), lockstep for
            colocated vLLM and transformers generation.
        **settings: ``RolloutConfig`` fields set on top of ``config``, e.g.
            ``make_rollout_func(max_tokens_per_turn=256)``.

    TRL's sampling options reach every turn: ``temperature``, ``top_p``, ``top_k``, ``min_p``,
    ``repetition_penalty`` and ``generation_kwargs`` (see :func:`sampling_settings`); settings
    the engine cannot honour (structured outputs) are refused before vLLM starts when the
    trainer is :class:`~tool_envs.integrations.trl.ToolEnvsGRPOTrainer`, else on the first call.
    With ``vllm_enable_sleep_mode`` (colocate, GPU) the engine's KV cache is woken for the
    rollouts and the engine put back to sleep after them, as TRL's own generation does.
    """
    if rollout_engine not in ENGINES:  # refused now, not at the first training step
        raise ValueError(f"rollout_engine must be one of {ENGINES}, got {rollout_engine!r}")
    if "max_completion_length" in settings:
        raise TypeError(
            "make_rollout_func() takes no max_completion_length: the trainer's caps the episodes"
        )
    for name in ("env_kwargs", "env_servers", "template_kwargs"):  # None: none, as before
        if name in settings and settings[name] is None:
            settings[name] = {}
    config = (config or RolloutConfig()).replace(**settings)
    state: dict[str, Any] = {}

    def default_factory(trainer: Any) -> GenerationBackend:
        return default_backend(trainer, server_model=vllm_server_model)

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if "player" not in state:
            state["player"] = _build_player(
                trainer, config, backend_factory or default_factory, rollout_engine
            )
            state["engine"] = state["player"].engine
        player = state["player"]
        rows = task_rows_of(trainer, prompts)
        mode = "train" if trainer.model.training else "eval"
        group = trainer.num_generations if mode == "train" else trainer.num_generations_eval
        seeds = group_seeds(len(rows), group, trainer)
        started = time.perf_counter()
        if isinstance(player.engine.backend, TransformersBackend):
            with trl_compat.unwrapped_for_generation(trainer) as model:
                player.engine.backend.model = model
                played = player.play(rows, seeds)
        else:
            with engine_awake(trainer):
                played = player.play(rows, seeds)
        log_metrics(trainer, mode, played, seconds=time.perf_counter() - started)
        mask_truncated = bool(getattr(trainer.args, "mask_truncated_completions", False))
        pad_id = _pad_id(trainer.processing_class)
        return rollouts_to_batch(played.rollouts, pad_id, mask_truncated)

    rollout_func.state = state  # type: ignore[attr-defined]  # player and engine, to inspect
    rollout_func.check_args = sampling_settings  # type: ignore[attr-defined]  # early checks
    return rollout_func


@contextmanager
def engine_awake(trainer: Any) -> Iterator[None]:
    """With colocated vLLM in sleep mode: weights and KV cache awake for the rollouts only.

    TRL 1.16 wakes only the weights before calling a ``rollout_func`` (``sync_weights``); its own
    ``VLLMGeneration.generate`` also wakes the KV cache and puts the engine back to sleep (level
    2, which discards the weights) afterwards. This mirrors that, and re-pushes the weights if an
    earlier sleep discarded them without a sync since.
    """
    args = trainer.args
    if not (args.use_vllm and args.vllm_mode == "colocate" and args.vllm_enable_sleep_mode):
        yield
        return
    generation = trainer.vllm_generation
    if trl_compat.weights_sleeping(generation):
        generation.sync_weights()
        trl_compat.set_weights_sleeping(generation, False)
    generation.llm.wake_up(tags=["kv_cache"])
    try:
        yield
    finally:
        generation.llm.sleep(level=2)
        trl_compat.set_weights_sleeping(generation, True)


def _build_player(
    trainer: Any, config: RolloutConfig, backend_factory: BackendFactory, kind: str
) -> Player:
    """The run's player; no reward functions: TRL scores the columns with its own."""
    args = trainer.args
    tokenizer = trainer.processing_class
    sampling = sampling_settings(args, stop_token_ids=_stop_ids(tokenizer, trainer))
    policy = Policy(tokenizer, backend_factory(trainer), sampling, kind)
    # TRL pads and cuts completions to its own max_completion_length: the one cap there is.
    return Player(policy, config.replace(max_completion_length=args.max_completion_length))


# generation_kwargs keys the rollout engine owns (per-turn budgets, stops, logprobs, one sample
# per episode) or cannot honour across turns (structured outputs constrain one completion).
_ENGINE_OWNED = {"max_tokens", "max_new_tokens", "n", "logprobs", "stop_token_ids", "stop"}
_STRUCTURED = ("structured_outputs", "guided_", "response_format")


def sampling_settings(args: Any, stop_token_ids: Iterable[int] = ()) -> SamplingSettings:
    """The rollouts' sampling from a ``GRPOConfig`` (or ``AsyncGRPOConfig``); refuses what
    multi-turn rollouts cannot do.

    Passed through: ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty``,
    ``generation_kwargs`` (backend-native fields; they override the others). Refused:
    ``vllm_structured_outputs_regex`` and structured-output keys in ``generation_kwargs`` (a
    regex constrains one completion; a multi-turn episode is several, with env text between),
    and keys the engine sets per turn (``max_tokens``, ``n``, ``logprobs``, stops).
    """
    regex = getattr(args, "vllm_structured_outputs_regex", None)
    if regex:
        raise ValueError(
            f"vllm_structured_outputs_regex={regex!r} cannot be used with the tool_envs "
            "rollout_func: structured outputs constrain one completion, and a multi-turn episode "
            "is several turns with environment text between them. Unset it."
        )
    extra = dict(getattr(args, "generation_kwargs", None) or {})
    structured = sorted(k for k in extra if k.startswith(_STRUCTURED))
    if structured:
        raise ValueError(
            f"generation_kwargs {structured} ask for structured outputs, which the tool_envs "
            "rollout_func cannot apply across the turns of an episode; remove them"
        )
    owned = sorted(_ENGINE_OWNED & set(extra))
    if owned:
        raise ValueError(
            f"generation_kwargs {owned} are set by the tool_envs rollout engine per turn "
            "(max_tokens_per_turn, max_completion_length, stop ids, logprobs, one sample per "
            "episode); remove them"
        )
    return SamplingSettings(
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k or 0,
        min_p=args.min_p or 0.0,
        repetition_penalty=args.repetition_penalty,
        generation_kwargs=extra,
        stop_token_ids=tuple(stop_token_ids),
    )


def _pad_id(tokenizer: Any) -> int | None:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _stop_ids(tokenizer: Any, trainer: Any) -> list[int]:
    """The tokenizer's EOS plus the model's generation-config EOS ids (end-of-turn tokens)."""
    ids = [tokenizer.eos_token_id]
    configured = getattr(getattr(trainer.model, "generation_config", None), "eos_token_id", None)
    ids += configured if isinstance(configured, list) else [configured]
    return list(dict.fromkeys(i for i in ids if i is not None))


def default_backend(trainer: Any, server_model: str | None = None) -> GenerationBackend:
    """Transformers generation, or vLLM as the trainer's config asks.

    Server mode asks for ``server_model``, or with None the name the server itself reports.
    """
    args = trainer.args
    if not args.use_vllm:
        return TransformersBackend(
            trainer.model, pad_token_id=trainer.processing_class.pad_token_id
        )
    from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend
    from tool_envs.rollout.backends.vllm.server import VLLMServerBackend

    if args.vllm_mode == "colocate":
        if args.vllm_tensor_parallel_size != 1:
            raise ValueError(
                "multi-turn rollouts with vllm_mode='colocate' need vllm_tensor_parallel_size=1: "
                "TRL gathers prompts across the tensor-parallel group, a collective that ranks "
                "with different numbers of live episodes would deadlock on. Use vllm_mode='server'."
            )
        return VLLMColocateBackend(trainer.vllm_generation.llm)
    base_url = (
        args.vllm_server_base_url or f"http://{args.vllm_server_host}:{args.vllm_server_port}"
    )
    return VLLMServerBackend(base_url, model=server_model)


def task_rows_of(trainer: Any, prompts: list[Any]) -> list[dict[str, Any]]:
    """The task row of each rollout, from ``trainer.environments`` (see TaskRowEnvironment)."""
    environments = trl_compat.trainer_environments(trainer)
    if not environments or not all(isinstance(e, TaskRowEnvironment) for e in environments):
        raise ValueError(
            "the tool_envs rollout_func needs each rollout's dataset row: pass "
            "environment_factory=TaskRowEnvironment (tool_envs.integrations.trl) to GRPOTrainer"
        )
    if len(environments) != len(prompts):
        raise RuntimeError(f"TRL gave {len(prompts)} prompts but {len(environments)} environments")
    rows = []
    for index, (environment, prompt) in enumerate(zip(environments, prompts, strict=True)):
        row = {key: environment.row[key] for key in ROW_FIELDS if key in (environment.row or {})}
        if row.get("prompt") != prompt:
            raise RuntimeError(f"rollout {index}: the row's prompt is not the prompt TRL passed")
        rows.append(row)
    return rows


def group_seeds(count: int, group: int, trainer: Any) -> list[int]:
    """One seed per block of ``group`` rollouts (a GRPO group plays identical task state), for
    the trainer's step and process (:func:`tool_envs.rollout.seeds.group_seeds`)."""
    step = trainer.state.global_step
    rank = trainer.accelerator.process_index
    return seeding.group_seeds(count, group, trainer.args.seed, step=step, rank=rank)


def rollouts_to_batch(
    rollouts: list[Rollout], pad_token_id: int | None = None, mask_truncated: bool = False
) -> dict[str, Any]:
    """TRL's rollout_func output: required keys, env_mask, and extra columns for rewards.

    A void episode is kept (a GRPO group keeps its size) but carries nothing to learn from:
    ``env_mask`` all 0, ``env_reward`` / ``env_success`` None. One that ended before its first
    token (void, or a prompt that left no room under the context length) gets a single masked
    ``pad_token_id``: TRL reads every completion's last token, and an empty one fails the
    whole step. With
    ``mask_truncated`` an episode that did not terminate also gets ``env_mask`` all 0 but keeps
    its reward (overlong filtering: its reward still sets the group's baseline). The other
    columns are :func:`tool_envs.rollout.player.columns`.
    """
    completions, masks, lps = [], [], []
    for rollout in rollouts:
        lp = rollout.logprobs
        ids, mask = list(rollout.completion_ids), list(rollout.env_mask)
        if rollout.void or (mask_truncated and rollout.truncated):
            mask = [0] * len(ids)
        if not ids and pad_token_id is not None:
            ids, mask, lp = [pad_token_id], [0], None if lp is None else [0.0]
        completions.append(ids)
        masks.append(mask)
        lps.append(lp)
    return {
        **columns(rollouts),
        "completion_ids": completions,
        "logprobs": None if any(lp is None for lp in lps) else lps,
        "env_mask": masks,
    }


def log_metrics(trainer: Any, mode: str, played: Played, seconds: float | None = None) -> None:
    """Add episode metrics (over all processes) to the trainer's logs for this step.

    ``rollout/seconds`` is the time this process spent playing the step's episodes (generation
    and env steps), so a step's ``step_time`` splits into playing and training.
    """
    from accelerate.utils import gather_object

    summaries = gather_object(played.summaries)
    for key, value in episode_metrics(summaries).items():
        trl_compat.log_step_metric(trainer, mode, key, value)
    if seconds is not None:
        trl_compat.log_step_metric(trainer, mode, "rollout/seconds", seconds)

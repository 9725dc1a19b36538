"""One test per TRL internal tool_envs touches (``trl_compat.TOUCHPOINTS``), against the
installed TRL: a TRL release that drops or reshapes one fails the test named for it here, not a
training run. Each asserts what our code needs of the internal, not merely that a name exists."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
from rollout_helpers import saved_tiny_model, tiny_grpo_config

from tool_envs.calculator import default_splits
from tool_envs.data import encode_row
from tool_envs.errors import TRLInternalsError
from tool_envs.integrations.trl import TaskRowEnvironment, env_reward, make_rollout_func, trl_compat

trl = pytest.importorskip("trl", reason="the TRL integration needs the 'train' extra (trl)")


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    """A real GRPOTrainer as the recipes build it (tiny model, rollout_func, TaskRowEnvironment)."""
    folder, tokenizer = saved_tiny_model(tmp_path_factory.mktemp("tiny-model"))
    rows = default_splits()["train"][:4]
    return trl.GRPOTrainer(
        model=str(folder),
        processing_class=tokenizer,
        reward_funcs=[env_reward],
        args=tiny_grpo_config(tmp_path_factory.mktemp("out"), logging_steps=1),
        train_dataset=datasets.Dataset.from_list([encode_row(r) for r in rows]),
        rollout_func=make_rollout_func(),
        environment_factory=TaskRowEnvironment,
    )


def _fails_naming(touchpoint: str, call, *args) -> None:
    with pytest.raises(TRLInternalsError) as raised:
        call(*args)
    assert raised.value.touchpoint == touchpoint
    assert f"TRL {trl.__version__}" in str(raised.value) and trl_compat.CHECKED in str(raised.value)


def test_installed_trl_is_a_version_every_touchpoint_was_checked_on():
    """An upgrade fails here first: re-read each touchpoint in the new TRL, then widen CHECKED."""
    from packaging.specifiers import SpecifierSet

    for point in trl_compat.TOUCHPOINTS.values():
        assert trl.__version__ in SpecifierSet(point.checked), (point.name, trl.__version__)


def test_every_touchpoint_has_a_test_here():
    names = {name for name in globals() if name.startswith("test_")}
    untested = [t for t in trl_compat.TOUCHPOINTS if not any(t in name for name in names)]
    assert not untested, untested


def test_step_metrics_reach_the_step_logs_as_means(trainer):
    trainer.model.train()  # TRL logs the "train" lists while the model trains
    trl_compat.log_step_metric(trainer, "train", "env/probe", 0.25)
    trl_compat.log_step_metric(trainer, "train", "env/probe", 0.75)
    trainer.log({"loss": 1.0})  # TRL averages each list into the log and clears it
    assert trainer.state.log_history[-1]["env/probe"] == 0.5
    assert "env/probe" not in trainer._metrics["train"]
    _fails_naming("step_metrics", trl_compat.log_step_metric, SimpleNamespace(), "train", "k", 1)
    plain = SimpleNamespace(_metrics={"train": {}})  # a TRL that stopped using defaultdict(list)
    _fails_naming("step_metrics", trl_compat.log_step_metric, plain, "train", "k", 1)


def test_trainer_environments_are_set_and_filled_per_rollout(trainer):
    assert trl_compat.trainer_environments(trainer) is None  # before the first batch
    # TRL fills the list, one environment_factory instance per rollout, before generation.
    source = inspect.getsource(trl.GRPOTrainer._generate_and_score_completions)
    assert "self.environments = []" in source and "self.environments.append(" in source
    _fails_naming("trainer_environments", trl_compat.trainer_environments, SimpleNamespace())


def test_unwrap_model_for_generation_gives_a_model_that_generates(trainer):
    import torch

    with trl_compat.unwrapped_for_generation(trainer) as model:
        ids = torch.tensor([[trainer.processing_class.eos_token_id]])
        out = model.generate(ids, max_new_tokens=2, do_sample=False)
    assert out.shape[1] >= 2


def test_weights_sleeping_is_what_trls_generation_sets_and_reads():
    generation_class = trl_compat.vllm_generation_class()
    for method in ("_init_vllm", "sync_weights", "generate"):
        source = inspect.getsource(getattr(generation_class, method))
        assert "self._llm_weights_sleeping" in source, method
    generation = SimpleNamespace()
    assert trl_compat.weights_sleeping(generation) is False  # not colocated with sleep mode
    trl_compat.set_weights_sleeping(generation, True)
    assert trl_compat.weights_sleeping(generation) is True


def test_vllm_generation_global_is_what_grpo_trainer_builds_and_is_restored(monkeypatch):
    import trl.trainer.grpo_trainer as grpo_module

    original = grpo_module.VLLMGeneration
    assert "VLLMGeneration(" in inspect.getsource(grpo_module.GRPOTrainer.__init__)
    with trl_compat.vllm_generation_swapped(sentinel := object()):
        assert grpo_module.VLLMGeneration is sentinel
    assert grpo_module.VLLMGeneration is original
    monkeypatch.delattr(grpo_module, "VLLMGeneration")  # as a TRL that renamed it would be
    _fails_naming("vllm_generation_global", trl_compat.vllm_generation_swapped(None).__enter__)


def test_vllm_llm_global_is_the_engine_the_colocate_start_builds():
    import trl.generation.vllm_generation as generation_module
    from vllm import LLM

    assert trl_compat.vllm_llm_class() is LLM
    assert "LLM(" in inspect.getsource(generation_module.VLLMGeneration._init_vllm)
    with trl_compat.vllm_llm_swapped(sentinel := object()):
        assert generation_module.LLM is sentinel
    assert generation_module.LLM is LLM


def test_vllm_generation_hooks_exist_as_the_subclass_uses_them():
    from tool_envs.integrations.trl.trainer import ToolEnvsVLLMGeneration, check_trl_version

    check_trl_version()  # 1.16, and check_vllm_generation passes
    base = trl_compat.vllm_generation_class()
    assert issubclass(ToolEnvsVLLMGeneration, base)
    assert inspect.isgeneratorfunction(base._iter_named_params)  # every rank walks it
    assert list(inspect.signature(base.sync_weights).parameters) == ["self"]
    assert list(inspect.signature(base._init_vllm).parameters) == ["self"]


def test_scoring_hook_takes_the_arguments_the_unpadded_path_passes():
    from tool_envs.integrations.trl.unpadded import ROW_KEYWORDS

    trl_compat.check_scoring_hook()
    hook = trl.GRPOTrainer._get_per_token_logps_and_entropies
    parameters = inspect.signature(hook).parameters
    assert set(ROW_KEYWORDS) <= set(parameters)
    assert all(p.default in (None, False) for name, p in parameters.items() if name in ROW_KEYWORDS)
    assert "tuple" in str(inspect.signature(hook).return_annotation)  # (logps, entropies, aux)


def test_rollout_sample_has_the_fields_the_worker_fills():
    import numpy as np

    fields = {
        "prompt": [{"role": "user", "content": "q"}],
        "completion": [{"role": "assistant", "content": "a"}],
        "input_ids": np.zeros(3, dtype=np.int64),
        "completion_mask": np.ones(3, dtype=np.int64),
        "old_log_probs": np.zeros(3, dtype=np.float32),
        "advantage": 0.5,
        "model_version": 2,
        "group_id": 7,
        "metrics": {"reward": 1.0},
    }
    sample = trl_compat.rollout_sample(**fields)
    assert sample.advantage == 0.5 and sample.group_id == 7 and sample.enqueued_at is None
    _fails_naming("rollout_sample", lambda: trl_compat.rollout_sample(**fields, not_a_field=1))


def test_vllm_client_takes_the_arguments_and_has_get_server_info():
    from trl.generation.vllm_client import VLLMClient

    parameters = inspect.signature(VLLMClient.__init__).parameters
    assert {"base_url", "group_port", "connection_timeout"} <= set(parameters)
    assert callable(VLLMClient.get_server_info)
    assert "self.base_url" in inspect.getsource(VLLMClient.__init__)  # what the sync posts to


def test_chat_templates_folder_holds_the_templates_we_name():
    """Read below this layer (rollout.template_check, tiny_models): TRL's shipped templates and
    their ``<name>_training`` prefix-preserving variants."""
    from tool_envs.rollout.template_check import _trl_templates
    from tool_envs.tiny_models import trl_chat_template

    templates = _trl_templates()
    assert {"qwen2_5", "qwen2_5_training", "qwen3", "qwen3_training"} <= set(templates)
    assert trl_chat_template("qwen3_training") == templates["qwen3_training"]
    assert Path(trl.__file__).parent.joinpath("chat_templates").is_dir()


def test_the_module_is_the_only_place_that_reaches_into_trl_privately():
    """No other module of the package names a private TRL attribute."""
    package = Path(trl_compat.__file__).parents[2]
    private = re.compile(r"\b(?:_metrics|_llm_weights_sleeping|_iter_named_params)\b")
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "trl_compat.py" and private.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders

"""One rule picks the engine for every caller (rollout_func, async worker, held-out evaluator)."""

import pytest
from rollout_helpers import ReplayBackend, tiny_tokenizer_and_model

from tool_envs.integrations.trl import make_rollout_func
from tool_envs.rollout import AsyncRolloutEngine, RolloutEngine
from tool_envs.rollout.choice import make_engine


class BatchedOnly:
    """A batched backend (transformers-like): no ``agenerate``."""

    def generate(self, prompts, max_tokens, settings):
        raise AssertionError("not called")


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer_and_model()[0]


@pytest.mark.parametrize(
    ("backend", "kind", "engine_class"),
    [
        ("server", "auto", AsyncRolloutEngine),
        ("batched", "auto", RolloutEngine),
        ("server", "lockstep", RolloutEngine),
        ("server", "async", AsyncRolloutEngine),
    ],
)
def test_the_kind_and_the_backend_pick_the_engine(tokenizer, backend, kind, engine_class):
    made = ReplayBackend(tokenizer, [], []) if backend == "server" else BatchedOnly()
    with make_engine(tokenizer, made, kind=kind) as engine:
        assert type(engine) is engine_class


def test_an_impossible_choice_is_refused_naming_the_fix(tokenizer):
    with pytest.raises(ValueError, match="needs a continuous-batching server backend"):
        make_engine(tokenizer, BatchedOnly(), kind="async")
    with pytest.raises(ValueError, match="must be one of"):
        make_engine(tokenizer, BatchedOnly(), kind="fast")
    with pytest.raises(ValueError, match="must be one of"):
        make_rollout_func(rollout_engine="fast")

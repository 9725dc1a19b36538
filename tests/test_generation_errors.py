"""One rule for a failed generation request, the same in both engines: the episodes the request
was for end void (cause ``generation``), the others play on, and ``max_void_fraction`` decides
whether the batch stands (in :func:`~tool_envs.rollout.player.play`, for either engine); anything
else a backend raises is a bug and propagates."""

import pytest
from rollout_helpers import ReplayBackend, tiny_tokenizer_and_model
from test_async_engine import family_tasks

from tool_envs.errors import GenerationServerError
from tool_envs.rollout import Policy, RolloutConfig, RolloutVoidError, play

ENGINES = ["lockstep", "async"]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer_and_model()[0]


class FailingBackend(ReplayBackend):
    """Replays gold turns, but a request whose context holds ``marker`` raises ``error``."""

    def __init__(self, tokenizer, tasks, scripts, marker, error):
        super().__init__(tokenizer, tasks, scripts)
        self.marker, self.error = marker, error

    def _check(self, prompts):
        if any(self.marker in self.tokenizer.decode(p) for p in prompts):
            raise self.error

    def generate(self, prompts, max_tokens, settings):
        self._check(prompts)
        return super().generate(prompts, max_tokens, settings)

    async def agenerate(self, prompt, max_tokens, settings, *, seed=None):
        self._check([prompt])
        return await super().agenerate(prompt, max_tokens, settings, seed=seed)


def play_failing(tokenizer, engine, error, max_void_fraction=1.0):
    tasks, scripts = family_tasks("tool_envs/Calculator-v0", 3)
    marker = tasks[0]["prompt"][-1]["content"]
    backend = FailingBackend(tokenizer, tasks, scripts, marker, error)
    config = RolloutConfig(max_void_fraction=max_void_fraction)
    return play(tasks, None, Policy(tokenizer, backend, engine=engine), config)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_request_voids_the_episodes_it_was_for(tokenizer, engine):
    error = GenerationServerError("HTTP 503 after 2 retries", url="http://127.0.0.1:1", status=503)
    played = play_failing(tokenizer, engine, error)
    rollouts = played.rollouts
    assert rollouts[0].void and rollouts[0].reward_info["void_cause"] == "generation"
    assert "HTTP 503" in rollouts[0].reward_info["reason"]
    assert played.rewards[0] is None and played.summaries[0]["void/generation"] == 1.0
    if engine == "async":  # one request per episode: the others play on
        assert not any(r.void for r in rollouts[1:])
        assert played.rewards[1:] == [1.0, 1.0] and played.void == 1
    else:  # one request for the whole turn: every episode in it is void
        assert all(r.reward_info["void_cause"] == "generation" for r in rollouts)
        assert played.rewards == [None, None, None] and played.void_fraction == 1.0
    with pytest.raises(RolloutVoidError, match="'generation'"):
        play_failing(tokenizer, engine, error, max_void_fraction=0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_backend_bug_is_raised_not_voided(tokenizer, engine):
    with pytest.raises(KeyError, match="bug"):
        play_failing(tokenizer, engine, KeyError("bug"))

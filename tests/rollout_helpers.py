"""Shared pieces for the rollout/TRL tests: a tiny local model and a gold-playing backend."""

from __future__ import annotations

import gymnasium as gym

from tool_envs.calculator import default_splits, gold_turns
from tool_envs.rollout.backends.base import Generation, SamplingSettings
from tool_envs.tiny_models import build_model, build_tokenizer


def calculator_texts(count: int = 200) -> list[str]:
    rows = default_splits()["train"][:count]
    return [m["content"] for r in rows for m in r["prompt"]] + [
        turn for r in rows for turn in gold_turns(r)
    ]


def tau_gold_rows(count: int, **options):
    """A TauRetail tokenizer and the gold SFT rows of the env's first ``count`` test tasks."""
    import gymnasium as gym

    import tool_envs
    from tool_envs.rollout import RolloutConfig, gold_sft_rows
    from tool_envs.tiny_models import env_texts

    gym.register_envs(tool_envs)
    tokenizer = build_tokenizer(env_texts("tool_envs/TauRetail-v0", limit=50), vocab_size=1024)
    tasks = gym.make("tool_envs/TauRetail-v0").unwrapped.task_splits()["test"][:count]
    config = RolloutConfig(max_completion_length=8192, max_tokens_per_turn=4096)
    return tokenizer, tasks, gold_sft_rows(tokenizer, tasks, config, **options)


def tiny_tokenizer_and_model(seed: int = 0):
    # Shrunk on purpose: 2 layers, hidden 64, vocab ~450 keeps a GRPO step well under a second.
    tokenizer = build_tokenizer(calculator_texts())
    return tokenizer, build_model(tokenizer, seed=seed)


def saved_tiny_model(folder):
    """:func:`tiny_tokenizer_and_model` saved to ``folder`` (TRL builds a trainer's model from a
    path); returns ``(folder, tokenizer)``."""
    tokenizer, model = tiny_tokenizer_and_model()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


class GoldPolicyBackend:
    """A GenerationBackend that writes each calculator task's gold turns.

    It reads the question and the number of tool results from the token context, so it speaks
    only through the protocol the engine uses with every backend. Used where a test needs real
    multi-turn episodes, which a randomly initialised model cannot produce.
    """

    def __init__(self, tokenizer, tasks):
        self.tokenizer = tokenizer
        self.turns = {t["prompt"][-1]["content"]: gold_turns(t) for t in tasks}
        self.calls = 0

    def generate(self, prompts, max_tokens, settings: SamplingSettings):
        self.calls += 1
        out = []
        for ids, limit in zip(prompts, max_tokens, strict=True):
            text = self.tokenizer.decode(ids)
            question = next(q for q in self.turns if f"user\n{q}<|im_end|>" in text)
            turn = self.turns[question][text.count("<tool_response>")]
            tokens = [
                *self.tokenizer.encode(turn, add_special_tokens=False),
                settings.stop_token_ids[0],
            ]
            reason = "stop" if len(tokens) <= limit else "length"
            tokens = tokens[:limit]
            out.append(Generation(tokens, [-0.5] * len(tokens), reason))
        return out


class ReplayBackend:
    """Writes each task's scripted turns, for any env; both a batched and an async backend.

    The task is found by its first user message in the decoded context and the turn by the
    number of assistant headers, so it sees only what the engines send. ``delays[i]`` (seconds)
    makes the async calls of a task finish out of order, as a busy server would. Used to prove
    the lockstep and async engines keep the same books, on envs a tiny model cannot play.
    """

    def __init__(self, tokenizer, tasks, scripts, delays=None):
        self.tokenizer = tokenizer
        self.scripts = {t["prompt"][-1]["content"]: s for t, s in zip(tasks, scripts, strict=True)}
        self.delays = {
            t["prompt"][-1]["content"]: d for t, d in zip(tasks, delays or [], strict=False)
        }
        self.calls = 0

    def _turn(self, ids, limit, settings: SamplingSettings) -> Generation:
        text = self.tokenizer.decode(ids)
        key = max((q for q in self.scripts if q in text), key=len)
        turn = self.scripts[key][text.count("<|im_start|>assistant") - 1]
        tokens = [
            *self.tokenizer.encode(turn, add_special_tokens=False),
            settings.stop_token_ids[0],
        ]
        reason = "stop" if len(tokens) <= limit else "length"
        tokens = tokens[:limit]
        return Generation(tokens, [-0.25] * len(tokens), reason)

    def generate(self, prompts, max_tokens, settings):
        self.calls += 1
        return [self._turn(p, m, settings) for p, m in zip(prompts, max_tokens, strict=True)]

    async def agenerate(self, prompt, max_tokens, settings, *, seed=None):
        import asyncio

        self.calls += 1
        text = self.tokenizer.decode(prompt)
        await asyncio.sleep(next((d for q, d in self.delays.items() if q in text), 0.0))
        return self._turn(prompt, max_tokens, settings)


def tiny_grpo_config(output_dir, **fields):
    """A GRPOConfig for a one-step CPU run of a tiny model: no reports or checkpoints, one GRPO
    group of 4 with short completions, unless ``fields`` say otherwise."""
    import trl

    defaults = {
        "output_dir": str(output_dir),
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "max_completion_length": 32,
        "max_steps": 1,
    }
    return trl.GRPOConfig(**{**defaults, **fields})


def stub_rollout(reward: float, outcome: str, **fields):
    """A two-token episode of a three-message conversation: what scoring and grouping read of a
    Rollout, with ``fields`` (``reward_info``, ``env_id``, ``progress`` ...) set as given."""
    from tool_envs.rollout.engine import Rollout

    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]
    values = {"env_id": "tool_envs/Calculator-v0", "task_id": "t", "messages": messages, **fields}
    return Rollout(
        prompt_ids=[1, 2],
        completion_ids=[3, 4],
        logprobs=[-0.5, -0.1],
        env_mask=[1, 1],
        reward=reward,
        outcome=outcome,
        **values,
    )


class FailsOnMarker(gym.Wrapper):
    """An env whose step raises for the task whose question is ``marker``: its episode is void."""

    marker = ""

    def step(self, action):
        if any(m["content"] == self.marker for m in self.unwrapped.messages):
            raise OSError("the tool server went away")
        return self.env.step(action)

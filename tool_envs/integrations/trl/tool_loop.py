"""Tool-only envs in TRL's own tool loop (``GRPOTrainer(environment_factory=...)``).

For users whose chat template TRL recognises (Qwen2.5/3, Llama 3.1/3.2, ...) and whose env speaks
only through tools (no simulated user): TRL parses the calls, our env runs them (argument
validation, error messages, state), and a reward function plays the final answer into the env.

    environment_class, reward = tool_loop_environment("tool_envs/Calculator-v0")
    trainer = GRPOTrainer(model=..., args=..., train_dataset=rows,
                          environment_factory=environment_class, reward_funcs=[reward])

Envs with a simulated user do not fit this loop (the env can only answer through tool results);
use :func:`tool_envs.integrations.trl.make_rollout_func` for them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.error import ResetNeeded

import tool_envs
from tool_envs.integrations.trl.rollout_func import ROW_FIELDS

gym.register_envs(tool_envs)


def tool_loop_environment(
    env_id: str, **env_kwargs: Any
) -> tuple[type, Callable[..., list[float]]]:
    """An ``environment_factory`` class whose public methods are ``env_id``'s tools, and its reward.

    Each method keeps its tool's signature and docstring (TRL builds the tool schema from them)
    and runs the call through ``env.step``, so the result is exactly what the env would answer.
    The reward function steps each env with the rollout's final assistant message.
    """
    probe = gym.make(env_id, **env_kwargs)
    try:
        probe.reset(seed=0)
        toolset = probe.unwrapped._toolset
        tools = {name: toolset[name].function for name in toolset.names}
    finally:
        probe.close()

    def __init__(self: Any) -> None:
        self.env = gym.make(env_id, **env_kwargs).unwrapped  # TRL caps the tool iterations itself
        self.reward: float | None = None
        self.reward_info: dict[str, Any] | None = None
        self._calls = 0

    def reset(self: Any, **row: Any) -> None:
        self.env.reset(options={"task": {k: row[k] for k in ROW_FIELDS if k in row}})
        self.reward, self.reward_info, self._calls = None, None, 0

    def finish(self: Any, final_text: str) -> float:
        """End the episode with the final answer (unless a tool already ended it)."""
        if self.reward is None:
            try:
                _, reward, terminated, _, info = self.env.step(final_text)
            except ResetNeeded:
                return 0.0
            self.reward = reward if terminated else 0.0
            self.reward_info = info["reward_info"]
        return self.reward

    namespace: dict[str, Any] = {"__init__": __init__, "reset": reset, "_finish": finish}
    for name, function in tools.items():
        namespace[name] = _tool_method(name, function)
    class_name = env_id.split("/")[-1].replace("-", "_") + "_ToolLoop"
    environment_class = type(class_name, (), namespace)

    def env_reward(completions: list[Any], environments: list[Any], **kwargs: Any) -> list[float]:
        rewards = []
        for completion, environment in zip(completions, environments, strict=True):
            final = completion[-1] if isinstance(completion, list) and completion else {}
            text = final.get("content") or "" if isinstance(final, dict) else str(final)
            rewards.append(float(environment._finish(text)))
        return rewards

    env_reward.__name__ = f"{class_name}_reward"
    return environment_class, env_reward


def _tool_method(name: str, function: Callable[..., Any]) -> Callable[..., str]:
    """A method with ``function``'s signature and docstring that calls it through ``env.step``."""

    def method(self: Any, **arguments: Any) -> str:
        self._calls += 1
        action = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": f"call_{self._calls}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
        try:
            observation, reward, terminated, _, info = self.env.step(action)
        except ResetNeeded:
            return "Error: the episode is over; no more tool calls are possible."
        if terminated:
            self.reward, self.reward_info = reward, info["reward_info"]
        return observation[0]["content"] if observation else ""

    signature = inspect.signature(function)
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(
        parameters=[self_parameter, *signature.parameters.values()]
    )
    method.__doc__ = function.__doc__
    method.__name__ = method.__qualname__ = name
    method.__annotations__ = dict(getattr(function, "__annotations__", {}))
    return method

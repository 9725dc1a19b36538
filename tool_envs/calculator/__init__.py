"""Arithmetic with calculator tools: the smallest complete env, used by demos and tests."""

from tool_envs.calculator.env import CalculatorEnv, final_number
from tool_envs.calculator.tasks import ENV_ID, default_splits, generate_splits, gold_turns

__all__ = [
    "ENV_ID",
    "CalculatorEnv",
    "default_splits",
    "final_number",
    "generate_splits",
    "gold_turns",
]

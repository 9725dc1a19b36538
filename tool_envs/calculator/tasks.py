"""Seeded generator of arithmetic tasks for ``tool_envs/Calculator-v0``.

Each task is an expression of one to three operations on small integers whose every
intermediate result is an integer, so that the gold tool calls (one per operation, in order)
replay exactly and the answer is unambiguous.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

ENV_ID = "tool_envs/Calculator-v0"

SYSTEM_PROMPT = (
    "Solve the arithmetic with the calculator tools, one operation per call. "
    "Then reply with the final number."
)

_QUESTIONS = (
    "What is {expr}?",
    "Compute {expr}.",
    "Calculate {expr}.",
    "Please work out {expr} for me.",
    "How much is {expr}?",
)

_OPERATIONS: dict[str, tuple[str, Callable[[int, int], float]]] = {
    "+": ("add", operator.add),
    "-": ("subtract", operator.sub),
    "*": ("multiply", operator.mul),
    "/": ("divide", operator.truediv),
}


def _operand(rng: np.random.Generator, symbol: str, value: int) -> int | None:
    """A right operand that keeps numbers small and results whole, or None if there is none."""
    if symbol == "/":
        divisors = [d for d in range(2, 13) if value % d == 0]
        return int(rng.choice(divisors)) if divisors and value != 0 else None
    if symbol == "*":
        return int(rng.integers(2, 13))
    return int(rng.integers(1, 100))


def _problem(rng: np.random.Generator, steps: int) -> tuple[str, int, list[dict[str, Any]]]:
    value = int(rng.integers(2, 100))
    expression = str(value)
    gold_calls: list[dict[str, Any]] = []
    for step in range(steps):
        while True:
            symbol = str(rng.choice(list(_OPERATIONS)))
            operand = _operand(rng, symbol, value)
            if operand is not None:
                break
        name, apply = _OPERATIONS[symbol]
        gold_calls.append({"name": name, "arguments": {"a": value, "b": operand}})
        left = f"({expression})" if step > 0 else expression
        expression = f"{left} {symbol} {operand}"
        value = int(apply(value, operand))
    return expression, value, gold_calls


def _row(
    rng: np.random.Generator,
    expression: str,
    answer: int,
    gold_calls: list,
    split: str,
    number: int,
    difficulty: int,
) -> dict[str, Any]:
    question = str(rng.choice(_QUESTIONS)).format(expr=expression)
    return {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ],
        "env_id": ENV_ID,
        "reward_spec": {"answer": answer, "gold_calls": gold_calls},
        "extra_info": {
            "id": f"calculator-{split}-{number:05d}",
            "split": split,
            "difficulty": difficulty,
            "expression": expression,
        },
    }


def generate_splits(
    sizes: dict[str, int] | None = None, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Task rows per split; no expression appears in two splits (or twice in one)."""
    sizes = sizes or {"train": 1000, "test": 200}
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, size in sizes.items():
        rows: list[dict[str, Any]] = []
        while len(rows) < size:
            difficulty = int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
            expression, answer, gold_calls = _problem(rng, difficulty)
            if expression in seen:
                continue
            seen.add(expression)
            rows.append(_row(rng, expression, answer, gold_calls, split, len(rows), difficulty))
        splits[split] = rows
    return splits


@functools.lru_cache(maxsize=1)
def default_splits() -> dict[str, list[dict[str, Any]]]:
    """The task set shipped with the env (also written to ``datasets/calculator``)."""
    return generate_splits()


def gold_turns(task: dict[str, Any]) -> list[str]:
    """A correct episode as Hermes-format assistant turns: one call per turn, then the answer."""
    turns = [
        f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        for call in task["reward_spec"]["gold_calls"]
    ]
    turns.append(f"The result is {task['reward_spec']['answer']}.")
    return turns

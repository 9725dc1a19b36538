"""Seeded generator of arithmetic tasks for ``tool_envs/Calculator-v0``.

Each task is an expression of one to three operations on small integers whose every
intermediate result is an integer, so that the gold tool calls (one per operation, in order)
replay exactly and the answer is unambiguous.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tool_envs.core.once import built_once

ENV_ID = "tool_envs/Calculator-v0"
_MAX_REPEATS = 10_000  # draws in a row that found only known expressions: the space is spent

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
    sizes: dict[str, int] | None = None,
    seed: int = 0,
    *,
    difficulty: int | None = None,
    exclude: Iterable[str] = (),
) -> dict[str, list[dict[str, Any]]]:
    """Task rows per split; no expression appears in two splits (or twice in one).

    ``difficulty`` (1-3 operations) makes every row that many operations instead of the default
    mix; ``exclude`` lists expressions no split may hold (e.g. a held-out set's). Asking for more
    distinct problems than exist (about 21,000 of one operation) raises ``ValueError``.
    """
    sizes = sizes or {"train": 1000, "test": 200}
    if difficulty not in (None, 1, 2, 3):
        raise ValueError(f"difficulty must be 1, 2, 3 or None (a mix), got {difficulty!r}")
    rng = np.random.default_rng(seed)
    seen: set[str] = set(exclude)
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, size in sizes.items():
        rows: list[dict[str, Any]] = []
        repeats = 0
        while len(rows) < size:
            steps = difficulty or int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
            expression, answer, gold_calls = _problem(rng, steps)
            if expression in seen:
                repeats += 1
                if repeats > _MAX_REPEATS:
                    drawn = sum(map(len, splits.values())) + len(rows)
                    asked = sum(sizes.values())
                    raise ValueError(
                        f"only {drawn} distinct problems drawn before {_MAX_REPEATS} repeats in a "
                        f"row (difficulty {difficulty}); ask for fewer than {asked} tasks"
                    )
                continue
            repeats = 0
            seen.add(expression)
            rows.append(_row(rng, expression, answer, gold_calls, split, len(rows), steps))
        splits[split] = rows
    return splits


@built_once
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

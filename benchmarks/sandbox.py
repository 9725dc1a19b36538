"""Sandbox speed: trivial-run latency, and bulk HumanEval-style checking against a baseline.

The baseline is what a plain harness does: one ``subprocess.run([python, "-c", program])`` per
task, with the same parallelism and the same interpreter as the sandbox's workers. The tasks
below are small ones written for this benchmark in HumanEval's format (task_id, prompt,
canonical_solution, test, entry_point), so nothing is downloaded.

    .venv/bin/python benchmarks/sandbox.py [--repeats 200] [--parallel 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from tool_envs.code.sandbox import RunRequest, Sandbox, SandboxPool, detect_isolation

# (entry_point, signature and docstring body, solution body, assertions on `candidate`)
_SPECS: list[tuple[str, str, str, str]] = [
    ("add", "a: int, b: int", "return a + b", "candidate(2, 3) == 5; candidate(-1, 1) == 0"),
    ("square", "x: int", "return x * x", "candidate(4) == 16; candidate(0) == 0"),
    ("is_even", "n: int", "return n % 2 == 0", "candidate(2); not candidate(7)"),
    ("reverse", "s: str", "return s[::-1]", "candidate('abc') == 'cba'; candidate('') == ''"),
    ("count_vowels", "s: str", "return sum(c in 'aeiou' for c in s.lower())",
     "candidate('Hello') == 2; candidate('xyz') == 0"),
    ("fact", "n: int", "r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
     "candidate(5) == 120; candidate(0) == 1"),
    ("fib", "n: int", "a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
     "candidate(10) == 55; candidate(1) == 1"),
    ("max_of", "xs: list", "return max(xs)", "candidate([1, 9, 3]) == 9; candidate([-2]) == -2"),
    ("min_of", "xs: list", "return min(xs)", "candidate([4, 2, 8]) == 2"),
    ("total", "xs: list", "return sum(xs)", "candidate([1, 2, 3]) == 6; candidate([]) == 0"),
    ("mean", "xs: list", "return sum(xs) / len(xs)", "candidate([1, 2, 3]) == 2"),
    ("is_palindrome", "s: str", "return s == s[::-1]", "candidate('aba'); not candidate('ab')"),
    ("upper_first", "s: str", "return s[:1].upper() + s[1:]", "candidate('abc') == 'Abc'"),
    ("count_words", "s: str", "return len(s.split())", "candidate('a b  c') == 3"),
    ("unique", "xs: list", "return sorted(set(xs))", "candidate([3, 1, 3, 2]) == [1, 2, 3]"),
    ("flatten", "xss: list", "return [x for xs in xss for x in xs]",
     "candidate([[1], [2, 3], []]) == [1, 2, 3]"),
    ("gcd", "a: int, b: int", "while b:\n        a, b = b, a % b\n    return a",
     "candidate(12, 18) == 6; candidate(7, 3) == 1"),
    ("lcm", "a: int, b: int", "import math\n    return a * b // math.gcd(a, b)",
     "candidate(4, 6) == 12"),
    ("is_prime", "n: int",
     "if n < 2:\n        return False\n    return all(n % d for d in range(2, int(n ** 0.5) + 1))",
     "candidate(13); not candidate(1); not candidate(15)"),
    ("primes_below", "n: int",
     "return [p for p in range(2, n) if all(p % d for d in range(2, int(p ** 0.5) + 1))]",
     "candidate(12) == [2, 3, 5, 7, 11]"),
    ("digit_sum", "n: int", "return sum(int(d) for d in str(abs(n)))",
     "candidate(123) == 6; candidate(-45) == 9"),
    ("count_char", "s: str, c: str", "return s.count(c)", "candidate('banana', 'a') == 3"),
    ("capitalize_words", "s: str", "return ' '.join(w.capitalize() for w in s.split())",
     "candidate('hello big world') == 'Hello Big World'"),
    ("to_binary", "n: int", "return bin(n)[2:]", "candidate(5) == '101'; candidate(0) == '0'"),
    ("from_binary", "s: str", "return int(s, 2)", "candidate('1010') == 10"),
    ("second_largest", "xs: list", "return sorted(set(xs))[-2]", "candidate([1, 5, 3, 5]) == 3"),
    ("rotate", "xs: list, k: int", "k %= len(xs) or 1\n    return xs[-k:] + xs[:-k]",
     "candidate([1, 2, 3, 4], 1) == [4, 1, 2, 3]"),
    ("chunks", "xs: list, n: int", "return [xs[i:i + n] for i in range(0, len(xs), n)]",
     "candidate([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]"),
    ("anagram", "a: str, b: str", "return sorted(a) == sorted(b)",
     "candidate('listen', 'silent'); not candidate('ab', 'abc')"),
    ("char_freq", "s: str",
     "d = {}\n    for c in s:\n        d[c] = d.get(c, 0) + 1\n    return d",
     "candidate('aab') == {'a': 2, 'b': 1}"),
    ("clamp", "x: int, lo: int, hi: int", "return max(lo, min(hi, x))",
     "candidate(5, 0, 3) == 3; candidate(-1, 0, 3) == 0"),
    ("running_sum", "xs: list",
     "out, t = [], 0\n    for x in xs:\n        t += x\n        out.append(t)\n    return out",
     "candidate([1, 2, 3]) == [1, 3, 6]"),
    ("dedupe_keep_order", "xs: list", "return list(dict.fromkeys(xs))",
     "candidate([3, 1, 3, 2, 1]) == [3, 1, 2]"),
    ("vowel_strip", "s: str", "return ''.join(c for c in s if c.lower() not in 'aeiou')",
     "candidate('Education') == 'dctn'"),
    ("power_of_two", "n: int", "return n > 0 and n & (n - 1) == 0",
     "candidate(8); not candidate(6); not candidate(0)"),
    ("median", "xs: list",
     "s = sorted(xs)\n    m = len(s) // 2\n"
     "    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2",
     "candidate([3, 1, 2]) == 2; candidate([1, 2, 3, 4]) == 2.5"),
    ("count_positive", "xs: list", "return sum(1 for x in xs if x > 0)",
     "candidate([-1, 2, 3, 0]) == 2"),
    ("caesar", "s: str, k: int",
     "return ''.join(chr((ord(c) - 97 + k) % 26 + 97) if c.islower() else c for c in s)",
     "candidate('abz', 1) == 'bca'"),
    ("matrix_transpose", "m: list", "return [list(r) for r in zip(*m)]",
     "candidate([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]"),
    ("dot", "a: list, b: list", "return sum(x * y for x, y in zip(a, b))",
     "candidate([1, 2, 3], [4, 5, 6]) == 32"),
    ("longest_word", "s: str", "return max(s.split(), key=len)",
     "candidate('a quick brown fox') == 'quick'"),
    ("is_sorted", "xs: list", "return all(a <= b for a, b in zip(xs, xs[1:]))",
     "candidate([1, 2, 2, 3]); not candidate([2, 1])"),
    ("merge_sorted", "a: list, b: list", "return sorted(a + b)",
     "candidate([1, 4], [2, 3]) == [1, 2, 3, 4]"),
    ("binary_search", "xs: list, t: int",
     "import bisect\n    i = bisect.bisect_left(xs, t)\n"
     "    return i if i < len(xs) and xs[i] == t else -1",
     "candidate([1, 3, 5, 7], 5) == 2; candidate([1, 3], 2) == -1"),
    ("triangle_area", "b: float, h: float", "return b * h / 2", "candidate(4, 3) == 6"),
    ("celsius", "f: float", "return (f - 32) * 5 / 9", "abs(candidate(212) - 100) < 1e-9"),
    ("hamming", "a: str, b: str", "return sum(x != y for x, y in zip(a, b))",
     "candidate('karolin', 'kathrin') == 3"),
    ("roman", "n: int",
     "vals = [(10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]\n    out = ''\n"
     "    for v, r in vals:\n        while n >= v:\n            out += r\n            n -= v\n"
     "    return out",
     "candidate(14) == 'XIV'; candidate(9) == 'IX'"),
    ("collatz_steps", "n: int",
     "steps = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n"
     "        steps += 1\n    return steps",
     "candidate(6) == 8; candidate(1) == 0"),
    ("balanced", "s: str",
     "depth = 0\n    for c in s:\n        depth += {'(': 1, ')': -1}.get(c, 0)\n"
     "        if depth < 0:\n            return False\n    return depth == 0",
     "candidate('(()())'); not candidate('())(')"),
]  # fmt: skip


def human_eval_tasks() -> list[dict[str, str]]:
    """The specs above as HumanEval rows."""
    rows = []
    for i, (name, args, body, checks) in enumerate(_SPECS):
        prompt = f'def {name}({args}):\n    """Benchmark task {i}: {name}."""\n'
        test = "def check(candidate):\n" + "".join(
            f"    assert {c.strip()}\n" for c in checks.split("; ")
        )
        rows.append(
            {
                "task_id": f"SandboxBench/{i}",
                "prompt": prompt,
                "canonical_solution": f"    {body}\n",
                "test": test,
                "entry_point": name,
            }
        )
    return rows


def program(task: dict[str, str]) -> str:
    """What HumanEval's harness runs for one task."""
    return (
        task["prompt"]
        + task["canonical_solution"]
        + "\n"
        + task["test"]
        + f"\ncheck({task['entry_point']})\n"
    )


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the task set")
    args = parser.parse_args()

    report = detect_isolation()
    python = report.interpreter
    print(report.describe())
    print()

    snippet = "x = sum(range(10))\nassert x == 45\n"
    with Sandbox() as sandbox:
        sandbox.start()
        warm_ms = median_ms(lambda: sandbox.run(snippet), args.repeats)
        level = sandbox.isolation
    base_ms = median_ms(
        lambda: subprocess.run([python, "-c", snippet], capture_output=True, check=True),
        max(20, args.repeats // 4),
    )

    tasks = human_eval_tasks() * args.rounds
    programs = [program(t) for t in tasks]

    def baseline_one(code: str) -> bool:
        proc = subprocess.run([python, "-c", code], capture_output=True, timeout=10)
        return proc.returncode == 0

    with ThreadPoolExecutor(args.parallel) as ex:
        start = time.perf_counter()
        base_pass = sum(ex.map(baseline_one, programs))
        base_s = time.perf_counter() - start

    with SandboxPool(args.parallel) as pool:
        pool.start()
        start = time.perf_counter()
        results = pool.map(RunRequest(code=c, time_limit_s=10) for c in programs)
        pool_s = time.perf_counter() - start
    pool_pass = sum(r.ok for r in results)

    n = len(programs)
    rows = [
        ("trivial snippet, subprocess.run per call (no isolation)", f"{base_ms:.1f} ms", "-"),
        (f"trivial snippet, warm sandbox ({level})", f"{warm_ms:.1f} ms", "<= 5 ms"),
        (
            f"{n} HumanEval-format tasks, subprocess.run x{args.parallel} (no isolation)",
            f"{base_s:.2f} s ({n / base_s:.0f}/s), {base_pass}/{n} pass",
            "-",
        ),
        (
            f"{n} HumanEval-format tasks, SandboxPool({args.parallel}) ({level})",
            f"{pool_s:.2f} s ({n / pool_s:.0f}/s), {pool_pass}/{n} pass",
            ">= 5x",
        ),
        ("bulk speed-up", f"{base_s / pool_s:.1f}x", ">= 5x"),
    ]
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    print(f"| {'measurement':<{width}} | {'result':>{vwidth}} | goal    |")
    print(f"|{'-' * (width + 2)}|{'-' * (vwidth + 1)}:|---------|")
    for name, value, goal in rows:
        print(f"| {name:<{width}} | {value:>{vwidth}} | {goal:<7} |")


if __name__ == "__main__":
    main()

"""Code-benchmark loaders: small files in each public schema, loaded and judged for real.

The problems below are written for these tests in the shape of each benchmark (field names and
encodings as the public datasets use them). Every converted row must validate, its reference
solution must pass its own tests in the real sandbox, and a wrong solution must fail.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("the code sandbox needs Linux", allow_module_level=True)

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from code_helpers import always_equal_solution

from tool_envs.code.judge import run_tests
from tool_envs.code.loaders import (
    FORMATS,
    SkippedTasksWarning,
    detect_format,
    load_code_tasks,
)
from tool_envs.code.sandbox import Sandbox, SandboxUnavailable
from tool_envs.code.spec import parse_reward_spec
from tool_envs.data import validate_row
from tool_envs.errors import TaskRowError

pytestmark = [
    pytest.mark.filterwarnings("ignore::tool_envs.code.loaders.SkippedTasksWarning"),
    pytest.mark.usefixtures("offline_datasets"),
]


def _lcb_compress(value: Any) -> str:
    """How LiveCodeBench stores private tests: base64(zlib(pickle(json string)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(value)))).decode()


HUMANEVAL = [
    {
        "task_id": "Demo/0",
        "entry_point": "count_vowels",
        "prompt": 'def count_vowels(word: str) -> int:\n    """Count the vowels (a, e, i, o, u, '
        'in either case) in word.\n    >>> count_vowels("Banana")\n    3\n    >>> '
        'count_vowels("rhythm")\n    0\n    """\n',
        "canonical_solution": '    return sum(ch in "aeiouAEIOU" for ch in word)\n',
        "test": '\n\nMETADATA = {"author": "tests"}\n\n\ndef check(candidate):\n'
        '    assert candidate("Banana") == 3\n    assert candidate("rhythm") == 0\n'
        '    assert candidate("") == 0\n    assert candidate("AEIOUxyz") == 5\n',
    },
    {
        "task_id": "Demo/1",
        "entry_point": "running_max",
        "prompt": "from typing import List\n\n\ndef running_max(numbers: List[int]) -> List[int]:\n"
        '    """Return the largest value seen so far at each position.\n'
        '    >>> running_max([1, 3, 2, 5, 4])\n    [1, 3, 3, 5, 5]\n    """\n',
        "canonical_solution": "    result, best = [], None\n    for n in numbers:\n"
        "        best = n if best is None else max(best, n)\n        result.append(best)\n"
        "    return result\n",
        "test": "\n\ndef check(candidate):\n    assert candidate([]) == []\n"
        "    assert candidate([1, 3, 2, 5, 4]) == [1, 3, 3, 5, 5]\n"
        "    assert candidate([-2, -5, 0]) == [-2, -2, 0]\n",
    },
    {
        "task_id": "Demo/2",
        "entry_point": "halve",
        "prompt": 'def halve(n: int) -> float:\n    """Half of n.\n'
        '    >>> halve(3)\n    1.5\n    """\n',
        "canonical_solution": "    return n / 2\n",
        "test": "\n\ndef check(candidate):\n    assert candidate(3) == 1.5\n"
        "    assert candidate(-4) == -2\n",
    },
]

MBPP = [
    {
        "task_id": 901,
        "text": "Write a function to find the second smallest distinct number in a list.",
        "code": "def second_smallest(numbers):\n    distinct = sorted(set(numbers))\n"
        "    return distinct[1] if len(distinct) > 1 else None\n",
        "test_list": [
            "assert second_smallest([4, 1, 3, 1]) == 3",
            "assert second_smallest([2, 2]) is None",
            "assert second_smallest([-1, 0, 5]) == 0",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 902,
        "text": "Write a function to list the words of a sentence longer than n letters.",
        "code": "def long_words(sentence, n):\n"
        "    return [w for w in sentence.split() if len(w) > n]\n",
        "test_list": [
            "assert len(long_words(SENTENCE, 4)) == 3",
            "assert long_words(SENTENCE, 5) == []",
            "assert long_words('a bb ccc', 1) == ['bb', 'ccc']",
        ],
        "test_setup_code": 'SENTENCE = "the quick brown fox jumps"',
        "challenge_test_list": ["assert long_words('', 0) == []"],
    },
]

MBPP_SANITIZED = [
    {
        "source_file": "demo.jsonl",
        "task_id": 903,
        "prompt": "Write a function to compute the area of a circle from its radius.",
        "code": "import math\n\ndef circle_area(r):\n    return math.pi * r * r\n",
        "test_imports": ["import math"],
        "test_list": [
            "assert math.isclose(circle_area(2), 12.566, rel_tol=1e-3)",
            "assert circle_area(0) == 0",
        ],
    },
]

APPS = [
    {
        "problem_id": 4001,
        "question": "The first line holds n, the second n integers. Print their sum.",
        "solutions": json.dumps(["n = int(input())\nprint(sum(map(int, input().split())))\n"]),
        "input_output": json.dumps(
            {"inputs": ["3\n1 2 3\n", "1\n-5\n"], "outputs": ["6\n", "-5\n"]}
        ),
        "difficulty": "introductory",
        "url": "https://example.com/problems/4001",
        "starter_code": "",
    },
    {
        "problem_id": 4002,
        "question": "Return the digits of n in reverse order, as a list of ints.",
        "solutions": json.dumps(
            ["def reverse_digits(n):\n    return [int(d) for d in str(n)[::-1]]\n"]
        ),
        # APPS wraps most return values in a one-element list, but not all.
        "input_output": json.dumps(
            {
                "fn_name": "reverse_digits",
                "inputs": [[123], [7], [40]],
                "outputs": [[[3, 2, 1]], [[7]], [0, 4]],
            }
        ),
        "difficulty": "introductory",
        "url": "https://example.com/problems/4002",
        "starter_code": "def reverse_digits(n):\n\t",
    },
    {
        "problem_id": 4003,
        "question": "Return the largest gap between neighbours once nums is sorted (0 if none).",
        "solutions": json.dumps(
            [
                "from typing import List\n\nclass Solution:\n"
                "    def maxGap(self, nums: List[int]) -> int:\n        s = sorted(nums)\n"
                "        return max((b - a for a, b in zip(s, s[1:])), default=0)\n"
            ]
        ),
        "input_output": json.dumps(
            {"fn_name": "maxGap", "inputs": [[[1, 9, 3]], [[4]]], "outputs": [[6], 0]}
        ),
        "difficulty": "interview",
        "url": "https://example.com/problems/4003",
        "starter_code": "class Solution:\n    def maxGap(self, nums: List[int]) -> int:\n        ",
    },
    {  # APPS has problems whose tests were never published: skipped and counted.
        "problem_id": 4004,
        "question": "A problem without tests.",
        "solutions": "",
        "input_output": "",
        "difficulty": "competition",
        "url": "https://example.com/problems/4004",
        "starter_code": "",
    },
]

_PY3_PRODUCTS = (
    "t = int(input())\nfor _ in range(t):\n    a, b = map(int, input().split())\n    print(a * b)\n"
)
CODE_CONTESTS = [
    {
        "name": "demo_a_products",
        "description": "Read t, then t lines with two integers a and b. Print a*b for each.",
        "public_tests": {"input": ["2\n2 3\n4 5\n"], "output": ["6\n20\n"]},
        "private_tests": {"input": ["1\n0 7\n"], "output": ["0\n"]},
        "generated_tests": {
            "input": ["3\n1 1\n2 2\n3 3\n", "1\n-2 3\n", "1\n10 10\n"],
            "output": ["1\n4\n9\n", "-6\n", "100\n"],
        },
        # Language 1 is Python 2 (this one is not valid Python 3); 3 is Python 3.
        "solutions": {
            "language": [1, 3],
            "solution": [
                "t = input()\nfor _ in range(t):\n    a, b = map(int, raw_input().split())\n"
                "    print a * b\n",
                _PY3_PRODUCTS,
            ],
        },
        "difficulty": 7,
    },
    {
        "name": "demo_b_no_tests",
        "description": "Nothing to grade this one with.",
        "public_tests": {"input": [], "output": []},
        "private_tests": {"input": [], "output": []},
        "generated_tests": {"input": [], "output": []},
        "solutions": {"language": [], "solution": []},
        "difficulty": 1,
    },
    {
        "name": "demo_c_reverse",
        "description": "Print the input line reversed.",
        "public_tests": {"input": ["abc\n"], "output": ["cba\n"]},
        "private_tests": {"input": ["x y\n"], "output": ["y x\n"]},
        "generated_tests": {"input": [], "output": []},
        "solutions": {"language": [3], "solution": ["print(input()[::-1])\n"]},
        "difficulty": 1,
    },
]

LIVECODEBENCH = [
    {
        "question_title": "Count Evens",
        "question_content": "Read N and then N integers. Print how many of them are even.",
        "platform": "atcoder",
        "question_id": "demo-abc001",
        "contest_id": "demo",
        "contest_date": "2024-01-01T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(
            [{"input": "4\n1 2 3 4\n", "output": "2\n", "testtype": "stdin"}]
        ),
        "private_test_cases": json.dumps(
            [
                {"input": "1\n7\n", "output": "0\n", "testtype": "stdin"},
                {"input": "3\n2 4 6\n", "output": "3\n", "testtype": "stdin"},
            ]
        ),
        "metadata": "{}",
    },
    {
        "question_title": "Rotate Left",
        "question_content": "Given nums and k, return nums rotated left by k positions.",
        "platform": "leetcode",
        "question_id": "demo-9001",
        "contest_id": "demo",
        "contest_date": "2024-01-02T00:00:00",
        "starter_code": "class Solution:\n    def rotateLeft(self, nums: List[int], k: int) "
        "-> List[int]:\n        ",
        "difficulty": "medium",
        "public_test_cases": json.dumps(
            [{"input": "[1, 2, 3, 4]\n1", "output": "[2, 3, 4, 1]", "testtype": "functional"}]
        ),
        "private_test_cases": _lcb_compress(
            [
                {"input": "[1, 2, 3]\n3", "output": "[1, 2, 3]", "testtype": "functional"},
                {"input": "[5, 6]\n5", "output": "[6, 5]", "testtype": "functional"},
            ]
        ),
        "metadata": json.dumps({"func_name": "rotateLeft"}),
    },
]
LCB_SOLUTIONS = {
    "demo-abc001": "input()\nprint(sum(int(x) % 2 == 0 for x in input().split()))\n",
    "demo-9001": "from typing import List\n\nclass Solution:\n"
    "    def rotateLeft(self, nums: List[int], k: int) -> List[int]:\n"
    "        k %= len(nums)\n        return nums[k:] + nums[:k]\n",
}

SEED = [
    {
        "task_id": "seed-1",
        "prompt": "Write clamp(x, lo, hi): x limited to the range [lo, hi].",
        "starter_code": "def clamp(x, lo, hi):\n    ...\n",
        "tests": [
            "assert clamp(5, 0, 3) == 3",
            "assert clamp(-1, 0, 3) == 0",
            "assert clamp(2, 0, 3) == 2",
        ],
        "reference_solution": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
        "metadata": {"entry_point": "clamp", "difficulty": "easy"},
    },
    {
        "task_id": "seed-2",
        "prompt": "Write unique_words(text): the distinct words of text.",
        "starter_code": "",
        # The first call is a builtin; the entry point is found inside it.
        "tests": [
            "assert sorted(unique_words('a b a')) == ['a', 'b']",
            "assert unique_words('') == set()",
        ],
        "reference_solution": "def unique_words(text):\n    return set(text.split())\n",
        "metadata": {"difficulty": "medium"},
    },
]

SEED_STDIO = [
    {
        "task_id": "seed-io-1",
        "prompt": "Read two integers on one line and print the larger.",
        "starter_code": "",
        "tests": [{"input": "3 9\n", "output": "9\n"}, {"input": "-1 -4\n", "output": "-1"}],
        "reference_solution": "print(max(map(int, input().split())))\n",
        "metadata": {"topic": "io"},
    },
]

# name -> (format, rows)
FIXTURES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "humaneval": ("humaneval", HUMANEVAL),
    "mbpp": ("mbpp", MBPP),
    "mbpp_sanitized": ("mbpp", MBPP_SANITIZED),
    "apps": ("apps", APPS),
    "code_contests": ("code_contests", CODE_CONTESTS),
    "livecodebench": ("livecodebench", LIVECODEBENCH),
    "seed": ("seed", SEED),
    "seed_stdio": ("seed", SEED_STDIO),
}


@pytest.fixture(scope="module")
def sandbox():
    try:
        with Sandbox() as sb:
            yield sb
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox on this machine: {exc}")


def _write(folder: Path, name: str, rows: list[dict[str, Any]]) -> dict[str, Path]:
    """The same rows as a .jsonl file, a .parquet file and a dataset folder (split 'test')."""
    jsonl = folder / f"{name}.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    parquet = folder / f"{name}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    repo = folder / f"{name}_repo"
    repo.mkdir()
    (repo / "test.jsonl").write_text(jsonl.read_text())
    return {"jsonl": jsonl, "parquet": parquet, "folder": repo}


def _wrong_solution(entry: str | None) -> str:
    if entry is None:
        return "print('wrong answer')\n"
    return (
        f"def {entry}(*args, **kwargs):\n    return None\n\n"
        f"class Solution:\n    def {entry}(self, *args, **kwargs):\n        return None\n"
    )


# -- loading from every kind of source ---------------------------------------------------------


@pytest.mark.parametrize("name", list(FIXTURES))
def test_every_container_gives_the_same_valid_rows(name, tmp_path):
    fmt, raw = FIXTURES[name]
    expected = load_code_tasks(raw, format=fmt)
    assert expected and all(row["env_id"] == "tool_envs/CodeExec-v0" for row in expected)
    for kind, path in _write(tmp_path, name, raw).items():
        assert load_code_tasks(path) == expected, kind  # format="auto", split=None
        assert load_code_tasks(str(path), format=fmt) == expected, kind
    dataset = datasets.Dataset.from_list(raw)
    assert load_code_tasks(dataset) == expected
    assert load_code_tasks(datasets.DatasetDict({"test": dataset})) == expected  # the only split
    for index, row in enumerate(expected):
        assert validate_row(row, index=index) == row
        assert row["extra_info"]["source"] == fmt


@pytest.mark.parametrize("name", list(FIXTURES))
def test_detect_format(name):
    fmt, raw = FIXTURES[name]
    assert detect_format(raw[0]) == fmt


def test_unknown_columns_name_every_known_format():
    with pytest.raises(ValueError, match="cannot tell the code-task format") as info:
        load_code_tasks([{"question": "?", "answer": 42}])
    assert all(name in str(info.value) for name in FORMATS)
    assert "input_output" in str(info.value)  # the identifying columns are listed too


# -- the real check: reference solutions pass, wrong ones fail ---------------------------------


@pytest.mark.parametrize("name", list(FIXTURES))
def test_reference_solutions_pass_and_wrong_solutions_fail(name, sandbox):
    fmt, raw = FIXTURES[name]
    rows = load_code_tasks(raw, format=fmt, time_limit_s=3.0)
    for row in rows:
        spec = parse_reward_spec(row["reward_spec"])
        suite, info = spec.tests, row["extra_info"]
        reference = info.get("reference_solution") or LCB_SOLUTIONS[info["id"]]
        for tests in (suite.graded, suite.visible):
            if not tests:
                continue
            report = run_tests(sandbox, reference, suite, tests, time_limit_s=3.0)
            assert report.all_passed, (info["id"], report)
        wrong = run_tests(sandbox, _wrong_solution(suite.entry_point), suite, suite.graded)
        assert not wrong.all_passed, info["id"]


def test_humaneval_doctest_examples_become_visible_asserts(sandbox):
    rows = {
        row["extra_info"]["id"]: row for row in load_code_tasks(HUMANEVAL, doctest_visible=True)
    }
    visible = {key: row["reward_spec"]["tests"]["visible"] for key, row in rows.items()}
    assert visible["Demo/0"] == [
        'assert count_vowels("Banana") == 3',
        'assert count_vowels("rhythm") == 0',
    ]
    assert visible["Demo/1"] == ["assert running_max([1, 3, 2, 5, 4]) == [1, 3, 3, 5, 5]"]
    assert visible["Demo/2"] == []  # float output: exact == would be fragile, so left out
    for key in ("Demo/0", "Demo/1"):
        suite = parse_reward_spec(rows[key]["reward_spec"]).tests
        solution = rows[key]["extra_info"]["reference_solution"]
        assert run_tests(sandbox, solution, suite, suite.visible).all_passed
    assert load_code_tasks(HUMANEVAL)[0]["reward_spec"]["tests"]["visible"] == []  # off: default


# -- what each converter puts where -----------------------------------------------------------


def test_humaneval_and_mbpp_row_contents():
    first = load_code_tasks(HUMANEVAL)[0]
    tests = first["reward_spec"]["tests"]
    assert tests["entry_point"] == "count_vowels"
    assert tests["hidden"][0].endswith("\ncheck(count_vowels)\n")
    assert first["extra_info"]["starter_code"] == HUMANEVAL[0]["prompt"]
    assert "Write the function `count_vowels`." in first["prompt"][1]["content"]

    long_words = load_code_tasks(MBPP)[1]["reward_spec"]["tests"]
    assert long_words["entry_point"] == "long_words"
    assert long_words["setup"] == MBPP[1]["test_setup_code"]
    assert long_words["visible"] == MBPP[1]["test_list"][:1]
    assert long_words["hidden"] == MBPP[1]["test_list"] + MBPP[1]["challenge_test_list"]
    circle = load_code_tasks(MBPP_SANITIZED)[0]
    assert circle["reward_spec"]["tests"]["entry_point"] == "circle_area"  # not math.isclose
    # The test imports run before the solution, in its namespace, as MBPP's harness runs them.
    assert circle["reward_spec"]["tests"]["prelude"] == "import math"
    assert circle["reward_spec"]["tests"]["setup"] == ""
    assert circle["prompt"][1]["content"].startswith(MBPP_SANITIZED[0]["prompt"])


def test_stdio_benchmarks_row_contents():
    apps = load_code_tasks(APPS)
    assert [row["reward_spec"]["tests"]["kind"] for row in apps] == ["stdio", "assert", "assert"]
    assert apps[0]["extra_info"]["difficulty"] == "introductory"
    assert apps[2]["reward_spec"]["tests"]["visible"] == [
        "assert _same(Solution().maxGap([1, 9, 3]), [6])"
    ]

    contests = load_code_tasks(CODE_CONTESTS)
    products = contests[0]
    assert products["extra_info"]["reference_solution"] == _PY3_PRODUCTS  # language 3, not 1
    assert len(products["reward_spec"]["tests"]["visible"]) == 1
    assert len(products["reward_spec"]["tests"]["hidden"]) == 5  # public + private + generated
    capped = load_code_tasks(CODE_CONTESTS, max_tests=2)[0]["reward_spec"]["tests"]
    assert len(capped["hidden"]) == 2 and len(capped["visible"]) == 1

    lcb = load_code_tasks(LIVECODEBENCH)
    assert lcb[0]["prompt"][1]["content"].startswith("Count Evens\n\nRead N")
    functional = lcb[1]["reward_spec"]["tests"]
    assert functional["kind"] == "assert" and functional["entry_point"] == "rotateLeft"
    assert functional["visible"] == [
        "assert Solution().rotateLeft([1, 2, 3, 4], 1) == [2, 3, 4, 1]"
    ]
    assert len(functional["hidden"]) == 3  # the public test + two decompressed private ones
    assert lcb[1]["extra_info"]["platform"] == "leetcode"

    seed = load_code_tasks(SEED)
    assert seed[1]["reward_spec"]["tests"]["entry_point"] == "unique_words"  # not sorted()
    assert seed[0]["extra_info"]["metadata"] == {"entry_point": "clamp", "difficulty": "easy"}
    assert load_code_tasks(SEED_STDIO)[0]["reward_spec"]["tests"]["kind"] == "stdio"


def test_compressed_json_without_pickle_is_read():
    row = dict(LIVECODEBENCH[0])
    cases = [{"input": "1\n2\n", "output": "1\n", "testtype": "stdin"}]
    row["private_test_cases"] = base64.b64encode(zlib.compress(json.dumps(cases).encode())).decode()
    hidden = load_code_tasks([row])[0]["reward_spec"]["tests"]["hidden"]
    assert hidden[-1] == {"input": "1\n2\n", "output": "1\n"}


def test_problems_without_tests_are_skipped_and_counted():
    with pytest.warns(SkippedTasksWarning, match=r"skipped 1 of 4 apps problems .*\(rows 3\)"):
        assert len(load_code_tasks(APPS)) == 3
    with pytest.warns(SkippedTasksWarning, match=r"skipped 1 of 3 code_contests"):
        assert len(load_code_tasks(CODE_CONTESTS)) == 2


def test_limit_and_option_errors():
    assert len(load_code_tasks(MBPP, limit=1)) == 1
    assert load_code_tasks([]) == []
    with pytest.raises(ValueError, match=r"unknown format 'mbpp2'.*humaneval"):
        load_code_tasks(MBPP, format="mbpp2")
    with pytest.raises(TypeError, match="max_test"):
        load_code_tasks(MBPP, max_test=3)
    with pytest.raises(ValueError, match="max_tests must be"):
        load_code_tasks(MBPP, max_tests=0)


# -- sources: splits, Hub ids ------------------------------------------------------------------


def test_folder_with_several_splits_needs_a_split(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps({**MBPP[1], "task_id": 1}) + "\n")
    (tmp_path / "test.jsonl").write_text(json.dumps(MBPP[1]) + "\n")
    with pytest.raises(ValueError, match=r"has splits .*train.*pass split="):
        load_code_tasks(tmp_path)
    [row] = load_code_tasks(tmp_path, split="test")
    assert row["extra_info"]["id"] == "902"
    with pytest.raises(ValueError, match="config= only applies to Hub ids"):
        load_code_tasks(tmp_path, split="test", config="sanitized")


def test_hub_ids_take_the_real_load_dataset_path():
    # Offline here, so the real call reports that the Hub cannot be reached.
    with pytest.raises(ConnectionError, match="tool-envs-tests/no-such-code-set"):
        load_code_tasks("tool-envs-tests/no-such-code-set", split="test")
    with pytest.raises(FileNotFoundError):
        load_code_tasks("./no/such/file.jsonl")


# -- malformed rows: the error names the row and the field ------------------------------------


def _changed(rows: list[dict[str, Any]], **changes: Any) -> list[dict[str, Any]]:
    """A copy of ``rows`` whose row 1 is broken; a value of ``...`` removes the field."""
    bad = dict(rows[1])
    for key, value in changes.items():
        if value is ...:
            bad.pop(key)
        else:
            bad[key] = value
    return [rows[0], bad, *rows[2:]]


_NO_OUTPUTS = json.dumps({"inputs": ["1"], "outputs": []})
_BARE_ARG = json.dumps({"fn_name": "f", "inputs": [5], "outputs": [5]})
_BAD_FN = json.dumps({"fn_name": "f(x)", "inputs": [[5]], "outputs": [5]})
_STDIN_CASE = json.dumps([{"input": "1", "output": "1", "testtype": "stdin"}])
_MIXED = ["assert clamp(1, 0, 2) == 1", {"input": "", "output": "1"}]
LCB = LIVECODEBENCH
BAD_ROWS = [
    ("humaneval", HUMANEVAL, {"entry_point": ...}, "entry_point", "missing"),
    ("humaneval", HUMANEVAL, {"entry_point": "run max"}, "entry_point", "not a Python identifier"),
    ("mbpp", MBPP, {"test_list": "assert f(1) == 1"}, "test_list", "expected list or tuple"),
    ("mbpp", MBPP, {"test_list": ["assert True"]}, "test_list", "no function call"),
    ("mbpp", MBPP, {"code": ...}, "code", "missing"),
    ("apps", APPS, {"input_output": "{not json"}, "input_output", "not valid JSON"),
    ("apps", APPS, {"input_output": _NO_OUTPUTS}, "input_output", "same length"),
    ("apps", APPS, {"input_output": _BARE_ARG}, "input_output", "list of arguments"),
    ("apps", APPS, {"solutions": "[unterminated"}, "solutions", "not valid JSON"),
    ("apps", APPS, {"input_output": _BAD_FN}, "input_output", "not a Python identifier"),
    ("code_contests", CODE_CONTESTS, {"public_tests": {"input": ["1"]}}, "public_tests", "same"),
    ("code_contests", CODE_CONTESTS, {"description": ...}, "description", "missing"),
    ("livecodebench", LCB, {"public_test_cases": '[{"input": 1}]'}, "public_test_cases", "a list"),
    ("livecodebench", LCB, {"private_test_cases": "%%%"}, "private_test_cases", "neither JSON"),
    ("livecodebench", LCB, {"metadata": "[1]"}, "metadata", "JSON object"),
    ("livecodebench", LCB, {"metadata": '{"func_name": "a-b"}'}, "metadata", "not a Python"),
    ("livecodebench", LCB, {"public_test_cases": _STDIN_CASE}, "public_test_cases", "mixes stdin"),
    ("seed", SEED, {"tests": _MIXED}, "tests", "all assert strings"),
    ("seed", SEED, {"tests": ["assert True"], "metadata": {}}, "tests", "give an entry_point"),
    ("seed", SEED, {"metadata": [1, 2]}, "metadata", "expected an object"),
]


@pytest.mark.parametrize(
    ("fmt", "rows", "changes", "field", "message"),
    BAD_ROWS,
    ids=[f"{fmt}-{field}-{i}" for i, (fmt, _, _, field, _) in enumerate(BAD_ROWS)],
)
def test_malformed_rows_name_the_row_and_field(fmt, rows, changes, field, message):
    with pytest.raises(TaskRowError, match=message) as info:
        load_code_tasks(_changed(rows, **changes), format=fmt)
    assert (info.value.index, info.value.field) == (1, field)
    assert str(info.value).startswith(f"row 1, field '{field}': ")


# -- what is compared is plain data (issue 30) -------------------------------------------------


@pytest.mark.parametrize("name", list(FIXTURES))
def test_an_always_equal_object_passes_no_test_of_any_loader(name, sandbox):
    """Call-based tasks refuse it; stdin/stdout tasks compare printed text, which it cannot fake."""
    fmt, raw = FIXTURES[name]
    for row in load_code_tasks(raw, format=fmt, time_limit_s=3.0):
        suite = parse_reward_spec(row["reward_spec"]).tests
        report = run_tests(sandbox, always_equal_solution(suite.entry_point), suite, suite.graded)
        assert report.passed == 0, (row["extra_info"]["id"], report)
        if suite.kind == "assert":
            assert all("object of class AlwaysEqual" in r.detail for r in report.results), report
        else:
            assert all("got 'always equal" in r.detail for r in report.results), report


def test_a_reference_that_defines_the_tested_class_may_return_objects(sandbox):
    row = {
        "task_id": 950,
        "text": "Write a class Pair holding two numbers, with a method total.",
        "code": "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "    def total(self):\n        return self.a + self.b\n",
        "test_list": ["assert Pair(1, 2).total() == 3", "assert Pair(2, 2).total() == 4"],
    }
    (converted,) = load_code_tasks([row], format="mbpp")
    assert converted["reward_spec"]["tests"]["returns"] == "any"
    suite = parse_reward_spec(converted["reward_spec"]).tests
    assert run_tests(sandbox, row["code"], suite, suite.graded).all_passed
    seed = load_code_tasks([{**SEED[0], "metadata": {"returns": "any"}}], format="seed")[0]
    assert seed["reward_spec"]["tests"]["returns"] == "any"  # a seed row may say so itself


class _RunsCode:
    """A pickle payload that would create a folder when unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.makedirs, (self.path,))


@pytest.mark.parametrize("payload", ["object", "list"])
def test_pickles_that_are_not_one_string_are_refused_not_loaded(payload, tmp_path):
    marker = tmp_path / "unpickled"
    value = _RunsCode(str(marker)) if payload == "object" else [{"input": "", "output": ""}]
    blob = base64.b64encode(zlib.compress(pickle.dumps(value))).decode()
    rows = _changed(LIVECODEBENCH, private_test_cases=blob)
    with pytest.raises(TaskRowError, match="refusing to unpickle untrusted data") as info:
        load_code_tasks(rows)
    assert (info.value.index, info.value.field) == (1, "private_test_cases")
    assert not marker.exists()


# -- HumanEval as it ships (issue 18) ---------------------------------------------------------

# Shaped like HumanEval/38: the prompt defines a helper that the tests call and the function
# itself may use; a correct completion need not repeat it.
HUMANEVAL_WITH_HELPER = {
    "task_id": "Demo/38",
    "entry_point": "decode_shift",
    "prompt": "def encode_shift(s: str):\n"
    '    """Shift every letter by 5 in the alphabet."""\n'
    '    return "".join(chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s)\n\n\n'
    "def decode_shift(s: str):\n"
    '    """Take a string encoded with encode_shift and return the decoded string."""\n',
    "canonical_solution": '    return "".join(chr(((ord(ch) - 5 - ord("a")) % 26) + ord("a"))'
    " for ch in s)\n",
    "test": "\n\ndef check(candidate):\n"
    "    for word in ('hello', 'xyz', 'abc'):\n"
    "        assert candidate(encode_shift(word)) == word\n",
}
# Correct solutions in the forms agents write them.
HELPER_SOLUTIONS = {
    "prompt-plus-body": HUMANEVAL_WITH_HELPER["prompt"]
    + HUMANEVAL_WITH_HELPER["canonical_solution"],
    "function-only": "def decode_shift(s):\n"
    '    return "".join(chr(((ord(c) - 5 - ord("a")) % 26) + ord("a")) for c in s)\n',
    "using-the-helper": "def decode_shift(s):\n"
    "    for _ in range(25):\n        s = encode_shift(s)\n    return s\n",
}


@pytest.mark.parametrize("form", list(HELPER_SOLUTIONS))
def test_humaneval_correct_solutions_pass_whatever_their_form(form, sandbox):
    row = load_code_tasks([HUMANEVAL_WITH_HELPER])[0]
    suite = parse_reward_spec(row["reward_spec"]).tests
    report = run_tests(sandbox, HELPER_SOLUTIONS[form], suite, suite.graded)
    assert report.all_passed, report
    wrong = run_tests(sandbox, "def decode_shift(s):\n    return s\n", suite, suite.graded)
    assert not wrong.all_passed


def test_humaneval_prompt_appears_once_and_gz_files_load(tmp_path):
    import gzip

    path = tmp_path / "HumanEval.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for raw in [*HUMANEVAL, HUMANEVAL_WITH_HELPER]:
            handle.write(json.dumps(raw) + "\n")
    rows = load_code_tasks(str(path))
    assert [row["extra_info"]["id"] for row in rows] == ["Demo/0", "Demo/1", "Demo/2", "Demo/38"]
    for raw, row in zip([*HUMANEVAL, HUMANEVAL_WITH_HELPER], rows, strict=True):
        assert row["prompt"][1]["content"].count(raw["prompt"].strip()) == 1
        assert row["reward_spec"]["tests"]["prelude"] == raw["prompt"]


# -- every loader: correct solutions pass whatever their form (issue 18) -----------------------

# Correct solutions in forms the official harnesses accept but that differ from the reference:
# (fixture, task id) -> {form: solution}. Each one also runs the visible tests.
OTHER_FORMS: dict[tuple[str, str], dict[str, str]] = {
    # MBPP's harness runs test_imports, solution and tests as one program.
    ("mbpp_sanitized", "903"): {
        "math-from-test-imports": "def circle_area(r):\n    return math.pi * r ** 2\n",
    },
    ("mbpp", "901"): {
        "loop": "def second_smallest(xs):\n    s = sorted(set(xs))\n"
        "    for x in s[1:2]:\n        return x\n",
    },
    # APPS calls Solution().fn if the solution defines class Solution, else the function.
    ("apps", "4002"): {
        "class-solution": "class Solution:\n    def reverse_digits(self, n):\n"
        "        return [int(d) for d in reversed(str(n))]\n",
        "tuple-result": "def reverse_digits(n):\n    return tuple(int(d) for d in str(n)[::-1])\n",
    },
    ("apps", "4003"): {
        "top-level-function": "def maxGap(nums):\n    s = sorted(nums)\n"
        "    return max([b - a for a, b in zip(s, s[1:])] or [0])\n",
        # The starter's signature and deque with no imports: the harness imports both.
        "starter-signature-without-imports": "class Solution:\n"
        "    def maxGap(self, nums: List[int]) -> int:\n"
        "        s = deque(sorted(nums))\n"
        "        return max((b - a for a, b in zip(s, list(s)[1:])), default=0)\n",
    },
    ("apps", "4001"): {
        "read-all-stdin": "import sys\ndata = sys.stdin.read().split()\n"
        "print(sum(map(int, data[1:])), end='  \\n\\n')\n",
    },
    ("code_contests", "demo_a_products"): {
        "read-all-stdin": "import sys\nnums = list(map(int, sys.stdin.read().split()))\n"
        "print('\\n'.join(str(a * b) for a, b in zip(nums[1::2], nums[2::2])))\n",
    },
    ("code_contests", "demo_c_reverse"): {
        "sys-stdin-readline": "import sys\n"
        "sys.stdout.write(sys.stdin.readline().rstrip('\\n')[::-1])\n",
    },
    ("livecodebench", "demo-abc001"): {
        "main-function": "def main():\n    n, *xs = map(int, open(0).read().split())\n"
        "    print(len([x for x in xs if x % 2 == 0]))\n\nmain()\n",
    },
    # LiveCodeBench's harness, like APPS's, takes either form and runs its imports first.
    ("livecodebench", "demo-9001"): {
        "top-level-function": "def rotateLeft(nums, k):\n    k %= len(nums)\n"
        "    return nums[k:] + nums[:k]\n",
        "starter-signature-without-imports": "class Solution:\n"
        "    def rotateLeft(self, nums: List[int], k: int) -> List[int]:\n"
        "        d = deque(nums)\n        d.rotate(-k)\n        return list(d)\n",
    },
    ("seed", "seed-1"): {
        "lambda": "clamp = lambda x, lo, hi: sorted((lo, x, hi))[1]\n",
    },
    ("seed_stdio", "seed-io-1"): {
        "split-and-compare": "a, b = input().split()\nprint(a if int(a) > int(b) else b)\n",
    },
}


def test_other_forms_cover_every_loader():
    assert {fixture for fixture, _ in OTHER_FORMS} | {"humaneval"} == set(FIXTURES)


@pytest.mark.parametrize(
    ("fixture", "task_id", "form"),
    [
        (fixture, task_id, form)
        for (fixture, task_id), forms in OTHER_FORMS.items()
        for form in forms
    ],
)
def test_correct_solutions_pass_whatever_their_form(fixture, task_id, form, sandbox):
    fmt, raw = FIXTURES[fixture]
    rows = {row["extra_info"]["id"]: row for row in load_code_tasks(raw, format=fmt)}
    suite = parse_reward_spec(rows[task_id]["reward_spec"]).tests
    solution = OTHER_FORMS[fixture, task_id][form]
    for tests in (suite.graded, suite.visible):
        report = run_tests(sandbox, solution, suite, tests, time_limit_s=3.0)
        assert report.all_passed, (task_id, form, report)


def test_call_based_forms_still_fail_when_wrong(sandbox):
    """The form shims bind only what the solution defines: a wrong answer in either form fails."""
    rows = {row["extra_info"]["id"]: row for row in load_code_tasks(APPS)}
    rows.update((row["extra_info"]["id"], row) for row in load_code_tasks(LIVECODEBENCH))
    wrong = {
        "4002": "def reverse_digits(n):\n    return [int(d) for d in str(n)]\n",
        "4003": "class Solution:\n"
        "    def maxGap(self, nums: List[int]) -> int:\n        return 1\n",
        "demo-9001": "def rotateLeft(nums, k):\n    return nums\n",
        # A class without the method: the harnesses fail it, and so does this.
        "demo-9001-other-method": "class Solution:\n    def rotate(self, nums, k):\n"
        "        return nums[k:] + nums[:k]\n",
    }
    for key, solution in wrong.items():
        suite = parse_reward_spec(rows[key.removesuffix("-other-method")]["reward_spec"]).tests
        assert not run_tests(sandbox, solution, suite, suite.graded).all_passed, key

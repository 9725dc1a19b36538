"""Turn public code benchmarks and seed-project rows into CodeExec task rows.

Formats (``format=`` of :func:`load_code_tasks`; auto-detection looks for the starred columns):

- ``humaneval`` (openai_humaneval): task_id*, prompt*, canonical_solution*, test*, entry_point*.
  The prompt is statement and starter code; the hidden test is ``test`` + ``check(entry_point)``.
- ``mbpp`` (mbpp "full"/"sanitized"): task_id*, text (or prompt), code*, test_list*,
  test_setup_code, challenge_test_list, test_imports. The function is the one the first test calls;
  ``test_imports`` run before the solution, in its namespace (the official harness runs imports,
  solution and tests as one program), and ``test_setup_code`` before each test.
- ``apps`` (codeparrot/apps): problem_id*, question*, input_output*, solutions, starter_code,
  difficulty, url. ``input_output`` with ``fn_name`` makes call-based (assert) tests.
- ``code_contests`` (deepmind/code_contests): name*, description*, public_tests*, private_tests*,
  generated_tests, solutions (``language`` 3 is Python 3), difficulty.
- ``livecodebench`` (code_generation_lite): question_content*, public_test_cases*, question_id,
  question_title, platform, starter_code, private_test_cases, metadata, difficulty.
- ``seed``: task_id*, prompt*, tests*, starter_code, reference_solution, metadata. ``tests`` is a
  list of assert strings or of ``{input, output}`` objects; ``metadata`` may hold
  ``entry_point``, ``returns`` and ``data_types`` (see :mod:`tool_envs.code.spec`).

What a solution's function returns to the tests must be plain data (``reward_spec.tests.returns``
is "data"): every benchmark's call-based answers are. Where an MBPP or seed reference defines
the tested name as a class, the row says ``returns: "any"``, since its tests build objects.

Visible tests are the public ones (the first test where a benchmark has no public split); hidden
tests are all of them (public + private + generated), at most ``max_tests``. Call-based problems
(APPS ``fn_name``, LiveCodeBench ``functional``) become asserts calling the function, or
``Solution().<name>`` when the starter code defines ``class Solution``; either way a solution may
answer in either form (a ``Solution`` method or a top-level function), and the imports the
benchmark's own harness runs first (``typing.List`` and friends) run before it, as there.
Problems with no tests are skipped and reported in one :class:`SkippedTasksWarning` per call; any
other malformed row raises `TaskRowError` naming the row and field.

Compressed LiveCodeBench tests are base64 + zlib around a pickled JSON string. Pickles are never
loaded: the opcodes are read with ``pickletools`` and only a pickle that is one plain string is
accepted; anything else is refused, since unpickling untrusted data can run arbitrary code.
"""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import contextlib
import doctest
import json
import os
import pickletools
import re
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tool_envs.code.spec import code_task_row
from tool_envs.data.loading import (
    _available_splits,
    _dataset_rows,
    _fresh_cache,
    _looks_like_path,
    _read_rows,
)
from tool_envs.errors import TaskRowError

__all__ = [
    "FORMATS",
    "ConvertOptions",
    "SkippedTasksWarning",
    "convert_row",
    "detect_format",
    "load_code_tasks",
]

# Columns that identify each format, most specific first (HumanEval rows also look like seeds).
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "humaneval": ("task_id", "prompt", "canonical_solution", "test", "entry_point"),
    "mbpp": ("task_id", "code", "test_list"),
    "apps": ("problem_id", "question", "input_output"),
    "code_contests": ("name", "description", "public_tests", "private_tests"),
    "livecodebench": ("question_content", "public_test_cases"),
    "seed": ("task_id", "prompt", "tests"),
}
FORMATS = tuple(_SIGNATURES)
_MISSING = object()
# The opcodes of a pickle that holds one str and nothing else (no object is ever built).
_PICKLE_FRAMING = {"PROTO", "FRAME", "MEMOIZE", "BINPUT", "LONG_BINPUT", "STOP"}
_PICKLE_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8"}
# APPS stores tuples as lists and many return values wrapped in a one-element list; its harness
# also accepts a list of tuples where the expected value (unwrapped) is a list of lists.
_APPS_SETUP = (
    "def _same(got, expected):\n"
    "    got = list(got) if isinstance(got, tuple) else got\n"
    "    gots = [got]\n"
    "    if isinstance(got, list) and got and isinstance(got[0], tuple):\n"
    "        gots.append([list(item) for item in got])\n"
    "    wanted = [expected, *(expected[:1] if isinstance(expected, list) else [])]\n"
    "    return any(g == w for g in gots for w in wanted)\n"
)
# What the official harnesses run before a call-based solution, so a correct solution that uses
# these names without importing them passes here as it does there. APPS (hendrycks/apps,
# eval/testing_util.py) prepends these imports (and numpy as np, left out here: not every sandbox
# has it, and importing it would slow every judgement); LiveCodeBench (lcb_runner
# testing_util.py) star-imports these modules, then builtins (so math's pow does not shadow
# the builtin), then typing, and raises the recursion limit.
_APPS_PRELUDE = (
    "import sys, time, itertools, collections, math, fractions, random, heapq\n"
    "from itertools import accumulate, product, permutations, combinations\n"
    "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap\n"
    "from functools import lru_cache\n"
    "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2\n"
    "from typing import List, Tuple\n"
    "from heapq import *\n"
)
_LCB_MODULES = (
    *("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random"),
    *("statistics", "itertools", "functools", "operator", "io", "sys", "json"),
)
_LCB_PRELUDE = (
    "".join(f"from {module} import *\n" for module in _LCB_MODULES)
    + "from builtins import *\nfrom typing import *\n"
    + f"import {', '.join(_LCB_MODULES)}\n"
    + "sys.setrecursionlimit(50000)\n"
)


def _entry_shim(fn: str) -> str:
    """Setup that lets a call-based test call ``fn`` in either form, as the official harnesses do.

    APPS and LiveCodeBench call ``Solution().fn`` when the solution defines ``class Solution``
    and the top-level function otherwise, whatever the starter code looks like. The tests call
    the starter's form; this binds the other: a top-level ``fn`` becomes the method of a stand-in
    ``Solution``, and a ``Solution`` method becomes the name ``fn`` (the class wins when both
    exist, as there). It runs in each test's copy of the namespace, so the solution is untouched.
    """
    return (
        f"_entry_class, _entry_function = globals().get('Solution'), globals().get({fn!r})\n"
        f"if isinstance(_entry_class, type) and hasattr(_entry_class, {fn!r}):\n"
        f"    {fn} = getattr(_entry_class(), {fn!r})\n"
        "elif callable(_entry_function):\n"
        "    class Solution:\n"
        f"        {fn} = staticmethod(_entry_function)\n"
    )


class SkippedTasksWarning(UserWarning):
    """Warned when problems are left out because they have no tests to grade them with."""


@dataclass(frozen=True)
class ConvertOptions:
    """How raw rows become task rows (the keyword options of :func:`load_code_tasks`).

    max_tests: keep at most this many hidden tests per problem (None: all).
    time_limit_s, memory_limit_mb: per-test limits written into ``reward_spec``.
    doctest_visible: HumanEval visible tests from the docstring's ``>>>`` examples. Off by
        default: a few HumanEval docstrings show wrong answers, which would mislead the agent.
    """

    max_tests: int | None = None
    time_limit_s: float = 5.0
    memory_limit_mb: int = 512
    doctest_visible: bool = False

    def __post_init__(self) -> None:
        if self.max_tests is not None and self.max_tests < 1:
            raise ValueError(f"max_tests must be None or >= 1, got {self.max_tests}")


class _Bad(Exception):
    """A malformed field; :func:`convert_row` adds the row index."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def load_code_tasks(
    source: Any,
    format: str = "auto",
    split: str | None = None,
    limit: int | None = None,
    *,
    config: str | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Load a code benchmark as CodeExec task rows.

    ``source``: a Hub id (``config`` picks a Hub config, e.g. MBPP's "sanitized"), a local
    folder, a .jsonl/.json/.parquet file or list of them, a ``datasets`` object, or a list of
    dicts. ``split=None`` takes the only split and fails listing them when there are several.
    ``options`` are :class:`ConvertOptions` fields. Skipped problems are reported with a
    :class:`SkippedTasksWarning`.
    """
    opts = ConvertOptions(**options)
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; known: auto, {', '.join(FORMATS)}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be None or >= 0, got {limit}")
    raw_rows = _read_source(source, split, limit, config)[:limit]
    if not raw_rows:
        return []
    fmt = detect_format(raw_rows[0]) if format == "auto" else format
    rows, skipped = [], []
    for index, raw in enumerate(raw_rows):
        row = convert_row(fmt, raw, index=index, options=opts)
        if row is None:
            skipped.append(index)
        else:
            rows.append(row)
    if skipped:
        shown = ", ".join(map(str, skipped[:20])) + (", ..." if len(skipped) > 20 else "")
        warnings.warn(
            f"skipped {len(skipped)} of {len(raw_rows)} {fmt} problems with no usable tests "
            f"(rows {shown})",
            SkippedTasksWarning,
            stacklevel=2,
        )
    return rows


def detect_format(columns: Sequence[str] | Mapping[str, Any]) -> str:
    """The format whose identifying columns are all present."""
    present = set(columns)
    for name, needed in _SIGNATURES.items():
        if present.issuperset(needed):
            return name
    known = "; ".join(f"{name} ({', '.join(cols)})" for name, cols in _SIGNATURES.items())
    raise ValueError(
        f"cannot tell the code-task format from columns {sorted(present)}. Known formats and "
        f"the columns that identify them: {known}. Pass format=... to choose one."
    )


def convert_row(
    format: str, raw: Mapping[str, Any], *, index: int = 0, options: ConvertOptions | None = None
) -> dict[str, Any] | None:
    """One raw row as a CodeExec row, or None when it has no tests (the caller counts it)."""
    if not isinstance(raw, Mapping):
        raise TaskRowError(f"a raw row must be a mapping, got {type(raw).__name__}", index=index)
    if format not in _CONVERTERS:
        raise ValueError(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    try:
        return _CONVERTERS[format](raw, options or ConvertOptions())
    except _Bad as exc:
        raise TaskRowError(f"{format}: {exc}", index=index, field=exc.field) from None
    except TaskRowError as exc:  # code_task_row's own validation; add the row index
        message = str(exc).removeprefix(f"field '{exc.field}': ")
        raise TaskRowError(f"{format}: {message}", index=index, field=exc.field) from None


# -- reading -----------------------------------------------------------------------------------


def _read_source(
    source: Any, split: str | None, limit: int | None, config: str | None
) -> list[Mapping[str, Any]]:
    if isinstance(source, (list, tuple)) and all(isinstance(row, Mapping) for row in source):
        return list(source)
    is_local = not isinstance(source, str) or Path(source).expanduser().exists()
    if not is_local and not _looks_like_path(source):
        return _read_hub(source, split, limit, config)
    if config is not None:
        raise ValueError("config= only applies to Hub ids")
    rows, _ = _read_rows(source, split or _only_local_split(source), limit)
    return rows


def _read_hub(repo: str, split: str | None, limit: int | None, config: str | None) -> list[Any]:
    """The real Hub path; offline it fails with datasets' own "Couldn't reach" error."""
    import datasets

    split = split or _single(datasets.get_dataset_split_names(repo, config), repo)
    return _dataset_rows(datasets.load_dataset(repo, config, split=split), limit)


def _only_local_split(source: Any) -> str:
    """The one split of a local folder or DatasetDict; files and Datasets have no split."""
    import datasets

    if isinstance(source, datasets.DatasetDict):
        return _single(list(source), "the DatasetDict")
    path = Path(os.fspath(source)).expanduser() if isinstance(source, (str, os.PathLike)) else None
    if path is None or not path.is_dir() or (path / "state.json").is_file():
        return "train"
    if (path / "dataset_dict.json").is_file():
        names = json.loads((path / "dataset_dict.json").read_text())["splits"]
    else:
        with _fresh_cache() as cache_dir:
            names = _available_splits(str(path), cache_dir)
    return _single(names, str(path)) if names else "train"


def _single(names: Sequence[str], where: str) -> str:
    if len(names) == 1:
        return names[0]
    raise ValueError(f"{where} has splits {', '.join(names)}; pass split= to choose one")


# -- fields ------------------------------------------------------------------------------------


def _get(raw: Mapping[str, Any], name: str, kind: Any = str, default: Any = _MISSING) -> Any:
    value = raw.get(name)
    if value is None:
        if default is _MISSING:
            raise _Bad(name, "missing (required)")
        return default
    if not isinstance(value, kind):
        wanted = " or ".join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))
        raise _Bad(name, f"expected {wanted}, got {type(value).__name__}")
    return value


def _str_list(raw: Mapping[str, Any], name: str, default: Any = _MISSING) -> list[str]:
    value = _get(raw, name, (list, tuple), default)
    if not all(isinstance(item, str) for item in value):
        raise _Bad(name, "expected a list of strings")
    return list(value)


def _json(raw: Mapping[str, Any], name: str) -> Any:
    """A JSON-string field (empty means absent); already-decoded values are accepted."""
    value = raw.get(name)
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise _Bad(name, f"not valid JSON ({exc})") from None


def _text(value: Any, field: str) -> str:
    """Stdio text; some datasets store it as a list of lines."""
    if isinstance(value, (list, tuple)) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    if not isinstance(value, str):
        raise _Bad(field, f"test input/output must be text, got {type(value).__name__}")
    return value


def _literal(value: Any) -> str:
    """Python source for a JSON value (json.loads for NaN/inf, which have no literal)."""
    text = repr(value)
    try:
        if ast.literal_eval(text) == value:
            return text
    except (ValueError, SyntaxError):
        pass
    return f"__import__('json').loads({json.dumps(value)!r})"


def _called_function(test: str, field: str, solution: str | None) -> str:
    """The function an assert tests: the first non-builtin call, preferring the solution's."""
    try:
        tree = ast.parse(test)
    except SyntaxError as exc:
        raise _Bad(field, f"test is not valid Python ({exc.msg})") from None
    called = [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and not hasattr(builtins, node.func.id)
    ]
    defined: set[str] = set()
    with contextlib.suppress(SyntaxError):
        defined = {n.name for n in ast.parse(solution or "").body if isinstance(n, ast.FunctionDef)}
    for name in [name for name in called if name in defined] or called:
        return name
    raise _Bad(field, "no function call found in the first test; give an entry_point")


def _returns(entry: str, solution: str | None) -> dict[str, str]:
    """``returns: "any"`` when the reference defines the entry point as a class: its tests build
    objects of it, which the harness would otherwise refuse as not plain data."""
    with contextlib.suppress(SyntaxError, ValueError):
        for node in ast.parse(solution or "").body:
            if isinstance(node, ast.ClassDef) and node.name == entry:
                return {"returns": "any"}
    return {}


def _call_test(fn: str, args: Any, expected: Any, method: bool, compare: str, field: str) -> str:
    if not isinstance(args, list):
        raise _Bad(field, f"a call-based input must be a list of arguments, got {args!r:.60}")
    call = f"{'Solution().' if method else ''}{fn}({', '.join(_literal(a) for a in args)})"
    return compare.format(call=call, expected=_literal(expected))


def _pairs(inputs: Any, outputs: Any, field: str) -> list[tuple[Any, Any]]:
    """Parallel input/output lists, as benchmarks store them."""
    inputs, outputs = inputs or [], outputs or []
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise _Bad(field, "inputs and outputs must be lists of the same length")
    return list(zip(inputs, outputs, strict=True))


def _stdio(pairs: list[tuple[Any, Any]], field: str) -> list[dict[str, str]]:
    return [{"input": _text(i, field), "output": _text(o, field)} for i, o in pairs]


def _suite(
    kind: str, visible: list[Any], hidden: list[Any], opts: ConvertOptions, **more: Any
) -> dict[str, Any]:
    """A ``reward_spec.tests`` dict; ``max_tests`` caps the hidden tests only."""
    return {"kind": kind, "visible": visible, "hidden": hidden[: opts.max_tests], **more}


def _row(
    opts: ConvertOptions,
    source: str,
    task_id: Any,
    statement: str,
    tests: dict[str, Any],
    starter: str = "",
    reference: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    extra = {"source": source, **{key: value for key, value in extra.items() if value is not None}}
    return code_task_row(
        task_id=str(task_id),
        statement=statement,
        tests=tests,
        starter_code=starter,
        reference_solution=reference,
        extra_info=extra,
        time_limit_s=opts.time_limit_s,
        memory_limit_mb=opts.memory_limit_mb,
    )


# -- formats -----------------------------------------------------------------------------------


def _humaneval(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    prompt, test, entry = _get(raw, "prompt"), _get(raw, "test"), _get(raw, "entry_point")
    if not entry.isidentifier():
        raise _Bad("entry_point", f"{entry!r} is not a Python identifier")
    if not test.strip():
        return None
    solution = _get(raw, "canonical_solution", str, None)
    visible = _doctest_asserts(prompt, entry) if opts.doctest_visible else []
    # The prompt runs before the solution (its imports and helpers, such as HumanEval/38's
    # encode_cyclic, which the tests call), so a correct solution need not repeat them.
    hidden = [f"{test}\ncheck({entry})\n"]
    tests = _suite("assert", visible, hidden, opts, entry_point=entry, prelude=prompt)
    reference = None if solution is None else prompt + solution
    statement = (
        f"Complete the Python function `{entry}` in the starter code below: keep its "
        "signature and make it do what its docstring says. Helpers and imports the starter "
        "code defines are available to your solution."
    )
    task_id = _get(raw, "task_id", (str, int))
    return _row(opts, "humaneval", task_id, statement, tests, prompt, reference)


def _doctest_asserts(prompt: str, entry: str) -> list[str]:
    """``>>> f(x)`` / literal-output examples as asserts; floats are left out (exact ==)."""
    try:
        examples = doctest.DocTestParser().get_examples(prompt)
    except ValueError:  # inconsistent indentation: no examples rather than wrong ones
        return []
    out = []
    for example in examples:
        # The docstring's closing quotes, on the line after the last example, end up in want.
        lines = [line for line in example.want.splitlines() if line.strip() not in ('"""', "'''")]
        source, want = example.source.strip(), "\n".join(lines).strip()
        try:
            call, expected = ast.parse(source, mode="eval"), ast.parse(want, mode="eval")
            ast.literal_eval(expected)
        except (SyntaxError, ValueError):
            continue
        calls = any(getattr(getattr(n, "func", None), "id", None) == entry for n in ast.walk(call))
        has_float = any(isinstance(getattr(n, "value", None), float) for n in ast.walk(expected))
        if calls and not has_float:
            out.append(f"assert {source} == {want}")
    return out


def _mbpp(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    statement = _get(raw, "text" if raw.get("text") is not None else "prompt")
    tests, code = _str_list(raw, "test_list"), _get(raw, "code")
    if not tests:
        return None
    # The official harness runs the test imports, the solution and the tests as one program, so
    # a solution may use what test_imports imports: they run first, in the solution's namespace.
    imports = "\n".join(line for line in _str_list(raw, "test_imports", []) if line.strip())
    setup = _get(raw, "test_setup_code", str, "")
    hidden = tests + _str_list(raw, "challenge_test_list", [])
    entry = _called_function(tests[0], "test_list", code)
    suite = _suite(
        "assert", tests[:1], hidden, opts, entry_point=entry, setup=setup, prelude=imports,
        **_returns(entry, code),
    )  # fmt: skip
    return _row(opts, "mbpp", _get(raw, "task_id", (str, int)), statement, suite, "", code)


def _apps(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    task_id, question = _get(raw, "problem_id", (str, int)), _get(raw, "question")
    io, starter = _json(raw, "input_output") or {}, _get(raw, "starter_code", str, "")
    if not isinstance(io, dict):
        raise _Bad("input_output", f"expected a JSON object, got {type(io).__name__}")
    pairs = _pairs(io.get("inputs"), io.get("outputs"), "input_output")
    solutions = _json(raw, "solutions") or []
    if not isinstance(solutions, list):
        raise _Bad("solutions", "expected a JSON list of solution strings")
    if not pairs:
        return None
    if fn := io.get("fn_name"):
        if not isinstance(fn, str) or not fn.isidentifier():
            raise _Bad("input_output", f"fn_name {fn!r} is not a Python identifier")
        method, compare = "class Solution" in starter, "assert _same({call}, {expected})"
        cases = [_call_test(fn, a, o, method, compare, "input_output") for a, o in pairs]
        setup, prelude = _APPS_SETUP + _entry_shim(fn), _APPS_PRELUDE
        tests = _suite(
            "assert", cases[:1], cases, opts, entry_point=fn, setup=setup, prelude=prelude
        )
    else:
        cases = _stdio(pairs, "input_output")
        tests = _suite("stdio", cases[:1], cases, opts)
    extra = {"difficulty": raw.get("difficulty"), "url": raw.get("url")}
    reference = solutions[0] if solutions else None
    return _row(opts, "apps", task_id, question, tests, starter, reference, **extra)


def _contest_cases(raw: Mapping[str, Any], name: str) -> list[dict[str, str]]:
    value = _get(raw, name, Mapping, {})
    return _stdio(_pairs(value.get("input"), value.get("output"), name), name)


def _code_contests(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    name, description = _get(raw, "name"), _get(raw, "description")
    public = _contest_cases(raw, "public_tests")
    hidden = public + _contest_cases(raw, "private_tests") + _contest_cases(raw, "generated_tests")
    solutions = _get(raw, "solutions", Mapping, {})
    pairs = _pairs(solutions.get("language"), solutions.get("solution"), "solutions")
    python3 = [code for language, code in pairs if language == 3]  # 3 is PYTHON3 in the schema
    if not hidden:
        return None
    tests, reference = _suite("stdio", public, hidden, opts), python3[0] if python3 else None
    extra = {"difficulty": raw.get("difficulty")}
    return _row(opts, "code_contests", name, description, tests, "", reference, **extra)


def _lcb_cases(raw: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    value = raw.get(name)
    if isinstance(value, str) and value.strip() and value.lstrip()[0] not in "[{":
        value = _decompress(value, name)
    else:
        value = _json(raw, name) or []
    if not isinstance(value, list) or not all(
        isinstance(c, Mapping)
        and c.get("testtype") in ("stdin", "functional")
        and isinstance(c.get("input"), str)
        and isinstance(c.get("output"), str)
        for c in value
    ):
        raise _Bad(name, "expected a list of {input, output, testtype: stdin|functional}")
    return value


def _decompress(text: str, name: str) -> Any:
    """base64 + zlib + (a pickled string, read without unpickling) + JSON."""
    try:
        data = zlib.decompress(base64.b64decode(text, validate=True))
    except (binascii.Error, zlib.error, ValueError):
        raise _Bad(name, "neither JSON nor base64+zlib-compressed JSON") from None
    if data[:1] == b"\x80":  # a pickle (protocol 2+): accept only one plain string
        try:
            ops = [(op.name, arg) for op, arg, _ in pickletools.genops(data)]
        except ValueError:
            ops = [("malformed", None)]
        strings = [arg for op, arg in ops if op in _PICKLE_STRINGS]
        if len(strings) != 1 or any(op not in _PICKLE_FRAMING | _PICKLE_STRINGS for op, _ in ops):
            raise _Bad(
                name,
                "is a pickle of something other than one string; refusing to "
                "unpickle untrusted data, which can run arbitrary code",
            )
        data = strings[0]
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Bad(name, "decompressed data is not valid JSON") from None


def _livecodebench(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    title, content = raw.get("question_title") or "", _get(raw, "question_content")
    task_id, starter = (
        _get(raw, "question_id", (str, int), title),
        _get(raw, "starter_code", str, ""),
    )
    public = _lcb_cases(raw, "public_test_cases")
    cases = public + _lcb_cases(raw, "private_test_cases")
    kinds = {case["testtype"] for case in cases}
    if len(kinds) > 1:
        raise _Bad("public_test_cases", "mixes stdin and functional tests in one problem")
    if not cases:
        return None
    if kinds == {"stdin"}:
        tests = [{"input": case["input"], "output": case["output"]} for case in cases]
        suite = _suite("stdio", tests[: len(public)], tests, opts)
    else:
        metadata = _json(raw, "metadata") or {}
        if not isinstance(metadata, dict):
            raise _Bad("metadata", f"expected a JSON object, got {type(metadata).__name__}")
        fn, method = metadata.get("func_name") or _method_name(starter), "class Solution" in starter
        if not isinstance(fn, str) or not fn.isidentifier():
            raise _Bad("metadata", f"func_name {fn!r} is not a Python identifier")
        tests = [_functional(fn, case, method, i < len(public)) for i, case in enumerate(cases)]
        shim, prelude = _entry_shim(fn), _LCB_PRELUDE
        suite = _suite(
            "assert", tests[: len(public)], tests, opts, entry_point=fn, setup=shim, prelude=prelude
        )
    statement = f"{title}\n\n{content}".strip()
    extra = {"platform": raw.get("platform"), "difficulty": raw.get("difficulty")}
    return _row(opts, "livecodebench", task_id, statement, suite, starter, **extra)


def _functional(fn: str, case: Mapping[str, str], method: bool, public: bool) -> str:
    """LiveCodeBench functional input is one JSON value per line, one line per argument."""
    field = "public_test_cases" if public else "private_test_cases"
    try:
        args = [json.loads(line) for line in case["input"].split("\n") if line.strip()]
        expected = json.loads(case["output"])
    except json.JSONDecodeError:
        raise _Bad(field, "a functional test's input or output is not JSON") from None
    return _call_test(fn, args, expected, method, "assert {call} == {expected}", field)


def _method_name(starter: str) -> str:
    """LeetCode starter code has no body, so it cannot be parsed with ``ast``."""
    match = re.search(r"def\s+(\w+)\s*\(\s*self\b", starter) or re.search(r"def\s+(\w+)", starter)
    if not match:
        raise _Bad("starter_code", "functional tests need metadata.func_name or a def here")
    return match.group(1)


def _seed(raw: Mapping[str, Any], opts: ConvertOptions) -> dict[str, Any] | None:
    task_id, prompt = _get(raw, "task_id", (str, int)), _get(raw, "prompt")
    starter, reference = (
        _get(raw, "starter_code", str, ""),
        _get(raw, "reference_solution", str, None),
    )
    tests, metadata = list(_get(raw, "tests", (list, tuple))), _json(raw, "metadata") or {}
    if not isinstance(metadata, dict):
        raise _Bad("metadata", f"expected an object, got {type(metadata).__name__}")
    metadata = {key: value for key, value in metadata.items() if value is not None}  # Arrow's
    if not tests:
        return None
    if all(isinstance(test, str) for test in tests):
        entry = metadata.get("entry_point") or _called_function(tests[0], "tests", reference)
        # A row may say what its function returns (see reward_spec.tests.returns).
        returns = {k: metadata[k] for k in ("returns", "data_types") if k in metadata}
        suite = _suite(
            "assert", tests[:1], tests, opts, entry_point=entry,
            **(returns or _returns(entry, reference)),
        )  # fmt: skip
    elif all(isinstance(test, Mapping) and set(test) <= {"input", "output"} for test in tests):
        cases = _stdio([(t.get("input") or "", t.get("output")) for t in tests], "tests")
        suite = _suite("stdio", cases[:1], cases, opts)
    else:
        raise _Bad("tests", "must be all assert strings or all {input, output} objects")
    return _row(opts, "seed", task_id, prompt, suite, starter, reference, metadata=metadata)


_CONVERTERS: dict[str, Callable[[Mapping[str, Any], ConvertOptions], dict[str, Any] | None]] = {
    "humaneval": _humaneval,
    "mbpp": _mbpp,
    "apps": _apps,
    "code_contests": _code_contests,
    "livecodebench": _livecodebench,
    "seed": _seed,
}

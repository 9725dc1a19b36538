"""Run a candidate solution against a task's tests inside the sandbox and say what happened.

Assert tests run in one sandboxed process: a small harness loads the solution, then runs every
test in a copy of its namespace under a per-test alarm, and prints one result line tagged with a
random nonce. The tests and the nonce reach the harness on stdin, which it reads before the
solution runs, so a solution can neither read the tests from disk nor fake the result line by
printing; an early ``exit()`` or ``os._exit()`` leaves no result line and fails every test.
Stdio tests run one process per case and compare output line by line.

The solution runs in the harness's interpreter, so the harness takes nothing from a module or
the ``builtins`` the solution could patch: it keeps its own references to ``compile``, ``exec``,
``repr`` and friends, taken before the solution runs, gives each test a private copy of the
original builtins, and writes its report with ``repr`` (read back with ``ast.literal_eval``), not
with the ``json`` module. Every text in the report is clipped in the harness, so a solution of a
megabyte (or a huge exception message) cannot push the report past the output limit; a report
that is cut or malformed anyway fails every test instead of raising.

What a test compares must be what it says: before each test the harness binds the names the
test calls (the entry point, and ``Solution``'s entry-point method; every function the solution
defined when the task names no entry point) to guards that check the returned value is plain
data: None, bool, int, float, complex, str, bytes, bytearray, range, Fraction, Decimal, and
lists, tuples, sets, frozensets, deques and dicts (Counter, OrderedDict, defaultdict) of them,
by exact type, plus the row's ``data_types``. Anything else, such as an object of the solution's
own class whose ``__eq__`` says True to everything (or an ``int`` subclass that does), fails the
test even when the test swallows the exception; an iterator (``map(...)``, a generator) is
handed on as one that checks each item as it is consumed. A row with ``returns: "any"`` has no
guards. Stdio tests compare printed text, which no object can fake.

Out of scope: a solution that walks the interpreter's frames to find the harness's variables,
and one that patches a module the tests import (``math``) or redefines a helper of the prompt
that the tests call.
"""

from __future__ import annotations

import ast
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tool_envs.code.sandbox import RunRequest, RunResult
from tool_envs.code.spec import StdioCase, TestSuite

Status = Literal["passed", "failed", "error", "timeout", "memory", "not_run"]

_DETAIL_CHARS = 300
_OUTPUT_CHARS = 2000

# The harness is a fixed program: everything task-specific arrives on stdin as JSON. Everything
# it calls after the solution has run is bound as a default argument before, out of its reach.
_HARNESS = r"""
import builtins, collections, decimal, fractions, json, linecache, signal, sys, traceback

_ORIGINAL_BUILTINS = dict(builtins.__dict__)

class _Timeout(BaseException):
    pass

class _Refused(BaseException):
    pass

def _alarm(signum, frame):
    raise _Timeout()

def _clip(text, limit, _len=len, _str=str):
    text = _str(text)
    return text if _len(text) <= limit else text[: limit - 15] + " ...[truncated]"

def _describe(exc, source, limit, _isinstance=isinstance, _type=type, _clip=_clip,
              _extract=traceback.extract_tb, _format=traceback.format_exception_only):
    if _isinstance(exc, _Timeout):
        return "timeout", "time limit exceeded"
    if _isinstance(exc, MemoryError):
        return "memory", "MemoryError (memory limit exceeded)"
    where = ""
    try:
        for frame in _extract(exc.__traceback__):
            if frame.filename in (source, "solution.py", "setup.py", "prelude.py"):
                where = " at %s line %s: `%s`" % (frame.filename, frame.lineno,
                                                   _clip(frame.line or "", limit))
        if _isinstance(exc, AssertionError):
            message = _clip(exc, limit)
            return "failed", _clip("AssertionError" + (": " + message if message else "") + where,
                                   limit)
        text = "".join(_format(_type(exc), exc)).strip()
    except BaseException:  # an exception whose str() raises, or a patched traceback module
        text = "an exception that cannot be described"
    return "error", _clip(text + where, limit)

# Plain data: what a test may compare a solution's value with. Exact types only (a subclass can
# override __eq__); containers are looked into, the rest are leaves.
_SEQUENCES = (list, tuple, set, frozenset, collections.deque)
_MAPPINGS = (dict, collections.Counter, collections.OrderedDict, collections.defaultdict)
_LEAVES = (type(None), bool, int, float, complex, str, bytes, bytearray, range,
           fractions.Fraction, decimal.Decimal)

def _data_ids(names, _id=id, _import=__import__, _modules=sys.modules, _getattr=getattr):
    ids = {_id(kind): "leaf" for kind in _LEAVES}
    ids.update((_id(kind), "sequence") for kind in _SEQUENCES)
    ids.update((_id(kind), "mapping") for kind in _MAPPINGS)
    for name in names:  # the row's own data types: leaves, compared as they are
        module, _, attribute = name.rpartition(".")
        _import(module)
        ids[_id(_getattr(_modules[module], attribute))] = "leaf"
    return ids

def _foreign(value, ids, _type=type, _id=id, _set=set, _keys=dict.keys, _values=dict.values):
    # The type of the first value in `value` that is not plain data, or None.
    stack, seen = [value], _set()
    while stack:
        item = stack.pop()
        kind = ids.get(_id(_type(item)))
        if kind is None:
            return _type(item)
        if kind == "leaf" or _id(item) in seen:
            continue
        seen.add(_id(item))
        if kind == "sequence":
            stack.extend(item)
        else:
            stack.extend(_keys(item))
            stack.extend(_values(item))
    return None

def _is_iterator(kind, _hasattr=hasattr):
    try:
        return _hasattr(kind, "__next__")
    except BaseException:
        return False

def _checked(value, said, ids, refused, _foreign=_foreign, _is_iterator=_is_iterator,
             _type=type, _name=type.__dict__["__name__"].__get__, _str=str):
    kind = _foreign(value, ids)
    if kind is None:
        return value
    if kind is _type(value) and _is_iterator(kind):  # map(), a generator: checked as consumed
        return _lazy(value, said, ids, refused)
    try:
        what = _str(_name(kind))[:80]
    except BaseException:
        what = "?"
    holding = "" if kind is _type(value) else "a value holding "
    message = ("%s %san object of class %s, not plain data (None, bool, int, float, complex, "
               "str, bytes and lists, tuples, sets and dicts of them): refused"
               % (said, holding, what))
    refused.append(message)
    raise _Refused(message)

def _lazy(iterator, said, ids, refused):
    for item in iterator:
        yield _checked(item, "an item of what %s was" % said, ids, refused)

def _guarded(function, name, ids, refused, _checked=_checked):
    def guarded(*args, **kwargs):
        return _checked(function(*args, **kwargs), name + " returned", ids, refused)
    return guarded

class _Instance:
    # A Solution() whose entry-point method is guarded; every other attribute is the instance's.
    __slots__ = ("_target", "_entry", "_guard")

    def __init__(self, target, entry, guard):
        self._target, self._entry, self._guard = target, entry, guard

    def __getattr__(self, attribute, _get=object.__getattribute__, _getattr=getattr):
        found = _getattr(_get(self, "_target"), attribute)
        return _get(self, "_guard")(found) if attribute == _get(self, "_entry") else found

def _guard_scope(scope, entry, ids, refused, _guarded=_guarded, _isinstance=isinstance,
                 _type=type, _function=type(_clip), _list=list, _instance=_Instance):
    # Bind the names the tests call to guards that refuse what is not plain data.
    if entry:
        names = [entry]
    else:  # no entry point: every function the solution defined
        names = [key for key, value in _list(scope.items()) if _type(value) is _function
                 and value.__code__.co_filename == "solution.py"]
    for name in names:
        if name in scope:
            scope[name] = _guarded(scope[name], "%s()" % name, ids, refused)
    solution = scope.get("Solution")
    if entry and entry != "Solution" and _isinstance(solution, _type):
        def guard(method, _name="Solution().%s()" % entry):
            return _guarded(method, _name, ids, refused)
        scope["Solution"] = lambda *args, **kwargs: _instance(
            solution(*args, **kwargs), entry, guard)

def _run(payload, _compile=compile, _exec=exec, _dict=dict, _repr=repr, _list=list,
         _setitimer=signal.setitimer, _real=signal.ITIMER_REAL, _real_stdout=sys.stdout,
         _builtins=_ORIGINAL_BUILTINS, _describe=_describe, _clip=_clip, _enumerate=enumerate,
         _cache=linecache.cache):
    import io

    def compiled(text, name):
        _cache[name] = (len(text), None, text.splitlines(True), name)
        return _compile(text, name, "exec")

    nonce, limit, keep = payload["nonce"], payload["time_limit_s"], payload["keep"]
    detail = payload["detail_chars"]
    tests, setup = _list(payload["tests"]), payload["setup"]
    entry, guard = payload["entry_point"], payload["returns"] == "data"
    signal.signal(signal.SIGALRM, _alarm)
    captured = io.StringIO()
    sys.stdout = captured
    namespace = {"__name__": "solution", "__builtins__": builtins}
    load_error, results, ids = None, [], None
    try:
        ids = _data_ids(payload["data_types"])
    except BaseException as exc:  # a row naming a type this interpreter cannot import
        load_error = _clip("reward_spec.tests.data_types: " + _describe(exc, "", detail)[1],
                           detail)
    try:
        _setitimer(_real, limit)
        if load_error is None:
            if payload["prelude"]:
                _exec(compiled(payload["prelude"], "prelude.py"), namespace)
            _exec(compiled(payload["solution"], "solution.py"), namespace)
    except BaseException as exc:  # SystemExit too: a solution must not end the run
        load_error = _describe(exc, "solution.py", detail)[1]
    finally:
        _setitimer(_real, 0)
    for index, test in _enumerate(tests):
        if load_error is not None:
            results.append(["not_run", "the solution failed to load"])
            continue
        scope = _dict(namespace)
        scope["__builtins__"] = _dict(_builtins)
        source = "test_%d.py" % (index + 1)
        refused = []  # what the guards refused, even if the test swallowed the exception
        try:
            _setitimer(_real, limit)
            if setup:
                _exec(compiled(setup, "setup.py"), scope)
            if guard:
                _guard_scope(scope, entry, ids, refused)
            _exec(compiled(test, source), scope)
            result = ["passed", ""]
        except BaseException as exc:
            result = _list(_describe(exc, source, detail))
        finally:
            _setitimer(_real, 0)
        results.append(["failed", _clip(refused[0], detail)] if refused else result)
    try:
        out = _clip(captured.getvalue(), keep)
    except BaseException:
        out = ""
    report = _repr({"load_error": load_error, "results": results, "stdout": out})
    _real_stdout.write("\n" + nonce + report + "\n")
    _real_stdout.flush()

_run(json.loads(sys.stdin.read()))
"""
# What the report may take on stdout: repr() writes a character as at most 10 bytes (\U0001f600).
_REPORT_BYTES_PER_CHAR = 10
_STATUSES = frozenset({"passed", "failed", "error", "timeout", "memory", "not_run"})


class Runner(Protocol):
    """Anything that runs a request: a :class:`Sandbox` or a :class:`SandboxPool`."""

    def run(self, request: RunRequest) -> RunResult: ...


@dataclass(frozen=True)
class TestResult:
    """The verdict on one test; ``detail`` says why it did not pass (empty when it did)."""

    status: Status
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class JudgeReport:
    """Every test's verdict, plus what the solution printed and whether it loaded at all."""

    results: list[TestResult]
    stdout: str = ""
    stderr: str = ""
    load_error: str | None = None
    duration_s: float = 0.0
    isolation: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(result.passed for result in self.results)

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def timed_out(self) -> bool:
        return any(result.status == "timeout" for result in self.results)

    def counts(self) -> dict[str, int]:
        """How many tests ended in each status."""
        out: dict[str, int] = {}
        for result in self.results:
            out[result.status] = out.get(result.status, 0) + 1
        return out


def run_tests(
    runner: Runner,
    solution: str,
    suite: TestSuite,
    tests: Sequence[Any],
    *,
    time_limit_s: float = 5.0,
    memory_limit_mb: int = 512,
) -> JudgeReport:
    """Judge ``solution`` on ``tests`` (some of ``suite``'s), each under ``time_limit_s``."""
    if suite.kind == "assert":
        return _run_assert(runner, solution, suite, list(tests), time_limit_s, memory_limit_mb)
    return _run_stdio(runner, solution, list(tests), time_limit_s, memory_limit_mb)


def _run_assert(
    runner: Runner,
    solution: str,
    suite: TestSuite,
    tests: list[str],
    time_limit_s: float,
    memory_limit_mb: int,
) -> JudgeReport:
    nonce = f"@@tool-envs-judge-{secrets.token_hex(16)}@@"
    payload = {
        "nonce": nonce,
        "solution": solution,
        "setup": suite.setup,
        "prelude": suite.prelude,
        "entry_point": suite.entry_point,
        "returns": suite.returns,
        "data_types": suite.data_types,
        "tests": tests,
        "time_limit_s": time_limit_s,
        "keep": _OUTPUT_CHARS,
        "detail_chars": _DETAIL_CHARS,
    }
    report_chars = _OUTPUT_CHARS + _DETAIL_CHARS * (len(tests) + 1) + 64 * (len(tests) + 4)
    request = RunRequest(
        code=_HARNESS,
        stdin=json.dumps(payload),
        time_limit_s=time_limit_s * (len(tests) + 1) + 1.0,
        memory_limit_mb=memory_limit_mb,
        # What the solution prints to the real stdout, then the report, which must fit whole.
        output_limit_bytes=RunRequest.output_limit_bytes
        + report_chars * _REPORT_BYTES_PER_CHAR
        + len(nonce),
    )
    result = runner.run(request)
    report = _read_report(result.stdout, nonce, len(tests))
    if report is None:
        # The process died before reporting (os._exit, a kill at the limit, a crash), or the
        # solution flooded stdout so that the report was cut.
        reason = _process_failure(result)
        status: Status = (
            "timeout" if result.timed_out else ("memory" if result.memory_exceeded else "error")
        )
        return JudgeReport(
            results=[TestResult(status, reason) for _ in tests],
            stdout=_clip(result.stdout, _OUTPUT_CHARS),
            stderr=_clip(result.stderr, _OUTPUT_CHARS),
            load_error=None if tests else reason,
            duration_s=result.duration_s,
            isolation=result.isolation,
            notes=[reason],
        )
    return JudgeReport(
        results=[
            TestResult(status, _clip(detail, _DETAIL_CHARS)) for status, detail in report["results"]
        ],
        stdout=report["stdout"],
        stderr=_clip(result.stderr, _OUTPUT_CHARS),
        load_error=report["load_error"],
        duration_s=result.duration_s,
        isolation=result.isolation,
    )


def _read_report(stdout: str, nonce: str, tests: int) -> dict[str, Any] | None:
    """The harness's report after ``nonce``, or None if it is missing, cut or malformed."""
    marker = stdout.rfind(nonce)
    if marker < 0:
        return None
    line = stdout[marker + len(nonce) :].split("\n", 1)[0]
    try:
        report = ast.literal_eval(line)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        return None
    results = report["results"]
    well_formed = len(results) == tests and all(
        isinstance(item, list)
        and len(item) == 2
        and item[0] in _STATUSES
        and isinstance(item[1], str)
        for item in results
    )
    load_error = report.get("load_error")
    if not well_formed or not isinstance(report.get("stdout"), str):
        return None
    if load_error is not None and not isinstance(load_error, str):
        return None
    return report


def _run_stdio(
    runner: Runner,
    solution: str,
    cases: list[StdioCase],
    time_limit_s: float,
    memory_limit_mb: int,
) -> JudgeReport:
    if not cases:  # nothing to compare against: just run the program once on empty input
        run = runner.run(
            RunRequest(code=solution, time_limit_s=time_limit_s, memory_limit_mb=memory_limit_mb)
        )
        return JudgeReport(
            results=[],
            stdout=_clip(run.stdout, _OUTPUT_CHARS),
            stderr=_clip(run.stderr, _OUTPUT_CHARS),
            load_error=None if run.ok else _process_failure(run),
            duration_s=run.duration_s,
            isolation=run.isolation,
        )
    results: list[TestResult] = []
    duration, isolation, stdout, stderr = 0.0, "", "", ""
    for case in cases:
        run = runner.run(
            RunRequest(
                code=solution,
                stdin=case.input,
                time_limit_s=time_limit_s,
                memory_limit_mb=memory_limit_mb,
            )
        )
        duration += run.duration_s
        isolation = run.isolation
        if not stdout and not stderr:
            stdout, stderr = run.stdout, run.stderr
        results.append(_stdio_verdict(case, run))
    return JudgeReport(
        results=results,
        stdout=_clip(stdout, _OUTPUT_CHARS),
        stderr=_clip(stderr, _OUTPUT_CHARS),
        duration_s=duration,
        isolation=isolation,
    )


def _stdio_verdict(case: StdioCase, run: RunResult) -> TestResult:
    if run.timed_out:
        return TestResult("timeout", "time limit exceeded")
    if run.memory_exceeded:
        return TestResult("memory", "memory limit exceeded")
    if run.exit_code != 0 or run.output_truncated:
        return TestResult("error", _process_failure(run))
    if same_output(run.stdout, case.output):
        return TestResult("passed")
    return TestResult(
        "failed",
        f"wrong answer on input {_clip(case.input, 80)!r}: expected "
        f"{_clip(case.output, 80)!r}, got {_clip(run.stdout, 80)!r}",
    )


def same_output(got: str, expected: str) -> bool:
    """Line-by-line equality, ignoring trailing whitespace on lines and at the end."""
    return _normalise(got) == _normalise(expected)


def _normalise(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _process_failure(run: RunResult) -> str:
    if run.timed_out:
        return "time limit exceeded"
    if run.memory_exceeded:
        return "memory limit exceeded"
    if run.output_truncated:
        return "output limit exceeded"
    last = run.stderr.strip().splitlines()[-1:] or [f"exit status {run.exit_code}"]
    return (
        _clip(last[0], _DETAIL_CHARS)
        if run.exit_code != 0
        else (
            "the process exited before the tests reported (exit() or os._exit() in the solution?)"
        )
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"

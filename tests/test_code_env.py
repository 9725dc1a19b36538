"""CodeExec-v0 end to end: real sandboxed runs behind code_exec/submit, rewards and penalties."""

from __future__ import annotations

import gc
import glob
import json
import os
import pickle
import subprocess
import sys
import tempfile

import gymnasium as gym
import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("the code sandbox needs Linux", allow_module_level=True)

from code_helpers import ALWAYS_EQUAL

import tool_envs
from tool_envs.code import CodeExecEnv, code_task_row, extract_code
from tool_envs.code.sandbox import SandboxPool, detect_isolation
from tool_envs.errors import EnvConfigError, TaskRowError

gym.register_envs(tool_envs)

ADD = code_task_row(
    task_id="add",
    statement="Return the sum of two integers.",
    tests={
        "kind": "assert",
        "entry_point": "add",
        "visible": ["assert add(1, 2) == 3"],
        "hidden": ["assert add(5, 5) == 10", "assert add(-1, 1) == 0", "assert add(0, 0) == 0",
                   "assert add(2, 2) == 4"],
    },
    starter_code="def add(a: int, b: int) -> int:\n    ...\n",
    reference_solution="def add(a, b):\n    return a + b\n",
    time_limit_s=1.0,
)  # fmt: skip
SQUARE = code_task_row(
    task_id="square",
    statement="Read an integer n and print n squared.",
    tests={
        "kind": "stdio",
        "visible": [{"input": "3\n", "output": "9\n"}],
        "hidden": [{"input": "4\n", "output": "16"}, {"input": "-5\n", "output": "25\n"}],
    },
    reference_solution="print(int(input()) ** 2)\n",
)

GOOD = "def add(a, b):\n    return a + b\n"
HALF = "def add(a, b):\n    return a + b if a != b else 0\n"  # passes 2 of 4 hidden tests
SLOW = "def add(a, b):\n    while True:\n        pass\n"


def call(name: str, code: str) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': {'code': code}})}\n</tool_call>"


def native_call(name: str, code: str) -> dict:
    """A tool call as a chat API returns it (arguments as a JSON string)."""
    arguments = json.dumps({"code": code})
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


def make(row=ADD, **kwargs):
    env = gym.make("tool_envs/CodeExec-v0", tasks=[row], **kwargs)
    env.reset(seed=0)
    return env


def submit(code: str, **kwargs) -> tuple[float, dict]:
    env = make(**kwargs)
    try:
        _, reward, terminated, _, info = env.step(call("submit", code))
        assert terminated
        return reward, info["reward_info"]
    finally:
        env.close()


def test_code_exec_reports_visible_test_failures_and_prints():
    env = make()
    obs, reward, terminated, _, info = env.step(
        call("code_exec", "def add(a, b):\n    print('debug', a)\n    return a - b\n")
    )
    text = obs[0]["content"]
    assert not terminated and reward == 0.0 and info["tool_errors"] == []
    assert text.startswith("Visible tests: 0/1 passed (1 failed).")
    assert "AssertionError at test_1.py line 1: `assert add(1, 2) == 3`" in text
    assert "stdout:\ndebug 1" in text
    obs, *_ = env.step(call("code_exec", "```python\n" + GOOD + "```"))  # fenced argument
    assert obs[0]["content"] == "Visible tests: 1/1 passed (1 passed)."
    env.close()


def test_code_exec_shows_load_errors_with_the_line():
    env = make()
    obs, *_ = env.step(call("code_exec", "def add(a, b):\n    return undefined_name\nadd(1, 2)\n"))
    text = obs[0]["content"]
    assert text.startswith("Your code failed to run: NameError")
    assert "solution.py line 2: `return undefined_name`" in text
    env.close()


def test_reset_info_says_what_model_code_can_reach():
    env = gym.make("tool_envs/CodeExec-v0", tasks=[ADD])
    _, info = env.reset(seed=0)
    report = detect_isolation()
    assert info["isolation"] == report.level.name.lower()
    assert info["isolation_guarantees"] == report.guarantees
    if report.level >= report.level.NAMESPACES:
        assert "no project, task-data or home files" in info["isolation_guarantees"]
    env.close()


def test_submit_grades_hidden_tests():
    reward, info = submit(GOOD)
    assert reward == 1.0
    assert info["reason"] == "all tests passed" and info["passed"] == info["total"] == 4
    assert (
        info["submitted_via"] == "submit"
        and info["isolation"] == detect_isolation().level.name.lower()
    )
    reward, info = submit(HALF)
    assert reward == 0.0 and info["reason"] == "some tests failed"
    assert info["passed"] == 2 and len(info["failures"]) == 2


def test_partial_credit_and_penalties():
    reward, _ = submit(HALF, partial_credit=True)
    assert reward == pytest.approx(0.5)
    reward, _ = submit(HALF, partial_credit=True, failure_penalty=0.25)
    assert reward == pytest.approx(0.25)
    reward, info = submit(SLOW, timeout_penalty=0.5, failure_penalty=0.1)
    assert reward == pytest.approx(-0.5) and info["reason"] == "a test ran out of time"
    assert info["counts"] == {"timeout": 4}
    reward, info = submit("def add(a, b) return a", failure_penalty=0.2)
    assert reward == pytest.approx(-0.2) and info["reason"] == "the solution failed to load"
    assert "SyntaxError" in info["load_error"]


def test_final_message_code_block_is_the_submission_or_nothing_is():
    env = make(no_submission_penalty=0.3)
    _, reward, terminated, _, info = env.step(f"Done:\n```python\n{GOOD}```")
    assert terminated and reward == 1.0 and info["reward_info"]["submitted_via"] == "reply"
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("I give up.")
    assert terminated and reward == pytest.approx(-0.3)
    assert info["reward_info"]["reason"] == "no submission"
    env.close()
    env = make(answer_from_reply=False)
    _, reward, _, _, info = env.step(f"```python\n{GOOD}```")
    assert reward == 0.0 and info["reward_info"]["reason"] == "no submission"
    env.close()


def test_stdio_tasks_compare_output_per_case():
    env = make(SQUARE)
    obs, *_ = env.step(call("code_exec", "print(int(input()) * 3)"))
    assert "wrong answer on input '3\\n': expected '9\\n', got '9\\n'" not in obs[0]["content"]
    assert obs[0]["content"].startswith("Visible tests: 1/1 passed")  # 3*3 == 3**2
    _, reward, _, _, info = env.step(call("submit", "print(int(input()) * 3)"))
    assert reward == 0.0 and "expected '16', got '12\\n'" in info["reward_info"]["failures"][0]
    env.reset(seed=0)
    _, reward, *_ = env.step(call("submit", "n = int(input())\nprint(n * n)\nexit(0)\n"))
    assert reward == 1.0
    env.close()


@pytest.mark.parametrize(
    ("attack", "expected"),
    [
        ("while True:\n    pass", "time limit exceeded"),
        ("x = bytearray(10**10)", "MemoryError"),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", ""),
        ("print('x' * 10**8)", ""),
        ("import os\nos._exit(0)", "exited before the tests reported"),
        ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)", "Error"),
        ("open('/etc/passwd', 'a').write('pwned')", "Error"),
        ("import os\nwhile True:\n    os.fork()", "Error"),
        ("import subprocess\nsubprocess.Popen(['sleep', '100'], start_new_session=True)", ""),
    ],
    ids=[
        *("loop", "memory", "kill-parent", "huge-output", "os-exit", "network", "write-host"),
        *("fork-bomb", "daemon"),
    ],
)
def test_attacks_are_contained_and_the_env_keeps_working(attack, expected):
    env = make()
    obs, _, terminated, truncated, _ = env.step(call("code_exec", attack))
    assert not terminated and not truncated
    assert "passed" in obs[0]["content"] or "failed" in obs[0]["content"]
    assert expected in obs[0]["content"]
    assert "1/1 passed" not in obs[0]["content"]
    obs, *_ = env.step(call("code_exec", GOOD))
    assert obs[0]["content"] == "Visible tests: 1/1 passed (1 passed)."
    _, reward, *_ = env.step(call("submit", GOOD))
    assert reward == 1.0
    env.close()


def test_one_worker_serves_many_episodes_and_close_stops_it():
    env = make()
    sandbox = env.unwrapped._owned
    for _ in range(3):
        env.reset(seed=0)
        env.step(call("code_exec", GOOD))
    assert env.unwrapped._owned is sandbox and sandbox.restarts == 0
    pid = sandbox._proc.pid
    env.close()
    assert not os.path.exists(f"/proc/{pid}")
    env.reset(seed=0)  # a closed env can start again with a fresh worker
    _, reward, *_ = env.step(call("submit", GOOD))
    assert reward == 1.0
    env.close()


def test_a_shared_pool_serves_several_envs_and_outlives_them():
    with SandboxPool(2) as pool:
        envs = [make(sandbox=pool) for _ in range(3)]
        rewards = [env.step(call("submit", GOOD))[1] for env in envs]
        for env in envs:
            env.close()
        assert rewards == [1.0, 1.0, 1.0]
        assert pool.run("print(1)").stdout == "1\n"  # closing the envs left the pool alone


def test_gold_turns_solve_the_task_and_pickled_envs_continue():
    env = make()
    turns = env.unwrapped.gold_turns(ADD)
    assert [json.loads(t.split("\n")[1])["name"] for t in turns] == ["code_exec", "submit"]
    env.step(turns[0])
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step(turns[1])[1] == env.step(turns[1])[1] == 1.0
    clone.close()
    env.close()
    assert env.unwrapped.gold_turns({"extra_info": {}}) is None


def test_bad_configuration_and_rows_raise_clear_errors():
    with pytest.raises(EnvConfigError, match="isolation='jail' is not one of"):
        CodeExecEnv(tasks=[ADD], isolation="jail")
    with pytest.raises(EnvConfigError, match="failure_penalty=-1 must be >= 0"):
        CodeExecEnv(tasks=[ADD], failure_penalty=-1)
    bad = json.loads(json.dumps(ADD))
    bad["reward_spec"]["tests"]["visible"] = [{"input": "1", "output": "1"}]
    env = gym.make("tool_envs/CodeExec-v0", tasks=[ADD])
    with pytest.raises(TaskRowError, match=r"reward_spec\.tests"):
        env.reset(options={"task": bad})
    env.close()
    with pytest.raises(TaskRowError, match="at least one test"):
        code_task_row(task_id="x", statement="s", tests={"kind": "assert"})


def test_extract_code_takes_the_last_block():
    text = "a\n```python\nx = 1\n```\nthen\n```\ny = 2\n```\n"
    assert extract_code(text) == "y = 2\n"
    assert extract_code("no code") is None


# -- the code the model meant is graded (issue 30) --------------------------------------------

EXAMPLE = "```python\nprint(add(1, 2))  # 3\n```\n"
WRONG = "def add(a, b):\n    return a - b\n"


def _reply(*blocks: str) -> str:
    return "Here is my answer.\n" + "\nFor example:\n".join(
        block if block.startswith("```") else f"```python\n{block}```\n" for block in blocks
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (_reply(GOOD, EXAMPLE), 1.0),  # the solution, then a usage example
        (_reply(GOOD, "assert add(2, 2) == 4\nprint('ok')\n"), 1.0),
        (_reply(GOOD, "```\n>>> add(1, 2)\n3\n```\n"), 1.0),  # a bare doctest block
        (_reply(WRONG, GOOD, EXAMPLE), 1.0),  # a draft, the fixed version, an example
        # A helper in its own block and a constant after the example: taken along.
        (_reply("def _plus(a, b):\n    return a + b + ZERO\n",
                "def add(a, b):\n    return _plus(a, b)\n", EXAMPLE, "ZERO = 0\n"), 1.0),
        (_reply(EXAMPLE), 0.0),  # an example alone defines nothing: graded as before
        (_reply(WRONG, EXAMPLE), 0.0),  # a wrong solution, then a right-looking example
        (_reply(GOOD, WRONG, EXAMPLE), 0.0),  # the last definition is the one graded
        (_reply("```python\ndef add(a, b):\n    return a + b\n```"
                "\n```text\nprint(add(1, 2))\n```\n"), 1.0),  # other languages are skipped
    ],
    ids=[
        "solution-then-example", "solution-then-asserts", "solution-then-doctest",
        "draft-fix-example", "helpers-in-other-blocks", "example-alone", "wrong-then-example",
        "right-then-wrong", "text-block",
    ],
)  # fmt: skip
def test_a_reply_is_graded_on_the_block_that_defines_the_entry_point(reply, expected):
    env = make()
    _, reward, terminated, _, info = env.step(reply)
    env.close()
    assert terminated and info["reward_info"]["submitted_via"] == "reply"
    assert reward == expected, info["reward_info"]


def test_submit_and_code_exec_apply_the_same_rule_to_fenced_arguments():
    env = make()
    obs, *_ = env.step(call("code_exec", _reply(GOOD, EXAMPLE).split("\n", 1)[1]))
    assert obs[0]["content"].startswith("Visible tests: 1/1 passed"), obs[0]["content"]
    _, reward, *_ = env.step(call("submit", _reply(GOOD, EXAMPLE).split("\n", 1)[1]))
    env.close()
    assert reward == 1.0


def test_stdio_replies_keep_the_last_code_block():
    env = make(SQUARE)
    _, reward, *_ = env.step(_reply("print(int(input()) ** 2)\n", "```text\n3\n```\n"))
    assert reward == 1.0  # a tagged sample-input block is not code
    env.reset(seed=0)
    _, reward, *_ = env.step(_reply("print(int(input()) ** 2)\n", "print(9)\n"))
    env.close()
    assert reward == 0.0  # no entry point to look for: the last block, as before


@pytest.mark.parametrize(
    "cheat",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        'print("@@tool-envs-judge-0@@" + \'{"load_error": null, "results": [["passed", ""]]}\')\n',
        "def add(a, b):\n    return a + b\nraise SystemExit(0)\n",
    ],
    ids=["sys-exit", "os-exit", "fake-result-line", "exit-after-defining"],
)
def test_exiting_early_or_faking_the_result_line_earns_nothing(cheat):
    reward, info = submit(cheat)
    assert reward == 0.0 and info["passed"] == 0, info


# -- nothing outlives its owner (issue 18) ----------------------------------------------------


def _children() -> list[tuple[int, str]]:
    """This process's children with their state (``Z`` for a zombie nobody reaped)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append((int(entry), fields[0]))
    return sorted(found)


def _sandbox_folders(pid: int | None = None) -> set[str]:
    """Sandbox folders of process ``pid`` (default: this one); other processes' come and go."""
    pattern = f"tool-envs-sandbox-{pid or os.getpid()}-*"
    return set(glob.glob(os.path.join(tempfile.gettempdir(), pattern)))


def _levels() -> list[str]:
    report = detect_isolation()
    return [name for name, ok in report.available.items() if ok]


def _unclosed_episodes(level: str, envs: int, episodes: int) -> None:
    for _ in range(envs):
        env = gym.make("tool_envs/CodeExec-v0", tasks=[ADD], isolation=level)
        for _ in range(episodes):
            env.reset(seed=0)
            obs, *_ = env.step(call("code_exec", GOOD))
            assert obs[0]["content"] == "Visible tests: 1/1 passed (1 passed)."
        del env  # never closed
        gc.collect()


@pytest.mark.parametrize("level", ["strongest", "rlimits"])
def test_unclosed_envs_leave_no_worker_zombie_or_folder(level):
    level = detect_isolation().level.name.lower() if level == "strongest" else level
    if level not in _levels():
        pytest.skip(f"the {level} level is not available here")
    children, folders = _children(), _sandbox_folders()
    # 300 unclosed episodes at the strongest level; the rlimits level (host folders) fewer.
    envs, episodes = (10, 30) if level == detect_isolation().level.name.lower() else (4, 5)
    _unclosed_episodes(level, envs, episodes)
    assert _children() == children
    assert _sandbox_folders() == folders


@pytest.mark.slow
@pytest.mark.parametrize("level", ["bwrap", "namespaces", "rlimits"])
def test_300_unclosed_episodes_leak_nothing_at_every_level(level):
    if level not in _levels():
        pytest.skip(f"the {level} level is not available here")
    children, folders = _children(), _sandbox_folders()
    _unclosed_episodes(level, 20, 15)
    assert _children() == children
    assert _sandbox_folders() == folders


def test_a_process_that_exits_without_closing_leaves_nothing():
    script = (
        "import json, sys\n"
        "import gymnasium as gym, tool_envs\n"
        "gym.register_envs(tool_envs)\n"
        "from tool_envs.code import code_task_row\n"
        f"row = json.loads({json.dumps(json.dumps(ADD))})\n"
        "out = []\n"
        f"for level in {_levels()!r}:\n"
        "    env = gym.make('tool_envs/CodeExec-v0', tasks=[row], isolation=level)\n"
        "    env.reset(seed=0)\n"
        f"    env.step({call('code_exec', GOOD)!r})\n"
        "    box = env.unwrapped._owned\n"
        "    out.append([box.uid, box._host_root, box._proc.pid])\n"
        "import os\n"
        "print(json.dumps({'pid': os.getpid(), 'boxes': out}))\n"  # and exit, closing nothing
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    for uid, host_root, pid in printed["boxes"]:
        assert not os.path.exists(f"/proc/{pid}"), f"worker {pid} outlived its process"
        assert host_root is None or not os.path.exists(host_root)
        assert _processes_of(uid) == []
    assert _sandbox_folders(printed["pid"]) == set()


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                found.append(int(entry))
        except OSError:
            continue
    return found


# -- the judge cannot be fooled or broken (issue 18) ------------------------------------------


_FORGED = {"load_error": None, "results": [["passed", ""]] * 4, "stdout": ""}


@pytest.mark.parametrize(
    "cheat",
    [
        "import builtins\nbuiltins.exec = lambda *a, **k: None\n",
        "import builtins\n_c = compile\n"
        "builtins.compile = lambda *a, **k: _c('pass', 'x', 'exec')\n",
        f"import json\njson.dumps = lambda *a, **k: {json.dumps(_FORGED)!r}\n",
        f"import builtins\nbuiltins.repr = lambda o: {repr(_FORGED)!r}\n",
    ],
    ids=["patch-exec", "patch-compile", "patch-json", "patch-repr"],
)
def test_patching_what_the_harness_uses_earns_nothing(cheat):
    reward, info = submit(cheat + "def add(a, b):\n    return -999\n")
    assert reward == 0.0 and info["passed"] == 0, info


# -- what a test compares is plain data (issue 30) ---------------------------------------------


@pytest.mark.parametrize(
    "cheat",
    [
        "def add(a, b):\n    return AlwaysEqual()\n",
        "class Int(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n\ndef add(a, b):\n    return Int(0)\n",
        "class Meta(type):\n    def __eq__(cls, other):\n        return True\n"
        "    __hash__ = type.__hash__\n\nclass K(metaclass=Meta):\n    pass\n\n"
        "def add(a, b):\n    return K\n",
        "def add(a, b):\n    return [AlwaysEqual()][0] if a == b else (AlwaysEqual(),)[0]\n",
        "def add(a, b):\n    return {'sum': [AlwaysEqual()]}['sum'][0]\n",
        "from unittest.mock import ANY\n\ndef add(a, b):\n    return ANY\n",
    ],
    ids=["always-equal", "int-subclass", "metaclass", "from-a-list", "from-a-dict", "mock-ANY"],
)
def test_a_value_that_is_not_plain_data_is_refused(cheat):
    reward, info = submit(ALWAYS_EQUAL + cheat)
    assert reward == 0.0 and info["passed"] == 0, info
    assert "not plain data" in info["failures"][0] and "refused" in info["failures"][0]


def _task(tests: list[str], entry: str = "f", **more) -> dict:
    return code_task_row(
        task_id="t",
        statement="s",
        tests={"kind": "assert", "entry_point": entry, "visible": tests, **more},
        time_limit_s=2.0,
    )


@pytest.mark.parametrize(
    ("tests", "solution", "expected"),
    [
        # The harness refuses what the guard saw even when the test swallows the exception.
        (["try:\n    assert f() == [1]\nexcept BaseException:\n    pass\n"],
         "def f():\n    return [AlwaysEqual()]\n", 0.0),
        # Iterators are checked item by item as the test consumes them.
        (["assert list(f()) == [1, 2]"], "def f():\n    return iter([AlwaysEqual()] * 2)\n", 0.0),
        (["assert list(f()) == [1, 2]"], "def f():\n    return map(int, '12')\n", 1.0),
        (["assert next(f()) == 1"], "def f():\n    yield 1\n", 1.0),
        # A LeetCode-style method is guarded too.
        (["assert Solution().f() == 1"],
         "class Solution:\n    def f(self):\n        return AlwaysEqual()\n", 0.0),
        (["assert Solution().f() == 1"], "class Solution:\n    def f(self):\n        return 1\n",
         1.0),
        # Plain data of every kind compares as before (float tolerance is the test's own).
        (["assert abs(f()[0] - 0.3) < 1e-9 and f()[1:] == (None, True, b'x', 2j)"],
         "def f():\n    return (0.1 + 0.2, None, True, b'x', 2j)\n", 1.0),
        (["import collections\nassert f() == collections.Counter('aab')"],
         "import collections\ndef f():\n    return collections.Counter('aab')\n", 1.0),
        (["assert f() == {1: [{2, 3}], 'k': (frozenset(), range(2))}"],
         "def f():\n    x = {1: [{2, 3}], 'k': (frozenset(), range(2))}\n    return x\n", 1.0),
        (["assert f() == [[]]"], "def f():\n    x = []\n    x.append(x)\n    return x\n", 0.0),
    ],
    ids=[
        "swallowed", "iterator-of-objects", "map", "generator", "solution-method",
        "solution-method-plain", "scalars", "counter", "nested", "self-containing-list-ends",
    ],
)  # fmt: skip
def test_the_guard_refuses_objects_and_passes_plain_data(tests, solution, expected):
    reward, info = submit(ALWAYS_EQUAL + solution, row=_task(tests))
    assert reward == expected, info


def test_a_row_can_allow_objects_and_more_data_types():
    cheat = ALWAYS_EQUAL + "def f():\n    return AlwaysEqual()\n"
    assert submit(cheat, row=_task(["assert f() == 1"], returns="any"))[0] == 1.0
    date = "import datetime\ndef f():\n    return datetime.date(2020, 1, 2)\n"
    test = ["import datetime\nassert f() == datetime.date(2020, 1, 2)"]
    assert submit(date, row=_task(test))[0] == 0.0  # not plain data unless the row says so
    assert submit(date, row=_task(test, data_types=["datetime.date"]))[0] == 1.0
    reward, info = submit(date, row=_task(test, data_types=["no_such_module.Date"]))
    assert reward == 0.0 and "reward_spec.tests.data_types" in info["load_error"]
    for bad, message in [
        ({"returns": "objects"}, "returns"),
        ({"data_types": ["date"]}, "not an import path"),
        ({"data_types": "datetime.date"}, "data_types"),
    ]:
        with pytest.raises(TaskRowError, match=message):
            _task(["assert f() == 1"], **bad)
    with pytest.raises(TaskRowError, match="only apply to assert tests"):
        code_task_row(
            task_id="t", statement="s", tests={**SQUARE["reward_spec"]["tests"], "returns": "any"}
        )


@pytest.mark.parametrize(
    "solution",
    [
        "def add(a, b):\n    return a + b\nraise ValueError('" + "b" * 1_000_000 + "')\n",
        "def add(a, b):\n    assert False, 'c' * 1_000_000\n",
        "def add(a, b):\n    return a + b\nX = '" + "a" * 1_000_000 + "'\n",
        "import os\nos.write(1, b'x' * 10**7)\ndef add(a, b):\n    return a + b\n",
    ],
    ids=["huge-load-error", "huge-assert-message", "megabyte-source", "flood-stdout"],
)
def test_a_megabyte_submission_is_judged_not_raised(solution):
    # Native tool calls: text of a megabyte is past what the parsers read (MAX_PARSE_CHARS).
    env = make()
    action = {"role": "assistant", "content": "", "tool_calls": [native_call("submit", solution)]}
    _, reward, terminated, _, info = env.step(action)
    env.close()
    info = info["reward_info"]
    assert terminated
    expected = 1.0 if "X = '" in solution else 0.0
    assert reward == expected, info
    assert all(len(line) < 1000 for line in info["failures"])

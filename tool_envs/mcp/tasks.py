"""Seeded, rule-based task sets for ``tool_envs/MCP-v0`` over servers that run offline.

Three families, each answered with the same logic the servers use:

- ``time``: time-zone conversions at a fixed date and time given in the question, and current UTC
  offsets (``mcp-server-time``: ``convert_time``, ``get_current_time``). Only zone pairs whose
  offset difference never changes are used (zones without daylight saving time, or European
  zones that all switch at 01:00 UTC), so the server, which converts at today's date, gives the
  same clock time as :mod:`zoneinfo` at the question's date.
- ``git``: facts about a generated repository (``mcp-server-git``: ``git_log``, ``git_show``,
  ``git_diff``, ``git_status``, ``git_branch``). :func:`build_demo_repository` writes it with
  fixed authors, dates and contents, so its commit hashes are the same on every machine.
- ``python``: small computations for the built-in python server (``run_python``); the gold
  answer is what the gold program prints.

Rows follow the task-row schema; ``reward_spec["ground_truth"]`` holds ``success``,
``tool_sequence``, ``limits`` (distinct servers and tools a solution needs), ``answer``,
``param_match`` and ``order`` (see :mod:`tool_envs.mcp.reward`). :func:`servers_config` gives the
``mcpServers`` config that runs the three servers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from tool_envs.core.once import built_once

ENV_ID = "tool_envs/MCP-v0"
# Where task questions say the repository is; ``ensure_demo_repository`` builds it there.
DEMO_REPO_PATH = "/tmp/tool-envs-mcp/demo-repo"
DEFAULT_SIZES = {"train": 600, "test": 120}

SYSTEM_PROMPT = (
    "You are an assistant with tools from MCP servers. Call the tools you need to find the "
    "answer; do not guess. Then reply with the final answer only, in the format the question asks."
)

# --------------------------------------------------------------------------------------- time

# Zones with no daylight saving time (and none planned): their offsets never change.
FIXED_ZONES = {
    "Asia/Tokyo": "Tokyo",
    "Asia/Kolkata": "Kolkata",
    "Asia/Shanghai": "Shanghai",
    "Asia/Singapore": "Singapore",
    "Asia/Dubai": "Dubai",
    "Asia/Kathmandu": "Kathmandu",
    "Asia/Seoul": "Seoul",
    "Asia/Jakarta": "Jakarta",
    "Asia/Bangkok": "Bangkok",
    "Asia/Karachi": "Karachi",
    "Asia/Manila": "Manila",
    "Africa/Nairobi": "Nairobi",
    "Africa/Lagos": "Lagos",
    "America/Bogota": "Bogota",
    "America/Lima": "Lima",
    "America/Phoenix": "Phoenix",
    "Pacific/Honolulu": "Honolulu",
    "Australia/Brisbane": "Brisbane",
    "Etc/UTC": "UTC",
}
# European zones switch to and from summer time at the same instant (01:00 UTC).
EUROPEAN_ZONES = {
    "Europe/London": "London",
    "Europe/Lisbon": "Lisbon",
    "Europe/Paris": "Paris",
    "Europe/Berlin": "Berlin",
    "Europe/Madrid": "Madrid",
    "Europe/Rome": "Rome",
    "Europe/Warsaw": "Warsaw",
    "Europe/Athens": "Athens",
    "Europe/Helsinki": "Helsinki",
}
_ZONE_GROUPS = (FIXED_ZONES, EUROPEAN_ZONES)


def utc_offset(zone: str, when: dt.datetime | None = None) -> str:
    """``+HH:MM`` offset of ``zone`` at ``when`` (naive = wall time there; default 2024-01-15)."""
    moment = (when or dt.datetime(2024, 1, 15, 12, 0)).replace(tzinfo=ZoneInfo(zone))
    return moment.strftime("%z")[:3] + ":" + moment.strftime("%z")[3:]


def convert(source: str, wall: dt.datetime, target: str) -> dt.datetime:
    """``wall`` (naive, in ``source``) as a naive wall time in ``target``, as mcp-server-time."""
    moment = wall.replace(tzinfo=ZoneInfo(source))
    return moment.astimezone(ZoneInfo(target)).replace(tzinfo=None)


def _random_day(rng: np.random.Generator) -> dt.date:
    return dt.date(2024, 1, 1) + dt.timedelta(days=int(rng.integers(0, 731)))


def _zone_pair(rng: np.random.Generator) -> tuple[str, str]:
    group = list(_ZONE_GROUPS[int(rng.integers(0, 2))])
    first, second = rng.choice(len(group), size=2, replace=False)
    return group[int(first)], group[int(second)]


def _city(zone: str) -> str:
    return FIXED_ZONES.get(zone) or EUROPEAN_ZONES[zone]


def _time_convert_task(rng: np.random.Generator) -> dict[str, Any]:
    source, target = _zone_pair(rng)
    day = _random_day(rng)
    wall = dt.datetime.combine(
        day, dt.time(int(rng.integers(0, 24)), int(rng.choice([0, 15, 30, 45])))
    )
    result = convert(source, wall, target)
    hhmm = wall.strftime("%H:%M")
    where = f"in {_city(source)} ({source})"
    there = f"{_city(target)} ({target})"
    if rng.random() < 0.5:
        question = (
            f"On {wall:%A, %d %B %Y}, a call is scheduled at {hhmm} {where}. What time is it "
            f"then in {there}? Answer in 24-hour HH:MM format."
        )
        answer = result.strftime("%H:%M")
    else:
        question = (
            f"When it is {hhmm} on {day.isoformat()} {where}, what are the date and time in "
            f"{there}? Answer as YYYY-MM-DD HH:MM."
        )
        answer = result.strftime("%Y-%m-%d %H:%M")
    params = {"source_timezone": source, "time": hhmm, "target_timezone": target}
    return _task(
        "time_conversion",
        question,
        answer,
        [("time", "convert_time", params)],
        param_match="exact",
    )


def _time_chain_task(rng: np.random.Generator) -> dict[str, Any]:
    group = list(_ZONE_GROUPS[int(rng.integers(0, 2))])
    first, second, third = (group[int(i)] for i in rng.choice(len(group), size=3, replace=False))
    day = _random_day(rng)
    wall = dt.datetime.combine(day, dt.time(int(rng.integers(0, 24)), int(rng.choice([0, 30]))))
    middle = convert(first, wall, second)
    final = convert(second, middle, third)
    question = (
        f"A message leaves {_city(first)} ({first}) at {wall:%H:%M} local time on "
        f"{day.isoformat()}. Convert that time to {_city(second)} ({second}) time, and then "
        f"convert the {_city(second)} time to {_city(third)} ({third}) time. What is the final "
        "time in HH:MM?"
    )
    steps = [
        (
            "time",
            "convert_time",
            {"source_timezone": first, "time": f"{wall:%H:%M}", "target_timezone": second},
        ),
        (
            "time",
            "convert_time",
            {"source_timezone": second, "time": f"{middle:%H:%M}", "target_timezone": third},
        ),
    ]
    return _task("time_chain", question, final.strftime("%H:%M"), steps, param_match="exact")


def _time_offset_task(rng: np.random.Generator) -> dict[str, Any]:
    zone = str(rng.choice(sorted(FIXED_ZONES)))
    question = (
        f"Look up the current time in {_city(zone)} ({zone}). What is its UTC offset right now? "
        "Answer as +HH:MM or -HH:MM."
    )
    return _task(
        "current_time",
        question,
        utc_offset(zone),
        [("time", "get_current_time", {"timezone": zone})],
        param_match="exact",
    )


# ---------------------------------------------------------------------------------------- git

_AUTHORS = {
    "ada": ("Ada Lovelace", "ada@example.com"),
    "grace": ("Grace Hopper", "grace@example.com"),
    "alan": ("Alan Turing", "alan@example.com"),
    "katherine": ("Katherine Johnson", "katherine@example.com"),
}

# (author, ISO date, message, {path: new content, or None to delete}); on branch main.
_MAIN_HISTORY: tuple[tuple[str, str, str, dict[str, str | None]], ...] = (
    (
        "ada",
        "2024-01-08T09:15:00+00:00",
        "Initial commit",
        {
            "README.md": "# Orbit\n\nA tiny orbital mechanics toolkit.\n",
            "VERSION": "0.1.0\n",
            ".gitignore": "__pycache__/\n*.pyc\n",
        },
    ),
    (
        "ada",
        "2024-01-09T14:02:00+00:00",
        "Add orbit period calculator",
        {
            "orbit/period.py": "import math\n\n\ndef period(a, mu):\n"
            "    return 2 * math.pi * math.sqrt(a**3 / mu)\n",
            "orbit/__init__.py": "",
        },
    ),
    (
        "grace",
        "2024-01-12T10:40:00+00:00",
        "Add unit tests for period",
        {
            "tests/test_period.py": "from orbit.period import period\n\n\ndef test_circular():\n"
            "    assert period(1.0, 4 * 3.141592653589793**2) > 0.99\n",
        },
    ),
    (
        "alan",
        "2024-01-15T16:20:00+00:00",
        "Add escape velocity helper",
        {
            "orbit/escape.py": "import math\n\n\ndef escape_velocity(mu, r):\n"
            "    return math.sqrt(2 * mu / r)\n",
        },
    ),
    (
        "katherine",
        "2024-01-18T08:05:00+00:00",
        "Document units in README",
        {
            "README.md": "# Orbit\n\nA tiny orbital mechanics toolkit.\n\n"
            "All inputs are SI units.\n",
        },
    ),
    ("grace", "2024-01-22T11:30:00+00:00", "Bump version to 0.2.0", {"VERSION": "0.2.0\n"}),
    (
        "katherine",
        "2024-02-01T13:45:00+00:00",
        "Add Hohmann transfer delta-v",
        {
            "orbit/transfer.py": "import math\n\n\ndef hohmann(mu, r1, r2):\n"
            "    a = (r1 + r2) / 2\n"
            "    v1 = math.sqrt(mu / r1)\n"
            "    return math.sqrt(mu * (2 / r1 - 1 / a)) - v1\n",
            "tests/test_transfer.py": "from orbit.transfer import hohmann\n\n\n"
            "def test_same_orbit():\n"
            "    assert hohmann(1.0, 1.0, 1.0) == 0.0\n",
        },
    ),
    (
        "alan",
        "2024-02-05T17:10:00+00:00",
        "Fix escape velocity docstring",
        {
            "orbit/escape.py": "import math\n\n\ndef escape_velocity(mu, r):\n"
            '    """Escape speed (m/s) at distance r (m)."""\n'
            "    return math.sqrt(2 * mu / r)\n",
        },
    ),
    (
        "ada",
        "2024-02-09T09:00:00+00:00",
        "Add changelog",
        {
            "CHANGELOG.md": "# Changelog\n\n## 0.2.0\n- transfers\n- escape velocity\n",
        },
    ),
    (
        "grace",
        "2024-02-14T15:25:00+00:00",
        "Remove gitignore entry for pyc files",
        {
            ".gitignore": "__pycache__/\n",
        },
    ),
    (
        "katherine",
        "2024-02-20T10:10:00+00:00",
        "Add constants module",
        {
            "orbit/constants.py": "MU_EARTH = 3.986004418e14\nR_EARTH = 6.371e6\n",
        },
    ),
    (
        "alan",
        "2024-03-01T12:00:00+00:00",
        "Drop the transfer test",
        {
            "tests/test_transfer.py": None,
        },
    ),
    (
        "ada",
        "2024-03-04T08:30:00+00:00",
        "Release 0.3.0",
        {
            "VERSION": "0.3.0\n",
            "CHANGELOG.md": "# Changelog\n\n## 0.3.0\n- constants\n\n"
            "## 0.2.0\n- transfers\n- escape velocity\n",
        },
    ),
)
_BRANCHES = ("feature/plots", "docs/tutorial")


def _git(path: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
        "TZ": "UTC",
    }
    done = subprocess.run(
        ["git", *args], cwd=path, env={**base, **(env or {})}, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {path}: {done.stderr.strip()}")
    return done.stdout


def build_demo_repository(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Write the demo repository at ``path`` (an empty or missing folder); return its facts.

    Authors, dates, messages and contents are fixed and git's user config is ignored, so the
    commit hashes are the same on every machine. Facts: ``commits`` (oldest first: ``hash``,
    ``author``, ``email``, ``date``, ``message``, ``files`` changed, ``contents`` of every file
    after the commit), ``branch`` (checked out) and ``branches``.
    """
    root = Path(path)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty; build the demo repository in a new folder")
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    tree: dict[str, str] = {}
    commits = []
    for author, date, message, changes in _MAIN_HISTORY:
        for name, content in changes.items():
            file = root / name
            if content is None:
                file.unlink()
                tree.pop(name)
                _git(root, "rm", "-q", "--cached", "--", name)
                continue
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(content)
            tree[name] = content
            _git(root, "add", "--", name)
        who, email = _AUTHORS[author]
        env = {
            "GIT_AUTHOR_NAME": who,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": who,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        _git(root, "commit", "-q", "-m", message, env=env)
        commits.append(
            {
                "hash": _git(root, "rev-parse", "HEAD").strip(),
                "author": who,
                "email": email,
                "date": date,
                "message": message,
                "files": sorted(changes),
                "contents": dict(sorted(tree.items())),
            }
        )
    for branch in _BRANCHES:
        _git(root, "branch", branch, commits[-4]["hash"])
    return {"commits": commits, "branch": "main", "branches": sorted(["main", *_BRANCHES])}


@functools.lru_cache(maxsize=1)
def demo_repository_facts() -> dict[str, Any]:
    """The facts of the demo repository (built once in a temporary folder)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return build_demo_repository(Path(folder) / "repo")


def ensure_demo_repository(path: str | os.PathLike[str] = DEMO_REPO_PATH) -> Path:
    """Build the demo repository at ``path`` unless it is already there (same HEAD).

    Built in a folder beside ``path`` and renamed into place, so processes that start at once
    (ranks of one run, test workers) never see a half-built repository: one rename wins, the
    others find the finished one."""
    root = Path(path)
    if not (root / ".git").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
        try:
            build_demo_repository(staging)
            try:
                staging.rename(root)
            except OSError:  # another process put it there first (or root is a non-empty folder)
                if not (root / ".git").exists():
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    head = demo_repository_facts()["commits"][-1]["hash"]
    found = subprocess.run(
        ["git", "rev-parse", "main"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    if found != head:
        raise FileExistsError(f"{root} holds another repository (main at {found or '?'})")
    return root


def _git_task(rng: np.random.Generator, facts: dict[str, Any], kind: str, index: int) -> dict:
    repo = DEMO_REPO_PATH
    commit = facts["commits"][index]
    short = commit["hash"][:7]
    in_repo = f"In the git repository at {repo}"
    # git_log shows 10 commits by default: the gold call asks for all. Its parameters are not
    # graded (any max_count that reaches the commit is right); the answer is.
    log = ("git", "git_log", {"repo_path": repo, "max_count": 50})
    show = ("git", "git_show", {"repo_path": repo, "revision": short})
    if kind == "author":
        question = (
            f'{in_repo}, who authored the commit with the message "{commit["message"]}"? '
            "Give the author's name."
        )
        return _task("git_log", question, commit["author"], [log], param_match="ignore")
    if kind == "hash":
        question = (
            f'{in_repo}, what is the full 40-character hash of the commit "{commit["message"]}"?'
        )
        return _task("git_log", question, commit["hash"], [log], param_match="ignore")
    if kind == "date":
        question = (
            f'{in_repo}, on which date was the commit "{commit["message"]}" authored? '
            "Answer as YYYY-MM-DD."
        )
        return _task("git_log", question, commit["date"][:10], [log], param_match="ignore")
    if kind == "message":
        question = f"{in_repo}, what is the message of commit {short}?"
        return _task("git_show", question, commit["message"], [show])
    if kind == "files":
        question = (
            f"{in_repo}, which files did commit {short} add, change or delete? List the paths in "
            "alphabetical order, separated by commas."
        )
        return _task("git_show", question, ", ".join(commit["files"]), [show])
    if kind == "version":
        question = f"{in_repo}, what version number does the VERSION file hold at commit {short}?"
        step = ("git", "git_show", {"repo_path": repo, "revision": f"{short}:VERSION"})
        return _task("git_show", question, commit["contents"]["VERSION"].strip(), [step])
    if kind == "diff":
        head = facts["commits"][-1]["contents"]
        old = commit["contents"]
        count = sum(1 for name in set(head) | set(old) if head.get(name) != old.get(name))
        question = (
            f"{in_repo}, how many files differ between commit {short} and the current working "
            "tree? Answer with a number."
        )
        step = ("git", "git_diff", {"repo_path": repo, "target": short})
        return _task("git_diff", question, str(count), [step])
    raise ValueError(f"unknown git task kind {kind!r}")


def _git_repo_tasks(facts: dict[str, Any]) -> list[dict[str, Any]]:
    repo = DEMO_REPO_PATH
    in_repo = f"In the git repository at {repo}"
    commits = facts["commits"]
    rows = [
        _task(
            "git_status",
            f"{in_repo}, which branch is checked out? Give the branch name.",
            facts["branch"],
            [("git", "git_status", {"repo_path": repo})],
        ),
        _task(
            "git_branch",
            f"{in_repo}, list the local branches in alphabetical order, separated by commas.",
            ", ".join(facts["branches"]),
            [("git", "git_branch", {"repo_path": repo, "branch_type": "local"})],
        ),
        _task(
            "git_log",
            f"{in_repo}, what is the message of the most recent commit on the current branch?",
            commits[-1]["message"],
            [("git", "git_log", {"repo_path": repo})],
            param_match="ignore",
        ),
        _task(
            "git_log",
            f"{in_repo}, how many commits are on the current branch? Answer with a number.",
            str(len(commits)),
            [("git", "git_log", {"repo_path": repo, "max_count": 50})],
            param_match="ignore",
        ),
    ]
    for name, _ in sorted(_AUTHORS.values()):
        count = sum(commit["author"] == name for commit in commits)
        rows.append(
            _task(
                "git_log",
                f"{in_repo}, how many commits on the current branch were authored by {name}? "
                "Answer with a number.",
                str(count),
                [("git", "git_log", {"repo_path": repo, "max_count": 50})],
                param_match="ignore",
            )
        )
    return rows


_GIT_KINDS = ("author", "hash", "date", "message", "files", "version", "diff")


def _all_git_tasks(rng: np.random.Generator) -> list[dict[str, Any]]:
    facts = demo_repository_facts()
    rows = _git_repo_tasks(facts)
    for kind in _GIT_KINDS:
        for index in range(len(facts["commits"])):
            if kind == "diff" and index == len(facts["commits"]) - 1:
                continue  # HEAD itself: nothing differs
            rows.append(_git_task(rng, facts, kind, index))
    return rows


# ------------------------------------------------------------------------------------- python


def _python_program(rng: np.random.Generator) -> tuple[str, str, str]:
    """(family, question, gold program) of one computation."""
    family = str(rng.choice(list(_PYTHON_FAMILIES)))
    return (family, *_PYTHON_FAMILIES[family](rng))


@dataclass(frozen=True)
class _OneNumber:
    """A computation on one integer ``n`` drawn from ``[low, high)``: its question and its gold
    program, each with ``{n}`` where the number goes."""

    low: int
    high: int
    question: str
    program: str

    def __call__(self, rng: np.random.Generator) -> tuple[str, str]:
        n = int(rng.integers(self.low, self.high))
        return self.question.format(n=n), self.program.format(n=n)


_sum_squares = _OneNumber(
    10,
    5000,
    "What is the sum of the squares of the integers from 1 to {n}?",
    "print(sum(k * k for k in range(1, {n} + 1)))",
)
_fibonacci = _OneNumber(
    20,
    150,
    "With F(0) = 0 and F(1) = 1, what is the Fibonacci number F({n})?",
    "a, b = 0, 1\nfor _ in range({n}):\n    a, b = b, a + b\nprint(a)",
)
_count_primes = _OneNumber(
    100,
    50000,
    "How many prime numbers are smaller than {n}?",
    "n = {n}\nsieve = bytearray([1]) * n\nsieve[:2] = b'\\x00\\x00'\n"
    "for i in range(2, int(n ** 0.5) + 1):\n    if sieve[i]:\n"
    "        sieve[i * i::i] = bytearray(len(sieve[i * i::i]))\nprint(sum(sieve))",
)


def _digit_sum_power(rng: np.random.Generator) -> tuple[str, str]:
    base, exponent = int(rng.integers(2, 10)), int(rng.integers(50, 1000))
    return (
        f"What is the sum of the decimal digits of {base}^{exponent}?",
        f"print(sum(int(d) for d in str({base} ** {exponent})))",
    )


_factorial_zeros = _OneNumber(
    10,
    1000,
    "How many trailing zeros does {n}! (the factorial of {n}) have?",
    "import math\ns = str(math.factorial({n}))\nprint(len(s) - len(s.rstrip('0')))",
)


def _gcd_lcm(rng: np.random.Generator) -> tuple[str, str]:
    a, b = int(rng.integers(100, 100000)), int(rng.integers(100, 100000))
    if rng.random() < 0.5:
        return (
            f"What is the greatest common divisor of {a} and {b}?",
            f"import math\nprint(math.gcd({a}, {b}))",
        )
    return (
        f"What is the least common multiple of {a} and {b}?",
        f"import math\nprint(math.lcm({a}, {b}))",
    )


_collatz = _OneNumber(
    3,
    100000,
    "Starting from {n}, how many steps of the Collatz rule (n/2 if n is even, else 3n+1) "
    "does it take to reach 1?",
    "n, steps = {n}, 0\nwhile n != 1:\n    n = n // 2 if n % 2 == 0 else 3 * n + 1\n"
    "    steps += 1\nprint(steps)",
)
_divisors = _OneNumber(
    100,
    1000000,
    "How many positive divisors does {n} have?",
    "n = {n}\ncount = 0\nd = 1\nwhile d * d <= n:\n    if n % d == 0:\n"
    "        count += 1 if d * d == n else 2\n    d += 1\nprint(count)",
)


_PYTHON_FAMILIES: dict[str, Callable[[np.random.Generator], tuple[str, str]]] = {
    "sum_of_squares": _sum_squares,
    "fibonacci": _fibonacci,
    "count_primes": _count_primes,
    "digit_sum_of_power": _digit_sum_power,
    "factorial_trailing_zeros": _factorial_zeros,
    "gcd_lcm": _gcd_lcm,
    "collatz_steps": _collatz,
    "divisor_count": _divisors,
}


def run_gold_program(code: str) -> str:
    """What the program prints (stripped). Runs only this module's own gold programs."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<gold>", "exec"), {"__name__": "__main__"})
    return out.getvalue().strip()


def _python_task(rng: np.random.Generator) -> dict[str, Any]:
    family, question, code = _python_program(rng)
    question += " Compute it with the Python tool and answer with the number only."
    answer = run_gold_program(code)
    return _task(
        f"python_{family}",
        question,
        answer,
        [("python", "run_python", {"code": code})],
        param_match="ignore",
    )


# ---------------------------------------------------------------------------------------- rows


def _task(
    category: str,
    question: str,
    answer: str,
    steps: list[tuple[str, str, dict[str, Any]]],
    *,
    param_match: str = "subset",
    order: str = "ordered",
) -> dict[str, Any]:
    servers = sorted({server for server, _, _ in steps})
    tools = sorted({f"{server}/{tool}" for server, tool, _ in steps})
    ground_truth = {
        "success": {"must_call_tool": tools[0] if len(tools) == 1 else tools},
        "tool_sequence": [
            {"step": number, "server": server, "tool": tool, "params": params}
            for number, (server, tool, params) in enumerate(steps, 1)
        ],
        "limits": {"max_servers": len(servers), "max_tools": len(tools)},
        "answer": answer,
        "param_match": param_match,
        "order": order,
    }
    return {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": question},
        ],
        "env_id": ENV_ID,
        "reward_spec": {"ground_truth": ground_truth},
        "extra_info": {"servers": servers, "category": category},
    }


def task_key(task: Mapping[str, Any]) -> str:
    """Identity of a task: its gold calls and answer (a time conversion or computation asked in
    other words is the same task); git tasks, whose calls repeat, also by their question."""
    truth = task["reward_spec"]["ground_truth"]
    question = task["prompt"][-1]["content"] if "git" in task["extra_info"]["servers"] else ""
    return json.dumps([truth["tool_sequence"], truth["answer"], question], sort_keys=True)


# Shares of each family in a split (git is capped by the number of distinct git facts).
_MIX = {"time": 0.45, "python": 0.42, "git": 0.13}


def generate_splits(
    sizes: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Task rows per split; no task (same gold calls and answer) occurs in two splits or twice.

    Git tasks come from a fixed pool (about 100), dealt out to the splits in shuffled order, so
    very large sizes are filled with time and python tasks.
    """
    sizes = dict(sizes or DEFAULT_SIZES)
    for split, size in sizes.items():
        if not isinstance(size, int) or size < 0:
            raise ValueError(
                f"size of split {split!r} must be a non-negative integer, got {size!r}"
            )
    rng = np.random.default_rng(seed)
    git_pool = _all_git_tasks(rng)
    order = rng.permutation(len(git_pool))
    git_pool = [git_pool[int(i)] for i in order]
    total = sum(sizes.values()) or 1
    pool_size = len(git_pool)
    seen: set[str] = set()
    splits: dict[str, list[dict[str, Any]]] = {}
    for split, size in sizes.items():
        git_count = min(round(size * _MIX["git"]), round(pool_size * size / total))
        rows = [git_pool.pop() for _ in range(min(git_count, len(git_pool)))]
        for row in rows:
            seen.add(task_key(row))
        time_count = round((size - len(rows)) * _MIX["time"] / (_MIX["time"] + _MIX["python"]))
        targets = [("time", time_count), ("python", size - len(rows) - time_count)]
        for family, count in targets:
            made = 0
            while made < count:
                if family == "python":
                    task = _python_task(rng)
                else:
                    draw = rng.random()
                    if draw < 0.1:
                        task = _time_offset_task(rng)
                    elif draw < 0.25:
                        task = _time_chain_task(rng)
                    else:
                        task = _time_convert_task(rng)
                key = task_key(task)
                if key in seen:
                    continue
                seen.add(key)
                rows.append(task)
                made += 1
        shuffled = [rows[int(i)] for i in rng.permutation(len(rows))]
        for number, row in enumerate(shuffled):
            row["extra_info"] = {
                "id": f"mcp-{split}-{number:05d}",
                **row["extra_info"],
                "split": split,
            }
        splits[split] = shuffled
    return splits


@built_once
def default_splits() -> dict[str, list[dict[str, Any]]]:
    """The shipped task set (also written to ``datasets/mcp_tasks``)."""
    return generate_splits()


def servers_config(repo_path: str | os.PathLike[str] = DEMO_REPO_PATH) -> dict[str, Any]:
    """The ``mcpServers`` config that runs the servers these tasks need.

    ``time`` and ``git`` are the PyPI servers (run with this interpreter, so they need not be on
    PATH); ``python`` is the built-in sandbox server.
    """
    return {
        "mcpServers": {
            "time": {
                "command": sys.executable,
                "args": ["-m", "mcp_server_time", "--local-timezone", "Etc/UTC"],
            },
            "git": {
                "command": sys.executable,
                "args": ["-m", "mcp_server_git", "--repository", str(repo_path)],
            },
            "python": {
                "command": sys.executable,
                "args": ["-m", "tool_envs.mcp.servers", "python"],
            },
        }
    }


__all__ = [
    "DEMO_REPO_PATH",
    "ENV_ID",
    "build_demo_repository",
    "default_splits",
    "demo_repository_facts",
    "ensure_demo_repository",
    "generate_splits",
    "run_gold_program",
    "servers_config",
    "task_key",
]


def default_servers() -> dict[str, Any]:
    """The servers the default task set needs, with the demo repository built where the
    questions say it is (``MCPEnv(servers=None)`` uses this)."""
    ensure_demo_repository(DEMO_REPO_PATH)
    return servers_config(DEMO_REPO_PATH)

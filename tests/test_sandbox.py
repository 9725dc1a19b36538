"""Sandbox API and escape tests, run at every isolation level this machine offers.

Each escape test asserts the specific way the attempt is contained, then the module ends with a
normal run on the same (long-lived) sandbox to show it kept working.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("the sandbox needs Linux", allow_module_level=True)

from tool_envs.code.sandbox import (
    IsolationLevel,
    IsolationReport,
    RunRequest,
    Sandbox,
    SandboxPool,
    SandboxUnavailable,
    detect_isolation,
    doctor,
)

LEVELS = [IsolationLevel.BWRAP, IsolationLevel.NAMESPACES, IsolationLevel.RLIMITS]


def _missing(level: IsolationLevel) -> str | None:
    """The skip reason: the deciding cause and its fix first, then the probe's other notes."""
    report = detect_isolation()
    if report.level == IsolationLevel.NONE or not report.uid_switch:
        return "no unprivileged uid to switch to: " + str(report.why_not(IsolationLevel.RLIMITS))
    return report.why_not(level)


@pytest.fixture(scope="module", params=LEVELS, ids=lambda lvl: lvl.name.lower())
def sandbox(request: pytest.FixtureRequest):
    reason = _missing(request.param)
    if reason:
        pytest.skip(reason)
    with Sandbox(request.param) as sb:
        yield sb


def _procs_of(uid: int) -> list[int]:
    """Live processes of a uid. Zombies are left out: outside a pid namespace, the orphans of a
    killed worker are reaped by the host's init, whenever it gets to it."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            found.append(int(entry))
    return found


# -- API -------------------------------------------------------------------------------------


def test_stdout_stderr_exit_code(sandbox: Sandbox) -> None:
    res = sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 3)
    assert not res.timed_out and not res.memory_exceeded and not res.ok
    assert res.isolation == sandbox.isolation
    assert res.duration_s > 0  # measured; how fast a run is belongs in benchmarks/, not here


def test_exception_gives_traceback_and_status_1(sandbox: Sandbox) -> None:
    res = sandbox.run("def f():\n    raise ValueError('boom')\nf()")
    assert res.exit_code == 1 and "ValueError: boom" in res.stderr


def test_stdin_and_files(sandbox: Sandbox) -> None:
    req = RunRequest(
        code=(
            "import sys, helper\n"
            "data = open('data/in.bin', 'rb').read()\n"
            "print(sys.stdin.read().strip().upper(), helper.VALUE, len(data))\n"
            "open('written.txt', 'w').write('ok')\n"
        ),
        stdin="hello",
        files={"helper.py": "VALUE = 42\n", "data/in.bin": b"\x00\x01\x02"},
    )
    res = sandbox.run(req)
    assert res.ok, res.stderr
    assert res.stdout == "HELLO 42 3\n"


def test_bad_file_name_rejected(sandbox: Sandbox) -> None:
    with pytest.raises(RuntimeError, match="inside the work dir"):
        sandbox.run(RunRequest(code="pass", files={"../evil.py": "x"}))


def test_time_limit_infinite_loop(sandbox: Sandbox) -> None:
    res = sandbox.run(RunRequest(code="while True:\n    pass", time_limit_s=0.5))
    assert res.timed_out and res.exit_code < 0
    assert res.duration_s < 2.5


def test_wall_time_limit_sleep(sandbox: Sandbox) -> None:
    res = sandbox.run(RunRequest(code="import time\ntime.sleep(60)", time_limit_s=0.3))
    assert res.timed_out and res.duration_s < 2


def test_memory_bomb(sandbox: Sandbox) -> None:
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 1024 * 1024))"
    res = sandbox.run(RunRequest(code=code, memory_limit_mb=128))
    assert res.memory_exceeded and res.exit_code != 0 and not res.timed_out


def test_huge_output_truncated(sandbox: Sandbox) -> None:
    code = "while True:\n    print('x' * 10000)"
    res = sandbox.run(RunRequest(code=code, output_limit_bytes=50_000, time_limit_s=5))
    assert res.output_truncated and len(res.stdout) == 50_000
    assert not res.timed_out  # stopped by the output cap, before its 5 s time limit


def test_unisolated_needs_opt_in() -> None:
    with pytest.raises(SandboxUnavailable, match="allow_unisolated"):
        Sandbox(IsolationLevel.NONE)


def test_doctor_reports_level() -> None:
    text = doctor(run_check=False)
    assert f"isolation level: {detect_isolation().level.name.lower()}" in text


# -- escapes ---------------------------------------------------------------------------------


def test_network_connect_fails(sandbox: Sandbox) -> None:
    if sandbox.level < IsolationLevel.NAMESPACES:
        pytest.skip("the rlimits level has no network namespace")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\n"
            "except OSError as exc:\n"
            "    print('blocked', type(exc).__name__)\n"
        )
        res = sandbox.run(code)
        assert res.stdout.startswith("blocked"), res
        with pytest.raises(BlockingIOError):
            server.accept()


def test_write_outside_workdir_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    code = (
        f"for path in [{str(target)!r}, '/etc/escaped.txt', '/usr/escaped.txt']:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', type(exc).__name__)\n"
    )
    res = sandbox.run(code)
    assert res.stdout.count("denied") == 3, res
    assert not target.exists()


def test_read_root_only_file_denied(sandbox: Sandbox) -> None:
    if not Path("/etc/shadow").exists():
        pytest.skip("no /etc/shadow here")
    res = sandbox.run("print(open('/etc/shadow').read())")
    # Denied where the host's files are visible; absent altogether in a built root filesystem.
    assert res.exit_code == 1 and ("PermissionError" in res.stderr or "FileNotFound" in res.stderr)


def test_fork_bomb_stopped(sandbox: Sandbox) -> None:
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    res = sandbox.run(RunRequest(code=code, time_limit_s=1.0, process_limit=16))
    assert res.timed_out and res.duration_s < 5
    assert _procs_of(sandbox.uid) == []


def test_killing_the_parent_is_denied(sandbox: Sandbox) -> None:
    res = sandbox.run("import os\nos.kill(os.getppid(), 9)")
    assert "PermissionError" in res.stderr
    assert sandbox.run("print('alive')").stdout == "alive\n"


def test_worker_killed_mid_run_is_replaced(sandbox: Sandbox) -> None:
    sandbox.start()
    proc = sandbox._proc
    assert proc is not None
    restarts = sandbox.restarts

    def kill_once_the_job_runs() -> None:  # an event, not a 0.3 s timer a loaded machine loses
        deadline = time.monotonic() + 60  # a bound for failures only
        while not _procs_of(sandbox.uid) and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.kill()

    threading.Thread(target=kill_once_the_job_runs, daemon=True).start()
    res = sandbox.run(RunRequest(code="import time\ntime.sleep(60)", time_limit_s=120))
    assert res.worker_restarted and res.exit_code < 0 and "worker lost" in res.stderr
    assert sandbox.restarts == restarts + 1
    assert sandbox.run("print('fresh')").stdout == "fresh\n"
    assert _procs_of(sandbox.uid) == []
    # Dying between runs is noticed too.
    assert sandbox._proc is not None
    sandbox._proc.kill()
    sandbox._proc.wait()
    again = sandbox.run("print('again')")
    assert again.stdout == "again\n" and again.worker_restarted


def test_delete_host_files_fails_and_workdir_removed(sandbox: Sandbox, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    code = (
        "import os, shutil\n"
        "print(os.getcwd())\n"
        f"for path in [{str(victim)!r}, '/etc/hostname', '/usr/bin/env']:\n"
        "    try:\n"
        "        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)\n"
        "        print('deleted', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', type(exc).__name__)\n"
    )
    res = sandbox.run(code)
    lines = res.stdout.splitlines()
    workdir = lines[0]
    assert len(lines) == 4 and all(line.startswith("denied") for line in lines[1:]), res
    assert (victim / "keep.txt").read_text() == "precious"
    check = sandbox.run(f"import os\nprint(os.path.exists({workdir!r}))")
    assert check.stdout == "False\n"
    if sandbox.level < IsolationLevel.BWRAP:
        assert not Path(workdir).exists()


def test_daemon_does_not_outlive_run(sandbox: Sandbox) -> None:
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(30)\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    res = sandbox.run(RunRequest(code=code, time_limit_s=5))
    # Not timed out: the run did not wait for the daemon's 30 s sleep (nor up to its 5 s limit).
    assert res.stdout == "parent done\n" and not res.timed_out
    assert _procs_of(sandbox.uid) == []


def test_pool_runs_concurrently(sandbox: Sandbox) -> None:
    with SandboxPool(2, sandbox.level) as pool:
        results = pool.map(f"print({i} * {i})" for i in range(8))
        assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(8)]
        uids = [sb.uid for sb in pool.sandboxes]
    assert len(set(uids)) == 2
    assert all(_procs_of(uid) == [] for uid in uids)


def test_worker_started_by_a_finished_thread_survives(sandbox: Sandbox) -> None:
    with Sandbox(sandbox.level) as other:
        starter = threading.Thread(target=other.start)
        starter.start()
        starter.join()
        res = other.run("print('still here')")
        assert res.stdout == "still here\n" and not res.worker_restarted


def test_still_works_after_all_escapes(sandbox: Sandbox) -> None:
    res = sandbox.run("print(sum(range(10)))")
    assert res.ok and res.stdout == "45\n"
    assert _procs_of(sandbox.uid) == []
    if sandbox.level < IsolationLevel.NAMESPACES:  # no private /tmp: no job dir is left
        assert os.listdir(sandbox._host_root) == []
    elif sandbox._host_root is not None:  # only the mount point, empty on the host's side
        assert os.listdir(sandbox._host_root) == ["root"]
        assert os.listdir(os.path.join(sandbox._host_root, "root")) == []


def test_doctor_command_reports_the_level_and_a_check_run(capsys):
    from tool_envs.cli import main

    assert main(["doctor"]) == 0
    printed = capsys.readouterr().out
    assert detect_isolation().level.name.lower() in printed.lower()


# -- what model code can see (issue 18) -------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
TASK_DATA = REPO / "datasets" / "code_tasks" / "data" / "train.jsonl"


def _private_view(sandbox: Sandbox) -> bool:
    return sandbox.level >= IsolationLevel.NAMESPACES


def _readable_by(uid: int, path: Path) -> bool:
    """Whether a process of ``uid`` (its own group, no others: a sandbox job) can read ``path``
    (list it, for a folder), asked of the kernel, not worked out from mode bits: a checkout
    under a 0700 folder is readable by its owner only, whatever its own files' modes say."""
    check = 'test -r "$1" && { test ! -d "$1" || test -x "$1"; }'
    result = subprocess.run(
        ["/bin/sh", "-c", check, "sh", str(path)],
        user=uid, group=uid, extra_groups=[], capture_output=True, timeout=30,
    )  # fmt: skip
    return result.returncode == 0


@pytest.fixture
def world_readable_file():
    """A file every uid can read: mode 0644 in a 0755 folder under /tmp (1777)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="tool-envs-world-readable-"))
    try:
        folder.chmod(0o755)
        path = folder / "answers.jsonl"
        path.write_text('{"answer": 42}\n')
        path.chmod(0o644)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_task_data_and_project_files_cannot_be_opened(
    sandbox: Sandbox, world_readable_file: Path
) -> None:
    assert TASK_DATA.is_file(), "the committed task set is missing"
    secrets = [TASK_DATA, REPO / "tool_envs" / "code" / "env.py", Path(sys.prefix), Path.home()]
    secrets.append(world_readable_file)
    code = (
        "import os\n"
        f"for path in {[str(p) for p in secrets]!r}:\n"
        "    try:\n"
        "        if os.path.isdir(path):\n"
        "            print('listed', path, len(os.listdir(path)))\n"
        "        else:\n"
        "            print('read', path, len(open(path, 'rb').read()))\n"
        "    except OSError as exc:\n"
        "        print('denied', path, type(exc).__name__)\n"
    )
    res = sandbox.run(code)
    assert res.ok, res.stderr
    if _private_view(sandbox):
        assert res.stdout.count("denied") == len(secrets), res.stdout
        return
    # The rlimits level shares the host's files, and says so plainly: its job uid reads exactly
    # what the host lets that uid read. Whether the checkout is among them depends on the
    # folders above it (not under a 0700 home folder, say), so that is asked, not assumed.
    from tool_envs.code.sandbox.isolation import GUARANTEES

    assert "READ every world-readable file" in GUARANTEES[sandbox.level]
    assert _readable_by(sandbox.uid, world_readable_file)  # so one read is always checked
    expected = []
    for path in secrets:
        if _readable_by(sandbox.uid, path):
            expected.append(f"{'listed' if path.is_dir() else 'read'} {path}")
        else:
            expected.append(f"denied {path}")
    lines = res.stdout.splitlines()
    assert len(lines) == len(expected), res.stdout
    pairs = zip(lines, expected, strict=True)
    assert all(line.startswith(want + " ") for line, want in pairs), res.stdout


def test_site_packages_are_hidden(sandbox: Sandbox) -> None:
    if not _private_view(sandbox):
        pytest.skip("the rlimits level shares the host's files (see the previous test)")
    res = sandbox.run(
        "import glob, os\n"
        "dirs = glob.glob('/usr/lib/python3*/*-packages')\n"
        "dirs += glob.glob('/usr/local/lib/*/*-packages')\n"
        "print(sum(len(os.listdir(d)) for d in dirs))\n"
        "try:\n    import tool_envs\n    print('imported')\n"
        "except ImportError:\n    print('absent')\n"
    )
    assert res.stdout.split() == ["0", "absent"], res


def test_nothing_is_left_in_the_hosts_temporary_folders(sandbox: Sandbox) -> None:
    marker = f"tool-envs-leak-{os.getpid()}-{time.monotonic_ns()}"
    folders = [f for f in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(f)]
    code = (
        "import os\n"
        f"for folder in {folders!r}:\n"
        "    try:\n"
        f"        open(os.path.join(folder, {marker!r}), 'w').write('x')\n"
        f"        os.mkdir(os.path.join(folder, {marker!r} + '.d'))\n"
        "        print('wrote', folder)\n"
        "    except OSError as exc:\n"
        "        print('denied', folder, type(exc).__name__)\n"
    )
    res = sandbox.run(code)
    assert res.ok, res.stderr
    assert res.stdout.count("wrote") == len(folders), res.stdout  # the folders are writable
    for folder in folders:
        assert not os.path.exists(os.path.join(folder, marker)), folder
        assert not os.path.exists(os.path.join(folder, marker + ".d")), folder


def test_every_run_starts_with_empty_temporary_folders(sandbox: Sandbox) -> None:
    marker = f"left-by-run-one-{time.monotonic_ns()}"
    first = sandbox.run(
        f"for d in ('/tmp', '/dev/shm', '/var/tmp'):\n    open(d + '/{marker}', 'w').write('x')"
    )
    assert first.ok, first.stderr
    second = sandbox.run(
        "import os\n"
        "for d in ('/tmp', '/dev/shm', '/var/tmp'):\n"
        "    print(d, sorted(e for e in os.listdir(d) if e != 'jobs'))\n"
    )
    assert second.ok and marker not in second.stdout, second.stdout
    if _private_view(sandbox):
        assert second.stdout.splitlines() == ["/tmp []", "/dev/shm []", "/var/tmp []"]


def test_every_level_reports_what_model_code_can_reach() -> None:
    from tool_envs.code.sandbox.isolation import GUARANTEES

    assert set(GUARANTEES) == set(IsolationLevel)
    for level in (IsolationLevel.BWRAP, IsolationLevel.NAMESPACES):
        assert "no project, task-data or home files" in GUARANTEES[level]
    assert GUARANTEES[IsolationLevel.RLIMITS].startswith("WEAK")
    assert GUARANTEES[IsolationLevel.NONE].startswith("NO ISOLATION")
    report = detect_isolation()
    assert report.guarantees in doctor(run_check=False)
    assert report.as_info()["isolation_guarantees"] == report.guarantees


def test_programs_run_with_plain_python_semantics_not_the_workers_future_imports(
    sandbox: Sandbox,
) -> None:
    """Annotations are evaluated as under plain `python`: an undefined name in one is an error."""
    result = sandbox.run("def f(x: UndefinedName) -> int:\n    return 1\nprint(f(2))")
    assert not result.ok and "NameError" in result.stderr


def test_a_skip_reason_leads_with_the_deciding_cause_and_its_fix() -> None:
    # A probe as on a machine without bubblewrap whose venv python the sandbox uid cannot read:
    # the permission note came first in the reasons, but bwrap is missing for another cause.
    report = IsolationReport(
        IsolationLevel.NAMESPACES,
        "/usr/bin/python3",
        True,
        {"bwrap": False, "namespaces": True, "rlimits": True},
        [
            "/work/.venv/bin/python not usable by uid 65534: Permission denied",
            "using /usr/bin/python3: the current interpreter is not readable by the sandbox",
            "bubblewrap is not installed: apt-get install bubblewrap (Debian)",
        ],
        causes={"bwrap": "bubblewrap is not installed: apt-get install bubblewrap (Debian)"},
    )
    reason = report.why_not(IsolationLevel.BWRAP)
    assert reason.startswith("bwrap not available: bubblewrap is not installed: apt-get install")
    assert reason.index("Permission denied") > reason.index("apt-get install bubblewrap")
    assert report.why_not("namespaces") is None


def test_every_level_the_probe_rules_out_names_its_cause() -> None:
    report = detect_isolation()
    for name, ok in report.available.items():
        if not ok:
            assert report.causes.get(name), f"{name}: no deciding cause in {report.reasons}"


def test_the_run_ends_with_the_level_the_sandbox_tests_ran_at() -> None:
    """One line at the end of the run (tests/conftest.py) instead of two dozen skip reasons."""
    from conftest import sandbox_summary

    report = detect_isolation()
    reasons = [
        "Skipped: bwrap not available: bubblewrap is not installed",
        "Skipped: no unprivileged uid to switch to: rlimits not available: not root",
        "Skipped: the search extra (bm25s) is not installed",
    ]
    line = sandbox_summary(reasons)
    assert line.startswith(f"sandbox tests ran at isolation level {report.level.name.lower()}")
    if report.level == IsolationLevel.BWRAP:
        assert line.endswith("(the strongest)")
    else:
        assert "2 skipped that need a stronger level" in line
        assert str(report.why_not(IsolationLevel.BWRAP)).split(" (other notes")[0] in line

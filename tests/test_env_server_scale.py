"""A cold server's first burst of sessions, and a server at its open-file limit.

A server that just started holds a few hundred sessions opened at once, all of them; one whose
open-file limit is low refuses the connections past it with a 503 that says so, logs one line,
and every session it holds plays on. Orderings are proven by events (every session has its
reset answered before any steps; every connection is answered before the held ones step), and
each wait is bounded only so that a broken server fails instead of hanging.
"""

import asyncio
import copy
import json
import os
import resource
import signal
import sys
import threading
import urllib.request

import gymnasium as gym
import pytest
from serve_helpers import ROOT, ServerProcess, child_pids, process_stats, wait_for
from thread_helpers import run_in_threads

import tool_envs
from tool_envs.calculator import tasks as calculator_tasks
from tool_envs.core import env as core_env
from tool_envs.serve import EnvServer, EnvServerProcess, ServeConfig
from tool_envs.serve.steps import StepThreads

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
websockets_client = pytest.importorskip(
    "websockets.asyncio.client", reason="the serve extra (websockets) is not installed"
)
from websockets.exceptions import InvalidStatus  # noqa: E402

gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
WAIT = 60.0  # seconds any one answer may take before the test calls it lost
ADD = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


def at_once(count: int, call) -> list:
    """``call()`` on ``count`` threads released together: what each returned."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int) -> None:
        barrier.wait()
        results[index] = call()

    run_in_threads(run, count, timeout=WAIT)
    return results


def test_concurrent_first_builds_of_a_task_set_build_it_once():
    """Eight envs' first resets at once share one build (``functools.lru_cache`` let each
    thread build and keep its own set, ~57 ms of CPU each under the GIL)."""
    calculator_tasks.default_splits.cache_clear()
    built = at_once(8, calculator_tasks.default_splits)
    assert len({id(splits) for splits in built}) == 1


def test_concurrent_first_validations_of_a_task_set_validate_it_once():
    rows = copy.deepcopy(calculator_tasks.default_splits()["train"])  # a list not seen yet
    validated = at_once(8, lambda: core_env._validated_default_tasks(rows))
    assert len({id(kept[0]) for kept in validated}) == 1  # the same validated rows, shared
    assert len(validated[0]) == len(rows)


def test_a_server_builds_what_sessions_need_before_it_serves():
    """The task set exists before the first connection: no session's first reset builds it."""
    calculator_tasks.default_splits.cache_clear()
    server = EnvServer(ServeConfig(CALCULATOR))
    assert not calculator_tasks.default_splits.built()
    with server:
        assert calculator_tasks.default_splits.built()
        assert server.manager.opened == 0  # built by the server's own warm-up episode


def health(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/health", timeout=WAIT) as answer:
        return json.loads(answer.read())


async def burst(url: str, count: int, while_held=None) -> list:
    """Open ``count`` sessions at once; each resets, waits until every session's reset is
    answered (or refused), then calls a tool and answers. ``while_held()`` runs (in a thread)
    at that point. Each session's outcome: its two step observations, or the exception."""
    ws_url = url.replace("http://", "ws://") + "/ws"
    settled, everyone_settled, go = 0, asyncio.Event(), asyncio.Event()

    def settle() -> None:
        nonlocal settled
        settled += 1
        if settled == count:
            everyone_settled.set()

    async def ask(ws, frame: dict) -> dict:
        await ws.send(json.dumps(frame))
        return json.loads(await asyncio.wait_for(ws.recv(), WAIT))

    async def session(seed: int):
        counted = False
        try:
            ws = await websockets_client.connect(ws_url, open_timeout=WAIT, compression=None)
        except Exception as exc:
            settle()
            return exc
        try:
            reset = await ask(ws, {"type": "reset", "data": {"seed": seed}})
            counted = True
            settle()
            assert reset["type"] == "observation", reset
            await asyncio.wait_for(go.wait(), WAIT * 3)
            tool = await ask(ws, {"type": "step", "data": {"text": ADD}})
            answer = await ask(ws, {"type": "step", "data": {"text": "The answer is 3."}})
            return tool, answer
        except Exception as exc:
            if not counted:
                settle()
            return exc
        finally:
            await ws.close()

    async def conductor():
        await asyncio.wait_for(everyone_settled.wait(), WAIT * 2)
        held = await asyncio.to_thread(while_held) if while_held else None
        go.set()
        return held

    *outcomes, held = await asyncio.gather(*(session(i) for i in range(count)), conductor())
    return outcomes, held


def played(outcome) -> bool:
    if isinstance(outcome, BaseException):
        return False
    tool, answer = outcome
    return (
        tool["type"] == "observation"
        and tool["data"]["observation"]["messages"][0]["content"] == "3"
        and answer["data"]["done"] is True
    )


def test_a_cold_server_holds_a_burst_of_sessions_opened_at_once():
    """No warm-up episode from the test: the server built what sessions need before it said
    it was serving, so 256 sessions opened together are all held, and all play."""
    count = 256
    with ServerProcess(CALCULATOR, "--max-sessions", "512") as server:
        outcomes, held = asyncio.run(
            burst(server.url, count, while_held=lambda: health(server.url)["active_sessions"])
        )
        failures = [repr(o) for o in outcomes if not played(o)]
        assert not failures, (len(failures), failures[:3], server.log()[-2000:])
        assert held == count  # every session open at once, none lost
        assert "Traceback" not in server.log()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit of a child is Linux's")
def test_a_server_at_its_open_file_limit_refuses_the_rest_and_plays_on():
    """Soft and hard limits of 200 open files, 300 sessions at once: the connections past the
    limit get a 503 naming it, the log has one line about it, and every held session plays."""
    count, limit = 300, 200
    with ServerProcess(CALCULATOR, "--max-sessions", "1000") as server:
        resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (limit, limit))
        outcomes, _ = asyncio.run(burst(server.url, count))
        refused = [o for o in outcomes if isinstance(o, InvalidStatus)]
        others = [repr(o) for o in outcomes if not played(o) and not isinstance(o, InvalidStatus)]
        assert not others, (len(others), others[:3], server.log()[-2000:])
        held = count - len(refused)
        assert 50 <= held < count, held  # a reserve of descriptors stays free: ~130 held
        for refusal in refused:
            assert refusal.response.status_code == 503
            assert b"open-file limit" in refusal.response.body
        log = server.log()
        assert log.count("refusing connections") == 1, log[-2000:]
        assert "Traceback" not in log and len(log) < 4000, log[-2000:]
        # The held sessions are gone: the server has room again.
        outcomes, held = asyncio.run(burst(server.url, 4, lambda: health(server.url)))
        assert all(played(o) for o in outcomes), outcomes
        assert held["active_sessions"] == 4


def test_step_threads_are_bounded_run_every_call_and_end_when_idle():
    """More calls than threads, each waiting for all of the first batch to start: the pool
    never passes its bound, runs every call, and its threads end once idle."""
    pool = StepThreads(3, idle_timeout=0.2)
    started = threading.Barrier(3)
    first = [pool.submit(started.wait, WAIT) for _ in range(3)]  # three threads, all busy
    rest = [pool.submit(lambda n=n: n * n) for n in range(20)]  # queued behind them
    assert [f.result(WAIT) for f in rest] == [n * n for n in range(20)]
    assert all(f.result(WAIT) is not None for f in first)
    assert pool.threads <= 3
    assert wait_for(lambda: pool.threads == 0, timeout=WAIT)
    assert pool.submit(lambda: "again").result(WAIT) == "again"  # a thread starts anew
    pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(print)


def test_idle_sessions_hold_no_threads():
    """200 sessions held at once on a server with 8 step threads: the server's threads stay
    within its own few and those 8, not one per session."""
    count = 200
    args = ("--max-sessions", "400", "--step-threads", "8", "--no-inline-steps")
    with ServerProcess(CALCULATOR, *args) as server:
        before = process_stats(server.pid)["threads"]
        outcomes, held = asyncio.run(
            burst(server.url, count, while_held=lambda: process_stats(server.pid)["threads"])
        )
        assert all(played(o) for o in outcomes), [o for o in outcomes if not played(o)][:3]
        assert held <= before + 8, (before, held)


def capacity_answer(url: str) -> dict:
    """The frame a new session gets from a server (a full one answers unasked, then closes)."""
    from websockets.sync.client import connect

    with connect(url.replace("http://", "ws://") + "/ws", compression=None) as ws:
        return json.loads(ws.recv(timeout=WAIT))


def test_workers_serve_behind_one_port_with_one_capacity():
    """``--workers 2``: two processes behind one port; ``--max-sessions`` and ``/health`` count
    both, a worker that dies is started again with its sessions counted as gone, SIGTERM stops
    both, and a killed server's workers die with it."""
    with ServerProcess(CALCULATOR, "--workers", "2", "--max-sessions", "6") as server:
        workers = child_pids(server.pid)
        assert len(workers) == 2, workers

        def full() -> tuple[dict, dict]:
            return health(server.url), capacity_answer(server.url)

        outcomes, (held, refused) = asyncio.run(burst(server.url, 6, while_held=full))
        assert all(played(o) for o in outcomes), outcomes
        assert (held["active_sessions"], held["max_sessions"]) == (6, 6)
        assert refused["data"]["code"] == "CAPACITY_REACHED", refused
        assert wait_for(lambda: health(server.url)["active_sessions"] == 0)
        # A worker killed while holding sessions: started again, its sessions forgotten.
        killed = {}

        def kill_one() -> None:
            killed["pid"] = workers[0]
            os.kill(workers[0], signal.SIGKILL)
            wait_for(lambda: len(set(child_pids(server.pid)) - {workers[0]}) == 2, timeout=WAIT)

        asyncio.run(burst(server.url, 6, while_held=kill_one))  # some sessions die with it
        assert wait_for(lambda: health(server.url)["active_sessions"] == 0, timeout=WAIT)
        outcomes, held = asyncio.run(burst(server.url, 6, lambda: health(server.url)))
        assert all(played(o) for o in outcomes) and held["active_sessions"] == 6
        workers = child_pids(server.pid)
        assert len(workers) == 2 and killed["pid"] not in workers
        assert "starting it again" in server.log()
        server.stop()
        assert server.process.returncode == 0
        assert not [pid for pid in workers if os.path.exists(f"/proc/{pid}")]
    with ServerProcess(CALCULATOR, "--workers", "2") as server:
        workers = child_pids(server.pid)
        server.kill()
        assert wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in workers), WAIT)


def test_worker_and_thread_counts_are_checked_where_they_are_given():
    from tool_envs.errors import EnvConfigError

    with pytest.raises(EnvConfigError, match="--workers must be >= 1"):
        ServeConfig(CALCULATOR, workers=-1)
    with pytest.raises(EnvConfigError, match="--step-threads must be >= 1"):
        ServeConfig(CALCULATOR, step_threads=0)
    with pytest.raises(EnvConfigError, match="tool-envs serve --workers"):
        EnvServer(ServeConfig(CALCULATOR, workers=2))


def test_serve_defaults_to_a_worker_per_core_and_asks_the_env_where_steps_run():
    """``tool-envs serve`` with no options: a worker per core this process may use, and
    Calculator's steps (its ``steps_wait`` is False) on the event loop, as its banner says."""
    cores = len(os.sched_getaffinity(0))
    with EnvServerProcess(CALCULATOR, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}) as server:
        assert len(child_pids(server.pid)) == (cores if cores > 1 else 0)
        assert "steps inline" in server.banner, server.banner
        outcomes, held = asyncio.run(burst(server.url, 4, lambda: health(server.url)))
        assert all(played(o) for o in outcomes) and held["active_sessions"] == 4


@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "inline"),
    [
        (CALCULATOR, {}, True),
        ("tool_envs/TauRetail-v0", {}, True),  # the scripted user
        ("tool_envs/CodeExec-v0", {}, False),  # a sandbox run waits
    ],
)
def test_a_server_runs_steps_inline_only_for_envs_whose_steps_never_wait(
    env_id, env_kwargs, inline
):
    with EnvServer(ServeConfig(env_id, env_kwargs=env_kwargs)) as server:
        assert server.config.inline_steps is inline
        assert server.manager.inline is inline
    # Said outright, the server does as told.
    with EnvServer(ServeConfig(CALCULATOR, inline_steps=False)) as server:
        assert server.manager.inline is False


def test_an_llm_user_makes_tau_steps_wait():
    env = gym.make(
        "tool_envs/TauRetail-v0",
        user="llm",
        user_kwargs={"base_url": "http://127.0.0.1:9/v1", "api_key": "k"},
    )
    try:
        assert env.unwrapped.steps_wait is True
    finally:
        env.close()
    scripted = gym.make("tool_envs/TauRetail-v0")
    assert scripted.unwrapped.steps_wait is False
    scripted.close()


def test_workers_default_to_the_cores_and_to_one_on_ray():
    from tool_envs.cli import build_parser
    from tool_envs.commands.serve import _workers

    parser = build_parser()
    cores = len(os.sched_getaffinity(0))
    assert _workers(parser.parse_args(["serve", CALCULATOR])) == cores
    assert _workers(parser.parse_args(["serve", CALCULATOR, "--workers", "0"])) == cores
    assert _workers(parser.parse_args(["serve", CALCULATOR, "--workers", "3"])) == 3
    assert _workers(parser.parse_args(["serve", CALCULATOR, "--ray", "2"])) == 1

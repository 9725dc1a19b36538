"""Faults and bad input at the env-server boundary, each against real servers on 127.0.0.1:
killed, frozen and partitioned servers, vanished clients, hostile frames, a full server, tokens,
idle sessions, and 500 sessions that must leave the server as they found it."""

import json
import os
import signal
import socket
import threading

import gymnasium as gym
import pytest
from failing_servers import killed_url
from rollout_helpers import ReplayBackend, tiny_tokenizer_and_model
from serve_helpers import ServerProcess, TcpProxy, child_pids, process_stats, wait_for
from test_async_engine import family_tasks

import tool_envs
from tool_envs.cli import main as cli_main
from tool_envs.errors import EnvConfigError, EnvServerUnavailableError
from tool_envs.rollout import AsyncRolloutEngine, RolloutConfig, RolloutEngine
from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
websockets_sync = pytest.importorskip("websockets.sync.client")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer_and_model()[0]


class TriggerBackend(ReplayBackend):
    """Replays gold turns; on generation call number ``at`` it runs ``action`` first (kill or
    freeze a server while episodes are mid-way)."""

    def __init__(self, tokenizer, tasks, scripts, at, action):
        super().__init__(tokenizer, tasks, scripts)
        self.at, self.action, self.fired = at, action, False

    def _maybe_fire(self):
        if self.calls >= self.at and not self.fired:
            self.fired = True
            self.action()

    def generate(self, prompts, max_tokens, settings):
        self.calls += 1
        self._maybe_fire()
        return [self._turn(p, m, settings) for p, m in zip(prompts, max_tokens, strict=True)]

    async def agenerate(self, prompt, max_tokens, settings, *, seed=None):
        self.calls += 1
        self._maybe_fire()
        return self._turn(prompt, max_tokens, settings)


def calculator_group(count=4):
    tasks, scripts = family_tasks(CALCULATOR, count)
    assert all(len(s) >= 2 for s in scripts)
    return tasks, scripts


@pytest.mark.parametrize("engine_class", [RolloutEngine, AsyncRolloutEngine])
def test_a_killed_server_voids_its_episodes_and_the_batch_goes_on(tokenizer, engine_class):
    tasks, scripts = calculator_group()
    with ServerProcess(CALCULATOR) as a, ServerProcess(CALCULATOR) as b:
        config = RolloutConfig(
            max_completion_length=4096, env_servers={CALCULATOR: [a.url, b.url]},
            max_void_fraction=1.0, step_timeout=20,
        )  # fmt: skip
        # Lockstep: killed before the second turn; async: once every episode asked for one turn.
        at = 2 if engine_class is RolloutEngine else len(tasks) + 1
        with engine_class(
            tokenizer, TriggerBackend(tokenizer, tasks, scripts, at, a.kill), config=config
        ) as engine:
            first = engine.run(tasks, seeds=[0, 1, 2, 3])
            void = [r for r in first if r.void]
            # Episodes spread over both servers by load: A's die with it, B's finish.
            assert 1 <= len(void) <= 2 and sum(r.success for r in first) >= 2
            assert {r.reward_info["void_cause"] for r in void} == {"env_server"}
            assert all(a.url in r.reward_info["reason"] for r in void)
            # The next batch goes to the live server only.
            second = engine.run(tasks, seeds=[0, 1, 2, 3])
            assert all(r.success for r in second)
            assert b.health()["active_sessions"] == len(tasks)
            # None left: a clear error that names every URL.
            b.kill()
            with pytest.raises(EnvServerUnavailableError) as raised:
                engine.run(tasks)
            assert a.url in str(raised.value) and b.url in str(raised.value)


@pytest.mark.parametrize("engine_class", [RolloutEngine, AsyncRolloutEngine])
def test_a_frozen_server_times_out_the_step_and_voids_the_episode(tokenizer, engine_class):
    """The async engine awaits a remote step on no thread of its own: its timeout still voids
    the episode, and the abandoned env is closed from the connections' loop (no deadlock)."""
    tasks, scripts = calculator_group(2)
    with ServerProcess(CALCULATOR) as server:

        def freeze():
            os.kill(server.pid, signal.SIGSTOP)

        config = RolloutConfig(
            max_completion_length=4096, env_servers={CALCULATOR: server.url},
            max_void_fraction=1.0, step_timeout=1.5,
        )  # fmt: skip
        backend = TriggerBackend(tokenizer, tasks, scripts, 2, freeze)
        with engine_class(tokenizer, backend, config=config) as engine:
            rollouts = engine.run(tasks)
        assert all(r.void for r in rollouts)
        assert {r.reward_info["void_cause"] for r in rollouts} <= {"env_timeout", "env_server"}
        # A new session cannot even be opened on it: the handshake times out, naming the URL.
        remote = RemoteEnv(server.url, connect_timeout=1.0)
        with pytest.raises(EnvServerUnavailableError, match=server.url):
            remote.reset()


def test_a_partitioned_link_voids_the_episode_within_the_timeout():
    with EnvServer(ServeConfig(CALCULATOR)) as server, TcpProxy(server.url) as proxy:
        remote = RemoteEnv(proxy.url)
        try:
            remote.reset(seed=0)
            remote.timeout = 1.0
            proxy.freeze()
            observation, reward, terminated, truncated, info = remote.step("1 + 1 = 2")
            assert (observation, reward, terminated, truncated) == ([], 0.0, False, True)
            assert info["reward_info"]["void_cause"] == "env_server"
            assert f"{proxy.url} did not answer a step" in info["reward_info"]["reason"]
        finally:
            remote.close()


def test_an_unreachable_server_fails_at_start_naming_the_url(tokenizer):
    url = killed_url().removesuffix("/v1")
    with pytest.raises(EnvServerUnavailableError, match=url):
        RemoteEnv(url).reset()
    tasks, scripts = calculator_group(1)
    config = RolloutConfig(env_servers={CALCULATOR: url})
    backend = ReplayBackend(tokenizer, tasks, scripts)
    with (
        RolloutEngine(tokenizer, backend, config=config) as engine,
        pytest.raises(EnvServerUnavailableError, match=url),
    ):
        engine.run(tasks)


@pytest.mark.parametrize(
    "env_id, env_kwargs",
    [
        ("tool_envs/MCP-v0", "{}"),  # MCP servers shared by the process's envs (by design)
        ("tool_envs/MCP-v0", '{"fresh_state": true}'),  # MCP server processes per episode
        ("tool_envs/CodeExec-v0", "{}"),  # a sandbox worker per env
    ],
)
def test_a_client_that_vanishes_mid_episode_leaves_nothing_on_the_server(env_id, env_kwargs):
    tasks, scripts = family_tasks(env_id, 1)

    def play(remote: RemoteEnv) -> None:
        remote.reset(options={"task": tasks[0]})
        remote.step(scripts[0][0])

    with ServerProcess(env_id, "--env-kwargs", env_kwargs) as server:
        warm = RemoteEnv(server.url)  # starts what is shared by design, then closes cleanly
        play(warm)
        warm.close()
        assert wait_for(lambda: server.health()["active_sessions"] == 0)
        # Sets of pids, not counts: the warm session's env is closed after its session ends, so
        # its sandbox worker may still be on its way out here.
        before, before_kids = process_stats(server.pid), set(child_pids(server.pid))
        remote = RemoteEnv(server.url)
        play(remote)
        during, own_kids = process_stats(server.pid), set(child_pids(server.pid)) - before_kids
        assert server.health()["active_sessions"] == 1
        # The client process dies: its socket closes without a close frame.
        remote._ws.transport.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
        assert wait_for(lambda: server.health()["active_sessions"] == 0)
        assert wait_for(lambda: not set(child_pids(server.pid)) - before_kids), own_kids
        assert wait_for(lambda: process_stats(server.pid)["threads"] <= before["threads"])
        wait_for(lambda: process_stats(server.pid)["fds"] <= before["fds"])
        after = process_stats(server.pid)
        assert after["fds"] <= before["fds"], (before, during, after)
        if env_kwargs != "{}" or env_id.endswith("CodeExec-v0"):
            assert own_kids  # the session had processes of its own


def test_500_sessions_leave_fds_threads_and_memory_flat():
    with ServerProcess(CALCULATOR, "--max-sessions", "64") as server:

        def sessions(count: int, at_once: int) -> None:
            for _ in range(count // at_once):
                envs = [RemoteEnv(server.url) for _ in range(at_once)]
                threads = [
                    threading.Thread(target=lambda e=e: (e.reset(), e.step("done"), e.close()))
                    for e in envs
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(timeout=60)
            assert wait_for(lambda: server.health()["active_sessions"] == 0)

        sessions(100, 50)  # warm-up: imports, caches, the allocator's arenas
        assert wait_for(lambda: process_stats(server.pid)["threads"] <= 4, timeout=10)
        before = process_stats(server.pid)
        sessions(500, 50)
        assert wait_for(lambda: process_stats(server.pid)["threads"] <= before["threads"])
        after = process_stats(server.pid)
        assert after["fds"] <= before["fds"] + 2, (before, after)
        assert after["rss_kib"] - before["rss_kib"] < 20 * 1024, (before, after)


def frames(url: str, *sent: str | bytes) -> list[dict]:
    """Send each frame on one raw WebSocket and read one answer per frame."""
    ws_url = url.replace("http://", "ws://") + "/ws"
    with websockets_sync.connect(ws_url, open_timeout=5, compression=None) as ws:
        answers = []
        for frame in sent:
            ws.send(frame)
            answers.append(json.loads(ws.recv(timeout=10)))
        return answers


def test_malformed_oversized_and_out_of_order_frames_get_protocol_errors():
    config = ServeConfig(CALCULATOR, max_message_bytes=64 * 1024)
    with EnvServer(config) as server:
        bystander = RemoteEnv(server.url)
        bystander.reset(seed=1)
        answers = frames(
            server.url,
            "not json",
            "[1, 2]",
            json.dumps({"type": "dance"}),
            json.dumps({"type": "step", "data": {"text": "hi"}}),
            json.dumps({"type": "reset", "data": {"seed": -1}}),
            json.dumps({"type": "reset", "extra": 1}),
            "[" * 20_000 + "]" * 20_000,
            b"\xff\xfe",
            json.dumps({"type": "reset", "data": {"seed": 3}}),
            json.dumps({"type": "step", "data": {"text": "a", "message": {"role": "assistant"}}}),
            json.dumps({"type": "step", "data": {"text": "x" * 1000}}),
        )
        codes = [a["data"].get("code") if a["type"] == "error" else a["type"] for a in answers]
        assert codes == [
            "INVALID_JSON", "VALIDATION_ERROR", "UNKNOWN_TYPE", "SESSION_ERROR",
            "VALIDATION_ERROR", "VALIDATION_ERROR", "INVALID_JSON", "INVALID_JSON",
            "observation", "VALIDATION_ERROR", "observation",
        ]  # fmt: skip
        # Oversized: that connection is closed (1009, message too big), nothing else is.
        ws_url = server.url.replace("http://", "ws://") + "/ws"
        with websockets_sync.connect(ws_url, compression=None) as ws:
            ws.send(json.dumps({"type": "step", "data": {"text": "x" * 100_000}}))
            with pytest.raises(Exception) as closed:
                ws.recv(timeout=10)
            assert "1009" in str(closed.value)
        # The bystander's session went on untouched, and saw only its own env.
        assert bystander.step("The answer is 3.")[2] is True
        assert [m["content"] for m in bystander.messages[-1:]] == ["The answer is 3."]
        assert wait_for(lambda: server.manager.active == 1)
        bystander.close()


def test_a_full_server_answers_with_openenvs_capacity_error():
    with EnvServer(ServeConfig(CALCULATOR, max_sessions=1)) as server:
        first = RemoteEnv(server.url)
        first.reset()
        # The refusal comes unasked, then the server closes (OpenEnv's server does the same).
        ws_url = server.url.replace("http://", "ws://") + "/ws"
        with websockets_sync.connect(ws_url, compression=None) as ws:
            answer = json.loads(ws.recv(timeout=10))
        assert answer["data"]["code"] == "CAPACITY_REACHED"
        assert answer["data"]["max_sessions"] == 1
        with pytest.raises(EnvServerUnavailableError, match="full"):
            RemoteEnv(server.url).reset()
        first.close()
        assert wait_for(lambda: server.manager.active == 0)
        second = RemoteEnv(server.url)
        second.reset()
        second.close()


def test_other_interfaces_need_a_token_and_the_token_is_checked(monkeypatch):
    monkeypatch.delenv("TOOL_ENVS_SERVE_TOKEN", raising=False)
    with pytest.raises(EnvConfigError, match="bearer token"):
        ServeConfig(CALCULATOR, host="0.0.0.0")
    with pytest.raises(SystemExit):
        cli_main(["serve", CALCULATOR, "--host", "0.0.0.0"])
    with EnvServer(ServeConfig(CALCULATOR, token="s3cret")) as server:
        with pytest.raises(EnvServerUnavailableError, match="bearer token"):
            RemoteEnv(server.url).reset()
        with pytest.raises(EnvServerUnavailableError, match="bearer token"):
            RemoteEnv(server.url, token="wrong").reset()
        import urllib.error
        import urllib.request

        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(f"{server.url}/metadata", timeout=5)
        remote = RemoteEnv(server.url, token="s3cret")
        remote.reset()
        remote.close()


def test_an_idle_session_is_closed_and_the_next_reset_opens_a_new_one():
    with EnvServer(ServeConfig(CALCULATOR, session_timeout=0.5)) as server:
        remote = RemoteEnv(server.url)
        remote.reset(seed=0)
        assert wait_for(lambda: server.manager.active == 0, timeout=5)
        info = remote.step("hello")[4]
        assert info["reward_info"]["void_cause"] == "env_server"
        remote.reset(seed=0)
        assert server.manager.active == 1
        remote.close()


def test_a_dead_server_rejoins_the_pool_once_its_health_answers():
    """What a server restarted at the same address (a Ray actor's restart) needs: the pool skips
    it while dead, asks /health again after ``recheck_after``, and readmits it."""
    from tool_envs.serve.pool import EnvServerPool

    first = EnvServer(ServeConfig(CALCULATOR)).start()
    port = first.port
    pool = EnvServerPool([first.url], recheck_after=0)
    remote = RemoteEnv(pool)
    remote.reset(seed=0)
    remote.close()
    first.stop()
    with pytest.raises(EnvServerUnavailableError, match=first.url):
        remote.reset(seed=0)  # refused: marked dead
    assert first.url in pool.dead and pool.acquire() is None  # /health does not answer
    with EnvServer(ServeConfig(CALCULATOR, port=port)) as again:
        assert again.url == first.url
        remote.reset(seed=0)  # readmitted after one health check
        assert not pool.dead and again.manager.active == 1
        remote.close()
    never = EnvServerPool([first.url], recheck_after=None)
    never.mark_dead(first.url, "killed")
    assert never.acquire() is None


def test_a_pool_follows_a_moved_server_only_through_the_moves_it_was_given():
    """A server restarted at a new address (Ray on another node): the launcher records the move
    in a ServerMoves object; the pools given that object swap the address, others do not, and a
    pool pickled for another process keeps its servers and the moves known so far."""
    import pickle

    from tool_envs.serve.pool import EnvServerPool, ServerMoves

    old = EnvServer(ServeConfig(CALCULATOR)).start()
    old_url = old.url
    old.stop()
    moves = ServerMoves()
    following = EnvServerPool([old_url], recheck_after=0, moves=moves)
    blind = EnvServerPool([old_url], recheck_after=0)
    for pool in (following, blind):
        pool.mark_dead(old_url, "killed")
    with EnvServer(ServeConfig(CALCULATOR)) as new:
        moves.record(old_url, new.url)
        remote = RemoteEnv(following)
        remote.reset(seed=0)  # rechecked at the new address, readmitted there
        assert following.urls == [new.url] and not following.dead
        remote.close()
        with pytest.raises(EnvServerUnavailableError, match=old_url):
            RemoteEnv(blind).reset(seed=0)
        copy = pickle.loads(pickle.dumps(EnvServerPool([old_url], moves=moves)))
        assert copy.urls == [old_url] and copy.moves.follow(old_url) == new.url
        assert copy.moves is not moves and copy.load == {old_url: 0}

"""A server that answers the WebSocket handshake 503 is busy, not dead.

A server refuses a connection with 503 when ``--max-handshakes`` slow connections (still without
their first request a second after they were accepted) are waiting, or when its open-file limit
has no room for one more. It is alive, and
holding sessions: ``RemoteEnv`` must send the session to another server or ask again after a
pause, never mark the server dead (which would void episodes, ``void_cause="env_server"``).
The refusals are proven by the servers' own counters and pool loads, not by timing; each wait
is bounded only so that a broken client fails instead of hanging.
"""

import resource
import socket
import sys
import threading

import gymnasium as gym
import pytest
from serve_helpers import ServerProcess, wait_for

import tool_envs
from tool_envs.errors import EnvServerUnavailableError
from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig
from tool_envs.serve.pool import EnvServerPool

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
websockets_sync = pytest.importorskip("websockets.sync.client")
from websockets.exceptions import InvalidStatus  # noqa: E402

gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
WAIT = 60.0


def hold_the_handshake_slot(server: EnvServer) -> socket.socket:
    """A connection that sends nothing: once slow, it takes the one slot of a
    ``max_handshakes=1`` server until it closes."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    assert wait_for(lambda: server.handshakes.slow == 1, WAIT)
    return sock


def test_a_busy_server_is_asked_again_and_not_marked_dead():
    with EnvServer(ServeConfig(CALCULATOR, max_handshakes=1)) as server:
        silent = hold_the_handshake_slot(server)
        env = RemoteEnv(server.url, busy_timeout=WAIT)
        outcome: dict = {}
        resetting = threading.Thread(target=lambda: outcome.update(reset=env.reset(seed=1)))
        resetting.start()
        assert wait_for(lambda: server.handshakes.refused >= 1, WAIT)  # the client got a 503
        assert env.pool.dead == {}
        silent.close()  # the slot is free: the next try gets in
        resetting.join(WAIT)
        assert not resetting.is_alive()
        observation, _ = outcome["reset"]
        assert observation[0]["role"] == "system"
        assert env.step("The answer is 3.")[2] is True
        assert env.pool.dead == {}
        env.close()


def test_a_session_goes_to_another_server_while_one_is_busy():
    with (
        EnvServer(ServeConfig(CALCULATOR, max_handshakes=1)) as busy,
        EnvServer(ServeConfig(CALCULATOR)) as free,
    ):
        silent = hold_the_handshake_slot(busy)
        pool = EnvServerPool([busy.url, free.url])
        first, second = RemoteEnv(pool, busy_timeout=0), RemoteEnv(pool, busy_timeout=0)
        first.reset(seed=1)  # whichever it tried first, only the free server takes it
        assert first.url == free.url
        second.reset(seed=2)  # the busy server has the lower load: it is tried, and refuses
        assert busy.handshakes.refused >= 1
        assert second.url == free.url
        assert pool.dead == {}
        first.close()
        second.close()
        silent.close()


def test_a_server_busy_past_busy_timeout_fails_the_reset_and_stays_live():
    with EnvServer(ServeConfig(CALCULATOR, max_handshakes=1)) as server:
        silent = hold_the_handshake_slot(server)
        env = RemoteEnv(server.url, busy_timeout=0.2)
        with pytest.raises(EnvServerUnavailableError, match=r"503.*max-handshakes") as caught:
            env.reset()
        assert caught.value.full == {server.url}
        assert server.handshakes.refused >= 1
        assert env.pool.dead == {}
        silent.close()
        assert wait_for(lambda: server.handshakes.pending == 0, WAIT)
        env.reset()  # not dead: asked at once, no health recheck needed
        env.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit of a child is Linux's")
def test_a_server_at_its_open_file_limit_is_busy_and_the_session_goes_elsewhere():
    """A server whose open files are all taken answers 503: the pool sends the session to the
    other server and keeps both live."""
    with (
        ServerProcess(CALCULATOR, "--max-sessions", "1000") as limited,
        ServerProcess(CALCULATOR) as free,
    ):
        resource.prlimit(limited.pid, resource.RLIMIT_NOFILE, (150, 150))
        ws_url = limited.url.replace("http://", "ws://") + "/ws"
        held = []
        for _ in range(150):  # fill it until it refuses
            try:
                held.append(
                    websockets_sync.connect(
                        ws_url, compression=None, open_timeout=WAIT, legacy=True
                    )
                )
            except InvalidStatus as exc:
                assert exc.response.status_code == 503
                break
        else:
            pytest.fail("the server never refused a connection at its open-file limit")
        pool = EnvServerPool([limited.url, free.url])
        first, second = RemoteEnv(pool, busy_timeout=0), RemoteEnv(pool, busy_timeout=0)
        first.reset(seed=1)
        assert first.url == free.url
        second.reset(seed=2)  # tried the limited server first (lower load): 503, then here
        assert second.url == free.url
        assert pool.dead == {}
        for ws in held:
            ws.close()
        first.close()
        second.close()

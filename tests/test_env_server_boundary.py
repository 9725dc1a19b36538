"""The env server as a stranger meets it, over raw sockets and real clients on 127.0.0.1:
frames it cannot read, tokens it cannot compare, routes without a token, and connections that
never finish their handshake."""

import json
import socket
import time
import urllib.error
import urllib.request

import gymnasium as gym
import pytest
from serve_helpers import ServerProcess, wait_for

import tool_envs
from tool_envs.errors import EnvConfigError, EnvServerUnavailableError
from tool_envs.serve import EnvServer, RemoteEnv, ServeConfig

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
websockets_sync = pytest.importorskip("websockets.sync.client")
gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
TOKEN = "s3cret-token"


def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on a new
    connection; return the status and the whole answer (the server closes after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        length = f"Content-Length: {len(body)}\r\n".encode() if body else b""
        close = b"" if b"\nconnection:" in head.lower() else b"Connection: close\r\n"
        sock.sendall(head + b"\r\n" + length + close + b"\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer


def test_a_seed_too_long_for_an_int_gets_an_error_frame_and_the_session_goes_on():
    with EnvServer(ServeConfig(CALCULATOR)) as server:
        ws_url = server.url.replace("http://", "ws://") + "/ws"
        with websockets_sync.connect(ws_url, open_timeout=10, compression=None) as ws:
            ws.send('{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}")
            answer = json.loads(ws.recv(timeout=10))
            assert answer["type"] == "error" and answer["data"]["code"] == "INVALID_JSON"
            assert "4300 digits" in answer["data"]["message"]
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "observation"


def test_a_non_ascii_token_is_refused_like_any_wrong_token_without_a_traceback():
    with ServerProcess(CALCULATOR, env={"TOOL_ENVS_SERVE_TOKEN": TOKEN}) as server:
        port = int(server.url.rsplit(":", 1)[1])
        for token in ("café".encode(), b"\xff\xfe", TOKEN.encode() + "é".encode()):
            status, _ = raw_request(
                port, b"GET /metadata HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token
            )
            assert status == 401
            handshake = (
                b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                b"Authorization: Bearer " + token
            )
            status, _ = raw_request(port, handshake)
            assert status == 403
        with pytest.raises(EnvServerUnavailableError, match="bearer token"):
            RemoteEnv(server.url, token="café").reset()
        remote = RemoteEnv(server.url, token=TOKEN)
        remote.reset(seed=0)
        remote.close()
        server.stop()
        log = server.log()
        assert "Traceback" not in log and "Exception" not in log, log


def test_a_token_that_cannot_travel_in_a_header_is_refused_when_the_server_is_configured():
    with pytest.raises(EnvConfigError, match="printable ASCII"):
        ServeConfig(CALCULATOR, token="café")
    with pytest.raises(EnvConfigError, match="printable ASCII"):
        ServeConfig(CALCULATOR, token="two words")


def test_every_route_but_health_needs_the_token():
    with EnvServer(ServeConfig(CALCULATOR, token=TOKEN)) as server:
        for path in ("/metadata", "/schema", "/list_environments", "/Calculator-v0/splits"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{server.url}{path}", timeout=10)
            assert refused.value.code == 401, path
            request = urllib.request.Request(
                f"{server.url}{path}", headers={"Authorization": f"Bearer {TOKEN}"}
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert answer.status == 200, path
        with urllib.request.urlopen(f"{server.url}/health", timeout=10) as answer:
            assert json.loads(answer.read())["status"] == "healthy"


def test_connections_that_never_finish_their_handshake_are_closed_after_the_timeout():
    config = ServeConfig(CALCULATOR, handshake_timeout=0.5)
    with EnvServer(config) as server:
        session = RemoteEnv(server.url)  # a finished handshake: never timed out
        session.reset(seed=0)
        started = time.monotonic()
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        half = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        half.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: web")
        assert silent.recv(1024) == b""  # the server closed it
        assert half.recv(1024) == b""
        assert time.monotonic() - started >= 0.45
        silent.close()
        half.close()
        # The session's timer would have fired first: it is still there.
        assert session.step("The answer is 3.")[2] is True
        session.close()
        assert wait_for(lambda: server.handshakes.pending == 0)
        assert server.handshakes.timed_out == 2


def test_a_server_holds_a_bounded_number_of_unfinished_handshakes():
    config = ServeConfig(CALCULATOR, handshake_timeout=60, max_handshakes=2)
    with EnvServer(config) as server:
        session = RemoteEnv(server.url)
        session.reset(seed=0)
        silent = [socket.create_connection(("127.0.0.1", server.port), timeout=30)]
        silent.append(socket.create_connection(("127.0.0.1", server.port), timeout=30))
        # Connections are accepted in order, so these two turn slow first; the next one, once
        # slow too, finds two slow ones waiting: it is answered 503 after its head, or (it
        # sends nothing) after another second.
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as refused:
            answer = b""
            while chunk := refused.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 503") and b"--max-handshakes 2" in answer
        assert server.handshakes.refused == 1
        assert session.step("The answer is 3.")[2] is True  # sessions past it go on
        silent.pop().close()
        assert wait_for(lambda: server.handshakes.pending == 1)
        status, _ = raw_request(server.port, b"GET /health HTTP/1.1\r\nHost: x")
        assert status == 200
        silent.pop().close()
        session.close()


def test_a_burst_of_clients_past_the_bound_is_not_refused():
    """The bound is on slow connections: 20 accepted before any sends its request (what a
    burst of thousands looks like to a server, which accepts a whole listen queue before it
    reads) are all answered, on a server that holds at most 2 slow ones."""
    config = ServeConfig(CALCULATOR, max_handshakes=2)
    with EnvServer(config) as server:
        server.handshakes.slow_after = 60.0  # none turns slow however long this test takes
        address = ("127.0.0.1", server.port)
        burst = [socket.create_connection(address, timeout=30) for _ in range(20)]
        assert wait_for(lambda: server.handshakes.pending == 20)  # all held, none refused
        for sock in burst:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        for sock in burst:
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
            sock.close()
        assert server.handshakes.refused == 0
        assert wait_for(lambda: server.handshakes.pending == 0)


def test_an_http_connection_carries_one_request():
    """A connection kept alive after its answer would wait for its next request with no
    handshake timeout; each answer closes it instead."""
    with EnvServer(ServeConfig(CALCULATOR)) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):  # ends only when the server closes
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" in answer.lower()

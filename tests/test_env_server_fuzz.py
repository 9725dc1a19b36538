"""Hypothesis against a real ``tool-envs serve`` process with a token: WebSocket frames, HTTP
requests and WebSocket handshakes of any content. Whatever the server cannot read gets a protocol
error frame or a 4xx, the session goes on, and nothing in its log is a traceback."""

import contextlib
import inspect
import json
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import ServerProcess

pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")
websockets_sync = pytest.importorskip("websockets.sync.client")
from websockets.exceptions import ConnectionClosed  # noqa: E402

CALCULATOR = "tool_envs/Calculator-v0"
# websockets >= 17 warns unless a connection held across calls is asked for by name.
LEGACY = (
    {"legacy": True} if "legacy" in inspect.signature(websockets_sync.connect).parameters else {}
)
TOKEN = "fuzz-token-1"
CODES = {"INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR", "SESSION_ERROR"}
FUZZ = settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Served:
    """The server, one WebSocket session on it (opened again after a ``close`` frame), and how
    much of the server's log has been read."""

    def __init__(self, server: ServerProcess):
        self.server = server
        self.port = int(server.url.rsplit(":", 1)[1])
        self.ws = None
        self.read = 0

    def session(self):
        if self.ws is None:
            self.ws = websockets_sync.connect(
                f"ws://127.0.0.1:{self.port}/ws",
                **LEGACY,
                open_timeout=10,
                compression=None,
                additional_headers={"Authorization": f"Bearer {TOKEN}"},
            )
        return self.ws

    def drop_session(self):
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()
        self.ws = None

    def new_log(self) -> str:
        log = self.server.log()
        new, self.read = log[self.read :], len(log)
        return new


@pytest.fixture(scope="module")
def served():
    with ServerProcess(CALCULATOR, env={"TOOL_ENVS_SERVE_TOKEN": TOKEN}) as server:
        state = Served(server)
        yield state
        state.drop_session()
        server.stop()  # SIGTERM: the log is whole once the process has exited
        log = server.log()
        assert "Traceback" not in log and "Exception in" not in log, log[-5000:]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=15,
)
row_like = st.fixed_dictionaries(
    {},
    optional={
        "prompt": json_values | st.just([{"role": "user", "content": "1 + 2?"}]),
        "env_id": st.sampled_from([CALCULATOR, "tool_envs/TauRetail-v0", "x"]) | st.text(),
        "reward_spec": json_values | st.just({"answer": 3}),
        "extra_info": json_values,
    },
)
reset_data = st.fixed_dictionaries(
    {},
    optional={
        "seed": st.integers() | json_values,
        "episode_id": st.text(max_size=300) | json_values,
        "options": st.fixed_dictionaries({}, optional={"task": row_like}) | json_values,
    },
)
step_data = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=200) | json_values,
        "message": st.fixed_dictionaries(
            {"role": st.just("assistant") | st.text(max_size=5)},
            optional={"content": json_values, "tool_calls": json_values},
        )
        | json_values,
        "metadata": json_values,
    },
)
frame_objects = st.one_of(
    st.fixed_dictionaries({"type": st.just("reset")}, optional={"data": reset_data | json_values}),
    st.fixed_dictionaries({"type": st.just("step")}, optional={"data": step_data | json_values}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["state", "close", "dance", ""]) | json_values},
        optional={"data": json_values, "extra": json_values},
    ),
    json_values,
)
no_surrogates = st.characters(blacklist_categories=("Cs",))
frames = st.one_of(
    frame_objects.map(json.dumps),  # ensure_ascii: lone surrogates travel as escapes
    frame_objects.map(lambda o: json.dumps(o, ensure_ascii=False)).filter(
        lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)
    ),
    st.text(alphabet=no_surrogates, max_size=200),
    st.text("0123456789", min_size=4000, max_size=6000).map(
        lambda digits: '{"type": "reset", "data": {"seed": ' + digits + "}}"
    ),
    st.integers(1, 30_000).map(lambda depth: "[" * depth + "]" * depth),
    st.binary(max_size=200),
)


@FUZZ
@given(frame=frames)
def test_every_frame_gets_one_answer_or_a_clean_close(served, frame):
    ws = served.session()
    ws.send(frame)
    try:
        answer = json.loads(ws.recv(timeout=30))
    except ConnectionClosed:
        served.drop_session()
        try:
            closing = json.loads(frame) if isinstance(frame, str) else None
        except ValueError:
            closing = None
        assert isinstance(closing, dict) and closing.get("type") == "close", frame
    else:
        assert answer["type"] in ("observation", "state", "error"), answer
        if answer["type"] == "error":
            assert answer["data"]["code"] in CODES, answer
    assert "Traceback" not in served.new_log()


header_bytes = st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
ROUTES = [
    *("/health", "/metadata", "/schema", "/list_environments", "/ws", "/", "/%ff", "/a/b/c"),
    *(f"/Calculator-v0/{route}" for route in ("splits", "tasks", "num_tasks", "task")),
    *("/Calculator-v0/gold_turns", "/Other-v0/tasks"),
]
authorizations = st.one_of(
    st.just(b"Bearer " + TOKEN.encode()),
    st.builds(lambda rest: b"Bearer " + rest, header_bytes),
    st.text(max_size=30).map(lambda t: ("Bearer " + t).encode()),
    header_bytes,
)
paths = st.one_of(
    st.sampled_from(ROUTES),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=30).map(
        lambda p: "/" + p
    ),
)
bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {},
        optional={"split": st.sampled_from(["train", "test"]) | json_values, "index": json_values},
    ).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({}, optional={"task": row_like | json_values}).map(
        lambda v: json.dumps(v).encode()
    ),
)


def exchange(port: int, request: bytes) -> bytes:
    """Send raw bytes on a new connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer


def status_of(answer: bytes) -> int | None:
    """The answer's status; None when the server closed without one."""
    if not answer:
        return None
    return int(answer.split(b" ", 2)[1])


@FUZZ
@given(
    method=st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"HEAD", b"OPTIONS"]),
    path=paths,
    authorization=st.none() | authorizations,
    content_type=st.none() | st.just(b"application/json") | header_bytes,
    body=bodies,
)
def test_every_http_request_gets_an_answer_below_500(
    served, method, path, authorization, content_type, body
):
    head = [method + b" " + path.encode() + b" HTTP/1.1", b"Host: 127.0.0.1"]
    if authorization is not None:
        head.append(b"Authorization: " + authorization)
    if content_type is not None:
        head.append(b"Content-Type: " + content_type)
    head += [b"Content-Length: " + str(len(body)).encode(), b"Connection: close"]
    answer = exchange(served.port, b"\r\n".join(head) + b"\r\n\r\n" + body)
    status = status_of(answer)
    assert status is not None and status < 500, answer[:300]
    if status == 200 and path not in ("/health",) and not path.startswith("/health?"):
        assert authorization == b"Bearer " + TOKEN.encode(), (path, answer[:300])
    assert "Traceback" not in served.new_log()


@FUZZ
@given(authorization=st.none() | authorizations, extra=st.lists(header_bytes, max_size=3))
def test_every_websocket_handshake_is_accepted_with_the_token_and_refused_without(
    served, authorization, extra
):
    head = [
        b"GET /ws HTTP/1.1",
        b"Host: 127.0.0.1",
        b"Upgrade: websocket",
        b"Connection: Upgrade",
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        b"Sec-WebSocket-Version: 13",
        *(b"X-Fuzz-" + str(i).encode() + b": " + value for i, value in enumerate(extra)),
    ]
    if authorization is not None:
        head.append(b"Authorization: " + authorization)
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while b"\r\n\r\n" not in answer and (chunk := sock.recv(65536)):
                answer += chunk
    status = status_of(answer)
    printable = all(all(32 <= byte < 127 for byte in value) for value in extra)
    if authorization == b"Bearer " + TOKEN.encode() and printable:
        assert status == 101, answer[:300]
    elif authorization == b"Bearer " + TOKEN.encode():
        assert status in (101, 400), answer[:300]  # a header value HTTP does not allow
    else:
        assert status in (400, 401, 403), answer[:300]
    assert "Traceback" not in served.new_log()

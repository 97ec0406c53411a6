"""``foundry-bridge mock-server``: options reach the emulator, bad options are usage errors, Ctrl-C stops it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main
from foundry_bridge.mock import FaultConfig, FoundryEmulator, MockServer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[MockServer]:
    """Replace the blocking serve loop by an immediate Ctrl-C; keep the server objects for inspection."""
    servers: list[MockServer] = []

    def fake_serve_forever(self: MockServer) -> None:
        servers.append(self)
        self.shutdown()
        raise KeyboardInterrupt

    monkeypatch.setattr(MockServer, "serve_forever", fake_serve_forever)
    return servers


def test_help_lists_fault_options() -> None:
    result = CliRunner().invoke(cli, ["mock-server", "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    for option in (
        "--port",
        "--rate-limit-every",
        "--server-error-status",
        "--fail-runs",
        "--errored-rows",
        "--slow-polls",
    ):
        assert option in result.output


def test_options_reach_the_emulator(captured: list[MockServer]) -> None:
    args = [
        "mock-server",
        "--port",
        "0",
        "--polls-to-complete",
        "0",
        "--docret-shape",
        "per_metric",
        "--rate-limit-rate",
        "0.25",
        "--retry-after",
        "3",
        "--server-error-every",
        "7",
        "--server-error-status",
        "503",
        "--fail-runs",
        "1,4",
        "--errored-rows",
        "0,2",
        "--slow-polls",
        "2",
        "--seed",
        "9",
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (server,) = captured
    assert f"Foundry emulator listening on {server.url}" in result.output
    assert f"OpenAI base URL:  {server.url}/api/projects/mock-project/openai/v1" in result.output
    emu = server.emulator
    assert (emu.polls_to_complete, emu.docret_shape, emu.record_calls) == (0, "per_metric", False)
    assert emu.faults == FaultConfig(
        rate_limit_rate=0.25,
        retry_after=3,
        server_error_every=7,
        server_error_status=503,
        failed_runs=(1, 4),
        errored_rows=(0, 2),
        slow_polls=2,
        seed=9,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fail-runs", "one"], "expected comma-separated row/run indices"),
        (["--errored-rows", "-1"], "must be >= 0"),
        (["--fault-only", "("], "bad fault option"),
    ],
)
def test_bad_fault_options_are_usage_errors(
    args: list[str], message: str, captured: list[MockServer], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["mock-server", *args])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert captured == []


def test_busy_port_is_reported(captured: list[MockServer], capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit) as info:
            main(["mock-server", "--port", str(port)])
    assert info.value.code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_server_process_serves_and_stops_cleanly_on_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "foundry_bridge", "mock-server", "--rate-limit-every", "2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert first.startswith("Foundry emulator listening on http://127.0.0.1:")
        url = first.rsplit(" ", 1)[1]
        evals = f"{url}/api/projects/p/openai/v1/evals"
        assert httpx.get(evals).status_code == 200
        limited = httpx.get(evals)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    assert "Foundry emulator stopped." in err and "Traceback" not in err


# -- the server's own limits: parallel clients, bad lengths, large bodies, silent connections (127.0.0.1, bounded)
WAIT = 20.0  # the bound of every socket wait below


def _request(port: int, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection or goes quiet past WAIT (``socket.timeout``)."""
    chunks = []
    with sock:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _get(path: str = "/api/projects/p/openai/v1/evals") -> str:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"


def test_fifty_clients_connecting_at_once_are_all_served() -> None:
    """The listen backlog was 5: of 50 parallel requests, 4–23 failed (ECONNRESET). 50 connections made while the
    server is not yet accepting (the worst case of a burst) are all queued, then all answered."""
    server = MockServer(FoundryEmulator(), "127.0.0.1", 0)
    try:
        socks = []
        for _ in range(50):
            sock = socket.socket()
            sock.settimeout(3)  # a connection the backlog has no room for is never completed
            sock.connect(("127.0.0.1", server.port))
            sock.settimeout(WAIT)
            sock.sendall(_get().encode() + b"\r\n")
            socks.append(sock)
        server.start()
        statuses = [_answer(s).split(b" ", 2)[1] for s in socks]
    finally:
        server.shutdown()
    assert statuses == [b"200"] * 50


@pytest.mark.parametrize("length", ["-1", "abc", "12345678901234567890", "1e3", "5, 6"])
def test_a_content_length_that_is_no_size_is_answered_400(length: str) -> None:
    """``-1`` hung the connection; ``abc`` or a 20-digit value dropped it without a reply."""
    with MockServer(FoundryEmulator(), "127.0.0.1", 0) as server:
        head = f"POST /api/projects/p/openai/v1/evals HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
        reply = _answer(_request(server.port, head, b"{}"))
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert b"Content-Length must be one whole number" in reply and b"Connection: close" in reply


def test_a_body_above_the_limit_is_answered_413_before_it_is_sent() -> None:
    """A 200 MB body was read whole before a 400. Only the headers and a few bytes of it are sent here: the 413
    comes back at once (a server reading the announced body would wait WAIT seconds for the rest)."""
    with MockServer(FoundryEmulator(), "127.0.0.1", 0) as server:  # the default limit, 100 MiB
        head = f"POST /api/projects/p/openai/v1/evals HTTP/1.1\r\nHost: x\r\nContent-Length: {200 * 10**6}\r\n"
        reply = _answer(_request(server.port, head, b'{"name": "'))
        chunked = "POST /api/projects/p/openai/v1/evals HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        reply_chunked = _answer(_request(server.port, chunked, b"%x\r\n" % (200 * 10**6)))
    for answer in (reply, reply_chunked):
        assert answer.startswith(b"HTTP/1.1 413 "), answer
        assert b"above this server's limit of 104857600 bytes" in answer


def test_silent_connections_are_closed_after_the_read_timeout_and_the_server_keeps_serving() -> None:
    """200 connections that send nothing (or half a request) were held open for ever, each holding a thread."""
    with MockServer(FoundryEmulator(), "127.0.0.1", 0, read_timeout=1.0) as server:
        silent = [socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) for _ in range(100)]
        half = [_request(server.port, "POST /x HTTP/1.1\r\nContent-Length: 10") for _ in range(100)]
        closed = [_answer(sock) for sock in silent + half]  # EOF once the server closes; socket.timeout if never
        assert _answer(_request(server.port, _get())).startswith(b"HTTP/1.1 200 ")
    assert closed == [b""] * 200

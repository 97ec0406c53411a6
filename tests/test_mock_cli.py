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
from foundry_bridge.mock import FaultConfig, MockServer

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

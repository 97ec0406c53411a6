"""A failing judge never hangs a local run: 500s, 429 with Retry-After, a judge that never answers, Ctrl-C.

Every judge here is a server on 127.0.0.1 started by the test. Each run must end (bounded by the judge limits
given; a subprocess timeout enforces a generous upper bound) with errored rows naming the cause; nothing here
asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_helpers import RELEVANCE_MAPPING as MAPPING
from local_helpers import criterion, with_criteria

from foundry_bridge.errors import UsageError
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer
from foundry_bridge.results import RUN_FILES
from foundry_bridge.runner_protocol import RunContext

ROOT = Path(__file__).resolve().parent.parent
REL = {"query": "{{item.query}}", "response": "{{item.response}}"}
CLI_BOUND = 120  # seconds: a generous ceiling for one CLI run; the limits below end it far sooner


class HangingServer:
    """Accepts TCP connections on 127.0.0.1 and never answers (nor closes them)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)
            self._serve(conn)

    def _serve(self, conn: socket.socket) -> None:
        """What happens to an accepted connection: nothing (it hangs)."""

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


class TricklingServer(HangingServer):
    """Reads each request, answers ``200`` with a 10 MB ``Content-Length`` and then sends one byte every 0.5 s:
    every read gets something, so a per-read timeout never fires."""

    def _serve(self, conn: socket.socket) -> None:
        threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    @staticmethod
    def _trickle(conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536) or b"\r\n\r\n"
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.strip().lower()
                           == b"content-length"), 0)  # fmt: skip
            while len(body) < length:
                body += conn.recv(65536) or b" " * length
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{")
            for _ in range(2400):  # 20 minutes at most, whatever happens to the client
                time.sleep(0.5)
                conn.sendall(b" ")
        except OSError:
            return


@pytest.fixture
def trickling() -> Iterator[TricklingServer]:
    server = TricklingServer()
    yield server
    server.close()


@pytest.fixture
def hanging() -> Iterator[HangingServer]:
    server = HangingServer()
    yield server
    server.close()


@pytest.fixture
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer() as server:
        yield server


def _plan(rows: int):
    from local_helpers import benefits_plan

    return with_criteria(benefits_plan(limit=rows), [criterion("rel", "builtin.relevance", REL, threshold=3)])


def _execute(backend: LocalBackend, rows: int, tmp_path: Path):
    ctx = RunContext(plan=_plan(rows), run_dir=tmp_path)
    return list(backend.execute(ctx)), ctx


def _backend(url: str, tmp_path: Path, **kw) -> LocalBackend:
    return LocalBackend(judge_endpoint=url, judge_model="m", use_cache=False, cache_dir=tmp_path / "c", **kw)


# -- the Python API -----------------------------------------------------------------------------------------------
def test_a_judge_answering_500_errors_each_row_after_the_bounded_retries(judge: FakeJudgeServer, tmp_path: Path):
    judge.rule = lambda r: FakeAnswer(content="internal error", status=500)
    rows, ctx = _execute(_backend(judge.base_url, tmp_path, judge_retries=1, judge_timeout=5), 2, tmp_path)
    assert [r.error.split(" (")[0] for r in rows] == ["JUDGE_HTTP_ERROR: HTTP 500 from the judge"] * 2
    assert judge.calls == 2 * 2  # each row: the first try and one retry, nothing more
    assert ctx.manifest["local"]["judge_retries"] == 1 and ctx.manifest["local"]["judge_timeout"] == 5


def test_a_judge_that_keeps_failing_is_given_up_on(judge: FakeJudgeServer, tmp_path: Path):
    judge.rule = lambda r: FakeAnswer(content="down", status=503)
    backend = _backend(judge.base_url, tmp_path, judge_retries=0, concurrency=1, give_up_after=3)
    rows, ctx = _execute(backend, 8, tmp_path)
    assert judge.calls == 3  # then the judge is taken to be down: the other five rows are not sent
    assert all(r.error.startswith("JUDGE_HTTP_ERROR: HTTP 503") for r in rows[:3])
    for r in rows[3:]:
        assert r.error.startswith("JUDGE_NOT_CALLED: the judge failed 3 calls in a row")
        assert "last cause: JUDGE_HTTP_ERROR: HTTP 503" in r.error
    assert ctx.manifest["errored"] == 8 and ctx.manifest["local"]["judge_not_called"] == 5


def test_a_success_resets_the_run_of_failures(judge: FakeJudgeServer, tmp_path: Path):
    calls = {"n": 0}

    def every_other(req: JudgeRequest) -> FakeAnswer:
        calls["n"] += 1
        return score_answer(4) if calls["n"] % 2 else FakeAnswer(content="down", status=500)

    judge.rule = every_other
    rows, _ = _execute(_backend(judge.base_url, tmp_path, judge_retries=0, concurrency=1, give_up_after=2), 6, tmp_path)
    assert judge.calls == 6 and not any(r.error and r.error.startswith("JUDGE_NOT_CALLED") for r in rows)


def test_429_waits_for_retry_after_then_errors_with_the_status(judge: FakeJudgeServer, tmp_path: Path):
    judge.rule = lambda r: FakeAnswer(content="slow down", status=429, headers={"Retry-After": "0.2"})
    rows, _ = _execute(_backend(judge.base_url, tmp_path, judge_retries=2), 2, tmp_path)
    assert all(r.error.startswith("JUDGE_HTTP_ERROR: HTTP 429") for r in rows)
    assert judge.calls == 2 * 3


def test_an_absurd_retry_after_is_not_waited_for(judge: FakeJudgeServer, tmp_path: Path):
    """A day-long Retry-After is not obeyed (azure-ai-evaluation's own loop would sleep for it): no retry."""
    judge.rule = lambda r: FakeAnswer(content="come back tomorrow", status=429, headers={"Retry-After": "86400"})
    rows, _ = _execute(_backend(judge.base_url, tmp_path, judge_retries=5), 2, tmp_path)
    assert all(r.error.startswith("JUDGE_HTTP_ERROR: HTTP 429") for r in rows)
    assert judge.calls == 2


def test_a_judge_that_never_answers_times_out_per_request(hanging: HangingServer, tmp_path: Path):
    rows, _ = _execute(_backend(hanging.base_url, tmp_path, judge_timeout=0.5, judge_retries=1), 2, tmp_path)
    assert all(r.error.startswith("JUDGE_TIMEOUT") for r in rows)
    assert len(hanging.accepted) == 2 * 2  # one retry per row after its timeout


@pytest.mark.parametrize(
    "options",
    [
        {"judge_timeout": 0},
        {"judge_timeout": -1},
        {"judge_timeout": float("nan")},
        {"judge_timeout": 1e9},
        {"judge_retries": -1},
        {"judge_retries": 10**6},
        {"give_up_after": 0},
        {"timeout": float("inf")},
    ],
)
def test_absurd_judge_limits_are_usage_errors(options: dict, tmp_path: Path):
    with pytest.raises(UsageError):
        _backend("http://127.0.0.1:9/v1", tmp_path, **options)


# -- the CLI ------------------------------------------------------------------------------------------------------
def _dataset(tmp_path: Path, rows: int) -> tuple[Path, Path]:
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "query": f"question {i}?", "response": f"answer {i}."}) + "\n"
            for i in range(rows)
        )
    )
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(MAPPING)
    return data, mapping


def _cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "foundry_bridge", *map(str, args)]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test-not-a-secret"}


def test_cli_against_a_silent_judge_finishes_with_errored_rows_and_progress_lines(hanging, tmp_path: Path):
    data, mapping = _dataset(tmp_path, 3)
    out = tmp_path / "run"
    args = ["run", data, "--mapping", mapping, "--backend", "local", "--out", out, "--no-cache"]
    args += ["--judge-endpoint", hanging.base_url, "--judge-timeout", "0.5", "--judge-retries", "1"]
    proc = subprocess.run(_cli(*args), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / RUN_FILES["results"]).read_text().splitlines()]
    assert len(rows) == 3 and all(r["error"].startswith("JUDGE_TIMEOUT") for r in rows)
    # stderr is a pipe, not a terminal: plain progress lines, the last one with the errors so far
    progress = [line for line in proc.stderr.splitlines() if line.startswith("judging ")]
    assert progress[0].startswith("judging 0/3")
    assert progress[-1].startswith("judging 3/3, 3 errored")
    assert "Traceback" not in proc.stderr


def test_cli_cuts_off_a_judge_that_trickles_its_answer(trickling: TricklingServer, tmp_path: Path):
    """``--judge-timeout`` is a total deadline for a request (connect, send, every read), not httpx's per-read
    timeout: a judge answering one byte every 0.5 s is cut off and the row errors with the cause. (Before, the run
    went on for as long as the judge kept trickling: the subprocess bound below fails it.)"""
    data, mapping = _dataset(tmp_path, 1)
    out = tmp_path / "run"
    args = ["run", data, "--mapping", mapping, "--backend", "local", "--out", out, "--no-cache"]
    args += ["--judge-endpoint", trickling.base_url, "--judge-timeout", "2", "--judge-retries", "0"]
    proc = subprocess.run(_cli(*args), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / RUN_FILES["results"]).read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["error"].startswith("JUDGE_TIMEOUT: the request timed out")
    assert "within 2 s" in rows[0]["error"]
    assert len(trickling.accepted) == 1  # --judge-retries 0: one request
    assert "1 errored" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("--judge-timeout", "0"), ("--judge-timeout", "1e20"), ("--judge-timeout", "nan"), ("--judge-retries", "-1")],
)
def test_cli_refuses_absurd_judge_limits(option: str, value: str, tmp_path: Path):
    data, mapping = _dataset(tmp_path, 1)
    args = ["run", data, "--mapping", mapping, "--backend", "local", "--judge-endpoint", "http://127.0.0.1:9/v1"]
    proc = subprocess.run(_cli(*args, option, value), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert proc.returncode == 2 and option in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("again", ["same command", "--resume"])
def test_after_a_judge_outage_running_again_asks_only_for_the_errored_rows(
    again: str, judge: FakeJudgeServer, tmp_path: Path
):
    """Two of five rows error (the judge answers 503 for them); once the judge is back, the same command (or
    ``--resume``) asks the judge for those two only, keeps the other three as they were (``--no-cache``: they come
    from the run folder, not from the cache) and says how many were asked again."""
    down = threading.Event()
    down.set()

    def rule(req: JudgeRequest) -> FakeAnswer:
        failing = down.is_set() and ("question 1?" in req.data or "question 3?" in req.data)
        return FakeAnswer(content="overloaded", status=503) if failing else score_answer(4)

    judge.rule = rule
    data, mapping = _dataset(tmp_path, 5)
    out = tmp_path / "run"
    args = ["run", data, "--mapping", mapping, "--backend", "local", "--out", out, "--no-cache"]
    args += ["--judge-endpoint", judge.base_url, "--judge-retries", "0"]
    first = subprocess.run(_cli(*args), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert first.returncode == 0, first.stderr
    rows = [json.loads(line) for line in (out / RUN_FILES["results"]).read_text().splitlines()]
    assert [r["error"] is not None for r in rows] == [False, True, False, True, False]
    assert judge.calls == 5
    down.clear()
    judge.reset()
    cmd = (
        args if again == "same command" else ["run", "--resume", out, "--judge-endpoint", judge.base_url, "--no-cache"]
    )
    second = subprocess.run(_cli(*cmd), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert second.returncode == 0, second.stderr
    assert judge.calls == 2 and all(("question 1?" in r.data) != ("question 3?" in r.data) for r in judge.requests)
    rows = [json.loads(line) for line in (out / RUN_FILES["results"]).read_text().splitlines()]
    assert [r["error"] for r in rows] == [None] * 5 and [r["score"] for r in rows] == [4.0] * 5
    assert "2 errored judgement(s) asked again" in second.stderr and "reused" not in second.stderr
    assert "0 errored" in second.stderr
    manifest = json.loads((out / RUN_FILES["manifest"]).read_text())
    assert manifest["errored"] == 0 and manifest["local"]["judge_calls"] == 2 and manifest["retried"] == 2
    # a third time, nothing errored: reused, no call
    third = subprocess.run(_cli(*args), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert third.returncode == 0 and "reused" in third.stderr and judge.calls == 2


def _interrupt_when(proc: subprocess.Popen[str], marker: str) -> str:
    """Read stderr until ``marker`` shows, send SIGINT, return all of stderr."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if marker in line:
            proc.send_signal(signal.SIGINT)
            break
    _, rest = proc.communicate(timeout=CLI_BOUND)
    return "".join(seen) + rest


def test_ctrl_c_on_local_leaves_a_folder_that_resume_finishes(judge: FakeJudgeServer, tmp_path: Path):
    answering = threading.Event()

    def rule(req: JudgeRequest) -> FakeAnswer:
        return score_answer(4) if answering.is_set() else FakeAnswer(content="{}", delay=3)

    judge.rule = rule
    data, mapping = _dataset(tmp_path, 3)
    out = tmp_path / "run"
    args = ["run", data, "--mapping", mapping, "--backend", "local", "--out", out, "--cache-dir", tmp_path / "c"]
    args += ["--judge-endpoint", judge.base_url, "--judge-timeout", "1", "--judge-retries", "0", "--concurrency", "1"]
    proc = subprocess.Popen(_cli(*args), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
    stderr = _interrupt_when(proc, "judging 0/3")
    assert proc.returncode != 0
    assert f"answers received so far are cached: foundry-bridge run --resume {out} with the same --judge-*" in stderr
    assert "Traceback" not in stderr
    answering.set()
    again = _cli("run", "--resume", out, "--judge-endpoint", judge.base_url, "--cache-dir", tmp_path / "c")
    resumed = subprocess.run(again, capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in (out / RUN_FILES["results"]).read_text().splitlines()]
    assert [r["score"] for r in rows] == [4.0, 4.0, 4.0]


def test_ctrl_c_on_mock_says_resume_cannot_work(tmp_path: Path):
    data = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
    out = tmp_path / "run"
    args = ["run", data, "--backend", "mock", "--out", out, "--mock-fault", "slow_seconds=60"]
    proc = subprocess.Popen(_cli(*args), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
    stderr = _interrupt_when(proc, "waiting for Foundry")
    assert proc.returncode != 0
    assert "Nothing is lost" not in stderr
    assert "cannot be resumed" in stderr and f"--force --out {out}" in stderr
    # --resume anyway (with the same emulator setup): the same located refusal and fix, no raw 404
    again = _cli("run", "--resume", out, "--mock-fault", "slow_seconds=60")
    resumed = subprocess.run(again, capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert resumed.returncode == 2, resumed.stderr
    assert "HTTP 404" not in resumed.stderr and "GET " not in resumed.stderr and "Traceback" not in resumed.stderr
    assert f"{out} holds an unfinished mock run" in resumed.stderr and f"--force --out {out}" in resumed.stderr


def test_resume_of_a_run_that_left_no_folder_says_how_to_start_over(tmp_path: Path):
    """Ctrl-C before the run folder was made: ``--resume`` names the folder and gives the fix, not click's
    'Directory ... does not exist', and creates nothing."""
    out = tmp_path / "never-written"
    proc = subprocess.run(_cli("run", "--resume", out), capture_output=True, text=True, timeout=CLI_BOUND, env=_env())
    assert proc.returncode == 2, proc.stderr
    assert "Invalid value" not in proc.stderr and "Traceback" not in proc.stderr
    assert f"nothing to resume in {out}" in proc.stderr and f"--force --out {out}" in proc.stderr
    assert not out.exists()

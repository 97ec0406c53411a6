"""Fault suite, run folders: one process owns a folder, service ids are never orphaned, damaged folders are caught.

Subjects: ownership (a second ``run`` — plain, ``--force`` or ``--resume`` — on a folder another process holds is
refused at once, naming the holder, and deletes nothing; a killed holder never blocks the next run), service ids
(each is printed as it is created; a ``state.json`` that cannot be written is an error listing them, and the
printed state resumes the run without a second submission), damaged folders (truncated, corrupt or mixed files
are never reused or reported as finished; ``--resume`` collects again), and the wording of ``--resume`` and
Ctrl-C on the emulator. Concurrency is real (other processes) and synchronised on a pipe or on the lock's holder
file, every wait bounded by a timeout; no test depends on timing luck.
"""

from __future__ import annotations

import errno
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge import runner
from foundry_bridge.cli import main
from foundry_bridge.errors import UsageError
from foundry_bridge.mock import FoundryEmulator
from foundry_bridge.runfolder import HOLDER_FILE, RunFolder, RunState

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
ROWS = 14  # the sample's rows
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
WAIT = 60.0  # the bound of every wait on another process
FB = [sys.executable, "-m", "foundry_bridge"]

Capture = pytest.CaptureFixture[str]


def cli(args: list[str], capsys: Capture) -> tuple[int, str, str]:
    """One in-process command: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def mock_run(out_dir: Path, capsys: Capture, *extra: str) -> tuple[int, str, str]:
    return cli(["run", str(SAMPLE), "--backend", "mock", "--out", str(out_dir), *extra], capsys)


def finished_run(out_dir: Path, capsys: Capture) -> Path:
    code, _, err = mock_run(out_dir, capsys, "-q")
    assert code == 0, err
    return out_dir


def lines(path: Path) -> list[bytes]:
    return [ln for ln in path.read_bytes().splitlines() if ln.strip()]


def no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


@pytest.fixture
def one_emulator(monkeypatch: pytest.MonkeyPatch) -> FoundryEmulator:
    """Every mock backend of the test over one emulator, as if the service outlived the process."""
    emu = FoundryEmulator()
    real = runner.get_backend
    monkeypatch.setattr(runner, "get_backend", lambda name, **kw: real(name, emulator=emu, **kw))
    return emu


# -- ownership ---------------------------------------------------------------------------------------------------
def _readline(proc: subprocess.Popen[str], timeout: float = WAIT) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"the helper process said nothing within {timeout} s"
    return proc.stdout.readline()


_HOLDER = """
import sys
from foundry_bridge.runfolder import RunFolder
with RunFolder(sys.argv[1]).lock():
    print("locked", flush=True)
    sys.stdin.readline()  # hold the folder until the test closes the pipe
print("released", flush=True)
"""


@pytest.fixture
def held(tmp_path: Path, capsys: Capture) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A finished run folder whose lock another process holds until the test ends."""
    run_dir = finished_run(tmp_path / "run", capsys)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(run_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert _readline(proc) == "locked\n"
        yield run_dir, proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=WAIT)
        finally:
            proc.kill()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["run", str(SAMPLE), "--backend", "mock", "--out", "{dir}"], id="plain"),
        pytest.param(["run", str(SAMPLE), "--backend", "mock", "--out", "{dir}", "--force"], id="force"),
        pytest.param(["run", "--resume", "{dir}"], id="resume"),
        pytest.param(["run", "--resume", "{dir}", "--force"], id="resume-force"),
    ],
)
def test_a_run_on_a_folder_another_process_holds_is_refused_at_once_and_deletes_nothing(
    held: tuple[Path, subprocess.Popen[str]], args: list[str], capsys: Capture
) -> None:
    run_dir, proc = held
    before = {
        str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != HOLDER_FILE
    }
    code, out, err = cli([a.replace("{dir}", str(run_dir)) for a in args], capsys)
    assert code == 1, err
    no_traceback(err)
    assert err.startswith(f"Error: {run_dir}: in use by process {proc.pid} on {socket.gethostname()}, since "), err
    assert f"kill {proc.pid}" in err and "--force never takes over a folder in use" in err
    assert out == ""
    assert {
        str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != HOLDER_FILE
    } == before


def test_the_lock_is_released_with_its_holder(held: tuple[Path, subprocess.Popen[str]], capsys: Capture) -> None:
    run_dir, proc = held
    assert proc.stdin is not None
    proc.stdin.close()
    assert _readline(proc) == "released\n"
    assert proc.wait(timeout=WAIT) == 0
    code, _, err = mock_run(run_dir, capsys, "--force", "-q")
    assert code == 0, err
    assert not (run_dir / HOLDER_FILE).exists()


def _holder_pid(run_dir: Path) -> Any:
    try:
        return json.loads((run_dir / HOLDER_FILE).read_bytes()).get("pid")
    except (OSError, ValueError):  # not yet written (each write is atomic: absent or whole)
        return None


def _status(run_dir: Path) -> Any:
    try:
        return json.loads((run_dir / "state.json").read_bytes()).get("status")
    except (OSError, ValueError):
        return None


def test_two_real_runs_into_one_folder_the_second_is_refused_and_a_killed_holder_blocks_nothing(
    tmp_path: Path, capsys: Capture
) -> None:
    run_dir = tmp_path / "run"
    slow = subprocess.Popen(
        [*FB, "run", str(SAMPLE), "--backend", "mock", "--out", str(run_dir), "--mock-fault", "slow_seconds=600", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + WAIT
        while not (_holder_pid(run_dir) == slow.pid and _status(run_dir) == "submitted"):
            assert slow.poll() is None, slow.communicate(timeout=WAIT)[1]
            assert time.monotonic() < deadline, "the slowed run never took the lock and submitted"
            time.sleep(0.05)  # polling files the other process writes: synchronisation, not a timing assumption
        code, _, err = mock_run(run_dir, capsys, "--force")
        assert code == 1 and f"in use by process {slow.pid}" in err, err
    finally:
        slow.kill()
        slow.wait(timeout=WAIT)
    state = RunState.model_validate_json((run_dir / "state.json").read_bytes())
    assert state.eval_id and state.status == "submitted"  # the killed run's ids are kept for the next one
    code, _, err = mock_run(run_dir, capsys, "--force", "-q")  # the OS released the dead holder's lock
    assert code == 0, err
    assert len(lines(run_dir / "results.jsonl")) == json.loads((run_dir / "manifest.json").read_text())["results"]


def test_a_new_folder_the_run_never_used_is_not_left_behind(tmp_path: Path) -> None:
    with RunFolder(tmp_path / "new").lock():
        assert (tmp_path / "new" / HOLDER_FILE).is_file()
    assert not (tmp_path / "new").exists()


# -- service ids -------------------------------------------------------------------------------------------------
def test_each_service_id_is_printed_the_moment_it_exists(tmp_path: Path, capsys: Capture) -> None:
    code, _, err = mock_run(tmp_path / "run", capsys, "--max-rows-per-run", "10")
    assert code == 0, err
    state = RunState.model_validate_json((tmp_path / "run" / "state.json").read_bytes())
    assert state.eval_id is not None and len(state.run_ids) == 2
    printed = re.findall(r"^(eval|run) created: (\S+)$", err, flags=re.MULTILINE)
    assert printed == [("eval", state.eval_id), *(("run", r) for r in state.run_ids)]


def _fail_state_writes_once(monkeypatch: pytest.MonkeyPatch, when: Callable[[RunState], bool]) -> None:
    real = RunFolder.write_state

    def write_state(self: RunFolder, state: RunState) -> None:
        if when(state):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.file("state")))
        real(self, state)

    monkeypatch.setattr(RunFolder, "write_state", write_state)


@pytest.mark.parametrize(
    ("when", "kinds"),
    [
        pytest.param(lambda s: s.eval_id is not None, ["eval"], id="after-the-eval"),
        pytest.param(lambda s: bool(s.run_ids), ["eval", "run"], id="after-the-run"),
    ],
)
def test_a_state_that_cannot_be_written_prints_the_ids_and_the_state_that_resumes(
    when: Callable[[RunState], bool],
    kinds: list[str],
    one_emulator: FoundryEmulator,
    tmp_path: Path,
    capsys: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_dir = tmp_path / "run"
    with monkeypatch.context() as m:
        _fail_state_writes_once(m, when)
        code, _, err = mock_run(run_dir, capsys, "-q")
    assert code == 1
    no_traceback(err)
    assert f"{run_dir / 'state.json'}: No space left on device [ENOSPC]" in err
    (eval_id,) = one_emulator.store.evals  # it exists on the service...
    assert f"eval {eval_id}" in err and "NOT recorded" in err  # ...and the user is told its id
    if "run" in kinds:
        (run_id,) = one_emulator.store.runs
        assert f"run {run_id}" in err
    assert "write this line to" in err and "--resume" in err and "delete them on the service" in err
    on_disk = RunState.model_validate_json((run_dir / "state.json").read_bytes())
    assert (on_disk.run_ids if "run" in kinds else on_disk.eval_id) in ([], None)  # only the message has the id
    (run_dir / "state.json").write_text(err[err.index('{"') :].strip())  # the line the message says to write
    code, _, err = cli(["run", "--resume", str(run_dir), "-q"], capsys)
    assert code == 0, err
    assert list(one_emulator.store.evals) == [eval_id] and len(one_emulator.store.runs) == 1  # not submitted again
    assert len(lines(run_dir / "results.jsonl")) == json.loads((run_dir / "manifest.json").read_text())["results"]


# -- damaged run folders -----------------------------------------------------------------------------------------
def _halve(path: Path) -> None:
    kept = lines(path)
    path.write_bytes(b"".join(ln + b"\n" for ln in kept[: len(kept) // 2]))


@pytest.mark.parametrize(
    ("file", "recorded_in"),
    [("results.jsonl", "manifest.json"), ("output_items.jsonl", "state.json"), ("items.jsonl", "manifest.json")],
)
def test_a_finished_run_that_lost_half_a_file_is_never_reused(
    file: str, recorded_in: str, tmp_path: Path, capsys: Capture
) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    _halve(run_dir / file)
    code, _, err = mock_run(run_dir, capsys)
    assert code == 1 and "reused" not in err, err
    no_traceback(err)
    assert f"{run_dir}: damaged run folder: {file} holds " in err and f"but {recorded_in} records" in err
    assert f"--resume {run_dir}" in err and "--force" in err


def test_report_refuses_a_truncated_results_file(tmp_path: Path, capsys: Capture) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    expected = len(lines(run_dir / "results.jsonl"))
    _halve(run_dir / "results.jsonl")
    code, out, err = cli(["report", str(run_dir)], capsys)
    assert code == 1 and out == ""
    no_traceback(err)
    assert f"results.jsonl holds {expected // 2} rows but manifest.json records {expected}" in err
    assert "(fix: " in err


def test_resume_collects_a_truncated_run_again(one_emulator: FoundryEmulator, tmp_path: Path, capsys: Capture) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    _halve(run_dir / "results.jsonl")
    code, _, err = cli(["run", "--resume", str(run_dir)], capsys)
    assert code == 0, err
    assert "reused" not in err
    assert len(lines(run_dir / "results.jsonl")) == json.loads((run_dir / "manifest.json").read_text())["results"]
    assert len(one_emulator.store.evals) == 1 and len(one_emulator.store.runs) == 1  # collected, not resubmitted


def test_the_files_of_two_runs_mixed_in_one_folder_are_caught(tmp_path: Path, capsys: Capture) -> None:
    first = finished_run(tmp_path / "a", capsys)
    second = finished_run(tmp_path / "b", capsys)
    shutil.copy(second / "manifest.json", first / "manifest.json")
    for args in (["report", str(first)], ["run", str(SAMPLE), "--backend", "mock", "--out", str(first)]):
        code, _, err = cli(args, capsys)
        assert code == 1, err
        no_traceback(err)
        assert "manifest.json and state.json describe different runs (eval_id " in err, err


def test_a_corrupt_results_line_is_located_with_a_way_to_recover(tmp_path: Path, capsys: Capture) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    rows = lines(run_dir / "results.jsonl")
    rows[4] = rows[4][:-7]  # same number of lines, one of them cut
    (run_dir / "results.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    for args in (
        ["report", str(run_dir)],
        ["run", str(SAMPLE), "--backend", "mock", "--out", str(run_dir)],
        ["run", "--resume", str(run_dir)],
    ):
        code, _, err = cli(args, capsys)
        assert code == 1, err
        no_traceback(err)
        assert f"Error: {run_dir / 'results.jsonl'}:5: not valid JSON" in err
        assert f"(fix: `foundry-bridge run --resume {run_dir}` collects the results again" in err


@pytest.mark.parametrize(
    ("command", "file", "content", "expected"),
    [
        ("resume", "plan.json", "{not json", "plan.json: not valid JSON"),
        ("resume", "plan.json", "", "plan.json: not valid JSON"),
        ("report", "manifest.json", "[1, 2]", "manifest.json: expected a JSON object, got list"),
        ("report", "plan.json", '"a plan"', "plan.json: expected a JSON object, got str"),
        ("resume", "items.jsonl", '{"item": 1}\n{bad\n', "items.jsonl:2: not valid JSON"),
        ("report", "records.jsonl", "{bad\n", "records.jsonl:1: not valid JSON"),
        ("run", "manifest.json", "[1]", "manifest.json: expected a JSON object, got list"),
    ],
)
def test_a_corrupt_file_is_a_located_error(
    command: str, file: str, content: str, expected: str, tmp_path: Path, capsys: Capture
) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    (run_dir / file).write_text(content)
    args = {
        "resume": ["run", "--resume", str(run_dir)],
        "report": ["report", str(run_dir)],
        "run": ["run", str(SAMPLE), "--backend", "mock", "--out", str(run_dir)],
    }[command]
    code, _, err = cli(args, capsys)
    assert code == 1, err
    no_traceback(err)
    assert err.startswith(f"Error: {run_dir / expected.split(': ', 1)[0]}"), err
    assert expected in err and "(fix: " in err


def test_force_starts_over_from_an_unreadable_state(tmp_path: Path, capsys: Capture) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    (run_dir / "state.json").write_text("{truncat")
    code, _, err = mock_run(run_dir, capsys, "--force", "-q")
    assert code == 0, err
    assert RunState.model_validate_json((run_dir / "state.json").read_bytes()).status == "completed"


# -- resume and Ctrl-C wording -----------------------------------------------------------------------------------
def test_a_cloud_resume_killed_before_the_eval_existed_finds_its_endpoint(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    endpoint = "https://example.services.ai.azure.com/api/projects/p"
    state = json.loads((run_dir / "state.json").read_text())
    state.update(backend="cloud", backend_identity={"endpoint": endpoint}, status="new")
    for key in ("eval_id", "runs", "endpoint", "api_version", "evaluators", "collected_items", "finished_at"):
        state.pop(key, None)
    (run_dir / "state.json").write_text(json.dumps(state))
    monkeypatch.delenv("AZURE_AI_PROJECT_ENDPOINT", raising=False)
    seen: dict[str, Any] = {}

    def get_backend(name: str, **options: Any) -> Any:  # stop before any credential or request
        seen.update(options, name=name)
        raise UsageError("stopped by the test")

    monkeypatch.setattr(runner, "get_backend", get_backend)
    code, _, err = cli(["run", "--resume", str(run_dir)], capsys)
    assert "no Foundry project endpoint" not in err
    assert code == 2 and "stopped by the test" in err
    assert seen["name"] == "cloud" and seen["endpoint"] == endpoint


def test_resuming_a_killed_mock_run_with_other_faults_says_why_it_cannot(tmp_path: Path, capsys: Capture) -> None:
    run_dir = tmp_path / "run"
    code, _, err = mock_run(run_dir, capsys, "--mock-fault", "slow_polls=1", "-q")
    assert code == 0, err
    state = json.loads((run_dir / "state.json").read_text())
    state["status"] = "submitted"  # as if the process had been killed while polling
    (run_dir / "state.json").write_text(json.dumps(state))
    code, _, err = cli(["run", "--resume", str(run_dir)], capsys)
    assert code == 2
    assert "another plan" not in err
    assert "no other process can resume it" in err and f"--force --out {run_dir}" in err


def test_ctrl_c_on_the_mock_does_not_promise_a_resume(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "execute_run", interrupted)
    code, _, err = mock_run(tmp_path / "run", capsys)
    assert code == 130
    assert "--resume" not in err and "cannot be resumed" in err and f"--force --out {tmp_path / 'run'}" in err


def test_a_disk_failure_after_submission_says_the_ids_are_saved_and_how_to_finish(
    one_emulator: FoundryEmulator, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"

    def full(self: RunFolder, rows: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.file("results")))

    with monkeypatch.context() as m:
        m.setattr(RunFolder, "write_results", full)
        code, _, err = mock_run(run_dir, capsys, "-q")
    assert code == 1
    no_traceback(err)
    assert err.startswith(f"Error: {run_dir / 'results.jsonl'}: No space left on device [ENOSPC]"), err
    assert f"the service ids are saved in {run_dir / 'state.json'}" in err and f"--force --out {run_dir}" in err
    assert not (run_dir / "results.jsonl").exists()
    code, _, err = cli(["run", "--resume", str(run_dir), "-q"], capsys)  # the ids really are enough (one service)
    assert code == 0, err
    assert len(one_emulator.store.evals) == 1 and len(one_emulator.store.runs) == 1


def test_report_on_a_run_that_never_finished_says_so(tmp_path: Path, capsys: Capture) -> None:
    run_dir = finished_run(tmp_path / "run", capsys)
    state = json.loads((run_dir / "state.json").read_text())
    state["status"] = "submitted"  # killed while polling: no results.jsonl, no manifest.json yet
    (run_dir / "state.json").write_text(json.dumps(state))
    (run_dir / "results.jsonl").unlink()
    (run_dir / "manifest.json").unlink()
    code, _, err = cli(["report", str(run_dir)], capsys)
    assert code == 1
    no_traceback(err)
    assert (
        f"{run_dir / 'results.jsonl'}: not written yet: the run has not finished (state.json says 'submitted')" in err
    )
    assert f"--resume {run_dir}" in err


def _snapshot(paths: list[Path]) -> dict[Path, bytes]:
    """The bytes of each of ``paths`` (a file, or every file of a folder)."""
    return {f: f.read_bytes() for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()}


@pytest.mark.parametrize(
    "case",
    ["report-results", "report-queries", "report-columns", "compare-state", "compare-junit", "metrics", "canaries"],
)
def test_an_output_that_is_an_input_or_a_file_of_a_run_folder_read_is_refused(
    case: str, tmp_path: Path, capsys: Capture
) -> None:
    """``report RUN --out RUN/results.jsonl`` (then ``report RUN`` failed), ``metrics DATA --out DATA``,
    ``canaries DATA --out DATA``, ``compare RUN RUN --out RUN/state.json``: each used to exit 0 having overwritten
    its own input. Each is refused (exit 2, naming the option and the input), and the input is left as it was."""
    run_dir = finished_run(tmp_path / "run", capsys)
    data = tmp_path / "data.jsonl"
    shutil.copy(SAMPLE, data)
    args, flag = {
        "report-results": (["report", str(run_dir), "--out", str(run_dir / "results.jsonl")], "--out"),
        "report-queries": (["report", str(run_dir), "--queries", str(run_dir / "records.jsonl")], "--queries"),
        "report-columns": (["report", str(run_dir), "--out", str(run_dir / "columns" / "x.json")], "--out"),
        "compare-state": (["compare", str(run_dir), str(run_dir), "--out", str(run_dir / "state.json")], "--out"),
        "compare-junit": (["compare", str(run_dir), str(run_dir), "--junit", str(run_dir / "plan.json")], "--junit"),
        "metrics": (["metrics", str(data), "--out", str(data)], "--out"),
        "canaries": (["canaries", str(data), "--out", str(tmp_path / "." / "data.jsonl")], "--out"),
    }[case]
    before = _snapshot([run_dir, data])
    code, _, err = cli(args, capsys)
    assert code == 2, err
    no_traceback(err)
    assert flag in err and "reads" in err and "another path" in err
    assert _snapshot([run_dir, data]) == before
    assert cli(["report", str(run_dir), "--format", "json"], capsys)[0] == 0


def test_a_report_beside_the_run_files_is_still_written(tmp_path: Path, capsys: Capture) -> None:
    """The documented ``report RUN --out RUN/report.html`` writes a new file of the report's own, twice."""
    run_dir = finished_run(tmp_path / "run", capsys)
    for _ in range(2):
        code, _, err = cli(["report", str(run_dir), "--out", str(run_dir / "report.html")], capsys)
        assert code == 0, err
    assert (run_dir / "report.html").stat().st_size > 0

"""Progress and time left on long work: ``report``, ``compare`` and ``metrics`` report their progress through the
one mechanism ``run`` uses (``commands._progress``): a bar on a terminal, a line every few seconds in a log, with
the time left; nothing for work shorter than a few seconds; nothing with ``--quiet``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from foundry_bridge.cli import main
from foundry_bridge.commands import _progress

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "runs" / "mock-3rows"
RUN_DIR = Path("{run}")  # a copy in the test's tmp_path: reading a run seals its columns into the folder
QRELS = ROOT / "tests" / "data" / "reference" / "trec_eval" / "qrels.test"
RUN = ROOT / "tests" / "data" / "reference" / "trec_eval" / "results.test"

COMMANDS = [
    (["report", str(RUN_DIR)], "building the report 4/4"),
    (["compare", str(RUN_DIR), str(RUN_DIR)], "reading the runs 2/2"),
    (["metrics", "--qrels", str(QRELS), "--run", str(RUN)], "computing metrics 3/3"),
]


@pytest.fixture(autouse=True)
def _run_copy(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "run")
    _RUN[0] = str(tmp_path / "run")


_RUN = [""]


def _stderr(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([a.replace(str(RUN_DIR), _RUN[0]) for a in argv])
    assert exited.value.code == 0
    return capsys.readouterr().err


@pytest.mark.parametrize(("argv", "line"), COMMANDS, ids=[a[0] for a, _ in COMMANDS])
def test_long_commands_write_progress_lines_to_a_log(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_progress, "SILENT_FOR", 0.0)  # as if the work had taken long
    assert line in _stderr(argv, capsys)
    assert line not in _stderr([*argv, "--quiet"], capsys)


@pytest.mark.parametrize(("argv", "line"), COMMANDS, ids=[a[0] for a, _ in COMMANDS])
def test_short_work_writes_no_progress_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_progress, "SILENT_FOR", 60.0)  # work shorter than the silence, however loaded the machine
    assert line.rsplit(" ", 1)[0] not in _stderr(argv, capsys)


def test_a_log_line_says_how_long_is_left(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 100.0, 110.0, 120.0])
    monkeypatch.setattr(_progress.time, "monotonic", lambda: next(clock))
    callback = _progress._plain_progress(interval=5.0)
    callback("report", 0, 4)  # at 100 s: the stage starts
    callback("report", 1, 4)  # 10 s a step: 30 s to go
    err = capsys.readouterr().err.splitlines()
    assert err == ["building the report 0/4, 0 s", "building the report 1/4, 10 s, about 30 s left"]

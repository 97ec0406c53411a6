"""A report killed half-way leaves its temporaries in the run folder; the next report removes them (issue #34, item
10) — and never a temporary that a live process is still writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from report_helpers import write_run

from foundry_bridge._io import STALE_SECONDS, atomic_open, remove_stale
from foundry_bridge.cli import cli
from foundry_bridge.columns import COLUMNS_DIR

# ``report RUN --out RUN/report.html`` in a child process that kills itself (SIGKILL: no clean-up of any kind) at
# ``sys.argv[2]``: while it seals the run's columns, or while it writes the per-query rows
_KILLED_REPORT = """
import os, signal, sys
from foundry_bridge import columns
from foundry_bridge.cli import main
from foundry_bridge.report import _build

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

run, at = sys.argv[1], sys.argv[2]
if at == "seal":
    columns.write_json = die  # the last step: meta.json
else:
    write = _build.write_rows
    def write_then_die(*args):
        write(*args)
        die()
    _build.write_rows = write_then_die
main(["report", run, "--format", "html", "--out", os.path.join(run, "report.html")])
"""


def _temporaries(run: Path) -> list[str]:
    return sorted(p.name for p in run.iterdir() if p.name.endswith(".tmp") or p.name.startswith(f".{COLUMNS_DIR}."))


def _age(paths: list[Path]) -> None:
    """As a later report finds them: untouched for longer than ``STALE_SECONDS``."""
    then = time.time() - STALE_SECONDS - 60
    for p in paths:
        os.utime(p, (then, then))


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_report_killed_twice_leaves_temporaries_the_next_report_removes(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    for at in ("seal", "rows"):
        proc = subprocess.run([sys.executable, "-c", _KILLED_REPORT, str(run), at], capture_output=True, timeout=120)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    left = _temporaries(run)
    assert any(n.startswith(f".{COLUMNS_DIR}.") for n in left), left  # the killed seal's work folder
    assert any(n.startswith(".report.html.queries.parquet.") for n in left), left  # the killed writer's rows
    assert not (run / "report.html").exists()
    _age([run / n for n in left])

    res = CliRunner().invoke(cli, ["report", str(run), "--out", str(run / "report.html")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert _temporaries(run) == []
    assert (run / "report.html").is_file() and (run / "report.html.queries.parquet").is_file()
    assert (run / COLUMNS_DIR / "meta.json").is_file()


def test_a_temporary_being_written_is_never_removed(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    with atomic_open(target) as fh:
        fh.write(b"half")
        (tmp,) = tmp_path.glob(".report.html.*.tmp")
        _age([tmp])
        assert remove_stale(tmp_path, ".report.html.*.tmp") == 0  # its writer is alive: it stays
        assert tmp.exists()
    assert target.read_bytes() == b"half" and list(tmp_path.glob("*.tmp")) == []

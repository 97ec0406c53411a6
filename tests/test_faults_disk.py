"""Fault suite, disks and secrets: a full or unwritable output location is a clear error naming the path and the
operating system's reason, with a fix; nothing is half-written; credentials never reach a message.

The full disk is real: a 4 KiB tmpfs mounted by the test and filled before the command runs (root only; the
tests skip, saying so, where the platform refuses the mount).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundry_bridge._io import atomic_open, write_json
from foundry_bridge.errors import describe_os_error, redact

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "foundry_bridge", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A mounted 4 KiB tmpfs with no free byte left."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip() or 'not permitted'}")
    try:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            with pytest.raises(OSError):
                while True:
                    os.write(fd, b"x" * 512)
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _assert_clear_os_error(done: subprocess.CompletedProcess[str], path: Path, reason: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"Error: {path}"), done.stderr
    assert reason in done.stderr and "(fix: " in done.stderr, done.stderr


def test_plan_onto_a_full_disk_names_the_file_and_leaves_nothing_behind(full_disk: Path) -> None:
    done = _cli("plan", str(SAMPLE), "--out", str(full_disk / "plan"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "No space left on device [ENOSPC]" in done.stderr and "free some space" in done.stderr
    leftovers = [p.name for p in (full_disk / "plan").glob("*")] if (full_disk / "plan").exists() else []
    assert [n for n in leftovers if n.endswith(".tmp")] == []


def test_report_onto_a_full_disk_is_a_clear_error(tmp_path: Path, full_disk: Path) -> None:
    run_dir = tmp_path / "run"
    assert _cli("run", str(SAMPLE), "--backend", "mock", "--out", str(run_dir), "--quiet").returncode == 0
    target = full_disk / "report.html"
    done = _cli("report", str(run_dir), "--format", "html", "--out", str(target))
    # the per-query rows are written first, beside the report (issue 13): the error names that file
    _assert_clear_os_error(done, full_disk / "report.html.queries.parquet", "No space left on device [ENOSPC]")
    assert not target.exists() and not (full_disk / "report.html.queries.parquet").exists()


def test_run_onto_a_full_disk_is_a_clear_error(full_disk: Path) -> None:
    done = _cli("run", str(SAMPLE), "--backend", "mock", "--out", str(full_disk / "run"), "--quiet")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "No space left on device [ENOSPC]" in done.stderr and str(full_disk / "run") in done.stderr


def test_a_file_in_the_way_of_the_output_folder_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    target = tmp_path / "afile" / "schema.json"
    done = _cli("schema", "--out", str(target))
    _assert_clear_os_error(done, blocker, "Not a directory [ENOTDIR]")
    assert "a part of the path is a file" in done.stderr


def test_atomic_write_that_fails_keeps_the_old_file_and_no_temporary(full_disk: Path) -> None:
    old = full_disk / "filler"
    before = old.read_bytes()
    with pytest.raises(OSError) as info:
        write_json(old, {"rows": ["x" * 100] * 100})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(old)
    assert old.read_bytes() == before
    assert [p.name for p in full_disk.iterdir()] == ["filler"]


def test_atomic_open_cleans_up_when_the_block_raises(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write(b"half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_describe_os_error_gives_path_reason_and_fix() -> None:
    exc = PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/srv/out/report.html")
    assert describe_os_error(exc) == (
        "/srv/out/report.html: Permission denied [EACCES] "
        "(fix: choose a location you may write to (--out), or change its permissions)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ***"),
        ('{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', '{"Authorization": "Basic ***"}'),
        ("{'authorization': 'Bearer eyJ0eXAi.abc'}", "{'authorization': 'Bearer ***'}"),
        ('Authorization: Digest username="u", response="6629fae4"', "Authorization: Digest ***"),
        ("Authorization: SharedKey account:c2lnbmF0dXJl\nnext: kept", "Authorization: SharedKey ***\nnext: kept"),
        ("sent basic dXNlcjpwYXNz to the proxy", "sent basic *** to the proxy"),
    ],
)
def test_redaction_covers_every_authorization_scheme(text: str, expected: str) -> None:
    assert redact(text) == expected

"""A query past the engine's memory limit ends in one line naming the limit and its setting, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "benefits"


def test_an_engine_out_of_memory_is_one_line_with_the_setting(tmp_path: Path) -> None:
    run = tmp_path / "run"
    env = {**os.environ, "FOUNDRY_BRIDGE_DUCKDB_MEMORY": "1MB"}
    cmd = [sys.executable, "-m", "foundry_bridge"]
    made = subprocess.run(
        [*cmd, "run", str(SAMPLE / "rag_eval.jsonl"), "--backend", "mock", "--out", str(run), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [*cmd, "report", str(run), "--format", "json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: the query engine ran out of its memory limit (1MB) on this input (fix: raise it, e.g. "
        "FOUNDRY_BRIDGE_DUCKDB_MEMORY=1GB, and run the command again)"
    )

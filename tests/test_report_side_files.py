"""`report --out FILE` writes every query's row beside FILE: one file per report (issue #22, item 13), so the
Markdown, JSON and HTML reports of a run (made with other options, say) never overwrite each other's rows."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from report_helpers import write_run

from foundry_bridge.cli import cli


def _report(run_dir: Path, out: Path, *extra: str) -> str:
    res = CliRunner().invoke(cli, ["report", str(run_dir), "--out", str(out), *extra], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _stages(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return [str(s) for s in pq.read_table(path).column("stage").to_pylist()]


def test_reports_in_three_formats_each_keep_their_own_per_query_rows(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run")
    md, js, html = tmp_path / "report.md", tmp_path / "report.json", tmp_path / "report.html"
    said = _report(run_dir, md, "--stage-k", "1")  # stages at k = 1: more search misses than at the default k
    _report(run_dir, js)
    _report(run_dir, html)

    sides = [tmp_path / "report.md.queries.parquet", tmp_path / "report.json.queries.parquet"]
    sides.append(tmp_path / "report.html.queries.parquet")
    assert all(p.is_file() for p in sides) and not (tmp_path / "report.queries.parquet").exists()
    assert f"wrote {sides[0]}" in said
    assert json.loads(js.read_text(encoding="utf-8"))["per_query"]["path"] == str(sides[1])
    assert f"`{sides[0]}`" in md.read_text(encoding="utf-8")
    assert str(sides[2]) in html.read_text(encoding="utf-8")
    # the Markdown report's rows are still those of its own options, not the later reports' ones
    assert _stages(sides[0]) != _stages(sides[1]) and _stages(sides[1]) == _stages(sides[2])


def test_per_query_jsonl_gives_the_parquet_files_rows(tmp_path: Path) -> None:
    """`--per-query jsonl` writes FILE.queries.jsonl: the rows of the Parquet file, one JSON object a line."""
    import pyarrow.parquet as pq

    run_dir = write_run(tmp_path / "run")
    parquet, jsonl = tmp_path / "a.json", tmp_path / "b.json"
    _report(run_dir, parquet)
    said = _report(run_dir, jsonl, "--per-query", "jsonl")
    side = tmp_path / "b.json.queries.jsonl"
    assert f"wrote {side}" in said and "JSON lines" in said and not (tmp_path / "b.json.queries.parquet").exists()
    lines = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines()]
    assert lines == pq.read_table(tmp_path / "a.json.queries.parquet").to_pylist()
    assert json.loads(jsonl.read_text(encoding="utf-8"))["per_query"]["format"] == "jsonl"

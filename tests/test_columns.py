"""RunColumns: a run's results and per-query facts as Parquet, read through DuckDB; folders of earlier versions
converted once, on their first read."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from foundry_bridge.columns import COLUMNS_DIR, RunColumns
from foundry_bridge.report import build_report, render_json
from foundry_bridge.runfolder import RunFolderError

DATA = Path(__file__).parent / "data" / "runs"
BASE = DATA / "base-076e843"  # written by the commit before columns existed (see data/runs/README.md)
_MOVING = ("run_dir", "created_at", "tool_version")  # provenance that names where and when a report was made


def _without_moving(report: dict[str, Any]) -> dict[str, Any]:
    report = json.loads(json.dumps(report))
    for key in _MOVING:
        report["provenance"].pop(key, None)
    report.get("per_query", {}).pop("path", None)
    (report.get("trust") or {}).get("source", {}).pop("run_dir", None)
    return report


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(BASE, run)
    assert not (run / COLUMNS_DIR).exists()
    return run


def test_a_run_folder_of_the_version_before_is_converted_once_and_reported_the_same(
    old_run: Path, tmp_path: Path
) -> None:
    report = build_report(old_run, queries_out=tmp_path / "q.jsonl")
    sealed = old_run / COLUMNS_DIR
    assert (sealed / "results.parquet").is_file() and list(sealed.glob("queries-*.parquet"))
    expected = json.loads((DATA / "base-076e843.report.json").read_text(encoding="utf-8"))
    assert _without_moving(json.loads(render_json(report))) == _without_moving(expected)
    rows = (tmp_path / "q.jsonl").read_text(encoding="utf-8")
    assert rows == (DATA / "base-076e843.queries.jsonl").read_text(encoding="utf-8")
    stamp = (sealed / "meta.json").stat().st_mtime_ns
    build_report(old_run)
    assert (sealed / "meta.json").stat().st_mtime_ns == stamp  # read again, not converted again


def test_columns_are_sealed_again_when_results_change(old_run: Path) -> None:
    RunColumns.open(old_run).close()
    results = old_run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    results.write_text("".join(lines[:-1]), encoding="utf-8")
    run = RunColumns.open(old_run)
    assert run.result_counts()[0] == len(lines) - 1


def test_a_read_only_run_folder_is_read_through_temporary_columns(
    old_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundry_bridge import columns

    real = tempfile.mkdtemp

    def mkdtemp(*args: Any, dir: Any = None, **kwargs: Any) -> str:
        if dir is not None and Path(dir) == old_run:
            raise PermissionError(13, "Permission denied", str(dir))  # what a read-only folder gives
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(columns.tempfile, "mkdtemp", mkdtemp)
    run = RunColumns.open(old_run)
    assert run.n_queries == 14 and not (old_run / COLUMNS_DIR).exists()
    path = run.path
    run.close()
    assert not path.exists()


def test_cells_keep_the_last_of_duplicated_result_rows(old_run: Path) -> None:
    results = old_run / "results.jsonl"
    first = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    again = dict(first, score=0.25, reason="judged again")
    with results.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(again) + "\n")
    run = RunColumns.open(old_run)
    cells = run.cells(first["criterion"], first["metric"])
    assert cells["score"][first["row"]] == 0.25 and cells["reason"][first["row"]] == "judged again"
    assert run.anomalies() == (0, 1)
    lo, hi = first["row"], run.n_queries  # the report's blocks read every pair at once: the same cells
    block = run.block_cells(lo, hi)
    assert block[first["criterion"], first["metric"]]["score"][0] == 0.25
    assert block[first["criterion"], first["metric"]]["reason"][0] == "judged again"
    assert sorted(block) == sorted((c, m) for c, ms in run.observed()[0].items() for m in ms)
    for (crit, metric), got in block.items():
        alone = run.cells(crit, metric, lo, hi)
        for name, values in got.items():
            assert np.array_equal(values, alone[name], equal_nan=values.dtype.kind == "f"), (crit, metric, name)


def test_result_rows_outside_the_dataset_and_errors_are_counted_once_sealed(old_run: Path) -> None:
    """The counts every report states of the result rows (kept in the sealed columns, not counted per report):
    rows, rows with an error, rows pointing outside the dataset, duplicates."""
    results = old_run / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    n_queries = len((old_run / "records.jsonl").read_text(encoding="utf-8").splitlines())
    extra = [dict(lines[0], row=n_queries + 5), dict(lines[0], row=-1), dict(lines[1], error="timeout", score=None)]
    with results.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in extra)
    manifest = json.loads((old_run / "manifest.json").read_text(encoding="utf-8"))
    manifest["results"] += len(extra)  # as a run that collected these rows records them
    (old_run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    run = RunColumns.open(old_run)
    errored = sum(row.get("error") is not None for row in lines) + 1
    assert run.result_counts() == (len(lines) + 3, errored)
    assert run.anomalies() == (2, 1)  # lines[1] judged again (with an error): a duplicate, the last one kept
    warnings = json.loads(render_json(build_report(old_run)))["warnings"]
    assert "2 result row(s) point at a dataset row that does not exist: ignored" in warnings
    assert "1 duplicated result row(s) (same row, criterion, metric): the last one kept" in warnings
    bare = run.cells(lines[1]["criterion"], lines[1]["metric"], texts=False)  # what the aggregates fetch
    assert bare["error"][lines[1]["row"]] == "" and np.isnan(bare["score"][lines[1]["row"]])
    full = run.cells(lines[1]["criterion"], lines[1]["metric"])
    assert full["error"][lines[1]["row"]] == "timeout"
    for name in ("present", "score", "passed", "threshold"):
        assert np.array_equal(bare[name], full[name], equal_nan=bare[name].dtype.kind == "f")
    assert np.array_equal(bare["error"] == None, full["error"] == None)  # noqa: E711 — elementwise


def test_a_damaged_results_line_is_named_by_line(old_run: Path) -> None:
    results = old_run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = '{"row": "x"}\n'
    results.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(RunFolderError) as err:
        RunColumns.open(old_run)
    assert err.value.line == 3


def test_local_metrics_are_columns_fetched_one_at_a_time(old_run: Path) -> None:
    run = RunColumns.open(old_run)
    column = run.column("ndcg@10")
    assert column.dtype == np.float64 and column.shape == (14,)
    negative = run.column("kind") == "negative"
    assert np.isnan(column[negative]).all()  # a negative query has no relevant label: undefined


def test_a_run_seals_the_facts_it_computed_while_reading_its_records(
    benefits_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run`` computes the per-query facts as its plan reads the records, and seals them without reading
    ``records.jsonl`` again; the facts equal those a folder sealed from ``records.jsonl`` gets."""
    from foundry_bridge.cli import main
    from foundry_bridge.runfolder import RunFolder

    real = RunFolder.iter_records
    read_again: list[Path] = []

    def iter_records(self: RunFolder, plan: Any) -> Any:
        read_again.append(self.path)
        return real(self, plan)

    monkeypatch.setattr(RunFolder, "iter_records", iter_records)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the prepared facts go (TMPDIR)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main(["run", str(benefits_jsonl), "--backend", "mock", "--out", str(out), "-q"])
    assert info.value.code in (0, None)
    assert read_again == [] and (out / COLUMNS_DIR / "meta.json").is_file()
    assert not list(scratch.glob("foundry-bridge-facts-*"))  # the prepared facts are removed
    sealed = RunColumns.open(out)
    facts = sealed.sql("SELECT * FROM queries ORDER BY row").fetchall()
    meta = dict(sealed.meta)
    sealed.close()

    shutil.rmtree(out / COLUMNS_DIR)
    again = RunColumns.open(out)  # sealed from records.jsonl
    assert read_again == [out]
    assert again.sql("SELECT * FROM queries ORDER BY row").fetchall() == facts
    assert {k: v for k, v in again.meta.items() if k != "sources"} == {k: v for k, v in meta.items() if k != "sources"}
    again.close()


def test_a_released_connection_reopens_at_the_next_query_and_a_closed_one_says_so(old_run: Path) -> None:
    run = RunColumns.open(old_run)
    before = run.column("ndcg@3")
    run.release()  # compare releases each run's engine between its uses
    np.testing.assert_array_equal(run.column("ndcg@3"), before)
    run.close()
    with pytest.raises(RunFolderError, match="closed"):
        run.column("ndcg@3")

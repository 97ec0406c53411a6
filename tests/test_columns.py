"""A run folder is its log; its tables are a cache: made on the first report, read again while the log is unchanged,
made again once it changes (a resumed run's results), and the report they give is the one main gave."""

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


def _close(got: Any, want: Any, where: str = "") -> None:
    """``got`` equals ``want``: texts exactly, numbers within 1e-9 relative (1e-12 absolute near zero)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), where
    else:
        assert got == want, where


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_a_run_folder_of_the_version_before_is_converted_once_and_reported_the_same(
    old_run: Path, tmp_path: Path
) -> None:
    report = build_report(old_run, queries_out=tmp_path / "q.jsonl", per_query="jsonl")
    sealed = old_run / COLUMNS_DIR
    assert (sealed / "results.parquet").is_file() and list(sealed.glob("queries-*.parquet"))
    expected = json.loads((DATA / "base-076e843.report.json").read_text(encoding="utf-8"))
    got = _without_moving(json.loads(render_json(report)))
    assert got["per_query"].pop("format") == "jsonl"
    # added since (#36): the queries each stage's decision took from the answer judges (for the emulator's page)
    assert sum(got["stages"].pop("judged").values()) == sum(map(len, got["stages"].pop("judged_queries").values()))
    _close(got, _without_moving(expected))
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines()]
    base = (DATA / "base-076e843.queries.jsonl").read_text(encoding="utf-8").splitlines()
    _close(rows, [json.loads(line) for line in base])
    stamp = (sealed / "meta.json").stat().st_mtime_ns
    build_report(old_run, queries_out=tmp_path / "q.parquet")
    assert (sealed / "meta.json").stat().st_mtime_ns == stamp  # read again, not made again
    _close(_parquet_rows(tmp_path / "q.parquet"), rows)  # the same rows in either format


def test_a_run_folder_made_by_main_with_its_tables_is_reported_the_same(tmp_path: Path) -> None:
    """A folder ``run`` wrote at main 9346a2b, its tables (``columns/`` with the format-5 ``meta.json``) beside its
    log: the tables are made again from the log (main's carry no key), and the report and the per-query rows equal
    main's within 1e-9."""
    run = tmp_path / "run"
    shutil.copytree(DATA / "main-9346a2b", run)
    assert "key" not in json.loads((run / COLUMNS_DIR / "meta.json").read_text(encoding="utf-8"))
    report = build_report(run, queries_out=tmp_path / "q.jsonl", per_query="jsonl")
    assert "key" in json.loads((run / COLUMNS_DIR / "meta.json").read_text(encoding="utf-8"))
    expected = json.loads((DATA / "main-9346a2b.report.json").read_text(encoding="utf-8"))
    _close(_without_moving(json.loads(render_json(report))), _without_moving(expected))
    rows = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines()]
    base = (DATA / "main-9346a2b.queries.jsonl").read_text(encoding="utf-8").splitlines()
    _close(rows, [json.loads(line) for line in base])


def test_the_parquet_rows_hold_the_reports_numbers(old_run: Path, tmp_path: Path) -> None:
    """Every Foundry aggregate of report.json, computed by hand from the per-query Parquet file (read by DuckDB)."""
    import duckdb

    report = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "q.parquet")))
    rows = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'q.parquet'}')").fetchall()
    names = [c[0] for c in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{tmp_path / 'q.parquet'}')").fetchall()]
    rows_d = [dict(zip(names, r, strict=True)) for r in rows]
    assert [r["row"] for r in rows_d] == list(range(report["per_query"]["rows"]))
    checked = 0
    for kind in ("positive", "negative"):
        mine = [r for r in rows_d if r["kind"] == kind]
        for key, agg in report[kind]["metrics"].items():
            if key not in (rows_d[0]["foundry"] or {}):
                continue
            cells = [r["foundry"][key] for r in mine]
            scored = [c for c in cells if c["status"] == "scored"]
            values = [c["score"] for c in scored if c["score"] is not None]
            assert agg["queries"] == len(mine) and agg["scored"] == len(scored), (kind, key)
            assert agg["errored"] == sum(c["status"] == "errored" for c in cells), (kind, key)
            assert agg["passed"] == sum(c["passed"] is True for c in scored), (kind, key)
            if values:
                assert agg["mean"] == pytest.approx(sum(values) / len(values), rel=1e-9), (kind, key)
                assert agg["max"] == max(values) and agg["min"] == min(values)
            checked += 1
    assert checked >= 10


def test_a_run_folder_whose_path_holds_glob_characters_is_read_as_it_is(tmp_path: Path) -> None:
    """``run[1]`` is a folder name, not a pattern: a sibling ``run1`` is never read in its place."""
    odd = tmp_path / "run[1]"
    shutil.copytree(BASE, odd)
    shutil.copytree(BASE, tmp_path / "run1")
    results = tmp_path / "run1" / "results.jsonl"
    results.write_text("", encoding="utf-8")  # a different run: no results at all
    report = json.loads(render_json(build_report(odd)))
    assert report["coverage"]["result_rows"] > 0 and (odd / COLUMNS_DIR / "results.parquet").is_file()


def _append(run: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` appended to the run's results, the manifest counting them: what a resumed run leaves."""
    with (run / "results.jsonl").open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["results"] += len(rows)
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_stale_cache_is_made_again_when_a_resumed_run_adds_results(old_run: Path, tmp_path: Path) -> None:
    before = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "a.parquet")))
    lines = [json.loads(line) for line in (old_run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    first = lines[0]  # judged again by the resumed run, with another score
    _append(old_run, [dict(first, score=0.25, reason="judged again")])
    after = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "b.parquet")))
    assert after["coverage"]["result_rows"] == before["coverage"]["result_rows"] + 1
    key = first["metric"] if first["metric"] == first["criterion"] else f"{first['criterion']}/{first['metric']}"
    assert _parquet_rows(tmp_path / "a.parquet")[first["row"]]["foundry"][key]["score"] == first["score"] != 0.25
    cell = _parquet_rows(tmp_path / "b.parquet")[first["row"]]["foundry"][key]
    assert cell["score"] == 0.25 and cell["reason"] == "judged again"
    kind = _parquet_rows(tmp_path / "a.parquet")[first["row"]]["kind"]
    n = before[kind]["metrics"][key]["scored"]
    want = before[kind]["metrics"][key]["mean"] + (0.25 - first["score"]) / n
    assert after[kind]["metrics"][key]["mean"] == pytest.approx(want, rel=1e-9)


def test_a_cache_made_with_other_parameters_is_made_again(old_run: Path) -> None:
    """``--stage-k`` changes the per-query facts: the tables are made again for it, and again for the default."""

    def stage_k(report: Any) -> int:
        return int(json.loads(render_json(report))["stages"]["stage_k"])

    default = stage_k(build_report(old_run))
    assert stage_k(build_report(old_run, stage_k=1)) == 1 != default
    assert stage_k(build_report(old_run)) == default


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


def test_the_last_of_duplicated_result_rows_wins(old_run: Path, tmp_path: Path) -> None:
    results = old_run / "results.jsonl"
    first = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    again = dict(first, score=0.25, reason="judged again")
    with results.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(again) + "\n")
    manifest = json.loads((old_run / "manifest.json").read_text(encoding="utf-8"))
    manifest["results"] += 1  # as a run that collected the row again records it
    (old_run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "q.parquet")))
    assert "1 duplicated result row(s) (same row, criterion, metric): the last one kept" in report["warnings"]
    key = first["metric"] if first["metric"] == first["criterion"] else f"{first['criterion']}/{first['metric']}"
    cell = _parquet_rows(tmp_path / "q.parquet")[first["row"]]["foundry"][key]
    assert cell["score"] == 0.25 and cell["reason"] == "judged again"


def _in_row_order(run_dir: Path, pair: tuple[str, str]) -> tuple[bool, bool]:
    """Is ``pair`` in row order: as found when the tables were sealed, and as a reader of tables sealed without
    it finds (the same)."""
    meta_path = run_dir / COLUMNS_DIR / "meta.json"
    run = RunColumns.open(run_dir)
    sealed = run.in_row_order(*pair)
    run.close()
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta_path.write_text(json.dumps({**meta, "in_row_order": None}), encoding="utf-8")
    run = RunColumns.open(run_dir)
    found = run.in_row_order(*pair)
    run.close()
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    return sealed, found


def test_result_rows_out_of_row_order_give_the_same_report_and_rows(old_run: Path, tmp_path: Path) -> None:
    """A metric whose result rows the file holds one per query in row order is joined with the queries by
    position; one whose rows come in another order (a resumed or parallel run) through a join: the same report and
    the same per-query rows either way."""
    pair = ("document_retrieval", "ndcg@3")
    in_order = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "a.parquet")))
    assert _in_row_order(old_run, pair) == (True, True)
    results = old_run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines()
    first = [line for line in lines if json.loads(line)["row"] == 0]  # every metric's first appearance, kept first
    results.write_text("\n".join(first + [line for line in reversed(lines) if line not in first]) + "\n")
    shuffled = json.loads(render_json(build_report(old_run, queries_out=tmp_path / "b.parquet")))
    assert _in_row_order(old_run, pair) == (False, False)
    _close(_without_moving(shuffled), _without_moving(in_order))
    assert _parquet_rows(tmp_path / "b.parquet") == _parquet_rows(tmp_path / "a.parquet")


def test_result_rows_outside_the_dataset_and_errors_are_counted(old_run: Path) -> None:
    """The counts every report states of the result rows: rows, rows with an error, rows pointing outside the
    dataset, duplicates."""
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
    report = build_report(old_run, queries_out=old_run.parent / "q.parquet")
    key = lines[1]["metric"] if lines[1]["metric"] == lines[1]["criterion"] else None
    key = key or f"{lines[1]['criterion']}/{lines[1]['metric']}"
    cell = _parquet_rows(old_run.parent / "q.parquet")[lines[1]["row"]]["foundry"][key]
    assert cell["status"] == "errored" and cell["error"] == "timeout" and cell["score"] is None
    assert report.coverage["per_metric"][key]["errored"] >= 1
    sealed = json.loads((old_run / COLUMNS_DIR / "meta.json").read_text(encoding="utf-8"))
    assert sealed["result_counts"] == [len(lines) + 3, errored, 2, 1]  # counted once, when the tables were sealed
    sealed.pop("result_counts")  # tables sealed by a version that did not count: counted by each reader
    (old_run / COLUMNS_DIR / "meta.json").write_text(json.dumps(sealed), encoding="utf-8")
    again = RunColumns.open(old_run)
    assert (again.result_counts(), again.anomalies()) == ((len(lines) + 3, errored), (2, 1))
    assert "result_counts" not in json.loads((old_run / COLUMNS_DIR / "meta.json").read_text(encoding="utf-8"))


def test_a_damaged_results_line_is_named_by_line(old_run: Path) -> None:
    results = old_run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = '{"row": "x"}\n'
    results.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(RunFolderError) as err:
        RunColumns.open(old_run)
    assert err.value.line == 3


@pytest.mark.parametrize("line", ['{"row": "x"}', '{"row": 1, "evaluator": "e", "metric": "m"}', '{"row": 1,'])
def test_a_results_line_that_is_not_a_result_row_is_named_by_line(old_run: Path, line: str) -> None:
    """A wrong type, a missing field (here ``criterion``) or broken JSON: the run's one reader of its results
    names the line, for ``report`` and for a resumed or reused run alike."""
    from foundry_bridge.runfolder import RunFolder

    results = old_run / "results.jsonl"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = line + "\n"
    results.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(RunFolderError) as err:
        build_report(old_run)
    assert err.value.line == 5 and err.value.file == str(results)
    with pytest.raises(RunFolderError) as again:
        list(RunFolder(old_run).iter_results())
    assert again.value.line == 5


def test_local_metrics_are_columns_fetched_one_at_a_time(old_run: Path) -> None:
    run = RunColumns.open(old_run)
    column = run.column("ndcg@10")
    assert column.dtype == np.float64 and column.shape == (14,)
    negative = run.column("kind") == "negative"
    assert np.isnan(column[negative]).all()  # a negative query has no relevant label: undefined


def test_a_run_writes_only_its_log_and_the_first_report_makes_the_tables(benefits_jsonl: Path, tmp_path: Path) -> None:
    from foundry_bridge.cli import main

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main(["run", str(benefits_jsonl), "--backend", "mock", "--out", str(out), "-q"])
    assert info.value.code in (0, None)
    assert (out / "results.jsonl").is_file() and not (out / COLUMNS_DIR).exists()
    report = json.loads(render_json(build_report(out)))
    assert report["coverage"]["queries"] == 14 and (out / COLUMNS_DIR / "meta.json").is_file()


def test_closed_columns_say_so(old_run: Path) -> None:
    run = RunColumns.open(old_run)
    assert run.column("ndcg@3").shape == (14,)
    run.close()
    with pytest.raises(RunFolderError, match="closed"):
        run.column("ndcg@3")

"""The notebook path (#27): one call from a DataFrame to a report, DataFrames out, errors and telemetry that fit a
Python caller, types a user's mypy reads."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines()]


# --- errors that fit the caller ---------------------------------------------------------------------------------


def test_a_dataframe_error_carries_its_row_and_column_as_data() -> None:
    from foundry_bridge.dataset import read_records
    from foundry_bridge.errors import DatasetError
    from foundry_bridge.mapping import load_mapping

    rows = _rows()
    rows[5]["retrieved_documents"] = "oops"
    with pytest.raises(DatasetError) as info:
        list(read_records(pd.DataFrame(rows), load_mapping(None)))
    error = info.value
    assert (error.file, error.row, error.column, error.line) == ("pandas.DataFrame", 5, "retrieved_documents", None)
    assert str(error) == "pandas.DataFrame: row 5: retrieved_documents: must be a list, got string"


def test_a_dataset_level_warning_lists_its_rows_as_data() -> None:
    from foundry_bridge.validate import validate

    in_file = validate(BENEFITS).problems
    in_frame = validate(pd.DataFrame(_rows())).problems
    assert [(p.code, p.lines, p.rows) for p in in_file] == [("zero_result", (7,), ())]
    assert [(p.code, p.lines, p.rows) for p in in_frame] == [("zero_result", (), (6,))]  # 0-based row index
    assert in_file[0].to_dict()["lines"] == [7] and "rows" not in in_file[0].to_dict()


def _context_none_at(index: int) -> list[dict[str, Any]]:
    rows = _rows()
    rows[index]["context"] = None
    return rows


# --- one call, and the names at the package root -----------------------------------------------------------------


def test_the_package_root_offers_the_public_names_without_loading_heavy_modules() -> None:
    code = (
        "import sys, foundry_bridge\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pydantic', 'pandas', 'httpx'))\n"
        "from foundry_bridge import (evaluate, validate, compare, compare_runs, build_report, run_evaluation,\n"
        "    plan_evaluation, Report, Comparison, ValidationReport, load_mapping, FoundryBridgeError, DatasetError,\n"
        "    MappingError, UsageError, BackendError, ValidationFailed, ProgressCallback)\n"
        "print(heavy, sorted(foundry_bridge.__all__) == sorted(set(foundry_bridge.__all__)), compare is compare_runs)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["[]", "True", "True"]
    import foundry_bridge

    assert set(foundry_bridge.__all__) == {"__version__", *foundry_bridge._EXPORTS}
    assert isinstance(foundry_bridge.validate(BENEFITS), foundry_bridge.ValidationReport)  # the package is callable


def test_evaluate_goes_from_a_dataframe_to_a_report_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import foundry_bridge as fb

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen: list[str] = []
    report = fb.evaluate(pd.DataFrame(_rows()), progress=lambda stage, done, total: seen.append(stage))
    assert isinstance(report, fb.Report) and report.per_query.rows == 14 and report.provenance.backend == "mock"
    run_dir = Path(report.provenance.run_dir)
    assert seen and run_dir.parent.parent == tmp_path
    kept = fb.evaluate(pd.DataFrame(_rows()), keep=True)
    assert Path(kept.provenance.run_dir).joinpath("manifest.json").is_file()  # kept, and the report says where
    assert kept.positive == report.positive and kept.stages.counts == report.stages.counts
    # the temporary folder lives as long as its report reads from it (to_pandas, compare), then it is gone
    assert run_dir.parent.exists() and len(report.to_pandas()) == 14
    del report
    gc.collect()
    assert not run_dir.parent.exists() and Path(kept.provenance.run_dir).exists()


def test_evaluate_refuses_what_validate_rejects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import foundry_bridge as fb

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(fb.ValidationFailed) as info:
        fb.evaluate(pd.DataFrame(_context_none_at(4)))
    assert "pandas.DataFrame: row 4: context: required input 'context'" in str(info.value)
    assert [p for p in tmp_path.iterdir() if p.name.startswith("foundry-bridge-")] == []
    out = tmp_path / "run"
    fb.evaluate(BENEFITS, out=out)
    with pytest.raises(fb.UsageError, match=r"use another out= folder, or force=True"):
        fb.evaluate(pd.DataFrame(_rows()[:5]), out=out)  # the same lock and folder rules as run_evaluation


# --- DataFrames out ----------------------------------------------------------------------------------------------


def test_to_pandas_has_every_query_even_when_the_report_keeps_only_the_worst(tmp_path: Path) -> None:
    from foundry_bridge import build_report, run_evaluation

    run_evaluation(BENEFITS, tmp_path / "run")
    full = build_report(tmp_path / "run")
    capped = build_report(
        tmp_path / "run", table_rows=5, worst=1
    )  # as a run above the 2,000-row cap: the worst rows only
    assert not capped.per_query.complete and len(capped.queries) < 14
    frame = capped.to_pandas()
    assert list(frame["query_id"]) == [r["query_id"] for r in _rows()] and list(frame["row"]) == list(range(14))
    assert frame.equals(full.to_pandas())
    q = full.queries[2]
    assert frame.loc[2, "ndcg@3"] == q.local["ndcg@3"]
    assert frame.loc[2, "groundedness"] == q.foundry["groundedness"].score
    assert frame.loc[2, "groundedness.passed"] == q.foundry["groundedness"].passed
    assert frame.loc[2, "stage"] == q.stage
    assert frame["ndcg@3"].dtype == "float64"
    written = build_report(tmp_path / "run", table_rows=5, worst=1, queries_out=tmp_path / "rows.parquet")
    assert written.to_pandas().equals(frame)  # read from the per-query file it wrote


def test_aggregates_frame_is_metric_by_section_with_integer_counts(tmp_path: Path) -> None:
    import foundry_bridge as fb

    report = fb.evaluate(BENEFITS)
    frame = report.aggregates_frame().set_index(["metric", "section"])
    agg = report.positive.metrics["groundedness"]
    row = frame.loc[("groundedness", "positive")]
    assert (row["queries"], row["scored"], row["passed"], row["failed"]) == (
        agg.queries, agg.scored, agg.passed, agg.failed
    )  # fmt: skip
    assert frame["scored"].dtype == "int64" and frame["passed"].dtype == "int64" and frame["mean"].dtype == "float64"
    assert len(frame) == len(report.positive.metrics) + len(report.negative.metrics)


def test_comparison_and_validation_reports_are_frames(tmp_path: Path) -> None:
    import foundry_bridge as fb

    a, b = fb.evaluate(BENEFITS), fb.evaluate(pd.DataFrame(_rows()[:10]))
    comparison = fb.compare([a, b], labels=["all", "first10"])
    frame = comparison.to_pandas()
    assert len(frame) == len(comparison.metrics) and set(frame["candidate"]) == {"first10"}
    m = comparison.get("first10", "ndcg@3")
    got = frame[(frame["metric"] == "ndcg@3") & (frame["section"] == "positive")].iloc[0]
    assert (got["n_paired"], got["delta"], got["verdict"]) == (m.n_paired, m.delta, m.verdict)

    problems = fb.validate(pd.DataFrame(_context_none_at(4))).to_pandas()
    error = problems[problems["severity"] == "error"].iloc[0]
    assert (error["file"], error["row"], error["field"], error["code"]) == (
        "pandas.DataFrame",
        4,
        "context",
        "missing_input",
    )
    assert error["hint"] and pd.isna(error["line"])
    warning = problems[problems["code"] == "zero_result"].iloc[0]
    assert warning["rows"] == [6]


# --- library messages in Python's words -------------------------------------------------------------------------


def test_compare_with_one_run_names_the_python_call_and_the_cli_its_arguments(tmp_path: Path) -> None:
    from foundry_bridge.comparison import compare_runs
    from foundry_bridge.errors import UsageError

    with pytest.raises(UsageError) as info:
        compare_runs([BENEFITS])
    assert str(info.value) == "compare_runs() needs at least two runs: [run_a, run_b, ...]"
    assert info.value.cli_text() == "compare needs at least two runs: RUN_A RUN_B [RUN_C ...]"


# --- telemetry with any provider --------------------------------------------------------------------------------


def _report(out: Path) -> Any:
    from foundry_bridge.report import build_report
    from foundry_bridge.runner import run_evaluation

    return build_report(run_evaluation(BENEFITS, out).run_dir)


def _users_provider() -> tuple[Any, Any]:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()  # the notebook's own: no resource attributes of the run
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider, exporter


def test_events_through_the_users_provider_carry_the_custom_event_marker_and_the_run(tmp_path: Path) -> None:
    from foundry_bridge.integrations.otel import emit_evaluation_events

    report = _report(tmp_path / "run")
    provider, exporter = _users_provider()
    n = emit_evaluation_events(report, logger_provider=provider, sources=("foundry",))
    events = [dict(r.log_record.attributes) for r in exporter.get_finished_logs()]
    assert n == len(events) > 0
    p = report.provenance
    assert p.eval_id and p.run_ids and p.dataset_sha256
    for attrs in events:
        assert attrs["microsoft.custom_event.name"] == "gen_ai.evaluation.result"
        assert attrs["foundry_bridge.eval.id"] == p.eval_id
        assert list(attrs["foundry_bridge.run.ids"]) == p.run_ids
        assert attrs["foundry_bridge.dataset.sha256"] == p.dataset_sha256


def test_an_unknown_exporter_is_a_usage_error_naming_the_accepted_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from foundry_bridge.errors import UsageError
    from foundry_bridge.integrations.otel import emit_evaluation_events

    report = _report(tmp_path / "run")
    with pytest.raises(UsageError) as info:
        emit_evaluation_events(report, exporter="bogus")  # type: ignore[arg-type]
    assert str(info.value) == (
        "unknown OpenTelemetry exporter 'bogus' for exporter=: choose one of 'otlp', 'console', 'azure-monitor'"
    )
    monkeypatch.delenv("APPLICATIONINSIGHTS_CONNECTION_STRING", raising=False)
    pytest.importorskip("azure.monitor.opentelemetry.exporter")
    with pytest.raises(UsageError) as missing:
        emit_evaluation_events(report, exporter="azure-monitor")
    assert "pass it as endpoint=" in str(missing.value) and "--" not in str(missing.value)
    assert str(missing.value).startswith("exporter='azure-monitor' needs the Application Insights connection")
    assert (
        missing.value.cli_text().startswith("--otel azure-monitor needs")
        and "--otel-endpoint" in missing.value.cli_text()
    )


# --- docs/notebook.md runs, and its numbers are the command line's -----------------------------------------------


def _notebook_cells() -> list[str]:
    text = (ROOT / "docs" / "notebook.md").read_text()
    return re.findall(r"```python\n(.*?)\n```", text, flags=re.S)


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "foundry_bridge", *args], check=True, capture_output=True, cwd=ROOT)


def test_the_notebook_runs_and_gives_the_command_lines_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for name in ("samples", "mappings"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    cells = _notebook_cells()
    assert len(cells) == 2 and sum(len(c.splitlines()) for c in cells) <= 14  # about a dozen lines
    ns: dict[str, Any] = {}
    for cell in cells:
        exec(compile(cell, "docs/notebook.md", "exec"), ns)
    monkeypatch.undo()

    top1 = tmp_path / "top1.jsonl"
    top1.write_text(
        "".join(json.dumps({**r, "retrieved_documents": r["retrieved_documents"][:1]}) + "\n" for r in _rows())
    )
    _cli("run", str(BENEFITS), "--backend", "mock", "--out", str(tmp_path / "top-10"))
    _cli("run", str(top1), "--backend", "mock", "--out", str(tmp_path / "top-1"))
    _cli("report", str(tmp_path / "top-10"), "--format", "json", "--out", str(tmp_path / "r.json"))
    _cli(
        "compare",
        str(tmp_path / "top-10"),
        str(tmp_path / "top-1"),
        "--format",
        "json",
        "--out",
        str(tmp_path / "c.json"),
    )
    cli_report = json.loads((tmp_path / "r.json").read_text())
    import pyarrow.parquet as pq

    cli_rows = pq.read_table(tmp_path / "r.json.queries.parquet").to_pylist()
    cli_compare = json.loads((tmp_path / "c.json").read_text())

    report, rows, stages = ns["report"], ns["rows"], ns["stages"]
    from test_report_golden import _differences

    for section in ("positive", "negative"):  # numbers to 1e-9: the engine sums in its own order
        assert _differences(getattr(report, section).model_dump(mode="json"), cli_report[section]) == []
    assert stages.sum().to_dict() == {s: n for s, n in cli_report["stages"]["counts"].items() if n}
    assert list(rows["stage"]) == [r["stage"] for r in cli_rows]
    assert list(rows["groundedness"]) == [r["foundry"]["groundedness"]["score"] for r in cli_rows]
    assert list(ns["problems"]["code"]) == ["zero_result"]

    deltas = ns["deltas"].loc["positive"]
    for metric in ("rr@10", "ndcg@3", "recall@10", "groundedness"):
        (cli,) = [m for m in cli_compare["metrics"] if m["metric"] == metric and m["section"] == "positive"]
        got = deltas.loc[metric]
        assert (got["delta"], got["ci_low"], got["ci_high"], got["p_adjusted"]) == pytest.approx(
            (cli["delta"], cli["ci_low"], cli["ci_high"], cli["p_adjusted"]), abs=1e-12
        )


# --- types a user's mypy reads ------------------------------------------------------------------------------------

USER_SCRIPT = """\
from pathlib import Path

import foundry_bridge as fb
from foundry_bridge import Comparison, ProgressCallback, Report, ValidationReport, evaluate


def progress(stage: str, done: int, total: int | None) -> None:
    print(stage, done, total)


def main(data: str) -> float:
    checked: ValidationReport = fb.validate(data)
    for p in checked.problems:
        print(p.file, p.row, p.field, p.code, p.rows)
    callback: ProgressCallback = progress
    report: Report = evaluate(data, backend="mock", progress=callback, out=Path("runs/x"))
    summary = fb.run_evaluation(data, "runs/y", "mock", force=True)
    other = fb.build_report(summary.run_dir)
    comparison: Comparison = fb.compare([report, other], labels=["a", "b"])
    print(report.to_pandas(), comparison.to_pandas(), report.aggregates_frame(), checked.to_pandas())
    try:
        fb.plan_evaluation(data, fb.load_mapping(None))
    except fb.ValidationFailed as exc:
        print(exc.report.errors)
    except fb.DatasetError as exc:
        print(exc.row, exc.column, exc.cli_text())
    m = comparison.get("b", "ndcg@3")
    return (m.delta or 0.0) + (report.positive.metrics["ndcg@3"].mean or 0.0)


reveal_type(fb.evaluate("d").provenance.run_dir)
reveal_type(fb.compare(["a", "b"]).metrics[0].p_adjusted)
reveal_type(fb.validate("d").problems[0].rows)
"""
WRONG = "import foundry_bridge as fb\n\nn: int = fb.evaluate('d').provenance.run_dir\n"


def _installed_copy(site: Path) -> None:
    """The package as a wheel installs it (``package-data``: py.typed, resources), without the build: the
    venv's setuptools may predate the PEP 639 ``license`` string the project declares."""
    shutil.copytree(ROOT / "foundry_bridge", site / "foundry_bridge", ignore=shutil.ignore_patterns("__pycache__"))


def _mypy(site: Path, cwd: Path, *files: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(site)}  # a site-packages-like directory: not the checkout
    (cwd / "mypy.ini").write_text("[mypy]\n")  # the user's: no pydantic plugin, nothing of the project's
    # mypy asks this interpreter where installed packages are: started with -S it names PYTHONPATH and the standard
    # library only, not the venv's site-packages, whose editable install of the checkout would be found too
    python = cwd / "python-without-site"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", str(cwd / "mypy.ini"),
         "--python-executable", str(python), *files],
        capture_output=True, text=True, cwd=cwd, env=env,
    )  # fmt: skip
    return run.stdout + run.stderr


def test_mypy_strict_reads_the_installed_package_types_with_no_plugin(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    site, user = tmp_path / "site", tmp_path / "user"
    user.mkdir()
    _installed_copy(site)
    (user / "script.py").write_text(USER_SCRIPT)
    (user / "wrong.py").write_text(WRONG)
    out = _mypy(site, user, "script.py", "wrong.py")
    assert 'script.py:31: note: Revealed type is "str"' in out  # the package's own types, not Any
    assert 'script.py:32: note: Revealed type is "float | None"' in out
    assert 'script.py:33: note: Revealed type is "tuple[int, ...]"' in out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors == [
        'wrong.py:3: error: Incompatible types in assignment (expression has type "str", variable has type "int")  '
        "[assignment]"
    ]  # the user's mistake is found; nothing inside the package is reported
    (site / "foundry_bridge" / "py.typed").unlink()  # the marker is what makes mypy read the package's types
    assert "missing library stubs or py.typed marker" in _mypy(site, user, "wrong.py")


def test_mypy_strict_finds_the_package_through_the_editable_install_make_setup_makes(tmp_path: Path) -> None:
    """`make setup` installs the checkout editable in compat mode (a path entry mypy follows): a user's script in
    another folder, checked with ``mypy --strict`` and no configuration of the project's, sees the package's own
    types. (setuptools' default editable install, an import hook, left mypy with no stub: ``Any`` and an error.)"""
    pytest.importorskip("mypy")
    if not any(Path(p).name.startswith("__editable__") for p in Path(sys.prefix).glob("lib/python*/site-packages/*")):
        pytest.skip("foundry_bridge is not installed editable in this interpreter's environment")
    (tmp_path / "user.py").write_text("import foundry_bridge\n\nreveal_type(foundry_bridge.__version__)\n")
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", "mypy.ini", "user.py"],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert 'user.py:3: note: Revealed type is "str"' in out, out
    assert run.returncode == 0, out

"""The report at scale: the same numbers as before the streaming rewrite, on a generated 3,000-query run.

The golden file (tests/data/report_scale/numbers.json) was written by the report code before issue 13's rewrite
(its ``_provenance`` names the commit): every aggregate, coverage count, stage count, the negative-query aggregate,
canaries, warnings, the first ids of each list, the top of the labelling queue, every comparison number (delta,
CI, p, verdict, wins/ties/losses) and a SHA-256 of the per-query rows must come out identical; fields added since
are allowed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from scale_helpers import COMPARE, GOLDEN, compare_numbers, report_numbers, synthetic_runs

from foundry_bridge.comparison import compare_runs, render_comparison_json
from foundry_bridge.report import build_report, render_json


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return synthetic_runs(tmp_path_factory.mktemp("scale"))


def test_report_numbers_are_unchanged(runs: tuple[Path, Path], golden: dict[str, Any], tmp_path: Path) -> None:
    report = build_report(runs[0], queries_out=tmp_path / "queries.jsonl", per_query="jsonl")
    rows = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == report.per_query.rows == 3000
    numbers = json.loads(json.dumps(report_numbers(json.loads(render_json(report)), rows), sort_keys=True))
    for key, expected in golden["report"].items():
        assert _holds(numbers[key], expected), key


def test_report_numbers_are_unchanged_when_read_in_small_blocks(
    runs: tuple[Path, Path], golden: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records sealed 700 at a time (one Parquet file each), each Foundry metric's rows written 300 to a row group
    (the files the per-query rows join by position): a run larger than every block gives the numbers of one block
    (block edges fall inside the run, not on it, nor on each other)."""
    import shutil

    from foundry_bridge import columns
    from foundry_bridge.report import _columns

    monkeypatch.setattr(columns, "BLOCK", 700)
    monkeypatch.setattr(_columns, "ROW_GROUP", 300)
    run = tmp_path / "run"
    shutil.copytree(runs[0], run)
    shutil.rmtree(run / columns.COLUMNS_DIR, ignore_errors=True)  # sealed again, in blocks of 700
    report = build_report(run, queries_out=tmp_path / "queries.jsonl", per_query="jsonl")
    assert len(list((run / columns.COLUMNS_DIR).glob("queries-*.parquet"))) > 1
    rows = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    numbers = json.loads(json.dumps(report_numbers(json.loads(render_json(report)), rows), sort_keys=True))
    for key, expected in golden["report"].items():
        assert _holds(numbers[key], expected), key
    _assert_compare_holds(runs, golden)


def test_compare_numbers_are_unchanged(runs: tuple[Path, Path], golden: dict[str, Any]) -> None:
    _assert_compare_holds(runs, golden)


def test_a_report_without_its_trust_section_is_the_same_report(runs: tuple[Path, Path]) -> None:
    """compare builds its reports with trust=False: only the trust section (and the time) may differ."""
    full = json.loads(render_json(build_report(runs[0], worst=0, table_rows=0)))
    lean = json.loads(render_json(build_report(runs[0], worst=0, table_rows=0, trust=False)))
    assert full["trust"] is not None and lean["trust"] is None
    for report in (full, lean):
        report.pop("trust")
        report["provenance"].pop("created_at")
    assert lean == full


def _assert_compare_holds(runs: tuple[Path, Path], golden: dict[str, Any]) -> None:
    """The golden predates the multiplicity corrections (#15, #36): uncorrected, the decisions are the old rule's.
    Three deliberate changes since (#36): the gated test is the primary family's, no longer counted among the
    exploratory tests, a gate check states its reason, and a check that did not fail but whose test cannot detect
    the Δ asked (its tolerated drop, below the minimum detectable |Δ|) is inconclusive, not passed."""
    comparison = compare_runs(list(runs), **COMPARE, correction="none", gate_correction="none")  # type: ignore[arg-type]
    numbers = json.loads(json.dumps(compare_numbers(json.loads(render_comparison_json(comparison))), sort_keys=True))
    expected = json.loads(json.dumps(golden["compare"]))
    expected["exploratory_tests"] -= sum(c["reason"] == "" for c in expected["gate"]["checks"])  # decided ones
    for new, old in zip(numbers["gate"]["checks"], expected["gate"]["checks"], strict=True):
        if old["reason"] == "":  # a decided check had none
            assert (
                new["reason"].startswith("b: positive groundedness: no significant change")
                and "none (raw p)" in new["reason"]
            )
            old["reason"] = new["reason"]
        if old["outcome"] == "passed" and new["outcome"] == "inconclusive":
            assert (
                new["power"]["mde"] > new["power"]["delta"] == new["tolerated"] and "need 3073 paired" in new["reason"]
            )
            old["outcome"] = "inconclusive"
    assert _holds(numbers, expected)


def _holds(new: Any, old: Any) -> bool:
    """``new`` has every value of ``old``, identical but numbers to 1e-9 (fields added since, e.g. coverage's hole
    counts, allowed)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(new[k], v) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(_holds, new, old))
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(new, old, rel_tol=1e-9, abs_tol=1e-12)  # numbers to 1e-9, not bytes
    return bool(new == old and type(new) is type(old))


@pytest.fixture(scope="module")
def large(runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[dict[str, Any]]]:
    """The 3,000-query report (more queries than the report holds rows for) and its per-query file's rows."""
    path = tmp_path_factory.mktemp("large") / "queries.jsonl"
    report = build_report(runs[0], queries_out=path, per_query="jsonl", worst=4)
    return report, [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _badness(row: dict[str, Any]) -> tuple[int, float, int]:
    """The documented order of the worst rows: most failed answer judges (groundedness, relevance: 1–5), then the
    lowest mean of their scores scaled to 0–1 (none: 1), then dataset order."""
    judged = [row["foundry"][c] for c in ("groundedness", "relevance") if row["foundry"][c]["status"] == "scored"]
    failed = sum(1 for s in judged if s["passed"] is False)
    scaled = [(s["score"] - 1) / 4 for s in judged if s["score"] is not None]
    return -failed, sum(scaled) / len(scaled) if scaled else 1.0, row["row"]


def test_a_large_run_keeps_the_worst_rows_and_writes_every_row(large: tuple[Any, list[dict[str, Any]]]) -> None:
    report, rows = large
    assert [r["query_id"] for r in rows] == [f"q{i}" for i in range(3000)]
    assert report.per_query.complete is False and report.per_query.rows == 3000
    for stage, ids in report.stages.worst.items():
        of_stage = sorted((r for r in rows if r["stage"] == stage), key=_badness)
        assert ids == [r["query_id"] for r in of_stage[:4]], stage
        assert report.stages.counts[stage] == len(of_stage)
    assert sorted(q.query_id for q in report.queries) == sorted(q for ids in report.stages.worst.values() for q in ids)
    assert all(len(ids) <= 100 for ids in report.stages.queries.values())


def test_the_html_of_a_large_run_shows_the_worst_rows_and_points_to_every_row(
    large: tuple[Any, list[dict[str, Any]]],
) -> None:
    from foundry_bridge.report import render_html, render_markdown

    report, _ = large
    page = render_html(report)
    shown = [q for s, ids in report.stages.worst.items() if s != "ok" for q in ids]
    assert page.count('<tr data-query-id="') == len(shown) <= 16
    assert f"Queries to look at ({len(shown)} of 3000)" in page and "queries.jsonl</code> (JSON lines" in page
    assert 'id="query-search"' not in page  # the search box comes with the complete table only
    md = render_markdown(report)
    table = md.split("### Queries to look at")[1].split("###")[0]
    assert sum(bool(re.match(r"\| q\d", line)) for line in table.splitlines()) == len(shown)
    assert "queries.jsonl` (JSON lines, one row per query)" in table


def _holes_by_hand(run: Path, k: int = 10) -> int:
    """(query, document) pairs retrieved in a query's top k without a label for it, repeats counted once."""
    n = 0
    for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        labelled = {g["document_id"] for g in rec.get("retrieval_ground_truth") or []}
        top = list(dict.fromkeys(d["document_id"] for d in rec["retrieved_documents"]))[:k]
        n += sum(1 for d in top if d not in labelled)
    return n


def test_the_labelling_queue_file_holds_every_hole_when_the_report_lists_the_top(
    runs: tuple[Path, Path], large: tuple[Any, list[dict[str, Any]]], tmp_path: Path
) -> None:
    from foundry_bridge.report import write_labelling_queue

    report, _ = large
    assert len(report.labelling_queue) == 100 < report.coverage["hole_documents"]
    queue = tmp_path / "queue.txt"
    n = write_labelling_queue(report, queue)
    lines = queue.read_text(encoding="utf-8").splitlines()
    assert n == len(lines) == report.coverage["holes"] == _holes_by_hand(runs[0])
    assert len({line.split()[2] for line in lines}) == report.coverage["hole_documents"]  # counted, not ranked
    first = report.labelling_queue[0]
    assert [line.split()[:3] for line in lines[: first.count]] == [
        [q["query_id"], "0", first.document_id] for q in first.queries
    ]


def test_report_cli_writes_the_per_query_file_beside_the_report(runs: tuple[Path, Path], tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from foundry_bridge.cli import cli

    out = tmp_path / "r.md"
    res = CliRunner().invoke(cli, ["report", str(runs[0]), "--out", str(out), "--worst", "2"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    side = tmp_path / "r.md.queries.parquet"
    assert pq.read_metadata(side).num_rows == 3000
    table = out.read_text(encoding="utf-8").split("### Queries to look at")[1].split("###")[0]
    stages = [line.split("|")[3].strip() for line in table.splitlines() if re.match(r"\| q\d", line)]
    assert stages and all(stages.count(s) <= 2 for s in set(stages))
    assert f"`{side}` (Parquet, one row per query)" in table
    js = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["report", str(runs[0]), "--out", str(js)], catch_exceptions=False)
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["per_query"]["path"] == str(tmp_path / "r.json.queries.parquet") and "queries" not in data


def test_canaries_beyond_the_list_are_counted_and_the_uncaught_come_first() -> None:
    from foundry_bridge.report._model import CanaryFlag
    from foundry_bridge.report._rows import _Canaries

    canaries = _Canaries()
    for i in range(150):  # every third canary not caught, every tenth without a verdict
        caught = None if i % 10 == 9 else i % 3 != 0
        canaries.add(i, CanaryFlag(query_id=f"q{i}", canary="wrong number", caught=caught))
    assert canaries.counts == {"canaries": 150, "caught": 90, "not_caught": 45, "no_verdict": 15}
    shown = canaries.shown()
    assert len(shown) == 100 and all(c.caught is not True for c in shown[:60]) and shown[60].caught is True

"""End to end: the benefits samples run on the in-process emulator (mock backend), then reported and compared.

The emulator's judges score by word overlap, so only facts that do not depend on their scores are pinned here:
coverage, the injected errored rows, the data-driven stages (search, assembly, a wrongly avoided answer,
negative queries) and the local metrics. The hand-chosen judge scores live in test_report_build.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from foundry_bridge import mock, runner
from foundry_bridge.comparison import compare_runs
from foundry_bridge.report import build_report, render_html, render_markdown

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _run(run_dir: Path, *, reverse: tuple[str, ...] = (), **backend_options) -> Path:
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import build_plan, load_mapping

    mapping = load_mapping(None)
    records = [
        r.model_copy(update={"retrieved_documents": r.retrieved_documents[::-1]}) if r.query_id in reverse else r
        for r in read_records(SAMPLE, mapping)
    ]
    plan = build_plan(records, mapping, name="benefits", dataset_path=str(SAMPLE))
    runner.run_evaluation(plan, run_dir, runner.get_backend("mock", **backend_options))
    return run_dir


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    faults = mock.FaultConfig(errored_rows=(1,), errored_criteria=("groundedness",))  # row 1 = q02
    return _run(tmp_path_factory.mktemp("e2e") / "run", faults=faults)


def test_emulator_run_reports_errors_as_errors(emulated: Path) -> None:
    report = build_report(emulated)
    assert report.provenance.backend == "mock" and report.provenance.eval_id and report.provenance.run_ids
    assert "lexical stand-in, not from a model" in report.warnings[0]  # mock scores are never passed off as judgements
    g = report.positive.metrics["groundedness"]
    assert (g.queries, g.scored, g.errored, g.missing) == (11, 10, 1, 0)
    q02 = next(q for q in report.queries if q.query_id == "q02")
    assert q02.foundry["groundedness"].status == "errored" and "FAILED_EXECUTION" in (
        q02.foundry["groundedness"].error or ""
    )
    assert q02.stage in ("unknown", "generation")  # never "ok" with an errored judge; generation only if another failed
    assert report.negative.metrics["groundedness"].errored == 0
    # every criterion came back for every other row
    for key, cov in report.coverage["per_metric"].items():
        expected_errored = 1 if key == "groundedness" else 0
        assert (cov["expected"], cov["errored"], cov["missing"]) == (14, expected_errored, 0), key


def test_emulator_run_data_driven_stages_and_local_metrics(emulated: Path) -> None:
    report = build_report(emulated)
    stages = {q.query_id: q.stage for q in report.queries}
    assert stages["q06"] == "assembly" and stages["q07"] == "search" and stages["q08"] == "generation"
    assert stages["n01"] == "ok" and stages["n03"] == "ok" and stages["n02"] == "generation"
    assert report.positive.metrics["rr@10"].mean == pytest.approx((8 + 0.25 + 0.5) / 11)
    assert report.negative_queries.surfaced_evidence == ["n02"]
    assert {c.query_id for c in report.canaries} == {"q03", "q04", "q05"}
    md, page = render_markdown(report), render_html(report)
    assert "### Where queries fail" in md and page.count('<tr data-query-id="') == 14


def test_two_identical_emulator_runs_compare_equal(emulated: Path, tmp_path: Path) -> None:
    again = _run(tmp_path / "again", faults=mock.FaultConfig(errored_rows=(1,), errored_criteria=("groundedness",)))
    cmp = compare_runs([emulated, again], fail_on=["groundedness", "rr@10"])
    assert all(m.verdict in ("no significant change", "too few paired queries", "not comparable") for m in cmp.metrics)
    assert not cmp.gate["failed"]


DEGRADED = ("q01", "q02", "q03", "q04", "q05", "q06", "q08")  # first relevant moves from rank 1 to rank 2


def test_a_candidate_better_on_a_subset_wins_significantly_on_the_emulator(emulated: Path, tmp_path: Path) -> None:
    faults = mock.FaultConfig(errored_rows=(1,), errored_criteria=("groundedness",))
    degraded = _run(tmp_path / "degraded", reverse=DEGRADED, faults=faults)
    cmp = compare_runs([degraded, emulated], fail_on=["rr@10"], correction="none")  # the raw test's verdict
    rr = cmp.get(cmp.candidates[0], "rr@10")
    assert (rr.wins, rr.losses, rr.ties) == (7, 0, 4)
    assert rr.delta == pytest.approx(7 * 0.5 / 11)
    assert rr.p_value == pytest.approx(2 / 2**7) and rr.verdict == "better"
    assert not cmp.gate["failed"]
    backwards = compare_runs([emulated, degraded], fail_on=["rr@10"], correction="none")
    assert backwards.get(backwards.candidates[0], "rr@10").verdict == "worse"
    assert backwards.gate["failed"]

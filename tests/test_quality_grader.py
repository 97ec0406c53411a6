"""builtin.quality_grader (preview): its code fails a response that abstains, which is the right answer to a
negative query. The catalog says so (``abstention_correct_on_negative``) and the report's negative-query section
counts such a verdict as correct; on a positive query the same abstention stays a failure."""

from __future__ import annotations

import json
from pathlib import Path

from report_helpers import sample_records, write_run

from foundry_bridge.catalog import get_evaluator
from foundry_bridge.report import build_report
from foundry_bridge.results import RUN_FILES, ResultRow
from foundry_bridge.wire import ABSTENTION_IS_CORRECT, passed_for_kind

QG = get_evaluator("quality_grader")
# the benefits sample: n01 and n03 abstain, n02 answers; q08 is a positive query whose response abstained
FAILED = {"n01", "n02", "n03", "q08"}


def _with_quality_grader(run: Path) -> Path:
    rows = []
    for i, rec in enumerate(sample_records()):
        passed = rec.query_id not in FAILED
        rows.append(
            ResultRow(
                row=i,
                query_id=rec.query_id,
                criterion="quality_grader",
                evaluator=QG.name,
                metric="quality_grader",
                score=1.0 if passed else 0.0,
                label="pass" if passed else "fail",
                passed=passed,
                reason="judged",
            ).model_dump(mode="json")
        )
    with (run / RUN_FILES["results"]).open("a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return run


def test_an_abstention_on_a_negative_query_is_counted_correct(tmp_path: Path) -> None:
    report = build_report(_with_quality_grader(write_run(tmp_path / "run")))
    neg = report.negative.metrics["quality_grader"]
    assert (neg.queries, neg.passed, neg.failed) == (3, 2, 1)  # n01, n03 abstained: correct; n02 answered: failed
    assert report.negative.metrics["quality_grader"].mean == 0.0  # the scores stay as the service gave them
    pos = report.positive.metrics["quality_grader"]
    assert (pos.passed, pos.failed) == (10, 1)  # q08 abstained on a positive query: still a failure
    by_id = {q.query_id: q for q in report.queries}
    assert by_id["n01"].foundry["quality_grader"].passed is True
    assert by_id["n01"].foundry["quality_grader"].reason.startswith(ABSTENTION_IS_CORRECT)
    assert by_id["n02"].foundry["quality_grader"].passed is False
    assert by_id["q08"].foundry["quality_grader"].passed is False


def test_the_rule_reads_the_catalog_and_the_query_kind() -> None:
    groundedness = get_evaluator("groundedness")
    assert passed_for_kind(QG, False, kind="negative", abstained=True) == (True, ABSTENTION_IS_CORRECT)
    assert passed_for_kind(QG, False, kind="positive", abstained=True) == (False, None)
    assert passed_for_kind(QG, False, kind="negative", abstained=None) == (False, None)
    assert passed_for_kind(QG, True, kind="negative", abstained=False) == (True, None)
    assert passed_for_kind(groundedness, False, kind="negative", abstained=True) == (False, None)

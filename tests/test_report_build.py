"""The report's numbers, checked by hand against the run folder written by ``report_helpers.write_run``.

Hand-chosen judge scores (report_helpers.JUDGE_SCORES; every other judge score is 5, threshold 3):
groundedness q02 ERROR, q03 2, q04 1, q08 4, n02 2; relevance q05 2, q08 3, n01 4, n03 MISSING;
retrieval q07 1, n01 1, n02 4, n03 2, q09 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import ERROR, JUDGE_SCORES, write_run

from foundry_bridge.report import ReportError, attribute_stage, build_report, write_labelling_queue
from foundry_bridge.report._model import FoundryScore
from foundry_bridge.report._stages import JudgeScore

POSITIVE = ["q01", "q02", "q03", "q04", "q05", "q06", "q07", "q08", "q09", "q10", "q11"]
NEGATIVE = ["n01", "n02", "n03"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    return build_report(write_run(tmp_path_factory.mktemp("run") / "run"))


def test_sections_hold_the_right_queries(report) -> None:
    assert report.positive.queries == 11 and report.negative.queries == 3
    assert [q.query_id for q in report.queries if q.kind == "positive"] == POSITIVE
    assert [q.query_id for q in report.queries if q.kind == "negative"] == NEGATIVE
    # q10 has no kind: positive from its labels; n03 has no kind: negative because no label reaches 1
    assert report.positive.kind_sources == {"declared": 10, "labels": 1}
    assert report.negative.kind_sources == {"declared": 2, "labels": 1}


def test_errored_judge_row_is_counted_as_errored_not_zero_not_dropped(report) -> None:
    agg = report.positive.metrics["groundedness"]
    # q02 errored; the 10 scored: 5,2,1,5,5,5,4,5,5,5 → 42/10
    assert (agg.queries, agg.scored, agg.errored, agg.missing) == (11, 10, 1, 0)
    assert agg.mean == pytest.approx(4.2)  # read as 0 it would be 42/11 = 3.818; dropped, coverage would be 10/10
    assert (agg.passed, agg.failed, agg.pass_rate) == (8, 2, pytest.approx(0.8))
    assert agg.coverage == pytest.approx(10 / 11)
    q02 = next(q for q in report.queries if q.query_id == "q02")
    assert q02.foundry["groundedness"].status == "errored"
    assert q02.foundry["groundedness"].score is None
    assert q02.foundry["groundedness"].error == ERROR
    assert report.coverage["per_metric"]["groundedness"] == {"expected": 14, "scored": 13, "errored": 1, "missing": 0}
    assert any("errored" in w for w in report.warnings)


def test_missing_judge_row_is_counted_as_missing(report) -> None:
    agg = report.negative.metrics["relevance"]
    # n01 4, n02 5, n03 missing
    assert (agg.queries, agg.scored, agg.errored, agg.missing) == (3, 2, 0, 1)
    assert agg.mean == pytest.approx(4.5)
    assert report.coverage["scores_missing"] == 1 and report.coverage["scores_errored"] == 1


def test_positive_and_negative_averages_are_separate(report) -> None:
    pos, neg = report.positive.metrics, report.negative.metrics
    assert neg["groundedness"].mean == pytest.approx((5 + 2 + 5) / 3)
    assert pos["relevance"].mean == pytest.approx((9 * 5 + 2 + 3) / 11)
    assert pos["retrieval"].mean == pytest.approx((9 * 5 + 1 + 3) / 11)  # q07 1, q09 3, the other 9 at 5
    assert neg["retrieval"].mean == pytest.approx((1 + 4 + 2) / 3)
    assert (neg["retrieval"].passed, neg["retrieval"].failed) == (1, 2)
    mixed = (42 + 12) / 13
    assert pos["groundedness"].mean != pytest.approx(mixed) and neg["groundedness"].mean != pytest.approx(mixed)
    # document_retrieval ndcg@3 (hand-chosen): positives q06 0.4, q07 0, q09 0, q11 0.5, others 1; negatives 0
    nd = "document_retrieval/ndcg@3"
    assert pos[nd].mean == pytest.approx((7 + 0.4 + 0.5) / 11)
    assert neg[nd].mean == 0 and neg[nd].pass_rate == 0


def test_local_ranking_metrics_by_hand(report) -> None:
    # first relevant (label ≥ 1) rank within k: q07 none, q09 rank 4, q11 rank 2, every other positive rank 1
    assert report.positive.metrics["rr@10"].mean == pytest.approx((8 + 0.25 + 0.5) / 11)
    assert report.positive.metrics["rr@3"].mean == pytest.approx((8 + 0 + 0.5) / 11)
    assert report.positive.metrics["hit@10"].mean == pytest.approx(10 / 11)
    # negatives have no relevant label: rr undefined, propagate → no mean, 3 undefined shown
    neg_rr = report.negative.metrics["rr@10"]
    assert (neg_rr.mean, neg_rr.undefined, neg_rr.scored) == (None, 3, 0)
    assert report.params.nan_policy == "propagate" and report.params.k == [3, 10]


@pytest.mark.parametrize(("policy", "expected"), [("zerofill", 0.0), ("drop", None), ("propagate", None)])
def test_nan_policy_is_applied_and_declared(tmp_path: Path, policy: str, expected: float | None) -> None:
    run = write_run(tmp_path / "run")
    plan = json.loads((run / "plan.json").read_text())
    plan["mapping"]["metrics"]["nan_policy"] = policy
    (run / "plan.json").write_text(json.dumps(plan))
    rep = build_report(run)
    assert rep.params.nan_policy == policy
    assert rep.negative.metrics["rr@10"].mean == expected  # drop with every value undefined: nothing to average
    assert rep.negative.metrics["rr@10"].undefined == 3


def test_each_stage_label_comes_from_the_query_built_for_it(report) -> None:
    stages = {q.query_id: q.stage for q in report.queries}
    assert stages == {
        "q01": "ok",
        "q02": "unknown",  # groundedness errored: never guessed
        "q03": "generation",  # wrong number: groundedness failed
        "q04": "generation",  # invented condition: groundedness failed
        "q05": "generation",  # grounded but not answering: relevance failed
        "q06": "assembly",  # pol-parttime-01 retrieved at rank 3, not in the context
        "q07": "search",  # pol-bereave-01 never retrieved
        "q08": "generation",  # wrongly avoided answer: judges pass, but the response abstained
        "q09": "ok",
        "q10": "ok",
        "q11": "ok",
        "n01": "ok",  # abstained
        "n02": "generation",  # answered a question the corpus cannot answer
        "n03": "ok",  # abstained
    }
    q08 = next(q for q in report.queries if q.query_id == "q08")
    assert "wrongly avoided" in q08.stage_reason and q08.abstained is True
    assert next(q for q in report.queries if q.query_id == "q06").dropped_relevant == ["pol-parttime-01"]
    assert report.stages.counts == {"search": 1, "assembly": 1, "generation": 5, "ok": 6, "unknown": 1}
    assert report.stages.queries["generation"] == ["q03", "q04", "q05", "q08", "n02"]
    assert report.positive.stages["generation"] == 4 and report.negative.stages["generation"] == 1


def test_a_missing_answer_judge_makes_the_stage_unknown(tmp_path: Path) -> None:
    scores = json.loads(json.dumps(JUDGE_SCORES))
    scores["relevance"]["q01"] = None  # MISSING: no result row
    rep = build_report(write_run(tmp_path / "run", scores=scores))
    q01 = next(q for q in rep.queries if q.query_id == "q01")
    assert q01.stage == "unknown" and "relevance (missing)" in q01.stage_reason
    assert rep.positive.metrics["relevance"].missing == 1


def test_stage_rules_without_labels_or_content() -> None:
    ok = [JudgeScore("g", FoundryScore(status="scored", score=5, passed=True))]
    common = {"has_response": True, "abstained": False, "answer_judges": ok}
    assert attribute_stage(kind="positive", hit=None, assembly_checked=True, dropped_relevant=[], **common)[0] == (
        "unknown"
    )
    assert attribute_stage(kind="positive", hit=1.0, assembly_checked=False, dropped_relevant=[], **common)[0] == (
        "unknown"
    )
    assert attribute_stage(kind="positive", hit=1.0, assembly_checked=True, dropped_relevant=[], **common)[0] == "ok"
    no_judge = {**common, "answer_judges": []}
    assert attribute_stage(kind="positive", hit=1.0, assembly_checked=True, dropped_relevant=[], **no_judge)[0] == (
        "unknown"
    )
    failed_but_missing = [
        JudgeScore("g", FoundryScore(status="scored", score=1, passed=False)),
        JudgeScore("r", FoundryScore(status="errored", error="X")),
    ]
    stage, reason = attribute_stage(
        kind="positive",
        hit=1.0,
        assembly_checked=True,
        dropped_relevant=[],
        has_response=True,
        abstained=False,
        answer_judges=failed_but_missing,
    )
    assert (stage, reason.endswith("g")) == ("generation", True)  # a known failure is enough
    neg = attribute_stage(
        kind="negative",
        hit=None,
        assembly_checked=True,
        dropped_relevant=[],
        has_response=True,
        abstained=False,
        answer_judges=[],
        label_contradiction=True,
    )
    assert neg[0] == "unknown"


def test_negative_query_section(report) -> None:
    neg = report.negative_queries
    assert neg.queries == NEGATIVE
    assert neg.abstained == ["n01", "n03"] and neg.answered == ["n02"]
    assert neg.surfaced_evidence == ["n02"]  # 401k passage at 0.78 ≥ surface threshold 0.6
    assert neg.label_contradictions == []
    assert neg.local["aggregate"]["negatives"] == 3


def test_judge_canaries_are_flagged(report) -> None:
    flags = {c.query_id: c for c in report.canaries}
    assert set(flags) == {"q03", "q04", "q05"}
    assert flags["q03"].canary == "wrong_number"
    assert (flags["q03"].passed_by, flags["q03"].failed_by, flags["q03"].caught) == (
        ["relevance"],
        ["groundedness"],
        True,
    )
    assert (flags["q05"].passed_by, flags["q05"].failed_by) == (["groundedness"], ["relevance"])


def test_a_canary_no_judge_caught(tmp_path: Path) -> None:
    scores = json.loads(json.dumps(JUDGE_SCORES))
    scores["groundedness"]["q03"] = 4
    rep = build_report(write_run(tmp_path / "run", scores=scores))
    q03 = next(c for c in rep.canaries if c.query_id == "q03")
    assert q03.caught is False and q03.passed_by == ["groundedness", "relevance"]


def test_labelling_queue_ranks_holes_by_frequency_and_rank(report, tmp_path: Path) -> None:
    queue = report.labelling_queue
    # pol-holiday-01: q07@2, q08@2, q02@3, q09@3 → 1/2+1/2+1/3+1/3; pol-wellness-01: q11@1; pol-eap-01: q04@2, q09@5
    assert [h.document_id for h in queue[:3]] == ["pol-holiday-01", "pol-wellness-01", "pol-eap-01"]
    assert queue[0].count == 4 and queue[0].best_rank == 2
    assert queue[0].priority == pytest.approx(1 / 2 + 1 / 2 + 1 / 3 + 1 / 3)
    assert queue[0].mean_rank == pytest.approx(2.5)
    assert queue[2].priority == pytest.approx(0.5 + 0.2)
    assert len(queue) == 11
    path = tmp_path / "queue.qrels"
    n = write_labelling_queue(report, path)
    lines = path.read_text().splitlines()
    assert n == len(lines) == 15
    assert lines[:4] == [
        "q07 0 pol-holiday-01 ?",
        "q08 0 pol-holiday-01 ?",
        "q02 0 pol-holiday-01 ?",
        "q09 0 pol-holiday-01 ?",
    ]
    jpath = tmp_path / "queue.jsonl"
    write_labelling_queue(report, jpath)
    first = json.loads(jpath.read_text().splitlines()[0])
    assert first["query_id"] == "q07" and first["query_relevance_label"] is None and first["rank"] == 2


def test_provenance_and_params(report) -> None:
    prov = report.provenance
    assert prov.backend == "fixture" and prov.run_ids == ["evalrun_fixture"] and prov.eval_id == "eval_fixture"
    assert prov.report_url and prov.dataset_sha256 == "0" * 64
    assert [e["criterion"] for e in prov.evaluators] == ["document_retrieval", "retrieval", "groundedness", "relevance"]
    p = report.params
    assert (p.relevance_threshold, p.label_min, p.label_max, p.stage_k) == (1, 0, 4, 10)
    assert p.answer_criteria == ["groundedness", "relevance"]
    assert {(t.criterion, t.metric): t.threshold for t in p.thresholds}[("groundedness", "groundedness")] == 3


def test_json_round_trips(report) -> None:
    from foundry_bridge.report import Report, render_json

    text = render_json(report)
    assert "NaN" not in text
    assert Report.model_validate_json(text) == report


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"plan\.json: not found"):
        build_report(tmp_path)
    run = write_run(tmp_path / "run")
    (run / "results.jsonl").write_text('{"row": 0, "query_id": "q01"\n')
    with pytest.raises(ReportError, match=r"results.jsonl:1: not valid JSON"):
        build_report(run)


def test_published_schema_is_current_and_validates_a_report(report) -> None:
    from foundry_bridge.report import render_json, report_json_schema

    published = json.loads((Path(__file__).resolve().parents[1] / "mappings" / "report.schema.json").read_text())
    assert published == json.loads(json.dumps(report_json_schema())), (
        "regenerate: python -m foundry_bridge.report.schema mappings/report.schema.json"
    )
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(render_json(report)), published)
    broken = json.loads(render_json(report))
    broken["positive"]["metrics"]["groundedness"]["errored"] = "one"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, published)


def test_stage_k_outside_the_declared_cutoffs(tmp_path: Path) -> None:
    # at k = 3, q09's first relevant document (rank 4) is out of reach: search
    rep = build_report(write_run(tmp_path / "run"), stage_k=3)
    assert rep.params.stage_k == 3
    assert {q.query_id: q.stage for q in rep.queries}["q09"] == "search"
    rep5 = build_report(tmp_path / "run", stage_k=5)
    assert rep5.params.k == [3, 5, 10] and {q.query_id: q.stage for q in rep5.queries}["q09"] == "ok"


def test_a_verdict_without_a_score_is_missing_not_scored(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run")
    path = run_dir / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:  # q01's relevance comes back with a verdict but a null score
        if row["query_id"] == "q01" and row["criterion"] == "relevance":
            row["score"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = build_report(run_dir)
    agg = rep.positive.metrics["relevance"]
    assert (agg.scored, agg.missing) == (10, 1)
    q01 = next(q for q in rep.queries if q.query_id == "q01")
    assert q01.foundry["relevance"].status == "missing"

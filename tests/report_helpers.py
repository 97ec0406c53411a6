"""Run folders for the report tests, written by hand from the benefits sample (no backend needed).

``write_run`` writes plan.json, records.jsonl, results.jsonl and manifest.json the way the runner lays a run
folder out, with judge scores chosen here (``JUDGE_SCORES``) so every number in the report can be checked by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foundry_bridge._io import write_json, write_jsonl
from foundry_bridge.catalog import CATALOG
from foundry_bridge.dataset import QueryRecord, read_records
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.results import RUN_FILES, ResultRow

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "benefits" / "rag_eval.jsonl"

ERROR = "FAILED_EXECUTION: the judge's output could not be parsed"
MISSING = None  # no result row at all

# criterion → query → judge score (1–5), ERROR, or MISSING; absent → 5.
JUDGE_SCORES: dict[str, dict[str, Any]] = {
    "groundedness": {"q02": ERROR, "q03": 2, "q04": 1, "q08": 4, "n02": 2},
    "relevance": {"q05": 2, "q08": 3, "n01": 4, "n03": MISSING},
    "retrieval": {"q07": 1, "n01": 1, "n02": 4, "n03": 2, "q09": 3},
}
# document_retrieval ndcg@3 per query (absent → 1.0)
NDCG3: dict[str, float] = {"q07": 0.0, "q09": 0.0, "q11": 0.5, "q06": 0.4, "n01": 0.0, "n02": 0.0, "n03": 0.0}


def sample_records() -> list[QueryRecord]:
    return list(read_records(SAMPLE, load_mapping(None)))


def _rows_for(
    record: QueryRecord,
    row: int,
    criterion: str,
    evaluator: str,
    scores: dict[str, dict[str, Any]],
    ndcg3: dict[str, float],
) -> list[ResultRow]:
    qid = record.query_id
    spec = CATALOG[evaluator]
    if spec.needs_deployment:
        per_query = scores.get(criterion, {})
        value = per_query.get(qid, 5) if qid in per_query else 5
        if qid in per_query and per_query[qid] is MISSING:
            return []
        common = {"row": row, "query_id": qid, "criterion": criterion, "evaluator": evaluator, "metric": criterion}
        if value == ERROR:
            return [ResultRow(**common, error=ERROR)]
        passed = value >= 3
        return [
            ResultRow(
                **common,
                score=float(value),
                label="pass" if passed else "fail",
                passed=passed,
                threshold=3.0,
                reason=f"hand-chosen {value}",
            )
        ]
    value = ndcg3.get(qid, 1.0)
    return [
        ResultRow(
            row=row,
            query_id=qid,
            criterion=criterion,
            evaluator=evaluator,
            metric="ndcg@3",
            score=value,
            label="pass" if value >= 0.5 else "fail",
            passed=value >= 0.5,
            threshold=0.5,
        )
    ]


def write_run(
    run_dir: Path,
    *,
    scores: dict[str, dict[str, Any]] | None = None,
    ndcg3: dict[str, float] | None = None,
    edit_records: Callable[[list[QueryRecord]], list[QueryRecord]] | None = None,
    manifest: dict[str, Any] | None = None,
) -> Path:
    """Write a complete run folder for the benefits sample; returns ``run_dir``."""
    mapping = load_mapping(None)
    records = sample_records()
    if edit_records is not None:
        records = edit_records(records)
    plan = build_plan(records, mapping, name="benefits", dataset_path=str(SAMPLE))
    scores = copy.deepcopy(JUDGE_SCORES) if scores is None else scores
    ndcg3 = dict(NDCG3) if ndcg3 is None else ndcg3
    results: list[ResultRow] = []
    for i, rec in enumerate(records):
        for crit in plan.criteria:
            results.extend(_rows_for(rec, i, crit.name, crit.evaluator, scores, ndcg3))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / RUN_FILES["plan"], plan.model_dump(mode="json", exclude={"records"}))
    write_jsonl(run_dir / RUN_FILES["records"], (r.model_dump(mode="json") for r in records))
    write_jsonl(run_dir / RUN_FILES["results"], (r.model_dump(mode="json") for r in results))
    write_json(
        run_dir / RUN_FILES["manifest"],
        manifest
        or {
            "backend": "fixture",
            "eval_id": "eval_fixture",
            "run_id": "evalrun_fixture",
            "report_url": "https://ai.azure.com/resource/build/evaluation/evalrun_fixture",
            "dataset_sha256": "0" * 64,
            "status": "completed",
        },
    )
    return run_dir

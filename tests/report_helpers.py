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


SYNTH_JUDGES = ("retrieval", "groundedness", "relevance")


def _synthetic_record(i: int, rng: Any) -> QueryRecord:
    """Query ``q{i}``: every tenth negative, every 53rd positive without a relevant label, one in seven whose
    relevant document was not retrieved, every 41st without a context, every 97th a canary, one response in ten an
    abstention; 10 retrieved documents of 5,000."""
    negative = i % 10 == 0
    docs = [f"d{rng.randrange(5000)}" for _ in range(10)]
    if negative:
        labels = []
    elif i % 53 == 1:
        labels = [{"document_id": docs[0], "query_relevance_label": 0}]
    elif i % 7 == 2:  # the relevant document was not retrieved: a search failure
        labels = [
            {"document_id": f"u{i}", "query_relevance_label": 2},
            {"document_id": docs[1], "query_relevance_label": 0},
        ]
    else:
        labels = [{"document_id": d, "query_relevance_label": rng.randint(0, 3)} for d in docs[:3]]
    rng.shuffle(docs)
    content = {d: f"passage {d} text about topic {i}" for d in docs}
    return QueryRecord.model_validate(
        {
            "query_id": f"q{i}",
            "query": f"question {i}?",
            "kind": "negative" if negative else "positive",
            "retrieved_documents": [
                {"document_id": d, "relevance_score": round(1 - r / 10 - rng.random() / 20, 4), "content": content[d]}
                for r, d in enumerate(docs)
            ],
            "retrieval_ground_truth": labels,
            "context": None if i % 41 == 3 else "\n\n".join(content[d] for d in docs[:4]),
            "response": "I don't know." if rng.random() < 0.1 else f"answer {i}",
            **({"extra": {"canary": "wrong number"}} if i % 97 == 5 else {}),
        }
    )


def _synthetic_rows(i: int, query_id: str, rng: Any, docret_metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """Document retrieval's metrics and three judges; one judge row in 500 errored, one in 211 missing, one
    document_retrieval row in 300 with a null score."""
    out: list[dict[str, Any]] = []
    for metric in docret_metrics:
        value = round(rng.random(), 6)
        out.append(
            {
                "row": i,
                "query_id": query_id,
                "criterion": "document_retrieval",
                "evaluator": "builtin.document_retrieval",
                "metric": metric,
                "score": None if i % 300 == 11 else value,
                "passed": value >= 0.5,
                "label": "pass" if value >= 0.5 else "fail",
                "threshold": 0.5,
            }
        )
    for j, crit in enumerate(SYNTH_JUDGES):
        base = {"row": i, "query_id": query_id, "criterion": crit, "evaluator": f"builtin.{crit}", "metric": crit}
        if (i + j) % 211 == 17:
            continue
        if (i + j) % 500 == 7:
            out.append({**base, "error": "FAILED_EXECUTION: x"})
        else:
            s = rng.randint(1, 5)
            out.append({**base, "score": float(s), "passed": s >= 3, "threshold": 3.0, "reason": f"judged {s}"})
    return out


def write_synthetic_run(run_dir: Path, n: int, seed: int) -> Path:
    """A run folder of ``n`` generated queries laid out as the runner writes it (plan.json, items.jsonl,
    records.jsonl, results.jsonl, manifest.json with the plan hash); deterministic for a (n, seed).
    Used by the before/after aggregates test and by benchmarks/bench_report.py. Above 20,000 queries the records
    and rows are streamed to disk (the same data; the plan is built from the first record, no items.jsonl)."""
    import random

    from foundry_bridge.metrics.docret import METRICS

    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    if n > 20_000:
        return _write_synthetic_stream(run_dir, n, rng)
    records = [_synthetic_record(i, rng) for i in range(n)]
    plan = build_plan(records, load_mapping(None), name="synthetic")
    write_json(run_dir / RUN_FILES["plan"], plan.model_dump(mode="json", exclude={"records", "items"}))
    write_jsonl(run_dir / RUN_FILES["records"], plan.records)
    rows = (r for i, rec in enumerate(records) for r in _synthetic_rows(i, rec.query_id, rng, tuple(METRICS)))
    write_jsonl(run_dir / RUN_FILES["results"], (ResultRow.model_validate(r).model_dump(mode="json") for r in rows))
    write_jsonl(run_dir / RUN_FILES["items"], plan.items)
    _synthetic_manifest(run_dir, plan.fingerprint())
    return run_dir


def _synthetic_manifest(run_dir: Path, plan_sha256: str) -> None:
    manifest = {"backend": "synthetic", "plan_sha256": plan_sha256, "status": "completed", "tool_version": "synthetic"}
    write_json(run_dir / RUN_FILES["manifest"], manifest)


def _write_synthetic_stream(run_dir: Path, n: int, rng: Any) -> Path:
    from foundry_bridge.metrics.docret import METRICS

    first = _synthetic_record(0, rng)
    plan = build_plan([first], load_mapping(None), name="synthetic")
    write_json(run_dir / RUN_FILES["plan"], plan.model_dump(mode="json", exclude={"records", "items"}))
    records = (first if i == 0 else _synthetic_record(i, rng) for i in range(n))
    write_jsonl(run_dir / RUN_FILES["records"], (r.model_dump(mode="json", exclude_none=True) for r in records))
    rows = (r for i in range(n) for r in _synthetic_rows(i, f"q{i}", rng, tuple(METRICS)))
    write_jsonl(run_dir / RUN_FILES["results"], (ResultRow.model_validate(r).model_dump(mode="json") for r in rows))
    _synthetic_manifest(run_dir, plan.fingerprint())
    return run_dir

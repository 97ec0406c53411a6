"""Build a ``Report`` from a run folder: normalized Foundry results merged with locally computed metrics.

Inputs (records, result rows, plan) are validated as they are read; the per-query rows built here from those
validated values use ``model_construct`` (no second validation).
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from .._io import loads
from ..dataset.records import QueryRecord
from ..errors import FoundryBridgeError
from ..mapping.catalog import CATALOG, EvaluatorSpec
from ..mapping.plan import Plan
from ..results import RUN_FILES, ResultRow
from ._model import (
    STAGES,
    CanaryFlag,
    CriterionThreshold,
    FoundryScore,
    HoleEntry,
    MetricAggregate,
    MetricInfo,
    NegativeSection,
    Params,
    Provenance,
    QueryRow,
    Report,
    Section,
    StageSection,
)
from ._stages import STAGE_RULES, JudgeVerdict, attribute_stage

__all__ = ["ReportError", "build_report", "foundry_key", "load_run"]

_LOCAL_DEFINITIONS = {
    "rr": "1/rank of the first relevant document within the top k, else 0 (mean = MRR)",
    "recall": "relevant documents in the top k ÷ all relevant documents (n_rel)",
    "precision": "relevant documents in the top k ÷ k",
    "hit": "1 if any relevant document is in the top k (mean = hit rate)",
    "distracting": "non-relevant documents ranked above the first relevant one within the top k",
    "ndcg": "trec_eval ndcg_cut: gain = label, discount 1/log2(rank+1), ideal from all labels",
    "ndcg_exp": "as ndcg with gain 2^label − 1",
}
_LOWER_IS_BETTER = {"distracting"}
_NOT_METRICS = {"query_id", "kind", "kind_source", "n_rel", "row", "line", "source"}


class ReportError(FoundryBridgeError):
    """A run folder cannot be reported on (missing or unreadable files)."""


def foundry_key(criterion: str, metric: str) -> str:
    """The column key of a Foundry metric: ``metric`` when it equals the criterion name, else ``criterion/metric``."""
    return metric if metric == criterion else f"{criterion}/{metric}"


def _read_json(path: Path) -> Any:
    try:
        return loads(path.read_bytes())
    except FileNotFoundError:
        raise ReportError(f"{path}: not found (is this a run folder written by `foundry-bridge run`?)") from None
    except ValueError as exc:
        raise ReportError(f"{path}: not valid JSON: {exc}") from exc


def _read_jsonl(path: Path) -> Iterable[tuple[int, Any]]:
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise ReportError(f"{path}: not found (is this a run folder written by `foundry-bridge run`?)") from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, loads(line)
            except ValueError as exc:
                raise ReportError(f"{path}:{lineno}: not valid JSON: {exc}") from exc


def load_run(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Plan, list[QueryRecord], list[ResultRow]]:
    """Read ``manifest.json`` (optional), ``plan.json``, ``records.jsonl`` and ``results.jsonl`` of a run folder."""
    root = Path(run_dir)
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory (give the run folder written by `foundry-bridge run`)")
    manifest_path = root / RUN_FILES["manifest"]
    manifest = _read_json(manifest_path) if manifest_path.exists() else {}
    plan_raw = _read_json(root / RUN_FILES["plan"])
    if isinstance(plan_raw, dict) and "items" not in plan_raw:  # the runner writes items to items.jsonl
        items_path = root / RUN_FILES["items"]
        plan_raw["items"] = [obj for _, obj in _read_jsonl(items_path)] if items_path.exists() else []
    state_path = root / RUN_FILES["state"]
    if state_path.exists() and "status" not in manifest:
        state = _read_json(state_path)
        if isinstance(state, dict) and state.get("status"):
            manifest = {**manifest, "status": state["status"]}
    try:
        plan = Plan.model_validate(plan_raw)
    except ValueError as exc:
        raise ReportError(f"{root / RUN_FILES['plan']}: not a plan: {exc}") from exc
    records_path = root / RUN_FILES["records"]
    if records_path.exists():
        records = []
        for lineno, obj in _read_jsonl(records_path):
            try:
                records.append(QueryRecord.model_validate(obj))
            except ValueError as exc:
                raise ReportError(f"{records_path}:{lineno}: not a query record: {exc}") from exc
    else:
        records = [QueryRecord.model_validate(r) for r in plan.records]
    if not records:
        raise ReportError(f"{root}: no query records (records.jsonl missing or empty, and none in plan.json)")
    results = []
    results_path = root / RUN_FILES["results"]
    for lineno, obj in _read_jsonl(results_path):
        try:
            results.append(ResultRow.model_validate(obj))
        except ValueError as exc:
            raise ReportError(f"{results_path}:{lineno}: not a result row: {exc}") from exc
    return manifest, plan, records, results


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _local_metric_definition(key: str) -> str:
    name = key.split("@", 1)[0]
    return _LOCAL_DEFINITIONS.get(name, "")


def _answer_evaluators() -> set[str]:
    """Evaluators that judge the response (their inputs include it): derived from the catalog."""
    return {name for name, spec in CATALOG.items() if "response" in spec.input_names}


def _mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2)


def _aggregate_foundry(scores: Sequence[FoundryScore]) -> MetricAggregate:
    values = [s.score for s in scores if s.status == "scored" and s.score is not None]
    scored = sum(1 for s in scores if s.status == "scored")
    passed = sum(1 for s in scores if s.status == "scored" and s.passed is True)
    failed = sum(1 for s in scores if s.status == "scored" and s.passed is False)
    n = len(scores)
    return MetricAggregate(
        queries=n,
        scored=scored,
        errored=sum(1 for s in scores if s.status == "errored"),
        missing=sum(1 for s in scores if s.status == "missing"),
        coverage=scored / n if n else None,
        mean=_mean(values),
        median=_median(values),
        min=min(values) if values else None,
        max=max(values) if values else None,
        passed=passed,
        failed=failed,
        pass_rate=passed / (passed + failed) if passed + failed else None,
    )


def _aggregate_local(values: Sequence[float | None], nan_policy: str) -> MetricAggregate:
    defined = [v for v in values if v is not None]
    undefined = len(values) - len(defined)
    if nan_policy == "zerofill":
        mean = _mean([*defined, *([0.0] * undefined)])
    elif nan_policy == "drop" or undefined == 0:
        mean = _mean(defined)
    else:  # propagate
        mean = None
    n = len(values)
    return MetricAggregate(
        queries=n,
        scored=len(defined),
        undefined=undefined,
        coverage=len(defined) / n if n else None,
        mean=mean,
        median=_median(defined),
        min=min(defined) if defined else None,
        max=max(defined) if defined else None,
    )


def _thresholds(plan: Plan) -> tuple[list[CriterionThreshold], dict[str, EvaluatorSpec | None]]:
    out: list[CriterionThreshold] = []
    specs: dict[str, EvaluatorSpec | None] = {}
    for crit in plan.criteria:
        spec = CATALOG.get(crit.evaluator)
        specs[crit.name] = spec
        if spec is None:
            continue
        for m in spec.metrics:
            threshold = m.default_threshold
            if m.threshold_param and crit.init.get(m.threshold_param) is not None:
                threshold = _num(crit.init[m.threshold_param])
            out.append(
                CriterionThreshold(
                    criterion=crit.name,
                    evaluator=crit.evaluator,
                    metric=m.name,
                    threshold=threshold,
                    higher_is_better=m.higher_is_better,
                )
            )
    return out, specs


def _labelling_queue(records: Sequence[QueryRecord], k: int) -> tuple[list[HoleEntry], dict[str, list[str]]]:
    docs: dict[str, list[tuple[str, int]]] = defaultdict(list)
    per_query: dict[str, list[str]] = {}
    for rec in records:
        labelled = {g.document_id for g in rec.retrieval_ground_truth or []}
        seen: set[str] = set()
        rank = 0
        holes: list[str] = []
        for doc in rec.retrieved_documents:
            if doc.document_id in seen:  # a repeat counts at its first position; later ones are removed
                continue
            seen.add(doc.document_id)
            rank += 1
            if rank > k:
                break
            if doc.document_id not in labelled:
                docs[doc.document_id].append((rec.query_id, rank))
                holes.append(doc.document_id)
        per_query[rec.query_id] = holes
    entries = [
        HoleEntry.model_construct(
            document_id=doc_id,
            count=len(hits),
            best_rank=min(r for _, r in hits),
            mean_rank=sum(r for _, r in hits) / len(hits),
            priority=sum(1.0 / r for _, r in hits),
            queries=[{"query_id": q, "rank": r} for q, r in sorted(hits, key=lambda h: (h[1], h[0]))],
        )
        for doc_id, hits in docs.items()
    ]
    entries.sort(key=lambda e: (-e.priority, -e.count, e.best_rank, e.document_id))
    return entries, per_query


def _negative_lists(neg_report: dict[str, Any]) -> dict[str, list[str]]:
    """Query lists from the local negative-query report (tolerant of its per-query key names)."""
    out: dict[str, list[str]] = {"surfaced": [], "contradiction": []}
    for entry in neg_report.get("per_query", []) or []:
        qid = str(entry.get("query_id"))
        surfaced = entry.get("surfaced", entry.get("surfaced_evidence"))
        surfaced_flag = surfaced if isinstance(surfaced, bool) else bool(_num(surfaced) or entry.get("n_surfaced") or 0)
        if surfaced_flag:
            out["surfaced"].append(qid)
        contra = entry.get("relevant_labelled_in_top_k", entry.get("label_contradiction"))
        if contra:
            out["contradiction"].append(qid)
    return out


def build_report(run_dir: str | os.PathLike[str], *, stage_k: int | None = None) -> Report:
    """Read a run folder and merge its Foundry results with the local metrics into one ``Report``."""
    from ..metrics import assembly_check, is_abstention, negative_query_report, ranking_metrics

    manifest, plan, records, results = load_run(run_dir)
    mapping = plan.mapping
    ms = mapping.metrics
    ks = sorted(set(ms.k)) or [10]
    k_stage = stage_k or max(ks)
    ks = sorted({*ks, k_stage})  # stage attribution reads hit@stage_k
    warnings: list[str] = []

    thresholds, specs = _thresholds(plan)
    answer_evaluators = _answer_evaluators()
    answer_criteria = [c.name for c in plan.criteria if c.evaluator in answer_evaluators]
    params = Params(
        k=ks,
        stage_k=k_stage,
        relevance_threshold=ms.relevance_threshold,
        nan_policy=ms.nan_policy,
        label_min=mapping.labels.min,
        label_max=mapping.labels.max,
        surface_threshold=ms.surface_threshold,
        abstention_phrases=ms.abstention_phrases,
        thresholds=thresholds,
        answer_criteria=answer_criteria,
    )

    # -- local metrics ------------------------------------------------------------------------------------------
    ranking = ranking_metrics(records, ks=tuple(ks), relevance_threshold=ms.relevance_threshold, nan_policy="propagate")
    local_rows = list(ranking.per_query)
    if [str(r.get("query_id")) for r in local_rows] != [rec.query_id for rec in records]:
        raise ReportError("internal: local metrics are not aligned with the records (query ids differ)")
    assembly = assembly_check(records, k=k_stage, relevance_threshold=ms.relevance_threshold)
    negatives = [r for r in records if r.kind == "negative"]
    neg_report: dict[str, Any] = {}
    if negatives:
        neg_report = dict(
            negative_query_report(
                records,
                k=k_stage,
                relevance_threshold=ms.relevance_threshold,
                surface_threshold=ms.surface_threshold,
                abstention_phrases=ms.abstention_phrases,
            )
        )
    local_keys: list[str] = [k for k in getattr(ranking, "metric_keys", []) if k not in _NOT_METRICS]
    for row in local_rows[:1] if local_keys else local_rows:
        for key, value in row.items():
            if key not in _NOT_METRICS and key not in local_keys and (value is None or isinstance(value, int | float)):
                local_keys.append(key)

    # -- Foundry results ----------------------------------------------------------------------------------------
    n_rows = len(records)
    by_cell: dict[tuple[int, str, str], ResultRow] = {}
    crit_errors: dict[tuple[int, str], str] = {}
    observed: dict[str, list[str]] = defaultdict(list)
    crit_evaluator: dict[str, str] = {c.name: c.evaluator for c in plan.criteria}
    duplicates = out_of_range = 0
    for res in results:
        if not 0 <= res.row < n_rows:
            out_of_range += 1
            continue
        crit_evaluator.setdefault(res.criterion, res.evaluator)
        key = (res.row, res.criterion, res.metric)
        if key in by_cell:
            duplicates += 1
        by_cell[key] = res
        if res.metric not in observed[res.criterion]:
            observed[res.criterion].append(res.metric)
        if res.error is not None:
            crit_errors.setdefault((res.row, res.criterion), res.error)
    if out_of_range:
        warnings.append(f"{out_of_range} result row(s) point at a dataset row that does not exist: ignored")
    if duplicates:
        warnings.append(f"{duplicates} duplicated result row(s) (same row, criterion, metric): the last one kept")

    expected: list[tuple[str, str]] = []  # (criterion, metric)
    for crit in [*plan.criteria, *[c for c in observed if c not in {p.name for p in plan.criteria}]]:
        name = crit if isinstance(crit, str) else crit.name
        spec = specs.get(name) or CATALOG.get(crit_evaluator.get(name, ""))
        metrics = [spec.primary_metric] if spec else []
        for m in observed.get(name, []):
            if m not in metrics:
                metrics.append(m)
        expected.extend((name, m) for m in metrics)
    threshold_of = {(t.criterion, t.metric): t for t in thresholds}

    metric_infos: list[MetricInfo] = [
        MetricInfo(
            key=k,
            source="local",
            metric=k,
            higher_is_better=k.split("@", 1)[0] not in _LOWER_IS_BETTER,
            definition=_local_metric_definition(k),
        )
        for k in local_keys
    ]
    for crit_name, metric in expected:
        evaluator = crit_evaluator.get(crit_name)
        spec = CATALOG.get(evaluator or "")
        mspec = None
        if spec is not None:
            try:
                mspec = spec.metric(metric)
            except KeyError:
                mspec = None
        t = threshold_of.get((crit_name, metric))
        metric_infos.append(
            MetricInfo(
                key=foundry_key(crit_name, metric),
                source="foundry",
                criterion=crit_name,
                evaluator=evaluator,
                metric=metric,
                higher_is_better=mspec.higher_is_better if mspec else None,
                threshold=t.threshold if t else None,
                primary=spec is None or spec.primary_metric == metric,
                definition=spec.description if spec else "",
            )
        )

    # -- per query ----------------------------------------------------------------------------------------------
    holes_queue, holes_by_query = _labelling_queue(records, k_stage)
    neg_lists = _negative_lists(neg_report)
    contradictions = set(neg_lists["contradiction"])
    primary_of = {c.name: (specs.get(c.name).primary_metric if specs.get(c.name) else None) for c in plan.criteria}
    queries: list[QueryRow] = []
    canaries: list[CanaryFlag] = []
    for i, rec in enumerate(records):
        local_row = local_rows[i] if i < len(local_rows) else {}
        local = {k: _num(local_row.get(k)) for k in local_keys}
        if "n_rel" in local_row:
            local["n_rel"] = _num(local_row.get("n_rel"))
        foundry: dict[str, FoundryScore] = {}
        for crit_name, metric in expected:
            res = by_cell.get((i, crit_name, metric))
            if res is not None and res.error is not None:
                fs = FoundryScore.model_construct(
                    status="errored", error=res.error, reason=res.reason, threshold=res.threshold
                )
            elif res is not None and (res.score is not None or res.passed is not None):
                fs = FoundryScore.model_construct(
                    status="scored",
                    score=res.score,
                    passed=res.passed,
                    label=res.label,
                    threshold=res.threshold,
                    reason=res.reason,
                )
            elif res is None and (i, crit_name) in crit_errors:
                fs = FoundryScore.model_construct(status="errored", error=crit_errors[(i, crit_name)])
            else:
                fs = FoundryScore.model_construct(
                    status="missing",
                    reason=None if res is None else (res.reason or "null score and no error"),
                    threshold=None if res is None else res.threshold,
                )
            foundry[foundry_key(crit_name, metric)] = fs
        asm = assembly[i] if i < len(assembly) else {}
        dropped = [str(d) for d in asm.get("dropped_relevant", []) or []]
        checked = bool(asm.get("checked", False)) and rec.context is not None
        abstained = is_abstention(rec.response, ms.abstention_phrases) if rec.response is not None else None
        judges = [
            JudgeVerdict(c, foundry.get(foundry_key(c, primary_of[c]), FoundryScore.model_construct(status="missing")))
            for c in answer_criteria
            if primary_of.get(c)
        ]
        hit_key = f"hit@{k_stage}"
        hit = _num(local_row.get(hit_key))
        stage, reason = attribute_stage(
            kind=rec.kind,
            hit=hit,
            assembly_checked=checked,
            dropped_relevant=dropped,
            has_response=rec.response is not None,
            abstained=abstained,
            answer_judges=judges,
            label_contradiction=rec.query_id in contradictions,
        )
        canary = rec.extra.get("canary")
        canary_text = str(canary) if canary not in (None, "", False) else None
        if canary_text is not None:
            passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
            failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
            unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
            canaries.append(
                CanaryFlag(
                    query_id=rec.query_id,
                    canary=canary_text,
                    passed_by=passed_by,
                    failed_by=failed_by,
                    unscored=unscored,
                    caught=True if failed_by else (False if passed_by else None),
                )
            )
        queries.append(
            QueryRow.model_construct(
                row=i,
                query_id=rec.query_id,
                kind=rec.kind,
                kind_source=rec.kind_source,
                query=rec.query,
                response=rec.response,
                canary=canary_text,
                local=local,
                foundry=foundry,
                abstained=abstained,
                dropped_relevant=dropped,
                holes=holes_by_query.get(rec.query_id, []),
                stage=stage,
                stage_reason=reason,
            )
        )

    # -- aggregates ---------------------------------------------------------------------------------------------
    def section(kind: str) -> Section:
        rows = [q for q in queries if q.kind == kind]
        sources: dict[str, int] = defaultdict(int)
        for q in rows:
            sources[q.kind_source] += 1
        agg: dict[str, MetricAggregate] = {}
        for info in metric_infos:
            if info.source == "local":
                agg[info.key] = _aggregate_local([q.local.get(info.key) for q in rows], ms.nan_policy)
            else:
                agg[info.key] = _aggregate_foundry([q.foundry[info.key] for q in rows])
        stages = {s: sum(1 for q in rows if q.stage == s) for s in STAGES}
        return Section(kind=kind, queries=len(rows), kind_sources=dict(sources), metrics=agg, stages=stages)  # type: ignore[arg-type]

    positive, negative = section("positive"), section("negative")

    stage_section = StageSection(
        counts={s: sum(1 for q in queries if q.stage == s) for s in STAGES},
        queries={s: [q.query_id for q in queries if q.stage == s] for s in STAGES},
        rules=STAGE_RULES,
    )
    neg_rows = [q for q in queries if q.kind == "negative"]
    negative_section = NegativeSection(
        queries=[q.query_id for q in neg_rows],
        surfaced_evidence=neg_lists["surfaced"],
        answered=[q.query_id for q in neg_rows if q.abstained is False],
        abstained=[q.query_id for q in neg_rows if q.abstained is True],
        label_contradictions=neg_lists["contradiction"],
        local=neg_report,
    )

    # -- coverage and warnings ----------------------------------------------------------------------------------
    per_criterion: dict[str, dict[str, int]] = {}
    for crit_name, metric in expected:
        key = foundry_key(crit_name, metric)
        cells = [q.foundry[key] for q in queries]
        per_criterion[key] = {
            "expected": len(cells),
            "scored": sum(1 for c in cells if c.status == "scored"),
            "errored": sum(1 for c in cells if c.status == "errored"),
            "missing": sum(1 for c in cells if c.status == "missing"),
        }
    errored_rows = sum(1 for r in results if r.error is not None)
    total_err = sum(v["errored"] for v in per_criterion.values())
    total_missing = sum(v["missing"] for v in per_criterion.values())
    if total_err:
        warnings.append(
            f"{total_err} Foundry score(s) errored: counted as errored, never as 0 and never dropped "
            "(see coverage per metric)"
        )
    if total_missing:
        warnings.append(f"{total_missing} Foundry score(s) missing (no result or a null score)")
    if not results:
        warnings.append("results.jsonl is empty: no Foundry scores at all")
    unknown_kind = sum(1 for r in records if r.kind_source == "unknown")
    if unknown_kind:
        warnings.append(f"{unknown_kind} query(ies) have neither a declared kind nor labels: treated as positive")
    status = manifest.get("status") or manifest.get("run_status")
    if status and status != "completed":
        warnings.append(f"the run's status is {status!r}, not 'completed'")
    coverage = {
        "queries": n_rows,
        "positive": positive.queries,
        "negative": negative.queries,
        "result_rows": len(results),
        "errored_result_rows": errored_rows,
        "scores_expected": sum(v["expected"] for v in per_criterion.values()),
        "scores_scored": sum(v["scored"] for v in per_criterion.values()),
        "scores_errored": total_err,
        "scores_missing": total_missing,
        "per_metric": per_criterion,
    }

    provenance = _provenance(run_dir, manifest, plan)
    return Report(
        provenance=provenance,
        params=params,
        metrics=metric_infos,
        coverage=coverage,
        positive=positive,
        negative=negative,
        negative_queries=negative_section,
        stages=stage_section,
        canaries=canaries,
        labelling_queue=holes_queue,
        queries=queries,
        warnings=warnings,
    )


def _first(d: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if d.get(key) is not None:
            return d[key]
    return None


def _evaluator_entry(entry: Any) -> dict[str, Any]:
    """One evaluator as planned or as the service echoed it: criterion, evaluator, version (echoed, else None),
    catalog_version (what this tool's catalog describes)."""
    if not isinstance(entry, dict):
        return {"criterion": str(entry), "evaluator": None, "version": None, "catalog_version": None}
    evaluator = _first(entry, "evaluator_name", "evaluator")
    spec = CATALOG.get(evaluator or "")
    return {
        "criterion": _first(entry, "criterion", "name"),
        "evaluator": evaluator,
        "version": _first(entry, "evaluator_version", "version") or None,
        "catalog_version": spec.version if spec else None,
    }


def _provenance(run_dir: str | os.PathLike[str], manifest: dict[str, Any], plan: Plan) -> Provenance:
    run_ids = _first(manifest, "run_ids") or ([manifest["run_id"]] if manifest.get("run_id") else [])
    evaluators = manifest.get("evaluators")
    if not isinstance(evaluators, list):
        evaluators = [
            {
                "criterion": c.name,
                "evaluator": c.evaluator,
                "version": CATALOG[c.evaluator].version if c.evaluator in CATALOG else None,
            }
            for c in plan.criteria
        ]
    timings = manifest.get("timings") if isinstance(manifest.get("timings"), dict) else {}
    return Provenance(
        run_dir=str(Path(run_dir).resolve()),
        backend=_first(manifest, "backend"),
        dataset_path=_first(manifest, "dataset_path") or plan.dataset_path,
        dataset_sha256=_first(manifest, "dataset_sha256", "dataset_hash") or plan.dataset_sha256,
        mapping_path=_first(manifest, "mapping_path") or plan.mapping_path,
        plan_fingerprint=_first(manifest, "plan_sha256", "plan_hash", "plan_fingerprint") or plan.fingerprint(),
        eval_id=_first(manifest, "eval_id"),
        run_ids=[str(r) for r in run_ids],
        report_url=_first(manifest, "report_url"),
        evaluators=[_evaluator_entry(e) for e in evaluators],
        tool_version=__version__,
        run_tool_version=_first(manifest, "tool_version"),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        run_started_at=_first(manifest, "started_at") or _first(timings, "started_at", "start"),
        run_finished_at=_first(manifest, "finished_at") or _first(timings, "finished_at", "end"),
        run_status=_first(manifest, "status", "run_status"),
    )

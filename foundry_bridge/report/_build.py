"""Build a ``Report`` from a run folder: normalized Foundry results merged with locally computed metrics.

Inputs (records, result rows, plan) are validated as they are read, one line at a time, and reduced to what the
report needs; the per-query models are then validated in bulk (one call per column, not one per object). The
cyclic garbage collector is paused while a report is built (see ``_gc_paused``).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from .. import __version__
from .._io import loads
from ..catalog import CATALOG, EvaluatorSpec
from ..dataset.records import QueryRecord
from ..errors import FoundryBridgeError
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


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a report is built.

    A 10,000-query run makes about a million small, acyclic objects (records, result rows, per-query models);
    the collector's repeated passes over them cost as much as the build itself. Reference counting still frees
    everything as usual; only cycles created meanwhile wait for the next collection.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_run_files(root: Path, *, items: bool) -> tuple[dict[str, Any], Any]:
    """``manifest.json`` (optional, with ``state.json``'s status) and the raw ``plan.json`` (with ``items.jsonl``
    as its ``items`` when ``items`` is true and plan.json has none)."""
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory (give the run folder written by `foundry-bridge run`)")
    manifest_path = root / RUN_FILES["manifest"]
    manifest = _read_json(manifest_path) if manifest_path.exists() else {}
    plan_raw = _read_json(root / RUN_FILES["plan"])
    if items and isinstance(plan_raw, dict) and "items" not in plan_raw:  # the runner writes items.jsonl
        plan_raw["items"] = _read_items(root)
    state_path = root / RUN_FILES["state"]
    if state_path.exists() and "status" not in manifest:
        state = _read_json(state_path)
        if isinstance(state, dict) and state.get("status"):
            manifest = {**manifest, "status": state["status"]}
    return manifest, plan_raw


def _read_items(root: Path) -> list[Any]:
    items_path = root / RUN_FILES["items"]
    return [obj for _, obj in _read_jsonl(items_path)] if items_path.exists() else []


def _validate_plan(root: Path, plan_raw: Any) -> Plan:
    try:
        return Plan.model_validate(plan_raw)
    except ValueError as exc:
        raise ReportError(f"{root / RUN_FILES['plan']}: not a plan: {exc}") from exc


_CHUNK_BYTES = 4 << 20  # JSONL lines parsed and validated at once (bounded memory)


def _iter_validated(path: Path, model: type[BaseModel], what: str) -> Iterator[Any]:
    """The lines of a JSONL file validated as ``model``, a few MiB of lines per validation call (one call for
    thousands of rows instead of one per row). A chunk that fails is redone line by line, so the error names the
    first bad line exactly as a line-by-line reader would."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise ReportError(f"{path}: not found (is this a run folder written by `foundry-bridge run`?)") from None
    adapter = _adapter(model)
    lineno = 0
    with fh:
        while lines := fh.readlines(_CHUNK_BYTES):
            first, lineno = lineno + 1, lineno + len(lines)
            try:
                rows = adapter.validate_python([loads(line) for line in lines if line.strip()])
            except ValueError:
                rows = [
                    _validate_line(path, n, line, model, what) for n, line in enumerate(lines, first) if line.strip()
                ]
            yield from rows
            del rows


def _validate_line(path: Path, lineno: int, line: bytes, model: type[BaseModel], what: str) -> Any:
    try:
        obj = loads(line)
    except ValueError as exc:
        raise ReportError(f"{path}:{lineno}: not valid JSON: {exc}") from exc
    try:
        return model.model_validate(obj)
    except ValueError as exc:
        raise ReportError(f"{path}:{lineno}: not {what}: {exc}") from exc


def _iter_records(root: Path, plan: Plan) -> Iterator[QueryRecord]:
    """The query records (``records.jsonl``, else ``plan.json``'s ``records``)."""
    records_path = root / RUN_FILES["records"]
    if not records_path.exists():
        yield from (QueryRecord.model_validate(r) for r in plan.records)
        return
    yield from _iter_validated(records_path, QueryRecord, "a query record")


def _iter_results(root: Path) -> Iterator[ResultRow]:
    yield from _iter_validated(root / RUN_FILES["results"], ResultRow, "a result row")


def load_run(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Plan, list[QueryRecord], list[ResultRow]]:
    """Read ``manifest.json`` (optional), ``plan.json``, ``records.jsonl`` and ``results.jsonl`` of a run folder."""
    from ..runfolder import RunFolder

    with _gc_paused():
        return RunFolder(run_dir).load()


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
    values: list[float] = []
    scored = passed = failed = errored = missing = 0
    for s in scores:  # one pass
        status = s.status
        if status == "scored":
            scored += 1
            if s.score is not None:
                values.append(s.score)
            if s.passed is True:
                passed += 1
            elif s.passed is False:
                failed += 1
        elif status == "errored":
            errored += 1
        elif status == "missing":
            missing += 1
    n = len(scores)
    return MetricAggregate(
        queries=n,
        scored=scored,
        errored=errored,
        missing=missing,
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


def _holes(rec: QueryRecord, k: int, hits: dict[str, list[tuple[int, str]]]) -> list[str]:
    """One query's unlabelled top-k documents; each is appended to ``hits`` as ``(rank, query_id)``."""
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
            hits[doc.document_id].append((rank, rec.query_id))
            holes.append(doc.document_id)
    return holes


def _labelling_queue(hits: dict[str, list[tuple[int, str]]]) -> list[HoleEntry]:
    entries = []
    for doc_id, doc_hits in hits.items():
        ranks = [r for r, _ in doc_hits]
        entries.append(
            {
                "document_id": doc_id,
                "count": len(ranks),
                "best_rank": min(ranks),
                "mean_rank": sum(ranks) / len(ranks),
                "priority": sum([1.0 / r for r in ranks]),
                "queries": [{"query_id": q, "rank": r} for r, q in sorted(doc_hits)],  # by rank, then query id
            }
        )
    entries.sort(key=lambda e: (-e["priority"], -e["count"], e["best_rank"], e["document_id"]))
    return _adapter(HoleEntry).validate_python(entries)


def _metric_kind(evaluator: str | None, metric: str) -> str | None:
    """The catalog kind (ordinal, continuous, boolean) of an evaluator's metric, if the catalog knows it."""
    spec = CATALOG.get(evaluator or "")
    if spec is None:
        return None
    try:
        return spec.metric(metric).kind
    except KeyError:
        return None


@cache
def _adapter(item: Any) -> TypeAdapter[Any]:
    """A validator of ``list[item]``: one call validates a whole column of values, which is faster than one
    ``model_validate`` (or even ``model_construct``) per object, and checked."""
    return TypeAdapter(list[item])


def _score_input(cell: tuple[Any, ...] | None, crit_error: str | None, boolean: bool = False) -> dict[str, Any]:
    """The ``FoundryScore`` fields of one (query, metric) cell: ``cell`` is the result row's
    ``(score, passed, label, threshold, reason, error)``, ``crit_error`` an error of the criterion on that row.
    A verdict without a score counts as scored only for a boolean metric; otherwise the score is missing."""
    if cell is None:
        if crit_error is not None:
            return {"status": "errored", "error": crit_error}
        return {"status": "missing", "reason": None, "threshold": None}
    score, passed, label, threshold, reason, error = cell
    if error is not None:
        return {"status": "errored", "error": error, "reason": reason, "threshold": threshold}
    if score is not None or (boolean and passed is not None):
        return {
            "status": "scored",
            "score": score,
            "passed": passed,
            "label": label,
            "threshold": threshold,
            "reason": reason,
        }
    return {"status": "missing", "reason": reason or "null score and no error", "threshold": threshold}


@_gc_paused()
def build_report(run_dir: str | os.PathLike[str], *, stage_k: int | None = None) -> Report:
    """Read a run folder and merge its Foundry results with the local metrics into one ``Report``.

    ``records.jsonl`` and ``results.jsonl`` are each read once, a line at a time: records are reduced to the
    per-query facts the report needs (their document text is not kept), result rows to their scores.
    """
    from ..metrics import assembly_check
    from ..metrics._arrays import check_threshold, from_records
    from ..metrics.negative import negative_report_from_arrays
    from ..metrics.ranking import normalize_ks, ranking_from_arrays

    root = Path(run_dir)
    manifest, plan_raw = _read_run_files(root, items=False)
    # items.jsonl only feeds the plan fingerprint, and the runner's manifest already holds it: read it if needed
    items_deferred = isinstance(plan_raw, dict) and "items" not in plan_raw
    plan = _validate_plan(root, {**plan_raw, "items": []} if items_deferred else plan_raw)

    def fingerprint() -> str:
        if not items_deferred:
            return plan.fingerprint()
        return _validate_plan(root, {**plan_raw, "items": _read_items(root)}).fingerprint()

    mapping = plan.mapping
    ms = mapping.metrics
    ks = sorted(set(ms.k)) or [10]
    k_stage = stage_k or max(ks)
    ks = sorted({*ks, k_stage})  # stage attribution reads hit@stage_k
    rt = ms.relevance_threshold
    normalize_ks(ks)
    check_threshold(rt)
    warnings: list[str] = []

    thresholds, specs = _thresholds(plan)
    answer_evaluators = _answer_evaluators()
    answer_criteria = [c.name for c in plan.criteria if c.evaluator in answer_evaluators]
    params = Params(
        k=ks,
        stage_k=k_stage,
        relevance_threshold=rt,
        nan_policy=ms.nan_policy,
        label_min=mapping.labels.min,
        label_max=mapping.labels.max,
        surface_threshold=ms.surface_threshold,
        abstention_phrases=ms.abstention_phrases,
        thresholds=thresholds,
        answer_criteria=answer_criteria,
    )

    # -- records: one pass; local metrics from arrays, the per-query facts kept, the document text dropped ------
    facts: list[tuple[str, str, str, str | None, str | None, str | None, list[str], bool]] = []
    holes_by_query: dict[str, list[str]] = {}
    hole_hits: dict[str, list[tuple[int, str]]] = defaultdict(list)

    def records() -> Iterator[QueryRecord]:
        for rec in _iter_records(root, plan):
            asm = assembly_check((rec,), k=k_stage, relevance_threshold=rt)[0]
            holes_by_query[rec.query_id] = _holes(rec, k_stage, hole_hits)
            canary = rec.extra.get("canary")
            facts.append(
                (
                    rec.query_id,
                    rec.kind,
                    rec.kind_source,
                    rec.query,
                    rec.response,
                    str(canary) if canary not in (None, "", False) else None,
                    [str(d) for d in asm.get("dropped_relevant", []) or []],
                    bool(asm.get("checked", False)) and rec.context is not None,
                )
            )
            yield rec

    stream = records()
    first = next(stream, None)
    if first is None:
        raise ReportError(f"{root}: no query records (records.jsonl missing or empty, and none in plan.json)")
    arrays = from_records(itertools.chain((first,), stream), ks[-1], rt, abstention_phrases=ms.abstention_phrases)
    del first, stream
    ranking = ranking_from_arrays(arrays, ks=tuple(ks), nan_policy="propagate")
    if list(ranking.query_ids) != [f[0] for f in facts]:
        raise ReportError("internal: local metrics are not aligned with the records (query ids differ)")
    neg_report: dict[str, Any] = {}
    if bool(arrays.negative.any()):
        neg_report = dict(negative_report_from_arrays(arrays, k=k_stage, surface_threshold=ms.surface_threshold))
    local_keys: list[str] = [k for k in ranking.metric_keys if k not in _NOT_METRICS]
    local_cols = {k: [None if v != v else v for v in ranking.columns[k].tolist()] for k in local_keys}  # NaN → None
    n_rel = [float(v) for v in ranking.columns["n_rel"].tolist()] if "n_rel" in ranking.columns else None
    abstains = arrays.abstains.tolist()
    del arrays, ranking

    # -- Foundry results: one pass, each row reduced to its score fields ----------------------------------------
    n_rows = len(facts)
    cells: dict[tuple[str, str], list[tuple[Any, ...] | None]] = {}
    crit_errors: dict[str, dict[int, str]] = defaultdict(dict)
    observed: dict[str, list[str]] = defaultdict(list)
    crit_evaluator: dict[str, str] = {c.name: c.evaluator for c in plan.criteria}
    duplicates = out_of_range = n_results = errored_rows = 0
    for res in _iter_results(root):
        n_results += 1
        if res.error is not None:
            errored_rows += 1
        if not 0 <= res.row < n_rows:
            out_of_range += 1
            continue
        crit_evaluator.setdefault(res.criterion, res.evaluator)
        column = cells.get((res.criterion, res.metric))
        if column is None:
            column = cells[(res.criterion, res.metric)] = [None] * n_rows
            observed[res.criterion].append(res.metric)
        elif column[res.row] is not None:
            duplicates += 1
        column[res.row] = (res.score, res.passed, res.label, res.threshold, res.reason, res.error)
        if res.error is not None:
            crit_errors[res.criterion].setdefault(res.row, res.error)
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
    # every Foundry metric as a column of FoundryScore, validated in one call per metric
    score_columns: dict[str, list[FoundryScore]] = {}
    for crit_name, metric in expected:
        column = cells.get((crit_name, metric)) or [None] * n_rows
        errs = crit_errors.get(crit_name, {})
        boolean = _metric_kind(crit_evaluator.get(crit_name), metric) == "boolean"
        score_columns[foundry_key(crit_name, metric)] = _adapter(FoundryScore).validate_python(
            [_score_input(cell, errs.get(i), boolean) for i, cell in enumerate(column)]
        )
    del cells, crit_errors
    holes_queue = _labelling_queue(hole_hits)
    neg_lists = _negative_lists(neg_report)
    contradictions = set(neg_lists["contradiction"])
    primary_of = {c.name: (specs.get(c.name).primary_metric if specs.get(c.name) else None) for c in plan.criteria}
    missing = FoundryScore(status="missing")
    judge_columns = [
        (c, score_columns.get(foundry_key(c, primary_of[c]))) for c in answer_criteria if primary_of.get(c)
    ]
    hit_column = local_cols.get(f"hit@{k_stage}")
    query_rows: list[dict[str, Any]] = []
    canaries: list[CanaryFlag] = []
    for i, (query_id, kind, kind_source, query, response, canary_text, dropped, checked) in enumerate(facts):
        local = {k: col[i] for k, col in local_cols.items()}
        if n_rel is not None:
            local["n_rel"] = n_rel[i]
        abstained = None if abstains[i] < 0 else bool(abstains[i])
        judges = [JudgeVerdict(c, missing if col is None else col[i]) for c, col in judge_columns]
        stage, reason = attribute_stage(
            kind=kind,
            hit=None if hit_column is None else hit_column[i],
            assembly_checked=checked,
            dropped_relevant=dropped,
            has_response=response is not None,
            abstained=abstained,
            answer_judges=judges,
            label_contradiction=query_id in contradictions,
        )
        if canary_text is not None:
            passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
            failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
            unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
            canaries.append(
                CanaryFlag(
                    query_id=query_id,
                    canary=canary_text,
                    passed_by=passed_by,
                    failed_by=failed_by,
                    unscored=unscored,
                    caught=True if failed_by else (False if passed_by else None),
                )
            )
        query_rows.append(
            {
                "row": i,
                "query_id": query_id,
                "kind": kind,
                "kind_source": kind_source,
                "query": query,
                "response": response,
                "canary": canary_text,
                "local": local,
                "foundry": {key: col[i] for key, col in score_columns.items()},
                "abstained": abstained,
                "dropped_relevant": dropped,
                "holes": holes_by_query.get(query_id, []),
                "stage": stage,
                "stage_reason": reason,
            }
        )
    del local_cols
    queries: list[QueryRow] = _adapter(QueryRow).validate_python(query_rows)
    del query_rows

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
        statuses = Counter(s.status for s in score_columns[key])
        per_criterion[key] = {
            "expected": n_rows,
            "scored": statuses["scored"],
            "errored": statuses["errored"],
            "missing": statuses["missing"],
        }
    total_err = sum(v["errored"] for v in per_criterion.values())
    total_missing = sum(v["missing"] for v in per_criterion.values())
    if total_err:
        warnings.append(
            f"{total_err} Foundry score(s) errored: counted as errored, never as 0 and never dropped "
            "(see coverage per metric)"
        )
    if total_missing:
        warnings.append(f"{total_missing} Foundry score(s) missing (no result or a null score)")
    if not n_results:
        warnings.append("results.jsonl is empty: no Foundry scores at all")
    unknown_kind = sum(1 for q in queries if q.kind_source == "unknown")
    if unknown_kind:
        warnings.append(f"{unknown_kind} query(ies) have neither a declared kind nor labels: treated as positive")
    status = manifest.get("status") or manifest.get("run_status")
    if status and status != "completed":
        warnings.append(f"the run's status is {status!r}, not 'completed'")
    coverage = {
        "queries": n_rows,
        "positive": positive.queries,
        "negative": negative.queries,
        "result_rows": n_results,
        "errored_result_rows": errored_rows,
        "scores_expected": sum(v["expected"] for v in per_criterion.values()),
        "scores_scored": sum(v["scored"] for v in per_criterion.values()),
        "scores_errored": total_err,
        "scores_missing": total_missing,
        "per_metric": per_criterion,
    }

    provenance = _provenance(run_dir, manifest, plan, fingerprint)
    if provenance.backend == "mock":
        warnings.insert(
            0,
            "judge scores in this run come from the Foundry emulator's lexical stand-in, not from a model: "
            "they exercise the pipeline, they do not judge the answers",
        )
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


def _provenance(
    run_dir: str | os.PathLike[str], manifest: dict[str, Any], plan: Plan, fingerprint: Callable[[], str]
) -> Provenance:
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
        plan_fingerprint=_first(manifest, "plan_sha256", "plan_hash", "plan_fingerprint") or fingerprint(),
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

"""Build a ``Report`` from a run folder: normalized Foundry results merged with locally computed metrics.

Inputs (records, result rows, plan) are validated as they are read, one line at a time, and reduced to what the
report needs; the per-query models are then validated in bulk (one call per column, not one per object). The run
folder is read only through ``runfolder.RunFolder``, whose counts are checked (a truncated ``results.jsonl`` is an
error, never a smaller report). The cyclic garbage collector is paused while a report is built
(``_io.gc_paused``): a 10,000-query run makes about a million small, acyclic objects, which the collector's
repeated passes would otherwise rescan.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from .. import __version__
from .._io import gc_paused
from ..catalog import CATALOG, EvaluatorSpec
from ..dataset.records import QueryRecord
from ..mapping.plan import Plan
from ..metrics.measures import measure_for_key
from ..results import ResultRow
from ..runfolder import RunFolder, RunFolderError
from ..wire import finite_number, passed_for_kind, resolve_threshold
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

_NOT_METRICS = {"query_id", "kind", "kind_source", "n_rel", "row", "line", "source"}


ReportError = RunFolderError  # a run folder that cannot be reported on: the run folder's own error


def foundry_key(criterion: str, metric: str) -> str:
    """The column key of a Foundry metric: ``metric`` when it equals the criterion name, else ``criterion/metric``."""
    return metric if metric == criterion else f"{criterion}/{metric}"


def load_run(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Plan, list[QueryRecord], list[ResultRow]]:
    """Read ``manifest.json`` (optional), ``plan.json``, ``records.jsonl`` and ``results.jsonl`` of a run folder."""
    with gc_paused():
        return RunFolder(run_dir).load()


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
            out.append(
                CriterionThreshold(
                    criterion=crit.name,
                    evaluator=crit.evaluator,
                    metric=m.name,
                    threshold=resolve_threshold(m, crit.init),
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
        surfaced_flag = (
            surfaced if isinstance(surfaced, bool) else bool(finite_number(surfaced) or entry.get("n_surfaced") or 0)
        )
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
    entries: list[dict[str, Any]] = []
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


_Fact = tuple[str, str, str, str | None, str | None, str | None, list[str], bool]
_Cell = tuple[Any, ...]  # a result row's (score, passed, label, threshold, reason, error)


@dataclass
class _RunInput:
    """The run folder as the report reads it: manifest, plan (its items read only for the fingerprint, if needed)."""

    run_dir: str | os.PathLike[str]
    folder: RunFolder
    manifest: dict[str, Any]
    plan: Plan
    fingerprint: Callable[[], str]


@dataclass
class _LocalMetrics:
    """One pass over the records: the per-query facts, holes and the local metric columns (NaN → ``None``)."""

    facts: list[_Fact]
    holes_by_query: dict[str, list[str]]
    hole_hits: dict[str, list[tuple[int, str]]]
    keys: list[str]
    columns: dict[str, list[float | None]]
    n_rel: list[float] | None
    abstains: list[int]
    negative: dict[str, Any]


@dataclass
class _FoundryCells:
    """One pass over results.jsonl: each (criterion, metric) column of cells and what the pass counted."""

    cells: dict[tuple[str, str], list[_Cell | None]]
    errors: dict[str, dict[int, str]]
    observed: dict[str, list[str]]
    evaluator_of: dict[str, str]
    n_results: int
    errored_rows: int


def _open_run(run_dir: str | os.PathLike[str]) -> _RunInput:
    folder = RunFolder(run_dir)
    folder.require_dir()
    manifest = folder.report_manifest()
    # items.jsonl only feeds the plan fingerprint, and the runner's manifest already holds it: read it if needed
    plan = folder.read_plan(items=False, records=False)

    def fingerprint() -> str:
        return (folder.read_plan(records=False) if not plan.items else plan).fingerprint()

    return _RunInput(run_dir, folder, manifest, plan, fingerprint)


def _params(plan: Plan, stage_k: int | None) -> tuple[Params, dict[str, EvaluatorSpec | None]]:
    """The declared parameters (k's with ``stage_k`` added: stage attribution reads hit@stage_k) and the catalog
    spec of each criterion."""
    from ..metrics._arrays import check_threshold
    from ..metrics.ranking import normalize_ks

    ms = plan.mapping.metrics
    ks = sorted(set(ms.k)) or [10]
    k_stage = stage_k or max(ks)
    ks = sorted({*ks, k_stage})
    normalize_ks(ks)
    check_threshold(ms.relevance_threshold)
    thresholds, specs = _thresholds(plan)
    answer_evaluators = _answer_evaluators()
    params = Params(
        k=ks,
        stage_k=k_stage,
        relevance_threshold=ms.relevance_threshold,
        nan_policy=ms.nan_policy,
        label_min=plan.mapping.labels.min,
        label_max=plan.mapping.labels.max,
        surface_threshold=ms.surface_threshold,
        abstention_phrases=ms.abstention_phrases,
        thresholds=thresholds,
        answer_criteria=[c.name for c in plan.criteria if c.evaluator in answer_evaluators],
    )
    return params, specs


def _fact(rec: QueryRecord, asm: dict[str, Any]) -> _Fact:
    """What the report keeps of one record: ids, kind, text fields, canary, the assembly check's verdict."""
    canary = rec.extra.get("canary")
    return (
        rec.query_id,
        rec.kind,
        rec.kind_source,
        rec.query,
        rec.response,
        str(canary) if canary not in (None, "", False) else None,
        [str(d) for d in asm.get("dropped_relevant", []) or []],
        bool(asm.get("checked", False)) and rec.context is not None,
    )


def _local_metrics(run: _RunInput, params: Params) -> _LocalMetrics:
    """Records, read once: local metrics from arrays, the per-query facts kept, the document text dropped."""
    from ..metrics import assembly_check
    from ..metrics._arrays import from_records
    from ..metrics.negative import negative_report_from_arrays
    from ..metrics.ranking import ranking_from_arrays

    ms, k_stage, rt = run.plan.mapping.metrics, params.stage_k, params.relevance_threshold
    facts: list[_Fact] = []
    holes_by_query: dict[str, list[str]] = {}
    hole_hits: dict[str, list[tuple[int, str]]] = defaultdict(list)

    def records() -> Iterator[QueryRecord]:
        for rec in run.folder.iter_records(run.plan):
            holes_by_query[rec.query_id] = _holes(rec, k_stage, hole_hits)
            facts.append(_fact(rec, assembly_check((rec,), k=k_stage, relevance_threshold=rt)[0]))
            yield rec

    stream = records()
    first = next(stream, None)
    if first is None:
        raise RunFolderError(
            "no query records (records.jsonl missing or empty, and none in plan.json)", file=str(run.folder.path)
        )
    arrays = from_records(itertools.chain((first,), stream), params.k[-1], rt, abstention_phrases=ms.abstention_phrases)
    del first, stream
    ranking = ranking_from_arrays(arrays, ks=tuple(params.k), nan_policy="propagate")
    if list(ranking.query_ids) != [f[0] for f in facts]:
        raise RuntimeError("internal: local metrics are not aligned with the records (query ids differ)")
    negative: dict[str, Any] = {}
    if bool(arrays.negative.any()):
        negative = dict(negative_report_from_arrays(arrays, k=k_stage, surface_threshold=ms.surface_threshold))
    keys = [k for k in ranking.metric_keys if k not in _NOT_METRICS]
    columns = {k: [None if v != v else v for v in ranking.columns[k].tolist()] for k in keys}  # NaN → None
    n_rel = [float(v) for v in ranking.columns["n_rel"].tolist()] if "n_rel" in ranking.columns else None
    return _LocalMetrics(facts, holes_by_query, hole_hits, keys, columns, n_rel, arrays.abstains.tolist(), negative)


def _foundry_cells(run: _RunInput, n_rows: int, warnings: list[str]) -> _FoundryCells:
    """Foundry results, read once, each row reduced to its score fields; out-of-range rows and duplicates warned."""
    out = _FoundryCells(
        {}, defaultdict(dict), defaultdict(list), {c.name: c.evaluator for c in run.plan.criteria}, 0, 0
    )
    duplicates = out_of_range = 0
    for res in run.folder.iter_results():
        out.n_results += 1
        if res.error is not None:
            out.errored_rows += 1
        if not 0 <= res.row < n_rows:
            out_of_range += 1
            continue
        out.evaluator_of.setdefault(res.criterion, res.evaluator)
        column = out.cells.get((res.criterion, res.metric))
        if column is None:
            column = out.cells[(res.criterion, res.metric)] = [None] * n_rows
            out.observed[res.criterion].append(res.metric)
        elif column[res.row] is not None:
            duplicates += 1
        column[res.row] = (res.score, res.passed, res.label, res.threshold, res.reason, res.error)
        if res.error is not None:
            out.errors[res.criterion].setdefault(res.row, res.error)
    if out_of_range:
        warnings.append(f"{out_of_range} result row(s) point at a dataset row that does not exist: ignored")
    if duplicates:
        warnings.append(f"{duplicates} duplicated result row(s) (same row, criterion, metric): the last one kept")
    return out


def _expected(plan: Plan, specs: dict[str, EvaluatorSpec | None], found: _FoundryCells) -> list[tuple[str, str]]:
    """The (criterion, metric) pairs reported: each planned criterion's primary metric, then what the results hold
    (criteria the plan does not name come last)."""
    planned = [c.name for c in plan.criteria]
    expected: list[tuple[str, str]] = []
    for name in [*planned, *[c for c in found.observed if c not in set(planned)]]:
        spec = specs.get(name) or CATALOG.get(found.evaluator_of.get(name, ""))
        metrics = [spec.primary_metric] if spec else []
        metrics += [m for m in found.observed.get(name, []) if m not in metrics]
        expected.extend((name, m) for m in metrics)
    return expected


def _local_info(key: str) -> MetricInfo:
    measure = measure_for_key(key)
    return MetricInfo(
        key=key,
        source="local",
        metric=key,
        higher_is_better=measure.higher_is_better if measure else True,
        definition=measure.definition if measure else "",
    )


def _foundry_info(crit_name: str, metric: str, evaluator: str | None, t: CriterionThreshold | None) -> MetricInfo:
    spec = CATALOG.get(evaluator or "")
    mspec = None
    if spec is not None:
        with contextlib.suppress(KeyError):
            mspec = spec.metric(metric)
    return MetricInfo(
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


def _metric_infos(
    local_keys: list[str], expected: list[tuple[str, str]], found: _FoundryCells, params: Params
) -> list[MetricInfo]:
    threshold_of = {(t.criterion, t.metric): t for t in params.thresholds}
    return [_local_info(k) for k in local_keys] + [
        _foundry_info(c, m, found.evaluator_of.get(c), threshold_of.get((c, m))) for c, m in expected
    ]


def _score_columns(expected: list[tuple[str, str]], found: _FoundryCells, n_rows: int) -> dict[str, list[FoundryScore]]:
    """Every Foundry metric as a column of ``FoundryScore``, validated in one call per metric."""
    out: dict[str, list[FoundryScore]] = {}
    for crit_name, metric in expected:
        column = found.cells.get((crit_name, metric)) or [None] * n_rows
        errs = found.errors.get(crit_name, {})
        boolean = _metric_kind(found.evaluator_of.get(crit_name), metric) == "boolean"
        out[foundry_key(crit_name, metric)] = _adapter(FoundryScore).validate_python(
            [_score_input(cell, errs.get(i), boolean) for i, cell in enumerate(column)]
        )
    return out


def _canary(query_id: str, canary: str, judges: list[JudgeVerdict]) -> CanaryFlag:
    """A judge canary: which answer judges passed (flagged it), failed (caught it) or did not score it."""
    passed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is True]
    failed_by = [j.criterion for j in judges if j.score.status == "scored" and j.score.passed is False]
    unscored = [j.criterion for j in judges if j.score.status != "scored" or j.score.passed is None]
    caught = True if failed_by else (False if passed_by else None)
    return CanaryFlag(
        query_id=query_id, canary=canary, passed_by=passed_by, failed_by=failed_by, unscored=unscored, caught=caught
    )


@dataclass
class _QueryInputs:
    """What the per-query step reads: local metrics, Foundry score columns, the answer judges, contradictions."""

    local: _LocalMetrics
    scores: dict[str, list[FoundryScore]]
    judges: list[tuple[str, list[FoundryScore] | None]]
    contradictions: set[str]
    hit: list[float | None] | None  # hit@stage_k, read by stage attribution
    missing: FoundryScore = field(default_factory=lambda: FoundryScore(status="missing"))
    specs_by_key: dict[str, EvaluatorSpec] = field(default_factory=dict)  # score key → its evaluator's catalog entry


def _read_for_kind(
    scores: dict[str, FoundryScore], specs: dict[str, EvaluatorSpec], kind: str, abstained: bool | None
) -> dict[str, FoundryScore]:
    """One query's Foundry verdicts read for its kind (``wire.passed_for_kind``: a quality_grader fail on a
    negative query that abstained is the correct outcome); the reason says when a verdict was read so."""
    if kind != "negative" or not abstained:
        return scores
    for key, spec in specs.items():
        s = scores.get(key)
        if s is not None and s.status == "scored":
            passed, note = passed_for_kind(spec, s.passed, kind=kind, abstained=abstained)
            if note is not None:
                scores[key] = s.model_copy(update={"passed": passed, "reason": f"{note}. {s.reason or ''}".strip()})
    return scores


def _query_row(i: int, inp: _QueryInputs) -> tuple[dict[str, Any], CanaryFlag | None]:
    """One query's row (as ``QueryRow`` input) and its canary flag, if it carries a canary."""
    query_id, kind, kind_source, query, response, canary_text, dropped, checked = inp.local.facts[i]
    local = {k: col[i] for k, col in inp.local.columns.items()}
    if inp.local.n_rel is not None:
        local["n_rel"] = inp.local.n_rel[i]
    abstained = None if inp.local.abstains[i] < 0 else bool(inp.local.abstains[i])
    judges = [JudgeVerdict(c, inp.missing if col is None else col[i]) for c, col in inp.judges]
    stage, reason = attribute_stage(
        kind=kind,
        hit=None if inp.hit is None else inp.hit[i],
        assembly_checked=checked,
        dropped_relevant=dropped,
        has_response=response is not None,
        abstained=abstained,
        answer_judges=judges,
        label_contradiction=query_id in inp.contradictions,
    )
    row = {
        "row": i,
        "query_id": query_id,
        "kind": kind,
        "kind_source": kind_source,
        "query": query,
        "response": response,
        "canary": canary_text,
        "local": local,
        "foundry": _read_for_kind({key: col[i] for key, col in inp.scores.items()}, inp.specs_by_key, kind, abstained),
        "abstained": abstained,
        "dropped_relevant": dropped,
        "holes": inp.local.holes_by_query.get(query_id, []),
        "stage": stage,
        "stage_reason": reason,
    }
    return row, None if canary_text is None else _canary(query_id, canary_text, judges)


def _queries(inp: _QueryInputs) -> tuple[list[QueryRow], list[CanaryFlag]]:
    """The per-query rows (validated in one call) and the canary flags."""
    rows: list[dict[str, Any]] = []
    canaries: list[CanaryFlag] = []
    for i in range(len(inp.local.facts)):
        row, canary = _query_row(i, inp)
        rows.append(row)
        if canary is not None:
            canaries.append(canary)
    return _adapter(QueryRow).validate_python(rows), canaries


def _answer_judges(
    params: Params, specs: dict[str, EvaluatorSpec | None], scores: dict[str, list[FoundryScore]]
) -> list[tuple[str, list[FoundryScore] | None]]:
    """The answer criteria with a primary metric, each with its primary score column (``None``: no column)."""
    out: list[tuple[str, list[FoundryScore] | None]] = []
    for c in params.answer_criteria:
        spec = specs.get(c)
        if spec is not None and spec.primary_metric:
            out.append((c, scores.get(foundry_key(c, spec.primary_metric))))
    return out


def _section(kind: str, queries: list[QueryRow], infos: list[MetricInfo], nan_policy: str) -> Section:
    """The aggregates of one query kind: every metric, the kind sources and the stage counts."""
    rows = [q for q in queries if q.kind == kind]
    sources: dict[str, int] = defaultdict(int)
    for q in rows:
        sources[q.kind_source] += 1
    agg: dict[str, MetricAggregate] = {}
    for info in infos:
        if info.source == "local":
            agg[info.key] = _aggregate_local([q.local.get(info.key) for q in rows], nan_policy)
        else:
            agg[info.key] = _aggregate_foundry([q.foundry[info.key] for q in rows])
    stages = {s: sum(1 for q in rows if q.stage == s) for s in STAGES}
    return Section(kind=kind, queries=len(rows), kind_sources=dict(sources), metrics=agg, stages=stages)


def _stage_section(queries: list[QueryRow]) -> StageSection:
    return StageSection(
        counts={s: sum(1 for q in queries if q.stage == s) for s in STAGES},
        queries={s: [q.query_id for q in queries if q.stage == s] for s in STAGES},
        rules=STAGE_RULES,
    )


def _negative_section(
    queries: list[QueryRow], neg_lists: dict[str, list[str]], local: dict[str, Any]
) -> NegativeSection:
    neg_rows = [q for q in queries if q.kind == "negative"]
    return NegativeSection(
        queries=[q.query_id for q in neg_rows],
        surfaced_evidence=neg_lists["surfaced"],
        answered=[q.query_id for q in neg_rows if q.abstained is False],
        abstained=[q.query_id for q in neg_rows if q.abstained is True],
        label_contradictions=neg_lists["contradiction"],
        local=local,
    )


def _per_metric_coverage(
    expected: list[tuple[str, str]], scores: dict[str, list[FoundryScore]], n_rows: int
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for crit_name, metric in expected:
        key = foundry_key(crit_name, metric)
        statuses = Counter(s.status for s in scores[key])
        out[key] = {
            "expected": n_rows,
            "scored": statuses["scored"],
            "errored": statuses["errored"],
            "missing": statuses["missing"],
        }
    return out


def _coverage(
    per_metric: dict[str, dict[str, int]],
    found: _FoundryCells,
    queries: list[QueryRow],
    positive: Section,
    negative: Section,
    manifest: dict[str, Any],
    warnings: list[str],
) -> dict[str, Any]:
    """Coverage counts; errored, missing and absent scores, unknown kinds and an unfinished run are warned."""
    total_err = sum(v["errored"] for v in per_metric.values())
    total_missing = sum(v["missing"] for v in per_metric.values())
    if total_err:
        warnings.append(
            f"{total_err} Foundry score(s) errored: counted as errored, never as 0 and never dropped "
            "(see coverage per metric)"
        )
    if total_missing:
        warnings.append(f"{total_missing} Foundry score(s) missing (no result or a null score)")
    if not found.n_results:
        warnings.append("results.jsonl is empty: no Foundry scores at all")
    unknown_kind = sum(1 for q in queries if q.kind_source == "unknown")
    if unknown_kind:
        warnings.append(f"{unknown_kind} query(ies) have neither a declared kind nor labels: treated as positive")
    status = manifest.get("status") or manifest.get("run_status")
    if status and status != "completed":
        warnings.append(f"the run's status is {status!r}, not 'completed'")
    return {
        "queries": len(queries),
        "positive": positive.queries,
        "negative": negative.queries,
        "result_rows": found.n_results,
        "errored_result_rows": found.errored_rows,
        "scores_expected": sum(v["expected"] for v in per_metric.values()),
        "scores_scored": sum(v["scored"] for v in per_metric.values()),
        "scores_errored": total_err,
        "scores_missing": total_missing,
        "per_metric": per_metric,
    }


_MOCK_WARNING = (
    "judge scores in this run come from the Foundry emulator's lexical stand-in, not from a model: "
    "they exercise the pipeline, they do not judge the answers"
)


@gc_paused()
def build_report(run_dir: str | os.PathLike[str], *, stage_k: int | None = None) -> Report:
    """Read a run folder and merge its Foundry results with the local metrics into one ``Report``.

    ``records.jsonl`` and ``results.jsonl`` are each read once, a line at a time: records are reduced to the
    per-query facts the report needs (their document text is not kept), result rows to their scores. Steps:
    open the run → params → local metrics (records) → Foundry cells (results) → metric infos and score columns →
    per-query rows → sections, coverage and provenance.
    """
    run = _open_run(run_dir)
    params, specs = _params(run.plan, stage_k)
    warnings: list[str] = []
    local = _local_metrics(run, params)
    n_rows = len(local.facts)
    found = _foundry_cells(run, n_rows, warnings)
    run.folder.check_consistent(results=found.n_results, rows=n_rows)
    expected = _expected(run.plan, specs, found)
    infos = _metric_infos(local.keys, expected, found, params)
    scores = _score_columns(expected, found, n_rows)
    del found.cells
    neg_lists = _negative_lists(local.negative)
    judges = _answer_judges(params, specs, scores)
    hit = local.columns.get(f"hit@{params.stage_k}")
    inp = _QueryInputs(local, scores, judges, set(neg_lists["contradiction"]), hit)
    inp.specs_by_key = {
        foundry_key(c, m): spec
        for c, m in expected
        if (spec := CATALOG.get(found.evaluator_of.get(c) or "")) is not None and spec.abstention_correct_on_negative
    }
    queries, canaries = _queries(inp)
    del inp, local.columns
    positive = _section("positive", queries, infos, params.nan_policy)
    negative = _section("negative", queries, infos, params.nan_policy)
    per_metric = _per_metric_coverage(expected, scores, n_rows)
    coverage = _coverage(per_metric, found, queries, positive, negative, run.manifest, warnings)
    provenance = _provenance(run.run_dir, run.manifest, run.plan, run.fingerprint)
    if provenance.backend == "mock":
        warnings.insert(0, _MOCK_WARNING)
    return Report(
        provenance=provenance,
        params=params,
        metrics=infos,
        coverage=coverage,
        positive=positive,
        negative=negative,
        negative_queries=_negative_section(queries, neg_lists, local.negative),
        stages=_stage_section(queries),
        canaries=canaries,
        labelling_queue=_labelling_queue(local.hole_hits),
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
    raw_timings = manifest.get("timings")
    timings: dict[str, Any] = raw_timings if isinstance(raw_timings, dict) else {}
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

"""Build a ``Report`` from a run folder: normalized Foundry results merged with locally computed metrics.

One pass over the run folder (``runfolder.RunFolder``, whose counts are checked: a truncated ``results.jsonl`` is
an error, never a smaller report): the plan without its items, the records into the local metrics' arrays (their
text spilled to a temporary file, ``_columns.read_records``), the result rows into numpy columns
(``_columns.read_results``). Aggregates are computed on the columns (``_aggregate``); the per-query rows are made
one at a time and written to a JSONL file as they are made (``_rows``): memory grows with the number of metrics
and of the rows shown, not with the document text or the rows written. The cyclic garbage collector is paused
while a report is built (``_io.gc_paused``): the objects made are acyclic.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import IO, Any

import numpy as np
from pydantic import TypeAdapter

from .. import __version__
from .._io import atomic_open, free_large_blocks, gc_paused
from ..catalog import CATALOG, EvaluatorSpec
from ..dataset.records import QueryRecord
from ..mapping.plan import Plan
from ..metrics.measures import measure_for_key
from ..results import ResultRow
from ..runfolder import RunFolder, RunFolderError
from ..wire import passed_for_kind, resolve_threshold
from ._aggregate import aggregate_foundry, aggregate_local, defined, distribution, per_metric_coverage, summary_infos
from ._columns import (
    SCORED,
    Cells,
    Columns,
    FoundryRead,
    LocalColumns,
    RecordRead,
    ScoreColumn,
    read_records,
    read_results,
)
from ._model import (
    LIST_CAP,
    STAGES,
    CriterionThreshold,
    HoleEntry,
    MetricInfo,
    NegativeSection,
    Params,
    PerQuery,
    Provenance,
    QueryRow,
    Report,
    Section,
    StageSection,
)
from ._rows import Judge, RowInputs, RowsOut, stream_rows
from ._spill import Spill, blocks
from ._stages import STAGE_RULES
from ._trust import trust_section

__all__ = ["DEFAULT_WORST", "TABLE_ROWS", "ReportError", "build_report", "foundry_key", "load_run"]

_NOT_METRICS = {"query_id", "kind", "kind_source", "n_rel", "row", "line", "source"}
DEFAULT_WORST = 10  # worst queries shown per stage
TABLE_ROWS = 2000  # up to this many queries, the report holds every row (the HTML's per-query table)


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


@dataclass
class _RunInput:
    """The run folder as the report reads it: manifest, plan (its items read only for the fingerprint, if needed)."""

    run_dir: str | os.PathLike[str]
    folder: RunFolder
    manifest: dict[str, Any]
    plan: Plan
    fingerprint: Callable[[], str]


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


def _expected(plan: Plan, specs: dict[str, EvaluatorSpec | None], found: FoundryRead) -> list[tuple[str, str]]:
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
    local_keys: list[str], expected: list[tuple[str, str]], found: FoundryRead, params: Params
) -> list[MetricInfo]:
    threshold_of = {(t.criterion, t.metric): t for t in params.thresholds}
    return [_local_info(k) for k in local_keys] + [
        _foundry_info(c, m, found.evaluator_of.get(c), threshold_of.get((c, m))) for c, m in expected
    ]


def _score_columns(
    expected: list[tuple[str, str]], found: FoundryRead, n_rows: int, spill: Spill
) -> dict[str, ScoreColumn]:
    """Every Foundry metric as a ``ScoreColumn`` (statuses derived block by block; a metric no row has gets an
    empty column)."""
    out: dict[str, ScoreColumn] = {}
    for crit_name, metric in expected:
        boolean = _metric_kind(found.evaluator_of.get(crit_name), metric) == "boolean"
        cells = found.cells.get((crit_name, metric)) or Cells(spill, f"{crit_name}\0{metric}", n_rows)
        out[foundry_key(crit_name, metric)] = ScoreColumn(cells, found.errors.get(crit_name, {}), n_rows, boolean)
    return out


def _read_for_kind(scores: dict[str, ScoreColumn], found: FoundryRead, rec: RecordRead) -> None:
    """Foundry verdicts read for the query's kind (``wire.passed_for_kind``): a quality_grader fail on a negative
    query that abstained is the correct outcome, so it reads as passed and its reason says so. In place."""
    kinds = rec.arrays.negative & (rec.arrays.abstains == 1)
    for key, col in scores.items():
        spec = CATALOG.get(found.evaluator_of.get(key.split("/", 1)[0]) or "")  # key: criterion[/metric]
        if spec is None or not spec.abstention_correct_on_negative:
            continue
        passed, note = passed_for_kind(spec, False, kind="negative", abstained=True)  # a fail, read for the kind
        if note is None or passed is None:
            continue
        for lo, hi in blocks(col.n):
            codes = col.passed(lo, hi)
            flip = np.flatnonzero(kinds[lo:hi] & (col.status(lo, hi) == SCORED) & (codes == 0))
            if not flip.size:
                continue
            codes[flip] = int(passed)
            col.cells.write("passed", lo, codes)
            for i in (flip + lo).tolist():
                col.cells.reason.set(i, f"{note}. {col.cells.reason.get(i) or ''}".strip())


def _answer_judges(
    params: Params, specs: dict[str, EvaluatorSpec | None], scores: dict[str, ScoreColumn]
) -> list[Judge]:
    """The answer criteria with a primary metric, each with its primary score column (``None``: no column)."""
    out: list[Judge] = []
    for c in params.answer_criteria:
        spec = specs.get(c)
        if spec is not None and spec.primary_metric:
            m = spec.metric(spec.primary_metric)
            lo, hi = m.min_value, m.max_value
            column = scores.get(foundry_key(c, spec.primary_metric))
            out.append(Judge(c, column, float(lo or 0.0), float(1.0 if hi is None else hi)))
    return out


@dataclass
class _Local:
    """The local metrics on every query (on disk; NaN: undefined) and the negative-query report."""

    keys: list[str]
    columns: LocalColumns  # the metric keys, then n_rel when present
    negative: dict[str, Any]
    parts: Any  # metrics.negative.NegativeParts: the negative queries' lists and contradiction flags
    grades: LocalColumns  # found, best: metrics.ranking.top_grades at stage_k (the partial search miss)


class _LocalBlocks:
    """The ranking metrics at every k and the negative-query report, computed a block of records at a time
    (``read_records``' ``on_block``): the metric columns written to the spill, the report's parts accumulated."""

    def __init__(self, params: Params, surface_threshold: float | None, spill: Spill) -> None:
        from ..metrics.negative import NegativeParts
        from ..metrics.ranking import METRIC_NAMES

        self.ks = tuple(params.k)
        self.keys = [f"{m}@{k}" for k in self.ks for m in METRIC_NAMES]
        self.columns = LocalColumns(spill, [*self.keys, "n_rel"])
        self.parts = NegativeParts(params.stage_k, surface_threshold, keep=LIST_CAP)
        self.stage_k = params.stage_k
        self.grades = LocalColumns(spill, ["found", "best"])

    def add(self, arrays: Any, lo: int) -> None:
        from ..metrics.ranking import compute, top_grades

        self.columns.write(lo, compute(arrays, self.ks))
        self.grades.write(lo, top_grades(arrays, self.stage_k))
        self.parts.add(arrays)

    def done(self) -> _Local:
        negative = self.parts.report() if self.parts.n_neg else {}
        return _Local(self.keys, self.columns, negative, self.parts, self.grades)


def _ids(query_ids: Sequence[str], mask: np.ndarray, limit: int = LIST_CAP) -> list[str]:
    """The first ``limit`` query ids where ``mask`` holds, in dataset order."""
    return [query_ids[i] for i in np.flatnonzero(mask)[:limit].tolist()]


def _negative_section(rec: RecordRead, local: _Local) -> NegativeSection:
    arrays, parts = rec.arrays, local.parts
    negative = arrays.negative
    answered, abstained = negative & (arrays.abstains == 0), negative & (arrays.abstains == 1)
    lists = {
        "queries": _ids(arrays.query_ids, negative),
        "surfaced_evidence": parts.surfaced_ids[:LIST_CAP],
        "answered": _ids(arrays.query_ids, answered),
        "abstained": _ids(arrays.query_ids, abstained),
        "label_contradictions": parts.contradiction_ids[:LIST_CAP],
    }
    counts = {
        "queries": int(negative.sum()),
        "surfaced_evidence": parts.n_surfaced,
        "answered": int(answered.sum()),
        "abstained": int(abstained.sum()),
        "label_contradictions": parts.n_contradictions,
    }
    return NegativeSection(**lists, counts=counts, local=local.negative)


def _section(
    kind: str,
    rec: RecordRead,
    local: _Local,
    scores: dict[str, ScoreColumn],
    infos: list[MetricInfo],
    stage: np.ndarray,
    nan_policy: str,
) -> Section:
    """The aggregates of one query kind: every metric, the kind sources and the stage counts."""
    arrays = rec.arrays
    mask = arrays.kinds.mask(kind)
    sources = Counter(s for s, k in zip(arrays.kind_sources, arrays.kinds, strict=True) if k == kind)
    agg = {}
    for info in infos:
        if info.source == "local":
            agg[info.key] = aggregate_local(local.columns[info.key][mask], nan_policy)
        else:
            agg[info.key] = aggregate_foundry(scores[info.key], mask)
    stages = {s: int(np.count_nonzero(stage[mask] == k)) for k, s in enumerate(STAGES)}
    return Section(kind=kind, queries=int(mask.sum()), kind_sources=dict(sources), metrics=agg, stages=stages)


def _stage_section(query_ids: Sequence[str], rows: RowsOut, params: Params) -> StageSection:
    return StageSection(
        counts={s: int(np.count_nonzero(rows.stage == k)) for k, s in enumerate(STAGES)},
        queries={s: _ids(query_ids, rows.stage == k) for k, s in enumerate(STAGES)},
        worst={s: [r["query_id"] for r in rows.worst.get(s, [])] for s in STAGES},
        rules=STAGE_RULES,
        stage_k=params.stage_k,
        relevance_threshold=params.relevance_threshold,
        search_partial=rows.search_partial,
        search_partial_queries=rows.search_partial_ids,
    )


def _coverage(
    per_metric: dict[str, dict[str, int]],
    found: FoundryRead,
    kind_sources: Sequence[str],
    positive: Section,
    negative: Section,
    manifest: dict[str, Any],
    warnings: list[str],
    holes: tuple[int, int],
) -> dict[str, Any]:
    """Coverage counts (and the labelling queue's documents and holes); errored, missing and absent scores, unknown
    kinds and an unfinished run are warned."""
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
    unknown_kind = sum(1 for s in kind_sources if s == "unknown")
    if unknown_kind:
        warnings.append(f"{unknown_kind} query(ies) have neither a declared kind nor labels: treated as positive")
    status = manifest.get("status") or manifest.get("run_status")
    if status and status != "completed":
        warnings.append(f"the run's status is {status!r}, not 'completed'")
    return {
        "queries": len(kind_sources),
        "positive": positive.queries,
        "negative": negative.queries,
        "result_rows": found.n_results,
        "errored_result_rows": found.errored_rows,
        "scores_expected": sum(v["expected"] for v in per_metric.values()),
        "scores_scored": sum(v["scored"] for v in per_metric.values()),
        "scores_errored": total_err,
        "scores_missing": total_missing,
        "per_metric": per_metric,
        "hole_documents": holes[0],
        "holes": holes[1],
    }


def _distributions(infos: list[MetricInfo], rec: RecordRead, local: _Local, scores: dict[str, ScoreColumn]) -> list:
    """The histogram of every summary metric, positive and negative queries on the same bins."""
    negative = rec.arrays.negative
    out = []
    for info in summary_infos(infos):
        values = local.columns[info.key] if info.source == "local" else scores[info.key].values()
        d = distribution(info, defined(values[~negative]), defined(values[negative]))
        if d is not None:
            out.append(d)
    return out


_MOCK_WARNING = (
    "judge scores in this run come from the Foundry emulator's lexical stand-in, not from a model: "
    "they exercise the pipeline, they do not judge the answers"
)


@dataclass
class _Built:
    """A report's pieces before the model is assembled."""

    run: _RunInput
    params: Params
    rec: RecordRead
    found: FoundryRead
    infos: list[MetricInfo]
    scores: dict[str, ScoreColumn]
    local: _Local
    warnings: list[str]


def _read(run_dir: str | os.PathLike[str], stage_k: int | None) -> tuple[_Built, dict[str, EvaluatorSpec | None]]:
    """The one pass over the run folder: plan, records into arrays, results into columns, the local metrics."""
    free_large_blocks()  # the blocks of arrays below are freed back to the system, not kept in the heap
    run = _open_run(run_dir)
    params, specs = _params(run.plan, stage_k)
    warnings: list[str] = []
    ms = run.plan.mapping.metrics
    spill = Spill()
    blocks_ = _LocalBlocks(params, ms.surface_threshold, spill)
    rec = read_records(
        run.folder,
        run.folder.iter_records(run.plan),
        k_stage=params.stage_k,
        depth=params.k[-1],
        rt=params.relevance_threshold,
        phrases=ms.abstention_phrases,
        on_block=blocks_.add,
    )
    n_rows = rec.arrays.n_queries
    local = blocks_.done()
    evaluators = {c.name: c.evaluator for c in run.plan.criteria}
    found = read_results(run.folder, evaluators, n_rows, warnings, spill)
    run.folder.check_consistent(results=found.n_results, rows=n_rows)
    expected = _expected(run.plan, specs, found)
    infos = _metric_infos(local.keys, expected, found, params)
    scores = _score_columns(expected, found, n_rows, spill)
    _read_for_kind(scores, found, rec)
    found.cells = {}
    return _Built(run, params, rec, found, infos, scores, local, warnings), specs


def _rows(b: _Built, specs: dict[str, EvaluatorSpec | None], out: IO[bytes] | None, worst: int, keep: bool) -> RowsOut:
    contradiction = b.local.parts.contradiction()
    inp = RowInputs(
        b.rec,
        b.local.columns,
        b.scores,
        _answer_judges(b.params, specs, b.scores),
        contradiction,
        f"hit@{b.params.stage_k}",
        b.local.grades,
    )
    return stream_rows(inp, None if out is None else out.write, worst=worst, keep_all=keep)


@gc_paused()
def build_report(
    run_dir: str | os.PathLike[str],
    *,
    stage_k: int | None = None,
    queries_out: str | os.PathLike[str] | None = None,
    worst: int = DEFAULT_WORST,
    table_rows: int = TABLE_ROWS,
    human_verdicts: str | os.PathLike[str] | None = None,
    repeats: Sequence[str | os.PathLike[str]] = (),
    trust: bool = True,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> Report:
    """Read a run folder and merge its Foundry results with the local metrics into one ``Report``.

    ``queries_out``: write every per-query row there (JSONL, one ``QueryRow`` per line, in dataset order) as it is
    made; the report references it (``per_query.path``). ``worst``: the worst queries kept per stage
    (``stages.worst``). Runs of at most ``table_rows`` queries keep every row in ``report.queries``; larger ones
    keep only the worst rows. ``human_verdicts`` (JSONL or CSV) and ``repeats`` (run folders of the same rows
    judged again) feed the "Can the judge be trusted?" section (``report._trust``; it says what is missing without
    them); ``trust=False`` leaves the section out (None) and skips its own pass over the run folder (compare, which
    never shows it). Steps: read (plan → records → results → local metrics → columns) → rows → sections,
    coverage, distributions, labelling queue, trust and provenance. ``progress(stage, done, total)`` is called as
    ``("report", step, 4)`` before the read, the rows, the sections and the trust pass, and once at the end.
    """
    step = progress or _no_progress
    step("report", 0, 4)
    b, specs = _read(run_dir, stage_k)
    step("report", 1, 4)
    n_rows = b.rec.arrays.n_queries
    keep = n_rows <= table_rows
    with atomic_open(queries_out) if queries_out is not None else contextlib.nullcontext() as fh:
        rows = _rows(b, specs, fh, worst, keep)
    step("report", 2, 4)
    report = _assemble(
        b,
        rows,
        PerQuery(
            path=None if queries_out is None else str(queries_out), rows=n_rows, complete=keep, worst_per_stage=worst
        ),
    )
    step("report", 3, 4)
    report.trust = trust_section(run_dir, human_verdicts, repeats=repeats) if trust else None
    step("report", 4, 4)
    shown = rows.kept if rows.kept is not None else _worst_rows(rows)
    report._queries = _adapter(QueryRow).validate_python(shown)
    report._columns = Columns(b.rec.arrays.query_ids, b.rec.arrays.kinds, b.local.columns, b.scores)
    report._holes = b.rec.holes
    return report


def _no_progress(stage: str, done: int, total: int | None) -> None:
    """The ``progress`` callback when none is given."""


def _worst_rows(rows: RowsOut) -> list[dict[str, Any]]:
    """The worst rows of every stage, in dataset order."""
    return sorted((r for s in STAGES for r in rows.worst.get(s, [])), key=lambda r: r["row"])


def _assemble(b: _Built, rows: RowsOut, per_query: PerQuery) -> Report:
    nan_policy, arrays = b.params.nan_policy, b.rec.arrays
    positive = _section("positive", b.rec, b.local, b.scores, b.infos, rows.stage, nan_policy)
    negative = _section("negative", b.rec, b.local, b.scores, b.infos, rows.stage, nan_policy)
    per_metric = per_metric_coverage(b.scores, arrays.n_queries)
    n_holes = (b.rec.holes.n_docs, b.rec.holes.n_holes)
    coverage = _coverage(
        per_metric, b.found, arrays.kind_sources, positive, negative, b.run.manifest, b.warnings, n_holes
    )
    provenance = _provenance(b.run.run_dir, b.run.manifest, b.run.plan, b.run.fingerprint)
    if provenance.backend == "mock":
        b.warnings.insert(0, _MOCK_WARNING)
    return Report(
        provenance=provenance,
        params=b.params,
        metrics=b.infos,
        coverage=coverage,
        positive=positive,
        negative=negative,
        negative_queries=_negative_section(b.rec, b.local),
        stages=_stage_section(arrays.query_ids, rows, b.params),
        canaries=rows.canaries,
        canary_counts=rows.canary_counts,
        labelling_queue=_adapter(HoleEntry).validate_python(b.rec.holes.entries(LIST_CAP)),
        distributions=_distributions(b.infos, b.rec, b.local, b.scores),
        per_query=per_query,
        warnings=b.warnings,
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

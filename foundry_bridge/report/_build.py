"""Build a ``Report`` from a run folder: normalized Foundry results merged with locally computed metrics.

The run folder is read through its columns (``columns.RunColumns``: the results and the per-query facts as Parquet,
sealed when the run finished, or on the first report of a folder of an earlier version) and its counts are checked:
a truncated ``results.jsonl`` is an error, never a smaller report. Each Foundry metric is a view in row order
(``ScoreColumn``: its result rows joined with the queries by position when the file holds them one per query in row
order, else its joins evaluated once into a file, ``ScoreColumn.materialize``) that its aggregates (one ``GROUP BY``
each), the stage rule and the per-query rows read; a local metric's column is fetched from the engine one at a time
and its aggregates computed in numpy (``_aggregate``); the per-query rows are written by the engine (``_rows``):
memory grows with the number of metrics and of the rows shown, not with the document text or the rows written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import TypeAdapter

from .. import __version__
from .._io import atomic_open, gc_paused
from ..catalog import CATALOG, EvaluatorSpec
from ..columns import FactParams, RunColumns
from ..mapping.plan import Plan
from ..metrics.measures import measure_for_key
from ..runfolder import RunFolder, RunFolderError
from ..wire import resolve_threshold
from ._aggregate import aggregate_foundry, aggregate_local, defined, distribution, summary_infos
from ._columns import Columns, LocalColumns, ScoreColumn
from ._drill import build_drill, stand_in
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
    foundry_key,
)
from ._queue import Queue
from ._rows import Judge, RowInputs, RowsOut, fetch_rows, stream_rows, write_json_lines, write_rows
from ._stages import STAGE_RULES
from ._trust import PASS_RATE_HALF_WIDTH, SCORE_HALF_WIDTH, trust_section

__all__ = ["DEFAULT_WORST", "TABLE_ROWS", "ReportError", "build_report", "foundry_key", "read_run"]

DEFAULT_WORST = 10  # worst queries shown per stage
TABLE_ROWS = 2000  # up to this many queries, the report holds every row (the HTML's per-query table)


ReportError = RunFolderError  # a run folder that cannot be reported on: the run folder's own error


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


def _params(plan: Plan, facts: FactParams) -> tuple[Params, dict[str, EvaluatorSpec | None]]:
    """The declared parameters (k's with ``stage_k`` added: stage attribution reads hit@stage_k) and the catalog
    spec of each criterion."""
    ms = plan.mapping.metrics
    thresholds, specs = _thresholds(plan)
    answer_evaluators = _answer_evaluators()
    params = Params(
        k=list(facts.ks),
        stage_k=facts.stage_k,
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


@dataclass
class _Found:
    """What the result rows hold: each criterion's metrics (in order of first appearance) and evaluator, counts."""

    observed: dict[str, list[str]]
    evaluator_of: dict[str, str]
    n_results: int
    errored_rows: int


def _expected(plan: Plan, specs: dict[str, EvaluatorSpec | None], found: _Found) -> list[tuple[str, str]]:
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
    local_keys: list[str], expected: list[tuple[str, str]], found: _Found, params: Params
) -> list[MetricInfo]:
    threshold_of = {(t.criterion, t.metric): t for t in params.thresholds}
    return [_local_info(k) for k in local_keys] + [
        _foundry_info(c, m, found.evaluator_of.get(c), threshold_of.get((c, m))) for c, m in expected
    ]


def _score_columns(expected: list[tuple[str, str]], found: _Found, run: RunColumns) -> dict[str, ScoreColumn]:
    """Every Foundry metric as a ``ScoreColumn`` (a metric no row has reads as missing everywhere)."""
    out: dict[str, ScoreColumn] = {}
    for crit_name, metric in expected:
        evaluator = found.evaluator_of.get(crit_name)
        boolean = _metric_kind(evaluator, metric) == "boolean"
        key = foundry_key(crit_name, metric)
        out[key] = ScoreColumn(run, key, crit_name, metric, evaluator, boolean)
    return out


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


def _negative_section(run: RunColumns) -> NegativeSection:
    lists_meta = run.meta.get("negative_lists", {})
    negative = "kind = 'negative'"
    answered, abstained = f"{negative} AND abstains = 0", f"{negative} AND abstains = 1"
    lists = {
        "queries": run.ids_where(negative, LIST_CAP),
        "surfaced_evidence": list(lists_meta.get("surfaced_evidence", []))[:LIST_CAP],
        "answered": run.ids_where(answered, LIST_CAP),
        "abstained": run.ids_where(abstained, LIST_CAP),
        "label_contradictions": list(lists_meta.get("label_contradictions", []))[:LIST_CAP],
    }
    counts = {
        "queries": run.count_where(negative),
        "surfaced_evidence": int(lists_meta.get("n_surfaced", 0)),
        "answered": run.count_where(answered),
        "abstained": run.count_where(abstained),
        "label_contradictions": int(lists_meta.get("n_contradictions", 0)),
    }
    return NegativeSection(**lists, counts=counts, local=run.meta.get("negative") or {})


@dataclass
class _Metrics:
    """Every metric's aggregates per kind, coverage counts and distribution: one column fetched at a time."""

    sections: dict[str, dict[str, Any]]
    per_metric: dict[str, dict[str, int]]
    distributions: list[Any]


_FOUNDRY_AGGREGATE = (
    "SELECT kind = 'negative' AS negative, count(*), count(*) FILTER (status = 0), count(*) FILTER (status = 1), "
    "count(*) FILTER (status = 2), avg(score) FILTER (ok), median(score) FILTER (ok), min(score) FILTER (ok), "
    "max(score) FILTER (ok), count(*) FILTER (status = 0 AND passed), count(*) FILTER (status = 0 AND NOT passed) "
    "FROM (SELECT *, status = 0 AND NOT isnan(score) AS ok FROM {view}) GROUP BY ALL"
)


def _foundry_aggregates(col: ScoreColumn) -> dict[bool, Any]:
    """A Foundry metric's aggregates per kind (``True``: negative), one ``GROUP BY`` of its view (one metric at a
    time: the views of every metric in one query exceed the engine's memory limit at 100k queries)."""
    got = {
        bool(neg): aggregate_foundry(*rest)
        for neg, *rest in col.run.sql(_FOUNDRY_AGGREGATE.format(view=col.view)).fetchall()
    }
    empty = aggregate_foundry(0, 0, 0, 0, None, None, None, None, 0, 0)
    return {neg: got.get(neg, empty) for neg in (False, True)}


def _metrics(b: _Built) -> _Metrics:
    negative = b.negative
    masks = {"positive": ~negative, "negative": negative}
    sections: dict[str, dict[str, Any]] = {k: {} for k in masks}
    per_metric: dict[str, dict[str, int]] = {}
    summary = {m.key for m in summary_infos(b.infos)}
    shown: dict[str, Any] = {}  # a summary metric's distribution, made while its column is at hand
    for info in b.infos:
        if info.source == "local":
            v = b.local[info.key]
            for kind, mask in masks.items():
                sections[kind][info.key] = aggregate_local(v[mask], b.params.nan_policy)
            if info.key in summary:
                shown[info.key] = distribution(info, defined(v[~negative]), defined(v[negative]))
        else:
            col = b.scores[info.key]
            got = _foundry_aggregates(col)
            sections["positive"][info.key], sections["negative"][info.key] = got[False], got[True]
            per_metric[info.key] = {
                "expected": got[False].queries + got[True].queries,
                **{k: getattr(got[False], k) + getattr(got[True], k) for k in ("scored", "errored", "missing")},
            }
            if info.key in summary:
                fetched = col.run.sql(
                    f"SELECT score, kind = 'negative' AS neg FROM {col.view} WHERE status = 0 AND NOT isnan(score)"
                ).fetchnumpy()
                score, neg = np.asarray(fetched["score"], np.float64), np.asarray(fetched["neg"], bool)
                shown[info.key] = distribution(info, score[~neg], score[neg])
    distributions = [d for d in (shown[m.key] for m in summary_infos(b.infos)) if d is not None]
    return _Metrics(sections, per_metric, distributions)


def _section(kind: str, b: _Built, aggregates: dict[str, Any], stage: np.ndarray) -> Section:
    """The aggregates of one query kind: every metric, the kind sources and the stage counts."""
    mask = b.negative if kind == "negative" else ~b.negative
    rows = b.run.sql(
        "SELECT kind_source, count(*) FROM queries WHERE kind = ? GROUP BY kind_source ORDER BY min(row)", [kind]
    ).fetchall()
    sources = {str(src): int(n) for src, n in rows}
    stages = {s: int(np.count_nonzero(stage[mask] == k)) for k, s in enumerate(STAGES)}
    return Section(kind=kind, queries=int(mask.sum()), kind_sources=sources, metrics=aggregates, stages=stages)


def _stage_section(rows: RowsOut, params: Params, ids: dict[int, str]) -> StageSection:
    return StageSection(
        counts={s: int(np.count_nonzero(rows.stage == k)) for k, s in enumerate(STAGES)},
        queries={s: rows.stage_ids.get(s, []) for s in STAGES},
        worst={s: [ids[r] for r in rows.worst.get(s, [])] for s in STAGES},
        rules=STAGE_RULES,
        stage_k=params.stage_k,
        relevance_threshold=params.relevance_threshold,
        search_partial=rows.search_partial,
        search_partial_queries=rows.search_partial_ids,
        judged=rows.judged,
        judged_queries=rows.judged_ids,
    )


def _coverage(
    per_metric: dict[str, dict[str, int]],
    found: _Found,
    unknown_kind: int,
    n_queries: int,
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
    if unknown_kind:
        warnings.append(f"{unknown_kind} query(ies) have neither a declared kind nor labels: treated as positive")
    status = manifest.get("status") or manifest.get("run_status")
    if status and status != "completed":
        warnings.append(f"the run's status is {status!r}, not 'completed'")
    return {
        "queries": n_queries,
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


JUDGED_RULE = (
    "Judge-based (report --qrels): relevance comes from judge-labelled qrels (judge-docs), not human labels; a "
    "positive query without a relevant label whose top K the judge graded in full is search (hit 0), one with an "
    "ungraded top-K document stays unknown"
)
_MOCK_WARNING = (
    "judge scores in this run come from the Foundry emulator's lexical stand-in, not from a model: "
    "they exercise the pipeline, they do not judge the answers"
)


@dataclass
class _Built:
    """A report's pieces before the model is assembled."""

    run_in: _RunInput
    params: Params
    run: RunColumns
    negative: np.ndarray  # per query: its kind is negative
    found: _Found
    infos: list[MetricInfo]
    scores: dict[str, ScoreColumn]
    local: LocalColumns
    warnings: list[str]


def _read(
    run_dir: str | os.PathLike[str], stage_k: int | None, relabel: Callable[[Any], Any] | None = None
) -> tuple[_Built, dict[str, EvaluatorSpec | None]]:
    """The run's columns (sealed on the first read of a folder of an earlier version; with ``relabel``, sealed
    afresh with the records' labels replaced), its counts checked."""
    run_in = _open_run(run_dir)
    run = RunColumns.open(run_dir, stage_k=stage_k, plan=run_in.plan, relabel=relabel)
    params, specs = _params(run_in.plan, run.params)
    warnings: list[str] = []
    n_rows = run.n_queries
    n_results, errored_rows = run.result_counts()
    run_in.folder.check_consistent(results=n_results, rows=n_rows)
    out_of_range, duplicates = run.anomalies()
    if out_of_range:
        warnings.append(f"{out_of_range} result row(s) point at a dataset row that does not exist: ignored")
    if duplicates:
        warnings.append(f"{duplicates} duplicated result row(s) (same row, criterion, metric): the last one kept")
    observed, evaluator_of = run.observed()
    evaluators = {**evaluator_of, **{c.name: c.evaluator for c in run_in.plan.criteria}}
    found = _Found(observed, evaluators, n_results, errored_rows)
    negative = run.mask_where("kind = 'negative'")
    expected = _expected(run_in.plan, specs, found)
    local = LocalColumns(run, run.local_keys)
    infos = _metric_infos(local.keys_, expected, found, params)
    scores = _score_columns(expected, found, run)
    return _Built(run_in, params, run, negative, found, infos, scores, local, warnings), specs


def read_run(run_dir: str | os.PathLike[str], stage_k: int | None = None) -> tuple[_Built, dict[str, int]]:
    """A run's columns, metrics and parameters as the report reads them, and its queries per stage (the report's
    stage rule over every row), without building a report: no row kept, no canary, no queue (compare writes its
    tables from them and shows the stage counts in its sweep)."""
    b, specs = _read(run_dir, stage_k)
    stage = stream_rows(_row_inputs(b, specs), worst=0).stage
    return b, {s: int(np.count_nonzero(stage == k)) for k, s in enumerate(STAGES)}


def _row_inputs(b: _Built, specs: dict[str, EvaluatorSpec | None], judge_based: bool = False) -> RowInputs:
    judges = _answer_judges(b.params, specs, b.scores)
    stand_in = b.run_in.manifest.get("backend") == "mock"  # the emulator: its answer judges are a stand-in
    hit = f"hit@{b.params.stage_k}"
    return RowInputs(b.run, [*b.local.keys_, "n_rel"], b.scores, judges, hit, judge_based, stand_in)


@gc_paused()
def build_report(
    run_dir: str | os.PathLike[str],
    *,
    stage_k: int | None = None,
    queries_out: str | os.PathLike[str] | None = None,
    per_query: Literal["parquet", "jsonl"] = "parquet",
    worst: int = DEFAULT_WORST,
    table_rows: int = TABLE_ROWS,
    human_verdicts: str | os.PathLike[str] | None = None,
    repeats: Sequence[str | os.PathLike[str]] = (),
    trust: bool = True,
    label_targets: tuple[float, float] | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    relabel: Callable[[Any], Any] | None = None,
    judged_notes: Sequence[str] = (),
    judged_vs_human: dict[str, Any] | None = None,
) -> Report:
    """Read a run folder and merge its Foundry results with the local metrics into one ``Report``.

    ``queries_out``: write every per-query row there (one ``QueryRow`` per row, in dataset order; ``per_query``:
    Parquet, nested lists and structs as such, or JSON lines), by one query of the engine; the report references it
    (``per_query.path``). ``worst``: the worst queries kept per stage
    (``stages.worst``). Runs of at most ``table_rows`` queries keep every row in ``report.queries``; larger ones
    keep only the worst rows. ``human_verdicts`` (JSONL or CSV) and ``repeats`` (run folders of the same rows
    judged again) feed the "Can the judge be trusted?" section (``report._trust``; it says what is missing without
    them); ``trust=False`` leaves the section out (None) (compare, which never shows it). Steps: the run's columns
    (``columns.RunColumns``) → rows → sections, coverage, distributions, labelling queue, trust and provenance.
    ``progress(stage, done, total)`` is called as ``("report", step, 4)`` before the read, the rows, the sections
    and the trust pass, and once at the end. ``relabel`` (``report --qrels``: each record with a judge's labels in
    place of its own) makes every local metric and the stage attribution judge-based: each stage reason says so,
    the stage rules and the warnings say whose labels they are (``judged_notes``, e.g. a circularity warning).
    """
    step = progress or _no_progress
    step("report", 0, 4)
    b, specs = _read(run_dir, stage_k, relabel)
    b.warnings.extend(judged_notes)
    step("report", 1, 4)
    n_rows = b.run.n_queries
    keep = n_rows <= table_rows
    for col in b.scores.values():  # a metric's joins run once: its rows, aggregates and distribution read it
        if not col.positional:
            col.materialize()
    inp = _row_inputs(b, specs, judge_based=relabel is not None)
    rows = stream_rows(inp, worst=worst)
    wanted = None if keep else sorted({r for w in (rows.worst, rows.worst_ruled) for rs in w.values() for r in rs})
    with tempfile.TemporaryDirectory(prefix="foundry-bridge-rows-") as tmp:
        work = Path(tmp)
        if queries_out is None:  # only the rows the report shows
            write_rows(inp, work / "rows.parquet", wanted)
            shown = fetch_rows(inp, work / "rows.parquet", wanted)
        else:
            with atomic_open(queries_out, sweep=True) as fh:  # written where fh is, renamed into place
                made = Path(fh.name) if per_query == "parquet" else work / "rows.parquet"
                write_rows(inp, made)
                if per_query == "jsonl":
                    write_json_lines(inp, made, fh)
                shown = fetch_rows(inp, made, wanted)
    step("report", 2, 4)
    pq = PerQuery(
        path=None if queries_out is None else str(queries_out),
        format=per_query,
        rows=n_rows,
        complete=keep,
        worst_per_stage=worst,
    )
    report = _assemble(b, rows, pq, {r["row"]: r["query_id"] for r in shown})
    if relabel is not None:
        report.stages.rules = [*report.stages.rules, JUDGED_RULE]
    step("report", 3, 4)
    targets = label_targets or (PASS_RATE_HALF_WIDTH, SCORE_HALF_WIDTH)  # the label budget's half-widths
    report.trust = (
        trust_section(run_dir, human_verdicts, repeats=repeats, run=b.run, targets=targets) if trust else None
    )
    step("report", 4, 4)
    report.judged_vs_human = judged_vs_human
    report._queries = _adapter(QueryRow).validate_python(shown)
    report._columns = Columns(b.run, b.local, b.scores)
    records = partial(b.run_in.folder.records_at, plan=b.run_in.plan)  # the drilled rows' records, read at the end
    report._drill = build_drill(report, rows.worst_ruled if stand_in(report) else rows.worst, records)
    return report


def _no_progress(stage: str, done: int, total: int | None) -> None:
    """The ``progress`` callback when none is given."""


def _assemble(b: _Built, rows: RowsOut, per_query: PerQuery, ids: dict[int, str]) -> Report:
    m = _metrics(b)
    positive = _section("positive", b, m.sections["positive"], rows.stage)
    negative = _section("negative", b, m.sections["negative"], rows.stage)
    queue = Queue(b.run)
    unknown = b.run.count_where("kind_source = 'unknown'")
    coverage = _coverage(
        m.per_metric,
        b.found,
        unknown,
        b.run.n_queries,
        positive,
        negative,
        b.run_in.manifest,
        b.warnings,
        (queue.n_docs, queue.n_holes),
    )
    provenance = _provenance(b.run_in.run_dir, b.run_in.manifest, b.run_in.plan, b.run_in.fingerprint)
    if provenance.backend == "mock":
        b.warnings.insert(0, _MOCK_WARNING)
    report = Report(
        provenance=provenance,
        params=b.params,
        metrics=b.infos,
        coverage=coverage,
        positive=positive,
        negative=negative,
        negative_queries=_negative_section(b.run),
        stages=_stage_section(rows, b.params, ids),
        canaries=rows.canaries,
        canary_counts=rows.canary_counts,
        labelling_queue=_adapter(HoleEntry).validate_python(queue.entries(LIST_CAP)),
        distributions=m.distributions,
        per_query=per_query,
        warnings=b.warnings,
    )
    report._holes = queue
    return report


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

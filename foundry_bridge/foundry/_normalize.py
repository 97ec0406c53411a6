"""Output items → ``ResultRow`` s: one row per (dataset row, criterion, metric), errors kept as errors.

Rules (the shared ones live in ``foundry_bridge.wire``):
* a result with ``sample.error`` becomes a row with ``score=None`` and ``error="CODE: message"``
  (``wire.classify_service_error``: the service's missing-input failure is ``MISSING_INPUT``, as on the local
  backend);
* a result with no score and no error is an error too (``MISSING_SCORE``): a missing score is never a 0;
* an evaluator whose published output differs from its rows' metrics (``catalog.EvaluatorSpec.outputs``:
  ``builtin.document_retrieval`` 3) gives one row per row metric (``ndcg@3``, ``xdcg@3``, ``fidelity``, ...) from
  either shape: (v3, the default) one entry with the output metric ``document_retrieval`` (= ndcg@3) and the
  measures under ``properties`` (``<m>``, ``<m>_result``, ``<m>_passed``, ``<m>_threshold``); (v2) one result entry
  per measure. Both are read by ``wire.read_metric``: a null or NaN measure is ``NAN_SCORE``, as on the local
  backend. The service's spelling ``total_groundtruth_documents`` is read as ``total_ground_truth_documents``
  (``wire.canonical_key``);
* a criterion of the plan with no result in an item, and a dataset row with no output item, become error rows
  (``MISSING_RESULT`` / ``MISSING_ITEM``) so that every row has every criterion.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from ..catalog import CATALOG, EvaluatorSpec, MetricSpec
from ..mapping.plan import CriterionPlan
from ..results import ResultRow
from ..wire import (
    MetricReading,
    canonical_key,
    classify_service_error,
    finite_number,
    range_error,
    read_metric,
    to_bool,
    to_number,
)
from ._models import OutputItem, OutputResult, sample_error_text

logger = logging.getLogger("foundry_bridge.foundry")

__all__ = ["expand_result", "missing_rows", "normalize_item"]

_META_SUFFIXES = ("_result", "_passed", "_threshold", "_higher_is_better", "_reason", "_status")


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _row(**fields: Any) -> ResultRow:
    """A ResultRow from values already of the right types (no re-validation: 120k rows per 10k items)."""
    return ResultRow.model_construct(**fields)


def _reading_row(base: dict[str, Any], reading: MetricReading, reason: str | None, error: str | None) -> ResultRow:
    return _row(
        **base,
        metric=reading.metric,
        score=reading.score,
        label=reading.label,
        passed=reading.passed,
        threshold=reading.threshold,
        reason=reason,
        error=error or reading.error,
        properties=None,
    )


def _expand_properties(
    spec: EvaluatorSpec, res: dict[str, Any], base: dict[str, Any], error: str | None
) -> list[ResultRow]:
    """The v3 shape: one entry for the output metric, the row metrics under ``properties``."""
    props = {canonical_key(k): v for k, v in (res.get("properties") or {}).items()}
    names = [m.name for m in spec.metrics if m.name in props]
    names += [k for k in props if k not in names and not k.endswith(_META_SUFFIXES) and to_number(props[k]) is not None]
    reason = _str(res.get("reason"))
    return [_reading_row(base, read_metric(props, name, _metric(spec, name)), reason, error) for name in names]


def _metric(spec: EvaluatorSpec | None, name: str) -> MetricSpec | None:
    """The catalog's declaration of a row metric (its range), None when the evaluator or metric is not catalogued."""
    return next((m for m in spec.metrics if m.name == name), None) if spec is not None else None


def _per_metric(
    spec: EvaluatorSpec | None, res: dict[str, Any], base: dict[str, Any], metric: str, error: str | None
) -> ResultRow:
    """The v2 shape: one entry per row metric, read by the same rule as the properties shape."""
    keyed = {f"{metric}{suffix}": res.get(key) for suffix, key in (("_result", "label"), ("_passed", "passed"))}
    keyed[f"{metric}_threshold"] = res.get("threshold")
    if "score" in res:
        keyed[metric] = res["score"]
    return _reading_row(base, read_metric(keyed, metric, _metric(spec, metric)), _str(res.get("reason")), error)


def _expand_output(
    spec: EvaluatorSpec, res: dict[str, Any], base: dict[str, Any], same_as: str, error: str | None
) -> list[ResultRow]:
    """An entry for a published output metric that stands for the row metrics (v3 ``document_retrieval``): its
    properties' rows; when errored, one error row per row metric (as the v2 shape gives); when it has a score
    but no properties, the row metric it is ``same_as``."""
    if res.get("properties"):
        rows = _expand_properties(spec, res, base, error)
        if rows:
            return rows
    if error is not None:
        reason = _str(res.get("reason"))
        return [
            _row(**base, metric=m.name, score=None, label=None, passed=None, threshold=None, reason=reason, error=error)
            for m in spec.metrics
        ]
    return [_per_metric(spec, res, base, same_as, error)]


def expand_result(
    res: dict[str, Any] | OutputResult, *, row: int, query_id: str | None, evaluator: str
) -> list[ResultRow]:
    """The ResultRows of one result entry (several for an output metric with ``properties``)."""
    if isinstance(res, OutputResult):
        res = res.model_dump()
    error = classify_service_error(sample_error_text(res.get("sample")))
    name = str(res.get("name") or "")
    base = {"row": row, "query_id": query_id, "criterion": name, "evaluator": evaluator}
    metric = str(res.get("metric") or name)
    spec = CATALOG.get(evaluator)
    if spec is not None and spec.outputs:
        output = spec.output(metric)
        if output is not None and output.same_as is not None:
            return _expand_output(spec, res, base, output.same_as, error)
        metric = canonical_key(metric)
        if error is None:
            return [_per_metric(spec, res, base, metric, error)]
    metric = canonical_key(metric)
    score = _score(spec, metric, res.get("score"))
    passed = to_bool(res.get("passed"))
    out_of_range = range_error(_metric(spec, metric), score)
    if error is None and out_of_range is not None:
        score, passed, error = None, None, out_of_range
    if error is None and score is None:
        status = f" (status {res['status']})" if res.get("status") else ""
        error = f"MISSING_SCORE: the service returned no score{status}"
    props = res.get("properties")
    return [
        _row(
            **base,
            metric=metric,
            score=score,
            label=_str(res.get("label")),
            passed=passed,
            threshold=finite_number(res.get("threshold")),
            reason=_str(res.get("reason")),
            error=error,
            properties=dict(props) if isinstance(props, dict) and props else None,
        )
    ]


def _score(spec: EvaluatorSpec | None, metric: str, value: Any) -> float | None:
    """A finite score; a boolean metric (catalog kind ``boolean``) may be scored ``true``/``false``: 1 / 0."""
    if isinstance(value, bool) and spec is not None and metric in {m.name for m in spec.metrics}:
        return float(value) if spec.metric(metric).kind == "boolean" else None
    return finite_number(value)


def _local_row(item: dict[str, Any]) -> int | None:
    """The 0-based row of an output item inside its run: ``datasource_item_id``, else a numeric ``id`` - 1."""
    local = item.get("datasource_item_id")
    if isinstance(local, int) and not isinstance(local, bool):
        return local if local >= 0 else None
    if isinstance(local, str) and local.strip().isdigit():
        return int(local)
    ident = item.get("id")
    if isinstance(ident, (int, str)) and not isinstance(ident, bool) and str(ident).strip().isdigit():
        return int(ident) - 1 if int(ident) >= 1 else None
    return None


def normalize_item(
    item: dict[str, Any] | OutputItem,
    *,
    offset: int,
    criteria: Sequence[CriterionPlan],
    query_ids: Sequence[str | None],
) -> list[ResultRow]:
    """Rows for one output item (wire dict or model); ``offset`` is the first dataset row of its run."""
    if isinstance(item, OutputItem):
        item = item.model_dump(by_alias=True)
    local = _local_row(item)
    if local is None:
        # no row to put it on: not row 0 (that would give one row another's scores); the collector reports the
        # dataset row this item stood for as MISSING_ITEM
        logger.warning(
            "output item %r has no usable datasource_item_id (%r): its results are not attributed to a row",
            item.get("id"),
            item.get("datasource_item_id"),
        )
        return []
    row = offset + local
    source = item.get("datasource_item")
    query_id = source.get("query_id") if isinstance(source, dict) else None
    if query_id is None and 0 <= row < len(query_ids):
        query_id = query_ids[row]
    qid = _str(query_id)
    evaluators = {c.name: c.evaluator for c in criteria}
    out: list[ResultRow] = []
    seen: set[str] = set()
    for res in item.get("results") or []:
        if not isinstance(res, dict):
            continue
        name = str(res.get("name") or "")
        out.extend(expand_result(res, row=row, query_id=qid, evaluator=evaluators.get(name, "")))
        seen.add(name)
    for crit in criteria:
        if crit.name not in seen:
            out.append(_missing(row, qid, crit, "MISSING_RESULT: the output item has no result for it"))
    return out


def _missing(row: int, query_id: str | None, crit: CriterionPlan, error: str) -> ResultRow:
    spec = CATALOG.get(crit.evaluator)
    metric = spec.primary_metric if spec is not None else crit.name
    return ResultRow(
        row=row, query_id=query_id, criterion=crit.name, evaluator=crit.evaluator, metric=metric, error=error
    )


def missing_rows(
    rows: Iterable[int], *, criteria: Sequence[CriterionPlan], query_ids: Sequence[str | None]
) -> list[ResultRow]:
    """Error rows for dataset rows that have no output item at all."""
    return [
        _missing(r, query_ids[r] if r < len(query_ids) else None, c, "MISSING_ITEM: the run returned no output item")
        for r in rows
        for c in criteria
    ]

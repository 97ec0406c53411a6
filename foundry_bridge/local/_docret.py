"""``document_retrieval`` on this machine: the project's own metrics, normalized to one ResultRow per metric.

Uses ``foundry_bridge.metrics.document_retrieval_batch`` (exact parity with azure-ai-evaluation's
DocumentRetrievalEvaluator, the same code as the cloud builtin).
Both output shapes (1.17+ envelope with ``document_retrieval_properties``, and the older flat dict) are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..catalog import EvaluatorSpec
from ..errors import redact
from ..results import ResultRow
from ..wire import read_metric

__all__ = ["IMPLEMENTATION", "compute_document_retrieval", "docret_rows"]

IMPLEMENTATION = "foundry_bridge.metrics.docret"


def compute_document_retrieval(
    spec: EvaluatorSpec, rows: Sequence[dict[str, Any]], init: dict[str, Any]
) -> list[dict[str, Any] | str]:
    """Outputs for ``rows`` (each ``{retrieval_ground_truth, retrieved_documents}``); an error is a
    ``"CODE: message"`` string in place of the output dict."""
    from .._io import gc_paused
    from ..metrics import document_retrieval_batch

    params = {k: v for k, v in init.items() if k in spec.param_names}  # others, like a deployment, are ignored
    try:
        with gc_paused():  # millions of short-lived dicts: the cyclic GC would rescan the inputs over and over
            results = document_retrieval_batch(list(rows), **params)
    except Exception as exc:  # bad init params: every row fails with the same cause
        return [_error_text(exc)] * len(rows)
    return [r if isinstance(r, dict) else _error_text(r) for r in results]


def _error_text(exc: Any) -> str:
    message = str(getattr(exc, "message", "") or exc)
    text = " ".join(redact(message).split())
    category = getattr(exc, "category", None)  # ours: "missing_field" | "invalid_value" | "crash"; the library's: enum
    code = getattr(category, "name", category)
    if isinstance(code, str) and code and code.lower() != "crash":
        return f"{code.upper().replace(' ', '_')}: {text}"
    if isinstance(exc, BaseException):
        return f"INVALID_INPUT: {type(exc).__name__}: {text}"
    return f"INVALID_INPUT: {text}"


def _properties(spec: EvaluatorSpec, output: dict[str, Any]) -> dict[str, Any]:
    nested = output.get(spec.properties_key or "")  # version 3's shape; the older flat dict is the output itself
    return nested if isinstance(nested, dict) else output


def docret_rows(
    spec: EvaluatorSpec,
    *,
    row: int,
    query_id: str | None,
    criterion: str,
    output: dict[str, Any] | None,
    error: str | None,
) -> list[ResultRow]:
    """One ResultRow per catalog metric (``ndcg@3`` first), read by ``wire.read_metric`` (a NaN metric is
    ``NAN_SCORE``, an absent one ``MISSING_SCORE``, as on the cloud); an error gives one errored row per metric."""
    base: dict[str, Any] = {"row": row, "query_id": query_id, "criterion": criterion, "evaluator": spec.name}
    if output is None or error is not None:
        return [ResultRow(**base, metric=m.name, error=error or "INVALID_INPUT: no output") for m in spec.metrics]
    props = _properties(spec, output)  # the library's spelling is the catalog's: no service aliases to map
    return [
        ResultRow(**base, metric=m, score=score, label=label, passed=passed, threshold=threshold, error=err)
        for m, score, label, passed, threshold, err in (read_metric(props, m.name, m) for m in spec.metrics)
    ]

"""``document_retrieval`` on this machine: the project's own metrics, normalized to one ResultRow per metric.

Uses ``foundry_bridge.metrics.document_retrieval_batch`` (exact parity with azure-ai-evaluation's
DocumentRetrievalEvaluator, the same code as the cloud builtin).
Both output shapes (1.17+ envelope with ``document_retrieval_properties``, and the older flat dict) are read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..catalog import EvaluatorSpec
from ..errors import redact
from ..results import ResultRow

__all__ = ["IMPLEMENTATION", "compute_document_retrieval", "docret_rows"]

IMPLEMENTATION = "foundry_bridge.metrics.docret"


def _init_params(spec: EvaluatorSpec, init: dict[str, Any]) -> dict[str, Any]:
    """The criterion's init params that the evaluator takes (others, like a deployment name, are ignored)."""
    names = set(spec.param_names)
    return {k: v for k, v in init.items() if k in names}


def compute_document_retrieval(
    spec: EvaluatorSpec, rows: Sequence[dict[str, Any]], init: dict[str, Any]
) -> list[dict[str, Any] | str]:
    """Outputs for ``rows`` (each ``{retrieval_ground_truth, retrieved_documents}``); an error is a
    ``"CODE: message"`` string in place of the output dict."""
    from .._io import gc_paused
    from ..metrics import document_retrieval_batch

    params = _init_params(spec, init)
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


def _properties(output: dict[str, Any]) -> dict[str, Any]:
    nested = output.get("document_retrieval_properties")
    return nested if isinstance(nested, dict) else output


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def docret_rows(
    spec: EvaluatorSpec,
    *,
    row: int,
    query_id: str | None,
    criterion: str,
    output: dict[str, Any] | None,
    error: str | None,
) -> list[ResultRow]:
    """One ResultRow per catalog metric (``ndcg@3`` first); an error gives one errored row per metric."""
    base: dict[str, Any] = {"row": row, "query_id": query_id, "criterion": criterion, "evaluator": spec.name}
    if output is None or error is not None:
        return [ResultRow(**base, metric=m.name, error=error or "INVALID_INPUT: no output") for m in spec.metrics]
    props = _properties(output)
    rows = []
    for metric in spec.metrics:
        m = metric.name
        value = _number(props.get(m))
        label = props.get(f"{m}_result")
        label = label if label in ("pass", "fail") else None
        passed = props.get(f"{m}_passed")
        passed = passed if isinstance(passed, bool) else (label == "pass" if label else None)
        threshold = _number(props.get(f"{m}_threshold"))
        if value is None:
            err = f"MISSING_SCORE: no {m} value in the document_retrieval output"
            rows.append(ResultRow(**base, metric=m, threshold=threshold, error=err))
        elif math.isnan(value):
            err = f"NAN_SCORE: {m} is undefined for this row (e.g. fidelity when every label equals the minimum)"
            rows.append(ResultRow(**base, metric=m, label=label, passed=passed, threshold=threshold, error=err))
        else:
            rows.append(ResultRow(**base, metric=m, score=value, label=label, passed=passed, threshold=threshold))
    return rows

"""Foundry's ``builtin.document_retrieval``, computed locally with the numbers of azure-ai-evaluation 1.18.10.

``document_retrieval`` handles one query, ``document_retrieval_batch`` many: both through the one implementation,
``_docret_core`` (configuration with the catalog's defaults, messages, arithmetic, output dict), and both return
exactly what ``DocumentRetrievalEvaluator(**init_params)(...)`` returns (1.18 shape), quirks included; see
``docs/document_retrieval.md`` for the definitions and the list of quirks kept on purpose. Reading a JSONL file of
rows is the dataset layer's (``foundry_bridge.dataset.docret_jsonl``).

Inputs the library rejects raise :class:`DocumentRetrievalError` with the library's own message. Inputs on which the
library crashes with a non-validation exception (``AttributeError``, ``KeyError``, ``TypeError``, ...) raise it too,
with a message naming the problem and the library's exception (``library_exception``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..catalog import DOCUMENT_RETRIEVAL
from ._docret_core import METRICS, DocumentRetrievalError, evaluate_one, evaluate_or_error, make_config, row_inputs

__all__ = [
    "METRICS",
    "DocumentRetrievalError",
    "document_retrieval",
    "document_retrieval_batch",
    "flat_output",
    "normalize_output",
]


def document_retrieval(retrieval_ground_truth: Any, retrieved_documents: Any, **init_params: Any) -> dict[str, Any]:
    """Evaluate one query exactly as ``DocumentRetrievalEvaluator(**init_params)(...)`` (1.18 output shape).

    ``retrieval_ground_truth``: ``[{"document_id", "query_relevance_label"}]``; ``retrieved_documents``:
    ``[{"document_id", "relevance_score"}]`` (ranked by score, not by list order). Raises
    :class:`DocumentRetrievalError` for a bad init parameter or an input the library rejects or crashes on.
    """
    return evaluate_one(retrieval_ground_truth, retrieved_documents, make_config(init_params))


def document_retrieval_batch(rows: Iterable[Any], **init_params: Any) -> list[dict[str, Any] | DocumentRetrievalError]:
    """Evaluate many queries; one entry per row, in order.

    A row is a dict with ``retrieval_ground_truth`` and ``retrieved_documents`` (a plan item ``{"item": {...}}`` and
    a ``QueryRecord`` work too). Each entry is the dict :func:`document_retrieval` returns for that row, or the
    :class:`DocumentRetrievalError` it would raise (returned, not raised). A bad init parameter raises.
    """
    cfg = make_config(init_params)
    return [evaluate_or_error(*row_inputs(row), cfg) for row in rows]


def flat_output(result: Mapping[str, Any]) -> dict[str, Any]:
    """The pre-1.17 flat shape: the nine metrics, then ``<m>_result``, ``<m>_threshold``, ``<m>_higher_is_better``.

    Accepts a 1.18 result (envelope + ``document_retrieval_properties``) or an already flat one.
    """
    props = result.get("document_retrieval_properties", result)
    if not isinstance(props, Mapping) or "ndcg@3" not in props:
        raise ValueError("not a document_retrieval result: no 'ndcg@3' and no 'document_retrieval_properties'")
    flat: dict[str, Any] = {m: props[m] for m in METRICS if m in props}
    for m in METRICS:
        for suffix in ("_result", "_threshold", "_higher_is_better"):
            if m + suffix in props:
                flat[m + suffix] = props[m + suffix]
    return flat


_ALIASES = {"total_groundtruth_documents": "total_ground_truth_documents"}


def _canonical(name: str) -> str:
    for alias, canonical in _ALIASES.items():
        if name.startswith(alias):
            return canonical + name[len(alias) :]
    return name


_OUTPUT = DOCUMENT_RETRIEVAL.outputs[0]  # v3's one published metric, ``document_retrieval`` (= ndcg@3)
_PROPERTIES = f"{_OUTPUT.name}_properties"  # where v3 puts the nine measures


def normalize_output(data: Any, *, with_verdicts: bool = False) -> dict[str, Any]:
    """Read a document-retrieval result in any known shape; return ``{metric: value}`` for the metrics present.

    Shapes read: the 1.18 evaluator dict, which is version 3's (envelope + ``document_retrieval_properties``);
    the flat pre-1.17 dict;
    an ``evaluate()`` row (keys prefixed ``outputs.<alias>.``); a Foundry output-item result with ``properties``
    (version 3's single entry) or a list of version 2's per-metric Foundry results (``{"metric": "ndcg@3", ...}``).
    The docs' spelling ``total_groundtruth_documents`` is read as ``total_ground_truth_documents``.
    ``document_retrieval`` (the primary score) is filled from ``ndcg@3`` when absent, and vice versa.
    With ``with_verdicts``, ``<m>_passed`` booleans are added where the input says pass/fail.
    """
    out: dict[str, Any] = {}
    verdicts: dict[str, Any] = {}
    if isinstance(data, list | tuple):  # Foundry per-metric (or single) result entries
        for entry in data:
            if isinstance(entry, Mapping):
                part = normalize_output(entry, with_verdicts=with_verdicts)
                out.update(part)
        return out
    if not isinstance(data, Mapping):
        raise ValueError(f"cannot read a document_retrieval result from {type(data).__name__}")
    if "metric" in data and ("score" in data or "properties" in data):  # a Foundry result entry
        metric = _canonical(str(data["metric"]))
        props = data.get("properties")
        if isinstance(props, Mapping):
            out.update(normalize_output(props, with_verdicts=with_verdicts))
        if metric in METRICS or metric == _OUTPUT.name:
            out[metric] = data.get("score")
            passed = data.get("passed")
            if passed is None and data.get("label") in ("pass", "fail"):
                passed = data.get("label") == "pass"
            if with_verdicts and passed is not None:
                verdicts[metric + "_passed"] = bool(passed)
        _fill_primary(out)
        out.update(verdicts)
        return out
    # strip an evaluate() prefix such as "outputs.docret." (metric names hold no dot)
    keys = {_canonical(k.rsplit(".", 1)[-1]): v for k, v in data.items() if isinstance(k, str)}
    props = keys.get(_PROPERTIES)
    if isinstance(props, Mapping):
        out.update(normalize_output(props, with_verdicts=with_verdicts))
    for m in (*METRICS, _OUTPUT.name):
        if m in keys and m not in out:
            out[m] = keys[m]
        if with_verdicts:
            if m + "_passed" in keys:
                verdicts[m + "_passed"] = bool(keys[m + "_passed"])
            elif keys.get(m + "_result") in ("pass", "fail"):
                verdicts[m + "_passed"] = keys[m + "_result"] == "pass"
    _fill_primary(out)
    out.update(verdicts)
    return out


def _fill_primary(out: dict[str, Any]) -> None:
    primary, same_as = _OUTPUT.name, str(_OUTPUT.same_as)
    if primary not in out and same_as in out:
        out[primary] = out[same_as]
    elif same_as not in out and primary in out:
        out[same_as] = out[primary]

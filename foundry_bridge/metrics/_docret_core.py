"""The one implementation of document_retrieval, behind ``docret.document_retrieval`` and ``document_retrieval_batch``.

Configuration (init parameters validated as the evaluator's constructor does, defaults read from the catalog's
``DOCUMENT_RETRIEVAL``), the library's messages, the error type, the fidelity weight table, the one-query
arithmetic and the 1.18 output dict. Numbers are those of azure-ai-evaluation 1.18.10, quirks included (see
``docs/document_retrieval.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Any

from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.errors import InputError
from foundry_bridge.wire import passes

__all__ = [
    "DEFAULTS",
    "MAX_ITEMS",
    "METRICS",
    "Config",
    "DocumentRetrievalError",
    "evaluate_one",
    "evaluate_or_error",
    "make_config",
    "result_dict",
    "row_inputs",
    "weight_table",
]

#: The nine metrics, in the library's key order, and their directions (holes and holes_ratio: lower is better).
METRICS: tuple[str, ...] = tuple(m.name for m in DOCUMENT_RETRIEVAL.metrics)
HIGHER_IS_BETTER: tuple[bool, ...] = tuple(m.higher_is_better for m in DOCUMENT_RETRIEVAL.metrics)

_SPECS = DOCUMENT_RETRIEVAL.metrics
#: The evaluator's init parameters and their defaults (the catalog's).
DEFAULTS: dict[str, Any] = {p.name: p.default for p in DOCUMENT_RETRIEVAL.params}

#: Widest label range (max - min) this module builds the fidelity weight table for.
MAX_LABEL_RANGE = 1_000_000
#: Most items the library accepts in either list.
MAX_ITEMS = 10_000

# The library's messages, verbatim: callers match on them.
MSG_NO_INPUT = "DocumentRetrievalEvaluator: Either 'conversation' or individual inputs must be provided."
MSG_GT_EMPTY = (
    "'retrieval_ground_truth' parameter must contain at least one item. "
    "Check your data input to be sure that each input record has ground truth defined."
)
MSG_GT_FIELDS = (
    "Invalid input data was found in the retrieval ground truth. "
    "Ensure that all items in the 'retrieval_ground_truth' array contain "
    "'document_id' and 'query_relevance_label' properties."
)
MSG_LABEL_INT = "Query relevance labels must be integer values."
MSG_LABEL_MIN = (
    "A query relevance label less than the configured minimum value was detected in the evaluation input data. "
    "Check the range of ground truth label values in the input data and set the value of ground_truth_label_min to "
    "the appropriate value for your data."
)
MSG_LABEL_MAX = (
    "A query relevance label greater than the configured maximum value was detected in the evaluation input data. "
    "Check the range of ground truth label values in the input data and set the value of ground_truth_label_max to "
    "the appropriate value for your data."
)
MSG_RET_FIELDS = (
    "Invalid input data was found in the retrieved documents. "
    "Ensure that all items in the 'retrieved_documents' array contain "
    "'document_id' and 'relevance_score' properties."
)
MSG_SCORE_NUM = "Retrieved document relevance score must be a numerical value."
MSG_TOO_MANY = "'retrieval_ground_truth' and 'retrieved_documents' inputs should contain no more than 10000 items."
MSG_MIN_INT = "The ground truth label minimum must be an integer value."
MSG_MAX_INT = "The ground truth label maximum must be an integer value."
MSG_MIN_MAX = "The ground truth label maximum must be strictly greater than the ground truth label minimum."


class DocumentRetrievalError(InputError):
    """An input ``DocumentRetrievalEvaluator`` rejects or cannot evaluate (a ``ValueError``).

    ``str(err)`` is the message. ``category`` is ``"missing_field"`` or ``"invalid_value"`` for the library's own
    validation errors (the message is then the library's, verbatim), ``"crash"`` where the library fails with
    another exception, or ``"unsupported"`` (label ranges wider than ``MAX_LABEL_RANGE``); ``library_exception``
    names what the library raises (``"EvaluationException"``, ``"TypeError"``, ``"KeyError"``, ...).
    """

    def __init__(
        self, message: str, *, category: str = "invalid_value", library_exception: str = "EvaluationException"
    ) -> None:
        self.category = category
        self.library_exception = library_exception
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (self.message, self.category, self.library_exception))


def _rebuild_error(message: str, category: str, library_exception: str) -> DocumentRetrievalError:
    return DocumentRetrievalError(message, category=category, library_exception=library_exception)


def _crash(message: str, exc: BaseException | str) -> DocumentRetrievalError:
    name = exc if isinstance(exc, str) else type(exc).__name__
    detail = "" if isinstance(exc, str) else f": {exc}"
    return DocumentRetrievalError(
        f"{message} (azure-ai-evaluation fails here with {name}{detail})",
        category="crash",
        library_exception=name,
    )


# --------------------------------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True, slots=True)
class Config:
    lo: int
    hi: int
    thresholds: tuple[Any, ...]  # one per metric, in ``METRICS`` order (holes, holes_ratio: the catalog's 0)
    primary: Any  # threshold of the envelope verdict


def make_config(init_params: Mapping[str, Any]) -> Config:
    """Validate init parameters the way the evaluator's constructor does."""
    for name in init_params:
        if name not in DEFAULTS:
            raise DocumentRetrievalError(
                f"DocumentRetrievalEvaluator.__init__() got an unexpected keyword argument {name!r}",
                library_exception="TypeError",
            )
    p = {**DEFAULTS, **init_params}
    lo, hi = p["ground_truth_label_min"], p["ground_truth_label_max"]
    if not isinstance(lo, int):
        raise DocumentRetrievalError(MSG_MIN_INT)
    if not isinstance(hi, int):
        raise DocumentRetrievalError(MSG_MAX_INT)
    try:
        bad_order = lo >= hi
    except Exception as exc:  # exotic int subclasses
        raise _crash("ground_truth_label_min and ground_truth_label_max cannot be compared", exc) from exc
    if bad_order:
        raise DocumentRetrievalError(MSG_MIN_MAX)
    thresholds = tuple(p[m.threshold_param] if m.threshold_param else m.default_threshold for m in _SPECS)
    primary = p["ndcg_threshold"] if p["ndcg_threshold"] is not None else 0.5
    return Config(lo, hi, thresholds, primary)


@lru_cache(maxsize=64)
def weight_table(lo: int, hi: int) -> dict[str, float]:
    """Fidelity weight of each label *string*, in the library's (string-sorted) summation order.

    The library counts labels under ``str(label)`` keys, sorts the keys as strings ("1" < "10" < "2") and pairs them
    with the weights ``2**(i+1) - 1`` for i = min+1 .. max in numeric order; for max <= 9 this is the intended weight.
    """
    start = lo + 1
    if hi - start + 1 > MAX_LABEL_RANGE:
        raise DocumentRetrievalError(
            f"The label range ground_truth_label_min..ground_truth_label_max spans more than {MAX_LABEL_RANGE:,} "
            "values; foundry_bridge does not build the fidelity weight table for it.",
            category="unsupported",
            library_exception="none (the library is merely very slow)",
        )
    if hi + 1 >= 1024:
        raise _crash(
            "ground_truth_label_max >= 1023: the fidelity weight 2**(max+1) - 1 overflows a float", "OverflowError"
        )
    keys = sorted(str(v) for v in range(start, hi + 1))
    return {key: math.ldexp(1.0, start + i + 1) - 1.0 for i, key in enumerate(keys)}


# --------------------------------------------------------------------------------------------------------------------
# one query, plain Python

LOG2 = (math.log2(2), math.log2(3), math.log2(4))
XDCG_DISCOUNT = (math.pow(0.6, 0), math.pow(0.6, 1), math.pow(0.6, 2))
XDCG_DENOMINATOR = sum(XDCG_DISCOUNT)


def _validate(gt: Any, ret: Any, cfg: Config) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """The library's input checks, in its order; returns (id, label) and (id, score) pairs."""
    if gt is None or ret is None:
        raise DocumentRetrievalError(MSG_NO_INPUT)
    try:
        empty = not gt
    except Exception as exc:
        raise _crash("'retrieval_ground_truth' must be a list", exc) from exc
    if empty:
        raise DocumentRetrievalError(MSG_GT_EMPTY, category="missing_field")
    qrels: list[tuple[Any, Any]] = []
    results: list[tuple[Any, Any]] = []
    reading = "retrieval_ground_truth"
    try:
        for item in gt:
            doc = item.get("document_id")
            label = item.get("query_relevance_label")
            if doc is None or label is None:
                raise DocumentRetrievalError(MSG_GT_FIELDS, category="missing_field")
            if not isinstance(label, int):
                raise DocumentRetrievalError(MSG_LABEL_INT)
            if label < cfg.lo:
                raise DocumentRetrievalError(MSG_LABEL_MIN)
            if label > cfg.hi:
                raise DocumentRetrievalError(MSG_LABEL_MAX)
            qrels.append((doc, label))
        reading = "retrieved_documents"
        for item in ret if isinstance(ret, list) else ():  # anything else is silently an empty result list
            doc = item.get("document_id")
            score = item.get("relevance_score")
            if doc is None or score is None:
                raise DocumentRetrievalError(MSG_RET_FIELDS, category="missing_field")
            if not isinstance(score, (float, int)):
                raise DocumentRetrievalError(MSG_SCORE_NUM)
            results.append((doc, score))
    except DocumentRetrievalError:
        raise
    except Exception as exc:
        raise _crash(f"'{reading}' must be a list of objects (dicts)", exc) from exc
    if len(qrels) > MAX_ITEMS or len(results) > MAX_ITEMS:
        raise DocumentRetrievalError(MSG_TOO_MANY)
    return qrels, results


def _gain_sum(labels: Sequence[Any]) -> float:
    """DCG@3 with gain 2**label - 1 and discount log2(rank + 1)."""
    try:
        return sum((math.ldexp(1.0, label) - 1.0) / LOG2[r] for r, label in enumerate(labels[:3]))
    except OverflowError as exc:
        raise _crash("A relevance label >= 1024 makes the gain 2**label overflow", exc) from exc


def _fidelity_weight(labels: Iterable[Any], cfg: Config) -> Any:
    start = cfg.lo + 1
    counts: dict[str, int] = {}
    for label in labels:
        if label >= start:
            key = str(label)
            counts[key] = counts.get(key, 0) + 1
    table = weight_table(cfg.lo, cfg.hi)
    total: Any = 0
    for key in sorted(counts):
        weight = table.get(key)
        if weight is None:
            if key in ("True", "False"):
                raise _crash(f"Label {key} is a bool, which the fidelity count cannot place", f"KeyError: '{key}'")
            raise _crash(
                f"Label {key} lies outside ground_truth_label_min..ground_truth_label_max in the fidelity count "
                "(a retrieved document without a label counts as label 0, above a negative maximum)",
                f"KeyError: '{key}'",
            )
        total += counts[key] * weight
    return total


def _metrics_one(qrels: list[tuple[Any, Any]], results: list[tuple[Any, Any]], cfg: Config) -> tuple[Any, ...]:
    """The nine metric values for one validated query."""
    n_ret, n_gt = len(results), len(qrels)
    if n_ret == 0:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, n_ret, n_gt)
    try:
        label_of = dict(qrels)  # a later duplicate overwrites the label, the key keeps its first position
        score_of = dict(results)
    except TypeError as exc:
        raise _crash("document_id values must be hashable (strings or numbers)", exc) from exc
    ranked = sorted(score_of.items(), key=itemgetter(1), reverse=True)  # stable: ties keep list order
    found = [label_of.get(doc, 0) for doc, _ in ranked]  # a hole counts as label 0
    holes = sum(1 for doc, _ in ranked if doc not in label_of)
    holes_ratio = holes / float(n_ret)
    if not any(found):
        return (0, 0, 0, 0, 0, holes, holes_ratio, n_ret, n_gt)
    ideal = sorted(label_of.values(), reverse=True)
    dcg = _gain_sum(found)
    idcg = _gain_sum(ideal)
    if idcg == 0:
        raise _crash(
            "The ideal DCG@3 is 0 (the top 3 ground-truth labels are all 0 while a negative label was retrieved)",
            "ZeroDivisionError: float division by zero",
        )
    ndcg = dcg / float(idcg)
    xdcg = sum(25 * label * XDCG_DISCOUNT[r] for r, label in enumerate(found[:3])) / float(XDCG_DENOMINATOR)
    w_found = _fidelity_weight(found, cfg)
    w_ideal = _fidelity_weight(ideal, cfg)
    fidelity = math.nan if w_ideal == 0 else w_found / float(w_ideal)
    return (ndcg, xdcg, fidelity, found[0], max(found[:3]), holes, holes_ratio, n_ret, n_gt)


_VERDICT_KEYS = tuple((f"{m}_result", f"{m}_passed", f"{m}_threshold", f"{m}_higher_is_better") for m in METRICS)


def result_dict(values: Sequence[Any], cfg: Config) -> dict[str, Any]:
    """Assemble the 1.18 output dict (envelope + properties) from the nine values: the values, then per metric
    ``_result``, ``_passed`` (``wire.passes``: value >= threshold; lower-is-better metrics: value <= threshold; a
    NaN fidelity fails), ``_threshold`` and ``_higher_is_better``. The envelope's score is ndcg@3, passed at
    ``cfg.primary``."""
    props = dict(zip(METRICS, values, strict=True))
    for (result, passed_key, threshold_key, higher_key), value, threshold, higher in zip(
        _VERDICT_KEYS, values, cfg.thresholds, HIGHER_IS_BETTER, strict=True
    ):
        passed = passes(value, threshold, higher)
        props[result] = "pass" if passed else "fail"
        props[passed_key] = passed
        props[threshold_key] = threshold
        props[higher_key] = higher
    score = float(values[0])
    passed = passes(score, cfg.primary)
    return {
        "document_retrieval": score,
        "document_retrieval_score": score,
        "document_retrieval_passed": passed,
        "document_retrieval_result": "pass" if passed else "fail",
        "document_retrieval_reason": None,
        "document_retrieval_status": "completed",
        "document_retrieval_threshold": cfg.primary,
        "document_retrieval_properties": props,
    }


def evaluate_one(gt: Any, ret: Any, cfg: Config) -> dict[str, Any]:
    qrels, results = _validate(gt, ret, cfg)
    try:
        values = _metrics_one(qrels, results, cfg)
    except DocumentRetrievalError:
        raise
    except Exception as exc:  # whatever else the same operations raise in the library
        raise _crash("azure-ai-evaluation cannot evaluate this input", exc) from exc
    try:
        return result_dict(values, cfg)
    except TypeError as exc:  # e.g. a None threshold: the library fails on every call
        raise _crash("Every threshold must be a number", exc) from exc


# --------------------------------------------------------------------------------------------------------------------
# many queries


def row_inputs(row: Any) -> tuple[Any, Any]:
    """(ground truth, retrieved) of a batch row: a dict, a ``{"item": {...}}`` plan item, or a ``QueryRecord``."""
    if type(row) is dict and "retrieval_ground_truth" in row:
        return row["retrieval_ground_truth"], row.get("retrieved_documents")
    if isinstance(row, Mapping):
        if "retrieval_ground_truth" not in row and "retrieved_documents" not in row and "item" in row:
            row = row["item"]
            if not isinstance(row, Mapping):
                return None, None
        return row.get("retrieval_ground_truth"), row.get("retrieved_documents")
    gt = getattr(row, "retrieval_ground_truth", None)
    ret = getattr(row, "retrieved_documents", None)
    if gt is not None and not isinstance(gt, list | tuple):
        return gt, ret
    gt = None if gt is None else [_as_dict(g, ("document_id", "query_relevance_label")) for g in gt]
    if isinstance(ret, list | tuple):
        ret = [_as_dict(d, ("document_id", "relevance_score")) for d in ret]
    return gt, ret


def _as_dict(obj: Any, fields: tuple[str, str]) -> Any:
    if isinstance(obj, Mapping):
        return obj
    return {f: getattr(obj, f, None) for f in fields}


def evaluate_or_error(gt: Any, ret: Any, cfg: Config) -> dict[str, Any] | DocumentRetrievalError:
    try:
        return evaluate_one(gt, ret, cfg)
    except DocumentRetrievalError as exc:
        return exc

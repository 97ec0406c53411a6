"""Foundry's ``builtin.document_retrieval``, computed locally with the numbers of azure-ai-evaluation 1.18.10.

``document_retrieval`` handles one query in plain Python; ``document_retrieval_batch`` handles many with numpy
(``_docret_vector``) and hands the rare rows numpy cannot reproduce bit for bit back to the one-query path.
Both return exactly what ``DocumentRetrievalEvaluator(**init_params)(...)`` returns (1.18 shape), quirks included;
see ``docs/document_retrieval.md`` for the definitions and the list of quirks kept on purpose.

Inputs the library rejects raise :class:`DocumentRetrievalError` with the library's own message. Inputs on which the
library crashes with a non-validation exception (``AttributeError``, ``KeyError``, ``TypeError``, ...) raise it too,
with a message naming the problem and the library's exception (``library_exception``).
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from typing import Any

from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.errors import DatasetError, InputError

__all__ = [
    "METRICS",
    "DocumentRetrievalError",
    "document_retrieval",
    "document_retrieval_batch",
    "document_retrieval_jsonl",
    "flat_output",
    "normalize_output",
]

#: The nine metrics, in the library's key order.
METRICS: tuple[str, ...] = tuple(m.name for m in DOCUMENT_RETRIEVAL.metrics)  # the library's key order

_DEFAULTS: dict[str, Any] = {
    "ground_truth_label_min": 0,
    "ground_truth_label_max": 4,
    "ndcg_threshold": 0.5,
    "xdcg_threshold": 50.0,
    "fidelity_threshold": 0.5,
    "top1_relevance_threshold": 50.0,
    "top3_max_relevance_threshold": 50.0,
    "total_retrieved_documents_threshold": 50,
    "total_ground_truth_documents_threshold": 50,
}
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


def _missing(message: str) -> DocumentRetrievalError:
    return DocumentRetrievalError(message, category="missing_field")


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
class _Config:
    lo: int
    hi: int
    thresholds: tuple[Any, ...]  # ndcg, xdcg, fidelity, top1, top3, total_retrieved, total_ground_truth
    primary: Any  # threshold of the envelope verdict
    numeric_thresholds: bool  # every threshold a plain int/float/bool: numpy may compare


def _config(init_params: Mapping[str, Any]) -> _Config:
    """Validate init parameters the way the evaluator's constructor does."""
    for name in init_params:
        if name not in _DEFAULTS:
            raise DocumentRetrievalError(
                f"DocumentRetrievalEvaluator.__init__() got an unexpected keyword argument {name!r}",
                category="invalid_value",
                library_exception="TypeError",
            )
    p = {**_DEFAULTS, **init_params}
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
    thresholds = (
        p["ndcg_threshold"],
        p["xdcg_threshold"],
        p["fidelity_threshold"],
        p["top1_relevance_threshold"],
        p["top3_max_relevance_threshold"],
        p["total_retrieved_documents_threshold"],
        p["total_ground_truth_documents_threshold"],
    )
    primary = p["ndcg_threshold"] if p["ndcg_threshold"] is not None else 0.5
    numeric = all(type(t) in (int, float, bool) and (type(t) is not int or abs(t) <= 2**53) for t in thresholds)
    return _Config(lo, hi, thresholds, primary, numeric)


@lru_cache(maxsize=64)
def _weight_table(lo: int, hi: int) -> dict[str, float]:
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

_LOG2 = (math.log2(2), math.log2(3), math.log2(4))
_XDCG_DISCOUNT = (math.pow(0.6, 0), math.pow(0.6, 1), math.pow(0.6, 2))
_XDCG_DENOMINATOR = sum(_XDCG_DISCOUNT)


def _second(pair: tuple[Any, Any]) -> Any:
    return pair[1]


def _validate(gt: Any, ret: Any, cfg: _Config) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """The library's input checks, in its order; returns (id, label) and (id, score) pairs."""
    if gt is None or ret is None:
        raise DocumentRetrievalError(MSG_NO_INPUT)
    try:
        empty = not gt
    except Exception as exc:
        raise _crash("'retrieval_ground_truth' must be a list", exc) from exc
    if empty:
        raise _missing(MSG_GT_EMPTY)
    qrels: list[tuple[Any, Any]] = []
    try:
        for item in gt:
            doc = item.get("document_id")
            label = item.get("query_relevance_label")
            if doc is None or label is None:
                raise _missing(MSG_GT_FIELDS)
            if not isinstance(label, int):
                raise DocumentRetrievalError(MSG_LABEL_INT)
            if label < cfg.lo:
                raise DocumentRetrievalError(MSG_LABEL_MIN)
            if label > cfg.hi:
                raise DocumentRetrievalError(MSG_LABEL_MAX)
            qrels.append((doc, label))
    except DocumentRetrievalError:
        raise
    except Exception as exc:
        raise _crash("'retrieval_ground_truth' must be a list of objects (dicts)", exc) from exc
    results: list[tuple[Any, Any]] = []
    if isinstance(ret, list):  # anything else is silently an empty result list, as in the library
        try:
            for item in ret:
                doc = item.get("document_id")
                score = item.get("relevance_score")
                if doc is None or score is None:
                    raise _missing(MSG_RET_FIELDS)
                if not isinstance(score, (float, int)):
                    raise DocumentRetrievalError(MSG_SCORE_NUM)
                results.append((doc, score))
        except DocumentRetrievalError:
            raise
        except Exception as exc:
            raise _crash("'retrieved_documents' must be a list of objects (dicts)", exc) from exc
    if len(qrels) > MAX_ITEMS or len(results) > MAX_ITEMS:
        raise DocumentRetrievalError(MSG_TOO_MANY)
    return qrels, results


def _gain_sum(labels: Sequence[Any]) -> float:
    """DCG@3 with gain 2**label - 1 and discount log2(rank + 1)."""
    try:
        return sum((math.ldexp(1.0, label) - 1.0) / _LOG2[r] for r, label in enumerate(labels[:3]))
    except OverflowError as exc:
        raise _crash("A relevance label >= 1024 makes the gain 2**label overflow", exc) from exc


def _fidelity_weight(labels: Iterable[Any], cfg: _Config) -> Any:
    start = cfg.lo + 1
    counts: dict[str, int] = {}
    for label in labels:
        if label >= start:
            key = str(label)
            counts[key] = counts.get(key, 0) + 1
    table = _weight_table(cfg.lo, cfg.hi)
    total: Any = 0
    for key in sorted(counts):
        weight = table.get(key)
        if weight is None:
            if isinstance(key, str) and key in ("True", "False"):
                raise _crash(f"Label {key} is a bool, which the fidelity count cannot place", f"KeyError: '{key}'")
            raise _crash(
                f"Label {key} lies outside ground_truth_label_min..ground_truth_label_max in the fidelity count "
                "(a retrieved document without a label counts as label 0, above a negative maximum)",
                f"KeyError: '{key}'",
            )
        total += counts[key] * weight
    return total


def _metrics_one(qrels: list[tuple[Any, Any]], results: list[tuple[Any, Any]], cfg: _Config) -> tuple[Any, ...]:
    """The nine metric values for one validated query."""
    n_ret, n_gt = len(results), len(qrels)
    if n_ret == 0:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, n_ret, n_gt)
    try:
        label_of = dict(qrels)  # a later duplicate overwrites the label, the key keeps its first position
        score_of = dict(results)
    except TypeError as exc:
        raise _crash("document_id values must be hashable (strings or numbers)", exc) from exc
    ranked = sorted(score_of.items(), key=_second, reverse=True)  # stable: ties keep list order
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
    xdcg = sum(25 * label * _XDCG_DISCOUNT[r] for r, label in enumerate(found[:3])) / float(_XDCG_DENOMINATOR)
    w_found = _fidelity_weight(found, cfg)
    w_ideal = _fidelity_weight(ideal, cfg)
    fidelity = math.nan if w_ideal == 0 else w_found / float(w_ideal)
    return (ndcg, xdcg, fidelity, found[0], max(found[:3]), holes, holes_ratio, n_ret, n_gt)


def _result(values: Sequence[Any], cfg: _Config) -> dict[str, Any]:
    """Assemble the 1.18 output dict (envelope + properties) from the nine values."""
    ndcg, xdcg, fid, top1, top3, holes, ratio, n_ret, n_gt = values
    t_ndcg, t_xdcg, t_fid, t_top1, t_top3, t_ret, t_gt = cfg.thresholds
    p_ndcg = ndcg >= t_ndcg
    p_xdcg = xdcg >= t_xdcg
    p_fid = fid >= t_fid
    p_top1 = top1 >= t_top1
    p_top3 = top3 >= t_top3
    p_holes = holes <= 0
    p_ratio = ratio <= 0
    p_ret = n_ret >= t_ret
    p_gt = n_gt >= t_gt
    score = float(ndcg)
    passed = score >= cfg.primary
    return {
        "document_retrieval": score,
        "document_retrieval_score": score,
        "document_retrieval_passed": passed,
        "document_retrieval_result": "pass" if passed else "fail",
        "document_retrieval_reason": None,
        "document_retrieval_status": "completed",
        "document_retrieval_threshold": cfg.primary,
        "document_retrieval_properties": {
            "ndcg@3": ndcg,
            "xdcg@3": xdcg,
            "fidelity": fid,
            "top1_relevance": top1,
            "top3_max_relevance": top3,
            "holes": holes,
            "holes_ratio": ratio,
            "total_retrieved_documents": n_ret,
            "total_ground_truth_documents": n_gt,
            "ndcg@3_result": "pass" if p_ndcg else "fail",
            "ndcg@3_passed": p_ndcg,
            "ndcg@3_threshold": t_ndcg,
            "ndcg@3_higher_is_better": True,
            "xdcg@3_result": "pass" if p_xdcg else "fail",
            "xdcg@3_passed": p_xdcg,
            "xdcg@3_threshold": t_xdcg,
            "xdcg@3_higher_is_better": True,
            "fidelity_result": "pass" if p_fid else "fail",
            "fidelity_passed": p_fid,
            "fidelity_threshold": t_fid,
            "fidelity_higher_is_better": True,
            "top1_relevance_result": "pass" if p_top1 else "fail",
            "top1_relevance_passed": p_top1,
            "top1_relevance_threshold": t_top1,
            "top1_relevance_higher_is_better": True,
            "top3_max_relevance_result": "pass" if p_top3 else "fail",
            "top3_max_relevance_passed": p_top3,
            "top3_max_relevance_threshold": t_top3,
            "top3_max_relevance_higher_is_better": True,
            "holes_result": "pass" if p_holes else "fail",
            "holes_passed": p_holes,
            "holes_threshold": 0,
            "holes_higher_is_better": False,
            "holes_ratio_result": "pass" if p_ratio else "fail",
            "holes_ratio_passed": p_ratio,
            "holes_ratio_threshold": 0,
            "holes_ratio_higher_is_better": False,
            "total_retrieved_documents_result": "pass" if p_ret else "fail",
            "total_retrieved_documents_passed": p_ret,
            "total_retrieved_documents_threshold": t_ret,
            "total_retrieved_documents_higher_is_better": True,
            "total_ground_truth_documents_result": "pass" if p_gt else "fail",
            "total_ground_truth_documents_passed": p_gt,
            "total_ground_truth_documents_threshold": t_gt,
            "total_ground_truth_documents_higher_is_better": True,
        },
    }


def _safe_result(values: Sequence[Any], cfg: _Config) -> dict[str, Any]:
    try:
        return _result(values, cfg)
    except TypeError as exc:  # e.g. a None threshold: the library fails on every call
        raise _crash("Every threshold must be a number", exc) from exc


def _evaluate(gt: Any, ret: Any, cfg: _Config) -> dict[str, Any]:
    qrels, results = _validate(gt, ret, cfg)
    try:
        values = _metrics_one(qrels, results, cfg)
    except DocumentRetrievalError:
        raise
    except Exception as exc:  # whatever else the same operations raise in the library
        raise _crash("azure-ai-evaluation cannot evaluate this input", exc) from exc
    return _safe_result(values, cfg)


def document_retrieval(retrieval_ground_truth: Any, retrieved_documents: Any, **init_params: Any) -> dict[str, Any]:
    """Evaluate one query exactly as ``DocumentRetrievalEvaluator(**init_params)(...)`` (1.18 output shape).

    ``retrieval_ground_truth``: ``[{"document_id", "query_relevance_label"}]``; ``retrieved_documents``:
    ``[{"document_id", "relevance_score"}]`` (ranked by score, not by list order). Raises
    :class:`DocumentRetrievalError` for a bad init parameter or an input the library rejects or crashes on.
    """
    return _evaluate(retrieval_ground_truth, retrieved_documents, _config(init_params))


# --------------------------------------------------------------------------------------------------------------------
# many queries


def _row_inputs(row: Any) -> tuple[Any, Any]:
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
    if gt is not None:
        gt = [_as_dict(g, ("document_id", "query_relevance_label")) for g in gt]
    if isinstance(ret, list | tuple):
        ret = [_as_dict(d, ("document_id", "relevance_score")) for d in ret]
    return gt, ret


def _as_dict(obj: Any, fields: tuple[str, str]) -> Any:
    if isinstance(obj, Mapping):
        return obj
    return {f: getattr(obj, f, None) for f in fields}


def document_retrieval_batch(rows: Iterable[Any], **init_params: Any) -> list[dict[str, Any] | DocumentRetrievalError]:
    """Evaluate many queries at once (numpy); one entry per row, in order.

    A row is a dict with ``retrieval_ground_truth`` and ``retrieved_documents`` (a plan item ``{"item": {...}}`` and
    a ``QueryRecord`` work too). Each entry is the dict :func:`document_retrieval` returns for that row, or the
    :class:`DocumentRetrievalError` it would raise (returned, not raised). A bad init parameter raises.
    """
    from foundry_bridge.metrics import _docret_vector

    cfg = _config(init_params)
    gc_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived dicts: the cyclic GC would rescan the inputs over and over
    try:
        rows = rows if isinstance(rows, list) else list(rows)
        if set(map(type, rows)) <= {dict}:
            gts = list(map(dict.get, rows, repeat("retrieval_ground_truth")))
            rets = list(map(dict.get, rows, repeat("retrieved_documents")))
            if type(None) in set(map(type, gts)):  # maybe plan items {"item": {...}}
                for i, g in enumerate(gts):
                    if g is None:
                        gts[i], rets[i] = _row_inputs(rows[i])
        else:
            pairs = [_row_inputs(row) for row in rows]
            gts = [g for g, _ in pairs]
            rets = [r for _, r in pairs]
        return _docret_vector.evaluate_rows(gts, rets, cfg)
    finally:
        if gc_enabled:
            gc.enable()


def document_retrieval_jsonl(
    path: str | os.PathLike[str], *, engine: str = "orjson", **init_params: Any
) -> list[dict[str, Any] | DocumentRetrievalError]:
    """:func:`document_retrieval_batch` over a JSONL file whose lines hold ``retrieval_ground_truth`` and
    ``retrieved_documents`` (or an ``item`` with them): one entry per non-blank line, in order.

    ``engine``: ``"orjson"`` (default) parses line by line; ``"arrow"`` uses pyarrow's columnar JSON reader (no
    Python object per document) and re-parses with orjson only the lines it cannot take as columns; ``"auto"`` is
    arrow when pyarrow is installed. Results are identical; on the benchmark files the speed is about the same.
    Blank lines are skipped; a line that is not valid JSON raises ``DatasetError`` with its line number.
    """
    cfg = _config(init_params)
    if engine not in ("auto", "orjson", "arrow"):
        raise ValueError(f"engine must be 'auto', 'orjson' or 'arrow', not {engine!r}")
    gc_enabled = gc.isenabled()
    gc.disable()  # parsing creates millions of containers: the cyclic GC would rescan them over and over
    try:
        return _jsonl(path, engine, cfg, init_params)
    finally:
        if gc_enabled:
            gc.enable()


def _jsonl(path: str | os.PathLike[str], engine: str, cfg: _Config, init_params: dict[str, Any]) -> list[Any]:
    from foundry_bridge.metrics import _docret_vector

    with open(path, "rb") as fh:
        data = fh.read()
    numbered = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    lines = [line for _, line in numbered]
    if engine != "orjson":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            if engine == "arrow":
                raise
        else:
            result = _docret_vector.evaluate_arrow(data, lines, cfg)
            if result is not None:
                return result
    import orjson

    try:
        rows = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        for n, line in numbered:
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise DatasetError(f"not valid JSON: {exc}", file=os.fspath(path), line=n) from exc
        raise
    del data, numbered, lines
    return document_retrieval_batch(rows, **init_params)


def _evaluate_or_error(gt: Any, ret: Any, cfg: _Config) -> dict[str, Any] | DocumentRetrievalError:
    try:
        return _evaluate(gt, ret, cfg)
    except DocumentRetrievalError as exc:
        return exc


# --------------------------------------------------------------------------------------------------------------------
# output shapes


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


def normalize_output(data: Any, *, with_verdicts: bool = False) -> dict[str, Any]:
    """Read a document-retrieval result in any known shape; return ``{metric: value}`` for the metrics present.

    Shapes read: the 1.18 evaluator dict (envelope + ``document_retrieval_properties``); the flat pre-1.17 dict;
    an ``evaluate()`` row (keys prefixed ``outputs.<alias>.``); a Foundry output-item result with ``properties``
    (single-entry shape) or a list of per-metric Foundry results (``{"metric": "ndcg@3", "score": ...}``).
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
        if metric in METRICS or metric == "document_retrieval":
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
    props = keys.get("document_retrieval_properties")
    if isinstance(props, Mapping):
        out.update(normalize_output(props, with_verdicts=with_verdicts))
    for m in (*METRICS, "document_retrieval"):
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
    if "document_retrieval" not in out and "ndcg@3" in out:
        out["document_retrieval"] = out["ndcg@3"]
    elif "ndcg@3" not in out and "document_retrieval" in out:
        out["ndcg@3"] = out["document_retrieval"]

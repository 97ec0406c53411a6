"""Random document-retrieval cases and a library oracle, shared by the document_retrieval tests."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

__all__ = ["LABEL_RANGES", "library_outcome", "make_case", "make_cases", "same"]

#: (min, max) label ranges exercised; the first four are the issue's, the rest hit the odd corners.
LABEL_RANGES: list[tuple[int, int]] = [(0, 4), (1, 5), (0, 1), (0, 10), (-2, 3), (2, 12), (-3, -1), (0, 1023)]
_RANGE_WEIGHTS = [30, 20, 15, 20, 5, 4, 3, 3]
_SCORES = [0.9, 0.5, 0.5, 0.1, 0.0, -0.0, -0.3, -2.0, 1, 2, 0, -1, 1.0, 3.25, 1e300, -math.inf, math.inf]
_MISSING = object()


def _bad_label(rng: random.Random, lo: int, hi: int) -> Any:
    return rng.choice([2.0, 2.5, "2", None, np.int64(2), True, False, lo - 1, hi + 1, _MISSING, [1], 2**70, -(2**70)])


def _bad_score(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            "0.5",
            np.float32(0.5),
            np.int64(1),
            math.nan,
            True,
            False,
            np.float64(0.25),
            _MISSING,
            2**60,
            2**70,
            [1],
        ]
    )


def _doc_id(rng: random.Random, pool: int, invalid_rate: float) -> Any:
    r = rng.random()
    if r < 0.9:
        return f"d{rng.randrange(pool)}"
    if r < 0.96:
        return rng.randrange(pool)  # int ids (1 and "1" differ)
    if r < 0.98 or rng.random() > invalid_rate * 10:
        return rng.choice([1.0, True, "", 0])
    return rng.choice([None, ["x"], {"a": 1}])


def _item(rng: random.Random, id_key: str, value_key: str, doc: Any, value: Any) -> Any:
    item: dict[str, Any] = {}
    if doc is not _MISSING:
        item[id_key] = doc
    if value is not _MISSING:
        item[value_key] = value
    if rng.random() < 0.01:
        item["extra"] = "ignored"
    return item


def make_case(rng: random.Random, *, invalid_rate: float = 0.04, long: bool = False) -> tuple[dict[str, Any], Any, Any]:
    """One (init_params, retrieval_ground_truth, retrieved_documents) case; ``long`` rows have 33-400 items."""
    lo, hi = rng.choices(LABEL_RANGES, weights=_RANGE_WEIGHTS)[0]
    params: dict[str, Any] = {}
    if (lo, hi) != (0, 4) or rng.random() < 0.5:
        params = {"ground_truth_label_min": lo, "ground_truth_label_max": hi}
    r = rng.random()
    if r < 0.15:
        params.update(
            ndcg_threshold=rng.choice([0.0, 0.3, 0.7, 1]),
            xdcg_threshold=rng.choice([10, 40.0, 60.0]),
            fidelity_threshold=rng.choice([0.2, 0.5, 1.0]),
            top1_relevance_threshold=rng.choice([1, 2, 3.5]),
            top3_max_relevance_threshold=rng.choice([2, 4]),
            total_retrieved_documents_threshold=rng.choice([1, 5, 10]),
            total_ground_truth_documents_threshold=rng.choice([1, 5, 10]),
        )
    elif r < 0.15 + invalid_rate / 4:
        params["fidelity_threshold"] = None  # the library fails on every call
    pool = rng.choice([3, 6, 12, 20])
    n_gt = rng.choice([0, 1, 1, 2, 3, 5, 8, 10, 12]) if rng.random() < 0.97 else 0
    n_ret = rng.choice([0, 1, 1, 2, 3, 4, 6, 10, 12])
    if long:
        pool = rng.choice([20, 100, 500])
        n_gt, n_ret = rng.choice([5, 33, 60, 200, 400]), rng.choice([2, 33, 50, 120, 400])
    mode = rng.random()
    gt: Any = []
    for _ in range(n_gt):
        if mode < 0.2:  # all labels at the minimum (fidelity NaN when min >= 1)
            label: Any = lo
        elif mode < 0.35:
            label = rng.choice([lo, hi])
        else:
            label = rng.randint(lo, hi)
        doc: Any = _doc_id(rng, pool, invalid_rate)
        if rng.random() < invalid_rate:
            if rng.random() < 0.5:
                label = _bad_label(rng, lo, hi)
            else:
                doc = rng.choice([None, _MISSING])
        gt.append(_item(rng, "document_id", "query_relevance_label", doc, label))
    ret: Any = []
    tied = rng.random() < 0.3
    for _ in range(n_ret):
        score: Any = rng.choice([0.5, 1]) if tied else rng.choice(_SCORES) if rng.random() < 0.4 else rng.random()
        if rng.random() < 0.3:
            score = -score if isinstance(score, float) else score
        doc = _doc_id(rng, pool + rng.choice([0, 0, 4]), invalid_rate)  # some never labelled (holes)
        if rng.random() < invalid_rate:
            if rng.random() < 0.6:
                score = _bad_score(rng)
            else:
                doc = rng.choice([None, _MISSING])
        ret.append(_item(rng, "document_id", "relevance_score", doc, score))
    r = rng.random()
    if r < 0.01:
        ret = tuple(ret)  # not a list: silently empty
    elif r < 0.015:
        ret = {"document_id": "d1", "relevance_score": 1.0}
    elif r < 0.02:
        ret = None
    elif r < 0.025:
        gt = None
    elif r < 0.03:
        gt = {"document_id": "d1", "query_relevance_label": 1}  # AttributeError in the library
    elif r < 0.035:
        gt = ["d1"]
    elif r < 0.04:
        gt = tuple(gt)  # iterable: accepted
    elif r < 0.045 and ret:
        ret[0] = "d1"
    return params, gt, ret


def make_cases(seed: int, n: int, **kwargs: Any) -> list[tuple[dict[str, Any], Any, Any]]:
    rng = random.Random(seed)
    return [make_case(rng, **kwargs) for _ in range(n)]


def library_outcome(evaluators: dict[Any, Any], params: dict[str, Any], gt: Any, ret: Any) -> Any:
    """The installed evaluator's result, or the exception it raises (one evaluator instance per params)."""
    from azure.ai.evaluation import DocumentRetrievalEvaluator

    key = tuple(sorted((k, repr(v)) for k, v in params.items()))
    if key not in evaluators:
        try:
            evaluators[key] = DocumentRetrievalEvaluator(**params)
        except Exception as exc:
            evaluators[key] = exc
    ev = evaluators[key]
    if isinstance(ev, Exception):
        return ev
    try:
        return ev(retrieval_ground_truth=gt, retrieved_documents=ret)
    except Exception as exc:
        return exc


def same(a: Any, b: Any, path: str = "") -> str | None:
    """None if equal with exact types (floats to 1e-12, NaN == NaN, dict key order); else where they differ."""
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} != {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            diff = same(a[k], b[k], f"{path}.{k}")
            if diff:
                return diff
        return None
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return None
        if a == b or abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b)):
            return None
        return f"{path}: {a!r} != {b!r}"
    return None if a == b else f"{path}: {a!r} != {b!r}"

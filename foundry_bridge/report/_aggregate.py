"""Aggregates on columns: every metric per section (positive, negative), coverage counts and score distributions.

A Foundry metric's counts and statistics are one ``GROUP BY`` of the engine (``report._build``); a local metric's
mean is ``metrics.ranking.nan_mean`` under the NaN policy, its median the middle of the sorted values (the mean of
the two middle ones for an even count).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog import CATALOG
from ..metrics.measures import column_names, measure_for_key
from ..metrics.ranking import nan_mean
from ._model import Distribution, MetricAggregate, MetricInfo

__all__ = ["aggregate_foundry", "aggregate_local", "bins", "distribution", "summary_infos"]


def _median(values: np.ndarray) -> float | None:
    if not values.size:
        return None
    s = np.sort(values)
    n = s.size
    return float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2)


def _extremes(values: np.ndarray) -> dict[str, float | None]:
    if not values.size:
        return {"min": None, "max": None}
    return {"min": float(values.min()), "max": float(values.max())}


def aggregate_foundry(
    n: int,
    scored: int,
    errored: int,
    missing: int,
    mean: float | None,
    median: float | None,
    lo: float | None,
    hi: float | None,
    n_pass: int,
    n_fail: int,
) -> MetricAggregate:
    """A Foundry metric over some queries, from its counts and the scored values' statistics (one ``GROUP BY`` of
    the engine: ``report._build``): coverage, pass rate."""
    return MetricAggregate(
        queries=n,
        scored=scored,
        errored=errored,
        missing=missing,
        coverage=scored / n if n else None,
        mean=mean,
        median=median,
        min=lo,
        max=hi,
        passed=n_pass,
        failed=n_fail,
        pass_rate=n_pass / (n_pass + n_fail) if n_pass + n_fail else None,
    )


def aggregate_local(values: np.ndarray, nan_policy: str) -> MetricAggregate:
    """A local metric over a section's values (NaN: undefined), the mean per the NaN policy."""
    defined = values[~np.isnan(values)]
    n = int(values.size)
    return MetricAggregate(
        queries=n,
        scored=int(defined.size),
        undefined=n - int(defined.size),
        coverage=int(defined.size) / n if n else None,
        mean=nan_mean(values, nan_policy),
        median=_median(defined),
        **_extremes(defined),
    )


def summary_infos(infos: list[MetricInfo]) -> list[MetricInfo]:
    """Metrics for the summary and the charts: each criterion's primary Foundry metric and the local metrics."""
    keep = tuple(f"{name}@" for name in column_names())
    return [m for m in infos if (m.source == "foundry" and m.primary) or m.key.startswith(keep)]


def bins(values: np.ndarray, lo: float | None, hi: float | None) -> tuple[list[float], bool]:
    """Bin edges: one bin per integer for small integer scales (judges 1–5), else 10 equal bins."""
    if lo is None or hi is None:
        lo = float(values.min()) if values.size else 0.0
        hi = float(values.max()) if values.size else 1.0
    if values.size and bool(np.all(values == np.floor(values))) and hi - lo <= 10 and float(lo).is_integer():
        return [lo + i - 0.5 for i in range(int(hi - lo) + 2)], True
    if hi <= lo:
        hi = lo + 1.0
    return [lo + (hi - lo) * i / 10 for i in range(11)], False


def counts(values: np.ndarray, edges: list[float]) -> list[int]:
    """Values per bin: a value below an edge falls in the bin that edge closes; above the last, in the last bin."""
    nb = len(edges) - 1
    idx = np.minimum(np.searchsorted(np.asarray(edges[1:]), values, side="right"), nb - 1)
    return [int(c) for c in np.bincount(idx, minlength=nb)]


def _bounds(info: MetricInfo) -> tuple[float | None, float | None]:
    """A metric's declared range: the catalog's for a Foundry metric, the measure's for a local one."""
    if info.source == "foundry" and info.evaluator:
        spec = CATALOG.get(info.evaluator)
        if spec is not None:
            try:
                m = spec.metric(info.metric)
                return m.min_value, m.max_value
            except KeyError:
                return None, None
    elif (measure := measure_for_key(info.key)) is not None and measure.spec.bounds is not None:
        return measure.spec.bounds
    return None, None


def distribution(info: MetricInfo, positive: np.ndarray, negative: np.ndarray) -> Distribution | None:
    """The histogram of a metric's defined values, positive and negative queries on the same bins."""
    if not positive.size and not negative.size:
        return None
    lo, hi = _bounds(info)
    edges, integer = bins(np.concatenate([positive, negative]), lo, hi)
    return Distribution(
        key=info.key, edges=edges, integer=integer, positive=counts(positive, edges), negative=counts(negative, edges)
    )


def defined(values: Any) -> np.ndarray:
    """The values that are not NaN."""
    return values[~np.isnan(values)]

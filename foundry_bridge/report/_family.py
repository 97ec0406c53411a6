"""Comparison statistics a reviewer accepts, from run folders: every candidate against the baseline on every
Foundry metric, the test named per row, effect sizes with intervals, and the family corrected (Holm or BH).

One streaming pass per run folder (``records.jsonl`` for the query ids, ``results.jsonl`` into one float column
per metric), queries paired by id (a query in one run only, or unscored in either, is left out of that metric's
pairing). The tests are ``metrics.significance.compare_family``'s: McNemar (exact) on pass/fail — a judge's
verdict and a boolean metric —, Wilcoxon signed-rank on a judge's ordinal score and on continuous metrics, "too
few paired queries" under ``min_n``; the decision is on the adjusted p, and a change inside the judge's own noise
band (``noise``: key → band, ``metrics.agreement.noise_band``) is no change. ``FamilyComparison.gate_failures``
lists the rows changed in the worse direction; inside ``compare`` they are shown, not gated (the gate is
``--fail-on``'s, ``report._compare._gate``).
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..catalog import CATALOG
from ..metrics._arrays import Codes, IdIndex, Texts, same_distinct
from ..metrics.significance import DEFAULT_MIN_N, Correction, FamilyRow, compare_family
from ..runfolder import RunFolder
from ._format import fmt_num, md_escape
from ._spill import CellColumns

__all__ = ["FamilyComparison", "FamilyLine", "compare_family_runs", "render_family_markdown"]

Kind = Literal["boolean", "ordinal", "continuous"]
QueryKind = Literal["positive", "negative"]
Verdict = Literal["better", "worse", "changed", "no significant change", "within judge noise", "too few paired queries"]
PASS_SUFFIX = ":pass"  # the key of a judge's pass/fail verdict beside its score


class FamilyLine(BaseModel):
    """One (candidate, metric) of the family: its test, effect (candidate − baseline) and corrected decision."""

    candidate: str
    key: str = Field(description="criterion:metric, or criterion:metric:pass for a judge's pass/fail verdict")
    criterion: str
    metric: str
    kind: Kind
    higher_is_better: bool | None
    test: str
    n: int
    n_informative: int
    statistic: float
    p: float | None
    p_adjusted: float | None
    correction: str | None
    significant: bool | None
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    delta_low: float | None
    delta_high: float | None
    d_z: float | None
    d_low: float | None
    d_high: float | None
    rank_biserial: float | None
    within_noise: bool | None
    changed: bool
    verdict: Literal[
        "better", "worse", "changed", "no significant change", "within judge noise", "too few paired queries"
    ]


class FamilyComparison(BaseModel):
    """The corrected comparison table, and what it was computed from."""

    baseline: str
    candidates: list[str]
    method: str
    kind: QueryKind | None = Field(None, description="the queries compared: positive, negative, or all (None)")
    alpha: float
    min_n: int
    rows: list[FamilyLine]
    only_in_baseline: dict[str, int] = Field(default_factory=dict, description="candidate → baseline queries it lacks")
    only_in_candidate: dict[str, int] = Field(default_factory=dict)

    @property
    def gate_failures(self) -> list[FamilyLine]:
        """The rows a gate on this family would fail on: a change after correction, outside the noise, in the worse
        direction (compare shows them; its gate is ``--fail-on``'s)."""
        return [r for r in self.rows if r.verdict == "worse"]


@dataclass
class _RunColumns:
    label: str
    query_ids: Texts
    columns: Mapping[str, np.ndarray]  # _spill.CellColumns: on disk, read one column at a time
    kinds: dict[str, Kind]
    direction: dict[str, bool | None]


@cache
def _metric_kind(evaluator: str, metric: str) -> tuple[Kind, bool | None, bool]:
    """The catalog's kind and direction of a metric, and whether it is a judge's (its pass verdict is tested too)."""
    spec = CATALOG.get(evaluator)
    if spec is None:
        return "continuous", None, False
    try:
        m = spec.metric(metric)
    except KeyError:
        return "continuous", None, False
    kind: Kind = m.kind if m.kind in ("boolean", "ordinal") else "continuous"
    return kind, m.higher_is_better, spec.needs_deployment and kind != "boolean"


def _read_index(folder: RunFolder) -> tuple[Texts, Codes]:
    """The records' query ids and kinds, in row order (a pass over records.jsonl)."""
    plan = folder.read_plan(items=False, records=False)
    query_ids, kinds = Texts(), Codes()
    for rec in folder.iter_records(plan):
        query_ids.append(rec.query_id)
        kinds.append(rec.kind)
    return query_ids, kinds


def _other_kind(kinds: Codes, kind: QueryKind | None) -> array[int]:
    """1 for each row whose kind is not ``kind`` (none when ``kind`` is None)."""
    if kind is None:
        return array("b", bytes(len(kinds)))
    return array("b", (~kinds.mask(kind)).astype(np.int8).tobytes())


def _read_run(
    run_dir: str | os.PathLike[str],
    label: str,
    wanted: Sequence[str] | None,
    kind: QueryKind | None,
    index: tuple[Texts, Codes] | None = None,
) -> _RunColumns:
    """One pass: records for the ids (those of another ``kind`` blanked) unless ``index`` gives them with their
    kinds, then results into columns (score; pass/fail for judges and booleans)."""
    folder = RunFolder(run_dir)
    folder.require_dir()
    query_ids, row_kinds = _read_index(folder) if index is None else index
    other = _other_kind(row_kinds, kind)
    del row_kinds
    n = len(query_ids)
    cols = CellColumns(n)
    kinds: dict[str, Kind] = {}
    direction: dict[str, bool | None] = {}
    for res in folder.iter_results():
        if res.error is not None or not 0 <= res.row < n or other[res.row]:
            continue
        metric_kind, hib, judge = _metric_kind(res.evaluator, res.metric)
        base = f"{res.criterion}:{res.metric}"
        cells: list[tuple[str, Kind, float | bool | None]] = [
            (base, metric_kind, res.passed if metric_kind == "boolean" else res.score)
        ]
        if judge:
            cells.append((base + PASS_SUFFIX, "boolean", res.passed))
        for key, k, value in cells:
            if value is None or (wanted is not None and not _selected(key, wanted)):
                continue
            if key not in kinds:
                kinds[key], direction[key] = k, hib
            cols.set(key, res.row, float(value))
    cols.flush()
    return _RunColumns(label, query_ids, cols, kinds, direction)


def _selected(key: str, wanted: Sequence[str]) -> bool:
    """A key is chosen by its full name, its criterion:metric, or its criterion."""
    base = key.removesuffix(PASS_SUFFIX)
    return key in wanted or base in wanted or base.split(":", 1)[0] in wanted


class _Aligned(Mapping[str, np.ndarray]):
    """The candidate's columns in the baseline's query order (NaN where it lacks the query), one at a time."""

    def __init__(self, columns: Mapping[str, np.ndarray], index: np.ndarray | None, n: int) -> None:
        self.columns, self.index, self.n = columns, index, n

    def __getitem__(self, key: str) -> np.ndarray:
        col = self.columns[key]
        if self.index is None:  # the same queries in the same order
            return col
        present = self.index >= 0
        values = np.full(self.n, np.nan)
        values[present] = col[self.index[present]]
        return values

    def __contains__(self, key: object) -> bool:
        return key in self.columns

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)


def _aligned(base: _RunColumns, cand: _RunColumns) -> tuple[Mapping[str, np.ndarray], int, int]:
    """The candidate's columns in the baseline's query order; the counts of queries only in one of them. Runs of
    the same distinct query ids in the same order pair row by row (no index at all)."""
    n = len(base.query_ids)
    if same_distinct(base.query_ids, cand.query_ids):
        return _Aligned(cand.columns, None, n), 0, 0
    index = IdIndex(base.query_ids).rows_in(IdIndex(cand.query_ids))
    found = int(np.count_nonzero(index >= 0))
    return _Aligned(cand.columns, index, n), n - found, len(cand.query_ids) - found


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _verdict(row: FamilyRow, hib: bool | None) -> Verdict:
    t = row.test
    if t.p is None:
        return "too few paired queries"
    if not t.significant:
        return "no significant change"
    if row.within_noise:
        return "within judge noise"
    if hib is None:
        return "changed"
    return "better" if (t.effect.mean_diff > 0) == hib else "worse"


def _line(row: FamilyRow, kind: Kind, hib: bool | None, means: tuple[float | None, float | None]) -> FamilyLine:
    t, e = row.test, row.test.effect
    criterion, metric = row.metric.removesuffix(PASS_SUFFIX).split(":", 1)
    return FamilyLine(
        candidate=row.candidate,
        key=row.metric,
        criterion=criterion,
        metric=metric,
        kind=kind,
        higher_is_better=hib,
        test=t.test,
        n=t.n,
        n_informative=t.n_informative,
        statistic=t.statistic,
        p=t.p,
        p_adjusted=t.p_adjusted,
        correction=t.correction,
        significant=t.significant,
        baseline_mean=means[0],
        candidate_mean=means[1],
        delta=_finite(e.mean_diff),
        delta_low=_finite(e.low),
        delta_high=_finite(e.high),
        d_z=_finite(e.d_z),
        d_low=_finite(e.d_low),
        d_high=_finite(e.d_high),
        rank_biserial=e.rank_biserial,
        within_noise=row.within_noise,
        changed=row.changed,
        verdict=_verdict(row, hib),
    )


def _paired_means(a: np.ndarray, b: np.ndarray) -> tuple[float | None, float | None]:
    keep = ~(np.isnan(a) | np.isnan(b))
    return (float(a[keep].mean()), float(b[keep].mean())) if keep.any() else (None, None)


def compare_family_runs(
    baseline_dir: str | os.PathLike[str],
    candidate_dirs: Sequence[str | os.PathLike[str]],
    *,
    method: Correction = "holm",
    min_n: int = DEFAULT_MIN_N,
    metrics: Sequence[str] | None = None,
    alpha: float = 0.05,
    labels: Sequence[str] | None = None,
    noise: Mapping[str, float] | None = None,
    kind: QueryKind | None = None,
    indexes: Sequence[tuple[Texts, Codes]] | None = None,
) -> FamilyComparison:
    """Every candidate run against the baseline run on every metric both have (or those ``metrics`` name: a
    criterion, ``criterion:metric`` or a full key), corrected over all (candidate, metric) pairs tested.
    ``kind``: only the positive (or negative) queries, as ``compare`` reports them apart. ``indexes``: each run's
    query ids and kinds in row order, when the caller has read them (compare's reports): records.jsonl is then
    not read again."""
    dirs = [baseline_dir, *candidate_dirs]
    names = list(labels) if labels is not None else [Path(d).name or str(d) for d in dirs]
    if len(names) != len(dirs) or len(set(names)) != len(names):
        names = [f"{i}:{n}" for i, n in enumerate(names)] if len(names) == len(dirs) else [str(d) for d in dirs]
    given = list(indexes) if indexes is not None else [None] * len(dirs)
    base = _read_run(baseline_dir, names[0], metrics, kind, given[0])
    candidates: dict[str, Mapping[str, np.ndarray]] = {}
    only_base, only_cand = {}, {}
    for label, path, index in zip(names[1:], candidate_dirs, given[1:], strict=True):
        cand = _read_run(path, label, metrics, kind, index)
        candidates[label], only_base[label], only_cand[label] = _aligned(base, cand)
    rows = compare_family(base.columns, candidates, base.kinds, method=method, alpha=alpha, min_n=min_n, noise=noise)
    lines = [
        _line(
            r,
            base.kinds[r.metric],
            base.direction[r.metric],
            _paired_means(base.columns[r.metric], candidates[r.candidate][r.metric]),
        )
        for r in rows
    ]
    return FamilyComparison(
        baseline=names[0],
        candidates=names[1:],
        method="Holm" if method == "holm" else "Benjamini-Hochberg",
        kind=kind,
        alpha=alpha,
        min_n=min_n,
        rows=lines,
        only_in_baseline=only_base,
        only_in_candidate=only_cand,
    )


def _interval(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "–"
    if low is None or high is None:
        return fmt_num(value)
    return f"{fmt_num(value)} [{fmt_num(low)}, {fmt_num(high)}]"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def render_family_markdown(comparison: FamilyComparison) -> str:
    """The table: one row per (candidate, metric), the test named, Δ and d_z with their 95 % intervals, p and the
    adjusted p, and the verdict (decided on the adjusted p)."""
    head = ["candidate", "metric", "test", "n", "baseline", "candidate mean", "Δ [95% CI]", "d_z [95% CI]"]
    head += ["rank-biserial r", "p", f"p adjusted ({comparison.method})", "verdict"]
    lines = [
        "## Comparison (corrected for multiplicity)",
        "",
        f"Baseline {md_escape(comparison.baseline)}; {comparison.kind or 'all'} queries; {len(comparison.rows)} "
        f"comparisons, {comparison.method} adjusted over those tested, α = {comparison.alpha:g}; fewer than "
        f"{comparison.min_n} paired queries are not tested. Δ is candidate − baseline over the paired queries.",
        "",
        "| " + " | ".join(md_escape(h) for h in head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in comparison.rows:
        cells = [r.candidate, r.key, r.test, str(r.n), fmt_num(r.baseline_mean), fmt_num(r.candidate_mean)]
        cells += [_interval(r.delta, r.delta_low, r.delta_high), _interval(r.d_z, r.d_low, r.d_high)]
        cells += [fmt_num(r.rank_biserial), _p(r.p), _p(r.p_adjusted), r.verdict]
        lines.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    for name in comparison.candidates:
        missing = comparison.only_in_baseline.get(name, 0), comparison.only_in_candidate.get(name, 0)
        if any(missing):
            lines.append(
                f"\n{md_escape(name)}: {missing[0]} baseline queries missing, {missing[1]} queries not in the baseline"
            )
    worse = comparison.gate_failures
    lines += ["", f"Worse after correction: {len(worse)} metric(s)" + (":" if worse else ".")]
    lines += [
        f"- {md_escape(r.candidate)} {md_escape(r.key)}: Δ {fmt_num(r.delta)} ({md_escape(r.test)})" for r in worse
    ]
    return "\n".join(lines) + "\n"

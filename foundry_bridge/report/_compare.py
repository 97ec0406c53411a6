"""Compare two or more runs over the same queries: paired per-query deltas, significance, CI, a CI gate.

The first run is the baseline; every other run is a candidate compared with it. Queries are paired by
``query_id``; positive and negative queries are compared separately; a query present in only one run is listed,
never silently dropped; a query whose value is undefined (or errored/missing) in either run is left out of that
metric's pairing and counted.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._text import did_you_mean
from ..errors import FoundryBridgeError, UsageError
from ._build import _gc_paused, build_report
from ._model import STAGES, Report

__all__ = [
    "CompareGateFailed",
    "Comparison",
    "CoverageChange",
    "MetricComparison",
    "RunSummaryRow",
    "compare_runs",
    "parse_fail_on",
]

TEST_NAME = "paired sign-flip randomization test (two-sided, statistic: mean difference)"
CI_NAME = "percentile bootstrap over queries"


class CompareGateFailed(FoundryBridgeError):
    """A chosen metric regressed significantly, or coverage dropped (CLI exit 3)."""

    exit_code = 3


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSummaryRow(_Model):
    label: str
    run_dir: str
    backend: str | None = None
    queries: int
    positive: int
    negative: int
    scores_scored: int = 0
    scores_expected: int = 0
    stages: dict[str, int] = Field(default_factory=dict)
    means: dict[str, float | None] = Field(default_factory=dict, description="section:metric → mean")


class MetricComparison(_Model):
    candidate: str
    section: Literal["positive", "negative"]
    metric: str
    higher_is_better: bool | None
    n_paired: int
    n_excluded: int = Field(description="queries in both runs but undefined/errored/missing in one of them")
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None = Field(description="mean of (candidate − baseline) over paired queries")
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    test: str
    significant: bool
    verdict: Literal["better", "worse", "changed", "no significant change", "not comparable"]
    wins: int
    ties: int
    losses: int
    got_worse: list[dict[str, Any]] = Field(default_factory=list, description="[{query_id, baseline, candidate}]")


class CoverageChange(_Model):
    """A Foundry metric's coverage over the baseline's queries (scored ÷ queries; a lost query is not scored)."""

    candidate: str
    metric: str
    baseline: float | None
    candidate_coverage: float | None
    drop: float


class CandidateQueries(_Model):
    candidate: str
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    kind_changed: list[str] = Field(default_factory=list)


class Comparison(_Model):
    baseline: str
    candidates: list[str]
    test: str = TEST_NAME
    ci: str = CI_NAME
    seed: int
    n_resamples: int
    alpha: float
    confidence: float
    runs: list[RunSummaryRow]
    metrics: list[MetricComparison]
    coverage: list[CoverageChange]
    queries: list[CandidateQueries]
    headline: list[str] = Field(default_factory=list, description="metrics of the one-screen sweep table")
    gate: dict[str, Any] = Field(default_factory=dict, description="{checked, failed, reasons}")
    warnings: list[str] = Field(default_factory=list)

    def get(self, candidate: str, metric: str, section: str = "positive") -> MetricComparison:
        for m in self.metrics:
            if m.candidate == candidate and m.metric == metric and m.section == section:
                return m
        raise KeyError((candidate, metric, section))


def parse_fail_on(spec: str) -> tuple[str, str, float]:
    """``rr@10`` / ``groundedness:0.2`` / ``negative:hit@10:0`` → ``(section, metric, tolerated delta)``."""
    section = "positive"
    rest = spec.strip()
    for prefix in ("positive:", "negative:"):
        if rest.startswith(prefix):
            section, rest = prefix[:-1], rest[len(prefix) :]
    metric, delta = rest, 0.0
    if ":" in rest:
        head, tail = rest.rsplit(":", 1)
        try:
            delta = float(tail)
            metric = head
        except ValueError:
            metric = rest
    if not metric:
        raise UsageError(f"--fail-on {spec!r}: expected METRIC[:DELTA], e.g. rr@10 or groundedness:0.1")
    if delta < 0:
        raise UsageError(f"--fail-on {spec!r}: DELTA is a tolerated drop, give it as a positive number")
    return section, metric, delta


def _values(report: Report, key: str, source: str) -> Any:
    """``key``'s value on every query of ``report``, in query order, as a float array (NaN: undefined, errored or
    missing)."""
    import numpy as np

    nan = float("nan")
    out = np.empty(len(report.queries), dtype=np.float64)
    for i, q in enumerate(report.queries):
        if source == "local":
            v = q.local.get(key)
        else:
            fs = q.foundry.get(key)
            v = fs.score if fs is not None and fs.status == "scored" else None
        out[i] = nan if v is None else v
    return out


class _Run:
    """One run's queries for pairing: the row of each query id (its last row, as a dict lookup would give) and
    each metric's values, computed once per run whatever the number of candidates."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.kind = {q.query_id: q.kind for q in report.queries}
        self.row = {q.query_id: i for i, q in enumerate(report.queries)}
        self._values: dict[str, Any] = {}

    def values(self, key: str, source: str) -> Any:
        if key not in self._values:
            self._values[key] = _values(self.report, key, source)
        return self._values[key]


def _labels(paths: Sequence[str]) -> list[str]:
    base = [Path(p).name or str(p) for p in paths]
    if len(set(base)) == len(base):
        return base
    return [f"{i}:{b}" for i, b in enumerate(base)]


@_gc_paused()
def compare_runs(
    runs: Sequence[str | os.PathLike[str] | Report],
    *,
    metrics: Sequence[str] | None = None,
    seed: int = 42,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    confidence: float = 0.95,
    fail_on: Sequence[str] = (),
    coverage_drop: float | None = None,
    labels: Sequence[str] | None = None,
) -> Comparison:
    """Compare runs (folders or built reports); the first is the baseline. Never raises on a failed gate:
    read ``comparison.gate["failed"]`` (the CLI turns it into exit code 3)."""
    import numpy as np

    from ._stats import bootstrap_ci, paired_generator, sign_flip_test

    if len(runs) < 2:
        raise UsageError("compare needs at least two runs: RUN_A RUN_B [RUN_C ...]")
    reports = [r if isinstance(r, Report) else build_report(r) for r in runs]
    names = list(labels) if labels else _labels([r.provenance.run_dir for r in reports])
    base, base_name = reports[0], names[0]
    warnings: list[str] = []

    infos = {m.key: m for m in base.metrics if m.key != "n_rel"}
    for rep in reports[1:]:
        for m in rep.metrics:
            infos.setdefault(m.key, m)
    common = [k for k in infos if all(any(m.key == k for m in rep.metrics) for rep in reports)]
    for k in infos:
        if k not in common:
            warnings.append(f"metric {k!r} is not in every run: not compared")
    if metrics:
        unknown = [m for m in metrics if m not in common]
        if unknown:
            guess = did_you_mean(unknown[0], common)
            hint = f"; did you mean {guess!r}?" if guess else f"; available: {', '.join(common)}"
            raise UsageError(f"--metric {unknown[0]!r} is not in every run{hint}")
        chosen = list(metrics)
    else:
        chosen = common

    gate_specs = [parse_fail_on(s) for s in fail_on]
    for _, metric, _ in gate_specs:
        if metric not in common:
            guess = did_you_mean(metric, common)
            hint = f"; did you mean {guess!r}?" if guess else f"; available: {', '.join(common)}"
            raise UsageError(f"--fail-on {metric!r} is not a metric of every run{hint}")
        if metric not in chosen:
            chosen.append(metric)

    base_run = _Run(base)
    base_kind = base_run.kind
    base_scored: dict[str, int] = {}
    comparisons: list[MetricComparison] = []
    coverage: list[CoverageChange] = []
    queries: list[CandidateQueries] = []
    for rep, name in zip(reports[1:], names[1:], strict=True):
        cand_run = _Run(rep)
        cand_kind = cand_run.kind
        only_base = [q for q in base_kind if q not in cand_kind]
        only_cand = [q for q in cand_kind if q not in base_kind]
        changed = [q for q in base_kind if q in cand_kind and cand_kind[q] != base_kind[q]]
        queries.append(
            CandidateQueries(
                candidate=name, only_in_baseline=only_base, only_in_candidate=only_cand, kind_changed=changed
            )
        )
        if only_base or only_cand:
            warnings.append(
                f"{name}: {len(only_base)} query(ies) only in {base_name}, {len(only_cand)} only in {name}: "
                "not paired (listed under queries)"
            )
        if changed:
            warnings.append(f"{name}: {len(changed)} query(ies) changed kind: compared under the baseline's kind")
        # the queries of each section present in both runs, in the baseline's order, and their rows in each run
        paired_ids: dict[str, list[str]] = {}
        rows: dict[str, tuple[Any, Any]] = {}
        for section in ("positive", "negative"):
            ids = [q for q, k in base_kind.items() if k == section and q in cand_kind]
            paired_ids[section] = ids
            rows[section] = (
                np.array([base_run.row[q] for q in ids], dtype=np.int64),
                np.array([cand_run.row[q] for q in ids], dtype=np.int64),
            )
        for key in chosen:
            info = infos[key]
            bv, cv = base_run.values(key, info.source), cand_run.values(key, info.source)
            for section in ("positive", "negative"):
                ids = paired_ids[section]
                if not ids:
                    continue
                b_all, c_all = bv[rows[section][0]], cv[rows[section][1]]
                defined = ~(np.isnan(b_all) | np.isnan(c_all))
                where = np.flatnonzero(defined)
                b, c = b_all[defined], c_all[defined]
                n_paired = int(b.size)
                excluded = len(ids) - n_paired
                d = c - b
                hib = info.higher_is_better
                if n_paired:
                    rng = paired_generator(seed, f"{name}|{section}|{key}")
                    p, method = sign_flip_test(d, n_resamples=n_resamples, rng=rng)
                    lo, hi = bootstrap_ci(d, confidence=confidence, n_resamples=n_resamples, rng=rng)
                    delta = float(d.mean())
                else:
                    p, method, lo, hi, delta = float("nan"), "none (no paired queries)", None, None, None
                significant = bool(n_paired) and not math.isnan(p) and p < alpha and delta != 0
                if not n_paired:
                    verdict = "not comparable"
                elif not significant:
                    verdict = "no significant change"
                elif hib is None:
                    verdict = "changed"
                else:
                    verdict = "better" if (delta > 0) == hib else "worse"
                worse_mask = (d < 0) if hib is not False else (d > 0)
                better_mask = (d > 0) if hib is not False else (d < 0)
                worse = np.flatnonzero(worse_mask)
                got_worse = [
                    {"query_id": ids[w], "baseline": bw, "candidate": cw}
                    for w, bw, cw in zip(where[worse].tolist(), b[worse].tolist(), c[worse].tolist(), strict=True)
                ]
                got_worse.sort(key=lambda g: -abs(g["candidate"] - g["baseline"]))
                comparisons.append(
                    MetricComparison(
                        candidate=name,
                        section=section,  # type: ignore[arg-type]
                        metric=key,
                        higher_is_better=hib,
                        n_paired=n_paired,
                        n_excluded=excluded,
                        baseline_mean=float(b.mean()) if n_paired else None,
                        candidate_mean=float(c.mean()) if n_paired else None,
                        delta=delta,
                        ci_low=lo,
                        ci_high=hi,
                        p_value=None if math.isnan(p) else p,
                        test=method,
                        significant=significant,
                        verdict=verdict,  # type: ignore[arg-type]
                        wins=int(np.count_nonzero(better_mask)),
                        ties=int(np.count_nonzero(d == 0)),
                        losses=int(np.count_nonzero(worse_mask)),
                        got_worse=got_worse,
                    )
                )
        # coverage over the baseline's queries: a query the candidate lost counts as not scored
        cand_rows = {q.query_id: q for q in rep.queries}
        for key in base.coverage.get("per_metric", {}):
            n = len(base.queries)
            if key not in base_scored:
                base_scored[key] = sum(
                    1 for q in base.queries if q.foundry.get(key) is not None and q.foundry[key].status == "scored"
                )
            b_scored = base_scored[key]
            c_scored = 0
            for q in base.queries:
                cq = cand_rows.get(q.query_id)
                fs = cq.foundry.get(key) if cq is not None else None
                c_scored += fs is not None and fs.status == "scored"
            b_rate = b_scored / n if n else None
            c_rate = c_scored / n if n else None
            coverage.append(
                CoverageChange(
                    candidate=name,
                    metric=key,
                    baseline=b_rate,
                    candidate_coverage=c_rate,
                    drop=(b_rate or 0.0) - (c_rate or 0.0),
                )
            )

    # -- gate ---------------------------------------------------------------------------------------------------
    checked = bool(gate_specs) or coverage_drop is not None
    tolerated = coverage_drop if coverage_drop is not None else 0.0
    reasons: list[str] = []
    if checked:
        for section, metric, tol in gate_specs:
            for mc in comparisons:
                if mc.metric != metric or mc.section != section or mc.verdict != "worse":
                    continue
                if mc.delta is not None and abs(mc.delta) > tol:
                    reasons.append(
                        f"{mc.candidate}: {section} {metric} regressed by {abs(mc.delta):.4g} "
                        f"(p = {mc.p_value:.4g} < {alpha}; tolerated {tol:g})"
                    )
        for cc in coverage:
            if cc.drop > tolerated + 1e-12:
                reasons.append(
                    f"{cc.candidate}: coverage of {cc.metric} dropped from {cc.baseline:.1%} to "
                    f"{(cc.candidate_coverage or 0):.1%}"
                )
    gate = {"checked": checked, "failed": bool(reasons), "reasons": reasons}

    summaries = []
    for rep, name in zip(reports, names, strict=True):
        means: dict[str, float | None] = {}
        for key in chosen:
            for section in (rep.positive, rep.negative):
                agg = section.metrics.get(key)
                if agg is not None and section.queries:
                    means[f"{section.kind}:{key}"] = agg.mean
        summaries.append(
            RunSummaryRow(
                label=name,
                run_dir=rep.provenance.run_dir,
                backend=rep.provenance.backend,
                queries=len(rep.queries),
                positive=rep.positive.queries,
                negative=rep.negative.queries,
                scores_scored=int(rep.coverage.get("scores_scored", 0)),
                scores_expected=int(rep.coverage.get("scores_expected", 0)),
                stages={s: rep.stages.counts.get(s, 0) for s in STAGES},
                means=means,
            )
        )
    if metrics:
        headline = list(chosen)
    else:
        k = base.params.stage_k
        wanted = [f"rr@{k}", f"recall@{k}", f"ndcg@{k}"]
        wanted += [m.key for m in base.metrics if m.source == "foundry" and m.primary]
        headline = [key for key in wanted if key in chosen]
    return Comparison(
        headline=headline,
        baseline=base_name,
        candidates=names[1:],
        seed=seed,
        n_resamples=n_resamples,
        alpha=alpha,
        confidence=confidence,
        runs=summaries,
        metrics=comparisons,
        coverage=coverage,
        queries=queries,
        gate=gate,
        warnings=warnings,
    )

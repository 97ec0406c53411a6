"""Compare two or more runs over the same queries: paired per-query deltas, significance, CI, a CI gate.

The first run is the baseline; every other run is a candidate compared with it. Queries are paired by
``query_id``; positive and negative queries are compared separately; a query present in only one run is listed,
never silently dropped; a query whose value is undefined (or errored/missing) in either run is left out of that
metric's pairing and counted.
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._io import gc_paused
from .._text import did_you_mean
from ..errors import FoundryBridgeError, UsageError
from ..metrics._arrays import IdIndex, same_distinct
from ..metrics.measures import is_measure_name, measure_for_key, parse_measure
from ._build import build_report, foundry_key
from ._columns import SCORED, Columns
from ._family import FamilyComparison, compare_family_runs
from ._foundry import FoundryComparison, FoundryRequest, beside_foundry
from ._model import LIST_CAP, STAGES, MetricInfo, Report
from ._trust import TrustSection

__all__ = [
    "CompareGateFailed",
    "Comparison",
    "CoverageChange",
    "MetricComparison",
    "PairedTest",
    "RunSummaryRow",
    "compare_runs",
    "paired_test",
    "parse_fail_on",
]

Section_ = Literal["positive", "negative"]
Verdict = Literal[
    "better",
    "worse",
    "changed",
    "no significant change",
    "too few paired queries",
    "within judge noise",
    "not comparable",
]
Correction = Literal["holm", "bh", "none"]
MIN_PAIRED = 10  # fewer paired queries than this: "too few paired queries", no decision
_SECTIONS: tuple[Section_, ...] = ("positive", "negative")
_HEADLINE = ("rr", "recall", "ndcg")  # the local measures of the sweep table, at the stage k

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
    section: Section_
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
    p_adjusted: float | None = Field(
        None, description="p corrected over every test of this comparison (candidates × metrics × sections)"
    )
    test: str
    significant: bool = Field(description="p_adjusted < alpha (the corrected decision the gate reads)")
    verdict: Verdict
    wins: int
    ties: int
    losses: int
    got_worse: list[dict[str, Any]] = Field(
        default_factory=list, description="[{query_id, baseline, candidate}], the LIST_CAP largest changes first"
    )
    n_got_worse: int = Field(0, description="queries that got worse (got_worse lists the first LIST_CAP)")


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
    correction: Correction = Field("holm", description="multiplicity control across the family (none: raw p)")
    min_paired: int = MIN_PAIRED
    runs: list[RunSummaryRow]
    metrics: list[MetricComparison]
    coverage: list[CoverageChange]
    queries: list[CandidateQueries]
    headline: list[str] = Field(default_factory=list, description="metrics of the one-screen sweep table")
    gate: dict[str, Any] = Field(default_factory=dict, description="{checked, failed, reasons}")
    judge_tests: FamilyComparison | None = Field(
        None,
        description="Foundry metrics on positive queries by their kind's test: McNemar on pass/fail, Wilcoxon "
        "signed-rank on scores, effect sizes with intervals, corrected over their own family (report._family)",
    )
    warnings: list[str] = Field(default_factory=list)
    foundry_comparison: FoundryComparison | None = Field(
        None, description="Foundry's own comparison of the same runs beside the judge tests (--foundry; not gated)"
    )

    def get(self, candidate: str, metric: str, section: str = "positive") -> MetricComparison:
        for m in self.metrics:
            if m.candidate == candidate and m.metric == metric and m.section == section:
                return m
        raise KeyError((candidate, metric, section))


class _Run:
    """One run's queries for pairing: its report's columns, each row's kind code (into ``kind_names``) and, made
    only when a pairing needs it, its ids by value (``index``). Nothing per query is a Python object."""

    def __init__(self, report: Report) -> None:
        columns: Columns | None = report._columns
        if columns is None:
            raise UsageError("compare needs reports built by build_report (a report read from JSON has no columns)")
        self.report = report
        self.columns = columns
        self.kind_names = sorted(columns.kinds.names)
        self.row_kind = columns.kinds.coded(self.kind_names)
        self._index: IdIndex | None = None

    @property
    def index(self) -> IdIndex:
        """The query ids by value (made at the first pairing that needs it, then kept for the next candidate)."""
        if self._index is None:
            self._index = IdIndex(self.columns.query_ids)
        return self._index

    def ids(self, rows: Any) -> list[str]:
        """The query ids of ``rows``, in row order."""
        import numpy as np

        return [self.columns.query_ids[r] for r in np.sort(rows).tolist()]

    def values(self, key: str, source: str) -> Any:
        return self.columns.values(key, source)


def _labels(paths: Sequence[str]) -> list[str]:
    base = [Path(p).name or str(p) for p in paths]
    if len(set(base)) == len(base):
        return base
    return [f"{i}:{b}" for i, b in enumerate(base)]


def _canonical(metric: str) -> str:
    """A local measure in any registry spelling (``MRR@10``, ``ndcg(gain=exp)@10``) → its report key (``rr@10``,
    ``ndcg_exp@10``); a measure without a cutoff in canonical form (``rr``); anything else (a Foundry key) as is."""
    if not is_measure_name(metric):
        return metric
    measure = parse_measure(metric)
    return measure.key if measure.cutoff is not None else str(measure)


def parse_fail_on(spec: str) -> tuple[str, str, float]:
    """``rr@10`` / ``MRR@10`` / ``groundedness:0.2`` / ``negative:hit@10:0`` → ``(section, metric, tolerated delta)``;
    a local measure's spelling is canonicalized (``MRR@10`` → ``rr@10``)."""
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
    return section, _canonical(metric), delta


def _resolve(spec: str, common: list[str], what: str) -> list[str]:
    """The metric keys of every run that ``spec`` names: a key as written, a local measure in any spelling, or a
    local measure without a cutoff (every k the runs share); a ``UsageError`` with a did-you-mean otherwise."""
    if spec in common:
        return [spec]
    metric = _canonical(spec)
    if metric in common:
        return [metric]
    if is_measure_name(metric) and "@" not in metric:
        column = parse_measure(metric).column
        keys = [k for k in common if (m := measure_for_key(k)) is not None and m.column == column]
        if keys:
            return keys
    guess = did_you_mean(spec, common) or did_you_mean(spec.lower(), common)
    hint = f"; did you mean {guess!r}?" if guess else f"; available: {', '.join(common)}"
    raise UsageError(f"{what.format(repr(spec))}{hint}")


@dataclass
class _Selection:
    """The metrics compared (``chosen``), their infos, those in every run, and the gate's (section, key, delta)."""

    infos: dict[str, MetricInfo]
    common: list[str]
    chosen: list[str]
    gate_specs: list[tuple[str, str, float]]


def _select(
    reports: list[Report], metrics: Sequence[str] | None, fail_on: Sequence[str], warnings: list[str]
) -> _Selection:
    infos = {m.key: m for m in reports[0].metrics if m.key != "n_rel"}
    for rep in reports[1:]:
        for m in rep.metrics:
            infos.setdefault(m.key, m)
    common = [k for k in infos if all(any(m.key == k for m in rep.metrics) for rep in reports)]
    warnings.extend(f"metric {k!r} is not in every run: not compared" for k in infos if k not in common)
    chosen: list[str] = []
    for spec in metrics or ():
        chosen += [k for k in _resolve(spec, common, "--metric {} is not in every run") if k not in chosen]
    if not metrics:
        chosen = list(common)
    gate_specs: list[tuple[str, str, float]] = []
    for section, metric, tol in (parse_fail_on(s) for s in fail_on):
        for key in _resolve(metric, common, "--fail-on {} is not a metric of every run"):
            gate_specs.append((section, key, tol))
            if key not in chosen:
                chosen.append(key)
    return _Selection(infos, common, chosen, gate_specs)


@dataclass(frozen=True)
class _Settings:
    seed: int
    n_resamples: int
    alpha: float
    confidence: float


@dataclass
class _Pairing:
    """A candidate's queries against the baseline's: per section, the paired rows of each run (baseline order),
    and each baseline row's row in the candidate (-1: the candidate lacks it; None: the same rows)."""

    queries: CandidateQueries
    rows: dict[str, tuple[Any, Any]]
    cand_row: Any | None


def _pair(base: _Run, cand: _Run, name: str, base_name: str, warnings: list[str]) -> _Pairing:
    """Runs with the same distinct query ids in the same order pair row by row (no index is made); otherwise by
    their ids by value (``metrics._arrays.IdIndex``), a repeated id's last row standing for it."""
    import numpy as np

    to_base = np.array([base.kind_names.index(k) if k in base.kind_names else -1 for k in cand.kind_names] or [0])
    base_kind: Any  # per baseline query (a row here, a distinct id below): its kind code,
    rows_of: Any  # its first row (the order it is listed and paired in), its paired row in each run,
    base_rows: Any  # whether the candidate has it and its kind code there (in the baseline's codes)
    cand_rows: Any
    cand_row: Any | None  # per baseline row: the candidate's row of its id (-1: none); None: the same rows
    if same_distinct(base.columns.query_ids, cand.columns.query_ids):
        base_kind, rows_of = base.row_kind, np.arange(len(base.row_kind), dtype=np.int32)
        in_cand = np.ones(len(base_kind), bool)
        cand_kind, base_rows, cand_rows, cand_row = to_base[cand.row_kind], rows_of, rows_of, None
        only_base: list[str] = []
        only_cand: list[str] = []
    else:
        b, c = base.index, cand.index
        in_cand, at = c.locate(b.keys)
        in_base, _ = b.locate(c.keys)
        base_kind, rows_of = base.row_kind[b.last], b.first
        cand_kind = to_base[cand.row_kind[c.last[at]]] if len(at) else np.zeros(0, np.int64)
        base_rows, cand_rows = b.last, c.last[at]
        only_base, only_cand = base.ids(b.first[~in_cand]), cand.ids(c.first[~in_base])
        cand_row = b.rows_in(c)
    changed = base.ids(rows_of[in_cand & (cand_kind != base_kind)])
    if only_base or only_cand:
        warnings.append(
            f"{name}: {len(only_base)} query(ies) only in {base_name}, {len(only_cand)} only in {name}: "
            "not paired (listed under queries)"
        )
    if changed:
        warnings.append(f"{name}: {len(changed)} query(ies) changed kind: compared under the baseline's kind")
    rows: dict[str, tuple[Any, Any]] = {}
    for section in ("positive", "negative"):
        code = base.kind_names.index(section) if section in base.kind_names else -1
        paired = np.flatnonzero(in_cand & (base_kind == code))
        if cand_row is None:  # the same rows, in order
            rows[section] = (same := paired.astype(np.int32), same)
            continue
        paired = paired[np.argsort(rows_of[paired], kind="stable")]  # the baseline's order
        rows[section] = (base_rows[paired], cand_rows[paired])
    queries = CandidateQueries(
        candidate=name, only_in_baseline=only_base, only_in_candidate=only_cand, kind_changed=changed
    )
    return _Pairing(queries, rows, cand_row)


def _verdict(n_paired: int, significant: bool, delta: float | None, hib: bool | None) -> Verdict:
    if not n_paired:
        return "not comparable"
    if not significant:
        return "no significant change"
    if hib is None or delta is None:
        return "changed"
    return "better" if (delta > 0) == hib else "worse"


@dataclass(frozen=True)
class PairedTest:
    """A paired test's result on one metric: p-value, the method's name and the CI of the mean difference."""

    p: float
    method: str
    ci_low: float | None
    ci_high: float | None


def paired_test(diffs: Any, settings: _Settings, key: str) -> PairedTest:
    """The paired test of one metric over its paired differences (candidate − baseline, no NaN): sign-flip
    randomization test of the mean difference and its percentile bootstrap CI, both from one generator seeded by
    (seed, ``key``)."""
    from ._stats import bootstrap_ci, paired_generator, sign_flip_test

    if not diffs.size:
        return PairedTest(float("nan"), "none (no paired queries)", None, None)
    rng = paired_generator(settings.seed, key)
    p, method = sign_flip_test(diffs, n_resamples=settings.n_resamples, rng=rng)
    lo, hi = bootstrap_ci(diffs, confidence=settings.confidence, n_resamples=settings.n_resamples, rng=rng)
    return PairedTest(p, method, lo, hi)


def _got_worse(ids: Sequence[str], defined: Any, b_all: Any, c_all: Any, d: Any, worse: Any) -> list[dict[str, Any]]:
    """The LIST_CAP queries that got worse by the most, largest change first (ties in dataset order); ``worse``
    indexes the paired differences ``d``, ``defined`` maps them back to the section's rows."""
    import numpy as np

    order = np.argsort(-np.abs(d[worse]), kind="stable")[:LIST_CAP]
    rows = np.flatnonzero(defined)[worse[order]]
    return [
        {"query_id": ids[r], "baseline": bw, "candidate": cw}
        for r, bw, cw in zip(rows.tolist(), b_all[rows].tolist(), c_all[rows].tolist(), strict=True)
    ]


def _compare_one(
    name: str, section: Section_, info: MetricInfo, b_all: Any, c_all: Any, ids: Sequence[str], settings: _Settings
) -> MetricComparison:
    """One metric of one section, candidate vs baseline, over the queries defined in both. Per query, only the
    two sections' values, the defined mask and the differences stay in memory while the tests run."""
    import numpy as np

    defined = ~(np.isnan(b_all) | np.isnan(c_all))
    b, c = b_all[defined], c_all[defined]
    n_paired = int(b.size)
    means = (float(b.mean()), float(c.mean())) if n_paired else (None, None)
    d = c - b
    del b, c
    hib = info.higher_is_better
    test = paired_test(d, settings, f"{name}|{section}|{info.key}")
    delta = float(d.mean()) if n_paired else None
    significant = bool(n_paired) and not math.isnan(test.p) and test.p < settings.alpha and delta != 0
    worse_mask = (d < 0) if hib is not False else (d > 0)
    wins = int(np.count_nonzero((d > 0) if hib is not False else (d < 0)))
    worse = np.flatnonzero(worse_mask)
    return MetricComparison(
        candidate=name,
        section=section,
        metric=info.key,
        higher_is_better=hib,
        n_paired=n_paired,
        n_excluded=len(ids) - n_paired,
        baseline_mean=means[0],
        candidate_mean=means[1],
        delta=delta,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
        p_value=None if math.isnan(test.p) else test.p,
        test=test.method,
        significant=significant,
        verdict=_verdict(n_paired, significant, delta, hib),
        wins=wins,
        ties=int(np.count_nonzero(d == 0)),
        losses=int(worse.size),
        got_worse=_got_worse(ids, defined, b_all, c_all, d, worse),
        n_got_worse=int(worse.size),
    )


class _RowIds(Sequence[str]):
    """The query ids of some rows of a run (read one at a time: only the listed ones are)."""

    def __init__(self, ids: Sequence[str], rows: Any) -> None:
        self.ids, self.rows = ids, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        return self.ids[int(self.rows[i])]


def _compare_candidate(
    base: _Run, cand: _Run, name: str, pairing: _Pairing, sel: _Selection, settings: _Settings
) -> list[MetricComparison]:
    out: list[MetricComparison] = []
    sections = [(s, pairing.rows[s]) for s in _SECTIONS if len(pairing.rows[s][0])]
    for key in sel.chosen:
        info = sel.infos[key]
        bv, cv = base.values(key, info.source), cand.values(key, info.source)
        values = [(bv[b_rows], cv[c_rows]) for _, (b_rows, c_rows) in sections]
        del bv, cv  # only the sections' values stay while the tests run, each section's until it is tested
        for section, (b_rows, _) in sections:
            b_all, c_all = values.pop(0)
            ids = _RowIds(base.columns.query_ids, b_rows)
            out.append(_compare_one(name, section, info, b_all, c_all, ids, settings))
            del b_all, c_all
    return out


def _compare_columns(
    reports: list[Report], names: list[str], sel: _Selection, settings: _Settings, warnings: list[str]
) -> tuple[list[MetricComparison], list[CoverageChange], list[CandidateQueries]]:
    """Every candidate against the baseline on the reports' columns: pairing, the tests of each chosen metric and
    section, coverage. One candidate's pairing is in memory at a time, and none once this returns."""
    base, base_scored = _Run(reports[0]), dict[str, int]()
    comparisons: list[MetricComparison] = []
    coverage: list[CoverageChange] = []
    queries: list[CandidateQueries] = []
    for rep, name in zip(reports[1:], names[1:], strict=True):
        cand = _Run(rep)
        pairing = _pair(base, cand, name, names[0], warnings)
        queries.append(pairing.queries)
        comparisons += _compare_candidate(base, cand, name, pairing, sel, settings)
        coverage += _coverage_changes(base, cand, name, pairing, base_scored)
        del cand, pairing
    return comparisons, coverage, queries


def _coverage_changes(
    base: _Run, cand: _Run, name: str, pairing: _Pairing, scored: dict[str, int]
) -> list[CoverageChange]:
    """Coverage over the baseline's queries: a query the candidate lost counts as not scored."""
    import numpy as np

    n = len(base.columns.query_ids)
    at = pairing.cand_row
    out: list[CoverageChange] = []
    for key in base.report.coverage.get("per_metric", {}):
        if key not in scored:
            col = base.columns.foundry.get(key)
            scored[key] = 0 if col is None else int(np.count_nonzero(col.status() == SCORED))
        c_col = cand.columns.foundry.get(key)
        c_status = None if c_col is None else c_col.status()
        if c_status is not None and at is not None:
            c_status = c_status[at[at >= 0]]
        c_scored = 0 if c_status is None else int(np.count_nonzero(c_status == SCORED))
        b_rate = scored[key] / n if n else None
        c_rate = c_scored / n if n else None
        out.append(
            CoverageChange(
                candidate=name,
                metric=key,
                baseline=b_rate,
                candidate_coverage=c_rate,
                drop=(b_rate or 0.0) - (c_rate or 0.0),
            )
        )
    return out


def _gate(
    sel: _Selection,
    coverage_drop: float | None,
    comparisons: list[MetricComparison],
    coverage: list[CoverageChange],
    alpha: float,
) -> dict[str, Any]:
    """``{checked, failed, reasons}``: a --fail-on metric significantly worse by more than its delta, or a Foundry
    metric's coverage dropping by more than ``coverage_drop`` (0 when only --fail-on is given)."""
    checked = bool(sel.gate_specs) or coverage_drop is not None
    tolerated = coverage_drop if coverage_drop is not None else 0.0
    reasons: list[str] = []
    if checked:
        for section, metric, tol in sel.gate_specs:
            for mc in comparisons:
                if mc.metric != metric or mc.section != section or mc.verdict != "worse":
                    continue
                if mc.delta is not None and abs(mc.delta) > tol:
                    reasons.append(
                        f"{mc.candidate}: {section} {metric} regressed by {abs(mc.delta):.4g} "
                        f"(corrected p = {mc.p_adjusted:.4g} < {alpha}; tolerated {tol:g})"
                    )
        for cc in coverage:
            if cc.drop > tolerated + 1e-12:
                reasons.append(
                    f"{cc.candidate}: coverage of {cc.metric} dropped from {cc.baseline or 0:.1%} to "
                    f"{(cc.candidate_coverage or 0):.1%}"
                )
    return {"checked": checked, "failed": bool(reasons), "reasons": reasons}


def _correct(
    comparisons: list[MetricComparison],
    correction: Correction,
    alpha: float,
    min_paired: int,
    gated: set[tuple[str, str]],
    noise: Mapping[str, float],
) -> None:
    """The family's decision, in place. Every test that ran on at least ``min_paired`` queries is a hypothesis;
    with a gate (``--fail-on``), the gate's hypotheses (candidates × gated section:metric) are one family and the
    other tests a second, exploratory one, so the gate is corrected over exactly what it decides; without a gate,
    every test is one family. Each family's p is corrected by ``metrics.significance.adjust_pvalues`` (Holm
    step-down, or Benjamini–Hochberg) and ``significant`` = p_adjusted < alpha and a non-zero delta. Fewer paired
    queries: "too few paired queries", no decision. A significant change no larger than the judge's own noise band
    (``noise``: metric key → band, from repeat runs of the baseline) is "within judge noise", not a change."""
    from ..metrics.significance import adjust_pvalues

    ran = [mc for mc in comparisons if mc.p_value is not None and mc.n_paired >= min_paired]
    families = [
        [mc for mc in ran if (mc.section, mc.metric) in gated],
        [mc for mc in ran if (mc.section, mc.metric) not in gated],
    ]
    for family in families:
        raw = [mc.p_value for mc in family if mc.p_value is not None]
        adjusted = raw if correction == "none" else adjust_pvalues(raw, correction)
        for mc, p in zip(family, adjusted, strict=True):
            mc.p_adjusted = p
            mc.significant = p < alpha and mc.delta != 0
            mc.verdict = _verdict(mc.n_paired, mc.significant, mc.delta, mc.higher_is_better)
    for mc in ran:
        band = noise.get(mc.metric)
        if mc.significant and band is not None and mc.delta is not None and abs(mc.delta) <= band:
            mc.significant, mc.verdict = False, "within judge noise"
    for mc in comparisons:
        if 0 < mc.n_paired < min_paired:
            mc.significant, mc.verdict = False, "too few paired queries"


def _family_key(report_key: str) -> str:
    """A report metric key (``criterion`` or ``criterion/metric``) as ``report._family`` spells it."""
    criterion, _, metric = report_key.partition("/")
    return f"{criterion}:{metric or criterion}"


def noise_bands_by_key(section: TrustSection) -> dict[str, float]:
    """Each judge's score-noise band (``report._trust``: from repeat runs) under its report metric key, as
    ``compare_runs(noise=...)`` reads it."""
    metric = {j.criterion: j.metric for j in section.judges}
    return {
        foundry_key(n.criterion, metric[n.criterion]): n.score_band
        for n in section.noise
        if n.score_band is not None and n.criterion in metric
    }


def _summary_row(rep: Report, name: str, chosen: list[str]) -> RunSummaryRow:
    means: dict[str, float | None] = {}
    for key in chosen:
        for sec in (rep.positive, rep.negative):
            agg = sec.metrics.get(key)
            if agg is not None and sec.queries:
                means[f"{sec.kind}:{key}"] = agg.mean
    return RunSummaryRow(
        label=name,
        run_dir=rep.provenance.run_dir,
        backend=rep.provenance.backend,
        queries=int(rep.coverage.get("queries", 0)),
        positive=rep.positive.queries,
        negative=rep.negative.queries,
        scores_scored=int(rep.coverage.get("scores_scored", 0)),
        scores_expected=int(rep.coverage.get("scores_expected", 0)),
        stages={s: rep.stages.counts.get(s, 0) for s in STAGES},
        means=means,
    )


def _headline(base: Report, metrics: Sequence[str] | None, chosen: list[str]) -> list[str]:
    """The sweep table's metrics: those asked for, else rr, recall and ndcg at the stage k and the primary Foundry
    metrics."""
    if metrics:
        return list(chosen)
    k = base.params.stage_k
    wanted = [(m @ k).key for m in map(parse_measure, _HEADLINE)]
    wanted += [m.key for m in base.metrics if m.source == "foundry" and m.primary]
    return [key for key in wanted if key in chosen]


def _lean_report(run: str | os.PathLike[str]) -> Report:
    """A run's report as compare needs it: no rows kept, no trust section, and only its columns' numbers (no
    reasons, no holes)."""
    report = build_report(run, worst=0, table_rows=0, trust=False)
    report._holes = None
    gc.collect()  # compare runs with the collector paused: the build's cycles go now, not after the next build
    return report


@gc_paused()
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
    correction: Correction = "holm",
    min_paired: int = MIN_PAIRED,
    noise: Mapping[str, float] | None = None,
    judge_tests: bool = True,
    foundry: FoundryRequest | None = None,
) -> Comparison:
    """Compare runs (folders or built reports); the first is the baseline. Never raises on a failed gate:
    read ``comparison.gate["failed"]`` (the CLI turns it into exit code 3).

    ``metrics`` and ``fail_on`` name report keys: a Foundry key as written, or a local measure in any
    ``parse_measure`` spelling (``MRR@10`` = ``rr@10``; ``ndcg`` alone = ndcg at every k of the runs).
    ``correction``: multiplicity control over every test of the comparison (``_correct``); the gate reads the
    corrected decision. ``noise``: report metric key → the judge-noise band (``noise_bands_by_key``); a difference
    inside it is not a change. ``judge_tests`` (run folders only): add the McNemar / Wilcoxon family
    (``judge_tests``). Steps: build the reports → select the metrics → per candidate: pair the queries, compare
    each metric, coverage → correct the family → gate → summaries.
    ``foundry``: ask Foundry for its own comparison of the run folders (called with them before anything else,
    e.g. ``foundry._insights.request_comparison``), shown beside the judge tests, never gated.
    """
    if len(runs) < 2:
        raise UsageError("compare needs at least two runs: RUN_A RUN_B [RUN_C ...]")
    answer = foundry(runs) if foundry is not None else None
    reports = [r if isinstance(r, Report) else _lean_report(r) for r in runs]
    names = list(labels) if labels else _labels([r.provenance.run_dir for r in reports])
    warnings: list[str] = []
    sel = _select(reports, metrics, fail_on, warnings)
    settings = _Settings(seed, n_resamples, alpha, confidence)
    comparisons, coverage, queries = _compare_columns(reports, names, sel, settings, warnings)
    gated = {(sec, key) for sec, key, _ in sel.gate_specs}
    family = None
    if judge_tests and not any(isinstance(r, Report) for r in runs):
        family = compare_family_runs(
            runs[0],  # type: ignore[arg-type]  # run folders (checked above)
            list(runs[1:]),  # type: ignore[arg-type]
            method="bh" if correction == "bh" else "holm",
            min_n=min_paired,
            alpha=alpha,
            labels=names,
            noise={_family_key(k): v for k, v in (noise or {}).items()},
            kind="positive",
            indexes=[(rep._columns.query_ids, rep._columns.kinds) for rep in reports],
        )
    _correct(comparisons, correction, alpha, min_paired, gated, noise or {})
    return Comparison(
        headline=_headline(reports[0], metrics, sel.chosen),
        baseline=names[0],
        candidates=names[1:],
        seed=seed,
        n_resamples=n_resamples,
        alpha=alpha,
        confidence=confidence,
        correction=correction,
        min_paired=min_paired,
        runs=[_summary_row(rep, name, sel.chosen) for rep, name in zip(reports, names, strict=True)],
        metrics=comparisons,
        coverage=coverage,
        queries=queries,
        gate=_gate(sel, coverage_drop, comparisons, coverage, alpha),
        judge_tests=family,
        warnings=warnings,
        foundry_comparison=beside_foundry(answer, names, family),
    )

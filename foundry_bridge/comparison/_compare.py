"""Compare two or more runs over the same queries: paired per-query deltas, significance, CI, a CI gate.

The statistics are ``metrics.significance``'s, the one comparison engine: each metric's test by its kind (the
sign-flip for continuous metrics, Wilcoxon for a judge's ordinal score, McNemar for pass/fail — a judge's verdict,
keyed ``<metric key>/pass``, and boolean metrics), one family, one ``Verdict``. Pair → test → gate: the runs'
tables are joined by query id (``_join``: the engine pairs, counts and ranks), this module tests each metric's
paired vectors and keeps the table; ``_render`` prints it.

The first run is the baseline; every other run is a candidate compared with it. Queries are paired by
``query_id``; positive and negative queries are compared separately; a query present in only one run is listed,
never silently dropped; a query whose value is undefined (or errored/missing) in either run is left out of that
metric's pairing and counted.

Two decisions, kept apart: the exploratory verdicts (``_correct``: one family, every metric the runs share ×
candidates × sections, whatever ``metrics`` shows or ``fail_on`` gates) and the gate (``_gate``: each ``--fail-on``
test at its own α unless a correction across gates is asked for, so a new gate never weakens an existing one).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._io import gc_paused
from .._text import did_you_mean
from ..errors import FoundryBridgeError, UsageError, spelled
from ..metrics.measures import is_measure_name, measure_for_key, parse_measure
from ..metrics.power import POWER, min_detectable_delta, queries_needed
from ..metrics.significance import (
    CORRECTION_NAME,
    LEFT_OUT,
    WY_NAME,
    Correction,
    FlipBlock,
    MetricKind,
    PairedSample,
    PairedTest,
    PairedTests,
    adjust_pvalues,
    flip_scores,
    in_family,
    paired_generator,
    verdict,
    westfall_young,
)
from ..report._aggregate import _bounds as metric_bounds
from ..report._build import foundry_key
from ..report._foundry import FoundryComparison, FoundryRequest, LocalLine, beside_foundry
from ..report._model import MetricInfo, Report
from ..report._trust import noise_bands
from ._drift import JudgeDrift, drift_rows
from ._gate_trust import GateTrust, judge_trust_by_key, untrusted
from ._gates import FloorOn, GateSpec, _canonical, as_gate, decide_floor, decide_lost, parse_fail_on, underpowered
from ._join import PASS, SECTIONS, Engine, Paired, RunTable, engine, folder_table
from ._join import metric_kind as _kind
from ._model import (
    AllPairs,
    CandidateQueries,
    CoverageChange,
    MeasureRanking,
    MetricComparison,
    PairComparison,
    RankedSystem,
    RunSummaryRow,
    Section_,
    _Model,
)

__all__ = [
    "AllPairs",
    "CompareGateFailed",
    "CompareOptions",
    "Comparison",
    "CoverageChange",
    "MeasureRanking",
    "MetricComparison",
    "PairComparison",
    "RankedSystem",
    "RunSummaryRow",
    "compare_runs",
    "compare_sources",
    "parse_fail_on",
]

SecondaryCorrection = Literal["westfall-young", "holm", "bh", "none"]
MIN_PAIRED = 10  # fewer paired queries than this: "too few paired queries", no decision
_HEADLINE = ("rr", "recall", "ndcg")  # the local measures of the sweep table, at the stage k

TEST_NAME = (
    "by the metric's kind: paired sign-flip randomization test of the mean difference (continuous metrics), "
    "Wilcoxon signed-rank (a judge's ordinal score), McNemar exact (pass/fail); two-sided"
)
CI_NAME = "Student t over queries (n − 1 df; pass/fail: Agresti–Min padded, cut to [−1, 1])"


class CompareGateFailed(FoundryBridgeError):
    """A chosen metric regressed significantly, or coverage dropped (CLI exit 3)."""

    exit_code = 3


class CompareGateInconclusive(FoundryBridgeError):
    """No gate failed, but a gated judge metric's judge is not trusted enough to decide (CLI exit 4)."""

    exit_code = 4


class Comparison(_Model):
    baseline: str
    candidates: list[str]
    test: str = TEST_NAME
    ci: str = CI_NAME
    seed: int
    n_resamples: int
    alpha: float
    confidence: float
    correction: SecondaryCorrection = Field(
        "westfall-young",
        description="the secondary family's correction: Westfall–Young step-down minP over each pair of runs' joint "
        "sign flips (default), Holm, Benjamini–Hochberg, or none (raw p)",
    )
    exploratory_tests: int = Field(0, description="tests in the secondary family (every metric not gated)")
    primary_tests: int = Field(0, description="tests in the primary family (the gated metrics × candidates)")
    left_out_tests: int = Field(
        0, description="tests with every paired difference 0 (p = 1): reported, not counted in a family"
    )
    gate_correction: Correction = Field(
        "holm", description="the primary family's correction across the gated tests (none: each at its own alpha)"
    )
    min_paired: int = MIN_PAIRED
    runs: list[RunSummaryRow]
    metrics: list[MetricComparison]
    coverage: list[CoverageChange]
    queries: list[CandidateQueries]
    headline: list[str] = Field(default_factory=list, description="metrics of the one-screen sweep table")
    gate: dict[str, Any] = Field(
        default_factory=dict,
        description="{checked, failed, reasons, inconclusive, alpha, correction, tests, false_alarm_rate, "
        "false_alarm, checks}: _gate's decision; checks: one per candidate × gate, each with its kind (relative: "
        "the metric's verdict in the primary family; floor: the candidate's mean or its interval against a "
        "threshold; lost: queries that lost every relevant document from the top k), gate (as written), outcome "
        "(passed, failed, inconclusive or skipped) and reason (one line: the same in every output)",
    )
    warnings: list[str] = Field(default_factory=list)
    foundry_comparison: FoundryComparison | None = Field(
        None, description="Foundry's own comparison of the same runs beside the local rows (--foundry; not gated)"
    )
    all_pairs: AllPairs | None = Field(
        None, description="every pair of runs, the ranking per metric and which systems differ (--all-pairs)"
    )
    qrels: dict[str, Any] | None = Field(
        None, description="compare --qrels: the qrels file, the runs' files and the rule of the per-query values"
    )
    drift: JudgeDrift | None = Field(
        None, description="compare --anchor OLD NEW: the judge's shift on a frozen anchor set, per judge metric"
    )

    def get(self, candidate: str, metric: str, section: str = "positive") -> MetricComparison:
        for m in self.metrics:
            if m.candidate == candidate and m.metric == metric and m.section == section:
                return m
        raise KeyError((candidate, metric, section))

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per (candidate, section, metric) test (``_model.comparison_frame``)."""
        from ._model import comparison_frame

        return comparison_frame(self.metrics)

    def to_polars(self) -> Any:
        """``to_pandas`` as a polars DataFrame."""
        from ._model import comparison_frame

        return comparison_frame(self.metrics, polars=True)


_TWO_RUNS = spelled(
    "compare_runs() needs at least two runs: [run_a, run_b, ...]",
    "compare needs at least two runs: RUN_A RUN_B [RUN_C ...]",
)


def run_names(
    paths: Sequence[str | os.PathLike[str]], labels: Sequence[str] | None = None, *, stem: bool = False
) -> list[str]:
    """The runs' names in every output: ``labels`` when given (one per run, distinct, not blank: else a
    ``UsageError``), else each path's name (``stem``: without its suffix, for run files) with as many parent
    folders as tell it apart from the others (``a/run``, ``b/run``), the position first only when two paths are one."""
    if labels:
        names = [str(label).strip() for label in labels]
        if len(names) != len(paths):
            raise UsageError(f"--label: {len(names)} label(s), {len(paths)} runs: give one --label per RUN, in order")
        if not all(names) or len(set(names)) < len(names):
            given = ", ".join(map(repr, labels))
            raise UsageError(f"--label: the labels must be distinct and not blank, got {given}")
        return names
    chains = [list(Path(os.path.abspath(p)).parts[1:]) for p in paths]  # without the root
    for chain in chains:
        if chain and stem:
            chain[-1] = Path(chain[-1]).stem
    depth = [1] * len(chains)

    def name(i: int) -> str:
        return "/".join(chains[i][-depth[i] :]) or str(paths[i])

    while True:
        names = [name(i) for i in range(len(chains))]
        clash = [i for i, n in enumerate(names) if names.count(n) > 1 and depth[i] < len(chains[i])]
        if not clash:
            break
        for i in clash:
            depth[i] += 1
    if len(set(names)) == len(names):
        return names
    return [f"{i}:{n}" for i, n in enumerate(names)]


def _old_spelling(spec: str) -> str | None:
    """``criterion:metric`` (and ``criterion:metric:pass``), the spelling of the removed judge-tests table, as the
    one metric key (``criterion/metric``, ``metric`` when it is the criterion's name; ``…/pass``); None otherwise."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(parts) or (len(parts) == 3 and parts[2] != "pass"):
        return None
    return foundry_key(parts[0], parts[1]) + (PASS if len(parts) == 3 else "")


def _resolve(spec: str, common: list[str], what: str, warnings: list[str] | None = None) -> list[str]:
    """The metric keys of every run that ``spec`` names: a key as written, a local measure in any spelling, or a
    local measure without a cutoff (every k the runs share); ``criterion:metric`` is accepted for
    ``criterion/metric`` with a deprecation warning; a ``UsageError`` with a did-you-mean otherwise."""
    if spec in common:
        return [spec]
    old = _old_spelling(spec)
    if old is not None and old in common:
        if warnings is not None:
            warnings.append(f"{spec!r} is the old spelling of {old!r} (deprecated): write {old!r}")
        return [old]
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
    """The metrics' infos and kinds, those in every run (``common``: every one is compared), those shown
    (``chosen``: ``--metric``'s and the gated ones, or all), and the gate's (section, key, tolerated delta)."""

    infos: dict[str, MetricInfo]
    kinds: dict[str, MetricKind]
    common: list[str]
    chosen: list[str]
    gate_specs: list[tuple[str, str, float]]
    gates: list[tuple[GateSpec, str]] = field(default_factory=list)  # the floor and lost gates, each with its key

    @property
    def compared(self) -> list[str]:
        """Every metric the runs share, the shown ones first (the tests do not depend on the order)."""
        return self.chosen + [k for k in self.common if k not in self.chosen]


def _with_pass_rows(infos: dict[str, MetricInfo]) -> tuple[dict[str, MetricInfo], dict[str, MetricKind]]:
    """Every metric's info and kind, each judge score followed by its pass/fail row (``<key>/pass``)."""
    out: dict[str, MetricInfo] = {}
    kinds: dict[str, MetricKind] = {}
    for key, info in infos.items():
        kinds[key], judge = _kind(info)
        out[key] = info
        if judge:
            definition = f"the judge's pass/fail verdict on {key} (pass rate)"
            out[key + PASS] = info.model_copy(
                update={"key": key + PASS, "metric": info.metric + PASS, "higher_is_better": True,
                        "primary": False, "definition": definition}
            )  # fmt: skip
            kinds[key + PASS] = "boolean"
    return out, kinds


def _gate_keys(gate: GateSpec, common: list[str], warnings: list[str]) -> list[str]:
    """The metric keys a gate names (``_resolve``); an unknown name located at the gate file's line when it came
    from one, a lost gate's saying it counts the losses of ``hit@k``."""
    what = ("gate {}" if gate.file else "--fail-on {}") + " is not a metric of every run"
    if gate.kind == "lost":
        what = f"{gate.name} counts the queries that lose {gate.metric}: {{}} is not a metric of every run"
    try:
        return _resolve(gate.metric, common, what, warnings)
    except UsageError as exc:
        if gate.file is None:
            raise
        raise UsageError(gate.where(str(exc))) from None


def _select(
    run_metrics: Sequence[Sequence[MetricInfo]],
    metrics: Sequence[str] | None,
    fail_on: Sequence[str | GateSpec],
    warnings: list[str],
) -> _Selection:
    """The metrics of every run (``run_metrics``: each run's), those shown and those gated (``_Selection``)."""
    first = {m.key: m for m in run_metrics[0] if m.key != "n_rel"}
    for run_infos in run_metrics[1:]:
        for m in run_infos:
            first.setdefault(m.key, m)
    in_all = {k for k in first if all(any(m.key == k for m in run_infos) for run_infos in run_metrics)}
    infos, kinds = _with_pass_rows(first)
    common = [k for k in infos if k.removesuffix(PASS) in in_all]
    warnings.extend(f"metric {k!r} is not in every run: not compared" for k in first if k not in in_all)
    chosen: list[str] = []
    for spec in metrics or ():
        chosen += [k for k in _resolve(spec, common, "--metric {} is not in every run", warnings) if k not in chosen]
    if not metrics:
        chosen = list(common)
    gated: dict[tuple[str, str], float] = {}  # one check per (section, key): the strictest tolerated delta
    others: list[tuple[GateSpec, str]] = []
    for gate in map(as_gate, fail_on):
        for key in _gate_keys(gate, common, warnings):
            if gate.kind == "relative":
                gated[gate.section, key] = min(gate.tolerated, gated.get((gate.section, key), gate.tolerated))
            else:
                others.append((gate, key))
            if key not in chosen:
                chosen.append(key)
    specs = [(sec, key, tol) for (sec, key), tol in gated.items()]
    return _Selection(infos, kinds, common, chosen, specs, others)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _row(
    name: str, section: Section_, info: MetricInfo, kind: MetricKind, stat: dict[str, Any], worse: list[dict[str, Any]]
) -> MetricComparison:
    """One metric of one section, candidate vs baseline, over the queries defined in both: the join's ``GROUP BY``
    numbers (means, Δ, its sd, wins/ties/losses) and its got-worse window; the test's interval and p are added by
    ``_tested`` (decided later, ``_correct``)."""
    n_paired = int(stat["n_paired"])
    mean_a, mean_b = stat["means"] if n_paired else (None, None)
    return MetricComparison(
        candidate=name,
        section=section,
        metric=info.key,
        higher_is_better=info.higher_is_better,
        kind=kind,
        n_paired=n_paired,
        n_excluded=int(stat["n"]) - n_paired,
        baseline_mean=mean_a,
        candidate_mean=mean_b,
        delta=stat["delta"] if n_paired else None,
        ci_low=None,
        ci_high=None,
        sd_diff=_finite(stat["sd"]) if n_paired > 1 and stat["sd"] is not None else None,
        p_value=None,
        test="",
        significant=False,
        verdict="not comparable" if not n_paired else "no significant change",
        wins=int(stat["wins"]),
        ties=int(stat["ties"]),
        losses=int(stat["losses"]),
        got_worse=worse,
        n_got_worse=int(stat["losses"]),
    )


def _compare_pair(
    eng: Engine, pair: tuple[int, int], names: Sequence[str], sel: _Selection, opts: CompareOptions
) -> tuple[list[MetricComparison], list[PairedTest], Any, Paired]:
    """Run B of ``pair`` against run A on every metric they share (``sel.compared``), per section: the join of
    query ids (``Engine.pair``), then a metric at a time its cells joined (``Engine.key``), its vectors tested and
    their flip scores kept (a block per section, filled in place), only the sign-flips' sorted |d| waiting for the
    section's Monte Carlo (``metrics.significance.PairedTests``: one generator per section, keyed by the two names
    unordered and the section, so swapping baseline and candidate keeps p)."""

    i, j = pair
    name, key_of_pair = names[j], "|".join(sorted((names[i], names[j])))
    paired = eng.pair(i, j, name)
    sections = [s for s in SECTIONS if paired.sizes[s]]
    tests = {
        s: PairedTests(
            rng=paired_generator(opts.seed, f"{key_of_pair}|{s}"),
            n_resamples=opts.n_resamples,
            confidence=opts.confidence,
        )
        for s in sections
    }
    orders = {s: eng.id_order(s) for s in sections} if sel.compared else {}
    rows: dict[str, list[MetricComparison]] = {s: [] for s in sections}
    flips = [eng.flip_file(paired.sizes[s], len(sel.compared)) for s in sections]
    for k, key in enumerate(sel.compared):
        info, kind = sel.infos[key], sel.kinds[key]
        got = eng.key(i, j, key, info.higher_is_better is False)
        for section, block in zip(sections, flips, strict=True):
            b_all, c_all = got.vectors[section]
            tests[section].add(PairedSample(b_all, c_all, kind))
            block.put(k, flip_scores(b_all, c_all, kind)[orders[section]])
            rows[section].append(_row(name, section, info, kind, got.stats[section], got.worse.get(section, [])))
    done = {s: t.done() for s, t in tests.items()}
    for section in sections:
        for mc, test in zip(rows[section], done[section], strict=True):
            _tested(mc, test)
    ordered = [(rows[s][k], done[s][k]) for k in range(len(sel.compared)) for s in sections]  # metric by metric
    return [mc for mc, _ in ordered], [test for _, test in ordered], flips, paired


@dataclass
class _Compared:
    """``_compare_pairs``' result: every row with its test and its pair of runs (indexes into the runs), the
    baseline's coverage changes and each candidate's unpaired queries."""

    rows: list[MetricComparison]
    tests: list[PairedTest]
    owners: list[tuple[int, int]]
    coverage: list[CoverageChange]
    queries: list[CandidateQueries]
    # each pair's flip scores (``metrics.significance.flip_scores``), a (queries × metrics) block per section (the
    # queries sorted by id: a query's flip is the same whichever run is the baseline and wherever the runs list it)
    flips: dict[tuple[int, int], list[Any]]


def _compare_pairs(
    eng: Engine,
    names: list[str],
    sel: _Selection,
    opts: CompareOptions,
    warnings: list[str],
    pairs: Sequence[tuple[int, int]],
) -> _Compared:
    """Each pair of runs (``pairs``: (A, B) indexes, B compared with A; (0, j): a candidate against the baseline):
    the join, the tests of every metric the runs share and section; for the baseline's pairs also the unpaired
    queries, their warnings and coverage."""
    out = _Compared([], [], [], [], [], {})
    for i, j in pairs:
        rows, done, out.flips[i, j], paired = _compare_pair(eng, (i, j), names, sel, opts)
        out.rows += rows
        out.tests += done
        out.owners += [(i, j)] * len(rows)
        if i == 0:
            q = paired.queries
            if q.only_in_baseline or q.only_in_candidate:
                warnings.append(
                    f"{names[j]}: {len(q.only_in_baseline)} query(ies) only in {names[0]}, "
                    f"{len(q.only_in_candidate)} only in {names[j]}: not paired (listed under queries)"
                )
            if q.kind_changed:
                warnings.append(
                    f"{names[j]}: {len(q.kind_changed)} query(ies) changed kind: compared under the baseline's kind"
                )
            out.queries.append(q)
            out.coverage += eng.coverage(j, names[j], eng.tables[0].foundry_keys)
    return out


def _tested(mc: MetricComparison, test: PairedTest) -> None:
    """``mc`` with its test's interval, effect sizes and p, in place."""
    e = test.effect
    mc.ci_low, mc.ci_high = _finite(e.low), _finite(e.high)
    mc.d_z, mc.d_z_low, mc.d_z_high = _finite(e.d_z), _finite(e.d_low), _finite(e.d_high)
    mc.rank_biserial, mc.n_informative, mc.p_value, mc.test = e.rank_biserial, test.n_informative, test.p, test.test


def _spec(section: str, metric: str) -> str:
    """A gated (section, key) as ``--fail-on`` spells it."""
    return metric if section == "positive" else f"{section}:{metric}"


def _cannot_fire(mc: MetricComparison | None, candidate: str, section: str, metric: str, min_paired: int) -> str:
    """Why a gate on this test can never fire (no test: no comparable pair, or fewer than ``min_paired``), or ''."""
    n = 0 if mc is None or mc.p_value is None else mc.n_paired
    if n == 0:
        return f"{candidate} has no {section} query with {metric} defined in both runs (not comparable)"
    if n < min_paired:
        return (
            f"{candidate} has only {n} {section} queries with {metric} defined in both runs, fewer than "
            f"--min-paired {min_paired}"
        )
    return ""


def _false_alarm(tests: int, alpha: float, correction: Correction) -> tuple[float | None, str]:
    """The bound on the chance that some gate fails although no gated metric changed, and its statement.

    Each gate at its own α: ≤ min(1, m·α), the union bound (Bonferroni's inequality), stated because it holds
    whatever the dependence between the tests — they share the queries, so 1 − (1 − α)^m, exact only for
    independent tests, is not a bound here. Holm across gates: ≤ α (strong control). Benjamini–Hochberg: ≤ α when
    no gated metric changed (the false discovery rate otherwise)."""
    if tests == 0:
        return None, "no relative gate (a floor or a lost-query count tests no difference)"
    plural = f"{tests} gated test{'s' if tests != 1 else ''}"
    if correction == "none":
        rate = min(1.0, tests * alpha)
        each = ", each at its own" if tests != 1 else " at"
        return rate, f"{plural}{each} α = {alpha:g}: false-alarm rate across all gates ≤ {rate:.4g} (union bound m·α)"
    name = CORRECTION_NAME[correction]
    text = f"{plural}, {name}-corrected across gates: false-alarm rate across all gates ≤ α = {alpha:g}"
    return alpha, text + (" when no gated metric changed (false discovery rate ≤ α)" if correction == "bh" else "")


def _power(mc: MetricComparison | None, alpha: float, delta: float | None) -> dict[str, Any]:
    """The gate test's power at α (``metrics.power``, paired t, 80 %): the minimum detectable |Δ| at the current
    n (``mde``) and, for the asked Δ (``delta``: ``--power-delta``, else the tolerated drop when > 0, else none),
    the paired queries needed (``queries_needed``)."""
    n, sd = (0, None) if mc is None else (mc.n_paired, mc.sd_diff)
    return {
        "power": POWER,
        "alpha": alpha,
        "n": n,
        "mde": min_detectable_delta(n, sd, alpha),
        "delta": delta,
        "queries_needed": None if delta is None else queries_needed(delta, sd, alpha),
    }


def _checks(
    sel: _Selection,
    candidates: Sequence[str],
    by: Mapping[tuple[str, str, str], MetricComparison],
    opts: CompareOptions,
) -> list[dict[str, Any]]:
    """One check per ``--fail-on`` (section, metric) × candidate, undecided: ``passed`` with its test's p, or
    ``skipped`` with why it could never fire (``_cannot_fire``); each with its test's power (``_power``)."""
    checks: list[dict[str, Any]] = []
    for section, metric, tol in sel.gate_specs:
        for cand in candidates:
            mc = by.get((cand, section, metric))
            why = _cannot_fire(mc, cand, section, metric, opts.min_paired)
            asked = opts.power_delta if opts.power_delta is not None else (tol if tol > 0 else None)
            checks.append(
                {
                    "kind": "relative",
                    "gate": _spec(section, metric) + (f":{tol:g}" if tol else ""),
                    "candidate": cand,
                    "section": section,
                    "metric": metric,
                    "tolerated": tol,
                    "n_paired": 0 if mc is None else mc.n_paired,
                    "delta": None if mc is None else mc.delta,
                    "p": None if why or mc is None else mc.p_value,
                    "p_gate": None,
                    "outcome": "skipped" if why else "passed",
                    "reason": why,
                    "power": _power(mc, opts.alpha, asked),
                }
            )
    return checks


def _refuse_empty(checks: list[dict[str, Any]]) -> None:
    """A ``UsageError`` naming every gate that could never fire, and the ways out."""
    empty = [c for c in checks if c["outcome"] == "skipped"]
    if not empty:
        return
    lines = [
        f"--fail-on {_spec(c['section'], c['metric']) if c['kind'] == 'relative' else c['gate']}: {c['reason']}"
        for c in empty
    ]
    fewer = ", lower --min-paired" if any(c.get("n_paired", c.get("n")) for c in empty) else ""
    raise UsageError(
        "; ".join(lines) + f": this gate could never fire. Drop it{fewer}, or pass --allow-empty-gate to report it "
        "as a skipped check"
    )


def _coverage_reasons(coverage: list[CoverageChange], tolerated: float) -> list[str]:
    return [
        f"{cc.candidate}: coverage of {cc.metric} dropped from {cc.baseline or 0:.1%} to "
        f"{(cc.candidate_coverage or 0):.1%}"
        for cc in coverage
        if cc.drop > tolerated + 1e-12
    ]


def _not_decided(checks: list[dict[str, Any]], opts: CompareOptions, reasons: list[str]) -> list[str]:
    """With a trust floor (``opts.trust_floor``), each decided check on a judge metric whose judge is not trusted
    (``_gate_trust.untrusted``: κ unknown or below the floor, or the corrected interval wider than the Δ asked —
    the power's Δ, else the observed |Δ|) becomes ``inconclusive``, neither passed nor failed: its failure reason
    leaves ``reasons``. Returns the inconclusive checks' reasons."""
    if opts.trust_floor is None or opts.trust is None:
        return []
    out: list[str] = []
    for c in checks:
        trust = opts.trust.get(c["metric"])
        if c["outcome"] == "skipped" or trust is None:
            continue
        asked = c["power"]["delta"]
        effect = asked if asked is not None else (abs(c["delta"]) if c["delta"] else None)
        why = untrusted(trust, opts.trust_floor, effect, c["power"]["queries_needed"])
        if not why:
            continue
        if c["outcome"] == "failed":
            reasons.remove(c["reason"])
        c["outcome"], c["reason"] = "inconclusive", f"{c['candidate']}: {_spec(c['section'], c['metric'])}: {why}"
        out.append(c["reason"])
    return out


def _written_checks(
    sel: _Selection,
    names: Sequence[str],
    by: Mapping[tuple[str, str, str], MetricComparison],
    opts: CompareOptions,
    floors: Mapping[tuple[str, str, str], Any],
) -> list[dict[str, Any]]:
    """One check per floor or lost gate × candidate (``_gates.decide_floor``, ``_gates.decide_lost``): a floor on
    the candidate's defined values of the section (``floors``), a lost gate on the losses of its ``hit@k`` row."""
    checks: list[dict[str, Any]] = []
    for gate, key in sel.gates:
        for cand in names[1:]:
            if gate.kind == "floor":
                on = gate.on or opts.floor_on
                values = floors[cand, gate.section, key]
                bounds = metric_bounds(sel.infos[key])
                checks.append(
                    decide_floor(
                        gate, cand, values, on=on, confidence=opts.confidence, min_n=opts.min_paired, bounds=bounds
                    )
                )
                continue
            mc = by.get((cand, gate.section, key))
            n = 0 if mc is None else mc.n_paired
            eligible = 0 if mc is None or mc.baseline_mean is None else round(mc.baseline_mean * n)
            lost_ids = [] if mc is None else [str(w["query_id"]) for w in mc.got_worse]
            lost = 0 if mc is None else mc.n_got_worse
            checks.append(decide_lost(gate, cand, names[0], lost=lost, lost_ids=lost_ids, eligible=eligible))
    return checks


def _underpowered(checks: list[dict[str, Any]], by: Mapping[tuple[str, str, str], MetricComparison]) -> list[str]:
    """Each passed relative check whose test could not have seen the change asked about
    (``_gates.underpowered``) becomes ``inconclusive``; returns their reasons."""
    out: list[str] = []
    for c in checks:
        if c["kind"] != "relative" or c["outcome"] != "passed":
            continue
        mc = by[c["candidate"], c["section"], c["metric"]]
        why = underpowered(mc.delta, mc.losses, mc.sd_diff, c["power"], higher_is_better=mc.higher_is_better)
        if why:
            c["outcome"] = "inconclusive"
            c["reason"] = f"{c['reason']}; {why}"
            out.append(c["reason"])
    return out


def _gate(
    sel: _Selection,
    names: Sequence[str],
    comparisons: list[MetricComparison],
    coverage: list[CoverageChange],
    opts: CompareOptions,
    floors: Mapping[tuple[str, str, str], Any] | None = None,
) -> dict[str, Any]:
    """The gate's one decision (``Comparison.gate``; the exit code, the JUnit cases and the pytest items read it).

    One check per candidate × ``--fail-on`` (section, metric). A check whose test did not run (no comparable
    pair, or fewer than ``min_paired``) could never fire: a ``UsageError`` naming it, or with ``allow_empty`` a
    skipped check. The others are the primary family's rows (``_correct``): a check fails when its row's one
    verdict is "worse" (corrected among the gated tests, outside the judge's noise band) by more than its
    tolerated delta, so the table, the gate and the exit code say the same. A Foundry metric's coverage dropping by
    more than ``coverage_drop`` fails too. The false-alarm rate across gates is stated by ``_false_alarm``."""
    by = {(mc.candidate, str(mc.section), mc.metric): mc for mc in comparisons}
    checks = _checks(sel, names[1:], by, opts)
    written = _written_checks(sel, names, by, opts, floors or {})
    if not opts.allow_empty_gate:
        _refuse_empty(checks + written)
    ran = [c for c in checks if c["p"] is not None]
    reasons: list[str] = []
    for c in ran:
        mc = by[c["candidate"], c["section"], c["metric"]]
        c["p_gate"] = p = mc.p_adjusted
        c["verdict"] = mc.verdict
        how = f"p = {p:.4g}, {mc.correction}"
        if mc.verdict == "worse" and abs(mc.delta or 0.0) > c["tolerated"]:
            c["outcome"] = "failed"
            c["reason"] = (
                f"{mc.candidate}: {mc.section} {mc.metric} regressed by {abs(mc.delta or 0):.4g} "
                f"({how} < {opts.alpha}; tolerated {c['tolerated']:g})"
            )
            reasons.append(c["reason"])
        else:
            c["reason"] = f"{mc.candidate}: {mc.section} {mc.metric}: {mc.verdict} ({how})"
            if mc.verdict == "worse":
                c["reason"] += f", within the tolerated {c['tolerated']:g}"
    inconclusive = _not_decided(checks, opts, reasons)
    inconclusive += _underpowered(checks, by)
    for c in written:
        if c["outcome"] == "failed":
            reasons.append(c["reason"])
        elif c["outcome"] == "inconclusive":
            inconclusive.append(c["reason"])
    checks += written
    checked = bool(sel.gate_specs or sel.gates) or opts.coverage_drop is not None
    if checked:
        reasons += _coverage_reasons(coverage, opts.coverage_drop or 0.0)
    rate, statement = _false_alarm(len(ran), opts.alpha, opts.gate_correction)
    return {
        "checked": checked,
        "failed": bool(reasons),
        "reasons": reasons,
        "inconclusive": inconclusive,
        "alpha": opts.alpha,
        "correction": opts.gate_correction,
        "tests": len(ran),
        "false_alarm_rate": rate,
        "false_alarm": statement if sel.gate_specs or sel.gates else "coverage only (no --fail-on)",
        "checks": checks,
    }


def _wy_family(tests: list[PairedTest], scores: list[FlipBlock], n_resamples: int, rng: Any) -> tuple[list[float], str]:
    """One pair's secondary tests corrected by Westfall–Young minP over the pair's joint sign flips (``scores``: a
    block of flip scores per section, its chosen columns the tests in order); the adjusted p is never below the
    test's own p (a Wilcoxon's or McNemar's exact p, a sign-flip's shown p)."""
    _, adjusted = westfall_young(scores, n_resamples=n_resamples, rng=rng)
    informative = sum(b.height for b in scores)
    flips = f"exact over 2^{informative}" if 2**informative <= n_resamples else f"{n_resamples} flips"
    out = [max(float(q), float(t.p or 0.0)) for q, t in zip(adjusted, tests, strict=True)]
    return out, f"{WY_NAME} over {len(tests)} ({flips})"


def _correct(done: _Compared, sel: _Selection, opts: CompareOptions, names: Sequence[str]) -> tuple[int, int, int]:
    """The one decision of every row, in place; returns the sizes of the secondary and primary families and the
    tests left out of both. Primary: the gated (section, metric) of each candidate against the baseline, corrected
    among themselves (``opts.gate_correction``, Holm by default): they alone set the exit code (``_gate`` reads
    their verdicts). Secondary: every other row, corrected per pair of runs by Westfall–Young minP over the pair's
    joint sign flips (``metrics.significance.westfall_young``: copies of one metric cost nothing), or across all
    of them by Holm / Benjamini–Hochberg / none. A test with every paired difference 0 (p = 1) is shown with
    p_adjusted = 1, in no family; fewer than ``min_paired`` paired queries: "too few paired queries", no decision.
    The verdict is ``metrics.significance.verdict``'s: a significant change no larger than the judge's noise band
    (``opts.noise``) is "within judge noise"."""
    min_n, alpha, noise = opts.min_paired, opts.alpha, opts.noise or {}
    gated = {(sec, key) for sec, key, _ in sel.gate_specs}
    is_primary = [
        i == 0 and (mc.section, mc.metric) in gated for mc, (i, _) in zip(done.rows, done.owners, strict=True)
    ]
    ran = [k for k, t in enumerate(done.tests) if in_family(t, min_n)]
    primary = [k for k in ran if is_primary[k]]
    secondary = [k for k in ran if not is_primary[k]]
    adjusted: dict[int, tuple[float, str]] = {}
    families: list[tuple[list[int], Correction]] = [(primary, opts.gate_correction)]
    if opts.correction != "westfall-young":
        families.append((secondary, opts.correction))
    for family, method in families:
        ps = adjust_pvalues([done.tests[k].p or 0.0 for k in family], method)
        label = "none (raw p)" if method == "none" else f"{CORRECTION_NAME[method]} over {len(family)}"
        adjusted.update({k: (q, label) for k, q in zip(family, ps, strict=True)})
    if opts.correction == "westfall-young":
        for pair, blocks in done.flips.items():
            mine = [k for k in secondary if done.owners[k] == pair]
            if mine:
                first, width = done.owners.index(pair), len(blocks)  # the pair's rows: metric by metric, sections
                rows = [k for s in range(width) for k in mine if (k - first) % width == s]  # section by section
                columns = [[(k - first) // width for k in rows if (k - first) % width == s] for s in range(width)]
                scores = [FlipBlock(b, c) for b, c in zip(blocks, columns, strict=True)]
                rng = paired_generator(opts.seed, "|".join(sorted(names[i] for i in pair)) + "|joint")
                ps, label = _wy_family([done.tests[k] for k in rows], scores, opts.n_resamples, rng)
                adjusted.update({k: (q, label) for k, q in zip(rows, ps, strict=True)})
    left_out = 0
    for k, (mc, test) in enumerate(zip(done.rows, done.tests, strict=True)):
        mc.family = "primary" if is_primary[k] else "secondary"
        if k in adjusted:
            q, mc.correction = adjusted[k]
            test = replace(test, p_adjusted=q, significant=q < alpha)
        elif test.p is not None and test.n >= min_n and test.n_informative == 0:
            left_out += 1
            mc.correction = LEFT_OUT
            test = replace(test, p_adjusted=test.p, significant=False)
        mc.p_adjusted = test.p_adjusted
        mc.in_family = k in adjusted
        mc.verdict = verdict(test, higher_is_better=mc.higher_is_better, min_n=min_n, band=noise.get(mc.metric))
        mc.significant = mc.verdict in ("better", "worse", "changed")
    return len(secondary), len(primary), left_out


def _without_pass_rows(sel: _Selection) -> _Selection:
    """The selection without the judges' ``/pass`` rows (``judge_tests=False``), unless one is gated."""
    gated = {key for _, key, _ in sel.gate_specs} | {key for _, key in sel.gates}
    keep = [k for k in sel.common if not k.endswith(PASS) or k in gated]
    return _Selection(sel.infos, sel.kinds, keep, [k for k in sel.chosen if k in keep], sel.gate_specs, sel.gates)


def _local_lines(comparisons: list[MetricComparison], sel: _Selection) -> list[LocalLine]:
    """The positive Foundry rows (each judge's score and pass/fail) as Foundry's comparison is put beside."""
    out = []
    for mc in comparisons:
        info = sel.infos[mc.metric]
        if mc.section != "positive" or info.source != "foundry" or info.criterion is None:
            continue
        metric = info.metric.removesuffix(PASS)
        out.append(
            LocalLine(
                candidate=mc.candidate,
                key=mc.metric,
                criterion=info.criterion,
                metric=metric,
                score=not mc.metric.endswith(PASS),
                test=mc.test,
                verdict=mc.verdict,
                delta=mc.delta,
                p_adjusted=mc.p_adjusted,
            )
        )
    return out


noise_bands_by_key = noise_bands  # the name compare's callers know: each judge's bands under its report keys


def _headline(base: RunTable, metrics: Sequence[str] | None, chosen: list[str]) -> list[str]:
    """The sweep table's metrics: those asked for, else rr, recall and ndcg at the stage k and the primary Foundry
    metrics."""
    if metrics:
        return list(chosen)
    k = base.stage_k
    wanted = [(m @ k).key for m in map(parse_measure, _HEADLINE)] if k is not None else []
    wanted += [m.key for m in base.infos if m.source == "foundry" and m.primary]
    return [key for key in wanted if key in chosen]


def _options(options: CompareOptions | None, choices: Mapping[str, Any]) -> CompareOptions:
    """``options`` with ``choices`` (``CompareOptions``' fields as keywords, the Python API's spelling) put in."""
    known = {f.name for f in fields(CompareOptions)}
    unknown = sorted(set(choices) - known)
    if unknown:
        raise TypeError(f"compare_runs() got unexpected keyword argument(s) {', '.join(unknown)}")
    return replace(options or CompareOptions(), **choices)


@gc_paused()
def compare_runs(
    runs: Sequence[str | os.PathLike[str] | Report],
    options: CompareOptions | None = None,
    *,
    labels: Sequence[str] | None = None,
    foundry: FoundryRequest | None = None,
    anchor: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
    anchor_verdicts: str | os.PathLike[str] | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    **choices: Any,
) -> Comparison:
    """Compare run folders (or built reports: their folders); the first is the baseline. Pair → test → gate: each
    run's metrics become a table of the engine (``_join``), each pair of runs is joined by query id, each metric's
    paired differences tested (``metrics.significance``), the exploratory family corrected, the gate decided.
    Never raises on a failed gate: read ``comparison.gate["failed"]`` (the CLI turns it into exit code 3).

    ``options`` (``CompareOptions``), or its fields as keywords (``fail_on=["rr@10"]``, ``n_resamples=500``):

    - ``metrics`` and ``fail_on`` name report keys: a Foundry key as written, or a local measure in any
      ``parse_measure`` spelling (``MRR@10`` = ``rr@10``; ``ndcg`` alone = ndcg at every k of the runs). Every
      metric the runs share is compared; ``metrics`` chooses the ones shown. Each metric's test follows its kind: a
      judge's score by Wilcoxon and its pass/fail verdict (``<key>/pass``) by McNemar, in the one table and the one
      family (``judge_tests=False`` leaves the ``/pass`` rows out).
    - ``correction``: the exploratory family's (``_correct``). The gate (``_gate``) decides each ``fail_on`` test at
      ``alpha``, or corrected across the gate's tests with ``gate_correction``; a gate that cannot run (fewer than
      ``min_paired``) is a ``UsageError``, or a skipped check with ``allow_empty_gate``. ``fail_on`` also takes
      floors (``recall@5>=0.9``, decided on the candidate's interval or, ``floor_on="estimate"``, its mean) and
      lost-query limits (``lost@5<=0``) (``_gates``); ``coverage_drop``: the tolerated drop of a Foundry metric's
      coverage. Each check carries its power (``power_delta``); ``trust`` (``judge_trust_by_key``) with
      ``trust_floor`` makes a gated judge metric whose judge is not trusted ``inconclusive`` (exit 4).
    - ``noise``: report key → the judge's noise band (``noise_bands_by_key``): a change inside it is not a change.
    - ``all_pairs``: every pair of runs tested and ranked (``Comparison.all_pairs``); the gate still compares each
      candidate with the baseline.

    ``labels``: the runs' names (default: their folders'). ``foundry``: Foundry's own comparison of the folders,
    shown beside the local rows, never gated (e.g. ``foundry._insights.request_comparison``). ``anchor`` (OLD, NEW):
    folders of the same frozen rows judged by the old and the new judge: ``Comparison.drift`` tells "judge
    changed" from "system changed" (``_drift``), with each judge's κ against ``anchor_verdicts`` when given.
    ``progress(stage, done, total)``: ``("reading runs", i, len(runs))`` after each run's tables are written.

    Example::

        comparison = compare_runs(["runs/a", "runs/b"], fail_on=["rr@10"])
        comparison.get("b", "rr@10").verdict  # 'worse', 'better', 'no significant change', ...
    """
    opts = _options(options, choices)
    if len(runs) < 2:
        raise UsageError(_TWO_RUNS)
    answer = foundry(runs) if foundry is not None else None
    with engine() as (work, con):
        tables = []
        for i, run in enumerate(runs):
            folder, k = (run.provenance.run_dir, run.params.stage_k) if isinstance(run, Report) else (run, None)
            tables.append(folder_table(folder, k, work, i))
            if progress is not None:
                progress("reading runs", i + 1, len(runs))
        names = run_names([t.run_dir for t in tables], labels)
        eng = Engine(con, tables, work)

        def describe(chosen: list[str]) -> tuple[list[str], list[RunSummaryRow]]:
            rows = [eng.summary(i, name, chosen) for i, name in enumerate(names)]
            return _headline(tables[0], opts.metrics, chosen), rows

        comparison = compare_sources(eng, names, describe, opts, answer)
    _name_judges(comparison, tables, names)
    if anchor is not None:
        engine_opts = CompareOptions(seed=opts.seed, n_resamples=opts.n_resamples, alpha=opts.alpha,
                                     confidence=opts.confidence, correction=opts.correction,
                                     min_paired=opts.min_paired)  # fmt: skip
        comparison.drift = _anchor_drift(comparison, anchor, anchor_verdicts, engine_opts)
    return comparison


def _name_judges(comparison: Comparison, tables: Sequence[RunTable], names: Sequence[str]) -> None:
    """Each judge metric's row gets the two runs' judges (``runfolder.judge_identities`` of their folders), and
    ``judges_differ`` when both are named and differ (all-pairs rows are left as they are)."""
    from ..runfolder import judge_identities

    judges = [judge_identities(t.run_dir) for t in tables]
    criterion = {m.key: m.criterion for t in tables for m in t.infos if m.source == "foundry" and m.criterion}
    at = {name: i for i, name in enumerate(names)}
    for mc in comparison.metrics:
        crit = criterion.get(mc.metric.removesuffix(PASS))
        pair = [judges[0].get(crit or ""), judges[at[mc.candidate]].get(crit or "")]
        if crit is None or pair == [None, None]:
            continue
        mc.judges = pair
        mc.judges_differ = None not in pair and pair[0] != pair[1]


def _anchor_drift(
    comparison: Comparison,
    anchor: tuple[str | os.PathLike[str], str | os.PathLike[str]],
    verdicts: str | os.PathLike[str] | None,
    engine: CompareOptions,
) -> JudgeDrift:
    """The anchor's own comparison (OLD as baseline, NEW as candidate; the one engine with the comparison's
    ``engine`` opts, its own family, the judge tests on) and, per judge metric of ``comparison``, the drift
    verdict (``_drift.drift_rows``); with ``verdicts``, each anchor judge's κ against the humans
    (``trust_section`` → ``judge_trust_by_key``)."""
    from ..report._trust import trust_section
    from ..runfolder import judge_identities

    old, new = anchor
    shift = compare_runs([old, new], engine, labels=["old judge", "new judge"])
    trusts = [judge_trust_by_key(trust_section(r, verdicts)) for r in anchor] if verdicts is not None else [{}, {}]
    return JudgeDrift(
        old=str(old),
        new=str(new),
        judges_old=judge_identities(old),
        judges_new=judge_identities(new),
        human_verdicts=None if verdicts is None else str(verdicts),
        rows=drift_rows(comparison.metrics, shift.metrics, *trusts),
    )


@dataclass(frozen=True)
class CompareOptions:
    """``compare_runs``' choices (see its docstring), shared by the run folders' and the run files' comparisons."""

    metrics: Sequence[str] | None = None
    seed: int = 42
    n_resamples: int = 10_000
    alpha: float = 0.05
    confidence: float = 0.95
    fail_on: Sequence[str | GateSpec] = ()
    coverage_drop: float | None = None
    correction: SecondaryCorrection = "westfall-young"
    gate_correction: Correction = "holm"
    allow_empty_gate: bool = False
    min_paired: int = MIN_PAIRED
    noise: Mapping[str, float] | None = None
    judge_tests: bool = True
    all_pairs: bool = False
    power_delta: float | None = None
    trust: Mapping[str, GateTrust] | None = None
    trust_floor: float | None = None
    floor_on: FloorOn = "interval"


Describe = Any  # (shown metric keys) -> (the sweep's metrics, one summary row per run)


def _pairs_of(n: int, all_pairs: bool) -> list[tuple[int, int]]:
    """The baseline's pairs (0, j) first, then, for all pairs, every (i, j) with 0 < i < j."""
    base = [(0, j) for j in range(1, n)]
    return base + ([(i, j) for i in range(1, n) for j in range(i + 1, n)] if all_pairs else [])


def compare_sources(
    eng: Engine, names: list[str], describe: Describe, opts: CompareOptions, answer: Any = None
) -> Comparison:
    """The comparison of the runs of ``eng`` (run folders' or run files' tables): select the metrics → per pair
    of runs: join, test each section's metrics → correct the one family → gate → summaries (``describe``: the
    shown keys → the sweep's metrics and one ``RunSummaryRow`` per run) and, with ``opts.all_pairs``, the ranking
    of every metric (``AllPairs``); ``answer``: Foundry's own comparison, put beside the local rows. Steps and
    rules: ``compare_runs``."""
    warnings: list[str] = []
    sel = _select([t.infos for t in eng.tables], opts.metrics, opts.fail_on, warnings)
    if not opts.judge_tests:
        sel = _without_pass_rows(sel)
    done = _compare_pairs(eng, names, sel, opts, warnings, _pairs_of(len(names), opts.all_pairs))
    family, primary, left_out = _correct(done, sel, opts, names)
    baseline_rows = [mc for mc, (i, _) in zip(done.rows, done.owners, strict=True) if i == 0]
    floors = {
        (names[j], gate.section, key): eng.section_values(j, key, gate.section)
        for gate, key in sel.gates
        if gate.kind == "floor"
        for j in range(1, len(names))
    }
    gate = _gate(sel, names, baseline_rows, done.coverage, opts, floors)  # a gate that cannot fire stops here
    shown = set(sel.chosen)
    headline, summaries = describe(sel.chosen)
    return Comparison(
        headline=headline,
        baseline=names[0],
        candidates=names[1:],
        seed=opts.seed,
        n_resamples=opts.n_resamples,
        alpha=opts.alpha,
        confidence=opts.confidence,
        correction=opts.correction,
        exploratory_tests=family,
        primary_tests=primary,
        left_out_tests=left_out,
        gate_correction=opts.gate_correction,
        min_paired=opts.min_paired,
        runs=summaries,
        metrics=[mc for mc in baseline_rows if mc.metric in shown],
        coverage=done.coverage,
        queries=done.queries,
        gate=gate,
        warnings=warnings,
        foundry_comparison=beside_foundry(answer, names, _local_lines(baseline_rows, sel)),
        all_pairs=_all_pairs(eng, names, sel, done) if opts.all_pairs else None,
    )


def _all_pairs(eng: Engine, names: list[str], sel: _Selection, done: _Compared) -> AllPairs:
    """Every pair's rows (shown metrics) and, per shown metric and section, the systems ranked by their means
    (``metrics.pairs.competition_ranks``), the pairs that differ after correction, their compact letters
    (``metrics.pairs.compact_letters``) and the win/tie/loss matrix."""
    from ..metrics.pairs import compact_letters, competition_ranks
    from ..metrics.ranking import nan_mean

    shown = set(sel.chosen)
    pairs = [
        PairComparison(baseline=names[i], **mc.model_dump())
        for mc, (i, _) in zip(done.rows, done.owners, strict=True)
        if mc.metric in shown
    ]
    rankings: list[MeasureRanking] = []
    for key in sel.chosen:
        for section in SECTIONS:
            rows = [pc for pc in pairs if pc.metric == key and pc.section == section]
            if not any(pc.n_paired for pc in rows):
                continue
            hib = sel.infos[key].higher_is_better
            means = [nan_mean(eng.section_values(i, key, section), "drop") for i in range(len(names))]
            ranks = competition_ranks(means, higher_is_better=hib)
            order = sorted(range(len(names)), key=lambda i: (ranks[i], i))
            differ = [(pc.baseline, pc.candidate) for pc in rows if pc.significant]
            letters = compact_letters([names[i] for i in order], differ)
            wtl: dict[str, dict[str, list[int]]] = {name: {} for name in names}
            for pc in rows:
                wtl[pc.candidate][pc.baseline] = [pc.wins, pc.ties, pc.losses]
                wtl[pc.baseline][pc.candidate] = [pc.losses, pc.ties, pc.wins]
            systems = [
                RankedSystem(system=names[i], mean=means[i], rank=ranks[i], letters=letters[names[i]]) for i in order
            ]
            rankings.append(
                MeasureRanking(
                    section=section,
                    metric=key,
                    higher_is_better=hib,
                    systems=systems,
                    differ=[list(d) for d in differ],
                    wtl=wtl,
                )
            )
    return AllPairs(systems=list(names), rankings=rankings, pairs=pairs)

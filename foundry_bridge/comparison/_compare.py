"""Compare two or more runs over the same queries: paired per-query deltas, significance, CI, a CI gate.

The statistics are ``metrics.significance``'s, the one comparison engine: each metric's test by its kind (the
sign-flip for continuous metrics, Wilcoxon for a judge's ordinal score, McNemar for pass/fail — a judge's verdict,
keyed ``<metric key>/pass``, and boolean metrics), one family, one ``Verdict``. This module pairs the queries and
keeps the table; ``_render`` prints it.

The first run is the baseline; every other run is a candidate compared with it. Queries are paired by
``query_id``; positive and negative queries are compared separately; a query present in only one run is listed,
never silently dropped; a query whose value is undefined (or errored/missing) in either run is left out of that
metric's pairing and counted.

Two decisions, kept apart: the exploratory verdicts (``_correct``: one family, every metric the runs share ×
candidates × sections, whatever ``metrics`` shows or ``fail_on`` gates) and the gate (``_gate``: each ``--fail-on``
test at its own α unless a correction across gates is asked for, so a new gate never weakens an existing one).
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field

from .._io import gc_paused
from .._text import did_you_mean
from ..catalog import CATALOG
from ..errors import FoundryBridgeError, UsageError, spelled
from ..metrics._arrays import Codes, IdIndex, same_distinct
from ..metrics.measures import is_measure_name, measure_for_key, parse_measure
from ..metrics.power import POWER, min_detectable_delta, queries_needed
from ..metrics.significance import (
    CORRECTION_NAME,
    LEFT_OUT,
    WY_NAME,
    Correction,
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
from ..report._build import build_report, foundry_key
from ..report._columns import SCORED
from ..report._foundry import FoundryComparison, FoundryRequest, LocalLine, beside_foundry
from ..report._model import LIST_CAP, STAGES, MetricInfo, Report
from ..report._trust import noise_bands
from ._drift import JudgeDrift, drift_rows
from ._gate_trust import GateTrust, judge_trust_by_key, untrusted
from ._gates import FloorOn, GateSpec, _canonical, as_gate, decide_floor, decide_lost, parse_fail_on, underpowered
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
    "ComparedRun",
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
PASS = "/pass"  # a judge's pass/fail verdict beside its score: ``<score key>/pass``
MIN_PAIRED = 10  # fewer paired queries than this: "too few paired queries", no decision
_SECTIONS: tuple[Section_, ...] = ("positive", "negative")
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


class ComparedRun(Protocol):
    """What compare reads of a run: each query's id and kind, and each metric's values (a report's ``Columns``, or
    the local measures computed from a run file, ``_files``)."""

    @property
    def query_ids(self) -> Sequence[str]: ...

    @property
    def kinds(self) -> Codes: ...

    @property
    def foundry(self) -> Mapping[str, Any]: ...

    def values(self, key: str, source: str) -> Any: ...


class _Run:
    """One run's queries for pairing: its columns (its report's, or ``columns`` given), each row's kind code (into
    ``kind_names``) and, made only when a pairing needs it, its ids by value (``index``). Nothing per query is a
    Python object."""

    def __init__(self, report: Report | None, columns: ComparedRun | None = None) -> None:
        if columns is None:
            columns = None if report is None else report._columns
        if columns is None:
            raise UsageError("compare needs reports built by build_report (a report read from JSON has no columns)")
        self.report = report
        self.columns: ComparedRun = columns
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

    def values(self, key: str, source: str, kind: MetricKind = "continuous") -> Any:
        """``key``'s value per row, NaN where undefined; a pass/fail (``kind`` boolean, or a ``/pass`` key) is the
        verdict as 0/1."""
        import numpy as np

        if source == "local" or kind != "boolean":
            return self.columns.values(key, source)
        cells = self.columns.foundry[key.removesuffix(PASS)].numbers()  # the verdicts read for each query's kind
        passed = np.asarray(cells["passed"])
        return np.where((cells["status"] == SCORED) & (passed >= 0), passed, np.nan).astype(np.float64)


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


def _kind(info: MetricInfo) -> tuple[MetricKind, bool]:
    """A metric's kind by the catalog (local measures and unknown metrics: continuous), and whether it is a
    judge's score (a judge's ordinal or continuous score: its pass/fail verdict is compared too, as ``/pass``)."""
    spec = CATALOG.get(info.evaluator or "") if info.source == "foundry" else None
    if spec is None:
        return "continuous", False
    try:
        kind = spec.metric(info.metric).kind
    except KeyError:
        return "continuous", False
    if kind == "boolean":
        return "boolean", False
    return ("ordinal" if kind == "ordinal" else "continuous"), spec.needs_deployment


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


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _row(
    name: str,
    section: Section_,
    info: MetricInfo,
    kind: MetricKind,
    b_all: Any,
    c_all: Any,
    ids: Sequence[str],
) -> MetricComparison:
    """One metric of one section, candidate vs baseline, over the queries defined in both: means, Δ, wins/ties/losses
    and the queries that got worse; the test's interval and p are added by ``_tested`` (decided later,
    ``_correct``)."""
    import numpy as np

    defined = ~(np.isnan(b_all) | np.isnan(c_all))
    b, c = b_all[defined], c_all[defined]
    n_paired = int(b.size)
    means = (float(b.mean()), float(c.mean())) if n_paired else (None, None)
    d = c - b
    del b, c
    hib = info.higher_is_better
    worse_mask = (d < 0) if hib is not False else (d > 0)
    wins = int(np.count_nonzero((d > 0) if hib is not False else (d < 0)))
    worse = np.flatnonzero(worse_mask)
    return MetricComparison(
        candidate=name,
        section=section,
        metric=info.key,
        higher_is_better=hib,
        kind=kind,
        n_paired=n_paired,
        n_excluded=len(ids) - n_paired,
        baseline_mean=means[0],
        candidate_mean=means[1],
        delta=float(d.mean()) if n_paired else None,
        ci_low=None,
        ci_high=None,
        sd_diff=_finite(float(d.std(ddof=1))) if n_paired > 1 else None,
        p_value=None,
        test="",
        significant=False,
        verdict="not comparable" if not n_paired else "no significant change",
        wins=wins,
        ties=int(np.count_nonzero(d == 0)),
        losses=int(worse.size),
        got_worse=_got_worse(ids, defined, b_all, c_all, d, worse),
        n_got_worse=int(worse.size),
    )


def _tested(mc: MetricComparison, test: PairedTest) -> None:
    """``mc`` with its test's interval, effect sizes and p, in place."""
    e = test.effect
    mc.ci_low, mc.ci_high = _finite(e.low), _finite(e.high)
    mc.d_z, mc.d_z_low, mc.d_z_high = _finite(e.d_z), _finite(e.d_low), _finite(e.d_high)
    mc.rank_biserial, mc.n_informative, mc.p_value, mc.test = e.rank_biserial, test.n_informative, test.p, test.test


class _RowIds(Sequence[str]):
    """The query ids of some rows of a run (read one at a time: only the listed ones are)."""

    def __init__(self, ids: Sequence[str], rows: Any) -> None:
        self.ids, self.rows = ids, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        return self.ids[int(self.rows[i])]


def _flip_matrix(ids: Mapping[Any, Sequence[str]], scores: Mapping[Any, list[Any]]) -> Any:
    """The pair's flip scores (``metrics.significance.flip_scores``) as one (queries × rows) matrix, the rows in the
    order ``_compare_candidate`` returns them (metric by metric, the sections within), the queries of each section
    sorted by id: a query's flip is the same whichever run is the baseline and wherever the runs list it."""
    import numpy as np

    sections = list(scores)
    orders = {s: np.argsort(np.asarray(list(ids[s]), dtype=object), kind="stable") for s in sections}
    sizes = [len(orders[s]) for s in sections]
    offsets = dict(zip(sections, np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))
    columns = len(scores[sections[0]]) if sections else 0
    out = np.zeros((sum(sizes), columns * len(sections)))
    for k in range(columns):
        for j, s in enumerate(sections):
            out[offsets[s] : offsets[s] + sizes[j], k * len(sections) + j] = scores[s][k][orders[s]]
    return out


def _compare_candidate(
    base: _Run, cand: _Run, names: tuple[str, str], pairing: _Pairing, sel: _Selection, settings: _Settings
) -> tuple[list[MetricComparison], list[PairedTest], Any]:
    """Every metric the runs share (``sel.compared``), per section, ``names`` = (baseline, candidate), a metric at a
    time: its values are fetched, its rows and tests made, and only the sign-flips' sorted |d| wait for the
    section's Monte Carlo (``metrics.significance.PairedTests``: one generator per section, keyed by the two names
    unordered and the section, so swapping baseline and candidate keeps p)."""
    name, pair = names[1], "|".join(sorted(names))
    sections = [(s, pairing.rows[s]) for s in _SECTIONS if len(pairing.rows[s][0])]
    tests = {
        s: PairedTests(
            rng=paired_generator(settings.seed, f"{pair}|{s}"),
            n_resamples=settings.n_resamples,
            confidence=settings.confidence,
        )
        for s, _ in sections
    }
    ids = {s: _RowIds(base.columns.query_ids, b_rows) for s, (b_rows, _) in sections}
    rows: dict[str, list[MetricComparison]] = {s: [] for s, _ in sections}
    scores: dict[str, list[Any]] = {s: [] for s, _ in sections}
    for key in sel.compared:
        info, kind = sel.infos[key], sel.kinds[key]
        bv, cv = base.values(key, info.source, kind), cand.values(key, info.source, kind)
        for section, (b_rows, c_rows) in sections:
            b_all, c_all = bv[b_rows], cv[c_rows]
            tests[section].add(PairedSample(b_all, c_all, kind))
            scores[section].append(flip_scores(b_all, c_all, kind))
            rows[section].append(_row(name, section, info, kind, b_all, c_all, ids[section]))
        del bv, cv
    done = {s: t.done() for s, t in tests.items()}
    for section, _ in sections:
        for mc, test in zip(rows[section], done[section], strict=True):
            _tested(mc, test)
    ordered = [(rows[s][k], done[s][k]) for k in range(len(sel.compared)) for s, _ in sections]  # metric by metric
    return [mc for mc, _ in ordered], [test for _, test in ordered], _flip_matrix(ids, scores)


@dataclass
class _Compared:
    """``_compare_columns``' result: every row with its test and its pair of runs (indexes into the runs), the
    baseline's coverage changes and each candidate's unpaired queries."""

    rows: list[MetricComparison]
    tests: list[PairedTest]
    owners: list[tuple[int, int]]
    coverage: list[CoverageChange]
    queries: list[CandidateQueries]
    flips: dict[tuple[int, int], Any]  # each pair's flip scores, one column per row of the pair, in order


def _compare_columns(
    runs: Sequence[_Run],
    names: list[str],
    sel: _Selection,
    settings: _Settings,
    warnings: list[str],
    pairs: Sequence[tuple[int, int]],
) -> _Compared:
    """Each pair of runs (``pairs``: (A, B) indexes, B compared with A; (0, j): a candidate against the baseline)
    on their columns: pairing, the tests of every metric the runs share and section; for the baseline's pairs also
    the unpaired queries, their warnings and coverage. One pairing is in memory at a time, and none once this
    returns."""
    out = _Compared([], [], [], [], [], {})
    base_scored: dict[str, int] = {}
    for i, j in pairs:
        a, b, baseline = runs[i], runs[j], i == 0
        pairing = _pair(a, b, names[j], names[i], warnings if baseline else [])
        rows, done, out.flips[i, j] = _compare_candidate(a, b, (names[i], names[j]), pairing, sel, settings)
        out.rows += rows
        out.tests += done
        out.owners += [(i, j)] * len(rows)
        if baseline:
            out.queries.append(pairing.queries)
            out.coverage += _coverage_changes(a, b, names[j], pairing, base_scored)
        del pairing
    return out


def _coverage_changes(
    base: _Run, cand: _Run, name: str, pairing: _Pairing, scored: dict[str, int]
) -> list[CoverageChange]:
    """Coverage over the baseline's queries: a query the candidate lost counts as not scored (Foundry metrics of a
    run folder; a run file has none)."""
    import numpy as np

    if base.report is None:
        return []

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


@dataclass(frozen=True)
class _GateRule:
    """How the gate decides: α for each gate, the correction across the gate's tests (``none``: each at its own
    α), the fewest paired queries a test needs, the judge-noise bands, the tolerated coverage drop (``None``: 0
    when ``--fail-on`` is given, else unchecked) and whether a gate that cannot fire is skipped (else an error)."""

    alpha: float
    correction: Correction
    min_paired: int
    noise: Mapping[str, float]
    coverage_drop: float | None
    allow_empty: bool
    power_delta: float | None = None
    trust: Mapping[str, GateTrust] | None = None
    trust_floor: float | None = None
    floor_on: FloorOn = "interval"
    confidence: float = 0.95


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
    rule: _GateRule,
) -> list[dict[str, Any]]:
    """One check per ``--fail-on`` (section, metric) × candidate, undecided: ``passed`` with its test's p, or
    ``skipped`` with why it could never fire (``_cannot_fire``); each with its test's power (``_power``)."""
    checks: list[dict[str, Any]] = []
    for section, metric, tol in sel.gate_specs:
        for cand in candidates:
            mc = by.get((cand, section, metric))
            why = _cannot_fire(mc, cand, section, metric, rule.min_paired)
            asked = rule.power_delta if rule.power_delta is not None else (tol if tol > 0 else None)
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
                    "power": _power(mc, rule.alpha, asked),
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


def _not_decided(checks: list[dict[str, Any]], rule: _GateRule, reasons: list[str]) -> list[str]:
    """With a trust floor (``rule.trust_floor``), each decided check on a judge metric whose judge is not trusted
    (``_gate_trust.untrusted``: κ unknown or below the floor, or the corrected interval wider than the Δ asked —
    the power's Δ, else the observed |Δ|) becomes ``inconclusive``, neither passed nor failed: its failure reason
    leaves ``reasons``. Returns the inconclusive checks' reasons."""
    if rule.trust_floor is None or rule.trust is None:
        return []
    out: list[str] = []
    for c in checks:
        trust = rule.trust.get(c["metric"])
        if c["outcome"] == "skipped" or trust is None:
            continue
        asked = c["power"]["delta"]
        effect = asked if asked is not None else (abs(c["delta"]) if c["delta"] else None)
        why = untrusted(trust, rule.trust_floor, effect, c["power"]["queries_needed"])
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
    rule: _GateRule,
    floors: Mapping[tuple[str, str, str], Any],
) -> list[dict[str, Any]]:
    """One check per floor or lost gate × candidate (``_gates.decide_floor``, ``_gates.decide_lost``): a floor on
    the candidate's defined values of the section (``floors``), a lost gate on the losses of its ``hit@k`` row."""
    checks: list[dict[str, Any]] = []
    for gate, key in sel.gates:
        for cand in names[1:]:
            if gate.kind == "floor":
                on = gate.on or rule.floor_on
                values = floors[cand, gate.section, key]
                checks.append(
                    decide_floor(gate, cand, values, on=on, confidence=rule.confidence, min_n=rule.min_paired)
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
    rule: _GateRule,
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
    checks = _checks(sel, names[1:], by, rule)
    written = _written_checks(sel, names, by, rule, floors or {})
    if not rule.allow_empty:
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
                f"({how} < {rule.alpha}; tolerated {c['tolerated']:g})"
            )
            reasons.append(c["reason"])
        else:
            c["reason"] = f"{mc.candidate}: {mc.section} {mc.metric}: {mc.verdict} ({how})"
            if mc.verdict == "worse":
                c["reason"] += f", within the tolerated {c['tolerated']:g}"
    inconclusive = _not_decided(checks, rule, reasons)
    inconclusive += _underpowered(checks, by)
    for c in written:
        if c["outcome"] == "failed":
            reasons.append(c["reason"])
        elif c["outcome"] == "inconclusive":
            inconclusive.append(c["reason"])
    checks += written
    checked = bool(sel.gate_specs or sel.gates) or rule.coverage_drop is not None
    if checked:
        reasons += _coverage_reasons(coverage, rule.coverage_drop or 0.0)
    rate, statement = _false_alarm(len(ran), rule.alpha, rule.correction)
    return {
        "checked": checked,
        "failed": bool(reasons),
        "reasons": reasons,
        "inconclusive": inconclusive,
        "alpha": rule.alpha,
        "correction": rule.correction,
        "tests": len(ran),
        "false_alarm_rate": rate,
        "false_alarm": statement if sel.gate_specs or sel.gates else "coverage only (no --fail-on)",
        "checks": checks,
    }


def _wy_family(tests: list[PairedTest], scores: Any, n_resamples: int, rng: Any) -> tuple[list[float], str]:
    """One pair's secondary tests corrected by Westfall–Young minP over the pair's joint sign flips; the adjusted p
    is never below the test's own p (a Wilcoxon's or McNemar's exact p, a sign-flip's shown p)."""
    _, adjusted = westfall_young(scores, n_resamples=n_resamples, rng=rng)
    informative = int(scores.any(axis=1).sum())
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
        for pair, scores in done.flips.items():
            rows = [k for k in secondary if done.owners[k] == pair]
            if rows:
                first = done.owners.index(pair)
                rng = paired_generator(opts.seed, "|".join(sorted(names[i] for i in pair)) + "|joint")
                columns = scores[:, [k - first for k in rows]]
                ps, label = _wy_family([done.tests[k] for k in rows], columns, opts.n_resamples, rng)
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
    if report._columns is not None:
        report._columns.run.release()  # the build's engine memory goes; compare's queries open another
    gc.collect()  # compare runs with the collector paused: the build's cycles go now, not after the next build
    return report


def _reports(
    runs: Sequence[str | os.PathLike[str] | Report], progress: Callable[[str, int, int | None], None] | None
) -> list[Report]:
    """Each run's lean report (a built one as given), saying how many are read."""
    reports: list[Report] = []
    for run in runs:
        reports.append(run if isinstance(run, Report) else _lean_report(run))
        if progress is not None:
            progress("reading runs", len(reports), len(runs))
    return reports


@gc_paused()
def compare_runs(
    runs: Sequence[str | os.PathLike[str] | Report],
    *,
    metrics: Sequence[str] | None = None,
    seed: int = 42,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    confidence: float = 0.95,
    fail_on: Sequence[str | GateSpec] = (),
    coverage_drop: float | None = None,
    labels: Sequence[str] | None = None,
    correction: SecondaryCorrection = "westfall-young",
    gate_correction: Correction = "holm",
    allow_empty_gate: bool = False,
    min_paired: int = MIN_PAIRED,
    noise: Mapping[str, float] | None = None,
    judge_tests: bool = True,
    foundry: FoundryRequest | None = None,
    all_pairs: bool = False,
    power_delta: float | None = None,
    trust: Mapping[str, GateTrust] | None = None,
    trust_floor: float | None = None,
    anchor: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
    anchor_verdicts: str | os.PathLike[str] | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    floor_on: FloorOn = "interval",
) -> Comparison:
    """Compare runs (folders or built reports); the first is the baseline. Never raises on a failed gate:
    read ``comparison.gate["failed"]`` (the CLI turns it into exit code 3).

    ``metrics`` and ``fail_on`` name report keys: a Foundry key as written, or a local measure in any
    ``parse_measure`` spelling (``MRR@10`` = ``rr@10``; ``ndcg`` alone = ndcg at every k of the runs). Every
    metric the runs share is compared; ``metrics`` chooses the ones shown (``Comparison.metrics``, the sweep).
    ``correction``: multiplicity control of the exploratory family, every test of every shared metric
    (``_correct``). The gate (``_gate``) decides each ``fail_on`` test at ``alpha`` on its own p, or corrected
    across the gate's tests with ``gate_correction`` (holm, bh), and states the false-alarm rate across gates; a
    gate whose test cannot run (no comparable pair, fewer than ``min_paired``) is a ``UsageError``, or a skipped
    check with ``allow_empty_gate``. ``noise``: report metric key → the judge-noise band (``noise_bands_by_key``);
    a difference inside it is not a change. Each metric's test is chosen by its kind (``metrics.significance``): a
    judge's score by Wilcoxon and its pass/fail verdict (``<key>/pass``) by McNemar, both in the one table and the
    one family; ``judge_tests=False`` leaves the ``/pass`` rows out. Steps: build the reports → select the metrics →
    per candidate: pair the queries, test each section's metrics → correct the exploratory family → gate →
    summaries. ``foundry``: ask Foundry for its own comparison of the run folders (called with them before
    anything else, e.g. ``foundry._insights.request_comparison``), shown beside the local rows, never gated.
    ``all_pairs``: also every pair of candidates (``Comparison.all_pairs``: the runs ranked by each shown metric,
    which pairs differ, compact letters, win/tie/loss matrix, effect sizes), all pairs in the one family; the gate
    still compares each candidate with the baseline. Each gate check carries its test's power (``_power``): the
    minimum detectable |Δ| at the current n and the queries needed for ``power_delta`` (default: the check's
    tolerated drop when > 0), at ``alpha`` with 80 % power (``metrics.power``). ``trust`` (``judge_trust_by_key``
    of the baseline's trust section) with ``trust_floor`` (a κ): a gated judge metric whose judge is below the floor
    or whose corrected interval is wider than the gate's Δ is ``inconclusive`` (``gate["inconclusive"]``; the CLI's
    exit 4 when nothing failed), with the labels / queries it needs (``_not_decided``). ``fail_on`` also takes
    floors (``recall@5>=0.9``) and lost-query limits (``lost@5<=0``), as text or parsed (``_gates.GateSpec``, a
    gate file's: ``_gates.load_gate_file``); a floor is decided on its candidate's 95 % interval or, with
    ``floor_on="estimate"``, its point estimate; a relative gate that could not have seen the change asked about
    is inconclusive too (``_gates``).
    Each judge metric's row names the two runs' judges (``judges``, ``runfolder.judge_identities``) and says when
    they differ (``judges_differ``). ``anchor`` (OLD, NEW): run folders of the same frozen rows judged by the old
    and the new judge; ``Comparison.drift`` tells per judge metric "judge changed" from "system changed"
    (``_drift``, the rule and its formulas), with each judge's κ against ``anchor_verdicts`` (human verdicts on the
    anchor rows) when given.
    ``progress(stage, done, total)``: ``("reading runs", i, len(runs))`` after each run's report is built (the
    long part; the tests that follow take a fraction of it).
    """
    if len(runs) < 2:
        raise UsageError(_TWO_RUNS)
    answer = foundry(runs) if foundry is not None else None
    reports = _reports(runs, progress)
    names = run_names([r.provenance.run_dir for r in reports], labels)

    def describe(chosen: list[str]) -> tuple[list[str], list[RunSummaryRow]]:
        rows = [_summary_row(rep, name, chosen) for rep, name in zip(reports, names, strict=True)]
        return _headline(reports[0], metrics, chosen), rows

    comparison = compare_sources(
        [_Run(r) for r in reports],
        names,
        [r.metrics for r in reports],
        describe,
        CompareOptions(
            metrics=metrics,
            seed=seed,
            n_resamples=n_resamples,
            alpha=alpha,
            confidence=confidence,
            fail_on=fail_on,
            coverage_drop=coverage_drop,
            correction=correction,
            gate_correction=gate_correction,
            allow_empty_gate=allow_empty_gate,
            min_paired=min_paired,
            noise=noise,
            judge_tests=judge_tests,
            all_pairs=all_pairs,
            power_delta=power_delta,
            trust=trust,
            trust_floor=trust_floor,
            floor_on=floor_on,
        ),
        answer,
    )
    _name_judges(comparison, reports, names)
    if anchor is not None:
        engine = {"seed": seed, "n_resamples": n_resamples, "alpha": alpha, "confidence": confidence,
                  "correction": correction, "min_paired": min_paired}  # fmt: skip
        comparison.drift = _anchor_drift(comparison, anchor, anchor_verdicts, engine)
    return comparison


def _name_judges(comparison: Comparison, reports: Sequence[Report], names: Sequence[str]) -> None:
    """Each judge metric's row gets the two runs' judges (``runfolder.judge_identities`` of their folders), and
    ``judges_differ`` when both are named and differ (all-pairs rows are left as they are)."""
    from ..runfolder import judge_identities

    judges = [judge_identities(r.provenance.run_dir) for r in reports]
    criterion = {m.key: m.criterion for r in reports for m in r.metrics if m.source == "foundry" and m.criterion}
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
    engine: Mapping[str, Any],
) -> JudgeDrift:
    """The anchor's own comparison (OLD as baseline, NEW as candidate; the one engine with the comparison's
    ``engine`` settings, its own family, the judge tests on) and, per judge metric of ``comparison``, the drift
    verdict (``_drift.drift_rows``); with ``verdicts``, each anchor judge's κ against the humans
    (``trust_section`` → ``judge_trust_by_key``)."""
    from ..report._trust import trust_section
    from ..runfolder import judge_identities

    old, new = anchor
    shift = compare_runs([old, new], labels=["old judge", "new judge"], **engine)
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
    runs: Sequence[_Run],
    names: list[str],
    infos: Sequence[Sequence[MetricInfo]],
    describe: Describe,
    opts: CompareOptions,
    answer: Any = None,
) -> Comparison:
    """The comparison of runs given as columns (``_Run``) with their metrics (``infos``, one list per run):
    select the metrics → per pair of runs: pair the queries, test each section's metrics → correct the one family
    → gate → summaries (``describe``: the shown keys → the sweep's metrics and one ``RunSummaryRow`` per run) and,
    with ``opts.all_pairs``, the ranking of every metric (``AllPairs``); ``answer``: Foundry's own comparison, put
    beside the local rows. Steps and rules: ``compare_runs``."""
    warnings: list[str] = []
    sel = _select(infos, opts.metrics, opts.fail_on, warnings)
    if not opts.judge_tests:
        sel = _without_pass_rows(sel)
    settings = _Settings(opts.seed, opts.n_resamples, opts.alpha, opts.confidence)
    pairs = _pairs_of(len(runs), opts.all_pairs)
    done = _compare_columns(runs, names, sel, settings, warnings, pairs)
    family, primary, left_out = _correct(done, sel, opts, names)
    baseline_rows = [mc for mc, (i, _) in zip(done.rows, done.owners, strict=True) if i == 0]
    rule = _GateRule(
        opts.alpha,
        opts.gate_correction,
        opts.min_paired,
        opts.noise or {},
        opts.coverage_drop,
        opts.allow_empty_gate,
        opts.power_delta,
        opts.trust,
        opts.trust_floor,
        opts.floor_on,
        opts.confidence,
    )
    floors = {
        (names[j], gate.section, key): _section_values(runs[j], sel, key, gate.section)
        for gate, key in sel.gates
        if gate.kind == "floor"
        for j in range(1, len(runs))
    }
    gate = _gate(sel, names, baseline_rows, done.coverage, rule, floors)  # a gate that cannot fire stops here
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
        all_pairs=_all_pairs(runs, names, sel, done) if opts.all_pairs else None,
    )


def _section_values(run: _Run, sel: _Selection, key: str, section: str) -> Any:
    """A run's values of ``key`` over its queries of ``section`` where it is defined (NaN left out)."""
    import numpy as np

    code = run.kind_names.index(section) if section in run.kind_names else -1
    values = np.asarray(run.values(key, sel.infos[key].source, sel.kinds[key]), np.float64)[run.row_kind == code]
    return values[~np.isnan(values)]


def _system_means(run: _Run, sel: _Selection, key: str, section: str) -> float | None:
    """A run's mean of ``key`` over its queries of ``section`` where it is defined (NaN left out)."""
    from ..metrics.ranking import nan_mean

    return nan_mean(_section_values(run, sel, key, section), "drop")


def _all_pairs(runs: Sequence[_Run], names: list[str], sel: _Selection, done: _Compared) -> AllPairs:
    """Every pair's rows (shown metrics) and, per shown metric and section, the systems ranked by their means
    (``metrics.pairs.competition_ranks``), the pairs that differ after correction, their compact letters
    (``metrics.pairs.compact_letters``) and the win/tie/loss matrix."""
    from ..metrics.pairs import compact_letters, competition_ranks

    shown = set(sel.chosen)
    pairs = [
        PairComparison(baseline=names[i], **mc.model_dump())
        for mc, (i, _) in zip(done.rows, done.owners, strict=True)
        if mc.metric in shown
    ]
    rankings: list[MeasureRanking] = []
    for key in sel.chosen:
        for section in _SECTIONS:
            rows = [pc for pc in pairs if pc.metric == key and pc.section == section]
            if not any(pc.n_paired for pc in rows):
                continue
            hib = sel.infos[key].higher_is_better
            means = [_system_means(run, sel, key, section) for run in runs]
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

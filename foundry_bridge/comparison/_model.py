"""The comparison's published rows: one test per (candidate, section, metric), the runs compared, coverage and the
queries each run lacks, and every pair's ranking (``--all-pairs``). Computed by ``comparison._compare``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._lazy import optional_module
from ..metrics.significance import MetricKind, Verdict

__all__ = [
    "AllPairs",
    "CandidateQueries",
    "CoverageChange",
    "Family",
    "MeasureRanking",
    "MetricComparison",
    "PairComparison",
    "RankedSystem",
    "RunSummaryRow",
    "Section_",
    "comparison_frame",
]

Section_ = Literal["positive", "negative"]
Family = Literal["primary", "secondary"]


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
    """One (candidate, section, metric) test. ``p_adjusted``/``significant``/``verdict`` are the exploratory
    decision; whether a gated row fails the gate is ``Comparison.gate["checks"]``."""

    candidate: str
    section: Section_
    metric: str
    higher_is_better: bool | None
    kind: MetricKind = Field("continuous", description="the metric's kind, which chooses the test")
    n_paired: int
    n_excluded: int = Field(description="queries in both runs but undefined/errored/missing in one of them")
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None = Field(description="mean of (candidate − baseline) over paired queries")
    ci_low: float | None
    ci_high: float | None
    d_z: float | None = Field(None, description="standardized effect: delta ÷ sd of the paired differences")
    d_z_low: float | None = None
    d_z_high: float | None = None
    sd_diff: float | None = Field(None, description="sd of the paired differences (n − 1 divisor; power planning)")
    rank_biserial: float | None = Field(None, description="matched-pairs rank-biserial r (Wilcoxon rows)")
    n_informative: int = Field(0, description="non-zero differences (discordant pairs for McNemar)")
    in_family: bool = Field(
        False, description="counted in the exploratory family (at least --min-paired pairs, one informative)"
    )
    p_value: float | None
    p_adjusted: float | None = Field(
        None,
        description="p corrected within the row's family (``family``, ``correction``); a test with no informative "
        "pair has p = p_adjusted = 1 and is not counted in a family",
    )
    family: Family = Field(
        "secondary",
        description="primary: gated (--fail-on), corrected among the gated tests, sets the exit code; secondary: "
        "every other metric, corrected among themselves",
    )
    correction: str = Field("", description="how p_adjusted was corrected, and over how many tests")
    test: str
    significant: bool = Field(description="p_adjusted < alpha: the row's one verdict, the gate's too")
    verdict: Verdict
    wins: int
    ties: int
    losses: int
    got_worse: list[dict[str, Any]] = Field(
        default_factory=list, description="[{query_id, baseline, candidate}], the LIST_CAP largest changes first"
    )
    n_got_worse: int = Field(0, description="queries that got worse (got_worse lists the first LIST_CAP)")
    judges: list[str | None] | None = Field(
        None,
        description="[baseline's judge, candidate's judge] of a judge metric's criterion (runfolder.judge_identities; "
        "None: not named by the run); null for a metric no judge scores",
    )
    judges_differ: bool = Field(
        False, description="both judges named and different: a difference may be the judge, not the system"
    )


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


class PairComparison(MetricComparison):
    """One pair of runs on one metric and section (all pairs): ``candidate`` (B) against ``baseline`` (A), Δ = B − A;
    the tests and the family are the baseline rows' (``MetricComparison``)."""

    baseline: str


class RankedSystem(_Model):
    system: str
    mean: float | None = Field(description="mean over the run's queries of the section where the metric is defined")
    rank: int = Field(description="1 = best mean by the metric's direction; equal means share a rank")
    letters: str = Field(description="compact letter display: systems sharing a letter do not differ significantly")


class MeasureRanking(_Model):
    """The systems ranked by one metric of one section, which pairs differ after correction, and the per-query
    win/tie/loss matrix."""

    section: Section_
    metric: str
    higher_is_better: bool | None
    systems: list[RankedSystem] = Field(description="best first")
    differ: list[list[str]] = Field(description="[A, B] pairs whose difference is significant after correction")
    wtl: dict[str, dict[str, list[int]]] = Field(
        description="wtl[X][Y] = [wins, ties, losses] of X against Y over their paired queries (by the metric's "
        "direction)"
    )


class AllPairs(_Model):
    """Every pair of runs tested on every metric (``--all-pairs``): one family over pairs × metrics × sections."""

    systems: list[str]
    letters: str = (
        "compact letter display (Piepho's insert-and-absorb): systems sharing a letter do not differ significantly "
        "after correction; letter a is the best system's"
    )
    rankings: list[MeasureRanking]
    pairs: list[PairComparison] = Field(description="every pair (A earlier on the command line), effect B − A")


def comparison_frame(metrics: Sequence[MetricComparison], *, polars: bool = False) -> Any:
    """``Comparison.to_pandas()``: one row per (candidate, section, metric) test of ``comparison.metrics``, with
    the ``MetricComparison`` fields (the ``got_worse`` list left out: ``n_got_worse`` counts it)."""
    rows = [m.model_dump(exclude={"got_worse"}) for m in metrics]
    if polars:
        return optional_module("polars", "polars DataFrames").DataFrame(rows, strict=False)
    pd = optional_module("pandas", "DataFrames")
    frame = pd.DataFrame(rows)
    floats = ["baseline_mean", "candidate_mean", "delta", "ci_low", "ci_high", "p_value", "p_adjusted"]
    return frame.astype(dict.fromkeys([c for c in floats if c in frame.columns], "float64"))

"""The trust section's published model: the report's copy of the ``metrics`` results (agreement, PPI means, judge
noise) and the section that holds them (``Report.trust``). Computed and drawn by ``report._trust``."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..canaries import CanaryScore

PASS_RATE_HALF_WIDTH = 0.05  # the label budget's default target: a pass rate ± this (report --target-pass-rate)
SCORE_HALF_WIDTH = 0.25  # ... and a mean score on the judge's scale ± this (report --target-score)


def _nan_to_none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


Num = Annotated[float | None, BeforeValidator(_nan_to_none)]  # an undefined statistic is null in JSON, never NaN


class _Stat(BaseModel):
    """The report's copy of a ``metrics`` result (read from its attributes; NaN → None, so the JSON round-trips)."""

    model_config = ConfigDict(from_attributes=True)


class EstimateOut(_Stat):
    """``metrics.ppi.Estimate``: a mean in [low, high] at ``confidence``, and the rows it used; ``interval`` names
    how the interval was made, ``clipped`` says it was cut to the scale, ``need_labels`` (low and high null) that
    there were too few labels for one."""

    method: str
    mean: Num
    low: Num
    high: Num
    n_labeled: int
    n_unlabeled: int
    confidence: float
    interval: str = ""
    clipped: bool = False
    need_labels: int | None = None


class RaterSpreadOut(_Stat):
    """``metrics.ppi.RaterSpread``: the raters' variance added to the intervals, on ``df`` degrees of freedom."""

    variance: float
    df: int
    raters: int


class MeanOut(_Stat):
    """``metrics.ppi.MeanEstimates``: judge only, human only, PPI, PPI++, λ, the label budget, the raters'
    variance."""

    judge_only: EstimateOut
    human_only: EstimateOut
    ppi: EstimateOut | None
    ppi_plus: EstimateOut | None
    lam: Num
    labels_to_halve: int | None
    human_labels_to_halve: int | None
    target: float | None = None
    labels_for_target: int | None = None
    raters: RaterSpreadOut | None = None
    design: str | None = None


class DisagreementOut(_Stat):
    index: int
    judge: float
    human: float
    gap: float


class AgreementOut(_Stat):
    """``metrics.agreement.Agreement``: κ, weighted κ, confusion (judge rows × reference columns), base rates."""

    n: int
    n_missing: int
    observed: Num
    kappa: Num
    weighted_kappa: Num
    categories: list[float]
    confusion: list[list[int]]
    judge_rates: list[Num]
    reference_rates: list[Num]
    disagreements: list[DisagreementOut]
    rows: int = Field(-1, description="rows with a pair (-1: n)")
    kappa_interval: list[Num] | None = Field(None, description="κ's 95 % percentile bootstrap interval over rows")
    weighted_kappa_interval: list[Num] | None = None


class JudgeTrustOut(_Stat):
    """``metrics.agreement.JudgeTrust``."""

    n_rows: int
    n_labeled: int
    raters: int
    on_pass: AgreementOut | None
    on_scale: AgreementOut | None
    alpha_humans: Num
    alpha_with_judge: Num
    score_mean: MeanOut | None
    pass_rate: MeanOut | None
    missing: list[str]
    alpha_humans_interval: list[Num] | None = None
    alpha_with_judge_interval: list[Num] | None = None
    alpha_rows: int = 0
    alpha_with_judge_rows: int = 0


class JudgeNoiseOut(_Stat):
    """``metrics.agreement.JudgeNoise``."""

    repeats: int
    rows: int
    noise_sd: Num
    flip_rate: Num
    flaky: list[int]
    alpha: Num
    alpha_level: str


class TrustSource(BaseModel):
    """What the section was computed from."""

    run_dir: str
    rows: int
    results_read: int
    canary_rows: int = Field(0, description="generated canaries: scored as canaries, left out of agreement and means")
    verdicts_path: str | None = None
    verdicts: int = 0
    verdicts_unmatched: int = Field(0, description="verdicts on a query the run does not have, or a judge it lacks")
    verdicts_unfilled: int = Field(0, description="queue lines not filled in yet (no score, no passed)")
    evaluators_without_judge: list[str] = Field(default_factory=list)


class JudgeEntry(BaseModel):
    """One judge criterion: its columns' counts, and the trust statistics (``metrics.agreement.JudgeTrust``)."""

    criterion: str
    evaluator: str
    metric: str
    threshold: float | None
    higher_is_better: bool
    scale: list[float] | None
    rows_scored: int
    rows_passed_known: int
    trust: JudgeTrustOut
    labels_for_pass_rate: int | None = Field(None, description="labels in all for a pass rate ±pass_rate_target")
    labels_for_score: int | None = Field(None, description="labels in all for a mean score ±score_target")
    pass_rate_target: float = PASS_RATE_HALF_WIDTH
    score_target: float = SCORE_HALF_WIDTH
    worst: list[dict[str, Any]] = Field(
        default_factory=list, description="[{query_id, judge, human}], largest gap first"
    )
    missing: list[str] = Field(default_factory=list)


class NoiseEntry(BaseModel):
    """One judge against itself over repeat runs of the same rows (``metrics.agreement.judge_noise``), and the
    bands inside which a difference of two runs' means is that noise alone (``noise_band``, one run on each side)."""

    criterion: str
    runs: int
    noise: JudgeNoiseOut
    flaky_queries: list[str]
    score_band: float | None
    pass_band: float | None


class RetrievalCheck(BaseModel):
    """The retrieval judge's pass/fail against "the context holds a document the qrels label relevant"."""

    criterion: str | None
    agreement: AgreementOut | None
    rows_known: int = Field(description="rows whose context and labels say it (the rest are unknown)")
    missing: list[str] = Field(default_factory=list)


class TrustSection(BaseModel):
    """The report's "Can the judge be trusted?" section."""

    source: TrustSource
    judges: list[JudgeEntry]
    retrieval: RetrievalCheck
    canaries: list[CanaryScore]
    canary_cases: int
    noise: list[NoiseEntry] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    @property
    def shown(self) -> bool:
        """Worth a section in the report: the run has a judge or a generated canary (a ranking-only run has not)."""
        return bool(self.judges or self.canaries)

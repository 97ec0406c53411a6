"""Judge drift: "the judge changed" told apart from "the system changed".

When two runs were judged by different judges (``runfolder.judge_identities``: a new deployment, a new evaluator
or library version), a judge metric's Δ between them mixes two changes: the system's and the judge's. A frozen
**anchor** set — the same rows judged by the old judge (run folder OLD) and by the new one (NEW) — measures the
judge's own shift, with the one comparison engine (``compare_runs([OLD, NEW])``: the paired test of the metric's
kind, its interval, its family). Per judge metric (score and ``/pass``) and query kind:

- S = the system Δ (candidate − baseline), with its interval [S_lo, S_hi] and its decision (``significant``);
- J = the anchor shift (NEW − OLD on the anchor rows), with [J_lo, J_hi] and its decision;
- N = S − J, the system Δ net of the judge shift, with half-width h_N = √(h_S² + h_J²), h_X = (X_hi − X_lo)/2:
  the two intervals combined in quadrature, as for a difference of two independent estimates (the anchor rows
  and the compared queries are separate samples; each keeps its own small-n t quantile; a pass-rate interval cut
  at ±1 is taken as printed).

The verdict: the judge did not shift (J not significant) → "system changed" when S is significant, else
"no change"; the judge shifted (J significant) → "both" when N's interval excludes 0 (the system moved beyond
what the judge's shift explains), else "judge changed" (S is explained by the judge's shift). "not decided" when
either test did not run (too few paired rows, nothing comparable). With human verdicts on the anchor rows, each
judge's agreement with the humans (``trust_section``'s κ: quadratic-weighted on a score, Cohen's on pass/fail)
is shown beside, so the reader sees which judge to believe.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._gate_trust import GateTrust
from ._model import MetricComparison

__all__ = ["DRIFT_RULE", "DriftRow", "DriftVerdict", "JudgeDrift", "drift_rows", "drift_verdict", "judges_note"]

PASS = "/pass"
DriftVerdict = Literal["judge changed", "system changed", "both", "no change", "not decided"]
DRIFT_RULE = (
    "S = system Δ (candidate − baseline), J = the anchor's judge shift (new − old judge on the same rows), "
    "N = S − J with half-width √(h_S² + h_J²); J not significant: 'system changed' if S is significant, else 'no "
    "change'; J significant: 'both' if N's interval excludes 0, else 'judge changed'"
)
_UNDECIDED = ("too few paired queries", "not comparable")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DriftRow(_Model):
    """One judge metric of one query kind: the system Δ, the anchor's judge shift, the net Δ and the verdict."""

    candidate: str
    section: Literal["positive", "negative"]
    metric: str
    system_delta: float | None
    system_low: float | None
    system_high: float | None
    system_significant: bool
    anchor_n: int = Field(description="anchor rows paired (judged by both judges)")
    anchor_shift: float | None = Field(description="mean of (new judge − old judge) over the anchor rows")
    anchor_low: float | None
    anchor_high: float | None
    anchor_p_adjusted: float | None
    anchor_significant: bool
    net_delta: float | None = Field(description="system Δ − anchor shift")
    net_low: float | None = Field(description="net Δ − √(h_S² + h_J²)")
    net_high: float | None
    kappa_old: float | None = Field(None, description="the old judge's κ with the human verdicts on the anchor")
    kappa_new: float | None = Field(None, description="the new judge's κ with the human verdicts on the anchor")
    labeled: int = Field(0, description="anchor rows with a human verdict on this judge")
    verdict: DriftVerdict


class JudgeDrift(_Model):
    """``compare --anchor OLD NEW``: the anchor's run folders and judges, the rule, one row per judge metric."""

    old: str
    new: str
    judges_old: dict[str, str | None] = Field(description="criterion → the old anchor run's judge")
    judges_new: dict[str, str | None] = Field(description="criterion → the new anchor run's judge")
    human_verdicts: str | None = None
    rule: str = DRIFT_RULE
    rows: list[DriftRow]


def _half(low: float | None, high: float | None) -> float | None:
    return None if low is None or high is None else (high - low) / 2


def drift_verdict(
    system: MetricComparison, anchor: MetricComparison
) -> tuple[DriftVerdict, float | None, float | None]:
    """The verdict of the module's rule, with N's interval (None when undecided)."""
    h_s, h_j = _half(system.ci_low, system.ci_high), _half(anchor.ci_low, anchor.ci_high)
    if (
        system.verdict in _UNDECIDED
        or anchor.verdict in _UNDECIDED
        or system.delta is None
        or anchor.delta is None
        or h_s is None
        or h_j is None
    ):
        return "not decided", None, None
    net, half = system.delta - anchor.delta, math.hypot(h_s, h_j)
    low, high = net - half, net + half
    if not anchor.significant:
        return ("system changed" if system.significant else "no change"), low, high
    return ("both" if low > 0 or high < 0 else "judge changed"), low, high


def drift_rows(
    system: Sequence[MetricComparison],
    anchor: Sequence[MetricComparison],
    old_trust: Mapping[str, GateTrust] | None = None,
    new_trust: Mapping[str, GateTrust] | None = None,
) -> list[DriftRow]:
    """One ``DriftRow`` per system row (candidate × section × metric) whose metric is a judge metric of the anchor
    (a score with a ``/pass`` row, or the ``/pass`` row: the anchor is compared with the judge tests on), paired
    with the anchor row of the same section and metric."""
    keys = {m.metric for m in anchor}
    judged = {k for k in keys if k.endswith(PASS) or k + PASS in keys}
    by = {(m.section, m.metric): m for m in anchor if m.metric in judged}
    out: list[DriftRow] = []
    for s in system:
        a = by.get((s.section, s.metric))
        if a is None:
            continue
        verdict, low, high = drift_verdict(s, a)
        old = (old_trust or {}).get(s.metric)
        new = (new_trust or {}).get(s.metric)
        out.append(
            DriftRow(
                candidate=s.candidate,
                section=s.section,
                metric=s.metric,
                system_delta=s.delta,
                system_low=s.ci_low,
                system_high=s.ci_high,
                system_significant=s.significant,
                anchor_n=a.n_paired,
                anchor_shift=a.delta,
                anchor_low=a.ci_low,
                anchor_high=a.ci_high,
                anchor_p_adjusted=a.p_adjusted,
                anchor_significant=a.significant,
                net_delta=None if s.delta is None or a.delta is None else s.delta - a.delta,
                net_low=low,
                net_high=high,
                kappa_old=None if old is None else old.kappa,
                kappa_new=None if new is None else new.kappa,
                labeled=max(old.n_labeled if old else 0, new.n_labeled if new else 0),
                verdict=verdict,
            )
        )
    return out


def judges_note(judges: Sequence[str | None]) -> str:
    """The note beside a judge metric whose two runs used different judges."""
    old, new = (j or "unknown" for j in judges)
    return f"judges differ: {old} → {new}; a difference here may be the judge, not the system"

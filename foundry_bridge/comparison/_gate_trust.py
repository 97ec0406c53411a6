"""A gate that knows when not to decide: the trust a gated judge metric's judge has earned, read from the baseline
run's trust section (``trust_section``, its public model only), and the reason a check is inconclusive.

``judge_trust_by_key(section)``: report metric key → ``GateTrust`` for each judge — the score's key
(``foundry_key(criterion, metric)``) with the weighted κ on the scale (κ on pass/fail when there is no scale
agreement) and the corrected (PPI++) interval of the mean score; ``<key>/pass`` with κ on pass/fail and the
corrected interval of the pass rate. ``untrusted(trust, floor, effect, need_queries)``: why a gated check on that
judge cannot be decided, or '' — κ unknown (no human verdicts on the judge) or below ``floor``, no corrected
interval yet (too few labels), or the corrected interval wider (high − low) than ``effect``, the Δ the gate asks
about. The labels it would take: the interval's width shrinks as 1/√labels, so a width w on n labels needs
⌈n·(w/effect)²⌉ for width ``effect``; with no interval yet, the judge entry's label budget (``labels_for_score``
/ ``labels_for_pass_rate``), else the labels the estimate needs for an interval at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..report._model import foundry_key
from ..report._trust_model import JudgeEntry, MeanOut, TrustSection

__all__ = ["GateTrust", "judge_trust_by_key", "untrusted"]


@dataclass(frozen=True)
class GateTrust:
    """One judge metric's trust: its κ against the humans, the labelled rows, the corrected interval, the budget."""

    criterion: str
    kappa: float | None
    n_labeled: int
    low: float | None
    high: float | None
    labels_budget: int | None


def everyone(mean: MeanOut) -> bool:
    """Every row labelled: no judge-only row to correct, the humans' mean is the corrected one."""
    return mean.human_only.n_unlabeled == 0 and mean.human_only.n_labeled > 0


def _corrected(mean: MeanOut | None, budget: int | None) -> tuple[float | None, float | None, int | None]:
    """The corrected (PPI++, else PPI, else with every row labelled the humans') interval and the label budget:
    the entry's, else the labels the estimate
    says it needs for an interval at all (``need_labels``)."""
    est = None if mean is None else mean.ppi_plus or mean.ppi or (mean.human_only if everyone(mean) else None)
    if est is None:
        return None, None, budget
    return est.low, est.high, budget if budget is not None else est.need_labels


def _entries(j: JudgeEntry) -> dict[str, GateTrust]:
    t = j.trust
    on_pass = t.on_pass.kappa if t.on_pass else None
    on_scale = t.on_scale.weighted_kappa if t.on_scale else None
    key = foundry_key(j.criterion, j.metric)
    kappa = on_scale if on_scale is not None else on_pass
    score = GateTrust(j.criterion, kappa, t.n_labeled, *_corrected(t.score_mean, j.labels_for_score))
    passed = GateTrust(j.criterion, on_pass, t.n_labeled, *_corrected(t.pass_rate, j.labels_for_pass_rate))
    return {key: score, key + "/pass": passed}


def judge_trust_by_key(section: TrustSection) -> dict[str, GateTrust]:
    """Each judge's ``GateTrust`` under its report metric keys (score and ``/pass``)."""
    out: dict[str, GateTrust] = {}
    for j in section.judges:
        out |= _entries(j)
    return out


def _labels_needed(trust: GateTrust, effect: float | None) -> int | None:
    width = None if trust.low is None or trust.high is None else trust.high - trust.low
    if width is None or effect is None or effect <= 0 or trust.n_labeled == 0:
        return trust.labels_budget
    return max(trust.n_labeled, math.ceil(trust.n_labeled * (width / effect) ** 2))


def untrusted(trust: GateTrust, floor: float, effect: float | None, need_queries: int | None) -> str:
    """Why a gated check on this judge is inconclusive ('' when the judge is trusted), ending with what is needed:
    ``need N labels / M queries`` (M: the paired queries the gate's test needs for ``effect``, when known)."""
    width = None if trust.low is None or trust.high is None else trust.high - trust.low
    if trust.kappa is None:
        why = f"no human verdicts agree or disagree with judge {trust.criterion} (κ unknown)"
    elif trust.kappa < floor:
        why = f"judge {trust.criterion} κ = {trust.kappa:.3g} < floor {floor:g} on {trust.n_labeled} labelled rows"
    elif width is None:
        why = f"judge {trust.criterion} has too few labels ({trust.n_labeled}) for a corrected interval"
    elif effect is not None and width > effect:
        why = f"judge {trust.criterion}'s corrected interval ({width:.3g} wide) is wider than the Δ {effect:g} asked"
    else:
        return ""
    labels = _labels_needed(trust, effect)
    needs = [f"{labels} labels" if labels is not None else "more labels"]
    if need_queries is not None:
        needs.append(f"{need_queries} queries")
    return f"{why}: inconclusive (need {' / '.join(needs)})"

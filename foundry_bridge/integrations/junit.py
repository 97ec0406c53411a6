"""``compare --junit FILE``: the comparison's gate as JUnit XML, one test case per gated metric.

A case is a (candidate, section, metric) named by ``--fail-on``, or a Foundry metric's coverage when the gate is
checked (``--fail-on`` or ``--coverage-drop``). Whether it failed is the comparison's own gate decision
(``Comparison.gate["reasons"]``, the same lines that make ``compare`` exit 3), never decided again here; a
reason no case claims becomes a failed case ``gate`` of its own, so nothing the gate said is lost.

Each case carries the baseline and candidate means, the delta with its Student t interval, the paired test's p
and the **Holm-corrected p** over every gated metric of the file (m tests, p sorted ascending:
p̃₍ᵢ₎ = maxⱼ≤ᵢ min(1, (m − j + 1) p₍ⱼ₎)), so a reader sees how much a single regression is worth after the
family of checks. The corrected p is shown, not used: the gate stays the comparison's (docs/report.md).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_open

if TYPE_CHECKING:
    from ..report import Comparison, MetricComparison

__all__ = ["GateCase", "gate_cases", "holm", "render_junit", "write_junit"]


@dataclass(frozen=True)
class GateCase:
    """One gated check: ``failed`` with the gate's ``message``; ``details`` are the numbers behind it."""

    candidate: str
    name: str
    failed: bool
    message: str
    details: str
    p_value: float | None = None


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni step-down adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def _matches(spec_metric: str, key: str) -> bool:
    """``--fail-on``'s metric (canonical) names ``key``: the key itself, or a measure without a cutoff (``ndcg``
    names ``ndcg@3`` and ``ndcg@10``)."""
    return key == spec_metric or ("@" not in spec_metric and key.startswith(spec_metric + "@"))


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def _metric_details(mc: MetricComparison, tol: float, confidence: float) -> str:
    return (
        f"{mc.section} {mc.metric}: baseline {_fmt(mc.baseline_mean)}, candidate {_fmt(mc.candidate_mean)}, "
        f"delta {_fmt(mc.delta)} ({confidence:.0%} CI {_fmt(mc.ci_low)} to {_fmt(mc.ci_high)}), p = {_fmt(mc.p_value)} "
        f"({mc.test}), verdict {mc.verdict}, {mc.n_paired} paired, {mc.n_excluded} excluded, tolerated drop {tol:g}"
    )


def _claim(reasons: list[str], prefix: str) -> str | None:
    for r in reasons:
        if r.startswith(prefix):
            reasons.remove(r)
            return r
    return None


def _metric_cases(comparison: Comparison, fail_on: Sequence[str], reasons: list[str]) -> list[GateCase]:
    from ..report import parse_fail_on

    cases: list[GateCase] = []
    seen: set[tuple[str, str, str]] = set()
    for section, metric, tol in map(parse_fail_on, fail_on):
        for mc in comparison.metrics:
            if mc.section != section or not _matches(metric, mc.metric) or (mc.candidate, section, mc.metric) in seen:
                continue
            seen.add((mc.candidate, section, mc.metric))
            reason = _claim(reasons, f"{mc.candidate}: {section} {mc.metric} regressed")
            cases.append(
                GateCase(
                    candidate=mc.candidate,
                    name=f"{section} {mc.metric}",
                    failed=reason is not None,
                    message=reason or f"{section} {mc.metric}: {mc.verdict}",
                    details=_metric_details(mc, tol, comparison.confidence),
                    p_value=mc.p_value,
                )
            )
    return cases


def _coverage_cases(comparison: Comparison, reasons: list[str]) -> list[GateCase]:
    cases = []
    for cc in comparison.coverage:
        reason = _claim(reasons, f"{cc.candidate}: coverage of {cc.metric} dropped")
        details = f"coverage of {cc.metric}: baseline {_fmt(cc.baseline)}, candidate {_fmt(cc.candidate_coverage)}"
        cases.append(GateCase(cc.candidate, f"coverage {cc.metric}", reason is not None, reason or details, details))
    return cases


def gate_cases(comparison: Comparison, *, fail_on: Sequence[str] = ()) -> list[GateCase]:
    """The gated checks of ``comparison`` (made with these ``fail_on`` specs), in the order: metrics as named,
    then coverage, then any gate reason no case claimed. Corrected p-values are added to each metric's details."""
    reasons = list(comparison.gate.get("reasons", []))
    if not comparison.gate.get("checked"):
        return [
            GateCase(
                ", ".join(comparison.candidates), "gate", False, "nothing gated (no --fail-on or --coverage-drop)", ""
            )
        ]
    cases = _metric_cases(comparison, fail_on, reasons)
    tested = [i for i, c in enumerate(cases) if c.p_value is not None]
    for i, adj in zip(tested, holm([cases[i].p_value or 0.0 for i in tested]), strict=True):
        note = f"; Holm-corrected p = {adj:.4g} over {len(tested)} gated test(s)"
        cases[i] = replace(cases[i], details=cases[i].details + note)
    cases += _coverage_cases(comparison, reasons)
    cases += [GateCase(r.split(":", 1)[0], "gate", True, r, r) for r in reasons]
    return cases


def render_junit(comparison: Comparison, *, fail_on: Sequence[str] = ()) -> str:
    """JUnit XML: ``<testsuites>`` with one ``<testsuite>`` per candidate; a failed check is a ``<failure>``
    whose ``message`` is the gate's line and whose text the numbers; a passed one has them as ``system-out``."""
    return _xml(comparison, gate_cases(comparison, fail_on=fail_on))


def _xml(comparison: Comparison, cases: list[GateCase]) -> str:
    root = ET.Element("testsuites", name="foundry-bridge compare", tests=str(len(cases)))
    root.set("failures", str(sum(c.failed for c in cases)))
    for candidate in dict.fromkeys(c.candidate for c in cases):
        mine = [c for c in cases if c.candidate == candidate]
        suite = ET.SubElement(root, "testsuite", name=f"foundry-bridge compare {comparison.baseline} → {candidate}")
        suite.attrib.update(tests=str(len(mine)), failures=str(sum(c.failed for c in mine)), errors="0")
        suite.attrib.update(skipped="0", time="0")
        for c in mine:
            case = ET.SubElement(suite, "testcase", classname=f"foundry_bridge.compare.{candidate}", name=c.name)
            case.set("time", "0")
            if c.failed:
                ET.SubElement(case, "failure", message=c.message, type="regression").text = c.details
            elif c.details:
                ET.SubElement(case, "system-out").text = c.details
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(comparison: Comparison, path: str | Path, *, fail_on: Sequence[str] = ()) -> tuple[int, int]:
    """Write the JUnit XML atomically; return (test cases, failures)."""
    cases = gate_cases(comparison, fail_on=fail_on)
    with atomic_open(Path(path)) as fh:
        fh.write(_xml(comparison, cases).encode("utf-8"))
    return len(cases), sum(c.failed for c in cases)

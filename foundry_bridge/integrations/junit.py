"""``compare --junit FILE``: the comparison's gate as JUnit XML, one test case per gated check.

A case is a (candidate, section, metric) named by ``--fail-on`` (a floor or lost gate: the gate as written, its
reason the message), or a Foundry metric's coverage when the gate is
checked (``--fail-on`` or ``--coverage-drop``). Whether it failed, passed or was skipped is the comparison's own
gate decision (``Comparison.gate["checks"]`` and ``["reasons"]``, the same lines that make ``compare`` exit 3),
never decided again here; a reason no case claims becomes a failed case ``gate`` of its own, so nothing the gate
said is lost. A skipped case is a gate that could never fire (no comparable pair, or fewer than ``--min-paired``),
kept with ``--allow-empty-gate``.

Each metric case carries the baseline and candidate means, the delta with its Student t interval, the paired
test's p, the p the gate decided on (the same p, or corrected across gates with ``--gate-correction``) and the
false-alarm rate across all gates the comparison states (docs/ci.md).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_open
from .._text import printable

if TYPE_CHECKING:
    from ..comparison import Comparison, MetricComparison

__all__ = ["GateCase", "gate_cases", "render_junit", "write_junit"]


@dataclass(frozen=True)
class GateCase:
    """One gated check: ``failed`` with the gate's ``message``, or ``skipped`` (a gate that could never fire) with
    why; ``details`` are the numbers behind it."""

    candidate: str
    name: str
    failed: bool
    message: str
    details: str
    p_value: float | None = None
    skipped: bool = False
    inconclusive: bool = False


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def _metric_details(mc: MetricComparison, check: dict[str, Any], confidence: float, false_alarm: str) -> str:
    return (
        f"{mc.section} {mc.metric}: baseline {_fmt(mc.baseline_mean)}, candidate {_fmt(mc.candidate_mean)}, "
        f"delta {_fmt(mc.delta)} ({confidence:.0%} CI {_fmt(mc.ci_low)} to {_fmt(mc.ci_high)}), p = {_fmt(mc.p_value)} "
        f"({mc.test}), gate p = {_fmt(check.get('p_gate'))} ({mc.family}: {mc.correction}), "
        f"verdict {mc.verdict}, {mc.n_paired} paired, "
        f"{mc.n_excluded} excluded, tolerated drop {check['tolerated']:g}; {false_alarm}"
    )


def _claim(reasons: list[str], reason: str) -> str | None:
    for r in reasons:
        if r == reason or r.startswith(reason):
            reasons.remove(r)
            return r
    return None


def _metric_cases(comparison: Comparison, reasons: list[str]) -> list[GateCase]:
    """One case per check of the gate, in its order (the --fail-on specs, then the candidates)."""
    by = {(mc.candidate, mc.section, mc.metric): mc for mc in comparison.metrics}
    false_alarm = str(comparison.gate.get("false_alarm", ""))
    cases: list[GateCase] = []
    for check in comparison.gate.get("checks", []):
        cand, section, metric = check["candidate"], check["section"], check["metric"]
        name, outcome = f"{section} {metric}", check.get("outcome")
        mc = by.get((cand, section, metric))
        if check.get("kind", "relative") != "relative":  # a floor or lost gate: its reason is the whole case
            cases.append(_written_case(check, reasons))
            continue
        if outcome == "inconclusive":
            why = f"{name}: gate inconclusive: {check.get('reason', '')}"
            cases.append(GateCase(cand, name, False, why, why, p_value=check.get("p"), inconclusive=True))
            continue
        if outcome == "skipped" or mc is None:
            why = f"{name}: gate skipped: {check.get('reason', '')}"
            cases.append(GateCase(cand, name, False, why, why, skipped=True))
            continue
        reason = _claim(reasons, check["reason"]) if outcome == "failed" else None
        details = _metric_details(mc, check, comparison.confidence, false_alarm)
        cases.append(GateCase(cand, name, reason is not None, reason or f"{name}: {mc.verdict}", details, mc.p_value))
    return cases


def _written_case(check: dict[str, Any], reasons: list[str]) -> GateCase:
    """A floor's or a lost gate's case, named by the gate as written (``positive recall@5 >= 0.9``): its outcome
    and one line of why are the gate's (``comparison._gates``), the message and the text alike."""
    name, outcome, reason = f"{check['section']} {check['gate']}", check["outcome"], check["reason"]
    if outcome == "failed":
        reason = _claim(reasons, reason) or reason
    skipped, inconclusive = outcome == "skipped", outcome == "inconclusive"
    return GateCase(check["candidate"], name, outcome == "failed", reason, reason, None, skipped, inconclusive)


def _coverage_cases(comparison: Comparison, reasons: list[str]) -> list[GateCase]:
    cases = []
    for cc in comparison.coverage:
        reason = _claim(reasons, f"{cc.candidate}: coverage of {cc.metric} dropped")
        details = f"coverage of {cc.metric}: baseline {_fmt(cc.baseline)}, candidate {_fmt(cc.candidate_coverage)}"
        cases.append(GateCase(cc.candidate, f"coverage {cc.metric}", reason is not None, reason or details, details))
    return cases


def gate_cases(comparison: Comparison) -> list[GateCase]:
    """The gated checks of ``comparison`` (it holds its gate's checks), in the order: metrics as the gate checked
    them, then coverage, then any gate reason no case claimed."""
    reasons = list(comparison.gate.get("reasons", []))
    if not comparison.gate.get("checked"):
        return [
            GateCase(
                ", ".join(comparison.candidates), "gate", False, "nothing gated (no --fail-on or --coverage-drop)", ""
            )
        ]
    cases = _metric_cases(comparison, reasons)
    cases += _coverage_cases(comparison, reasons)
    cases += [GateCase(r.split(":", 1)[0], "gate", True, r, r) for r in reasons]
    return cases


def render_junit(comparison: Comparison) -> str:
    """JUnit XML: ``<testsuites>`` with one ``<testsuite>`` per candidate; a failed check is a ``<failure>``
    whose ``message`` is the gate's line and whose text the numbers; a skipped one a ``<skipped>`` saying why; a
    passed one has its numbers as ``system-out``."""
    return _xml(comparison, gate_cases(comparison))


def _xml(comparison: Comparison, cases: list[GateCase]) -> str:
    root = ET.Element("testsuites", name="foundry-bridge compare", tests=str(len(cases)))
    root.set("failures", str(sum(c.failed for c in cases)))  # no "skipped" here: the junit-10 XSD has it per suite
    root.set("errors", str(sum(c.inconclusive for c in cases)))
    for candidate in dict.fromkeys(c.candidate for c in cases):
        mine = [c for c in cases if c.candidate == candidate]
        suite = ET.SubElement(root, "testsuite", name=f"foundry-bridge compare {comparison.baseline} → {candidate}")
        suite.attrib.update(tests=str(len(mine)), failures=str(sum(c.failed for c in mine)))
        suite.set("errors", str(sum(c.inconclusive for c in mine)))
        suite.attrib.update(skipped=str(sum(c.skipped for c in mine)), time="0")
        for c in mine:
            case = ET.SubElement(suite, "testcase", classname=f"foundry_bridge.compare.{candidate}", name=c.name)
            case.set("time", "0")
            if c.failed:
                ET.SubElement(case, "failure", message=c.message, type="regression").text = c.details
            elif c.inconclusive:  # an error, not a skip: CI shows it red, the gate never silently passes
                ET.SubElement(case, "error", message=c.message, type="inconclusive").text = c.details
            elif c.skipped:
                ET.SubElement(case, "skipped", message=c.message)
            elif c.details:
                ET.SubElement(case, "system-out").text = c.details
    ET.indent(root)
    # a control character (a run folder's name, a query id) is no XML 1.0 character: shown as \xNN, the file parses
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + printable(ET.tostring(root, encoding="unicode")) + "\n"


def write_junit(comparison: Comparison, path: str | Path) -> tuple[int, int]:
    """Write the JUnit XML atomically; return (test cases, failures)."""
    cases = gate_cases(comparison)
    with atomic_open(Path(path)) as fh:
        fh.write(_xml(comparison, cases).encode("utf-8"))
    return len(cases), sum(c.failed for c in cases)

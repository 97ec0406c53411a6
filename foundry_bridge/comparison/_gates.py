"""Gates people write: beside the relative gate (``--fail-on rr@5``: the metric's verdict in the
primary family, ``_compare._gate``), an absolute floor and a count of lost queries, and when a gate cannot decide.

- **floor** ``recall@5>=0.9`` (also ``<=``, ``>``, ``<``; ``negative:`` for negative queries): the candidate's mean
  over its queries of the section where the metric is defined, with Student's 95 % interval of that mean
  (``metrics.intervals.mean_t_interval``), cut to the metric's declared range (a 0–1 measure's: a mean of values
  in [0, 1] is never above 1). On the interval (the default): passed when the whole interval satisfies the
  condition (for ``>=``: its lower bound), failed when none of it does, else inconclusive — the queries the test of
  mean = floor needs to tell the estimate from the floor with 80 % power (``metrics.power.queries_needed`` of the
  gap at α = 1 − confidence). On the estimate: the point estimate alone, passed or failed.
- **lost** ``lost@5<=0`` (``<`` too): queries with a relevant document in the baseline's top k and none in the
  candidate's, paired by query id — the losses of the ``hit@k`` row (``hit@k`` is 1 when a relevant document is in
  the top k), so the pairing and the labels are the comparison's own. The count against the limit; the first
  ``SHOWN`` ids in the reason.
- **relative**, when it did not fail: inconclusive when the test could not have seen the change asked about — the
  asked Δ (``--power-delta``, else the tolerated drop) or, with none asked and some query worse, the observed Δ is
  below the minimum detectable |Δ| at the current n (``_compare._power``, ``metrics.power``); the reason names the
  paired queries needed.

``parse_condition`` reads the text of a floor or lost gate; ``load_gate_file`` a YAML gate file (``_yaml``), its
errors located at file, line and field (``mapping._lines``) with a fix. The decisions return the check's outcome
and its one line of why; ``_compare._gate`` puts them into ``Comparison.gate["checks"]``, which every output reads.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, UsageError, located
from ..metrics.intervals import clip, mean_t_interval
from ..metrics.measures import is_measure_name, parse_measure
from ..metrics.power import POWER, queries_needed

__all__ = [
    "FLOOR_ON",
    "GateFile",
    "GateSpec",
    "as_gate",
    "decide_floor",
    "decide_lost",
    "load_gate_file",
    "parse_condition",
    "parse_fail_on",
    "parse_gate",
    "underpowered",
]

GateKind = Literal["relative", "floor", "lost"]
FloorOn = Literal["interval", "estimate"]
FLOOR_ON: tuple[FloorOn, ...] = ("interval", "estimate")
SHOWN = 5  # lost query ids named in a reason
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(r"^(?P<metric>.+?)\s*(?P<op>>=|<=|>|<)\s*(?P<value>[^<>=]+?)\s*$")
_LOST = re.compile(r"^lost@(?P<k>[1-9][0-9]*)$", re.IGNORECASE)


@dataclass(frozen=True)
class GateSpec:
    """One gate as written: its kind, section, metric (a lost gate's is ``hit@k``), the text (``spec``), a
    relative gate's tolerated drop, a floor's or lost gate's condition (``op`` ``threshold``), a floor's ``on``
    (None: the comparison's default) and, for a gate read from a file, where (``file``, ``line``, ``field``)."""

    kind: GateKind
    section: str
    metric: str
    spec: str
    tolerated: float = 0.0
    op: str | None = None
    threshold: float | None = None
    on: FloorOn | None = None
    file: str | None = None
    line: int | None = None
    field: str | None = None

    @property
    def name(self) -> str:
        """The gate as the outputs name it: ``recall@5 >= 0.9``, ``lost@5 <= 0`` (``negative:`` when negative)."""
        head = "" if self.section == "positive" else f"{self.section}:"
        if self.kind == "relative":
            return self.spec.strip()
        if self.kind == "lost":
            return f"{head}lost@{self.metric.split('@', 1)[1]} {self.op} {self.threshold:g}"
        return f"{head}{self.metric} {self.op} {self.threshold:g}"

    def where(self, message: str, hint: str | None = None) -> str:
        """``message`` located at the gate's file, line and field when it came from a file."""
        return located(message, file=self.file, line=self.line, field=self.field, hint=hint)


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


def parse_gate(
    spec: str, *, on: FloorOn | None = None, file: str | None = None, line: int | None = None, at: str | None = None
) -> GateSpec:
    """Any gate's text: a floor or lost gate (``parse_condition``), else a relative one (``parse_fail_on``)."""
    gate = parse_condition(spec, on=on, file=file, line=line, at=at)
    if gate is not None:
        return gate
    try:
        section, metric, tolerated = parse_fail_on(spec)
    except UsageError as exc:
        raise UsageError(located(str(exc), file=file, line=line, field=at)) from None
    return GateSpec("relative", section, metric, spec, tolerated=tolerated, file=file, line=line, field=at)


def as_gate(gate: str | GateSpec) -> GateSpec:
    """A gate given as text (``--fail-on``'s) or already parsed (a gate file's)."""
    return gate if isinstance(gate, GateSpec) else parse_gate(gate)


def parse_condition(
    spec: str, *, on: FloorOn | None = None, file: str | None = None, line: int | None = None, at: str | None = None
) -> GateSpec | None:
    """``recall@5>=0.9`` → a floor, ``lost@5<=0`` → a lost gate (``negative:`` prefix for a floor on negative
    queries); None when ``spec`` holds no comparison (a relative gate, ``_compare.parse_fail_on``'s). The metric
    name is resolved later (``_compare._resolve``), as a relative gate's is."""
    rest = spec.strip()
    section = "positive"
    for prefix in ("positive:", "negative:"):
        if rest.startswith(prefix):
            section, rest = prefix[:-1], rest[len(prefix) :]
    m = _CONDITION.match(rest)
    if m is None:
        return None
    bad = GateSpec("floor", section, "", spec, file=file, line=line, field=at)  # located: errors, and the gate
    try:
        threshold = float(m["value"])
    except ValueError:
        raise UsageError(
            bad.where(f"gate {spec!r}: {m['value']!r} is not a number", "write e.g. recall@5>=0.9 or lost@5<=0")
        ) from None
    if threshold != threshold or threshold in (float("inf"), float("-inf")):
        raise UsageError(bad.where(f"gate {spec!r}: the threshold must be a finite number"))
    op, metric = m["op"], m["metric"].strip()
    lost = _LOST.match(metric)
    if lost is None:
        return replace(bad, metric=_canonical(metric), op=op, threshold=threshold, on=on)
    if section != "positive" or op not in ("<=", "<") or threshold < 0:
        raise UsageError(
            bad.where(
                f"gate {spec!r}: a lost gate limits how many positive queries may lose every relevant document",
                "write lost@K<=N (or <N) with N ≥ 0, without negative:",
            )
        )
    return replace(bad, kind="lost", metric=f"hit@{lost['k']}", op=op, threshold=threshold)


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4g}"


def decide_floor(
    gate: GateSpec,
    candidate: str,
    values: Any,
    *,
    on: FloorOn,
    confidence: float,
    min_n: int,
    bounds: tuple[float | None, float | None] = (None, None),
) -> dict[str, Any]:
    """A floor's check on the candidate's defined values of the section (module docstring): its outcome (passed,
    failed, inconclusive; skipped when fewer than ``min_n`` values: it could never be decided) and one line of
    why. ``bounds``: the metric's declared range (a 0–1 measure's, a judge's 1–5): Student's interval is cut to it
    (``metrics.intervals.clip``; a mean of 0–1 values is never above 1) and the reason says so."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    assert gate.op is not None and gate.threshold is not None
    holds, thr = _OPS[gate.op], gate.threshold
    check: dict[str, Any] = {"kind": "floor", "gate": gate.name, "candidate": candidate, "section": gate.section,
                             "metric": gate.metric, "op": gate.op, "threshold": thr, "on": on, "n": n,
                             "confidence": confidence, "estimate": None, "low": None, "high": None,
                             "queries_needed": None}  # fmt: skip
    head = f"{candidate}: {gate.name}"
    if n < max(min_n, 2):
        check["outcome"] = "skipped"
        check["reason"] = (
            f"{head} cannot be decided: {n} {gate.section} queries with {gate.metric} defined, fewer than "
            f"--min-paired {min_n}"
        )
        return check
    mean = float(v.mean())
    low, high = mean_t_interval(v, confidence=confidence)
    lo, hi = bounds
    low, high, cut = clip(low, high, -math.inf if lo is None else lo, math.inf if hi is None else hi)
    check.update(estimate=mean, low=low, high=high)
    range_note = f", cut to the metric's range [{_fmt(lo)}, {_fmt(hi)}]" if cut else ""
    shown = f"mean {_fmt(mean)} [{_fmt(low)}, {_fmt(high)}]{range_note} over {n} queries"
    if on == "estimate":
        check["outcome"] = "passed" if holds(mean, thr) else "failed"
        verb = "holds" if check["outcome"] == "passed" else "fails"
        check["reason"] = f"{head} {verb} on the point estimate: {shown}"
        return check
    level = f"{confidence:.0%} interval"
    if holds(low, thr) and holds(high, thr):
        check["outcome"], verb, why = "passed", "holds", f"the whole interval is {gate.op} {thr:g}"
    elif not holds(low, thr) and not holds(high, thr):
        check["outcome"], verb, why = "failed", "fails", f"none of the interval is {gate.op} {thr:g}"
    else:
        need = queries_needed(mean - thr, float(v.std(ddof=1)), 1.0 - confidence)
        check["outcome"], check["queries_needed"], verb = "inconclusive", need, "is undecided"
        needs = f"{need} queries" if need is not None else "more queries"
        why = f"the interval straddles {thr:g}: too few queries to tell the mean from the floor (need {needs})"
    check["reason"] = f"{head} {verb} on the {level}: {shown}; {why}"
    return check


def decide_lost(
    gate: GateSpec,
    candidate: str,
    baseline: str,
    *,
    lost: int,
    lost_ids: Sequence[str],
    eligible: int,
) -> dict[str, Any]:
    """A lost gate's check: ``lost`` queries (the ``hit@k`` row's losses, the first ids ``lost_ids``) of the
    ``eligible`` with a relevant document in the baseline's top k, against the limit; skipped when none is
    eligible (it could never fire)."""
    assert gate.op is not None and gate.threshold is not None
    k = gate.metric.split("@", 1)[1]
    check: dict[str, Any] = {"kind": "lost", "gate": gate.name, "candidate": candidate, "section": gate.section,
                             "metric": f"lost@{k}", "op": gate.op, "threshold": gate.threshold, "lost": lost,
                             "eligible": eligible, "lost_ids": list(lost_ids[:SHOWN])}  # fmt: skip
    head = f"{candidate}: {gate.name}"
    if eligible == 0:
        check["outcome"] = "skipped"
        check["reason"] = f"{head} cannot fire: no paired query has a relevant document in {baseline}'s top {k}"
        return check
    check["outcome"] = "passed" if _OPS[gate.op](lost, gate.threshold) else "failed"
    ids = ", ".join(lost_ids[:SHOWN]) + (" …" if lost > SHOWN else "")
    what = f"{lost} of {eligible} queries with a relevant document in {baseline}'s top {k} have none in {candidate}'s"
    verb = "holds" if check["outcome"] == "passed" else "fails"
    check["reason"] = f"{head} {verb}: {what}" + (f" ({ids})" if lost else "")
    return check


def underpowered(
    delta: float | None, worse: int, sd: float | None, power: Mapping[str, Any], *, higher_is_better: bool | None
) -> str:
    """Why a relative gate that did not fail cannot pass ('' when it can): the Δ asked (``power["delta"]``) or,
    with none asked and ``worse`` queries worse in the regression's direction, the observed |Δ| is below the
    minimum detectable |Δ| at the current n (``power["mde"]``) — with the paired queries that Δ needs."""
    mde = power.get("mde")
    if mde is None:
        return ""
    asked = power.get("delta")
    if asked is not None:
        effect, what, need = float(asked), f"the Δ asked, {float(asked):g},", power.get("queries_needed")
    else:
        sign = -1.0 if higher_is_better is not False else 1.0
        if not worse or delta is None or delta * sign <= 0:
            return ""
        effect, what = abs(delta), f"the observed |Δ| {abs(delta):.4g} ({worse} queries worse)"
        need = queries_needed(effect, sd, power["alpha"])
    if effect >= mde:
        return ""
    needs = f"{need} paired queries" if need is not None else "more paired queries"
    return (
        f"too few informative queries: {what} is below the |Δ| ≥ {mde:.4g} this test detects at n = {power['n']} "
        f"({POWER:.0%} power, α = {power['alpha']:g}); inconclusive (need {needs})"
    )


@dataclass
class GateFile:
    """A gate file's gates, in order, and its ``alpha`` (None: not set)."""

    path: str
    gates: list[GateSpec] = field(default_factory=list)
    alpha: float | None = None


_KEYS = ("alpha", "gates")
_GATE_KEYS = ("gate", "floor_on")  # not ``on``: YAML 1.1 reads a bare on as true
_EXAMPLE = "gates: [rr@5, 'recall@5 >= 0.9', 'lost@5 <= 0'] (optional alpha: 0.05)"


def load_gate_file(path: str | Path) -> GateFile:
    """Read a YAML gate file: ``alpha`` (optional, in (0, 1)) and ``gates``, a list whose items are a gate as
    ``--fail-on`` writes it (``rr@5``, ``groundedness:0.1``, ``recall@5>=0.9``, ``lost@5<=0``) or a mapping
    ``{gate: ..., floor_on: interval|estimate}``. Every error is an ``InputError`` at the file, line and field, with a
    fix."""
    from .._text import did_you_mean
    from .._yaml import load_bounded
    from ..mapping._lines import dotted, key_line

    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the gate file: {exc}", file=file) from None
    data, node = load_bounded(text, file=file)

    def fail(loc: tuple[Any, ...], message: str, hint: str) -> InputError:
        return InputError(message, file=file, line=key_line(node, loc), field=dotted(loc) or None, hint=hint)

    if not isinstance(data, dict) or not isinstance(data.get("gates"), list) or not data["gates"]:
        raise fail(("gates",), "a gate file is a mapping with a non-empty list `gates`", f"write {_EXAMPLE}")
    for key in data:
        if key not in _KEYS:
            guess = did_you_mean(str(key), list(_KEYS))
            raise fail((key,), f"unknown key {key!r}", f"did you mean {guess!r}?" if guess else f"keys: {_KEYS}")
    out = GateFile(file)
    alpha = data.get("alpha")
    if alpha is not None:
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
            raise fail(("alpha",), f"alpha must be a number in (0, 1), got {alpha!r}", "write e.g. alpha: 0.05")
        out.alpha = float(alpha)
    for i, item in enumerate(data["gates"]):
        loc: tuple[Any, ...] = ("gates", i)
        on: FloorOn | None = None
        if isinstance(item, dict):
            for key in item:
                if key not in _GATE_KEYS:
                    guess = did_you_mean(str(key), list(_GATE_KEYS))
                    hint = f"did you mean {guess!r}?" if guess else f"a gate's keys: {', '.join(_GATE_KEYS)}"
                    raise fail((*loc, key), f"unknown key {key!r}", hint)
            if item.get("floor_on") is not None:
                if item["floor_on"] not in FLOOR_ON:
                    got = item["floor_on"]
                    raise fail(
                        (*loc, "floor_on"), f"floor_on is interval or estimate, got {got!r}", "floor_on: interval"
                    )
                on = item["floor_on"]
            loc, item = (*loc, "gate"), item.get("gate")
        if not isinstance(item, str) or not item.strip():
            raise fail(loc, f"a gate is text such as rr@5 or 'recall@5 >= 0.9', got {item!r}", f"write {_EXAMPLE}")
        line, at = key_line(node, loc), dotted(loc)
        try:
            gate = parse_gate(item, on=on, file=file, line=line, at=at)
        except UsageError as exc:
            raise InputError(str(exc)) from None
        if gate.kind == "relative" and on is not None:
            raise fail((*loc[:2], "floor_on"), f"floor_on is a floor's, not the relative gate {item!r}'s", "drop it")
        out.gates.append(gate)
    return out

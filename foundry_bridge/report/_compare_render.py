"""Renderers of a ``Comparison``: JSON and Markdown (a one-screen sweep table first, details after)."""

from __future__ import annotations

from typing import Any

from .._text import printable
from ..metrics.significance import CORRECTION_NAME
from ._compare import Comparison, MeasureRanking, MetricComparison, PairComparison
from ._drift import judges_note
from ._format import fmt_num, md_escape
from ._foundry import render_foundry_markdown
from ._model import STAGES

__all__ = ["deltas_svg", "render_comparison_html", "render_comparison_json", "render_comparison_markdown"]


def render_comparison_json(comparison: Comparison) -> str:
    """The comparison model as indented JSON (``foundry_comparison``, ``all_pairs``, ``qrels`` and ``drift`` only
    when asked for: ``--foundry``, ``--all-pairs``, ``--qrels``, ``--anchor``)."""
    optional = ("foundry_comparison", "all_pairs", "qrels", "drift")
    unasked = {name for name in optional if getattr(comparison, name) is None}
    return comparison.model_dump_json(indent=2, exclude=unasked or None) + "\n"


def _headline(comparison: Comparison, limit: int = 10) -> list[str]:
    return comparison.headline[:limit]


def _mark(mc: MetricComparison | None) -> str:
    if mc is None or mc.delta is None or mc.delta == 0:
        return ""
    sign = "+" if mc.delta > 0 else ""
    star = {"better": " ▲", "worse": " ▼", "changed": " *"}.get(mc.verdict, "")
    return f" ({sign}{fmt_num(mc.delta)}{star})"


def _sweep(comparison: Comparison) -> list[str]:
    """The title, the method line and the sweep table: runs × headline metrics, positive queries (run files: every
    qrels topic, and no Foundry coverage or stage columns)."""
    by = {(m.candidate, m.section, m.metric): m for m in comparison.metrics}
    heads = _headline(comparison)
    if comparison.qrels is not None:
        return _method(comparison) + _files_sweep(comparison, heads, by)
    out = [
        "## foundry-bridge compare",
        "",
        f"Baseline `{md_escape(comparison.baseline)}`; tests {comparison.test} (sign-flip: "
        f"{comparison.n_resamples} resamples, exact when fewer assignments exist, seed {comparison.seed}); "
        f"{comparison.confidence:.0%} CI: {comparison.ci}; {_decision(comparison)} ▲ better, ▼ worse (significant).",
        "",
        "### Sweep (positive queries, mean and Δ vs baseline)",
        "",
        "| run | coverage | " + " | ".join(STAGES) + " | " + " | ".join(md_escape(h) for h in heads) + " |",
        "|---" * (2 + len(STAGES) + len(heads)) + "|",
    ]
    for run in comparison.runs:
        cells = [md_escape(run.label), f"{run.scores_scored}/{run.scores_expected}"]
        cells += [str(run.stages.get(s, 0)) for s in STAGES]
        for h in heads:
            mean = run.means.get(f"positive:{h}")
            cells.append(fmt_num(mean) + _mark(by.get((run.label, "positive", h))))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def _method(comparison: Comparison) -> list[str]:
    """The title and the method line of run files compared on qrels."""
    q = comparison.qrels or {}
    return [
        "## foundry-bridge compare",
        "",
        f"Qrels `{md_escape(str(q.get('qrels')))}`: {q.get('topics')} topics ({md_escape(str(q.get('rule')))}; "
        f"relevant ⇔ label ≥ {q.get('relevance_threshold')}). Baseline `{md_escape(comparison.baseline)}`; tests "
        f"{comparison.test} (sign-flip: {comparison.n_resamples} resamples, exact when fewer assignments exist, seed "
        f"{comparison.seed}); {comparison.confidence:.0%} CI: {comparison.ci}; {_decision(comparison)} ▲ better, "
        "▼ worse (significant).",
        "",
    ]


def _files_sweep(comparison: Comparison, heads: list[str], by: dict[Any, MetricComparison]) -> list[str]:
    """Runs × measures over every qrels topic: the mean and Δ vs the baseline."""
    out = [
        "### Sweep (every qrels topic, mean and Δ vs baseline)",
        "",
        "| run | " + " | ".join(md_escape(h) for h in heads) + " |",
        "|---" * (1 + len(heads)) + "|",
    ]
    for run in comparison.runs:
        cells = [md_escape(run.label)]
        for h in heads:
            cells.append(fmt_num(run.means.get(f"positive:{h}")) + _mark(by.get((run.label, "positive", h))))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def _ranking(r: MeasureRanking, pairs: list[PairComparison], files: bool) -> list[str]:
    """One metric's ranking with its letters, the win/tie/loss matrix and every pair's effect size."""
    where = "" if files else f" ({r.section})"
    out = [
        f"### Ranking by {md_escape(r.metric)}{where}",
        "",
        "| rank | run | mean | group |",
        "|---|---|---|---|",
    ]
    out += [f"| {s.rank} | {md_escape(s.system)} | {fmt_num(s.mean)} | {s.letters} |" for s in r.systems]
    order = [s.system for s in r.systems]
    out += ["", "Wins/ties/losses per query, row against column:", ""]
    out.append("| | " + " | ".join(md_escape(n) for n in order) + " |")
    out.append("|---" * (1 + len(order)) + "|")
    for a in order:
        cells = ["–" if a == b else "/".join(map(str, r.wtl.get(a, {}).get(b, []))) or "–" for b in order]
        out.append(f"| {md_escape(a)} | " + " | ".join(cells) + " |")
    out += ["", "| A | B | n | Δ (B − A) | CI | d_z | p | p corr. | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for m in pairs:
        ci = f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]" if m.ci_low is not None else "–"
        p = f"{m.p_value:.4g}" if m.p_value is not None else "–"
        p_adj = f"{m.p_adjusted:.4g}" if m.p_adjusted is not None else "–"
        verdict = f"**{m.verdict}**" if m.verdict in ("better", "worse") else m.verdict
        out.append(
            f"| {md_escape(m.baseline)} | {md_escape(m.candidate)} | {m.n_paired} | {fmt_num(m.delta)} | {ci} | "
            f"{fmt_num(m.d_z)} | {p} | {p_adj} | {verdict} |"
        )
    out.append("")
    return out


def _all_pairs(comparison: Comparison) -> list[str]:
    """Every shown metric's ranking (``_ranking``), after the letters' rule."""
    ap = comparison.all_pairs
    if ap is None:
        return []
    out = [f"All pairs of runs tested; {ap.letters}.", ""]
    for r in ap.rankings:
        pairs = [m for m in ap.pairs if m.metric == r.metric and m.section == r.section]
        out += _ranking(r, pairs, comparison.qrels is not None)
    return out


def _power_line(check: dict[str, Any]) -> str:
    """A gate check's power: ``- power: <cand> <metric>: detects |Δ| ≥ x at n = N (80 %, α = a); Δ = y needs M
    queries`` ('' when the check has no power entry or no defined sd)."""
    pw = check.get("power") or {}
    mde, need = pw.get("mde"), pw.get("queries_needed")
    if mde is None and need is None:
        return ""
    what = f"{check['candidate']} {_spec_of(check)}"
    parts = [f"detects |Δ| ≥ {mde:.4g} at n = {pw['n']}" if mde is not None else f"no effect size at n = {pw['n']}"]
    parts[0] += f" ({pw['power']:.0%} power, α = {pw['alpha']:g})"
    if need is not None:
        parts.append(f"Δ = {pw['delta']:g} needs {need} paired queries")
    return f"- power: {md_escape(what)}: " + "; ".join(parts)


def _spec_of(check: dict[str, Any]) -> str:
    return check["metric"] if check["section"] == "positive" else f"{check['section']}:{check['metric']}"


def _gate_and_warnings(comparison: Comparison) -> list[str]:
    """One gate line (the decision and the false-alarm rate across gates), its reasons and skipped checks, then
    the warnings."""
    out: list[str] = []
    gate = comparison.gate
    if gate.get("checked"):
        status = "FAILED" if gate.get("failed") else "INCONCLUSIVE" if gate.get("inconclusive") else "passed"
        statement = gate.get("false_alarm")
        out.append(f"**Gate: {status}**" + (f" — {md_escape(statement)}" if statement else ""))
        out.extend(f"- {md_escape(r)}" for r in gate.get("reasons", []))
        out.extend(f"- inconclusive: {md_escape(r)}" for r in gate.get("inconclusive", []))
        out.extend(
            f"- skipped: {md_escape(c['reason'])}" for c in gate.get("checks", []) if c.get("outcome") == "skipped"
        )
        out.extend(line for c in gate.get("checks", []) if (line := _power_line(c)))
        out.append("")
    out.extend(f"> ⚠️ {md_escape(w)}" for w in comparison.warnings)
    if comparison.warnings:
        out.append("")
    return out


def _decision(comparison: Comparison) -> str:
    """The method line's decision rule: which p, corrected how, decides (the verdicts; the gate says its own)."""
    fewer = f"fewer than {comparison.min_paired} paired queries: no decision."
    left = comparison.left_out_tests
    zeros = (
        f" {left} test{'s' if left != 1 else ''} with every paired difference 0 (p = 1) "
        f"{'are' if left != 1 else 'is'} shown but not counted in the family."
        if left
        else ""
    )
    if comparison.correction == "none":
        return f"significant ⇔ p < {comparison.alpha} (uncorrected: p corr. = p); {fewer}{zeros}"
    name = CORRECTION_NAME[comparison.correction]
    pairs = " × every pair of runs" if comparison.all_pairs is not None else ""
    if comparison.qrels is not None:
        scope = f"of every measure computed (--metric and --fail-on){pairs}; the gate decides on its own"
    else:
        scope = f"of every metric the runs share{pairs} (whichever are shown; the gate decides on its own)"
    plural = "s" if comparison.exploratory_tests != 1 else ""
    return (
        f"significant ⇔ {name}-corrected p < {comparison.alpha} over the {comparison.exploratory_tests} "
        f"test{plural} {scope}; {fewer}{zeros}"
    )


def _metric_table(rows: list[MetricComparison]) -> list[str]:
    """The metrics that changed on some query (with the test, n, means, Δ, CI, d_z, p, corrected p, verdict), then
    the unchanged ones."""
    out = ["| section | metric | test | n | baseline | candidate | Δ | CI | d_z | p | p corr. | verdict | W/T/L |"]
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    shown = [m for m in rows if m.wins or m.losses or m.significant]
    unchanged = [f"{m.section} {m.metric}" for m in rows if m.n_paired and m not in shown]
    uncomparable = [f"{m.section} {m.metric}" for m in rows if not m.n_paired]
    for m in shown:
        ci = f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]" if m.ci_low is not None else "–"
        p = f"{m.p_value:.4g}" if m.p_value is not None else "–"
        p_adj = f"{m.p_adjusted:.4g}" if m.p_adjusted is not None else "–"
        n = f"{m.n_paired}" + (f" (+{m.n_excluded} undefined)" if m.n_excluded else "")
        verdict = f"**{m.verdict}**" if m.verdict in ("better", "worse") else m.verdict
        verdict += " †" if m.judges_differ else ""
        out.append(
            f"| {m.section} | {md_escape(m.metric)} | {md_escape(m.test)} | {n} | {fmt_num(m.baseline_mean)} | "
            f"{fmt_num(m.candidate_mean)} | {fmt_num(m.delta)} | {ci} | {fmt_num(m.d_z)} | {p} | {p_adj} | "
            f"{verdict} | {m.wins}/{m.ties}/{m.losses} |"
        )
    if not shown:
        out.append("| – | no metric changed on any query | | | | | | | | | | | |")
    out.append("")
    if unchanged:
        out.append(f"Identical on every paired query: {md_escape(', '.join(unchanged))}")
    if uncomparable:
        out.append(f"Not comparable (no query defined in both runs): {md_escape(', '.join(uncomparable))}")
    out += _judges_differ(rows)
    out.append("")
    return out


def _judges_differ(rows: list[MetricComparison]) -> list[str]:
    """One line per pair of differing judges, naming the metrics they score (the table marks them †)."""
    by: dict[tuple[str | None, ...], list[str]] = {}
    for m in rows:
        if m.judges_differ and m.judges is not None and m.metric not in by.setdefault(tuple(m.judges), []):
            by[tuple(m.judges)].append(m.metric)
    return [
        f"† {md_escape(', '.join(metrics))}: {md_escape(judges_note(judges))} (compare --anchor OLD NEW tells them "
        "apart)"
        for judges, metrics in by.items()
    ]


def _drift(comparison: Comparison) -> list[str]:
    """``--anchor``: the judge's shift on the anchor beside each judge metric's system Δ, and the verdict."""
    d = comparison.drift
    if d is None:
        return []
    judges = sorted({f"{c}: {d.judges_old.get(c) or 'unknown'} → {d.judges_new.get(c) or 'unknown'}"
                     for c in d.judges_old.keys() | d.judges_new.keys()
                     if d.judges_old.get(c) or d.judges_new.get(c)})  # fmt: skip
    out = [
        "### Judge drift (anchor: the same rows judged by the old and the new judge)",
        "",
        f"Old `{md_escape(d.old)}`, new `{md_escape(d.new)}`; judges: {md_escape('; '.join(judges) or 'unnamed')}."
        + (f" Human verdicts: `{md_escape(d.human_verdicts)}`." if d.human_verdicts else ""),
        f"Rule: {md_escape(d.rule)}.",
        "",
        "| candidate | section | metric | system Δ [CI] | anchor n | judge shift [CI] | p corr. | net Δ [CI] "
        "| κ old / new (labels) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d.rows:
        kappa = f"{fmt_num(r.kappa_old)} / {fmt_num(r.kappa_new)} ({r.labeled})" if d.human_verdicts else "–"
        p = f"{r.anchor_p_adjusted:.4g}" if r.anchor_p_adjusted is not None else "–"
        out.append(
            f"| {md_escape(r.candidate)} | {r.section} | {md_escape(r.metric)} | "
            f"{_with_ci(r.system_delta, r.system_low, r.system_high)} | {r.anchor_n} | "
            f"{_with_ci(r.anchor_shift, r.anchor_low, r.anchor_high)} | {p} | "
            f"{_with_ci(r.net_delta, r.net_low, r.net_high)} | {kappa} | **{r.verdict}** |"
        )
    if not d.rows:
        out.append("| – | no judge metric shared by the runs and the anchor | | | | | | | | |")
    out.append("")
    return out


def _with_ci(value: float | None, low: float | None, high: float | None) -> str:
    return fmt_num(value) + (f" [{fmt_num(low)}, {fmt_num(high)}]" if low is not None and high is not None else "")


def _got_worse(rows: list[MetricComparison], max_worse: int) -> list[str]:
    worse = [m for m in rows if m.got_worse]
    if not worse:
        return []
    out = ["Got worse:", ""]
    for m in worse:
        ids = ", ".join(
            f"{md_escape(g['query_id'])} ({fmt_num(g['baseline'])}→{fmt_num(g['candidate'])})"
            for g in m.got_worse[:max_worse]
        )
        more = f" … +{len(m.got_worse) - max_worse}" if len(m.got_worse) > max_worse else ""
        out.append(f"- {m.section} {md_escape(m.metric)}: {ids}{more}")
    out.append("")
    return out


def _query_changes(comparison: Comparison, cand: str) -> list[str]:
    """Queries in one run only, changed kinds and coverage drops of one candidate."""
    out: list[str] = []
    for q in comparison.queries:
        if q.candidate != cand:
            continue
        if q.only_in_baseline:
            out.append(f"Only in {md_escape(comparison.baseline)}: {', '.join(map(md_escape, q.only_in_baseline))}")
        if q.only_in_candidate:
            out.append(f"Only in {md_escape(cand)}: {', '.join(map(md_escape, q.only_in_candidate))}")
        if q.kind_changed:
            out.append(f"Kind changed: {', '.join(map(md_escape, q.kind_changed))}")
    for c in comparison.coverage:
        if c.candidate == cand and c.drop > 0:
            out.append(
                f"Coverage of {md_escape(c.metric)} dropped: {fmt_num(c.baseline)} → {fmt_num(c.candidate_coverage)}"
            )
    out.append("")
    return out


def render_comparison_markdown(comparison: Comparison, *, max_worse: int = 10) -> str:
    """Sweep table (runs × headline metrics), then per-candidate deltas with p and CI, got-worse lists, gate."""
    out = [*_sweep(comparison), *_gate_and_warnings(comparison), *_all_pairs(comparison)]
    for cand in comparison.candidates:
        if comparison.all_pairs is not None:  # each candidate's rows are in the pairs' tables
            out += _query_changes(comparison, cand)
            continue
        out += [f"### {md_escape(cand)} vs {md_escape(comparison.baseline)}", ""]
        rows = [m for m in comparison.metrics if m.candidate == cand]
        out += [*_metric_table(rows), *_got_worse(rows, max_worse), *_query_changes(comparison, cand)]
    out += _drift(comparison)
    if comparison.foundry_comparison is not None:
        out.append(render_foundry_markdown(comparison.foundry_comparison))
    return printable("\n".join(out).rstrip() + "\n")


# -- the deltas as a picture ---------------------------------------------------------------------------------------
_VERDICT_FILL = {"better": "#2e7d32", "worse": "#c62828"}


def deltas_svg(comparison: Comparison, *, section: str = "positive", width: int = 720) -> str:
    """The shown metrics' deltas on ``section``'s queries as an inline SVG interval plot: a row per (candidate,
    metric), the mean delta as a dot and its confidence interval as a bar, around a line at 0; green when the
    candidate is significantly better, red when worse, grey otherwise. Rows without a delta are left out."""
    from html import escape

    rows = [m for m in comparison.metrics if m.section == section and m.delta is not None]
    if not rows:
        return ""
    values = [v for m in rows for v in (m.delta, m.ci_low, m.ci_high) if v is not None]
    span = max(max(abs(v) for v in values), 1e-12)
    label_w, row_h, top = 260, 22, 20
    plot_w = width - label_w - 20
    height = top + row_h * len(rows) + 6

    def x(v: float) -> float:
        return label_w + plot_w / 2 + plot_w / 2 * v / span

    parts = [
        f'<svg class="deltas" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="delta vs baseline with {comparison.confidence:.0%} intervals, {section} queries">',
        f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{height}" stroke="#999"/>',
        f'<text x="{x(-span):.1f}" y="12" font-size="10" fill="#666">{fmt_num(-span)}</text>',
        f'<text x="{x(0):.1f}" y="12" font-size="10" fill="#666" text-anchor="middle">0</text>',
        f'<text x="{x(span):.1f}" y="12" font-size="10" fill="#666" text-anchor="end">+{fmt_num(span)}</text>',
    ]
    for i, m in enumerate(rows):
        y = top + row_h * i + row_h / 2
        fill = _VERDICT_FILL.get(m.verdict, "#757575")
        name = f"{m.candidate}: {m.metric}" if len(comparison.candidates) > 1 else m.metric
        title = f"{name}: Δ {fmt_num(m.delta)} [{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}] ({m.verdict})"
        parts.append(f'<g><title>{escape(title)}</title><text x="0" y="{y + 4:.1f}" font-size="12">')
        parts.append(f"{escape(name)}</text>")
        if m.ci_low is not None and m.ci_high is not None:
            parts.append(
                f'<line x1="{x(m.ci_low):.1f}" y1="{y:.1f}" x2="{x(m.ci_high):.1f}" y2="{y:.1f}" stroke="{fill}" '
                'stroke-width="3"/>'
            )
        parts.append(f'<circle cx="{x(m.delta or 0.0):.1f}" cy="{y:.1f}" r="5" fill="{fill}"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as one self-contained page with no script (its CSP allows none): the deltas of positive and
    negative queries drawn with their intervals (``deltas_svg``), then the Markdown report's text."""
    from html import escape

    pictures = []
    for section in ("positive", "negative"):
        svg = deltas_svg(comparison, section=section)
        if svg:
            pictures.append(f"<h2>Δ vs baseline, {section} queries ({comparison.confidence:.0%} intervals)</h2>{svg}")
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return printable(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>foundry-bridge compare</title>'
        "<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1400px;margin:0 auto;padding:12px 20px}"
        "pre{white-space:pre-wrap}</style></head><body>\n<h1>foundry-bridge compare</h1>\n"
        + "\n".join(pictures)
        + f"\n<h2>The comparison</h2><pre>{escape(render_comparison_markdown(comparison))}</pre>\n</body></html>\n"
    )

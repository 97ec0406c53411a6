"""Renderers of a ``Comparison``: JSON, and one document (the verdict first, the sweep, the gate, the tables) written
as Markdown (a pull-request comment, the step summary), plain aligned text (a terminal) or HTML (real tables).

The document is a list of blocks built once (``_document``); each renderer only spells them. Every verdict, in every
output, is the row's ``MetricComparison.verdict`` (one per metric and query kind), and the gate line is the gate's.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .._text import printable
from ..report._blocks import Block as _Block
from ..report._blocks import Strong, blocks_text
from ..report._blocks import squeeze as _squeeze
from ..report._blocks import table as _table
from ..report._format import fmt_num
from ..report._foundry import render_foundry_markdown
from ..report._model import STAGES
from ._compare import Comparison, MeasureRanking, MetricComparison, PairComparison
from ._drift import judges_note
from ._query_view import query_view_html

__all__ = [
    "deltas_svg",
    "render_comparison_html",
    "render_comparison_json",
    "render_comparison_markdown",
    "render_comparison_text",
    "verdict_lines",
]


def render_comparison_json(comparison: Comparison) -> str:
    """The comparison model as indented JSON (``foundry_comparison``, ``all_pairs``, ``qrels`` and ``drift`` only
    when asked for: ``--foundry``, ``--all-pairs``, ``--qrels``, ``--anchor``)."""
    optional = ("foundry_comparison", "all_pairs", "qrels", "drift")
    unasked = {name for name in optional if getattr(comparison, name) is None}
    return comparison.model_dump_json(indent=2, exclude=unasked or None) + "\n"


# -- the document ---------------------------------------------------------------------------------------------------


def _h(text: str, level: int = 3) -> _Block:
    return _Block("h", text, level)


def _p(text: str) -> _Block:
    return _Block("p", text)


def _verdict_cell(verdict: str, judges_differ: bool = False) -> str:
    text = verdict + (" †" if judges_differ else "")
    return Strong(text) if verdict in ("better", "worse") else text


def _ci(low: float | None, high: float | None) -> str:
    return f"[{fmt_num(low)}, {fmt_num(high)}]" if low is not None and high is not None else "–"


def _p_value(p: float | None) -> str:
    return "–" if p is None else f"{p:.4g}"


def _gate_status(comparison: Comparison) -> str | None:
    gate = comparison.gate
    if not gate.get("checked"):
        return None
    return "FAILED" if gate.get("failed") else "INCONCLUSIVE" if gate.get("inconclusive") else "passed"


def _candidate_verdict(comparison: Comparison, cand: str) -> str:
    """One sentence: which way the candidate moved on its most telling metric (primary rows first), how many queries
    moved, and the gate."""
    rows = [m for m in comparison.metrics if m.candidate == cand]
    order = {key: i for i, key in enumerate(comparison.headline)}
    rows.sort(key=lambda m: (m.family != "primary", m.section != "positive", order.get(m.metric, len(order))))
    base = comparison.baseline
    for direction in ("worse", "better", "changed"):
        moved = [m for m in rows if m.verdict == direction]
        if not moved:
            continue
        m = moved[0]
        where = "" if m.section == "positive" else " (negative queries)"
        worse, better = (m.losses, m.wins)
        line = (
            f"{cand} is {direction} than {base} on {m.metric}{where}: Δ {fmt_num(m.delta)} {_ci(m.ci_low, m.ci_high)}, "
            f"{worse} queries worse, {better} better (p corrected {_p_value(m.p_adjusted)}, {m.family})"
        )
        others = [f"{o.metric}" + ("" if o.section == "positive" else " (negative)") for o in moved[1:]]
        if others:
            shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            line += f"; also {direction} on {shown}"
        return line
    tested = sum(1 for m in rows if m.n_paired)
    return f"{cand}: no significant change against {base} on any of the {tested} metrics shown"


def verdict_lines(comparison: Comparison) -> list[str]:
    """The answer first: one sentence per candidate (``_candidate_verdict``) and the gate's status."""
    out = [_candidate_verdict(comparison, cand) for cand in comparison.candidates]
    status = _gate_status(comparison)
    if status is not None:
        out[-1] += f"; gate {status}"
    return out


def _decision(comparison: Comparison) -> str:
    """The method line's decision rule: the two families, how each is corrected, and what is left out."""
    fewer = f"fewer than {comparison.min_paired} paired queries: no decision."
    left = comparison.left_out_tests
    zeros = f" {left} test(s) with every paired difference 0 (p = 1) shown but in no family." if left else ""
    names = {"westfall-young": "Westfall–Young minP over each pair's joint sign flips", "holm": "Holm",
             "bh": "Benjamini–Hochberg", "none": "no correction"}  # fmt: skip
    primary = ""
    if comparison.primary_tests:
        primary = (
            f"primary (gated, sets the exit code): {names[comparison.gate_correction]} over "
            f"{comparison.primary_tests} test(s); "
        )
    return (
        f"significant ⇔ corrected p < {comparison.alpha}; {primary}secondary (every other metric the runs share, "
        f"shown or not): {names[comparison.correction]} over {comparison.exploratory_tests} test(s); {fewer}{zeros}"
    )


def _method(comparison: Comparison) -> str:
    lead = f"Baseline {comparison.baseline}"
    if comparison.qrels is not None:
        q = comparison.qrels
        lead = (
            f"Qrels {q.get('qrels')}: {q.get('topics')} topics ({q.get('rule')}; relevant ⇔ label ≥ "
            f"{q.get('relevance_threshold')}). {lead}"
        )
    return (
        f"{lead}; tests {comparison.test} (sign-flip: {comparison.n_resamples} resamples, exact when fewer "
        f"assignments exist, seed {comparison.seed}); {comparison.confidence:.0%} CI: {comparison.ci}; "
        f"{_decision(comparison)} ▲ better, ▼ worse (the row's verdict)."
    )


def _mark(mc: MetricComparison | None) -> str:
    if mc is None or mc.delta is None or mc.delta == 0:
        return ""
    sign = "+" if mc.delta > 0 else ""
    star = {"better": " ▲", "worse": " ▼", "changed": " *"}.get(mc.verdict, "")
    return f" ({sign}{fmt_num(mc.delta)}{star})"


def _sweep(comparison: Comparison) -> list[_Block]:
    """Runs × headline metrics on positive queries: mean and Δ vs the baseline (run folders: coverage and stages)."""
    by = {(m.candidate, m.section, m.metric): m for m in comparison.metrics}
    heads = comparison.headline[:10]
    folders = comparison.qrels is None
    headers = ["run", *(("coverage", *STAGES) if folders else ()), *heads]
    rows: list[Sequence[str]] = []
    for run in comparison.runs:
        cells = [run.label]
        if folders:
            cells += [f"{run.scores_scored}/{run.scores_expected}", *(str(run.stages.get(s, 0)) for s in STAGES)]
        cells += [fmt_num(run.means.get(f"positive:{h}")) + _mark(by.get((run.label, "positive", h))) for h in heads]
        rows.append(cells)
    what = "positive queries" if folders else "every qrels topic"
    return [_h(f"Sweep ({what}, mean and Δ vs baseline)"), _table(headers, rows)]


def _power_line(check: dict[str, Any]) -> str:
    """A gate check's power ('' when the check has no power entry or no defined sd)."""
    pw = check.get("power") or {}
    mde, need = pw.get("mde"), pw.get("queries_needed")
    if mde is None and need is None:
        return ""
    what = check["metric"] if check["section"] == "positive" else f"{check['section']}:{check['metric']}"
    parts = [f"detects |Δ| ≥ {mde:.4g} at n = {pw['n']}" if mde is not None else f"no effect size at n = {pw['n']}"]
    parts[0] += f" ({pw['power']:.0%} power, α = {pw['alpha']:g})"
    if need is not None:
        parts.append(f"Δ = {pw['delta']:g} needs {need} paired queries")
    return f"power: {check['candidate']} {what}: " + "; ".join(parts)


def gate_lines(comparison: Comparison) -> list[str]:
    """The gate's line (its decision and the false-alarm rate across gates), then one line per check."""
    status = _gate_status(comparison)
    if status is None:
        return []
    gate = comparison.gate
    statement = gate.get("false_alarm")
    out = [f"Gate: {status}" + (f" — {statement}" if statement else "")]
    out += [f"- {r}" for r in gate.get("reasons", [])]
    out += [f"- inconclusive: {r}" for r in gate.get("inconclusive", [])]
    for c in gate.get("checks", []):
        if c.get("outcome") == "skipped":
            out.append(f"- skipped: {c['reason']}")
        elif c.get("outcome") == "passed" and c.get("reason"):
            out.append(f"- passed: {c['reason']}")
    out += [f"- {line}" for c in gate.get("checks", []) if (line := _power_line(c))]
    return out


def _metric_table(rows: list[MetricComparison]) -> list[_Block]:
    """The metrics that changed on some query, then the unchanged and the uncomparable ones named."""
    headers = ["section", "metric", "test", "n", "baseline", "candidate", "Δ", "CI", "d_z", "p", "p corr.",
               "family", "verdict", "W/T/L"]  # fmt: skip
    shown = [m for m in rows if m.wins or m.losses or m.significant]
    cells: list[Sequence[str]] = [
        [
            m.section,
            m.metric,
            m.test,
            f"{m.n_paired}" + (f" (+{m.n_excluded} undefined)" if m.n_excluded else ""),
            fmt_num(m.baseline_mean),
            fmt_num(m.candidate_mean),
            fmt_num(m.delta),
            _ci(m.ci_low, m.ci_high),
            fmt_num(m.d_z),
            _p_value(m.p_value),
            _p_value(m.p_adjusted),
            m.family if m.in_family else "–",
            _verdict_cell(m.verdict, m.judges_differ),
            f"{m.wins}/{m.ties}/{m.losses}",
        ]
        for m in shown
    ]
    out = [_table(headers, cells) if cells else _p("No metric changed on any query.")]
    unchanged = [f"{m.section} {m.metric}" for m in rows if m.n_paired and m not in shown]
    uncomparable = [f"{m.section} {m.metric}" for m in rows if not m.n_paired]
    if unchanged:
        out.append(_p(f"Identical on every paired query: {', '.join(unchanged)}"))
    if uncomparable:
        out.append(_p(f"Not comparable (no query defined in both runs): {', '.join(uncomparable)}"))
    corrections = sorted({f"{m.family}: {m.correction}" for m in shown if m.in_family})
    if corrections:
        out.append(_p("Corrections: " + "; ".join(corrections)))
    by: dict[tuple[str | None, ...], list[str]] = {}
    for m in rows:
        if m.judges_differ and m.judges is not None and m.metric not in by.setdefault(tuple(m.judges), []):
            by[tuple(m.judges)].append(m.metric)
    out += [
        _p(f"† {', '.join(metrics)}: {judges_note(judges)} (compare --anchor OLD NEW tells them apart)")
        for judges, metrics in by.items()
    ]
    return out


def _ranking(r: MeasureRanking, pairs: list[PairComparison], files: bool) -> list[_Block]:
    """One metric's ranking with its letters, the win/tie/loss matrix and every pair's effect size."""
    order = [s.system for s in r.systems]
    wtl = [
        [a, *("–" if a == b else "/".join(map(str, r.wtl.get(a, {}).get(b, []))) or "–" for b in order)] for a in order
    ]
    effects = [
        [
            m.baseline,
            m.candidate,
            str(m.n_paired),
            fmt_num(m.delta),
            _ci(m.ci_low, m.ci_high),
            fmt_num(m.d_z),
            _p_value(m.p_value),
            _p_value(m.p_adjusted),
            _verdict_cell(m.verdict),
        ]
        for m in pairs
    ]
    return [
        _h(f"Ranking by {r.metric}" + ("" if files else f" ({r.section})")),
        _table(
            ["rank", "run", "mean", "group"], [[str(s.rank), s.system, fmt_num(s.mean), s.letters] for s in r.systems]
        ),
        _p("Wins/ties/losses per query, row against column:"),
        _table(["", *order], wtl),
        _table(["A", "B", "n", "Δ (B − A)", "CI", "d_z", "p", "p corr.", "verdict"], effects),
    ]


def _drift(comparison: Comparison) -> list[_Block]:
    """``--anchor``: the judge's shift on the anchor beside each judge metric's system Δ, and the verdict."""
    d = comparison.drift
    if d is None:
        return []
    judges = sorted({f"{c}: {d.judges_old.get(c) or 'unknown'} → {d.judges_new.get(c) or 'unknown'}"
                     for c in d.judges_old.keys() | d.judges_new.keys()
                     if d.judges_old.get(c) or d.judges_new.get(c)})  # fmt: skip
    rows: list[Sequence[str]] = [
        [
            r.candidate,
            r.section,
            r.metric,
            _with_ci(r.system_delta, r.system_low, r.system_high),
            str(r.anchor_n),
            _with_ci(r.anchor_shift, r.anchor_low, r.anchor_high),
            _p_value(r.anchor_p_adjusted),
            _with_ci(r.net_delta, r.net_low, r.net_high),
            f"{fmt_num(r.kappa_old)} / {fmt_num(r.kappa_new)} ({r.labeled})" if d.human_verdicts else "–",
            Strong(r.verdict),
        ]
        for r in d.rows
    ]
    headers = ["candidate", "section", "metric", "system Δ [CI]", "anchor n", "judge shift [CI]", "p corr.",
               "net Δ [CI]", "κ old / new (labels)", "verdict"]  # fmt: skip
    human = f" Human verdicts: {d.human_verdicts}." if d.human_verdicts else ""
    return [
        _h("Judge drift (anchor: the same rows judged by the old and the new judge)"),
        _p(f"Old {d.old}, new {d.new}; judges: {'; '.join(judges) or 'unnamed'}.{human} Rule: {d.rule}."),
        _table(headers, rows) if rows else _p("No judge metric shared by the runs and the anchor."),
    ]


def _with_ci(value: float | None, low: float | None, high: float | None) -> str:
    return fmt_num(value) + (f" [{fmt_num(low)}, {fmt_num(high)}]" if low is not None and high is not None else "")


def _got_worse(rows: list[MetricComparison], max_worse: int) -> list[_Block]:
    items = []
    for m in (m for m in rows if m.got_worse):
        ids = ", ".join(
            f"{g['query_id']} ({fmt_num(g['baseline'])}→{fmt_num(g['candidate'])})" for g in m.got_worse[:max_worse]
        )
        more = f" … +{len(m.got_worse) - max_worse}" if len(m.got_worse) > max_worse else ""
        items.append(f"{m.section} {m.metric}: {ids}{more}")
    return [_p("Got worse:"), _Block("list", items=items)] if items else []


def _query_changes(comparison: Comparison, cand: str) -> list[_Block]:
    """Queries in one run only, changed kinds and coverage drops of one candidate."""
    out: list[str] = []
    for q in comparison.queries:
        if q.candidate != cand:
            continue
        if q.only_in_baseline:
            out.append(f"Only in {comparison.baseline}: {', '.join(q.only_in_baseline)}")
        if q.only_in_candidate:
            out.append(f"Only in {cand}: {', '.join(q.only_in_candidate)}")
        if q.kind_changed:
            out.append(f"Kind changed: {', '.join(q.kind_changed)}")
    out += [
        f"Coverage of {c.metric} dropped: {fmt_num(c.baseline)} → {fmt_num(c.candidate_coverage)}"
        for c in comparison.coverage
        if c.candidate == cand and c.drop > 0
    ]
    return [_p(line) for line in out]


def _document(comparison: Comparison, max_worse: int = 10) -> list[_Block]:
    """The comparison, answer first: the verdict sentences, the method, the sweep, the gate, then per candidate (or
    per metric with all pairs) the tables."""
    out = [_Block("h", "foundry-bridge compare", 2), *(_p(Strong(v)) for v in verdict_lines(comparison))]
    out += [_p(_method(comparison)), *_sweep(comparison)]
    gate = gate_lines(comparison)
    if gate:
        out += [_Block("gate", gate[0]), _Block("list", items=[line[2:] for line in gate[1:]])]
    if comparison.warnings:
        out.append(_Block("warn", items=comparison.warnings))
    ap = comparison.all_pairs
    if ap is not None:
        out.append(_p(f"All pairs of runs tested; {ap.letters}."))
        for r in ap.rankings:
            pairs = [m for m in ap.pairs if m.metric == r.metric and m.section == r.section]
            out += _ranking(r, pairs, comparison.qrels is not None)
    for cand in comparison.candidates:
        if ap is None:
            rows = [m for m in comparison.metrics if m.candidate == cand]
            out += [_h(f"{cand} vs {comparison.baseline}"), *_metric_table(rows), *_got_worse(rows, max_worse)]
        out += _query_changes(comparison, cand)
    out += _drift(comparison)
    if comparison.foundry_comparison is not None:
        out.append(_Block("md", render_foundry_markdown(comparison.foundry_comparison)))
    return out


# -- the spellings ----------------------------------------------------------------------------------------------------


_MD = {c: "\\" + c for c in "\\`*_~"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _md(text: str, *, starts_line: bool = False) -> str:
    """Text made inert in a Markdown line: emphasis, code, pipes, HTML and link syntax escaped (a bracket or a
    parenthesis alone is shown as it is)."""
    out = "".join(_MD.get(c, c) for c in " ".join(str(text).split())).replace("](", "]\\(")
    return "\\" + out if starts_line and out[:1] in ("#", "+", "-", ">", "!", "[") else out


def _md_cell(text: str) -> str:
    cell = _md(text).replace("|", "\\|")
    return f"**{cell}**" if isinstance(text, Strong) else cell


def render_comparison_markdown(comparison: Comparison, *, max_worse: int = 10) -> str:
    """The document as GitHub-flavoured Markdown (every text from data escaped)."""
    out: list[str] = []
    for b in _document(comparison, max_worse):
        if b.kind == "h":
            out += ["#" * b.level + " " + _md(b.text), ""]
        elif b.kind == "p":
            out += [f"**{_md(b.text)}**" if isinstance(b.text, Strong) else _md(b.text, starts_line=True), ""]
        elif b.kind == "gate":
            head, _, rest = b.text.partition(" — ")
            out += [f"**{_md(head)}**" + (f" — {_md(rest)}" if rest else ""), ""]
        elif b.kind == "table":
            out.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            out.append("|---" * len(b.headers) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        elif b.kind == "list":
            out += [f"- {_md(i)}" for i in b.items] + ([""] if b.items else [])
        elif b.kind == "warn":
            out += [f"> ⚠️ {_md(i)}" for i in b.items] + [""]
        else:
            out += [b.text, ""]
    return printable(_squeeze("\n".join(out)))


def render_comparison_text(comparison: Comparison, *, quiet: bool = False, max_worse: int = 10) -> str:
    """The document as plain text for a terminal (aligned columns, nothing escaped); ``quiet``: the verdict and gate
    lines only."""
    if quiet:
        return printable("\n".join([*verdict_lines(comparison), *gate_lines(comparison)]) + "\n")
    return blocks_text(_document(comparison, max_worse))


def _html_text(text: str) -> str:
    return f"<strong>{escape(text)}</strong>" if isinstance(text, Strong) else escape(text)


def _html_blocks(blocks: list[_Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if b.kind == "h":
            out.append(f"<h{b.level}>{escape(b.text)}</h{b.level}>")
        elif b.kind == "p":
            out.append(f"<p>{_html_text(b.text)}</p>")
        elif b.kind == "gate":
            head, _, rest = b.text.partition(" — ")
            out.append(f"<p><strong>{escape(head)}</strong>" + (f" — {escape(rest)}" if rest else "") + "</p>")
        elif b.kind == "table":
            head = "".join(f"<th>{escape(h)}</th>" for h in b.headers)
            body = "".join("<tr>" + "".join(f"<td>{_html_text(c)}</td>" for c in row) + "</tr>" for row in b.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif b.kind in ("list", "warn"):
            cls = ' class="warn"' if b.kind == "warn" else ""
            if b.items:
                out.append(f"<ul{cls}>" + "".join(f"<li>{escape(i)}</li>" for i in b.items) + "</ul>")
        else:
            out.append(f"<pre>{escape(b.text)}</pre>")
    return "\n".join(out)


# -- the deltas as a picture ---------------------------------------------------------------------------------------
_VERDICT_FILL = {"better": "#2e7d32", "worse": "#c62828"}


def _scale_group(m: MetricComparison) -> str:
    """Rows drawn on one scale: proportions and other 0–1 metrics together, a judge's 1–5 scores together, any other
    metric on its own."""
    means = [abs(v) for v in (m.baseline_mean, m.candidate_mean) if v is not None]
    if m.kind == "boolean" or (means and max(means) <= 1):
        return "0–1 metrics"
    if m.kind == "ordinal":
        return "1–5 scores"
    return m.metric


_MIN_SPAN = {"0–1 metrics": 0.05, "1–5 scores": 0.2}  # the least half-width drawn: 5 % of the scale's width


def _spans(rows: Sequence[MetricComparison]) -> dict[str, float]:
    """Per scale group (``_scale_group``), the half-width of its axis: the farthest any of its rows' deltas or
    interval ends reaches from 0, and at least a sane minimum, so a group whose deltas are all 0 (or tiny) is drawn
    on a readable scale, never ±0: 5 % of the scale for 0–1 metrics and 1–5 scores (±0.05, ±0.2), else 5 % of the
    group's largest |mean| (1 when every mean is 0)."""
    reach: dict[str, list[float]] = {}
    means: dict[str, list[float]] = {}
    for m in rows:
        group = _scale_group(m)
        reach.setdefault(group, []).extend(abs(v) for v in (m.delta, m.ci_low, m.ci_high) if v is not None)
        means.setdefault(group, []).extend(abs(v) for v in (m.baseline_mean, m.candidate_mean) if v is not None)
    spans = {}
    for group, values in reach.items():
        least = _MIN_SPAN.get(group) or 0.05 * max(means[group], default=0.0) or 1.0
        spans[group] = max(least, *values)
    return spans


def deltas_svg(comparison: Comparison, *, section: str = "positive", width: int = 760) -> str:
    """The shown metrics' deltas on ``section``'s queries as an inline SVG interval plot: a row per (candidate,
    metric), the mean delta as a dot and its confidence interval as a bar, around a line at 0, each row on its
    metric group's scale (``_scale_group``; the scale's end is printed at the row's right); green when the verdict
    is better, red when worse, grey otherwise. Rows without a delta are left out."""
    rows = [m for m in comparison.metrics if m.section == section and m.delta is not None]
    if not rows:
        return ""
    spans = _spans(rows)
    label_w, scale_w, row_h, top = 260, 60, 22, 20
    plot_w = width - label_w - scale_w - 20
    height = top + row_h * len(rows) + 6
    zero = label_w + plot_w / 2
    parts = [
        f'<svg class="deltas" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="delta vs baseline with {comparison.confidence:.0%} intervals, {section} queries">',
        f'<line x1="{zero:.1f}" y1="{top - 6}" x2="{zero:.1f}" y2="{height}" stroke="#999"/>',
        f'<text x="{zero:.1f}" y="12" font-size="10" fill="#666" text-anchor="middle">0</text>',
    ]
    for i, m in enumerate(rows):
        group = _scale_group(m)
        span = spans[group]

        def x(v: float, span: float = span) -> float:
            return zero + plot_w / 2 * v / span

        y = top + row_h * i + row_h / 2
        fill = _VERDICT_FILL.get(m.verdict, "#757575")
        name = f"{m.candidate}: {m.metric}" if len(comparison.candidates) > 1 else m.metric
        title = f"{name}: Δ {fmt_num(m.delta)} [{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}] ({m.verdict}; {group})"
        parts.append(f'<g><title>{escape(title)}</title><text x="0" y="{y + 4:.1f}" font-size="12">')
        parts.append(f"{escape(name)}</text>")
        if m.ci_low is not None and m.ci_high is not None:
            parts.append(
                f'<line x1="{x(m.ci_low):.1f}" y1="{y:.1f}" x2="{x(m.ci_high):.1f}" y2="{y:.1f}" stroke="{fill}" '
                'stroke-width="3"/>'
            )
        parts.append(f'<circle cx="{x(m.delta or 0.0):.1f}" cy="{y:.1f}" r="5" fill="{fill}"/>')
        scale = f'<text x="{width - 4}" y="{y + 4:.1f}" font-size="10" fill="#666" text-anchor="end">'
        parts.append(f"{scale}±{fmt_num(span)}</text></g>")
    parts.append("</svg>")
    return "".join(parts)


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as one self-contained page with no script (its CSP allows none): the verdict first, the
    deltas drawn with their intervals (``deltas_svg``, a scale per metric group), then the document's tables and the
    queries that changed most, each run side by side (``query_view_html``)."""
    blocks = _document(comparison)
    pictures = []
    for section in ("positive", "negative"):
        svg = deltas_svg(comparison, section=section)
        if svg:
            pictures.append(f"<h2>Δ vs baseline, {section} queries ({comparison.confidence:.0%} intervals)</h2>{svg}")
    answer = 1 + len(comparison.candidates)  # the title and the verdict sentences
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    return printable(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>foundry-bridge compare</title>'
        "<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1400px;margin:0 auto;padding:12px 20px}"
        "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
        "ul.warn{color:#8a6d00}.side{display:grid;grid-template-columns:1fr 1fr;gap:16px}"
        ".run .text{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:4px 6px;max-height:16em;"
        "overflow:auto}details.query{border-top:1px solid #ddd;padding:6px 0}h4,h5{margin:6px 0 2px}</style>"
        "</head><body>\n"
        + _html_blocks(blocks[:answer])
        + "\n"
        + "\n".join(pictures)
        + "\n"
        + _html_blocks(blocks[answer:])
        + "\n"
        + query_view_html(comparison)
        + "\n</body></html>\n"
    )

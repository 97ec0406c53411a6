"""Renderers of a ``Comparison``: JSON and Markdown (a one-screen sweep table first, details after)."""

from __future__ import annotations

from ._compare import Comparison, MetricComparison
from ._family import render_family_markdown
from ._format import fmt_num, md_escape
from ._foundry import render_foundry_markdown
from ._model import STAGES

__all__ = ["render_comparison_json", "render_comparison_markdown"]


def render_comparison_json(comparison: Comparison) -> str:
    """The comparison model as indented JSON (``foundry_comparison`` only when asked for: ``--foundry``)."""
    unasked = {"foundry_comparison"} if comparison.foundry_comparison is None else None
    return comparison.model_dump_json(indent=2, exclude=unasked) + "\n"


def _headline(comparison: Comparison, limit: int = 10) -> list[str]:
    return comparison.headline[:limit]


def _mark(mc: MetricComparison | None) -> str:
    if mc is None or mc.delta is None or mc.delta == 0:
        return ""
    sign = "+" if mc.delta > 0 else ""
    star = {"better": " ▲", "worse": " ▼", "changed": " *"}.get(mc.verdict, "")
    return f" ({sign}{fmt_num(mc.delta)}{star})"


def _sweep(comparison: Comparison) -> list[str]:
    """The title, the method line and the sweep table: runs × headline metrics, positive queries."""
    by = {(m.candidate, m.section, m.metric): m for m in comparison.metrics}
    heads = _headline(comparison)
    out = [
        "## foundry-bridge compare",
        "",
        f"Baseline `{md_escape(comparison.baseline)}`; {comparison.test}, {comparison.n_resamples} resamples "
        f"(exact when fewer assignments exist), seed {comparison.seed}; {comparison.confidence:.0%} CI: "
        f"{comparison.ci}; {_decision(comparison)} ▲ better, ▼ worse (significant).",
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


def _gate_and_warnings(comparison: Comparison) -> list[str]:
    """One gate line (the decision and the false-alarm rate across gates), its reasons and skipped checks, then
    the warnings."""
    out: list[str] = []
    gate = comparison.gate
    if gate.get("checked"):
        status = "FAILED" if gate.get("failed") else "passed"
        statement = gate.get("false_alarm")
        out.append(f"**Gate: {status}**" + (f" — {md_escape(statement)}" if statement else ""))
        out.extend(f"- {md_escape(r)}" for r in gate.get("reasons", []))
        out.extend(
            f"- skipped: {md_escape(c['reason'])}" for c in gate.get("checks", []) if c.get("outcome") == "skipped"
        )
        out.append("")
    out.extend(f"> ⚠️ {md_escape(w)}" for w in comparison.warnings)
    if comparison.warnings:
        out.append("")
    return out


def _decision(comparison: Comparison) -> str:
    """The method line's decision rule: which p, corrected how, decides (the verdicts; the gate says its own)."""
    fewer = f"fewer than {comparison.min_paired} paired queries: no decision."
    if comparison.correction == "none":
        return f"significant ⇔ p < {comparison.alpha} (uncorrected); {fewer}"
    name = {"holm": "Holm", "bh": "Benjamini–Hochberg"}[comparison.correction]
    return (
        f"significant ⇔ {name}-corrected p < {comparison.alpha} over the {comparison.exploratory_tests} tests of "
        f"every metric the runs share (whichever are shown; the gate decides on its own); {fewer}"
    )


def _metric_table(rows: list[MetricComparison]) -> list[str]:
    """The metrics that changed on some query (with n, means, Δ, CI, p, corrected p, verdict), then the unchanged
    ones."""
    out = ["| section | metric | n | baseline | candidate | Δ | CI | p | p corr. | verdict | W/T/L |"]
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    shown = [m for m in rows if m.wins or m.losses or m.significant]
    unchanged = [f"{m.section} {m.metric}" for m in rows if m.n_paired and m not in shown]
    uncomparable = [f"{m.section} {m.metric}" for m in rows if not m.n_paired]
    for m in shown:
        ci = f"[{fmt_num(m.ci_low)}, {fmt_num(m.ci_high)}]" if m.ci_low is not None else "–"
        p = f"{m.p_value:.4g}" if m.p_value is not None else "–"
        p_adj = f"{m.p_adjusted:.4g}" if m.p_adjusted is not None else "–"
        n = f"{m.n_paired}" + (f" (+{m.n_excluded} undefined)" if m.n_excluded else "")
        verdict = f"**{m.verdict}**" if m.verdict in ("better", "worse") else m.verdict
        out.append(
            f"| {m.section} | {md_escape(m.metric)} | {n} | {fmt_num(m.baseline_mean)} | "
            f"{fmt_num(m.candidate_mean)} | {fmt_num(m.delta)} | {ci} | {p} | {p_adj} | {verdict} | "
            f"{m.wins}/{m.ties}/{m.losses} |"
        )
    if not shown:
        out.append("| – | no metric changed on any query | | | | | | | | | |")
    out.append("")
    if unchanged:
        out.append(f"Identical on every paired query: {md_escape(', '.join(unchanged))}")
    if uncomparable:
        out.append(f"Not comparable (no query defined in both runs): {md_escape(', '.join(uncomparable))}")
    out.append("")
    return out


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
    out = [*_sweep(comparison), *_gate_and_warnings(comparison)]
    for cand in comparison.candidates:
        out += [f"### {md_escape(cand)} vs {md_escape(comparison.baseline)}", ""]
        rows = [m for m in comparison.metrics if m.candidate == cand]
        out += [*_metric_table(rows), *_got_worse(rows, max_worse), *_query_changes(comparison, cand)]
    if comparison.judge_tests is not None and comparison.judge_tests.rows:
        out += [
            "### Judge metrics by their kind's test (positive queries)",
            "",
            render_family_markdown(comparison.judge_tests),
        ]
    if comparison.foundry_comparison is not None:
        out.append(render_foundry_markdown(comparison.foundry_comparison))
    return "\n".join(out).rstrip() + "\n"

"""Markdown renderer: fits in a pull-request comment — the verdict first (where queries fail, as a compact bar per
stage, each stage's worst queries a link away; then the judge-trust headline), the tables after."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from .._text import printable
from ..catalog import CATALOG
from ..metrics.measures import measure_for_key
from ._aggregate import summary_infos
from ._drill import drill_markdown, md_anchor, stage_links, stand_in
from ._format import fmt_num, fmt_pct, md_escape, md_table
from ._model import STAGES, MetricInfo, Provenance, QueryRow, Report, Section
from ._trust import render_trust_markdown, trust_headline
from ._vs_human import render_vs_human_markdown

__all__ = [
    "STAGE_HINT",
    "bar_counts",
    "headline",
    "negative_rows",
    "per_query_note",
    "render_markdown",
    "stage_rows",
    "stand_in",
    "trust_line",
    "worst_rows",
]

PARTIAL_LABEL = "search (partial)"  # the partial search miss (_stages.missed_top_grade), beside the stages
PARTIAL_HINT = "fix the ranking: the highest-graded passage was missed (also counted in its stage above)"


def stage_basis(report: Report) -> str:
    """What the stage table rests on, stated beside it: the cutoff, the relevance threshold and the label range."""
    st, p = report.stages, report.params
    k = st.stage_k if st.stage_k is not None else p.stage_k
    t = st.relevance_threshold if st.relevance_threshold is not None else p.relevance_threshold
    return (
        f"Stages at k = {k}; relevant ⇔ label ≥ {t} (labels {p.label_min}–{p.label_max}): a query counts as found "
        f"when a document labelled {t} or more is in its top {k}; {PARTIAL_LABEL}: found, but not its "
        "highest-labelled document."
    )


STAGE_HINT = {
    "search": "fix the index / retriever",
    "assembly": "fix the context builder",
    "generation": "fix the prompt / model",
    "ok": "",
    "unknown": "a fact needed to decide is missing",
}


STAND_IN_LABEL = "stand-in judge"
STAND_IN_HINT = "not a verdict: the emulator's lexical stand-in passed or failed these answers"
STAND_IN_WHY = (
    "On the emulator the answer judges are a lexical stand-in, not a model: a stage that rests on their pass or "
    "fail (ok, or generation without an abstention) says nothing about the answer, so those queries are counted "
    "apart and left out of the stage bar."
)


def bar_counts(report: Report) -> dict[str, int]:
    """The queries per stage in the stage bar: on the emulator without those the stand-in judge decided."""
    st, apart = report.stages, report.stages.judged if stand_in(report) else {}
    return {s: st.counts.get(s, 0) - apart.get(s, 0) for s in STAGES}


def stage_rows(report: Report) -> list[tuple[str, str, int, list[str], str]]:
    """The verdict's rows (shared by the renderers): (stage, label, queries, their first ids, what to fix) per
    stage, on the emulator the stand-in judge's queries apart (``stand_in``), then the partial search miss
    (positive queries also counted in their own stage above)."""
    st, counts = report.stages, bar_counts(report)
    apart = st.judged_queries if stand_in(report) else {}
    left = {s: set(apart.get(s, ())) for s in STAGES}
    rows: list[tuple[str, str, int, list[str], str]] = [
        (s, s, counts[s], [q for q in st.queries.get(s, []) if q not in left[s]], STAGE_HINT[s]) for s in STAGES
    ]
    if apart:
        judged = [q for s in STAGES for q in apart.get(s, [])]
        rows.append(("unknown", STAND_IN_LABEL, sum(st.judged.values()), judged, STAND_IN_HINT))
    return [*rows, ("search", PARTIAL_LABEL, st.search_partial, st.search_partial_queries, PARTIAL_HINT)]


def headline(report: Report) -> list[tuple[str, str]]:
    """The numbers first (shared by the renderers), as (value, what): MRR and recall at the stage k and each
    answer judge's mean score over the positive queries, then how many negative queries were answered anyway."""
    k, pos = report.params.stage_k, report.positive.metrics
    cells = [(f"MRR@{k}", pos.get(f"rr@{k}")), (f"recall@{k}", pos.get(f"recall@{k}"))]
    judges = [m for m in report.metrics if m.source == "foundry" and m.primary and m.evaluator in CATALOG]
    judge = " (stand-in judge)" if report.provenance.backend == "mock" else ""  # the emulator's: not a model's
    cells += [(f"{m.key} mean{judge}", pos.get(m.key)) for m in judges if CATALOG[m.evaluator or ""].needs_deployment]
    out = [(fmt_num(a.mean), name) for name, a in cells if a and a.scored]
    neg = report.negative_queries
    if neg.queries:
        answered, total = neg.counts.get("answered", len(neg.answered)), neg.counts.get("queries", len(neg.queries))
        out.append((f"{answered}/{total}", "negative queries answered anyway"))
    return out


def trust_line(report: Report) -> str | None:
    """The judge-trust headline under the verdict (None: the report has no judge to trust)."""
    return trust_headline(report.trust) if report.trust and report.trust.shown else None


def worst_rows(report: Report) -> list[QueryRow]:
    """The worst queries of each stage that is not ok (``stages.worst``), stage by stage, the worst first."""
    by_id = {q.query_id: q for q in report.queries}
    return [by_id[q] for s in STAGES if s != "ok" for q in report.stages.worst.get(s, []) if q in by_id]


def per_query_note(report: Report, code: Callable[[str], str] = str) -> str:
    """Where every query's row is (the path through ``code``: Markdown shows it as code)."""
    pq = report.per_query
    if pq.path:
        kind = "Parquet" if pq.format == "parquet" else "JSON lines"
        return f"every query ({pq.rows}): {code(pq.path)} ({kind}, one row per query)"
    return f"every query ({pq.rows}): not written ({code('foundry-bridge report --out FILE')} writes them beside FILE)"


def section_rows(
    report: Report, section: Section, infos: list[MetricInfo] | None = None
) -> tuple[list[list[str]], list[bool], list[str]]:
    """One section's metric table as plain cells (shared by the renderers): the rows (metric key, coverage, errored,
    missing / undefined, mean, pass rate, threshold), per row whether a Foundry metric's coverage is short, and the
    local metrics undefined for every query of the section (left out of the rows)."""
    rows: list[list[str]] = []
    short: list[bool] = []
    hidden: list[str] = []
    for info in summary_infos(report.metrics) if infos is None else infos:
        agg = section.metrics.get(info.key)
        if agg is None:
            continue
        if info.source == "local" and agg.scored == 0:
            hidden.append(info.key)  # e.g. rank metrics on negative queries: undefined by definition (no label)
            continue
        if info.source == "local":
            missing, errored, pass_rate = str(agg.undefined), "–", "–"
        else:
            missing, errored = str(agg.missing), str(agg.errored)
            pass_rate = fmt_pct(agg.passed, agg.passed + agg.failed)
        coverage = f"{agg.scored}/{agg.queries}"
        rows.append([info.key, coverage, errored, missing, fmt_num(agg.mean), pass_rate, fmt_num(info.threshold)])
        short.append(info.source == "foundry" and bool(agg.queries) and agg.scored < agg.queries)
    return rows, short, hidden


def mean_note(key: str) -> str:
    """What a local metric's mean is called, beside its key (``rr@3`` → `` (mean = MRR)``); else nothing."""
    measure = measure_for_key(key)
    return f" (mean = {measure.spec.mean_label})" if measure is not None and measure.spec.mean_label else ""


SECTION_HEADERS = ("metric", "coverage", "errored", "missing / undefined", "mean", "pass rate", "threshold")


def _section_table(report: Report, section: Section, infos: list[MetricInfo] | None = None) -> list[str]:
    rows, short, hidden = section_rows(report, section, infos)
    lines = md_table(
        SECTION_HEADERS,
        (
            [md_escape(key) + mean_note(key), f"**{coverage}**" if bold else coverage, *rest]
            for (key, coverage, *rest), bold in zip(rows, short, strict=True)
        ),
    )
    if hidden:
        lines.append("")
        lines.append(
            f"_Undefined for every {section.kind} query (no relevant label): {', '.join(map(md_escape, hidden))}_"
        )
    return lines


def negative_rows(report: Report) -> list[dict[str, object]]:
    """Per negative query: the local report's facts beside the primary Foundry scores (shared by the renderers)."""
    local = {str(e.get("query_id")): e for e in report.negative_queries.local.get("per_query", []) or []}
    rows = []
    for q in report.queries:
        if q.kind != "negative":
            continue
        e = local.get(q.query_id, {})
        rows.append(
            {
                "query_id": q.query_id,
                "rule": e.get("rule", q.kind_source),
                "abstained": q.abstained,
                "top_score": e.get("top_score"),
                "surfaced": e.get("surfaced"),
                "stage": q.stage,
                "scores": {m.key: q.foundry[m.key] for m in report.metrics if m.source == "foundry" and m.primary},
            }
        )
    return rows


def negative_table(
    report: Report, limit: int, esc: Callable[[str], str] = md_escape, no: str = "**no**"
) -> tuple[list[str], list[list[str]]]:
    """The negative queries' table (shared by the text renderers): headers and the first ``limit`` rows, dataset
    text through ``esc``, a query that did not abstain shown as ``no``."""
    keys = [m.key for m in report.metrics if m.source == "foundry" and m.primary]
    head = ["query", "kind rule", "abstained", "top score", "surfaced", *keys, "stage"]
    yes_no = {True: "yes", False: no, None: "–"}
    rows = []
    for r in negative_rows(report)[:limit]:
        cells = [
            esc(str(r["query_id"])),
            esc(str(r["rule"])),
            yes_no[r["abstained"]],  # type: ignore[index]
            fmt_num(r["top_score"]),  # type: ignore[arg-type]
            fmt_num(r["surfaced"]),  # type: ignore[arg-type]
        ]
        for key in keys:
            fs = r["scores"][key]  # type: ignore[index]
            if fs.status != "scored":
                cells.append(fs.status)
            else:
                cells.append(fmt_num(fs.score) + {True: " ✓", False: " ✗", None: ""}[fs.passed])
        cells.append(str(r["stage"]))
        rows.append(cells)
    return [esc(h) for h in head], rows


def _negative_table(report: Report, limit: int) -> list[str]:
    head, rows = negative_table(report, limit)
    lines = md_table(head, rows)
    if report.negative.queries > len(rows):
        lines.append(f"\n_… and {report.negative.queries - len(rows)} more negative queries_")
    return lines


def emulator_note(prov: Provenance) -> str:
    """Beside the backend: an emulator run has no portal page (its made-up link is never stored)."""
    return " (emulator: no Foundry portal page)" if prov.backend == "mock" else ""


def _code(text: object) -> str:
    return "`" + str(text).replace("`", "'") + "`"


def _report_link(url: str) -> str:
    """A Markdown link for an http(s) URL only; anything else (javascript:, data:, relative, odd) as code."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc or _has_unsafe(url):
        return f"Foundry report {_code(url)}"
    return f"[Foundry report]({url.replace('(', '%28').replace(')', '%29')})"


def _has_unsafe(url: str) -> bool:
    return any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c in "<>`" for c in url)


def failed_metrics(report: Report, q: QueryRow, esc: Callable[[str], str] = md_escape) -> str:
    """A query's primary Foundry metrics that failed, errored or are missing, keys through ``esc``."""
    primary = {m.key for m in report.metrics if m.source == "foundry" and m.primary}
    bits = []
    for key, fs in q.foundry.items():
        if key not in primary:
            continue
        if fs.status == "errored":
            bits.append(f"{esc(key)}: errored")
        elif fs.status == "missing":
            bits.append(f"{esc(key)}: missing")
        elif fs.passed is False:
            bits.append(f"{esc(key)} {fmt_num(fs.score)} ✗")
    return "; ".join(bits)


def meta_items(report: Report, code: Callable[[str], str], *, queries: bool = True, sha: bool = True) -> list[str]:
    """The parameters line's items (shared by the renderers), values that are names through ``code``: backend,
    queries (``queries``), k, relevance threshold, label range, NaN policy, dataset hash (``sha``), run ids."""
    p, prov = report.params, report.provenance
    meta = [f"backend {code(prov.backend or 'unknown')}{emulator_note(prov)}"]
    if queries:
        n = report.coverage.get("queries", len(report.queries))
        meta.append(f"queries {n} ({report.positive.queries} positive, {report.negative.queries} negative)")
    meta += [
        f"k = {', '.join(map(str, p.k))} (stages at k = {p.stage_k})",
        f"relevant ⇔ label ≥ {p.relevance_threshold}",
        f"labels {p.label_min}–{p.label_max}",
        f"NaN policy {code(p.nan_policy)}",
    ]
    if sha and prov.dataset_sha256:
        meta.append(f"dataset sha256 {code(prov.dataset_sha256[:12])}")
    if prov.run_ids:
        meta.append("run " + ", ".join(code(r) for r in prov.run_ids))
    return meta


def _header(report: Report) -> list[str]:
    """Title, the parameters line, Foundry coverage and the warnings."""
    prov, meta = report.provenance, meta_items(report, _code)
    if prov.report_url:
        meta.append(_report_link(prov.report_url))
    cov = report.coverage
    out = ["## foundry-bridge report", "", " · ".join(meta), ""]
    out.append(
        f"**Coverage: {cov.get('scores_scored', 0)}/{cov.get('scores_expected', 0)} Foundry scores** "
        f"({cov.get('scores_errored', 0)} errored, {cov.get('scores_missing', 0)} missing)"
    )
    out.append("")
    out.extend(f"> ⚠️ {md_escape(w)}" for w in report.warnings)
    if report.warnings:
        out.append("")
    return out


def _sections(report: Report) -> list[str]:
    out: list[str] = []
    shown = {m.key for m in summary_infos(report.metrics)}
    others = [m for m in report.metrics if m.key not in shown]
    for section in (report.positive, report.negative):
        out.append(f"### {section.kind.capitalize()} queries ({section.queries})")
        out.append("")
        out.extend(_section_table(report, section) if section.queries else ["_none_"])
        out.append("")
        if section.queries and others:
            out += ["<details><summary>Every other metric</summary>", ""]
            out += [*_section_table(report, section, others), "", "</details>", ""]
    return out


_BARS = " ▁▂▃▄▅▆▇█"


def _spark(counts: list[int]) -> str:
    """Counts as a bar per bin (share of the section, scaled to its tallest bin)."""
    top = max(counts, default=0)
    if not top:
        return "–"
    return "".join(_BARS[round(8 * c / top)] if c else "·" for c in counts)


def _distributions(report: Report) -> list[str]:
    if not report.distributions:
        return []
    out = ["### Distributions", "", "| metric | bins | positive | negative |", "|---|---|---|---|"]
    for d in report.distributions:
        span = f"{fmt_num(d.edges[0] + 0.5 if d.integer else d.edges[0], 2)}–"
        span += f"{fmt_num(d.edges[-1] - 0.5 if d.integer else d.edges[-1], 2)} ({len(d.edges) - 1})"
        out.append(f"| {md_escape(d.key)} | {span} | `{_spark(d.positive)}` | `{_spark(d.negative)}` |")
    out.append("")
    return out


def _bar(count: int, total: int, width: int = 20) -> str:
    """A compact bar: ``count`` of ``total`` as filled cells out of ``width`` (at least one for a non-zero count)."""
    filled = 0 if not total or not count else max(1, round(width * count / total))
    return "█" * filled + "░" * (width - filled)


def _worst_heading(report: Report) -> str:
    return f"Queries to look at ({sum(n for s, n in report.stages.counts.items() if s != 'ok')})"


def _stages(report: Report) -> list[str]:
    """The verdict: how many queries fail at search, assembly and generation, as a bar each, what to fix, and a
    link to the worst queries; then the judge-trust headline."""
    total = sum(report.stages.counts.values())
    worst = md_anchor(_worst_heading(report))
    drill = stage_links(report, markdown=True)  # each stage's worst query, drilled into
    out = ["### Where queries fail", ""]
    if numbers := headline(report):
        out += [" · ".join(f"**{value}** {md_escape(what)}" for value, what in numbers), ""]
    out += ["| stage | queries | share | what to fix | which |", "|---|---|---|---|---|"]
    for stage, label, count, ids, hint in stage_rows(report):
        shown = ", ".join(md_escape(i) for i in ids[:8]) + (" …" if count > 8 else "")
        to = drill.get(stage, worst)
        link = f" · [worst ↓]({to})" if count and stage not in ("ok", "unknown") and label == stage else ""
        share = f"`{_bar(count, total)}` {fmt_pct(count, total)}"
        out.append(f"| **{label}** | {count} | {share} | {hint} | {shown}{link} |")
    out += ["", f"_{stage_basis(report)}_", ""]
    if stand_in(report):
        out += [f"_{STAND_IN_WHY}_", ""]
    if (line := trust_line(report)) is not None:
        out += [f"**Judge trust:** {md_escape(line)} [Can the judge be trusted? ↓](#can-the-judge-be-trusted)", ""]
    return out


def negative_items(report: Report, esc: Callable[[str], str]) -> list[str]:
    """The negative queries' list (shared by the text renderers): abstained, answered anyway, surfaced evidence,
    label contradictions; ids through ``esc``."""
    neg = report.negative_queries
    items = [
        f"abstained: {len(neg.abstained)}/{len(neg.queries)} ({', '.join(map(esc, neg.abstained))})",
        f"answered anyway: {', '.join(map(esc, neg.answered)) or 'none'}",
        f"surfaced evidence: {', '.join(map(esc, neg.surfaced_evidence)) or 'none'}",
    ]
    if neg.label_contradictions:
        items.append(f"relevant label on a negative query: {', '.join(map(esc, neg.label_contradictions))}")
    return items


def _negatives(report: Report, max_queries: int) -> list[str]:
    neg = report.negative_queries
    if not neg.queries:
        return []
    out = ["### Negative queries", "", *(f"- {item}" for item in negative_items(report, md_escape))]
    raw = neg.local.get("aggregate")
    agg: dict[str, object] = raw if isinstance(raw, dict) else {}
    auc = agg.get("top_score_auc")
    if isinstance(auc, int | float):
        out.append(f"- top-score ROC AUC (positive vs negative): {fmt_num(float(auc))}")
    out.append("")
    out.extend(_negative_table(report, max_queries))
    out.append("")
    return out


def _canaries(report: Report) -> list[str]:
    if not report.canaries:
        return []
    out = ["### Judge canaries", "", *md_table(CANARY_HEADERS, canary_rows(report, md_escape, "**NO**"))]
    if (note := canary_note(report)) is not None:
        out.append(f"\n_{note}_")
    out.append("")
    return out


CANARY_HEADERS = ("query", "canary", "passed by (flagged)", "failed by", "caught")


def canary_rows(report: Report, esc: Callable[[str], str], no: str) -> list[list[str]]:
    """The canaries' table rows (shared by the text renderers): ids through ``esc``, a canary not caught ``no``."""
    caught = {True: "yes", False: no, None: "unknown"}
    rows = []
    for c in report.canaries:
        passed, failed = ", ".join(map(esc, c.passed_by)) or "–", ", ".join(map(esc, c.failed_by)) or "–"
        rows.append([esc(c.query_id), esc(c.canary), passed, failed, caught[c.caught]])
    return rows


def worst_shown(report: Report, limit: int) -> list[QueryRow]:
    """``worst_rows`` with at most ``limit`` queries of each stage."""
    per_stage: dict[str, int] = {}
    shown: list[QueryRow] = []
    for q in worst_rows(report):
        per_stage[q.stage] = per_stage.get(q.stage, 0) + 1
        if per_stage[q.stage] <= limit:
            shown.append(q)
    return shown


HOLE_HEADERS = ("document", "queries", "best rank", "priority")


def hole_rows(report: Report, esc: Callable[[str], str]) -> list[list[str]]:
    """The labelling queue's rows (document through ``esc``, queries, best rank, priority)."""
    return [[esc(h.document_id), str(h.count), str(h.best_rank), fmt_num(h.priority)] for h in report.labelling_queue]


def canary_note(report: Report) -> str | None:
    """The canary counts, when the report lists only some of the canaries."""
    n = report.canary_counts
    if n.get("canaries", 0) <= len(report.canaries):
        return None
    return (
        f"{n['canaries']} canaries: {n['caught']} caught, {n['not_caught']} not caught, {n['no_verdict']} without a "
        f"verdict; the {len(report.canaries)} shown are those not caught first (every row: the per-query file)"
    )


def _worst(report: Report, max_queries: int) -> list[str]:
    """The worst queries of each stage that is not ok (at most ``max_queries`` per stage), then where the rest are."""
    total = sum(n for s, n in report.stages.counts.items() if s != "ok")
    shown = worst_shown(report, max_queries)
    out = [f"### {_worst_heading(report)}", ""]
    if shown:
        out.append(
            f"_The worst {min(max_queries, report.per_query.worst_per_stage)} of each stage: most failed "
            "answer judges, then the lowest scores._"
        )
        out.append("")
        out.append("| query | kind | stage | why | failing scores |")
        out.append("|---|---|---|---|---|")
        for q in shown:
            partial = f" · {PARTIAL_LABEL}" if q.search_partial else ""
            out.append(
                f"| {md_escape(q.query_id)} | {q.kind} | **{q.stage}**{partial} | {md_escape(q.stage_reason, 160)} "
                f"| {failed_metrics(report, q) or '–'} |"
            )
        more = f"… and {total - len(shown)} more; " if total > len(shown) else ""
        out.append(f"\n_{more}{per_query_note(report, _code)}_")
    else:
        out.append(f"_every query is ok_ ({per_query_note(report, _code)})")
    out.append("")
    return out


def _label_next(report: Report, max_holes: int) -> list[str]:
    if not report.labelling_queue:
        return []
    n_docs = report.coverage.get("hole_documents", len(report.labelling_queue))
    rows = hole_rows(report, md_escape)[:max_holes]
    return [f"### Label next ({n_docs} unlabelled retrieved documents)", "", *md_table(HOLE_HEADERS, rows), ""]


def render_markdown(report: Report, *, max_queries: int = 25, max_holes: int = 10) -> str:
    """The report as GitHub-flavoured Markdown (dataset text escaped): header, the verdict (stages, judge trust),
    sections, distributions, negative queries, canaries, trust, the queries to look at, the labelling queue."""
    out = [
        *_header(report),
        *_stages(report),
        *_sections(report),
        *_distributions(report),
        *_negatives(report, max_queries),
        *_canaries(report),
        *([render_trust_markdown(report.trust)] if report.trust and report.trust.shown else []),
        *([render_vs_human_markdown(report.judged_vs_human)] if report.judged_vs_human else []),
        *_worst(report, max_queries),
        *drill_markdown(report),
        *_label_next(report, max_holes),
    ]
    return printable("\n".join(out).rstrip() + "\n")

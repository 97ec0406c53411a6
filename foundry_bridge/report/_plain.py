"""Plain-text renderer for a terminal: the Markdown report's content as aligned columns, nothing escaped, the
verdict first (``_blocks.blocks_text`` spells it, as it spells ``compare``'s). ``quiet``: the headline only."""

from __future__ import annotations

from ._aggregate import summary_infos
from ._blocks import Block, blocks_text, table
from ._drill import MD_TEXT, documents_rows, judge_line
from ._format import fmt_pct
from ._markdown import (
    CANARY_HEADERS,
    HOLE_HEADERS,
    PARTIAL_LABEL,
    SECTION_HEADERS,
    STAND_IN_WHY,
    canary_note,
    canary_rows,
    failed_metrics,
    headline,
    hole_rows,
    mean_note,
    meta_items,
    negative_items,
    negative_table,
    per_query_note,
    section_rows,
    stage_basis,
    stage_rows,
    stand_in,
    trust_line,
    worst_shown,
)
from ._model import Report

__all__ = ["render_text"]


def _cut(text: str | None, limit: int = MD_TEXT) -> str:
    s = " ".join((text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def headline_line(report: Report) -> str:
    """The headline numbers in one line, and the queries per stage."""
    numbers = " · ".join(f"{what} {value}" for value, what in headline(report))
    stages = " · ".join(f"{label} {count}" for _, label, count, _, _ in stage_rows(report) if count)
    return f"{numbers}\nstages: {stages}" if numbers else f"stages: {stages}"


def _header(report: Report) -> list[Block]:
    prov, cov, meta = report.provenance, report.coverage, meta_items(report, str, sha=False)
    if prov.report_url:
        meta.append(f"Foundry report {prov.report_url}")
    out = [
        Block("h", "foundry-bridge report", 2),
        Block("p", " · ".join(meta)),
        Block(
            "p",
            f"Coverage: {cov.get('scores_scored', 0)}/{cov.get('scores_expected', 0)} Foundry scores "
            f"({cov.get('scores_errored', 0)} errored, {cov.get('scores_missing', 0)} missing)",
        ),
    ]
    return out + ([Block("warn", items=report.warnings)] if report.warnings else [])


def _verdict(report: Report) -> list[Block]:
    total = sum(report.stages.counts.values())
    rows = [
        [label, str(count), fmt_pct(count, total), hint, ", ".join(ids[:8]) + (" …" if count > 8 else "")]
        for _, label, count, ids, hint in stage_rows(report)
    ]
    out = [Block("h", "Where queries fail", 3)]
    if numbers := headline(report):
        out.append(Block("p", " · ".join(f"{what} {value}" for value, what in numbers)))
    out += [
        table(["stage", "queries", "share", "what to fix", "which"], rows),
        Block("p", stage_basis(report)),
    ]
    if stand_in(report):
        out.append(Block("p", STAND_IN_WHY))
    if (line := trust_line(report)) is not None:
        out.append(Block("p", f"Judge trust: {line} (the section: --format md or html)"))
    return out


def _sections(report: Report) -> list[Block]:
    out: list[Block] = []
    for section in (report.positive, report.negative):
        out.append(Block("h", f"{section.kind.capitalize()} queries ({section.queries})", 3))
        if not section.queries:
            out.append(Block("p", "none"))
            continue
        rows, _, hidden = section_rows(report, section)
        rows = [[key + mean_note(key), *rest] for key, *rest in rows]
        out.append(table(list(SECTION_HEADERS), rows))
        if hidden:
            out.append(Block("p", f"Undefined for every {section.kind} query (no relevant label): {', '.join(hidden)}"))
    shown = {m.key for m in summary_infos(report.metrics)}
    if any(m.key not in shown for m in report.metrics):
        out.append(Block("p", "Every other metric: --format md or html."))
    return out


def _negatives(report: Report, limit: int) -> list[Block]:
    if not report.negative_queries.queries:
        return []
    head, rows = negative_table(report, limit, str, "no")
    out = [Block("h", "Negative queries", 3), Block("list", items=negative_items(report, str)), table(head, rows)]
    if report.negative.queries > len(rows):
        out.append(Block("p", f"… and {report.negative.queries - len(rows)} more negative queries"))
    return out


def _canaries(report: Report) -> list[Block]:
    if not report.canaries:
        return []
    out = [Block("h", "Judge canaries", 3), table(CANARY_HEADERS, canary_rows(report, str, "NO"))]
    return out + ([Block("p", note)] if (note := canary_note(report)) is not None else [])


def _worst(report: Report, limit: int) -> list[Block]:
    rows = []
    for q in worst_shown(report, limit):
        stage = q.stage + (f" · {PARTIAL_LABEL}" if q.search_partial else "")
        rows.append([q.query_id, q.kind, stage, _cut(q.stage_reason, 100), failed_metrics(report, q, str) or "–"])
    total = sum(n for s, n in report.stages.counts.items() if s != "ok")
    out = [Block("h", f"Queries to look at ({total})", 3)]
    if not rows:
        return [*out, Block("p", f"every query is ok ({per_query_note(report)})")]
    headers = ["query", "kind", "stage", "why", "failing scores"]
    more = f"… and {total - len(rows)} more; " if total > len(rows) else ""
    return [*out, table(headers, rows), Block("p", more + per_query_note(report))]


def _drill(report: Report, limit: int) -> list[Block]:
    if not report.drill:
        return []
    out = [Block("h", "Query drill-down", 3)]
    for q in report.drill[:limit]:
        out += [
            Block("h", f"Query {q.query_id} ({q.stage})", 4),
            Block("p", f"{_cut(q.query, 300)} — {q.stage_reason}"),
        ]
        headers, rows = documents_rows(q.documents)
        out.append(table(headers, rows))
        if q.unretrieved:
            out.append(Block("p", "Labelled, not retrieved: " + ", ".join(f"{d} ({n})" for d, n in q.unretrieved)))
        out.append(Block("p", "Context as sent: " + ("(no context)" if q.context is None else _cut(q.context))))
        for d in q.dropped:
            out.append(Block("p", f"Dropped: {d.document_id} (rank {d.rank}, label {d.label}): {_cut(d.text)}"))
        out.append(Block("p", "Response: " + ("(no response)" if q.response is None else _cut(q.response))))
        out.append(Block("list", items=[judge_line(j, str, "") for j in q.judges] or ["no judge scored this query"]))
    if len(report.drill) > limit:
        out.append(Block("p", f"{len(report.drill) - limit} more in the HTML report."))
    return out


def _label_next(report: Report, limit: int) -> list[Block]:
    if not report.labelling_queue:
        return []
    n_docs = report.coverage.get("hole_documents", len(report.labelling_queue))
    return [
        Block("h", f"Label next ({n_docs} unlabelled retrieved documents)", 3),
        table(HOLE_HEADERS, hole_rows(report, str)[:limit]),
    ]


def render_text(report: Report, *, quiet: bool = False, max_queries: int = 25, max_holes: int = 10) -> str:
    """The report as plain aligned text for a terminal (what the Markdown holds, nothing escaped); ``quiet``: the
    headline numbers and the queries per stage only."""
    if quiet:
        return blocks_text([Block("p", headline_line(report))])
    blocks = [
        *_header(report),
        *_verdict(report),
        *_sections(report),
        *_negatives(report, max_queries),
        *_canaries(report),
        *_worst(report, max_queries),
        *_drill(report, 10),
        *_label_next(report, max_holes),
    ]
    return blocks_text(blocks)

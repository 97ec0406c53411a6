"""HTML renderer: one self-contained file (inline CSS, JS and SVG; no network), every dataset string escaped.

The page loads nothing: a Content-Security-Policy forbids any fetch and runs only the page's own script (listed
by its SHA-256), and all dataset text goes through ``html.escape`` — a response containing ``<script>`` shows as
text. The per-query table sorts on a header click; sort keys live in ``data-v`` attributes, never in script source.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence

from .._text import printable
from ._drill import drill_html, stage_links
from ._format import fmt_num, fmt_pct
from ._markdown import (
    PARTIAL_LABEL,
    STAND_IN_WHY,
    bar_counts,
    canary_note,
    headline,
    meta_items,
    negative_rows,
    per_query_note,
    stage_basis,
    stage_rows,
    stand_in,
    trust_line,
    worst_rows,
)
from ._model import STAGES, Distribution, QueryRow, Report, Section
from ._trust import render_trust_html
from ._vs_human import render_vs_human_html

__all__ = ["render_html", "stage_svg"]

_CSS = """
:root{--pos:#2f6fb0;--neg:#d9822b;--bad:#b3261e;--good:#1e7b34;--muted:#666;--line:#ddd}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222}
header,main{max-width:1400px;margin:0 auto;padding:12px 20px}h1{font-size:20px;margin:8px 0}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted)}.meta code{background:#f4f4f4;padding:0 3px}
.warn{background:#fff4e5;border-left:4px solid var(--neg);padding:6px 10px;margin:4px 0}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}td.few{color:#888}
.short{color:var(--bad);font-weight:600}.fail{color:var(--bad)}.pass{color:var(--good)}.err{color:#7a4b00;
font-style:italic}.grid{display:flex;flex-wrap:wrap;gap:14px}.chart{border:1px solid var(--line);padding:6px}
.chart h3{font-size:13px;margin:0 0 4px}.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
table.sortable th{cursor:pointer;user-select:none}table.sortable th[data-dir=asc]::after{content:" ▲"}
table.sortable th[data-dir=desc]::after{content:" ▼"}td.text{min-width:260px;max-width:420px;white-space:pre-wrap;
word-break:break-word}.stage-search{background:#fde8e6}.stage-assembly{background:#fff1db}
.stage-generation{background:#fbe3f2}.scroll{overflow-x:auto}.stage-ok{background:#e6f4ea}.stage-unknown{background:#eee}
#verdict{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}#verdict h2{flex-basis:100%;margin-top:12px}
#verdict table{margin:0}.trust-line{flex-basis:100%;margin:0}
details.drill{border:1px solid var(--line);padding:4px 10px;margin:8px 0}details.drill h4{margin:8px 0 4px}
div.text{white-space:pre-wrap;word-break:break-word;border:1px solid var(--line);padding:6px;max-height:320px;
overflow:auto}div.dropped{background:#fff1db;border-left:4px solid var(--neg);margin-top:4px}tr.dropped td{
background:#fff1db;font-weight:600}
.headline{display:flex;flex-wrap:wrap;gap:6px 22px;flex-basis:100%;margin:4px 0}.headline b{font-size:20px;
display:block}.headline span{color:var(--muted)}
"""

_JS = """
(function(){
  function keyOf(td){
    var v=td.getAttribute('data-v');if(v===null){v=td.textContent;}
    if(v===''){return null;}var n=Number(v);return isNaN(n)?v.toLowerCase():n;
  }
  function cmp(a,b){
    if(a===null&&b===null){return 0;}if(a===null){return 1;}if(b===null){return -1;}
    if(typeof a===typeof b){return a<b?-1:(a>b?1:0);}return typeof a==='number'?-1:1;
  }
  var tables=document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables,function(t){
    var ths=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.addEventListener('click',function(){
        var asc=th.getAttribute('data-dir')!=='asc';
        Array.prototype.forEach.call(ths,function(h){h.removeAttribute('data-dir');});
        th.setAttribute('data-dir',asc?'asc':'desc');
        var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(r1,r2){
          var a=keyOf(r1.cells[i]),b=keyOf(r2.cells[i]);
          if(a===null||b===null){return cmp(a,b);}return asc?cmp(a,b):cmp(b,a);
        });
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  var search=document.getElementById('query-search');
  if(search){
    var qt=document.getElementById('queries');
    search.addEventListener('input',function(){
      var needle=search.value.toLowerCase();
      Array.prototype.forEach.call(qt.tBodies[0].rows,function(r){
        r.hidden=needle!==''&&r.textContent.toLowerCase().indexOf(needle)<0;
      });
    });
  }
  document.documentElement.setAttribute('data-report-ready','1');
})();
"""


def content_security_policy(script: str) -> str:
    """The page's Content-Security-Policy: nothing may be fetched; the one inline script runs because its SHA-256
    is listed (``'sha256-<base64>'`` of its exact text), so any other script — injected markup, an event-handler
    attribute — is refused even if it got past the escaping."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _svg(d: Distribution, *, width: int = 300, height: int = 140) -> str:
    """The SVG of one distribution (bar height = share of the section's values)."""
    edges, integer, cp, cn = d.edges, d.integer, d.positive, d.negative
    nb = len(edges) - 1
    npos, nneg = sum(cp), sum(cn)
    sp = [c / npos if npos else 0.0 for c in cp]
    sn = [c / nneg if nneg else 0.0 for c in cn]
    top = max([*sp, *sn, 1e-9])
    pad_l, pad_b, pad_t = 28, 22, 6
    plot_w, plot_h = width - pad_l - 4, height - pad_b - pad_t
    bw = plot_w / nb
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{_e(d.key)}">',
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{width - 4}" y2="{pad_t + plot_h}" stroke="#999"/>',
        f'<text x="2" y="{pad_t + 9}" font-size="9" fill="#666">{top:.0%}</text>',
    ]
    for b in range(nb):
        x0 = pad_l + b * bw
        for j, (share, count, color, who) in enumerate(
            ((sp[b], cp[b], "var(--pos)", "positive"), (sn[b], cn[b], "var(--neg)", "negative"))
        ):
            h = plot_h * share / top
            x = x0 + 1 + j * (bw - 2) / 2
            label = f"{who}: {count} in [{fmt_num(edges[b])}, {fmt_num(edges[b + 1])})"
            parts.append(
                f'<rect x="{x:.1f}" y="{pad_t + plot_h - h:.1f}" width="{max((bw - 2) / 2 - 1, 1):.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{_e(label)}</title></rect>'
            )
        if integer:
            tick = fmt_num((edges[b] + edges[b + 1]) / 2)
            parts.append(
                f'<text x="{x0 + bw / 2:.1f}" y="{height - 8}" font-size="10" text-anchor="middle">{tick}</text>'
            )
    if not integer:
        for b in (0, nb // 2, nb):
            x = pad_l + b * bw
            parts.append(
                f'<text x="{x:.1f}" y="{height - 8}" font-size="10" text-anchor="middle">{fmt_num(edges[b], 2)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _section_table(report: Report, section: Section) -> str:
    """The section's summary metrics; each criterion's other (sub-)metrics folded below, with no pass rate (their
    thresholds are not the criterion's decision)."""
    rows: list[str] = []
    folded: list[str] = []
    for info in report.metrics:
        agg = section.metrics.get(info.key)
        if agg is None or (info.source == "local" and agg.scored == 0):
            continue
        short = info.source == "foundry" and agg.queries and agg.scored < agg.queries
        cov = f'<td class="n{" short" if short else ""}">{agg.scored}/{agg.queries}</td>'
        if info.source == "local":
            errored, missing, rate = "–", str(agg.undefined), "–"
        else:
            errored, missing = str(agg.errored), str(agg.missing)
            rate = fmt_pct(agg.passed, agg.passed + agg.failed) if info.primary else "–"
        (rows if info.primary else folded).append(
            f"<tr><td>{_e(info.key)}</td><td>{info.source}</td>{cov}<td class=n>{errored}</td>"
            f"<td class=n>{missing}</td><td class=n>{fmt_num(agg.mean)}</td><td class=n>{fmt_num(agg.median)}</td>"
            f"<td class=n>{_e(rate)}</td><td class=n>{fmt_num(info.threshold)}</td></tr>"
        )
    head = (
        "<tr><th>metric</th><th>source</th><th>coverage</th><th>errored</th><th>missing / undefined</th>"
        "<th>mean</th><th>median</th><th>pass rate</th><th>threshold</th></tr>"
    )
    table = f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
    if not folded:
        return table
    return (
        f"{table}<details><summary>{len(folded)} sub-metrics (no pass rate: not the criterion's decision)</summary>"
        f"<table><thead>{head}</thead><tbody>{''.join(folded)}</tbody></table></details>"
    )


MIN_BINS = 3  # a histogram is drawn when its values fill at least this many bins (else the table says it all)


def _charts(report: Report) -> str:
    out = []
    filled = {d.key: sum(p + n > 0 for p, n in zip(d.positive, d.negative, strict=True)) for d in report.distributions}
    shown = [d for d in report.distributions if filled[d.key] >= MIN_BINS]
    left = [d.key for d in report.distributions if d not in shown]
    for d in shown:
        pa, na = report.positive.metrics.get(d.key), report.negative.metrics.get(d.key)
        foundry = report.metric(d.key).source == "foundry"
        note = []
        for name, agg in (("positive", pa), ("negative", na)):
            if agg is not None and agg.queries:
                extra = f", {agg.errored} errored, {agg.missing} missing" if foundry else ""
                note.append(f"{name}: {agg.scored} scored{extra}")
        out.append(
            f'<div class="chart"><h3>{_e(d.key)}</h3>{_svg(d)}<div class="meta">{_e("; ".join(note))}</div></div>'
        )
    legend = (
        '<div class="legend"><span><i class="sw" style="background:var(--pos)"></i>positive</span>'
        '<span><i class="sw" style="background:var(--neg)"></i>negative</span>'
        "<span class=meta>bar height = share of the section's scored queries</span></div>"
    )
    skipped = f"<p class=meta>Not drawn (values in fewer than {MIN_BINS} bins): {_e(', '.join(left))}</p>"
    return legend + f'<div class="grid">{"".join(out)}</div>' + (skipped if left else "")


def _right_for_negative(report: Report, q: QueryRow, key: str) -> bool:
    """On a negative query a retrieval-side criterion (one not judging the answer) failing is right: nothing
    relevant should be found."""
    info = report.metric(key)
    return q.kind == "negative" and info.criterion not in report.params.answer_criteria


def _score_cell(report: Report, q: QueryRow, key: str) -> str:
    fs = q.foundry.get(key)
    if fs is None:
        return "<td></td>"
    if fs.status == "errored":
        return f'<td class="err" data-v="" title="{_e(fs.error or "")}">errored</td>'
    if fs.status == "missing":
        return '<td class="err" data-v="">missing</td>'
    right = fs.passed if fs.passed is None or not _right_for_negative(report, q, key) else not fs.passed
    cls = {True: "pass", False: "fail", None: ""}[right]
    mark = {True: " ✓", False: " ✗", None: ""}[right]
    v = "" if fs.score is None else repr(float(fs.score))
    why = (fs.reason or "") + (" (negative query: a low score is right)" if right is not fs.passed else "")
    title = f' title="{_e(why.strip())}"' if why else ""
    return f'<td class="n {cls}" data-v="{v}"{title}>{fmt_num(fs.score)}{mark}</td>'


_QUERY_TABLE_MEASURES = ("rr", "recall", "ndcg", "distracting")  # local columns of the per-query table, at stage k


def _query_table(report: Report, rows: Sequence[QueryRow]) -> str:
    k = report.params.stage_k
    local_cols = [c for c in (f"{name}@{k}" for name in _QUERY_TABLE_MEASURES) if any(c in q.local for q in rows)]
    foundry_cols = [m.key for m in report.metrics if m.source == "foundry" and m.primary]
    head = "".join(
        f"<th>{_e(h)}</th>"
        for h in ["#", "query id", "kind", "stage", *local_cols, *foundry_cols, "canary", "query", "response", "why"]
    )
    body = []
    order = {s: i for i, s in enumerate(STAGES)}
    for q in rows:
        cells = [
            f'<td class=n data-v="{q.row}">{q.row}</td>',
            f"<td>{_e(q.query_id)}</td>",
            f"<td>{_e(q.kind)}</td>",
            f'<td class="stage-{q.stage}" data-v="{order[q.stage]}">{q.stage}'
            f"{f'<br><small>{PARTIAL_LABEL}</small>' if q.search_partial else ''}</td>",
        ]
        for c in local_cols:
            v = q.local.get(c)
            cells.append(f'<td class=n data-v="{"" if v is None else repr(float(v))}">{fmt_num(v)}</td>')
        cells.extend(_score_cell(report, q, key) for key in foundry_cols)
        cells.append(f"<td>{_e(q.canary or '')}</td>")
        cells.append(f'<td class="text">{_e(q.query or "")}</td>')
        cells.append(f'<td class="text">{_e(q.response or "")}</td>')
        cells.append(f'<td class="text">{_e(q.stage_reason)}</td>')
        body.append(f'<tr data-query-id="{_e(q.query_id)}">{"".join(cells)}</tr>')
    table = f'<table id="queries" class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return f'<div class="scroll">{table}</div>'


def _negative_table(report: Report) -> str:
    keys = [m.key for m in report.metrics if m.source == "foundry" and m.primary]
    head = "".join(
        f"<th>{_e(h)}</th>" for h in ["query", "kind rule", "abstained", "top score", "surfaced", *keys, "stage"]
    )
    body = []
    by_id = {q.query_id: q for q in report.queries if q.kind == "negative"}
    for r in negative_rows(report):
        q = by_id[str(r["query_id"])]
        abst = {True: "yes", False: "no", None: "–"}[r["abstained"]]  # type: ignore[index]
        cells = [
            f"<td>{_e(r['query_id'])}</td><td>{_e(r['rule'])}</td>",
            f'<td class="{"pass" if r["abstained"] else "fail"}">{abst}</td>',
            f"<td class=n>{fmt_num(r['top_score'])}</td><td class=n>{fmt_num(r['surfaced'])}</td>",  # type: ignore[arg-type]
            *(_score_cell(report, q, key) for key in keys),
            f'<td class="stage-{q.stage}">{q.stage}</td>',
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table class="sortable" id="negatives"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _meta(report: Report) -> str:
    prov, meta = report.provenance, meta_items(report, lambda t: f"<code>{_e(t)}</code>", queries=False)
    if prov.report_url:
        meta.append(f"Foundry report: <code>{_e(prov.report_url)}</code>")
    meta.append(f"built {_e(prov.created_at)} by foundry-bridge {_e(prov.tool_version)}")
    return " · ".join(meta)


def _head(report: Report) -> list[str]:
    """The document head, the header line and the coverage paragraph."""
    cov = report.coverage
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy(_JS)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>foundry-bridge report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header><h1>foundry-bridge report</h1>",
        f'<div class="meta">{_meta(report)}</div></header><main>',
        f"<p><strong>Coverage: {cov.get('scores_scored', 0)}/{cov.get('scores_expected', 0)} Foundry scores</strong>"
        f" ({cov.get('scores_errored', 0)} errored, {cov.get('scores_missing', 0)} missing) · "
        f"{report.positive.queries} positive, {report.negative.queries} negative queries</p>",
    ]


# the stage picture's colours: the failing stages strong, ok green, unknown grey
_STAGE_FILL = {
    "search": "#c62828",
    "assembly": "#ef8f00",
    "generation": "#ad1457",
    "unknown": "#9e9e9e",
    "ok": "#2e7d32",
}


def stage_svg(
    counts: dict[str, int], *, width: int = 560, height: int = 74, links: dict[str, str] | None = None
) -> str:
    """The stage split as one horizontal bar (a segment per stage, width = share of the queries, failing stages
    first), each segment labelled with its count and linking to the stage's worst query (``links``, else the
    table of the worst queries); the legend below it."""
    order = ("search", "assembly", "generation", "unknown", "ok")
    total = sum(counts.get(s, 0) for s in order)
    bar_h, x = 34, 0.0
    parts = [
        f'<svg id="stage-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="queries per stage">'
    ]
    for s in order:
        n = counts.get(s, 0)
        w = width * n / total if total else 0.0
        if w <= 0:
            continue
        title = f"{s}: {n} of {total} queries ({fmt_pct(n, total)})"
        rect = (
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{bar_h}" fill="{_STAGE_FILL[s]}">'
            f"<title>{_e(title)}</title></rect>"
        )
        label = (
            f'<text x="{x + w / 2:.1f}" y="{bar_h / 2 + 5:.1f}" font-size="14" font-weight="600" fill="#fff" '
            f'text-anchor="middle">{n}</text>'
            if w >= 24
            else ""
        )
        to = (links or {}).get(s, "#worst")
        parts.append(f'<a href="{to}">{rect}{label}</a>' if s not in ("ok", "unknown") else rect + label)
        x += w
    lx = 0
    for s in order:
        n = counts.get(s, 0)
        parts.append(
            f'<rect x="{lx}" y="{bar_h + 18}" width="11" height="11" fill="{_STAGE_FILL[s]}"/>'
            f'<text x="{lx + 15}" y="{bar_h + 28}" font-size="12" fill="#222">{_e(s)} {n}</text>'
        )
        lx += 110
    parts.append("</svg>")
    return "".join(parts)


def _headline(report: Report) -> str:
    """The numbers first (``headline``), above the stage picture."""
    out = "".join(f"<div><b>{_e(value)}</b><span>{_e(what)}</span></div>" for value, what in headline(report))
    return f'<div class="headline" id="headline">{out}</div>'


def _stages(report: Report) -> list[str]:
    """The verdict, first on the page: the headline numbers, the stage picture, the table (what to fix, the worst
    queries a click away), the basis of the stages, the judge-trust headline."""
    bar = stage_svg(bar_counts(report), links=stage_links(report))
    parts = ['<section id="verdict"><h2>Where queries fail</h2>', _headline(report), bar]
    if stand_in(report):
        parts.append(f'<p class="meta" id="stand-in">{_e(STAND_IN_WHY)}</p>')
    parts.append(
        "<table><thead><tr><th>stage</th><th>queries</th><th>what to fix</th><th>which</th></tr></thead><tbody>"
    )
    drill = stage_links(report)  # each stage's worst query, drilled into
    for css, label, count, ids, hint in stage_rows(report):
        more = f" … and {count - len(ids)} more" if count > len(ids) else ""
        to = drill.get(css, "#worst")
        link = f' <a href="{to}">worst ↓</a>' if count and css not in ("ok", "unknown") and label == css else ""
        parts.append(
            f'<tr><td class="stage-{css}">{_e(label)}</td><td class=n>{count}</td><td>{_e(hint)}</td>'
            f"<td>{_e(', '.join(ids[:8]) + (' …' if len(ids) > 8 and not more else '') + more)}{link}</td></tr>"
        )
    parts.append(f"</tbody></table><p class=meta>{_e(stage_basis(report))}</p>")
    if (line := trust_line(report)) is not None:
        parts.append(
            f'<p class="trust-line"><strong>Judge trust:</strong> {_e(line)} <a href="#trust">details ↓</a></p>'
        )
    parts.append("<details><summary>Stage rules</summary><ul>")
    parts.extend(f"<li>{_e(r)}</li>" for r in report.stages.rules)
    parts.append("</ul></details></section>")
    return parts


def _negatives(report: Report) -> list[str]:
    neg = report.negative_queries
    if not neg.queries:
        return []
    parts = ["<h2>Negative queries</h2><ul>"]
    parts.append(f"<li>abstained: {len(neg.abstained)}/{len(neg.queries)}: {_e(', '.join(neg.abstained))}</li>")
    parts.append(f"<li>answered anyway: {_e(', '.join(neg.answered) or 'none')}</li>")
    parts.append(f"<li>surfaced evidence: {_e(', '.join(neg.surfaced_evidence) or 'none')}</li>")
    if neg.label_contradictions:
        parts.append(f"<li>relevant label on a negative query: {_e(', '.join(neg.label_contradictions))}</li>")
    parts.append("</ul>")
    parts.append(_negative_table(report))
    return parts


def _canaries(report: Report) -> list[str]:
    if not report.canaries:
        return []
    parts = ["<h2>Judge canaries</h2><table><thead><tr><th>query</th><th>canary</th>"]
    parts.append("<th>passed by (flagged)</th><th>failed by</th><th>caught</th></tr></thead><tbody>")
    for c in report.canaries:
        caught = {True: "yes", False: "NO", None: "unknown"}[c.caught]
        cls = "fail" if c.passed_by else "pass"
        parts.append(
            f"<tr><td>{_e(c.query_id)}</td><td>{_e(c.canary)}</td><td class={cls}>{_e(', '.join(c.passed_by))}"
            f"</td><td>{_e(', '.join(c.failed_by))}</td><td>{caught}</td></tr>"
        )
    parts.append("</tbody></table>")
    if (note := canary_note(report)) is not None:
        parts.append(f"<p class=meta>{_e(note)}</p>")
    return parts


def _holes(report: Report) -> list[str]:
    if not report.labelling_queue:
        return []
    parts = [f"<h2>Label next ({report.coverage.get('hole_documents', len(report.labelling_queue))})</h2>"]
    parts.append(
        '<table class="sortable" id="holes"><thead><tr><th>document</th><th>queries</th><th>best rank</th>'
        "<th>mean rank</th><th>priority</th><th>where</th></tr></thead><tbody>"
    )
    for h in report.labelling_queue:
        where = ", ".join(f"{d['query_id']}@{d['rank']}" for d in h.queries)
        parts.append(
            f"<tr><td>{_e(h.document_id)}</td><td class=n>{h.count}</td><td class=n>{h.best_rank}</td>"
            f"<td class=n>{fmt_num(h.mean_rank)}</td><td class=n data-v='{h.priority!r}'>{fmt_num(h.priority)}"
            f"</td><td>{_e(where)}</td></tr>"
        )
    parts.append("</tbody></table>")
    return parts


def _per_query(report: Report) -> list[str]:
    """Every query (searchable, sortable) when the report holds them all, else the worst of each stage; and where
    every query's row is."""
    note = f"<p class=meta>{per_query_note(report, lambda t: f'<code>{_e(t)}</code>')}</p>"
    if report.per_query.complete:
        worst = worst_rows(report)
        rest = [q for q in report.queries if q not in worst]
        return [
            f'<h2 id="worst">Per query ({len(report.queries)})</h2>',
            '<p class=meta><input id="query-search" type="search" placeholder="search the queries" size="40"> '
            "The worst of each failing stage first, then the rest in dataset order. Click a header to sort.</p>",
            _query_table(report, [*worst, *rest]),
            note,
        ]
    shown = worst_rows(report)
    return [
        f'<h2 id="worst">Queries to look at ({len(shown)} of {report.per_query.rows})</h2>',
        f"<p class=meta>The worst {report.per_query.worst_per_stage} of each stage that is not ok (most failed "
        "answer judges, then the lowest scores). Click a header to sort.</p>",
        _query_table(report, shown),
        note,
    ]


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page: head, warnings, the verdict (stage picture, judge-trust
    headline), sections, charts, negative queries, canaries, trust, the per-query table, the labelling queue."""
    parts = _head(report)
    parts.extend(f'<div class="warn">{_e(w)}</div>' for w in report.warnings)
    parts.extend(_stages(report))
    for section in (report.positive, report.negative):
        parts.append(f"<h2>{section.kind.capitalize()} queries ({section.queries})</h2>")
        parts.append(_section_table(report, section) if section.queries else "<p>none</p>")
    parts.append("<h2>Score distributions</h2>")
    parts.append(_charts(report))
    parts.extend([*_negatives(report), *_canaries(report)])
    parts.extend([render_trust_html(report.trust)] if report.trust and report.trust.shown else [])
    parts.extend([render_vs_human_html(report.judged_vs_human)] if report.judged_vs_human else [])
    parts.extend(_per_query(report))
    parts.append(drill_html(report))
    parts.extend(_holes(report))
    parts.append(f"</main><script>{_JS}</script></body></html>")
    return printable("\n".join(parts) + "\n")

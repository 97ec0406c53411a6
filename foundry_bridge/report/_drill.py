"""The run report's per-query drill-down: for the worst queries of each failing stage, what happened to each.

One query's view: its ranked documents with their labels (relevant, not relevant, unjudged; the grade) and where
each stands in the context that was sent (``metrics.assembly.contains_document``), the context as sent with the
dropped passages marked (relevant top-k documents whose text is not in it: the run's own assembly check, the
query's ``dropped_relevant``), the response, and each answer judge's score with its reason.

The model (``DrillQuery``) is built once from the run's records (``build_drill``) and carried in the report; the
renderers read it. Which queries: per stage that is not ok, its worst (the order of ``stages.worst``: most failed
answer judges, then the lowest scores), at most ``DRILL_PER_STAGE`` a stage and ``DRILL_CAP`` in all, so a report of
a million queries stays as small as one of fourteen. On the emulator the rows whose stage rests only on the
stand-in judge (``_stages.judge_decided``) are left out: its pass or fail says nothing about the answer. The compare
page's per-query view (``_query_view``) draws its documents and judges with the same functions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from html import escape
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..catalog import CATALOG
from ..dataset import QueryRecord
from ..metrics.assembly import contains_document, normalize_ws
from ._format import fmt_num, md_escape, md_table
from ._model import STAGES, QueryRow, Report

__all__ = [
    "DOCUMENT_HEADERS",
    "DRILL_CAP",
    "DRILL_PER_STAGE",
    "MD_TEXT",
    "DrillDocument",
    "DrillJudge",
    "DrillQuery",
    "build_drill",
    "documents_html",
    "documents_rows",
    "drill_anchor",
    "drill_html",
    "drill_markdown",
    "is_judge",
    "judge_line",
    "judges_html",
    "md_anchor",
    "ranked_documents",
    "stage_links",
    "stand_in",
]

DRILL_PER_STAGE = 10  # worst queries drilled into per failing stage
DRILL_CAP = 40  # queries drilled into at most
TEXT_CAP = 4000  # characters of a context, response or passage kept in the model ("…" marks a cut)
MD_TEXT = 600  # characters of a context or passage in the Markdown (a pull-request comment stays short)

InContext = Literal["contained", "truncated", "absent"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DrillDocument(_Model):
    """One retrieved document of a query, in rank order."""

    rank: int
    document_id: str
    score: float | None = Field(None, description="the search engine's score")
    label: int | None = Field(None, description="its qrels label; None: unjudged (a hole)")
    relevant: bool | None = Field(None, description="label ≥ the relevance threshold; None: unjudged")
    in_context: InContext | None = Field(None, description="where its text is in the context; None: no text")
    dropped: bool = Field(False, description="relevant, in the top k, its text not in the context sent")
    text: str | None = Field(None, description="its text, kept for the dropped ones (cut at TEXT_CAP)")


class DrillJudge(_Model):
    """One answer judge's primary score on the query."""

    criterion: str
    status: str = Field(description="scored | errored | missing")
    score: float | None = None
    passed: bool | None = None
    reason: str | None = None
    error: str | None = None


class DrillQuery(_Model):
    """One query as the drill-down shows it."""

    row: int
    query_id: str
    kind: str
    stage: str
    stage_reason: str
    query: str | None = None
    documents: list[DrillDocument] = Field(default_factory=list)
    unretrieved: list[tuple[str, int]] = Field(
        default_factory=list, description="labelled documents that were not retrieved: (id, label)"
    )
    context: str | None = Field(None, description="the context as sent (cut at TEXT_CAP)")
    response: str | None = None
    judges: list[DrillJudge] = Field(default_factory=list)

    @property
    def dropped(self) -> list[DrillDocument]:
        """The dropped passages: the first place of each dropped document."""
        seen: set[str] = set()
        out = []
        for d in self.documents:
            if d.dropped and d.document_id not in seen:
                seen.add(d.document_id)
                out.append(d)
        return out


def _cut(text: str | None, limit: int = TEXT_CAP) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f" … ({len(text) - limit} more characters)"


def stand_in(report: Report) -> bool:
    """The run is the emulator's (the manifest's backend ``mock``) and some stage rests on its stand-in judge."""
    return report.provenance.backend == "mock" and any(report.stages.judged.values())


def is_judge(evaluator: str | None) -> bool:
    """An LLM judge: an evaluator of the catalog that needs a deployment (and gives a reason)."""
    spec = CATALOG.get(evaluator or "")
    return spec is not None and spec.needs_deployment


def ranked_documents(
    rec: QueryRecord, *, relevance_threshold: int | None = None, dropped: Collection[str] = ()
) -> tuple[list[DrillDocument], list[tuple[str, int]]]:
    """A record's ranked documents with their labels, where each stands in the context (``contains_document`` on
    whitespace-normalized text) and the ``dropped`` ones (the assembly check's) marked with their text; and the
    labelled documents that were not retrieved. ``relevance_threshold`` None: relevance is not judged here."""
    labels = {g.document_id: g.query_relevance_label for g in rec.retrieval_ground_truth or ()}
    context = None if rec.context is None else normalize_ws(rec.context)
    docs = []
    for rank, d in enumerate(rec.retrieved_documents, 1):
        label = labels.get(d.document_id)
        where: InContext | None = None
        if context is not None and d.content is not None:
            where = contains_document(context, normalize_ws(d.content)) or "absent"  # type: ignore[assignment]
        gone = d.document_id in dropped
        docs.append(
            DrillDocument(
                rank=rank,
                document_id=d.document_id,
                score=d.relevance_score,
                label=label,
                relevant=None if label is None or relevance_threshold is None else label >= relevance_threshold,
                in_context=where,
                dropped=gone,
                text=_cut(d.content) if gone else None,
            )
        )
    retrieved = {d.document_id for d in rec.retrieved_documents}
    return docs, [(d, label) for d, label in labels.items() if d not in retrieved]


def _judges(report: Report, q: QueryRow) -> list[DrillJudge]:
    out = []
    for info in report.metrics:
        if info.source != "foundry" or not info.primary or not is_judge(info.evaluator):
            continue
        fs = q.foundry.get(info.key)
        if fs is not None:
            out.append(
                DrillJudge(
                    criterion=info.criterion or info.key,
                    status=fs.status,
                    score=fs.score,
                    passed=fs.passed,
                    reason=fs.reason,
                    error=fs.error,
                )
            )
    return out


def _chosen(report: Report, order: dict[str, list[int]]) -> list[QueryRow]:
    """The rows drilled into: per stage that is not ok, its worst first (``order``), within the caps."""
    by_row = {q.row: q for q in report.queries}
    out: list[QueryRow] = []
    for s in STAGES:
        if s != "ok":
            out.extend([by_row[r] for r in order.get(s, []) if r in by_row][:DRILL_PER_STAGE])
    return out[:DRILL_CAP]


def build_drill(
    report: Report, order: dict[str, list[int]], records: Callable[[set[int]], dict[int, QueryRecord]]
) -> list[DrillQuery]:
    """The drill-down of ``report``: the rows of ``order`` (per stage, the worst first; on the emulator without the
    rows its stand-in judge decided), each from its record (``records(rows) -> {row: QueryRecord}``, the run
    folder's ``RunFolder.records_at``) and its report row (stage, dropped documents, judges)."""
    rows = _chosen(report, order)
    recs = records({q.row for q in rows}) if rows else {}
    out = []
    for q in rows:
        rec = recs.get(q.row)
        docs: list[DrillDocument] = []
        unretrieved: list[tuple[str, int]] = []
        if rec is not None:
            docs, unretrieved = ranked_documents(
                rec, relevance_threshold=report.params.relevance_threshold, dropped=set(q.dropped_relevant)
            )
        out.append(
            DrillQuery(
                row=q.row,
                query_id=q.query_id,
                kind=q.kind,
                stage=q.stage,
                stage_reason=q.stage_reason,
                query=q.query,
                documents=docs,
                unretrieved=unretrieved,
                context=None if rec is None else _cut(rec.context),
                response=_cut(q.response),
                judges=_judges(report, q),
            )
        )
    return out


def drill_anchor(i: int) -> str:
    """The HTML id of the ``i``-th drilled query (0-based)."""
    return f"drill-{i + 1}"


def _md_heading(q: DrillQuery) -> str:
    return f"Query {q.query_id} ({q.stage})"


def md_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return "#" + kept.replace(" ", "-")


def stage_links(report: Report, *, markdown: bool = False) -> dict[str, str]:
    """Per stage, the link to its worst query's drill-down (the first drilled query of that stage)."""
    out: dict[str, str] = {}
    for i, q in enumerate(report.drill):
        if q.stage not in out:
            out[q.stage] = md_anchor(_md_heading(q)) if markdown else f"#{drill_anchor(i)}"
    return out


_PLACE = {"contained": "in the context", "truncated": "cut at the context's end", "absent": "not in the context"}


def _label(d: DrillDocument) -> str:
    if d.label is None:
        return "unjudged"
    return f"{d.label}" + {True: " (relevant)", False: " (not relevant)", None: ""}[d.relevant]


def _place(d: DrillDocument) -> str:
    if d.dropped:
        return "dropped: relevant, not in the context"
    return "–" if d.in_context is None else _PLACE[d.in_context]


def documents_html(docs: Sequence[DrillDocument], unretrieved: Iterable[tuple[str, int]] = ()) -> str:
    """The ranked documents as a table (rank, document, score, label, place in the context), the labelled ones
    that were not retrieved below it."""
    rows = "".join(
        f"<tr{' class=dropped' if d.dropped else ''}><td class=n>{d.rank}</td><td>{escape(d.document_id)}</td>"
        f"<td class=n>{fmt_num(d.score)}</td><td>{escape(_label(d))}</td><td>{escape(_place(d))}</td></tr>"
        for d in docs
    )
    missed = [f"{d} (label {label})" for d, label in unretrieved]
    note = f"<p>Labelled, not retrieved: {escape(', '.join(missed))}</p>" if missed else ""
    head = "<tr><th>rank</th><th>document</th><th>score</th><th>label</th><th>context</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{rows}</tbody></table>{note}"


def _verdict(j: DrillJudge) -> str:
    return {True: " (pass)", False: " (fail)", None: ""}[j.passed]


def judges_html(judges: Sequence[DrillJudge]) -> str:
    """Each judge's score, pass or fail and reason (or its error) as a list."""
    if not judges:
        return "<p>No judge scored this query.</p>"
    items = []
    for j in judges:
        if j.status == "errored":
            items.append(f"<li>{escape(j.criterion)}: errored — {escape(j.error or '')}</li>")
        elif j.status == "missing":
            items.append(f"<li>{escape(j.criterion)}: missing</li>")
        else:
            reason = f" — {escape(j.reason)}" if j.reason else ""
            items.append(f"<li>{escape(j.criterion)}: <strong>{fmt_num(j.score)}</strong>{_verdict(j)}{reason}</li>")
    return f"<ul>{''.join(items)}</ul>"


def _dropped_html(q: DrillQuery) -> str:
    return "".join(
        f'<div class="text dropped"><strong>Dropped: {escape(d.document_id)}</strong> (rank {d.rank}, label '
        f"{escape(_label(d))}): retrieved, relevant, not in the context sent\n{escape(d.text or '(no text)')}</div>"
        for d in q.dropped
    )


def drill_html(report: Report) -> str:
    """The drill-down section of the HTML report (empty when no query is drilled into)."""
    if not report.drill:
        return ""
    parts = [
        f'<h2 id="drill">Query drill-down ({len(report.drill)})</h2>',
        "<p class=meta>The worst queries of each stage that is not ok, the worst first: the ranked documents with "
        "their labels, the context as sent (dropped passages marked), the response and each judge's reason.</p>",
    ]
    for i, q in enumerate(report.drill):
        question = f" — {escape(q.query)}" if q.query else ""
        context = "(no context)" if q.context is None else q.context
        response = "(no response)" if q.response is None else q.response
        parts.append(
            f'<details class="drill" id="{drill_anchor(i)}" data-query-id="{escape(q.query_id)}" open>'
            f"<summary><strong>{escape(q.query_id)}</strong>{question} · "
            f'<span class="stage-{escape(q.stage)}">{escape(q.stage)}</span></summary>'
            f"<p>{escape(q.stage_reason)}</p>{documents_html(q.documents, q.unretrieved)}"
            f'<h4>Context as sent</h4><div class="text">{escape(context)}</div>{_dropped_html(q)}'
            f'<h4>Response</h4><div class="text">{escape(response)}</div>'
            f"<h4>Judges</h4>{judges_html(q.judges)}</details>"
        )
    return "\n".join(parts)


def judge_line(j: DrillJudge, esc: Callable[[str], str] = md_escape, strong: str = "**") -> str:
    """One judge as a list item: its score (between ``strong``), pass or fail and reason, text through ``esc``."""
    if j.status == "errored":
        return f"{esc(j.criterion)}: errored — {esc((j.error or '')[:300])}"
    if j.status == "missing":
        return f"{esc(j.criterion)}: missing"
    reason = f" — {esc(j.reason[:300])}" if j.reason else ""
    return f"{esc(j.criterion)}: {strong}{fmt_num(j.score)}{strong}{_verdict(j)}{reason}"


DOCUMENT_HEADERS = ["rank", "document", "score", "label", "context"]


def documents_rows(docs: Sequence[DrillDocument]) -> tuple[list[str], list[list[str]]]:
    """The ranked documents as plain cells: rank, document, score, label, place in the context."""
    return DOCUMENT_HEADERS, [[str(d.rank), d.document_id, fmt_num(d.score), _label(d), _place(d)] for d in docs]


def drill_markdown(report: Report, max_queries: int = DRILL_PER_STAGE) -> list[str]:
    """The drill-down in Markdown: the first ``max_queries`` drilled queries, texts cut at ``MD_TEXT``."""
    if not report.drill:
        return []
    out = ["### Query drill-down", ""]
    for q in report.drill[:max_queries]:
        out += [f"#### {md_escape(_md_heading(q))}", ""]
        if q.query:
            out += [f"_{md_escape(q.query, 300)}_ — {md_escape(q.stage_reason, 300)}", ""]
        cells = zip(q.documents, documents_rows(q.documents)[1], strict=True)
        out += md_table(
            DOCUMENT_HEADERS,
            ([r, md_escape(i), s, lab, f"**{p}**" if d.dropped else p] for d, (r, i, s, lab, p) in cells),
        )
        if q.unretrieved:
            out.append("")
            out.append("Labelled, not retrieved: " + ", ".join(f"{md_escape(d)} ({n})" for d, n in q.unretrieved))
        context = "(no context)" if q.context is None else md_escape(q.context, MD_TEXT)
        out += ["", f"> **Context as sent:** {context}"]
        for d in q.dropped:
            out += [">", f"> **Dropped: {md_escape(d.document_id)}** (rank {d.rank}, label {_label(d)}): "]
            out[-1] += md_escape(d.text or "(no text)", MD_TEXT)
        response = "(no response)" if q.response is None else md_escape(q.response, MD_TEXT)
        out += ["", f"**Response:** {response}", ""]
        out += [f"- {judge_line(j)}" for j in q.judges] or ["- no judge scored this query"]
        out.append("")
    if len(report.drill) > max_queries:
        out += [f"_{len(report.drill) - max_queries} more in the HTML report._", ""]
    return out

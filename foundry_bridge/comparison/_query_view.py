"""The compare page's per-query view: the queries that changed most, each run side by side.

Which queries changed and by how much is the comparison's own record (each row's ``got_worse``); what each run did
on them is read from its run folder as written (``records.jsonl``: the ranked documents, their labels, the context
and the answer; ``results.jsonl``: each judge's score and reason). Nothing here computes a metric or a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from ..columns import RunColumns
from ..dataset import QueryRecord
from ..report._drill import DrillJudge, documents_html, is_judge, judges_html, ranked_documents
from ..report._format import fmt_num
from ..results import ResultRow
from ._compare import Comparison

__all__ = ["changed_queries", "query_view_html"]

MOST_CHANGED = 5  # queries shown per candidate


@dataclass
class _Seen:
    """One query as one run saw it."""

    record: QueryRecord | None = None
    judges: list[ResultRow] = field(default_factory=list)


def changed_queries(comparison: Comparison, candidate: str, limit: int = MOST_CHANGED) -> list[tuple[str, list[str]]]:
    """The ``limit`` queries that got worse on the most of ``candidate``'s metrics (ties: the order the rows list
    them, largest change first), each with its changes ("metric base→cand")."""
    changes: dict[str, list[str]] = {}
    for m in comparison.metrics:
        if m.candidate != candidate:
            continue
        for g in m.got_worse:
            where = "" if m.section == "positive" else f"{m.section}:"
            line = f"{where}{m.metric} {fmt_num(g['baseline'])}→{fmt_num(g['candidate'])}"
            changes.setdefault(str(g["query_id"]), []).append(line)
    order = {q: i for i, q in enumerate(changes)}
    ranked = sorted(changes, key=lambda q: (-len(changes[q]), order[q]))
    return [(q, changes[q]) for q in ranked[:limit]]


_JUDGE_ROWS = (
    "SELECT query_id, criterion, evaluator, metric, score, passed, reason, error FROM cell "
    "WHERE query_id IN (SELECT unnest(?)) ORDER BY row, seq"
)


def _read(run_dir: str, ids: set[str]) -> dict[str, _Seen]:
    """The records and the judges' result rows (the last of a duplicated cell) of ``ids`` in one run folder."""
    columns = RunColumns.open(run_dir)
    try:
        seen = {q: _Seen(record=rec) for q, rec in columns.records(ids).items()}
        names = ("query_id", "criterion", "evaluator", "metric", "score", "passed", "reason", "error")
        for values in columns.sql(_JUDGE_ROWS, [sorted(ids)]).fetchall():
            row = ResultRow(row=0, **dict(zip(names, values, strict=True)))
            if is_judge(row.evaluator):
                seen.setdefault(str(row.query_id), _Seen()).judges.append(row)
    finally:
        columns.close()
    return seen


def _judges(rows: Sequence[ResultRow]) -> str:
    """The judges' result rows drawn as the run report's drill-down draws them (``_drill.judges_html``)."""
    keep = {"criterion", "score", "passed", "reason", "error"}
    status = ["errored" if r.error else "missing" if r.score is None else "scored" for r in rows]
    return judges_html([DrillJudge(status=s, **r.model_dump(include=keep)) for r, s in zip(rows, status, strict=True)])


def _run_column(label: str, seen: _Seen) -> str:
    rec = seen.record
    if rec is None:
        return f'<div class="run"><h4>{escape(label)}</h4><p>Not in this run.</p></div>'
    context = "(no context)" if rec.context is None else rec.context
    answer = "(no response)" if rec.response is None else rec.response
    return (
        f'<div class="run"><h4>{escape(label)}</h4>{documents_html(*ranked_documents(rec))}'
        f'<h5>Context</h5><div class="text">{escape(context)}</div>'
        f'<h5>Answer</h5><div class="text">{escape(answer)}</div>'
        f"<h5>Judges</h5>{_judges(seen.judges)}</div>"
    )


def query_view_html(comparison: Comparison) -> str:
    """Per candidate, its most changed queries (``changed_queries``): the baseline's and the candidate's ranked
    documents with labels, context, answer and judges side by side. Empty for run files (``--qrels``: no folder)."""
    if comparison.qrels is not None or comparison.all_pairs is not None:
        return ""
    dirs = {r.label: r.run_dir for r in comparison.runs}
    parts: list[str] = []
    for cand in comparison.candidates:
        changed = changed_queries(comparison, cand)
        if not changed:
            continue
        ids = {q for q, _ in changed}
        base, other = _read(dirs[comparison.baseline], ids), _read(dirs[cand], ids)
        none = _Seen()
        parts.append(f"<h2>The queries that changed most: {escape(cand)} vs {escape(comparison.baseline)}</h2>")
        for q, lines in changed:
            seen_a, seen_b = base.get(q, none), other.get(q, none)
            rec = seen_a.record or seen_b.record
            question = f" — {escape(rec.query)}" if rec is not None and rec.query else ""
            parts.append(
                f'<details class="query" open><summary><strong>{escape(q)}</strong>{question}</summary>'
                f"<p>Got worse on {escape('; '.join(lines))}</p>"
                f'<div class="side">{_run_column(comparison.baseline, seen_a)}{_run_column(cand, seen_b)}</div>'
                "</details>"
            )
    return "\n".join(parts)

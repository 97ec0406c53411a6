"""Retrieval coverage and retrieval utilization (Deepchecks' retrieval properties): two judge calls per query over
the documents ``judge-docs`` graded relevant, each a score from 0 to 1 with the judge's reason. docs/metrics.md
("Retrieval coverage and utilization") states the definitions and assumptions.

- **relevant documents** of a query: those ``judge-docs`` graded 2 or 3 in the same call (``judged.PASSING``), in
  rank order, their texts as graded, joined by a blank line.
- **coverage** = the share of the parts of the question that the relevant documents together answer (0–1). A
  query with no relevant document and no unknown grade has coverage 0 (nothing covers it; no call); with unknown
  grades and none relevant it is unknown.
- **utilization** = the share of the relevant documents' key points that the answer uses (0–1). Undefined (not
  averaged, counted) for a query with no relevant document; unknown for one without a response.
- A call that fails, or an answer that cannot be read, is **unknown**: counted with its cause, never a 0.
- Means are over the queries with a value, positive and negative queries apart (never mixed).

Backends: ``local`` asks ``COVERAGE_RUBRIC`` / ``UTILIZATION_RUBRIC`` through ``local._ask`` (cache, bounded
waits); ``mock`` / ``foundry`` run two ``score_model`` criteria (range 0–1, passing at 0.5) through
``graded.run_graders``, the emulator answering with its lexical stand-in (the first templated part's words found
in the rest: the question's words in the documents; the documents' words in the answer).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._text import judge_object

__all__ = [
    "COVERAGE_RUBRIC",
    "COVERAGE_VERSION",
    "MAX_OUTPUT_TOKENS",
    "MEASURES",
    "UTILIZATION_RUBRIC",
    "Evidence",
    "ceiling_requests",
    "coverage_requests",
    "evidence",
    "measure",
    "parse_share",
    "summarize",
    "summary_lines",
]

COVERAGE_VERSION = "1"
MEASURES = ("coverage", "utilization")
_REPLY = 'Reply with one JSON object and nothing else: {"score": a number from 0 to 1, "reason": "one short sentence"}.'
COVERAGE_RUBRIC = f"""\
You judge whether a set of documents covers a question. Split the question into the parts a complete answer must
address. Score the share of those parts that the documents, taken together, answer: 1 when every part is
answered, 0 when none is. Read only the documents; do not use what you know yourself.
{_REPLY}"""
UTILIZATION_RUBRIC = f"""\
You judge how much of a set of documents an answer uses. List the key points of the documents. Score the share of
those key points that the answer states or relies on: 1 when it uses every one, 0 when it uses none. Judge use,
not correctness.
{_REPLY}"""
_COVERAGE_USER = "Question:\n{query}\n\nRelevant documents:\n{documents}"
_UTILIZATION_USER = "Relevant documents:\n{documents}\n\nAnswer:\n{response}"  # documents first: the stand-in's part
_TASK = f"retrieval_coverage/{COVERAGE_VERSION}"
MAX_OUTPUT_TOKENS = 256
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Evidence:
    """One query's inputs: ``documents`` the relevant documents' texts (rank order), ``unknown`` how many of its
    graded documents have no grade, ``kind`` positive or negative."""

    query_id: str
    query: str | None
    response: str | None
    kind: str
    documents: tuple[str, ...]
    unknown: int

    @property
    def joined(self) -> str:
        return _SEPARATOR.join(self.documents)


def evidence(
    records: Iterable[Any], graded: Sequence[tuple[Any, int | None]], passing: Sequence[str]
) -> list[Evidence]:
    """Each record's ``Evidence`` from judge-docs' ``(DocumentPair, grade)`` list: the pairs graded in
    ``passing`` are its relevant documents."""
    by_query: dict[str, list[tuple[Any, int | None]]] = {}
    for pair, grade in graded:
        by_query.setdefault(pair.query_id, []).append((pair, grade))
    out = []
    for rec in records:
        pairs = sorted(by_query.get(rec.query_id, []), key=lambda pg: pg[0].rank)
        docs = tuple(p.text for p, g in pairs if g is not None and str(g) in passing and p.text)
        unknown = sum(1 for _, g in pairs if g is None)
        out.append(Evidence(rec.query_id, rec.query, rec.response, rec.kind, docs, unknown))
    return out


def parse_share(content: str) -> dict[str, Any]:
    """``{"score": 0–1, "reason": text}`` from a judge's answer; a ``ValueError`` saying what is wrong otherwise."""
    answer, score = judge_object(content, "score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValueError(f"the judge's answer has no score from 0 to 1: {content[:120]!r}")
    return {"score": float(score), "reason": str(answer.get("reason") or "")[:500]}


def _asks(ev: Evidence) -> dict[str, str | None]:
    """Per measure: None when the judge is asked, else the value's cause without a call."""
    if not ev.query:
        return {m: "NO_TEXT: no query text" for m in MEASURES}
    if not ev.documents:
        undefined = "UNDEFINED: no relevant document"
        cover = "UNKNOWN_GRADES: no document graded relevant, some not graded" if ev.unknown else "ZERO"
        return {"coverage": cover, "utilization": undefined}
    return {"coverage": None, "utilization": None if ev.response else "NO_RESPONSE: no answer text"}


def _request(measure_name: str, ev: Evidence) -> tuple[str, str]:
    """The local judge's (system, user) messages for one measure of one query."""
    rubric, user = (
        (COVERAGE_RUBRIC, _COVERAGE_USER) if measure_name == "coverage" else (UTILIZATION_RUBRIC, _UTILIZATION_USER)
    )
    return rubric, user.format(query=ev.query, documents=ev.joined, response=ev.response)


def coverage_requests(items: Sequence[Evidence]) -> dict[str, list[tuple[str, str]]]:
    """The distinct (system, user) requests ``measure`` sends on the local backend, per measure."""
    asks = [_asks(ev) for ev in items]
    return {
        m: list(dict.fromkeys(_request(m, ev) for ev, a in zip(items, asks, strict=True) if a[m] is None))
        for m in MEASURES
    }


def ceiling_requests(records: Iterable[Any], pairs: Iterable[Any]) -> dict[str, list[tuple[str, str]]]:
    """What ``measure`` sends on the local backend at most, before any document is graded: every one of the
    ``pairs`` to grade (``judged.document_pairs``) counted relevant — the cost estimate's ceiling."""
    return coverage_requests(evidence(records, [(p, 3) for p in pairs], ("3",)))


def _graders() -> list[Any]:
    from .graded import Grader

    user_c = _COVERAGE_USER.format(query="{{item.query}}", documents="{{item.documents}}")
    user_u = _UTILIZATION_USER.format(documents="{{item.documents}}", response="{{item.response}}")
    system_c, system_u = (r.removesuffix(_REPLY).strip() for r in (COVERAGE_RUBRIC, UTILIZATION_RUBRIC))
    return [
        Grader("retrieval_coverage", "score_model", (("system", system_c), ("user", user_c))),
        Grader("retrieval_utilization", "score_model", (("system", system_u), ("user", user_u))),
    ]


Value = tuple[float | None, str]  # (score, reason or cause); None: unknown or undefined


def _on_wire(
    items: Sequence[Evidence],
    asks: Sequence[dict[str, str | None]],
    backend: str,
    wire: Mapping[str, Any],
    progress: Callable[..., None] | None,
) -> tuple[dict[str, list[Value | None]], dict[str, Any]]:
    from .graded import run_graders

    graders = _graders()
    sent = [i for i, a in enumerate(asks) if a["coverage"] is None]  # every query the judge sees has documents
    fields = ("query_id", "query", "joined", "response")  # an absent answer is left out of its item, not null
    rows = (
        {"documents" if f == "joined" else f: v for f in fields if (v := getattr(items[i], f)) is not None}
        for i in sent
    )
    name = "judge-docs-coverage"
    run = run_graders(rows, graders, backend=backend, wire=wire, name=name, suffix=".coverage", progress=progress)
    out: dict[str, list[Value | None]] = {m: [None] * len(items) for m in MEASURES}
    for measure_name, grader in zip(MEASURES, graders, strict=True):
        for i, row in zip(sent, run.results[grader.name], strict=True):
            if asks[i][measure_name] is not None:
                continue  # utilization of a query without a response: not asked (its item errors on the wire)
            if row is None or row.error is not None or row.score is None or not 0 <= row.score <= 1:
                cause = "MISSING_RESULT" if row is None else row.error or f"OFF_SCALE: score {row.score!r}"
                out[measure_name][i] = (None, cause)
            else:
                out[measure_name][i] = (float(row.score), row.reason or "")
    prompts = {m: g.prompt_sha256 for m, g in zip(MEASURES, graders, strict=True)}
    return out, {"graders": [g.kind for g in graders], "prompt_sha256": prompts, **run.ids}


def _on_local(
    items: Sequence[Evidence], asks: Sequence[dict[str, str | None]], local: Any, progress: Callable[..., None] | None
) -> tuple[dict[str, list[Value | None]], dict[str, Any]]:
    from .local._ask import ask_judge

    out: dict[str, list[Value | None]] = {m: [None] * len(items) for m in MEASURES}
    stats: dict[str, dict[str, int]] = {}
    for measure_name in MEASURES:
        asked = [i for i, a in enumerate(asks) if a[measure_name] is None]
        requests = [_request(measure_name, items[i]) for i in asked]
        step = None if progress is None else lambda done, total, m=measure_name: progress(m, done, total)
        answers = ask_judge(
            local, requests, task=f"{_TASK}/{measure_name}", parse=parse_share, progress=step,
            max_tokens=MAX_OUTPUT_TOKENS,
        )  # fmt: skip
        stats[measure_name] = dict(local.stats)  # each call's counters (calls, cache hits, errors)
        for i, answer in zip(asked, answers, strict=True):
            out[measure_name][i] = (answer["score"], answer["reason"]) if isinstance(answer, dict) else (None, answer)
    return out, {"rubric_version": COVERAGE_VERSION, "judge_stats": stats}


def measure(
    items: Sequence[Evidence],
    *,
    backend: str,
    local: Any = None,
    wire: Mapping[str, Any] | None = None,
    progress: Callable[..., None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per query ``{query_id, kind, coverage, coverage_reason, utilization, utilization_reason}`` (a value None:
    unknown or undefined, its reason the cause) and the judge's identity for the provenance."""
    asks = [_asks(ev) for ev in items]
    if backend == "local":
        got, ident = _on_local(items, asks, local, progress)
    else:
        got, ident = _on_wire(items, asks, backend, wire or {}, progress)
    rows = []
    for i, ev in enumerate(items):
        row: dict[str, Any] = {"query_id": ev.query_id, "kind": ev.kind, "relevant_documents": len(ev.documents)}
        for m in MEASURES:
            cause = asks[i][m]
            value: Value = (None, cause or "")
            if cause == "ZERO":
                value = (0.0, "no document graded relevant: nothing covers the question")
            elif cause is None:
                value = got[m][i] or (None, "MISSING_RESULT")
            row[m], row[f"{m}_reason"] = value
        rows.append(row)
    return rows, ident


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """``retrieval coverage: positive mean 0.612 over 11 (0 unknown, 0 undefined); ...``: one line per measure of
    ``summarize``'s output, as judge-docs prints it and the report notes it."""
    lines = []
    for name, by_kind in summary.items():
        parts = []
        for kind, s in by_kind.items():
            mean = "n/a" if s["mean"] is None else f"{s['mean']:.3f}"
            parts.append(f"{kind} mean {mean} over {s['queries']} ({s['unknown']} unknown, {s['undefined']} undefined)")
        lines.append(f"retrieval {name}: {'; '.join(parts)}")
    return lines


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per measure and query kind: the mean over the queries with a value, how many had one, how many were
    undefined (utilization without a relevant document) and how many unknown."""
    out: dict[str, Any] = {}
    for m in MEASURES:
        for kind in ("positive", "negative"):
            mine = [r for r in rows if r["kind"] == kind]
            if not mine:
                continue
            values = [r[m] for r in mine if r[m] is not None]
            undefined = sum(1 for r in mine if r[m] is None and str(r[f"{m}_reason"]).startswith("UNDEFINED"))
            out.setdefault(m, {})[kind] = {
                "mean": math.fsum(values) / len(values) if values else None,
                "queries": len(values),
                "undefined": undefined,
                "unknown": len(mine) - len(values) - undefined,
            }
    return out

"""Judge-labelled qrels (``judge-docs``): every retrieved document to depth k, and every document of the context as
sent, graded 0–3 by a judge on our rubric; written as a TREC qrels file with a provenance file beside it; read back
by ``metrics``, which says "judge-labelled" beside every metric and corrects the means with the human labels a team
has (``compare_with_human``), drawn at random or in the order of the query queue (``query_queue``, weighted back by
``queue_inclusion``). docs/metrics.md ("Judge-labelled qrels") and docs/trust.md state the rules.

- Scale (TREC's, as UMBRELA uses it): 0 irrelevant, 1 related, 2 partially answers, 3 answers. Deepchecks' classes
  map onto it: Platinum = 3, Gold = 2, Irrelevant = 0 or 1.
- Backends: ``local`` (any OpenAI-compatible endpoint, the local backend's cache and bounded waits) with ``RUBRIC``
  as the system message; ``mock``, the emulator's deterministic stand-in (``mock.stand_in_grade``: lexical overlap).
- A grade that could not be obtained (no document text, an error, an unreadable answer) is **unknown**: counted in
  the provenance with its cause, never written to the qrels (it is not a 0).
- ``<qrels>.json`` holds the provenance (backend, judge, rubric version and SHA-256, scale, date, k, counts), the
  qrels file's own SHA-256 (a qrels file edited or appended to afterwards is refused: judge and human labels never
  mix silently) and every document's grade and reason.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._io import atomic_open, loads, sha256_file, write_json
from ._text import judge_object
from .errors import DatasetError, UsageError

if TYPE_CHECKING:
    from .local import LocalBackend
    from .mapping import Mapping

__all__ = [
    "BACKENDS",
    "DEEPCHECKS",
    "JUDGE_LABELLED",
    "MAX_OUTPUT_TOKENS",
    "RUBRIC",
    "RUBRIC_SCALE",
    "RUBRIC_SHA256",
    "RUBRIC_VERSION",
    "SCALE",
    "DocumentPair",
    "QueueInclusion",
    "cached_requests",
    "check_human_qrels",
    "circularity",
    "compare_with_human",
    "document_pairs",
    "estimate_documents",
    "judge_documents",
    "judge_requests",
    "parse_grade",
    "provenance_path",
    "qrels_labels",
    "query_queue",
    "query_texts",
    "queue_inclusion",
    "queue_line",
    "ranked_lists",
    "read_provenance",
    "read_query_queue",
    "relabeller",
    "run_vs_human",
]

JUDGE_LABELLED = "judge-labelled"
FORMAT = "foundry-bridge judged qrels 1"
SCALE = {0: "irrelevant", 1: "related", 2: "partially answers", 3: "answers"}
DEEPCHECKS = {"Platinum": [3], "Gold": [2], "Irrelevant": [0, 1]}
RUBRIC_VERSION = "1"
RUBRIC_SCALE = """\
You grade how well one document answers one search query, on a scale from 0 to 3.
3 (answers): the document alone holds everything needed to answer the query.
2 (partially answers): the document holds part of the answer; the rest must come from elsewhere.
1 (related): the document is about the query's subject but holds nothing that answers it.
0 (irrelevant): the document has nothing to do with the query.
Read only the document's text; do not use what you know yourself. Between two grades, give the lower."""
# the local judge's reply format; a label_model grader answers with one of its labels instead (GRADER)
RUBRIC = (
    RUBRIC_SCALE
    + """
Reply with one JSON object and nothing else: {"grade": 0, 1, 2 or 3, "reason": "one short sentence"}."""
)
RUBRIC_SHA256 = hashlib.sha256(RUBRIC.encode()).hexdigest()
_TASK = f"document_relevance/{RUBRIC_VERSION}"
_USER = "Query:\n{query}\n\nDocument:\n{document}"
BACKENDS = ("mock", "foundry", "local")
PASSING = ("2", "3")  # the grades that answer the query, in part or whole (Deepchecks' Gold and Platinum)
MOCK_MODEL = "mock stand-in (lexical overlap)"  # who grades on the emulator (its label_model stand-in)
MAX_OUTPUT_TOKENS = 256  # the answer's ceiling, sent as max_tokens: the estimate's output bound per call
_WS = re.compile(r"\s")


@dataclass(frozen=True)
class DocumentPair:
    """One (query, document) to grade: ``rank`` its 1-based first position in the ranking, ``in_context`` whether
    its text is in the context as sent (``metrics.assembly.contains_document``), ``text`` title and content."""

    query_id: str
    document_id: str
    query: str | None
    text: str | None
    rank: int
    in_context: bool


def _text(doc: Any) -> str | None:
    parts = [p for p in (doc.title, doc.content) if p]
    return "\n".join(parts) or None


def document_pairs(records: Iterable[Any], k: int) -> list[DocumentPair]:
    """The pairs to grade: each query's distinct documents ranked within ``k``, and those ranked below whose text
    is in the context as sent."""
    from .metrics.assembly import contains_document, normalize_ws

    out: list[DocumentPair] = []
    for rec in records:
        context = normalize_ws(rec.context) if rec.context else None
        seen: set[str] = set()
        for rank, doc in enumerate(rec.retrieved_documents, 1):
            if doc.document_id in seen:
                continue
            seen.add(doc.document_id)
            sent = bool(context and doc.content and contains_document(context, normalize_ws(doc.content)))
            if rank <= k or sent:
                out.append(DocumentPair(rec.query_id, doc.document_id, rec.query, _text(doc), rank, sent))
    return out


def parse_grade(content: str) -> dict[str, Any]:
    """``{"grade": 0–3, "reason": text}`` from a judge's answer (a JSON object, possibly in a code fence); a
    ``ValueError`` saying what is wrong otherwise."""
    answer, grade = judge_object(content, "grade")
    if isinstance(grade, bool) or grade not in SCALE:
        raise ValueError(f"the judge's answer has no grade 0, 1, 2 or 3: {content[:120]!r}")
    return {"grade": int(grade), "reason": str(answer.get("reason") or "")[:500]}


def _grader() -> Any:
    """The ``label_model`` criterion judge-docs sends on Foundry and the emulator: ``RUBRIC_SCALE`` as the system
    message, the query and document through ``{{item.x}}`` templates, labels 0–3, passing 2 and 3."""
    from .graded import Grader

    system = RUBRIC_SCALE + "\nAnswer with the grade's number (0, 1, 2 or 3) as the label."
    user = _USER.format(query="{{item.query}}", document="{{item.document}}")
    labels = tuple(str(g) for g in SCALE)
    return Grader("document_relevance", "label_model", (("system", system), ("user", user)), labels, PASSING)


def _requests(pairs: Sequence[DocumentPair]) -> tuple[list[int], list[tuple[str, str]]]:
    """The pairs a judge can be asked about (a query and a document text), and their (system, user) messages."""
    askable = [i for i, p in enumerate(pairs) if p.query and p.text]
    return askable, [(RUBRIC, _USER.format(query=pairs[i].query, document=pairs[i].text)) for i in askable]


def judge_requests(records: Iterable[Any], k: int) -> tuple[list[tuple[str, str]], int, int]:
    """What ``judge_documents`` asks over ``records`` to depth ``k``: the distinct (system, user) requests (identical
    ones are asked once), the documents to grade and those without a query or text (unknown at once, no call)."""
    pairs = document_pairs(records, k)
    _, requests = _requests(pairs)
    return list(dict.fromkeys(requests)), len(pairs), len(pairs) - len(requests)


def cached_requests(local: LocalBackend, requests: Sequence[tuple[str, str]]) -> int:
    """How many of ``requests`` the local backend's response cache answers (not sent again)."""
    from .local._ask import cached_answers

    return cached_answers(local, requests, task=_TASK)


def estimate_documents(
    data: str | os.PathLike[str],
    *,
    k: int = 10,
    mapping: Mapping | None = None,
    local: LocalBackend | None = None,
    coverage: bool = False,
) -> dict[str, int]:
    """What ``judge_documents`` would do, without grading: ``documents`` to grade, ``judge_calls`` (distinct
    requests with text), ``no_text`` (unknown at once) and, with a local backend, ``cached`` (answered by its
    response cache: not sent); with ``coverage``, ``coverage_calls_max`` and ``utilization_calls_max`` (the
    ceiling: every graded document counted relevant, ``coverage.ceiling_requests``)."""
    from .dataset import read_records
    from .mapping import load_mapping

    mapping = mapping or load_mapping(None)
    requests, documents, no_text = judge_requests(read_records(data, mapping, require_ranking=True), k)
    counts = {"documents": documents, "judge_calls": len(requests), "no_text": no_text}
    if local is not None:
        counts["cached"] = cached_requests(local, requests)
    if coverage:
        from .coverage import ceiling_requests

        records = list(read_records(data, mapping, require_ranking=True))  # read twice: once for the pairs
        for name, sent in ceiling_requests(records, document_pairs(records, k)).items():
            counts[f"{name}_calls_max"] = len(sent)
    return counts


_NO_TEXT = "NO_TEXT: no query or document text to judge"


def _graded(
    pairs: Sequence[DocumentPair], backend: str, progress: Callable[..., None] | None, wire: dict[str, Any]
) -> tuple[list[tuple[int | None, str]], dict[str, Any], dict[str, int]]:
    """The pairs graded by the ``label_model`` criterion (``_grader``) through ``graded.run_graders`` into the run
    folder ``wire['run_dir']``: a label outside 0–3, an errored or a missing result is unknown, with its cause."""
    from .graded import run_graders

    grader = _grader()
    askable = [i for i, p in enumerate(pairs) if p.query and p.text]
    items = (
        {"query_id": p.query_id, "document_id": p.document_id, "query": p.query, "document": p.text}
        for p in (pairs[i] for i in askable)
    )
    run = run_graders(items, [grader], backend=backend, wire=wire, name="judge-docs", progress=progress)
    out: list[tuple[int | None, str]] = [(None, _NO_TEXT)] * len(pairs)
    for i, row in zip(askable, run.results[grader.name], strict=True):
        if row is None:
            out[i] = (None, "MISSING_RESULT: the run returned no result for this document")
        elif row.error is not None:
            out[i] = (None, row.error)
        elif row.label in grader.labels:
            out[i] = (int(row.label), row.reason or "")
        else:
            out[i] = (None, f"UNREADABLE_LABEL: the grader answered {row.label!r}, not one of 0, 1, 2, 3")
    judge: dict[str, Any] = {"model": MOCK_MODEL if backend == "mock" else run.deployment}
    if backend == "mock":
        from .mock import stand_in_cuts

        judge["cuts"] = [list(c) for c in stand_in_cuts(len(SCALE))]
    judge |= {"grader": grader.kind, "evaluator": grader.spec.name, "deployment": run.deployment}
    judge |= {"prompt_sha256": grader.prompt_sha256, **run.ids}
    errored = sum(1 for i in askable if out[i][0] is None)
    return out, judge, {"judge_calls": len(askable), "errored": errored}


def _grades(
    pairs: Sequence[DocumentPair],
    backend: str,
    local: LocalBackend | None,
    progress: Callable[..., None] | None,
    wire: dict[str, Any] | None = None,
) -> tuple[list[tuple[int | None, str]], dict[str, Any], dict[str, int]]:
    """Each pair's (grade or None, reason or cause), the judge's identity, the judge's counters."""
    if backend in ("mock", "foundry"):
        return _graded(pairs, backend, progress, wire or {})
    if local is None:
        raise UsageError("judge-docs --backend local needs a LocalBackend (--judge-endpoint, --judge-model)")
    from .local._ask import ask_judge, judge_config

    judge = judge_config(local).identity()
    askable, requests = _requests(pairs)
    step = (lambda done, total: progress("judging", done, total)) if progress else None
    answers = ask_judge(local, requests, task=_TASK, parse=parse_grade, progress=step, max_tokens=MAX_OUTPUT_TOKENS)
    out: list[tuple[int | None, str]] = [(None, _NO_TEXT)] * len(pairs)
    for i, answer in zip(askable, answers, strict=True):
        out[i] = (answer["grade"], answer["reason"]) if isinstance(answer, dict) else (None, answer)
    return out, judge, dict(local.stats)


def judge_documents(
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    backend: str = "mock",
    k: int = 10,
    mapping: Mapping | None = None,
    local: LocalBackend | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    judge_model: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    foundry: dict[str, Any] | None = None,
    coverage: bool = False,
) -> dict[str, Any]:
    """Grade DATA's documents (``document_pairs`` to depth ``k``), write the qrels to ``out`` and the provenance to
    ``provenance_path(out)``; return the provenance (without its per-document list).

    ``backend``: ``local`` (through ``local``, a ``LocalBackend``), or ``mock`` / ``foundry``: one ``label_model``
    criterion (``_grader``) run on the emulator or on Foundry (``judge_model``: the deployment; ``foundry``: the
    runner's backend options, ``endpoint``, ``credential``, ``resume``, ...) into the run folder ``run_dir``
    (default ``OUT.run``). ``coverage``: also judge each query's retrieval coverage and utilization over the
    documents graded relevant (``foundry_bridge.coverage``), kept in the provenance (``coverage``)."""
    from .dataset import read_records
    from .mapping import load_mapping

    if backend not in BACKENDS:
        raise UsageError(f"judge-docs --backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    mapping = mapping or load_mapping(None)
    pairs = document_pairs(read_records(data, mapping, require_ranking=True), k)
    for p in pairs:
        if _WS.search(p.query_id) or _WS.search(p.document_id):
            raise DatasetError(
                f"query {p.query_id!r}, document {p.document_id!r}: an id with white space cannot be a qrels line",
                file=str(data),
                field="query_id" if _WS.search(p.query_id) else "document_id",
                hint="use ids without spaces, tabs or newlines",
            )
    wire = {**(foundry or {}), "judge_model": judge_model, "run_dir": run_dir or f"{os.fspath(out)}.run"}
    grades, judge, stats = _grades(pairs, backend, local, progress, wire)
    with atomic_open(out) as fh:
        for p, (grade, _) in zip(pairs, grades, strict=True):
            if grade is not None:
                fh.write(f"{p.query_id} 0 {p.document_id} {grade}\n".encode())
    known = [g for g, _ in grades if g is not None]
    counts = {
        "queries": len({p.query_id for p in pairs}),
        "documents": len(pairs),
        "labelled": len(known),
        "unknown": len(pairs) - len(known),
        "context_below_k": sum(1 for p in pairs if p.rank > k),
        "by_grade": {str(g): known.count(g) for g in SCALE},
    }
    provenance = {
        "format": FORMAT,
        "labels": JUDGE_LABELLED,
        "backend": backend,
        "judge": judge,
        "rubric": {"version": RUBRIC_VERSION, "sha256": RUBRIC_SHA256},
        "scale": {str(g): name for g, name in SCALE.items()},
        "deepchecks": DEEPCHECKS,
        "k": k,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "dataset": str(data),
        "qrels_sha256": sha256_file(out),
        "counts": counts,
        "judge_stats": stats,
    }
    documents = [
        {"query_id": p.query_id, "document_id": p.document_id, "rank": p.rank, "in_context": p.in_context}
        | {"grade": g, "reason": why}
        for p, (g, why) in zip(pairs, grades, strict=True)
    ]
    queries: list[dict[str, Any]] = []
    if coverage:
        from .coverage import COVERAGE_VERSION, evidence, measure, summarize

        items = evidence(
            read_records(data, mapping, require_ranking=True),
            [(p, g) for p, (g, _) in zip(pairs, grades, strict=True)],
            PASSING,
        )
        queries, ident = measure(items, backend=backend, local=local, wire=wire, progress=progress)
        provenance["coverage"] = {
            "version": COVERAGE_VERSION,
            "relevant": f"graded {' or '.join(PASSING)} by this judge",
            "judge": ident,
            "summary": summarize(queries),
        }
    write_json(provenance_path(out), {**provenance, "documents": documents, "queries": queries})
    return provenance


def provenance_path(qrels: str | os.PathLike[str]) -> Path:
    """``judged.qrels`` → ``judged.qrels.json``: where ``judge-docs`` writes a qrels file's provenance."""
    return Path(f"{os.fspath(qrels)}.json")


def read_provenance(qrels: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance beside a qrels file (None: no file there, human labels); a ``DatasetError`` when it is not
    ours or the qrels file changed since it was written (judge labels mixed with others, or edited)."""
    path = provenance_path(qrels)
    if not path.is_file():
        return None
    try:
        doc = loads(path.read_bytes())
    except ValueError as exc:
        raise DatasetError(f"not JSON ({exc})", file=str(path), hint="write it again with judge-docs") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DatasetError(f"not a judge-docs provenance file (format {FORMAT!r})", file=str(path), field="format")
    if doc.get("qrels_sha256") != sha256_file(qrels):
        raise DatasetError(
            f"{os.fspath(qrels)!r} changed since judge-docs wrote it: judge labels must not be mixed with others",
            file=str(path),
            field="qrels_sha256",
            hint="keep human labels in their own file (metrics --human-qrels) or run judge-docs again",
        )
    doc.pop("documents", None)
    doc.pop("queries", None)
    return dict(doc)


def judge_name(prov: dict[str, Any]) -> str:
    """``mock judge <model>, rubric 1 <sha256[:12]>``: who labelled a judged qrels file, as the outputs say it."""
    rubric = prov.get("rubric") or {}
    return (
        f"{prov.get('backend')} judge {(prov.get('judge') or {}).get('model')}, rubric {rubric.get('version')} "
        f"{str(rubric.get('sha256'))[:12]}"
    )


def qrels_labels(
    files: Sequence[str | os.PathLike[str]], *, allow_judge_change: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Who labelled the qrels ``files`` that ``compare --qrels`` merges, and the notes its outputs show.

    ``{"source": "human"}`` for one file without a judge-docs provenance (``read_provenance``); else
    ``{"source": "judge-labelled", "judges": [one per file: file, backend, judge, rubric, date]}`` and a note
    saying so. Refused (``UsageError``): human and judge labels mixed (each file named), more than one human file,
    and judge-labelled files whose judge model or rubric (SHA-256) differ — the runs' difference would mix the
    systems' with the judges' — unless ``allow_judge_change``, when a note flags "the judge changed: X → Y"."""
    provs = [read_provenance(f) for f in files]
    human = [os.fspath(f) for f, p in zip(files, provs, strict=True) if p is None]
    judged = [(os.fspath(f), p) for f, p in zip(files, provs, strict=True) if p is not None]
    if human and judged:
        raise UsageError(
            f"compare --qrels mixes human labels ({', '.join(human)}: no judge-docs provenance beside it) with judge "
            f"labels ({', '.join(f for f, _ in judged)}: written by judge-docs); compare on one kind: judge every "
            "run's documents with judge-docs, or give the human qrels alone"
        )
    if not judged:
        if len(human) > 1:
            raise UsageError(
                f"compare --qrels given {len(human)} human qrels files ({', '.join(human)}): more than one --qrels "
                "merges judge-docs outputs; give one human qrels file (concatenate them)"
            )
        return {"source": "human"}, []
    names = list(dict.fromkeys(judge_name(p) for _, p in judged))
    keys = {((p.get("judge") or {}).get("model"), (p.get("rubric") or {}).get("sha256")) for _, p in judged}
    by_file = "; ".join(f"{f}: {judge_name(p)}" for f, p in judged)
    if len(keys) > 1 and not allow_judge_change:
        raise UsageError(
            f"compare --qrels: the judge changed between the qrels files ({by_file}): the runs' difference would mix "
            "the systems' with the judges'. Judge every run's documents with one judge and rubric (judge-docs with "
            "the same backend and model), or pass --allow-judge-change to compare anyway, flagged"
        )
    keep = ("backend", "judge", "rubric", "date")
    labels = {"source": JUDGE_LABELLED, "judges": [{"file": f, **{k: p.get(k) for k in keep}} for f, p in judged]}
    notes = [f"relevance labels: {JUDGE_LABELLED} ({by_file}): every measure is on a judge's labels, not human ones"]
    if len(keys) > 1:
        notes.append(
            f"the judge changed: {' → '.join(names)} (--allow-judge-change): a difference between the runs may be "
            "the judges', not the systems'"
        )
    return labels, notes


def ranked_lists(
    data: str | os.PathLike[str], mapping: Mapping
) -> tuple[dict[str, list[tuple[float | None, str]]], int, set[str]]:
    """query id → its ``(score, document id)`` ranking as stored (the order ``metrics`` ranks DATA in); how many
    queries carry relevance labels of their own in DATA; the queries DATA declares negative."""
    from .dataset import read_records

    return _rankings(read_records(data, mapping, require_ranking=True))


def _rankings(records: Iterable[Any]) -> tuple[dict[str, list[tuple[float | None, str]]], int, set[str]]:
    rankings, own, negative = {}, 0, set()
    for rec in records:
        rankings[rec.query_id] = [(d.relevance_score, d.document_id) for d in rec.retrieved_documents]
        own += bool(rec.retrieval_ground_truth)
        if rec.kind == "negative" and rec.kind_source == "declared":
            negative.add(rec.query_id)
    return rankings, own, negative


# -- judge labels against human labels --------------------------------------------------------------------------
CORRECTED = ("ndcg", "recall", "rr")


def _on_unit_range(estimates: dict[str, Any]) -> dict[str, Any]:
    """Every interval of ``estimate_mean``'s output cut to [0, 1], the metrics' range (``clipped`` set when cut);
    no pseudo-row pad (``ppi``'s ``scale``): a per-query metric is continuous."""
    for e in estimates.values():
        if isinstance(e, dict) and "low" in e and not math.isnan(e["low"]):
            low, high = max(e["low"], 0.0), min(e["high"], 1.0)
            e.update(low=low, high=high, clipped=e["clipped"] or (low, high) != (e["low"], e["high"]))
    return estimates


def _per_query(
    rankings: dict[str, list[tuple[float | None, str]]],
    qrels: dict[str, dict[str, int]],
    ks: Sequence[int],
    threshold: int,
) -> dict[str, Any]:
    """Each ranking metric per query of ``rankings`` (in its order) on ``qrels``: undefined (no relevant label) → 0,
    as trec_eval averages."""
    import numpy as np

    from .dataset.columnar import arrays_from_rankings
    from .metrics.ranking import compute

    arrays = arrays_from_rankings(rankings, qrels, list(rankings), depth=max(ks), threshold=threshold)
    return {key: np.nan_to_num(col, nan=0.0) for key, col in compute(arrays, ks).items()}


def compare_with_human(
    rankings: dict[str, list[tuple[float | None, str]]],
    judged: dict[str, dict[str, int]],
    human: dict[str, dict[str, int]],
    *,
    ks: Sequence[int],
    threshold: int,
    confidence: float = 0.95,
    resamples: int = 1000,
    probability: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Agreement of the judge's grades with the human labels on the (query, document) pairs both labelled
    (quadratic-weighted κ with a bootstrap interval over queries, the per-grade confusion table) and each ranking
    metric's mean over the ranked queries corrected by PPI / PPI++ (``metrics.ppi.estimate_mean``), the unit a
    query: the judge's metric on every query, the human's on the queries the human qrels hold (undefined → 0, as
    trec_eval averages). ``resamples``: the κ interval's bootstrap resamples (0: no interval). ``probability``: query
    id → its inclusion probability under the query queue (``queue_inclusion``): when every human-labelled query has
    one, the means are the inverse-probability weighted estimators (``estimate_mean(probability=...)``); otherwise
    the labelled queries are taken as a uniform sample (each estimate's ``design`` says which)."""
    import numpy as np

    from .metrics.agreement import agreement
    from .metrics.ppi import estimate_mean

    order = list(rankings)
    q_index = {q: i for i, q in enumerate(order)}
    shared = [(q, d) for q in human if q in judged for d in human[q] if d in judged[q]]
    j = np.array([judged[q][d] for q, d in shared], dtype=np.float64)
    h = np.array([human[q][d] for q, d in shared], dtype=np.float64)
    off_scale = sorted({int(v) for v in h if v not in SCALE})
    agree: dict[str, Any] | None = None
    if shared and not off_scale:
        rows = np.array([q_index.get(q, -1 - i) for i, (q, _) in enumerate(shared)])
        a = agreement(j, h, categories=tuple(SCALE), rows=rows, resamples=resamples)
        agree = {
            "pairs": a.n,
            "queries": len({q for q, _ in shared}),
            "weighted_kappa": a.weighted_kappa,
            "weighted_kappa_interval": a.weighted_kappa_interval,
            "exact_agreement": a.observed,
            "grades": a.categories,
            "confusion": a.confusion,  # judge grade (rows) × human grade (columns)
        }
    cols = [_per_query(rankings, q, ks, threshold) for q in (judged, human)]
    labelled = np.array([q in human for q in order])
    pi = None if probability is None else np.array([probability.get(q, np.nan) for q in order], dtype=np.float64)
    corrected = {}
    for name in CORRECTED:
        for k in ks:
            key = f"{name}@{k}"
            f = cols[0][key]
            y = np.where(labelled, cols[1][key], np.nan)
            corrected[key] = _on_unit_range(asdict(estimate_mean(f, y, confidence=confidence, probability=pi)))
    return {
        "labels": JUDGE_LABELLED + ", corrected by human labels",
        "queries": len(order),
        "human_queries": int(labelled.sum()),
        "human_queries_not_ranked": sorted(q for q in human if q not in q_index),
        "agreement": agree,
        "off_scale_human_labels": off_scale,
        "corrected": corrected,
    }


# -- the labelling queue of queries: which queries' human labels narrow the corrected intervals most -------------
QUEUE_MEASURE = "ndcg"  # the size measure's metric: the judge's per-query nDCG at the largest k


def query_queue(
    rankings: dict[str, list[tuple[float | None, str]]],
    judged: dict[str, dict[str, int]],
    human: dict[str, dict[str, int]],
    *,
    k: int,
    threshold: int,
    size: int | None = None,
    seed: int | None = None,
    texts: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The ranked queries without human labels in the order to label them, as the lines of ``metrics --queue-out``:
    the trust section's verdict queue (``metrics.ppi.queue_order``, Ohlsson's sequential Poisson sampling, seeded
    by ``seed``, default ``QUEUE_SEED``) over queries instead of rows, so labelling the first n lines, for any n, is
    a probability sample whose inclusion probabilities ``queue_inclusion`` recomputes.

    The size measure is ``queue_priority``'s: the shrunk residual sd (human − judge) of the query's stratum of the
    judge's per-query nDCG@``k`` (deciles), floored at ``QUEUE_FLOOR`` × the mean — Neyman allocation for the
    corrected nDCG's interval. With no human label yet every stratum has the prior sd, and the queue is a uniform
    random order; the human qrels already held (``human``) make it favour the strata where judge and human differ.

    Each line: ``query_id``, ``query`` (from ``texts``, when known), ``documents`` (the judged documents to label,
    in rank order), ``queue_place`` (1 = label first), the design (``queue_u``, ``queue_share``, ``queue_next_key``
    — the key of the line after it —, ``queue_seed``, ``queue_candidates``: the queries the queue was drawn from),
    ``design`` and ``reason``. ``size``: the first lines only (default: every candidate)."""
    import math

    import numpy as np

    from .metrics.ppi import QUEUE_SEED, queue_merge, queue_order

    seed = QUEUE_SEED if seed is None else seed
    order = list(rankings)
    key = f"{QUEUE_MEASURE}@{k}"
    f = _per_query(rankings, judged, (k,), threshold)[key]
    y = np.where([q in human for q in order], _per_query(rankings, human, (k,), threshold)[key], np.nan)
    drawn = queue_order(f, y, seed=seed)
    lines = []
    for _, d in queue_merge([drawn], len(drawn) if size is None else size):
        qid = order[d.index]
        ranked = {doc: i for i, (_, doc) in enumerate(rankings[qid])}
        docs = sorted(judged.get(qid, {}), key=lambda doc: (ranked.get(doc, math.inf), doc))
        line: dict[str, Any] = {"query_id": qid, **({"query": texts[qid]} if texts and texts.get(qid) else {})}
        line |= {"documents": docs, "queue_place": d.place, "queue_u": d.u, "queue_share": d.share}
        line |= {"queue_next_key": None if math.isinf(d.next_key) else d.next_key, "queue_seed": seed}
        line |= {"queue_candidates": len(drawn), "design": f"{d.design}; size measure: judge's {key}"}
        lines.append(line | {"reason": f"judge {key} {f[d.index]:.3f}"})
    return lines


def query_texts(data: str | os.PathLike[str], mapping: Mapping) -> dict[str, str]:
    """query id → its query text, as DATA holds it (queries without one left out)."""
    from .dataset import read_records

    return {rec.query_id: rec.query for rec in read_records(data, mapping, require_ranking=True) if rec.query}


@dataclass(frozen=True)
class QueueLine:
    """One line of a query queue file as read back: its query, place, share, the key after it, candidates, line."""

    query_id: str
    place: int
    share: float
    next_key: float
    candidates: int | None
    line: int


_REWRITE = "keep the lines metrics --queue-out wrote"


def queue_line(row: Any, source: str, number: int) -> QueueLine:
    """One line of a ``metrics --queue-out`` file (``row``: its JSON object, at line ``number`` of ``source``) as
    ``queue_inclusion`` reads it, its queue fields checked by the verdict queue's rule
    (``dataset.verdicts._queue_place``); a ``DatasetError`` naming the file, line and field otherwise."""
    from .dataset.verdicts import _queue_place

    qid = row.get("query_id") if isinstance(row, dict) else None
    if not isinstance(qid, str) or not qid:
        raise DatasetError("a queue line needs its query_id", file=source, line=number, field="query_id", hint=_REWRITE)
    try:
        got = _queue_place(row, (source, number))
    except DatasetError as exc:  # the verdict queue's rule, said of this file
        raise DatasetError(
            f"{exc.field} must be what metrics --queue-out wrote, got {row.get(exc.field or '')!r}",
            file=source, line=number, field=exc.field,
            hint="keep the queue's fields as written, or write the queue again with metrics --queue-out",
        ) from None  # fmt: skip
    if got is None:
        raise DatasetError(
            "a queue line needs its queue_place", file=source, line=number, field="queue_place", hint=_REWRITE
        )
    candidates = row.get("queue_candidates")
    whole = isinstance(candidates, int) and not isinstance(candidates, bool)
    return QueueLine(qid, got[0], got[1], got[2], candidates if whole else None, number)


def read_query_queue(path: str | os.PathLike[str]) -> list[QueueLine]:
    """The lines of a ``metrics --queue-out`` file (``queue_line``); a ``DatasetError`` naming the file, line and
    field when one is not what the queue wrote, or when two lines hold one place or one query."""
    source = os.fspath(path)
    out: list[QueueLine] = []
    seen: dict[tuple[str, Any], int] = {}  # (field, value) → its line
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = loads(raw)
            except ValueError as exc:
                raise DatasetError(f"not JSON ({exc})", file=source, line=number, hint=_REWRITE) from None
            line = queue_line(row, source, number)
            for field, value in (("queue_place", line.place), ("query_id", line.query_id)):
                if (field, value) in seen:
                    raise DatasetError(
                        f"{field} {value!r} stands on line {seen[field, value]} too: the file mixes two queues",
                        file=source, line=number, field=field, hint="keep one queue's lines in a file",
                    )  # fmt: skip
                seen[field, value] = number
            out.append(line)
    return out


@dataclass(frozen=True)
class QueueInclusion:
    """What a query queue says of the human labels: each usable labelled query's inclusion probability, the
    labelled queries left out (at places after the first one not labelled), the labelled prefix's length and the
    notes to print (``warnings``: those that change what is counted)."""

    probability: dict[str, float]
    beyond: list[str]
    prefix: int
    notes: list[str]
    warnings: list[str]  # the notes that change what is counted: labels left out, or taken as uniform
    before: list[str]  # labelled queries not on the queue (labelled before it was drawn, when it is whole)


def queue_inclusion(lines: Sequence[QueueLine], human: Iterable[str], ranked: Iterable[str]) -> QueueInclusion:
    """Each human-labelled ranked query's inclusion probability under the queue ``lines``
    (``metrics.ppi.labelled_prefix``: lines 1…n labelled; ``prefix_probabilities`` with the key of line n's next
    line), as the trust section weighs its verdict queue (``dataset.verdicts.inclusion_array``).

    A labelled query at a place after the first unlabelled one is not part of the probability sample: left out
    (``beyond``, with a note), as the trust section does. A labelled query not on the queue: when the file holds
    every candidate (``queue_candidates``) it was labelled before the queue was drawn (the queue leaves labelled
    queries out) and counts with probability 1 (taken with certainty: the weighted estimators stay unbiased given
    those labels); otherwise it has no probability, and every label is then taken as a uniform sample (a note)."""
    from .metrics.ppi import labelled_prefix, prefix_probabilities

    ranked_ids = set(ranked)
    labelled = {q for q in human if q in ranked_ids}
    by_place = {line.place: line for line in lines}
    n = labelled_prefix([line.place for line in lines if line.query_id in labelled])
    threshold = by_place[n].next_key if n else math.inf
    probability: dict[str, float] = {}
    beyond: list[str] = []
    for line in lines:
        if line.query_id not in labelled:
            continue
        if line.place <= n:
            probability[line.query_id] = float(prefix_probabilities(line.share, threshold))
        else:
            beyond.append(line.query_id)
    warn = []
    if beyond:
        warn.append(
            f"{len(beyond)} human-labelled queries stand at queue places after place {n + 1}, which is not labelled: "
            f"left out (a labelled prefix of the queue is a probability sample, labels after a gap are not); label "
            f"the query at place {n + 1} ({by_place[n + 1].query_id if n + 1 in by_place else '?'}) to count them"
        )
    queued = {line.query_id for line in lines}
    before = sorted(labelled - queued)
    whole = bool(lines) and all(line.candidates == len(lines) for line in lines)
    notes = []
    if before and whole:
        probability |= dict.fromkeys(before, 1.0)
        notes.append(f"{len(before)} human-labelled queries were labelled before the queue was drawn: weight 1")
    elif before:
        warn.append(
            f"{len(before)} human-labelled queries are not on the queue, which holds only its first {len(lines)} "
            "lines: they have no inclusion probability, so every label is taken as a uniform sample"
        )
    return QueueInclusion(probability, beyond, n, warn + notes, warn, before)


# -- judge labels in a run's report (stage attribution without human labels) ------------------------------------
def circularity(provenance: dict[str, Any], spec: Any) -> list[str]:
    """The circularity warnings (Clarke & Dietz 2024): the judge that labelled the documents — the provenance's
    model, or the mapping's ``judge_docs.model`` — is also the system's reranker or generator as the mapping's
    ``judge_docs`` (``spec``) declares them; names compared without case."""
    if spec is None:
        return []
    judges = {str(m).casefold() for m in (provenance.get("judge", {}).get("model"), spec.model) if m}
    return [
        f"circularity: the judge model {getattr(spec, role)!r} is also the system's {role} (mapping judge_docs."
        f"{role}): its labels favour its own rankings and answers, so judge-based metrics and stages may look "
        "better than they are (Clarke & Dietz 2024); label with another judge, or check against human labels"
        for role in ("reranker", "generator")
        if getattr(spec, role) and str(getattr(spec, role)).casefold() in judges
    ]


def relabeller(qrels: str | os.PathLike[str], spec: Any = None) -> tuple[Callable[[Any], Any], list[str]]:
    """``report --qrels``: a function giving each record of a run the judge's labels (``judge-docs``' qrels file, its
    provenance checked by ``read_provenance``) in place of its own, and the report's notes (whose labels, and
    ``circularity``). A record with labels of its own is refused (a ``DatasetError`` naming it): judge labels decide
    the stages only where no human label exists, and are never mixed with them."""
    from .dataset.columnar import read_qrels_file
    from .dataset.records import GroundTruthLabel

    prov = read_provenance(qrels)
    if prov is None:
        raise UsageError(
            f"report --qrels {os.fspath(qrels)}: no judge-docs provenance beside it ({provenance_path(qrels)}): "
            "report --qrels takes judge-labelled qrels; human labels belong in the dataset"
        )
    labels = read_qrels_file(qrels)

    def relabel(rec: Any) -> Any:
        if rec.retrieval_ground_truth:
            raise DatasetError(
                f"query {rec.query_id!r} of the run has relevance labels of its own: stage attribution from judge "
                "labels is for runs without human labels, and the two are never mixed",
                file=os.fspath(qrels),
                hint="drop --qrels (the run's own labels decide the stages), or run on a dataset without labels",
            )
        got = labels.get(rec.query_id)
        truth = (
            None if got is None else [GroundTruthLabel(document_id=d, query_relevance_label=g) for d, g in got.items()]
        )
        return rec.model_copy(update={"retrieval_ground_truth": truth})

    note = (
        f"relevance labels are judge-labelled ({judge_name(prov)}, {prov['date']}; {prov['counts']['unknown']} "
        "document(s) unknown): the local metrics and the stage attribution are judge-based, not human-labelled"
    )
    notes = [note, *circularity(prov, spec)]
    if prov.get("coverage"):
        from .coverage import summary_lines

        notes += [
            f"{line} (judge-based; per query in {provenance_path(qrels)})"
            for line in summary_lines(prov["coverage"]["summary"])
        ]
    return relabel, notes


def check_human_qrels(qrels: str | os.PathLike[str] | None, human_qrels: str | os.PathLike[str]) -> None:
    """``--human-qrels`` corrects judge-labelled qrels with human ones (``metrics``, ``report``): refused without a
    ``--qrels`` file judge-docs wrote, or when the human file is itself judge-labelled."""
    if qrels is None or read_provenance(qrels) is None:
        raise UsageError("--human-qrels corrects judge-labelled qrels: give --qrels a file judge-docs wrote")
    if read_provenance(human_qrels) is not None:
        raise UsageError(
            f"--human-qrels {os.fspath(human_qrels)} is judge-labelled (judge-docs wrote it): give human labels"
        )


def run_vs_human(
    run_dir: str | os.PathLike[str], qrels: str | os.PathLike[str], human_qrels: str | os.PathLike[str]
) -> dict[str, Any]:
    """``report --qrels J --human-qrels H``: ``compare_with_human`` on a run folder's positive ranked queries (the
    records as the run sent them; queries declared negative left out), at the run mapping's cutoffs and relevance
    threshold: κ of the judge's grades against the human labels and each ranking metric's corrected mean."""
    from .columns import FactParams
    from .dataset.columnar import read_qrels_file
    from .runfolder import RunFolder

    folder = RunFolder(run_dir)
    plan = folder.read_plan(items=False)
    params = FactParams.for_plan(plan)
    ranked, _, negative = _rankings(folder.iter_records(plan))
    rankings = {q: docs for q, docs in ranked.items() if docs and q not in negative}
    human = read_qrels_file(os.fspath(human_qrels))
    out = compare_with_human(
        rankings, read_qrels_file(os.fspath(qrels)), human, ks=params.ks, threshold=params.relevance_threshold
    )
    return {**out, "declared_negative_left_out": len(negative), "human_qrels": os.fspath(human_qrels)}
